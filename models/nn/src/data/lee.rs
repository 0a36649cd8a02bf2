//! The Lee document-similarity corpus (from gensim's test data): `lee.cor` (50 news documents,
//! one per line), `lee_background.cor` (300 documents, one per line) and `similarities0-1.txt`
//! (50×50 mean human similarity, whitespace-separated; only the upper triangle is filled in,
//! the lower triangle is 0). The usual metric is the correlation between model and human
//! similarity over the 1225 pairs `i < j` ([`SquareMatrix::upper_pairs`]).

use super::error::{lines, parse_file, strip_bom, utf8_line, DataError, Result};
use std::path::Path;

/// Parses a one-document-per-line corpus held in memory. Trailing whitespace is trimmed; blank
/// lines are errors (a document would silently disappear otherwise).
///
/// Encoding: a line that is valid UTF-8 is read as UTF-8; any other line is read as Latin-1
/// (ISO-8859-1), because the gensim copy of `lee.cor` is Latin-1 (e.g. byte `0xA3`, "£", in
/// document 41) and every byte sequence is valid Latin-1.
pub fn corpus_from_bytes(bytes: &[u8]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for (no, _, line) in lines(strip_bom(bytes)) {
        let decoded = match utf8_line(no, line) {
            Ok(s) => s.to_string(),
            Err(_) => line.iter().map(|&b| char::from(b)).collect(),
        };
        let doc = decoded.trim_end();
        if doc.trim().is_empty() {
            return Err(DataError::at_line(no, "empty document (expected one document per line)"));
        }
        out.push(doc.to_string());
    }
    Ok(out)
}

/// Reads a one-document-per-line corpus (`lee.cor`, `lee_background.cor`).
pub fn load_corpus(path: impl AsRef<Path>) -> Result<Vec<String>> {
    parse_file(path.as_ref(), corpus_from_bytes)
}

/// A dense square matrix, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct SquareMatrix {
    /// Side length.
    pub n: usize,
    /// `n · n` values.
    pub data: Vec<f64>,
}

impl SquareMatrix {
    /// Element (i, j).
    pub fn get(&self, i: usize, j: usize) -> f64 {
        self.data[i * self.n + j]
    }
    /// The values above the diagonal, `(i, j)` with `i < j`, row by row (`n(n−1)/2` values).
    pub fn upper_pairs(&self) -> Vec<f64> {
        let mut v = Vec::with_capacity(self.n * self.n.saturating_sub(1) / 2);
        for i in 0..self.n {
            for j in i + 1..self.n {
                v.push(self.get(i, j));
            }
        }
        v
    }
}

/// Parses a whitespace-separated square matrix of numbers held in memory (one row per line;
/// blank lines ignored).
pub fn matrix_from_bytes(bytes: &[u8]) -> Result<SquareMatrix> {
    let mut data = Vec::new();
    let mut n = 0usize;
    let mut rows = 0usize;
    for (no, _, line) in lines(strip_bom(bytes)) {
        let line = utf8_line(no, line)?;
        if line.trim().is_empty() {
            continue;
        }
        let start = data.len();
        for (k, t) in line.split_whitespace().enumerate() {
            let v: f64 = t
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| DataError::at_line(no, format!("value {} is not a finite number: '{t}'", k + 1)))?;
            data.push(v);
        }
        let got = data.len() - start;
        if rows == 0 {
            n = got;
        } else if got != n {
            return Err(DataError::at_line(no, format!("row has {got} values, expected {n} (as the first row)")));
        }
        rows += 1;
        if rows > n {
            return Err(DataError::at_line(no, format!("more than {n} rows: the matrix must be square")));
        }
    }
    if rows != n || n == 0 {
        return Err(DataError::whole(format!("{rows} rows of {n} values: the matrix must be square and non-empty")));
    }
    Ok(SquareMatrix { n, data })
}

/// Reads a square matrix file (`similarities0-1.txt`).
pub fn load_matrix(path: impl AsRef<Path>) -> Result<SquareMatrix> {
    parse_file(path.as_ref(), matrix_from_bytes)
}

/// The Lee data set: test documents, background corpus and human similarities.
#[derive(Debug, Clone)]
pub struct Lee {
    /// The 50 documents of `lee.cor`.
    pub docs: Vec<String>,
    /// The 300 documents of `lee_background.cor`.
    pub background: Vec<String>,
    /// 50×50 human similarity (`similarities0-1.txt`), upper triangle filled.
    pub similarity: SquareMatrix,
}

/// Loads `lee.cor`, `lee_background.cor` and `similarities0-1.txt` from a directory (the fetched
/// `data/gensim`), checking that the matrix side equals the number of documents.
pub fn load_lee(dir: impl AsRef<Path>) -> Result<Lee> {
    let dir = dir.as_ref();
    let docs = load_corpus(dir.join("lee.cor"))?;
    let background = load_corpus(dir.join("lee_background.cor"))?;
    let mpath = dir.join("similarities0-1.txt");
    let similarity = load_matrix(&mpath)?;
    if similarity.n != docs.len() {
        return Err(DataError::whole(format!(
            "{}×{} similarity matrix for {} documents",
            similarity.n,
            similarity.n,
            docs.len()
        ))
        .with_path(&mpath));
    }
    Ok(Lee { docs, background, similarity })
}
