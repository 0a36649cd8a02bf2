//! Intrinsic evaluation: word-pair similarity (Spearman ρ, as WordSim353 and SimLex-999 are
//! scored) and word analogies (3CosAdd, as the Google `questions-words.txt` set is scored).
//! Both follow gensim's `evaluate_word_pairs` / `evaluate_word_analogies` defaults: lookups are
//! case-insensitive, restricted to the `restrict` most frequent words (300,000 by default), and
//! items with a missing word are skipped and counted.

use crate::error::WordsError;
use crate::vectors::Vectors;
use std::collections::HashMap;
use std::path::Path;

/// One human-scored word pair.
#[derive(Clone, Debug, PartialEq)]
pub struct WordPair {
    /// First word.
    pub a: String,
    /// Second word.
    pub b: String,
    /// Human score.
    pub score: f64,
}

/// One analogy question `a : b :: c : d`, in a named section.
#[derive(Clone, Debug, PartialEq)]
pub struct Analogy {
    /// Section (the `: name` line above it).
    pub section: String,
    /// The four words.
    pub words: [String; 4],
}

fn format_err(path: &Path, line: usize, message: String) -> WordsError {
    WordsError::Format { path: path.to_path_buf(), line: Some(line), message }
}

/// Parses a word-pair file: `#` comments, then `word1 word2 score` split on tabs (or on
/// whitespace when a line has no tab), as gensim's `wordsim353.tsv` and `simlex999.txt`.
/// A first line whose third field is not a number is taken as a header.
pub fn parse_word_pairs(text: &str, path: &Path) -> Result<Vec<WordPair>, WordsError> {
    let mut out = Vec::new();
    let mut first = true;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = if t.contains('\t') { t.split('\t').map(str::trim).collect() } else { t.split_whitespace().collect() };
        let score = f.get(2).and_then(|s| s.parse::<f64>().ok());
        // A header names its columns (`Human (mean)`, `SimLex999`); a first row whose score is a
        // mistyped number (`5x`, `nan`) is data, reported below rather than dropped.
        let names_a_column = |s: &str| s.starts_with(|c: char| c.is_alphabetic()) && !matches!(s.to_ascii_lowercase().as_str(), "nan" | "inf" | "infinity");
        if first && score.is_none() && f.get(2).is_none_or(|s| names_a_column(s)) {
            first = false;
            continue;
        }
        first = false;
        if f.len() < 3 || f[0].is_empty() || f[1].is_empty() {
            return Err(format_err(path, i + 1, format!("expected word1, word2, score; found {} field(s)", f.len())));
        }
        let score = score.filter(|s| s.is_finite()).ok_or_else(|| format_err(path, i + 1, format!("score {:?} is not a finite number", f[2])))?;
        out.push(WordPair { a: f[0].to_string(), b: f[1].to_string(), score });
    }
    if out.is_empty() {
        return Err(WordsError::Format { path: path.to_path_buf(), line: None, message: "no word pairs".into() });
    }
    Ok(out)
}

/// Parses an analogy file: `: section` lines, then `a b c d` lines.
pub fn parse_analogies(text: &str, path: &Path) -> Result<Vec<Analogy>, WordsError> {
    let mut out = Vec::new();
    let mut section = String::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(s) = t.strip_prefix(':') {
            section = s.trim().to_string();
            continue;
        }
        let f: Vec<&str> = t.split_whitespace().collect();
        if f.len() != 4 {
            return Err(format_err(path, i + 1, format!("an analogy needs 4 words, found {}", f.len())));
        }
        out.push(Analogy { section: section.clone(), words: [f[0], f[1], f[2], f[3]].map(str::to_string) });
    }
    if out.is_empty() {
        return Err(WordsError::Format { path: path.to_path_buf(), line: None, message: "no analogy questions".into() });
    }
    Ok(out)
}

fn read(path: &Path) -> Result<String, WordsError> {
    let b = chi_nn::limits::read_file(path).map_err(|e| WordsError::Io { path: path.to_path_buf(), message: e.to_string() })?;
    String::from_utf8(b).map_err(|_| WordsError::Format { path: path.to_path_buf(), line: None, message: "not UTF-8".into() })
}

