//! NumPy `.npy` files (format versions 1–3) of `f32` / `f64` (`<f4`, `<f8`, `>f4`, `>f8`).
//!
//! The header dict (`{'descr': '<f4', 'fortran_order': True, 'shape': (400000, 50), }`) is
//! parsed as a small Python literal. Data in Fortran order is transposed into C (row-major)
//! order, so callers always see row-major data. The element count claimed by `shape` is checked
//! against the file's actual length before anything is allocated.

use super::error::{parse_file, DataError, Result};
use std::path::Path;

/// Element data of an `.npy` array, row-major (C order).
#[derive(Debug, Clone, PartialEq)]
pub enum NpyData {
    /// `f4` data.
    F32(Vec<f32>),
    /// `f8` data.
    F64(Vec<f64>),
}

/// A parsed `.npy` array (always converted to C order).
#[derive(Debug, Clone, PartialEq)]
pub struct NpyArray {
    /// The shape (empty for a scalar).
    pub shape: Vec<usize>,
    /// Whether the file stored the data in Fortran order (it has been transposed to C order).
    pub was_fortran_order: bool,
    /// Row-major elements.
    pub data: NpyData,
}

impl NpyArray {
    /// The elements as f32 (f64 data is rounded), row-major.
    pub fn into_f32(self) -> Vec<f32> {
        match self.data {
            NpyData::F32(v) => v,
            NpyData::F64(v) => v.into_iter().map(|x| x as f32).collect(),
        }
    }
    /// The elements as f64 (exact for f4, f8 and integers up to 2^53), row-major.
    pub fn into_f64(self) -> Vec<f64> {
        match self.data {
            NpyData::F32(v) => v.into_iter().map(f64::from).collect(),
            NpyData::F64(v) => v,
        }
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.data {
            NpyData::F32(v) => v.len(),
            NpyData::F64(v) => v.len(),
        }
    }
    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The parsed header of an `.npy` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader {
    /// The `descr` dtype string, e.g. `<f4`.
    pub descr: String,
    /// The `fortran_order` flag.
    pub fortran_order: bool,
    /// The `shape` tuple.
    pub shape: Vec<usize>,
    /// Byte offset of the data.
    pub data_offset: usize,
}

#[derive(Debug)]
enum Lit {
    Str(String),
    Bool(bool),
    Tuple(Vec<u64>),
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
    base: usize,
}

impl P<'_> {
    fn err(&self, msg: impl Into<String>) -> DataError {
        DataError::at_byte((self.base + self.i) as u64, format!("npy header: {}", msg.into()))
    }
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn string(&mut self) -> Result<String> {
        self.ws();
        let q = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return Err(self.err("expected a quoted string")),
        };
        self.i += 1;
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i] != q {
            if self.s[self.i] == b'\\' {
                return Err(self.err("escapes in strings are not supported"));
            }
            self.i += 1;
        }
        if self.i >= self.s.len() {
            return Err(self.err("unterminated string"));
        }
        let v = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
        self.i += 1;
        Ok(v)
    }
    fn value(&mut self) -> Result<Lit> {
        self.ws();
        match self.peek() {
            Some(b'\'' | b'"') => Ok(Lit::Str(self.string()?)),
            Some(b'T') if self.s[self.i..].starts_with(b"True") => {
                self.i += 4;
                Ok(Lit::Bool(true))
            }
            Some(b'F') if self.s[self.i..].starts_with(b"False") => {
                self.i += 5;
                Ok(Lit::Bool(false))
            }
            Some(b'(') => {
                self.i += 1;
                let mut v = Vec::new();
                loop {
                    if self.eat(b')') {
                        break;
                    }
                    self.ws();
                    let start = self.i;
                    while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                        self.i += 1;
                    }
                    if start == self.i {
                        return Err(self.err("expected a non-negative integer in the shape tuple"));
                    }
                    let t = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                    let d: u64 = t.parse().map_err(|_| self.err(format!("shape entry '{t}' out of range")))?;
                    v.push(d);
                    if v.len() > 32 {
                        return Err(self.err("more than 32 dimensions"));
                    }
                    if self.eat(b',') {
                        continue;
                    }
                    if self.eat(b')') {
                        break;
                    }
                    return Err(self.err("expected ',' or ')' in the shape tuple"));
                }
                Ok(Lit::Tuple(v))
            }
            _ => Err(self.err("expected a string, True, False or a tuple")),
        }
    }
}

