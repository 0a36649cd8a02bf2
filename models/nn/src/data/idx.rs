//! IDX files (the MNIST / Fashion-MNIST format), raw or gzip-compressed.
//!
//! Layout: magic `00 00 TT NN` (TT = element type, NN = number of dimensions), then NN
//! big-endian u32 dimensions, then the elements in row-major order, big-endian. Types:
//! `08` u8, `09` i8, `0B` i16, `0C` i32, `0D` f32, `0E` f64.
//!
//! The parsers never trust the header's sizes: a raw file must be exactly as long as its header
//! says; a gzip stream is decompressed incrementally and may not claim more than deflate's
//! maximum expansion (1032:1) of the compressed length, so a lying header cannot make them
//! allocate more than the real data.

use super::error::{parse_file, DataError, Result};
use std::io::Read;
use std::path::Path;

/// Element data of an IDX file, by element type.
#[derive(Debug, Clone, PartialEq)]
pub enum IdxData {
    /// Type `0x08`.
    U8(Vec<u8>),
    /// Type `0x09`.
    I8(Vec<i8>),
    /// Type `0x0B`.
    I16(Vec<i16>),
    /// Type `0x0C`.
    I32(Vec<i32>),
    /// Type `0x0D`.
    F32(Vec<f32>),
    /// Type `0x0E`.
    F64(Vec<f64>),
}

impl IdxData {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            IdxData::U8(v) => v.len(),
            IdxData::I8(v) => v.len(),
            IdxData::I16(v) => v.len(),
            IdxData::I32(v) => v.len(),
            IdxData::F32(v) => v.len(),
            IdxData::F64(v) => v.len(),
        }
    }
    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The element type's name (`"u8"`, `"f32"`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            IdxData::U8(_) => "u8",
            IdxData::I8(_) => "i8",
            IdxData::I16(_) => "i16",
            IdxData::I32(_) => "i32",
            IdxData::F32(_) => "f32",
            IdxData::F64(_) => "f64",
        }
    }
}

/// A parsed IDX array: its dimensions and row-major elements.
#[derive(Debug, Clone, PartialEq)]
pub struct IdxArray {
    /// Dimensions, outermost first (e.g. `[60000, 28, 28]`).
    pub dims: Vec<usize>,
    /// The elements.
    pub data: IdxData,
}

/// Images as f32 in [0, 1] (u8 / 255), `n` images of `rows × cols`, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Images {
    /// Number of images.
    pub n: usize,
    /// Rows per image.
    pub rows: usize,
    /// Columns per image.
    pub cols: usize,
    /// `n · rows · cols` pixels.
    pub pixels: Vec<f32>,
}

/// A labelled image set (images in [0, 1] and one class label per image).
#[derive(Debug, Clone, PartialEq)]
pub struct ImageSet {
    /// Number of images.
    pub n: usize,
    /// Rows per image.
    pub rows: usize,
    /// Columns per image.
    pub cols: usize,
    /// `n · rows · cols` pixels in [0, 1], image-major, row-major within an image.
    pub pixels: Vec<f32>,
    /// `n` class labels.
    pub labels: Vec<u8>,
}

impl ImageSet {
    /// Pixels per image.
    pub fn image_len(&self) -> usize {
        self.rows * self.cols
    }
    /// Image `i`'s pixels. Panics if `i >= n`.
    pub fn image(&self, i: usize) -> &[f32] {
        let d = self.image_len();
        &self.pixels[i * d..(i + 1) * d]
    }
    /// Number of images per class, for classes `0..=max label`.
    pub fn class_counts(&self) -> Vec<usize> {
        let k = self.labels.iter().map(|&l| l as usize + 1).max().unwrap_or(0);
        let mut c = vec![0; k];
        for &l in &self.labels {
            c[l as usize] += 1;
        }
        c
    }
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// Maximum expansion ratio of deflate.
const MAX_DEFLATE_RATIO: u64 = 1032;
/// Largest number of dimensions accepted.
const MAX_DIMS: usize = 16;

fn elem_size(t: u8) -> Option<usize> {
    match t {
        0x08 | 0x09 => Some(1),
        0x0B => Some(2),
        0x0C | 0x0D => Some(4),
        0x0E => Some(8),
        _ => None,
    }
}

/// Reads from `r` until `buf` is full or EOF; returns the number of bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8], at: u64) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(DataError::at_byte(at + got as u64, format!("read error: {e}"))),
        }
    }
    Ok(got)
}