/// Reads a word-pair file (see [`parse_word_pairs`]).
pub fn load_word_pairs(path: &Path) -> Result<Vec<WordPair>, WordsError> {
    parse_word_pairs(&read(path)?, path)
}

/// Reads an analogy file (see [`parse_analogies`]).
pub fn load_analogies(path: &Path) -> Result<Vec<Analogy>, WordsError> {
    parse_analogies(&read(path)?, path)
}

/// Correlations on word pairs are chi-nn's metrics (Spearman = Pearson of tie-averaged ranks).
pub use chi_nn::metrics::{pearson, ranks, spearman};

/// A case-insensitive view of the `restrict` first rows (the most frequent words for trained
/// vectors): upper-cased word → row, the first (most frequent) casing winning.
fn folded(vectors: &Vectors, restrict: usize) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for (i, w) in vectors.words().iter().enumerate().take(restrict) {
        m.entry(w.to_uppercase()).or_insert(i);
    }
    m
}

/// Result of a word-pair evaluation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairScore {
    /// Spearman ρ between cosine similarity and human score over covered pairs.
    pub spearman: f64,
    /// Pearson r over the same pairs.
    pub pearson: f64,
    /// Pairs scored.
    pub covered: usize,
    /// Pairs skipped for a missing word.
    pub missing: usize,
}

/// Scores `vectors` on word pairs (case-insensitive, first `restrict` rows).
pub fn evaluate_pairs(vectors: &Vectors, pairs: &[WordPair], restrict: usize) -> PairScore {
    let m = folded(vectors, restrict);
    let (mut model, mut human) = (Vec::new(), Vec::new());
    for p in pairs {
        if let (Some(&a), Some(&b)) = (m.get(&p.a.to_uppercase()), m.get(&p.b.to_uppercase())) {
            model.push(crate::vectors::cosine(vectors.row(a), vectors.row(b)));
            human.push(p.score);
        }
    }
    PairScore { spearman: spearman(&model, &human), pearson: pearson(&model, &human), covered: model.len(), missing: pairs.len() - model.len() }
}

/// Result of an analogy evaluation.
#[derive(Clone, Debug, PartialEq)]
pub struct AnalogyScore {
    /// Correct answers.
    pub correct: usize,
    /// Questions answered (all four words known).
    pub covered: usize,
    /// Questions skipped for a missing word.
    pub missing: usize,
    /// `(section, correct, covered)` per section, in file order.
    pub sections: Vec<(String, usize, usize)>,
}

impl AnalogyScore {
    /// `correct / covered` (NaN when nothing was covered).
    pub fn accuracy(&self) -> f64 {
        self.correct as f64 / self.covered as f64
    }
}

/// Questions answered together: their query vectors stay in L1 cache while every row of the
/// (much larger) vocabulary matrix streams past once per block instead of once per question.
const ANALOGY_BLOCK: usize = 64;