/// Parses the header of an `.npy` file held in memory (magic, version, dict).
pub fn npy_header_from_bytes(bytes: &[u8]) -> Result<NpyHeader> {
    const MAGIC: &[u8] = b"\x93NUMPY";
    if bytes.len() < 10 {
        return Err(DataError::at_byte(bytes.len() as u64, "truncated npy preamble (need at least 10 bytes)"));
    }
    if &bytes[..6] != MAGIC {
        return Err(DataError::at_byte(0, "bad npy magic (expected \\x93NUMPY)"));
    }
    let (hlen, hstart) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(DataError::at_byte(bytes.len() as u64, "truncated npy v2 preamble"));
            }
            (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
        }
        v => return Err(DataError::at_byte(6, format!("unsupported npy format version {v}.{}", bytes[7]))),
    };
    let end = hstart as u64 + hlen as u64;
    if end > bytes.len() as u64 {
        return Err(DataError::at_byte(
            8,
            format!("npy header length {hlen} runs past the end of the file ({} bytes)", bytes.len()),
        ));
    }
    let end = end as usize;
    let mut p = P { s: &bytes[hstart..end], i: 0, base: hstart };
    if !p.eat(b'{') {
        return Err(p.err("expected '{'"));
    }
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        if p.eat(b'}') {
            break;
        }
        let key_at = p.i;
        let key = p.string()?;
        if !p.eat(b':') {
            return Err(p.err("expected ':'"));
        }
        let v = p.value()?;
        let bad = |p: &P, what: &str| {
            DataError::at_byte((p.base + key_at) as u64, format!("npy header: '{key}' must be {what}"))
        };
        match key.as_str() {
            "descr" => match v {
                Lit::Str(s) => descr = Some(s),
                _ => return Err(bad(&p, "a string")),
            },
            "fortran_order" => match v {
                Lit::Bool(b) => fortran = Some(b),
                _ => return Err(bad(&p, "True or False")),
            },
            "shape" => match v {
                Lit::Tuple(t) => shape = Some(t),
                _ => return Err(bad(&p, "a tuple")),
            },
            _ => {}
        }
        if p.eat(b',') {
            continue;
        }
        if p.eat(b'}') {
            break;
        }
        return Err(p.err("expected ',' or '}'"));
    }
    p.ws();
    if p.i != p.s.len() {
        return Err(p.err("unexpected text after the header dict"));
    }
    let missing = |k: &str| DataError::at_byte(hstart as u64, format!("npy header lacks '{k}'"));
    let shape = shape.ok_or_else(|| missing("shape"))?;
    Ok(NpyHeader {
        descr: descr.ok_or_else(|| missing("descr"))?,
        fortran_order: fortran.ok_or_else(|| missing("fortran_order"))?,
        shape: shape.into_iter().map(|d| d as usize).collect(),
        data_offset: end,
    })
}

