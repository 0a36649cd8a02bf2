//! Word-pair similarity benchmarks (WordSim-353, SimLex-999) and the rank statistics used to
//! score embeddings on them.
//!
//! Accepted layouts: gensim's `wordsim353.tsv` / `simlex999.txt` (`#` comment lines, then
//! `word1<TAB>word2<TAB>score`), the original `SimLex-999.txt` (a header line
//! `word1 word2 POS SimLex999 …`; the score is the `SimLex999` column) and the original
//! WordSim `combined.csv` (`Word 1,Word 2,Human (mean)` header, comma-separated). Fields are
//! split on tabs if the line has one, else on commas, else on spaces.

use super::error::{lines, parse_file, strip_bom, utf8_line, DataError, Result};
use super::glove::Embeddings;
use std::path::Path;

/// One scored word pair.
#[derive(Debug, Clone, PartialEq)]
pub struct WordPair {
    /// First word.
    pub a: String,
    /// Second word.
    pub b: String,
    /// Human similarity score.
    pub score: f64,
}

fn split(line: &str) -> Vec<&str> {
    if line.contains('\t') {
        line.split('\t').map(str::trim).collect()
    } else if line.contains(',') {
        line.split(',').map(str::trim).collect()
    } else {
        line.split_whitespace().collect()
    }
}

/// Parses a word-pair similarity file held in memory.
pub fn word_pairs_from_bytes(bytes: &[u8]) -> Result<Vec<WordPair>> {
    let mut out = Vec::new();
    let mut score_col = 2usize;
    let mut first = true;
    for (no, _, line) in lines(strip_bom(bytes)) {
        let line = utf8_line(no, line)?;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let f = split(t);
        if first {
            first = false;
            let is_header = f.get(2).map_or(true, |s| s.parse::<f64>().is_err());
            if is_header {
                if let Some(c) = f.iter().position(|h| {
                    let h = h.to_ascii_lowercase();
                    h == "simlex999" || h.starts_with("human")
                }) {
                    score_col = c;
                }
                continue;
            }
        }
        if f.len() <= score_col || f.len() < 3 {
            return Err(DataError::at_line(
                no,
                format!("expected word1, word2 and a score (column {}), found {} field(s)", score_col + 1, f.len()),
            ));
        }
        let score: f64 = f[score_col]
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite())
            .ok_or_else(|| DataError::at_line(no, format!("score '{}' is not a finite number", f[score_col])))?;
        if f[0].is_empty() || f[1].is_empty() {
            return Err(DataError::at_line(no, "empty word"));
        }
        out.push(WordPair { a: f[0].to_string(), b: f[1].to_string(), score });
    }
    if out.is_empty() {
        return Err(DataError::whole("no word pairs"));
    }
    Ok(out)
}

/// Reads a word-pair similarity file (`wordsim353.tsv`, `simlex999.txt`, …).
pub fn load_word_pairs(path: impl AsRef<Path>) -> Result<Vec<WordPair>> {
    parse_file(path.as_ref(), word_pairs_from_bytes)
}

/// Correlations are the ones of [`crate::metrics`] (Spearman = Pearson of tie-averaged ranks).
pub use crate::metrics::{pearson, ranks, spearman};

/// Result of scoring embeddings on a word-pair benchmark.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimilarityScore {
    /// Spearman correlation between cosine similarity and the human scores, over covered pairs.
    pub spearman: f64,
    /// Pearson correlation, same pairs.
    pub pearson: f64,
    /// Pairs with both words in the vocabulary.
    pub covered: usize,
    /// Pairs skipped because a word is missing.
    pub missing: usize,
}

/// Scores embeddings on word pairs: cosine similarity vs human score, over the pairs whose
/// words are both in the vocabulary (looked up as given, then lower-cased).
pub fn evaluate_word_pairs(emb: &Embeddings, pairs: &[WordPair]) -> SimilarityScore {
    let (mut model, mut human) = (Vec::new(), Vec::new());
    let look = |w: &str| emb.get(w).or_else(|| emb.get(&w.to_lowercase()));
    for p in pairs {
        if let (Some(a), Some(b)) = (look(&p.a), look(&p.b)) {
            model.push(super::glove::cosine(a, b) as f64);
            human.push(p.score);
        }
    }
    SimilarityScore {
        spearman: spearman(&model, &human),
        pearson: pearson(&model, &human),
        covered: model.len(),
        missing: pairs.len() - model.len(),
    }
}