/// Dot product with eight independent partial sums (vectorisable; a fixed summation order, so
/// the result does not depend on the block a question falls in).
#[inline]
fn dot8(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// Answers `a : b :: c : ?` by 3CosAdd: the word (among the first `restrict` rows, excluding
/// `a`, `b`, `c` in any letter case) maximising `cos(x, b̂ − â + ĉ)` over unit-normalised vectors (the first such
/// row on a tie).
pub fn evaluate_analogies(vectors: &Vectors, questions: &[Analogy], restrict: usize) -> AnalogyScore {
    let unit = vectors.normalized();
    let n = restrict.min(unit.len());
    let d = unit.dim();
    let m = folded(vectors, restrict);
    let ids: Vec<Option<[usize; 4]>> = questions
        .iter()
        .map(|a| {
            let v: Option<Vec<usize>> = a.words.iter().map(|w| m.get(&w.to_uppercase()).copied()).collect();
            v.map(|v| [v[0], v[1], v[2], v[3]])
        })
        .collect();
    let known: Vec<[usize; 4]> = ids.iter().flatten().copied().collect();
    // Rows compare by their case-folded word, as gensim compares upper-cased words: another
    // casing of the expected word is right, another casing of a question word is skipped.
    let fold: Vec<usize> = vectors.words().iter().take(n).map(|w| m.get(&w.to_uppercase()).copied().unwrap_or(usize::MAX)).collect();
    let mut right = Vec::with_capacity(known.len());
    let mut q = vec![0f32; ANALOGY_BLOCK * d];
    for block in known.chunks(ANALOGY_BLOCK) {
        for (j, w) in block.iter().enumerate() {
            let (a, b, c) = (unit.row(w[0]), unit.row(w[1]), unit.row(w[2]));
            for k in 0..d {
                q[j * d + k] = b[k] - a[k] + c[k];
            }
        }
        let mut best = vec![(usize::MAX, f32::NEG_INFINITY); block.len()];
        for i in 0..n {
            let row = unit.row(i);
            for (j, w) in block.iter().enumerate() {
                let s = dot8(row, &q[j * d..(j + 1) * d]);
                if s > best[j].1 && fold[i] != w[0] && fold[i] != w[1] && fold[i] != w[2] {
                    best[j] = (i, s);
                }
            }
        }
        right.extend(block.iter().zip(&best).map(|(w, b)| fold.get(b.0) == Some(&w[3])));
    }
    let mut score = AnalogyScore { correct: 0, covered: 0, missing: 0, sections: Vec::new() };
    let mut answers = right.into_iter();
    for (a, ids) in questions.iter().zip(&ids) {
        if score.sections.last().map(|s| &s.0) != Some(&a.section) {
            score.sections.push((a.section.clone(), 0, 0));
        }
        if ids.is_none() {
            score.missing += 1;
            continue;
        }
        let ok = answers.next().expect("one answer per known question");
        let sec = score.sections.last_mut().expect("pushed above");
        score.covered += 1;
        sec.2 += 1;
        if ok {
            score.correct += 1;
            sec.1 += 1;
        }
    }
    score
}

#[cfg(test)]
mod tests {
    use super::*;
    use chi_autodiff::Rng;

    /// The blocked search gives the same answers as a plain f64 argmax over every row, across
    /// several blocks, with a dimension that leaves a remainder after the 8-wide chunks.
    #[test]
    fn blocked_analogy_search_matches_a_plain_argmax() {
        let (v, d) = (300usize, 13usize);
        let mut rng = Rng::new(7);
        let words: Vec<String> = (0..v).map(|i| format!("w{i}")).collect();
        let data: Vec<f32> = (0..v * d).map(|_| rng.uniform(-0.5, 0.5) as f32).collect();
        let vecs = Vectors::new(words.clone(), d, data).unwrap();
        let unit = vecs.normalized();
        let mut questions = Vec::new();
        let mut expected = 0;
        for k in 0..150 {
            let pick = |r: &mut Rng| r.uniform(0.0, v as f64) as usize % v;
            let (a, b, c) = (pick(&mut rng), pick(&mut rng), pick(&mut rng));
            let q: Vec<f64> = (0..d).map(|j| (unit.row(b)[j] - unit.row(a)[j] + unit.row(c)[j]) as f64).collect();
            let best = (0..v)
                .filter(|&i| i != a && i != b && i != c)
                .map(|i| (i, unit.row(i).iter().zip(&q).map(|(&x, y)| x as f64 * y).sum::<f64>()))
                .fold((usize::MAX, f64::NEG_INFINITY), |m, s| if s.1 > m.1 { s } else { m });
            // Every third question gets the right answer planted, the others a wrong one.
            let answer = if k % 3 == 0 { best.0 } else { (best.0 + 1) % v };
            expected += (answer == best.0) as usize;
            questions.push(Analogy { section: format!("s{}", k / 50), words: [a, b, c, answer].map(|i| words[i].clone()) });
        }
        let s = evaluate_analogies(&vecs, &questions, v);
        assert_eq!((s.covered, s.missing), (150, 0));
        assert_eq!(s.correct, expected);
        assert_eq!(s.sections.iter().map(|x| x.2).collect::<Vec<_>>(), [50, 50, 50]);
    }

    /// A pair with an all-zero vector scores similarity 0 (gensim's convention) instead of
    /// making the correlation of every pair undefined.
    #[test]
    fn a_zero_vector_pair_has_similarity_zero() {
        let words = ["a", "b", "c", "zero"].map(String::from).to_vec();
        let vecs = Vectors::new(words, 2, vec![1.0, 0.0, 0.8, 0.6, 0.6, 0.8, 0.0, 0.0]).unwrap();
        let p = |a: &str, b: &str, score: f64| WordPair { a: a.into(), b: b.into(), score };
        // Similarities 0.8, 0.6, 0.96 and 0 for the zero vector: the human order exactly.
        let s = evaluate_pairs(&vecs, &[p("a", "b", 5.0), p("a", "c", 2.0), p("b", "c", 9.0), p("a", "zero", 1.0)], 4);
        assert_eq!(s.covered, 4);
        assert!((s.spearman - 1.0).abs() < 1e-12, "{s:?}");
        assert_eq!(vecs.nearest_to(&[1.0, 0.0], 4, &[]).iter().map(|x| x.0.as_str()).collect::<Vec<_>>(), ["a", "b", "c"]);
    }

    /// As gensim: the nearest word in another letter case than the expected one is right, and
    /// another casing of a question word is not an answer.
    #[test]
    fn analogies_compare_words_in_any_letter_case() {
        // man : king :: woman : queen, with `Queen` (a rarer casing) nearest to the query and
        // `WOMAN` nearer still.
        let words = ["man", "king", "woman", "queen", "Queen", "WOMAN", "apple"].map(String::from).to_vec();
        let v = |x: f32, y: f32, z: f32| [x, y, z];
        let rows = [v(1.0, 0.0, 0.0), v(1.0, 1.0, 0.0), v(0.0, 0.0, 1.0), v(0.1, 0.9, 0.9), v(0.0, 1.0, 1.0), v(0.0, 0.7, 1.0), v(-1.0, -1.0, 0.0)];
        let vecs = Vectors::new(words.clone(), 3, rows.iter().flatten().copied().collect()).unwrap();
        let q = |w: [&str; 4]| Analogy { section: "s".into(), words: w.map(String::from) };
        let s = evaluate_analogies(&vecs, &[q(["man", "king", "woman", "queen"]), q(["MAN", "King", "Woman", "QUEEN"])], 7);
        assert_eq!((s.correct, s.covered), (2, 2));
        // A wrong answer stays wrong whatever its case.
        let s = evaluate_analogies(&vecs, &[q(["man", "king", "woman", "Apple"])], 7);
        assert_eq!((s.correct, s.covered), (0, 1));
    }
}

/// A corpus with known structure, for checking that training recovers it: four groups of six
/// words (`g{group}w{k}`), and `sentences` lines of eight words each drawn from one group (the
/// group and the words uniformly, seeded), so words of a group share their contexts and words of
/// different groups never co-occur. Returns the text (one sentence per line) and the groups.
pub fn planted_corpus(seed: u64, sentences: usize) -> (String, Vec<Vec<String>>) {
    let groups: Vec<Vec<String>> = (0..4).map(|g| (0..6).map(|k| format!("g{g}w{k}")).collect()).collect();
    let mut rng = chi_autodiff::Rng::new(seed);
    let mut s = String::new();
    for _ in 0..sentences {
        let g = &groups[rng.below(groups.len())];
        for _ in 0..8 {
            s.push_str(&g[rng.below(g.len())]);
            s.push(' ');
        }
        s.push('\n');
    }
    (s, groups)
}

/// Mean similarity `(within groups, across groups)` over every pair of distinct words of
/// `groups`, with `similarity(a, b)` (e.g. [`Vectors::similarity`]). On a [`planted_corpus`],
/// trained vectors should score the first well above the second.
pub fn group_separation(groups: &[Vec<String>], similarity: impl Fn(&str, &str) -> f64) -> (f64, f64) {
    let (mut same, mut ns, mut diff, mut nd) = (0.0, 0usize, 0.0, 0usize);
    for (gi, g) in groups.iter().enumerate() {
        for (hi, h) in groups.iter().enumerate() {
            for a in g {
                for b in h.iter().filter(|b| *b != a) {
                    let s = similarity(a, b);
                    if gi == hi {
                        (same, ns) = (same + s, ns + 1);
                    } else {
                        (diff, nd) = (diff + s, nd + 1);
                    }
                }
            }
        }
    }
    (same / ns.max(1) as f64, diff / nd.max(1) as f64)
}
