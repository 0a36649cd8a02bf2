//! Word vectors: lookup, cosine similarity and nearest neighbours.

use crate::error::{config, WordsError};
use std::collections::HashMap;

/// Words with one `dim`-long vector each (row-major).
#[derive(Clone, Debug, PartialEq)]
pub struct Vectors {
    words: Vec<String>,
    dim: usize,
    data: Vec<f32>,
    index: HashMap<String, usize>,
}

impl Vectors {
    /// Vectors for `words`; `data` holds `words.len() × dim` values. A repeated word keeps its
    /// first row for lookups.
    pub fn new(words: Vec<String>, dim: usize, data: Vec<f32>) -> Result<Vectors, WordsError> {
        if data.len() != words.len() * dim {
            return Err(config("vectors", format!("{} values for {} words × {dim} dimensions", data.len(), words.len())));
        }
        let mut index = HashMap::with_capacity(words.len());
        for (i, w) in words.iter().enumerate() {
            index.entry(w.clone()).or_insert(i);
        }
        Ok(Vectors { words, dim, data, index })
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether there are no words.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Vector size.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The words, in row order.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// All values, row-major.
    pub fn data(&self) -> &[f32] {
        &self.data
    }

    /// Row of `word`.
    pub fn index_of(&self, word: &str) -> Option<usize> {
        self.index.get(word).copied()
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }

    /// Vector of `word`.
    pub fn get(&self, word: &str) -> Option<&[f32]> {
        self.index_of(word).map(|i| self.row(i))
    }

    /// Cosine similarity of two words (`None` if either is missing).
    pub fn similarity(&self, a: &str, b: &str) -> Option<f64> {
        Some(cosine(self.get(a)?, self.get(b)?))
    }

    /// A copy with every row scaled to unit length (zero rows stay zero).
    pub fn normalized(&self) -> Vectors {
        let mut data = self.data.clone();
        if self.dim > 0 {
            for r in data.chunks_mut(self.dim) {
                let n = r.iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt();
                if n > 0.0 {
                    r.iter_mut().for_each(|x| *x = (*x as f64 / n) as f32);
                }
            }
        }
        Vectors { words: self.words.clone(), dim: self.dim, data, index: self.index.clone() }
    }

    /// The `k` words most similar (cosine) to `word`, excluding itself, best first.
    pub fn nearest(&self, word: &str, k: usize) -> Option<Vec<(String, f64)>> {
        let i = self.index_of(word)?;
        let q = self.row(i).to_vec();
        Some(self.nearest_to(&q, k, &[i]))
    }

    /// The `k` rows most similar (cosine) to the vector `q`, skipping rows in `exclude` and zero
    /// rows (which have no direction to be near); none for a zero `q`.
    pub fn nearest_to(&self, q: &[f32], k: usize, exclude: &[usize]) -> Vec<(String, f64)> {
        if q.iter().all(|&x| x == 0.0) {
            return Vec::new();
        }
        let mut scored: Vec<(usize, f64)> = (0..self.len())
            .filter(|i| !exclude.contains(i) && self.row(*i).iter().any(|&x| x != 0.0))
            .map(|i| (i, cosine(q, self.row(i))))
            .filter(|s| s.1.is_finite())
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(k);
        scored.into_iter().map(|(i, s)| (self.words[i].clone(), s)).collect()
    }
}

/// Cosine similarity in f64; 0 when either vector is zero (as gensim, whose unit vector of a
/// zero vector is that zero vector), so a word pair with an all-zero vector is scored, not
/// turned into a NaN that would make the whole correlation undefined.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut ab, mut aa, mut bb) = (0.0f64, 0.0f64, 0.0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (x as f64, y as f64);
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0.0 || bb == 0.0 {
        return 0.0;
    }
    ab / (aa.sqrt() * bb.sqrt())
}