/// Parses an IDX stream. `max_payload` bounds the element bytes the header may claim (the
/// caller knows it from the input's length); `None` means unknown (the data is then read
/// incrementally, so memory still follows the real data).
fn parse_stream(r: &mut impl Read, max_payload: Option<u64>, exact: bool, what: &str) -> Result<IdxArray> {
    let mut magic = [0u8; 4];
    let got = read_full(r, &mut magic, 0)?;
    if got < 4 {
        return Err(DataError::at_byte(got as u64, format!("truncated IDX header: {got} of 4 magic bytes{what}")));
    }
    if magic[0] != 0 || magic[1] != 0 {
        return Err(DataError::at_byte(
            0,
            format!("bad IDX magic {:02x} {:02x} {:02x} {:02x}: must start with 00 00{what}", magic[0], magic[1], magic[2], magic[3]),
        ));
    }
    let t = magic[2];
    let size = elem_size(t)
        .ok_or_else(|| DataError::at_byte(2, format!("unknown IDX element type 0x{t:02x} (expected 08, 09, 0B, 0C, 0D or 0E){what}")))?;
    let nd = magic[3] as usize;
    if nd == 0 || nd > MAX_DIMS {
        return Err(DataError::at_byte(3, format!("IDX dimension count {nd} out of range 1..={MAX_DIMS}{what}")));
    }
    let mut dims = Vec::with_capacity(nd);
    let mut count: u64 = 1;
    for i in 0..nd {
        let at = 4 + 4 * i as u64;
        let mut b = [0u8; 4];
        let got = read_full(r, &mut b, at)?;
        if got < 4 {
            return Err(DataError::at_byte(at + got as u64, format!("truncated IDX header: dimension {i} of {nd} is incomplete{what}")));
        }
        let d = u32::from_be_bytes(b) as u64;
        count = count
            .checked_mul(d)
            .ok_or_else(|| DataError::at_byte(at, format!("IDX dimensions overflow{what}")))?;
        dims.push(d as usize);
    }
    let header = 4 + 4 * nd as u64;
    let payload = count
        .checked_mul(size as u64)
        .filter(|&p| p <= usize::MAX as u64 / 2)
        .ok_or_else(|| DataError::at_byte(header, format!("IDX dimensions {dims:?} overflow{what}")))?;
    if let Some(max) = max_payload {
        if payload > max {
            return Err(DataError::at_byte(
                header,
                format!("IDX header claims {dims:?} = {payload} bytes of data but the input holds at most {max}{what}"),
            ));
        }
    }
    // Incremental read: the buffer grows only with data actually present.
    let initial = if exact { payload } else { payload.min(1 << 24) };
    let mut raw = Vec::with_capacity(initial as usize);
    let mut chunk = vec![0u8; 1 << 16];
    while (raw.len() as u64) < payload {
        let want = ((payload - raw.len() as u64) as usize).min(chunk.len());
        let got = read_full(r, &mut chunk[..want], header + raw.len() as u64)?;
        raw.extend_from_slice(&chunk[..got]);
        if got < want {
            return Err(DataError::at_byte(
                header + raw.len() as u64,
                format!("truncated IDX data: header {dims:?} needs {payload} bytes of {} elements, only {} present{what}", size_name(t), raw.len()),
            ));
        }
    }
    let mut extra = [0u8; 1];
    if read_full(r, &mut extra, header + payload)? > 0 {
        return Err(DataError::at_byte(header + payload, format!("trailing data after the {dims:?} IDX array{what}")));
    }
    let data = match t {
        0x08 => IdxData::U8(raw),
        0x09 => IdxData::I8(raw.into_iter().map(|b| b as i8).collect()),
        0x0B => IdxData::I16(raw.chunks_exact(2).map(|c| i16::from_be_bytes([c[0], c[1]])).collect()),
        0x0C => IdxData::I32(raw.chunks_exact(4).map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]])).collect()),
        0x0D => IdxData::F32(raw.chunks_exact(4).map(|c| f32::from_be_bytes([c[0], c[1], c[2], c[3]])).collect()),
        _ => IdxData::F64(
            raw.chunks_exact(8).map(|c| f64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect(),
        ),
    };
    Ok(IdxArray { dims, data })
}

