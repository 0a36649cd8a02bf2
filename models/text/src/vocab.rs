//! Tokenisation and vocabularies.

use crate::deps::Embeddings;
use chi_autodiff::Rng;
use std::collections::HashMap;

/// Lower-cases `text` and splits it into words: runs of letters, digits and apostrophes (as in
/// "don't") are words, every other non-space character is a word of its own.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars().flat_map(|c| c.to_lowercase()) {
        if c.is_alphanumeric() || c == '\'' {
            cur.push(c);
        } else {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A word ↔ id map. Id 0 is the unknown word `<unk>`.
#[derive(Clone, Debug)]
pub struct Vocab {
    /// Words by id (`words[0] == "<unk>"`).
    pub words: Vec<String>,
    index: HashMap<String, usize>,
}

/// The unknown-word token.
pub const UNK: &str = "<unk>";

impl Vocab {
    /// Every word occurring at least `min_count` times in `docs`, in order of first occurrence,
    /// after `<unk>`.
    pub fn build<'a>(docs: impl IntoIterator<Item = &'a [String]>, min_count: usize) -> Vocab {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        let mut order: Vec<&str> = Vec::new();
        for d in docs {
            for w in d {
                let c = counts.entry(w.as_str()).or_insert(0);
                if *c == 0 {
                    order.push(w.as_str());
                }
                *c += 1;
            }
        }
        let mut v = Vocab { words: vec![UNK.to_string()], index: HashMap::from([(UNK.to_string(), 0)]) };
        for w in order {
            if counts[w] >= min_count.max(1) && w != UNK {
                v.index.insert(w.to_string(), v.words.len());
                v.words.push(w.to_string());
            }
        }
        v
    }
    /// Number of ids (including `<unk>`).
    pub fn len(&self) -> usize {
        self.words.len()
    }
    /// Always false (`<unk>` is always there).
    pub fn is_empty(&self) -> bool {
        false
    }
    /// The id of `word` (0 if unknown).
    pub fn id(&self, word: &str) -> usize {
        self.index.get(word).copied().unwrap_or(0)
    }
    /// Whether `word` has its own id.
    pub fn contains(&self, word: &str) -> bool {
        self.index.contains_key(word)
    }
    /// Ids of a token list.
    pub fn encode(&self, words: &[String]) -> Vec<usize> {
        words.iter().map(|w| self.id(w)).collect()
    }
}

/// An embedding matrix `[vocab.len(), dim]` (row-major `f64`) initialised from pretrained
/// vectors where the word has one and from `U(−a, a)` otherwise, `a = 0.25` as in Kim (2014)
/// (chosen there so random vectors have about the variance of the pretrained ones). Returns
/// the matrix and the number of words found in `vectors`.
pub fn pretrained_matrix(vocab: &Vocab, vectors: &Embeddings, rng: &mut Rng) -> (Vec<f64>, usize) {
    let dim = vectors.dim;
    let mut m = Vec::with_capacity(vocab.len() * dim);
    let mut hits = 0;
    for w in &vocab.words {
        match vectors.get(w) {
            Some(v) => {
                hits += 1;
                m.extend(v.iter().map(|&x| x as f64));
            }
            None => m.extend((0..dim).map(|_| rng.uniform(-0.25, 0.25))),
        }
    }
    (m, hits)
}