/// Parses a whole `.npy` file held in memory.
pub fn npy_from_bytes(bytes: &[u8]) -> Result<NpyArray> {
    let h = npy_header_from_bytes(bytes)?;
    let d = h.descr.as_str();
    // Byte order: '<' little, '>' big, '|' not applicable (one byte), '=' or none: native.
    let (order, code) = match d.as_bytes().first() {
        Some(b'<' | b'>' | b'|' | b'=') => (d.as_bytes()[0], &d[1..]),
        _ => (b'=', d),
    };
    let little = match order {
        b'<' | b'|' => true,
        b'>' => false,
        _ => cfg!(target_endian = "little"),
    };
    // (bytes per element, kind): 'f' float, 'i' signed, 'u' unsigned, 'b' bool.
    let (size, kind) = match code {
        "f4" => (4, 'f'),
        "f8" => (8, 'f'),
        "i1" | "i2" | "i4" | "i8" | "u1" | "u2" | "u4" | "u8" => (code[1..].parse::<usize>().unwrap_or(1), code.as_bytes()[0] as char),
        "b1" => (1, 'b'),
        _ => {
            return Err(DataError::at_byte(
                10,
                format!("npy dtype '{d}' not supported (real: f4, f8; integer: i1–i8, u1–u8; b1)"),
            ))
        }
    };
    let count = h
        .shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d as u64))
        .and_then(|c| c.checked_mul(size as u64));
    let have = (bytes.len() - h.data_offset) as u64;
    match count {
        Some(c) if c == have => {}
        Some(c) => {
            return Err(DataError::at_byte(
                h.data_offset as u64,
                format!("npy shape {:?} of {} needs {c} data bytes, the file has {have}", h.shape, h.descr),
            ))
        }
        None => return Err(DataError::at_byte(h.data_offset as u64, format!("npy shape {:?} overflows", h.shape))),
    }
    let raw = &bytes[h.data_offset..];
    let word = |c: &[u8]| -> u64 {
        let mut a = [0u8; 8];
        if little {
            a[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(a)
        } else {
            a[8 - c.len()..].copy_from_slice(c);
            u64::from_be_bytes(a)
        }
    };
    let data = match (kind, size) {
        ('f', 4) => {
            let v: Vec<f32> = raw.chunks_exact(4).map(|c| f32::from_bits(word(c) as u32)).collect();
            NpyData::F32(if h.fortran_order { fortran_to_c(&v, &h.shape) } else { v })
        }
        ('f', _) => {
            let v: Vec<f64> = raw.chunks_exact(8).map(|c| f64::from_bits(word(c))).collect();
            NpyData::F64(if h.fortran_order { fortran_to_c(&v, &h.shape) } else { v })
        }
        // Integers (labels, counts, pixel bytes) as f64: exact up to 2^53.
        (k, _) => {
            let bits = 8 * size as u32;
            let v: Vec<f64> = raw
                .chunks_exact(size)
                .map(|c| {
                    let w = word(c);
                    if k == 'i' && bits < 64 && w >> (bits - 1) & 1 == 1 {
                        (w as i64 - (1i64 << bits)) as f64
                    } else if k == 'i' {
                        w as i64 as f64
                    } else {
                        w as f64
                    }
                })
                .collect();
            NpyData::F64(if h.fortran_order { fortran_to_c(&v, &h.shape) } else { v })
        }
    };
    Ok(NpyArray { shape: h.shape, was_fortran_order: h.fortran_order, data })
}

/// Reorders column-major (Fortran) data of `shape` into row-major (C) order.
pub fn fortran_to_c<T: Copy>(v: &[T], shape: &[usize]) -> Vec<T> {
    if shape.len() < 2 || v.is_empty() {
        return v.to_vec();
    }
    if shape.len() == 2 {
        // Fortran (r, c): element (i, j) at j·r + i. Blocked transpose.
        let (r, c) = (shape[0], shape[1]);
        const B: usize = 64;
        let mut out = vec![v[0]; v.len()];
        for i0 in (0..r).step_by(B) {
            let i1 = (i0 + B).min(r);
            for j in 0..c {
                let col = &v[j * r..(j + 1) * r];
                for i in i0..i1 {
                    out[i * c + j] = col[i];
                }
            }
        }
        return out;
    }
    // General rank: walk C order with an odometer, tracking the Fortran offset.
    let k = shape.len();
    let mut fstride = vec![1usize; k];
    for a in 1..k {
        fstride[a] = fstride[a - 1] * shape[a - 1];
    }
    let mut idx = vec![0usize; k];
    let mut off = 0usize;
    let mut out = Vec::with_capacity(v.len());
    for _ in 0..v.len() {
        out.push(v[off]);
        let mut a = k;
        while a > 0 {
            a -= 1;
            idx[a] += 1;
            off += fstride[a];
            if idx[a] < shape[a] {
                break;
            }
            off -= fstride[a] * shape[a];
            idx[a] = 0;
        }
    }
    out
}

/// Reads a `.npy` file.
pub fn read_npy(path: impl AsRef<Path>) -> Result<NpyArray> {
    parse_file(path.as_ref(), npy_from_bytes)
}