fn size_name(t: u8) -> &'static str {
    match t {
        0x08 => "u8",
        0x09 => "i8",
        0x0B => "i16",
        0x0C => "i32",
        0x0D => "f32",
        _ => "f64",
    }
}

/// Parses an IDX file held in memory; gzip-compressed input (magic `1f 8b`) is detected and
/// decompressed. Byte offsets in errors refer to the decompressed data for gzip input.
pub fn idx_from_bytes(bytes: &[u8]) -> Result<IdxArray> {
    if bytes.starts_with(&GZIP_MAGIC) {
        let max = (bytes.len() as u64).saturating_mul(MAX_DEFLATE_RATIO);
        let mut dec = flate2::read::MultiGzDecoder::new(bytes);
        parse_stream(&mut dec, Some(max), false, " (in the gzip-decompressed data)")
    } else {
        let max = (bytes.len() as u64).saturating_sub(4);
        parse_stream(&mut &bytes[..], Some(max), true, "")
    }
}

/// Parses an uncompressed IDX stream from a reader (memory grows only with the data read).
pub fn idx_from_reader<R: Read>(mut r: R) -> Result<IdxArray> {
    parse_stream(&mut r, None, false, "")
}

/// Reads an IDX file (raw or gzip).
pub fn read_idx(path: impl AsRef<Path>) -> Result<IdxArray> {
    parse_file(path.as_ref(), idx_from_bytes)
}

/// Interprets a parsed IDX array as images: u8 elements, 3 dimensions `[n, rows, cols]`;
/// pixels become f32 `v / 255`.
pub fn idx_images(a: IdxArray) -> Result<Images> {
    let IdxData::U8(px) = a.data else {
        return Err(DataError::at_byte(2, format!("IDX images must be u8, found {}", a.data.type_name())));
    };
    if a.dims.len() != 3 {
        return Err(DataError::at_byte(3, format!("IDX images must have 3 dimensions [n, rows, cols], found {:?}", a.dims)));
    }
    Ok(Images { n: a.dims[0], rows: a.dims[1], cols: a.dims[2], pixels: px.iter().map(|&b| b as f32 / 255.0).collect() })
}

/// Interprets a parsed IDX array as labels: u8 elements, 1 dimension.
pub fn idx_labels(a: IdxArray) -> Result<Vec<u8>> {
    let IdxData::U8(l) = a.data else {
        return Err(DataError::at_byte(2, format!("IDX labels must be u8, found {}", a.data.type_name())));
    };
    if a.dims.len() != 1 {
        return Err(DataError::at_byte(3, format!("IDX labels must have 1 dimension, found {:?}", a.dims)));
    }
    Ok(l)
}

/// Parses IDX images (`idx3-ubyte`, raw or gzip) from memory.
pub fn idx_images_from_bytes(bytes: &[u8]) -> Result<Images> {
    idx_images(idx_from_bytes(bytes)?)
}

/// Parses IDX labels (`idx1-ubyte`, raw or gzip) from memory.
pub fn idx_labels_from_bytes(bytes: &[u8]) -> Result<Vec<u8>> {
    idx_labels(idx_from_bytes(bytes)?)
}

/// Reads an IDX image file (`*-images-idx3-ubyte[.gz]`) as f32 pixels in [0, 1].
pub fn load_idx_images(path: impl AsRef<Path>) -> Result<Images> {
    parse_file(path.as_ref(), idx_images_from_bytes)
}

