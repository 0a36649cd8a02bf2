//! The word2vec text format: a header line `V D`, then `V` lines `word v1 … vD`.
//! gensim's `KeyedVectors.load_word2vec_format(path, binary=False)` reads it, as do most tools.

use crate::error::WordsError;
use crate::vectors::Vectors;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `vectors` in the word2vec text format (values with 6 significant decimals, like
/// gensim). Words containing whitespace are rejected, as the format cannot hold them.
pub fn write_word2vec_text(vectors: &Vectors, w: &mut impl Write) -> std::io::Result<()> {
    writeln!(w, "{} {}", vectors.len(), vectors.dim())?;
    for (i, word) in vectors.words().iter().enumerate() {
        if word.is_empty() || word.chars().any(char::is_whitespace) {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("word {word:?} is empty or holds whitespace")));
        }
        write!(w, "{word}")?;
        for x in vectors.row(i) {
            write!(w, " {x:.6}")?;
        }
        writeln!(w)?;
    }
    Ok(())
}

/// Saves `vectors` to `path` in the word2vec text format, atomically: the text is built in
/// memory and written through a temporary file renamed over `path`, so a failed write (a full
/// disk, a file-size limit) leaves any existing file untouched.
pub fn save_word2vec_text(vectors: &Vectors, path: &Path) -> Result<(), WordsError> {
    let mut text = Vec::new();
    write_word2vec_text(vectors, &mut text).map_err(|e| WordsError::Io { path: path.to_path_buf(), message: e.to_string() })?;
    chi_nn::checkpoint::atomic_write(path, &text).map_err(|e| match e {
        chi_nn::NnError::Io { action, source, .. } => WordsError::Io { path: path.to_path_buf(), message: format!("{action}: {source}") },
        other => WordsError::Io { path: path.to_path_buf(), message: other.to_string() },
    })
}

/// Parses the word2vec text format from memory; `path` only names the source in errors.
pub fn parse_word2vec_text(text: &[u8], path: &Path) -> Result<Vectors, WordsError> {
    let bad = |line: Option<usize>, message: String| WordsError::Format { path: path.to_path_buf(), line, message };
    let text = std::str::from_utf8(text).map_err(|e| {
        let line = text[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count() + 1;
        bad(Some(line), "not UTF-8".into())
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let (_, header) = lines.next().ok_or_else(|| bad(None, "empty file: expected a header line \"V D\"".into()))?;
    let h: Vec<&str> = header.split_whitespace().collect();
    let parse_n = |s: &str, what: &str| s.parse::<usize>().map_err(|_| bad(Some(1), format!("header: {what} {s:?} is not a non-negative integer")));
    if h.len() != 2 {
        return Err(bad(Some(1), format!("header must be \"V D\" (two integers), found {} field(s)", h.len())));
    }
    let (v, d) = (parse_n(h[0], "word count")?, parse_n(h[1], "dimension")?);
    if d == 0 {
        return Err(bad(Some(1), "header: dimension is 0".into()));
    }
    // The vectors become one buffer of V × D values: bound it before reading any row. Both
    // counts come from the header, so the capacity reserved is also capped by what the text
    // can hold (every value takes at least two bytes, a digit and a separator).
    for (what, dims) in [("word2vec vector", &[d][..]), ("word2vec vectors", &[v, d])] {
        chi_nn::limits::check_elements(what, dims).map_err(|e| bad(Some(1), format!("header: {e}")))?;
    }
    let mut words = Vec::with_capacity(v.min(text.len() / 2));
    let mut data = Vec::with_capacity((v * d).min(text.len() / 2));
    // A word given twice would have two vectors of which lookups see only the first while
    // neighbour lists and saved copies keep both: refused, naming both lines.
    let mut first_line: std::collections::HashMap<&str, usize> = std::collections::HashMap::with_capacity(words.capacity());
    for (no, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        if words.len() == v {
            return Err(bad(Some(no), format!("more than the {v} vectors the header announces")));
        }
        let mut f = line.split_whitespace();
        let word = f.next().expect("non-empty line has a field");
        if let Some(first) = first_line.insert(word, no) {
            return Err(bad(Some(no), format!("{word:?} appears again (first on line {first}): each word needs exactly one vector")));
        }
        let before = data.len();
        for (k, s) in f.enumerate() {
            let x: f32 = s.parse().map_err(|_| bad(Some(no), format!("value {} of {word:?}, {s:?}, is not a number", k + 1)))?;
            if !x.is_finite() {
                return Err(bad(Some(no), format!("value {} of {word:?} is not finite ({s})", k + 1)));
            }
            data.push(x);
        }
        if data.len() - before != d {
            return Err(bad(Some(no), format!("{word:?} has {} values, the header says {d}", data.len() - before)));
        }
        words.push(word.to_string());
    }
    if words.len() != v {
        return Err(bad(None, format!("the header announces {v} vectors, the file holds {}", words.len())));
    }
    Vectors::new(words, d, data).map_err(|e| bad(None, e.to_string()))
}

/// Loads vectors from a word2vec text file.
pub fn load_word2vec_text(path: &Path) -> Result<Vectors, WordsError> {
    let bytes = chi_nn::limits::read_file(path).map_err(|e| WordsError::Io { path: PathBuf::from(path), message: e.to_string() })?;
    parse_word2vec_text(&bytes, path)
}
