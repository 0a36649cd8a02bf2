//! The error type shared by every data loader.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where in a file a problem was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// The file as a whole (e.g. it cannot be opened, or a count does not match).
    File,
    /// A byte offset from the start of the file (for gzip files: of the decompressed data).
    Byte(u64),
    /// A 1-based line number.
    Line(usize),
    /// A 1-based line and column (column in bytes, or characters for JSON).
    LineCol(usize, usize),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File => Ok(()),
            Location::Byte(b) => write!(f, "byte {b}"),
            Location::Line(l) => write!(f, "line {l}"),
            Location::LineCol(l, c) => write!(f, "line {l}, column {c}"),
        }
    }
}

/// A loader error: which file, where in it, and what is wrong.
///
/// Displayed as `PATH: LOCATION: MESSAGE`, e.g. `data/x.idx: byte 8: ...`. Parsers working on
/// bytes in memory (the `*_from_bytes` / `*_from_reader` functions) report the path `<bytes>`;
/// the path-taking loaders replace it with the real file name.
#[derive(Debug, Clone, PartialEq)]
pub struct DataError {
    /// The file (or `<bytes>` for in-memory input).
    pub path: PathBuf,
    /// Where in the file.
    pub location: Location,
    /// What is wrong.
    pub msg: String,
}

/// Result alias for the loaders.
pub type Result<T> = std::result::Result<T, DataError>;

/// The placeholder path of in-memory input.
pub const MEMORY: &str = "<bytes>";

impl DataError {
    /// An error at `location` in in-memory input (path `<bytes>`).
    pub fn new(location: Location, msg: impl Into<String>) -> Self {
        DataError { path: PathBuf::from(MEMORY), location, msg: msg.into() }
    }
    /// An error at a byte offset of in-memory input.
    pub fn at_byte(byte: u64, msg: impl Into<String>) -> Self {
        Self::new(Location::Byte(byte), msg)
    }
    /// An error at a 1-based line of in-memory input.
    pub fn at_line(line: usize, msg: impl Into<String>) -> Self {
        Self::new(Location::Line(line), msg)
    }
    /// An error about the input as a whole.
    pub fn whole(msg: impl Into<String>) -> Self {
        Self::new(Location::File, msg)
    }
    /// The same error, attributed to `path`.
    pub fn with_path(mut self, path: &Path) -> Self {
        self.path = path.to_path_buf();
        self
    }
    /// An I/O error on `path` (cannot open / read).
    pub fn io(path: &Path, e: &std::io::Error) -> Self {
        // The bounded reader's own refusals (a directory, too large, binary) say what is wrong.
        let msg = match (e.kind(), e.raw_os_error()) {
            (std::io::ErrorKind::IsADirectory | std::io::ErrorKind::FileTooLarge | std::io::ErrorKind::InvalidData, None) => e.to_string(),
            _ => format!("cannot read: {e}"),
        };
        DataError { path: path.to_path_buf(), location: Location::File, msg }
    }
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.location {
            Location::File => write!(f, "{}: {}", self.path.display(), self.msg),
            _ => write!(f, "{}: {}: {}", self.path.display(), self.location, self.msg),
        }
    }
}

impl std::error::Error for DataError {}

/// Reads a whole file (bounded by [`crate::files::read_file`]), mapping I/O errors to
/// [`DataError`].
pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>> {
    crate::files::read_file(path).map_err(|e| DataError::io(path, &e))
}

/// Runs a byte-level parser on a file's contents and attributes its errors to the file.
pub(crate) fn parse_file<T>(path: &Path, parse: impl FnOnce(&[u8]) -> Result<T>) -> Result<T> {
    let bytes = read_file(path)?;
    parse(&bytes).map_err(|e| e.with_path(path))
}

/// Splits text into lines (`\n`, with an optional `\r` before it), yielding `(1-based line
/// number, byte offset of the line, line)`. A final line without a newline is included; an empty
/// final line after the last newline is not.
pub(crate) fn lines(bytes: &[u8]) -> impl Iterator<Item = (usize, usize, &[u8])> {
    let mut pos = 0usize;
    let mut no = 0usize;
    std::iter::from_fn(move || {
        if pos >= bytes.len() {
            return None;
        }
        let start = pos;
        let end = match bytes[pos..].iter().position(|&b| b == b'\n') {
            Some(i) => pos + i,
            None => bytes.len(),
        };
        pos = end + 1;
        no += 1;
        let mut line = &bytes[start..end];
        if let [rest @ .., b'\r'] = line {
            line = rest;
        }
        Some((no, start, line))
    })
}

/// Decodes one line as UTF-8, or an error naming the line and the byte offset of the bad byte.
pub(crate) fn utf8_line(no: usize, line: &[u8]) -> Result<&str> {
    std::str::from_utf8(line).map_err(|e| {
        DataError::new(
            Location::LineCol(no, e.valid_up_to() + 1),
            "invalid UTF-8".to_string(),
        )
    })
}

/// Strips a UTF-8 byte-order mark.
pub(crate) fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(&[0xEF, 0xBB, 0xBF][..]).unwrap_or(bytes)
}