/// Reads an IDX label file (`*-labels-idx1-ubyte[.gz]`).
pub fn load_idx_labels(path: impl AsRef<Path>) -> Result<Vec<u8>> {
    parse_file(path.as_ref(), idx_labels_from_bytes)
}

/// Reads an image file and its label file and checks that their counts agree.
pub fn load_idx_set(images: impl AsRef<Path>, labels: impl AsRef<Path>) -> Result<ImageSet> {
    let im = load_idx_images(images.as_ref())?;
    let lb = load_idx_labels(labels.as_ref())?;
    if im.n != lb.len() {
        return Err(DataError::whole(format!(
            "{} labels for {} images in {}",
            lb.len(),
            im.n,
            images.as_ref().display()
        ))
        .with_path(labels.as_ref()));
    }
    Ok(ImageSet { n: im.n, rows: im.rows, cols: im.cols, pixels: im.pixels, labels: lb })
}

/// Finds `name` or `name.gz` in `dir`.
fn find(dir: &Path, name: &str) -> Result<std::path::PathBuf> {
    for cand in [dir.join(format!("{name}.gz")), dir.join(name)] {
        if cand.is_file() {
            return Ok(cand);
        }
    }
    Err(DataError::whole(format!("neither {name} nor {name}.gz exists")).with_path(dir))
}

/// Loads an MNIST-layout directory (Fashion-MNIST, or the canonical MNIST files): the four files
/// `{train,t10k}-{images-idx3,labels-idx1}-ubyte`, each optionally `.gz`. Returns (train, test).
pub fn load_mnist_idx_dir(dir: impl AsRef<Path>) -> Result<(ImageSet, ImageSet)> {
    let dir = dir.as_ref();
    let train = load_idx_set(find(dir, "train-images-idx3-ubyte")?, find(dir, "train-labels-idx1-ubyte")?)?;
    let test_images = find(dir, "t10k-images-idx3-ubyte")?;
    let test_labels = find(dir, "t10k-labels-idx1-ubyte")?;
    let test = load_idx_set(&test_images, &test_labels)?;
    check_mnist_split(&train, &find(dir, "train-images-idx3-ubyte")?, &find(dir, "train-labels-idx1-ubyte")?)?;
    check_mnist_split(&test, &test_images, &test_labels)?;
    Ok((train, test))
}

/// Classes of the MNIST layout (digits, or Fashion-MNIST's ten garment kinds).
pub const MNIST_CLASSES: usize = 10;

/// An MNIST-layout split must hold 28 × 28 images, at least one example, labels below
/// [`MNIST_CLASSES`], and every class at least once (a missing class makes per-class metrics
/// meaningless).
pub fn check_mnist_split(s: &ImageSet, images: &Path, labels: &Path) -> Result<()> {
    if (s.rows, s.cols) != (28, 28) {
        return Err(DataError::at_byte(8, format!("images are {}×{}, the MNIST layout has 28×28 (dimensions in the IDX header)", s.rows, s.cols)).with_path(images));
    }
    if s.n == 0 {
        return Err(DataError::at_byte(4, "the file holds no images (count 0 in the IDX header): an empty split has no metrics").with_path(images));
    }
    if let Some(i) = s.labels.iter().position(|&l| l as usize >= MNIST_CLASSES) {
        // Labels start after the 8-byte header (magic + count).
        return Err(DataError::at_byte(8 + i as u64, format!("label {} of example {i} is out of range 0..{MNIST_CLASSES}", s.labels[i])).with_path(labels));
    }
    let mut seen = [false; MNIST_CLASSES];
    for &l in &s.labels {
        seen[l as usize] = true;
    }
    if let Some(c) = seen.iter().position(|&x| !x) {
        return Err(DataError::whole(format!("class {c} never occurs among the {} labels: every class must be present", s.labels.len())).with_path(labels));
    }
    Ok(())
}
