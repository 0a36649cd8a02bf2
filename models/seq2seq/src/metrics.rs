//! Evaluation of sequence outputs: corpus BLEU ([BLEU](crate#references)), token and sequence
//! error rates (word error rate for translation, phoneme and word error rates for
//! grapheme-to-phoneme), top-k token accuracy and perplexity.
//!
//! Every function takes tokens of any comparable type, so the same code scores word strings,
//! ids or phoneme symbols.

use std::collections::HashMap;
use std::hash::Hash;

/// How BLEU treats an n-gram order with no match at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Smoothing {
    /// No smoothing: any zero precision makes the score 0 (the original definition).
    None,
    /// The `exp` method of sacreBLEU's `corpus_bleu` (its default): the k-th order with zero
    /// matches gets precision `1 / (2^k · total)`, k = 1, 2, …
    Exp,
}

/// A corpus BLEU score and its parts.
#[derive(Clone, Debug, PartialEq)]
pub struct Bleu {
    /// BLEU in [0, 100].
    pub score: f64,
    /// Modified n-gram precisions p₁…p₄ in [0, 100] (before smoothing).
    pub precisions: [f64; 4],
    /// Brevity penalty `min(1, exp(1 − r/c))`.
    pub brevity_penalty: f64,
    /// Hypothesis length `c` (tokens, whole corpus).
    pub hyp_len: usize,
    /// Reference length `r` (tokens, whole corpus).
    pub ref_len: usize,
}

fn ngram_counts<S: Eq + Hash + Clone>(toks: &[S], n: usize) -> HashMap<&[S], usize> {
    let mut m = HashMap::new();
    if toks.len() >= n {
        for w in toks.windows(n) {
            *m.entry(w).or_insert(0) += 1;
        }
    }
    m
}

/// Corpus-level BLEU of `hyps` against one reference each: clipped n-gram precisions for
/// n = 1…4 summed over the corpus, their geometric mean, times the brevity penalty
/// `exp(1 − r/c)` when the corpus hypothesis length `c` is below the reference length `r`.
/// An empty corpus or an empty hypothesis side scores 0.
///
/// ```
/// use chi_seq2seq::metrics::{corpus_bleu, Smoothing};
/// let h = vec!["the cat sat on the mat".split(' ').collect::<Vec<_>>()];
/// assert!((corpus_bleu(&h, &h, Smoothing::None).score - 100.0).abs() < 1e-12);
/// ```
pub fn corpus_bleu<S: Eq + Hash + Clone>(hyps: &[Vec<S>], refs: &[Vec<S>], smoothing: Smoothing) -> Bleu {
    assert_eq!(hyps.len(), refs.len(), "corpus_bleu: {} hypotheses for {} references", hyps.len(), refs.len());
    let mut matches = [0usize; 4];
    let mut totals = [0usize; 4];
    let (mut c, mut r) = (0usize, 0usize);
    for (h, rf) in hyps.iter().zip(refs) {
        c += h.len();
        r += rf.len();
        for n in 1..=4 {
            let hc = ngram_counts(h, n);
            let rc = ngram_counts(rf, n);
            for (g, &k) in &hc {
                matches[n - 1] += k.min(rc.get(g).copied().unwrap_or(0));
            }
            totals[n - 1] += h.len().saturating_sub(n - 1);
        }
    }
    let precisions = std::array::from_fn(|i| if totals[i] == 0 { 0.0 } else { 100.0 * matches[i] as f64 / totals[i] as f64 });
    let bp = if c == 0 { 0.0 } else if c < r { (1.0 - r as f64 / c as f64).exp() } else { 1.0 };
    if c == 0 {
        return Bleu { score: 0.0, precisions, brevity_penalty: bp, hyp_len: c, ref_len: r };
    }
    let mut log_sum = 0.0;
    let mut k = 1.0;
    for i in 0..4 {
        let p = if matches[i] > 0 {
            matches[i] as f64 / totals[i] as f64
        } else {
            match smoothing {
                Smoothing::None => return Bleu { score: 0.0, precisions, brevity_penalty: bp, hyp_len: c, ref_len: r },
                Smoothing::Exp => {
                    if totals[i] == 0 {
                        return Bleu { score: 0.0, precisions, brevity_penalty: bp, hyp_len: c, ref_len: r };
                    }
                    k *= 2.0;
                    1.0 / (k * totals[i] as f64)
                }
            }
        };
        log_sum += p.ln() / 4.0;
    }
    Bleu { score: 100.0 * bp * log_sum.exp(), precisions, brevity_penalty: bp, hyp_len: c, ref_len: r }
}

/// Levenshtein distance (insertions, deletions and substitutions of cost 1).
pub fn edit_distance<S: PartialEq>(a: &[S], b: &[S]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, x) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(x != y)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Token error rate `Σ edit_distance(h, r) / Σ |r|`: the word error rate of speech and
/// translation, or the phoneme error rate (PER) of grapheme-to-phoneme when tokens are
/// phonemes. 0 for an empty reference side.
pub fn token_error_rate<S: PartialEq>(hyps: &[Vec<S>], refs: &[Vec<S>]) -> f64 {
    assert_eq!(hyps.len(), refs.len(), "token_error_rate: {} hypotheses for {} references", hyps.len(), refs.len());
    let errors: usize = hyps.iter().zip(refs).map(|(h, r)| edit_distance(h, r)).sum();
    let total: usize = refs.iter().map(Vec::len).sum();
    if total == 0 {
        0.0
    } else {
        errors as f64 / total as f64
    }
}

/// Sequence error rate: the fraction of hypotheses that differ from their reference in any
/// token. For grapheme-to-phoneme this is the "word error rate" of that literature (a word is
/// wrong if any phoneme is).
pub fn sequence_error_rate<S: PartialEq>(hyps: &[Vec<S>], refs: &[Vec<S>]) -> f64 {
    assert_eq!(hyps.len(), refs.len(), "sequence_error_rate: {} hypotheses for {} references", hyps.len(), refs.len());
    if hyps.is_empty() {
        return 0.0;
    }
    hyps.iter().zip(refs).filter(|(h, r)| h != r).count() as f64 / hyps.len() as f64
}

/// Counts of top-k hits: for each row `i` of `logits [n, v]` (row-major) with `keep[i]`, whether
/// `targets[i]` is among the `k` largest logits (ties broken towards the lower index, as a
/// stable sort would). Returns `(hits, counted)`. The paper's teacher-forced top-k token
/// accuracy is `hits / counted` over all non-padded target positions.
pub fn topk_hits(logits: &[f32], v: usize, targets: &[usize], keep: &[bool], k: usize) -> (usize, usize) {
    assert!(v > 0 && logits.len() == targets.len() * v, "topk_hits: {} logits for {} targets × {v}", logits.len(), targets.len());
    assert_eq!(keep.len(), targets.len(), "topk_hits: keep mask length");
    let mut hits = 0;
    let mut counted = 0;
    for (i, (&t, &kp)) in targets.iter().zip(keep).enumerate() {
        if !kp {
            continue;
        }
        counted += 1;
        let row = &logits[i * v..(i + 1) * v];
        let x = row[t];
        // Rank of the target = number of entries that beat it (strictly larger, or equal with a
        // lower index).
        let rank = row.iter().enumerate().filter(|&(j, &y)| y > x || (y == x && j < t)).count();
        if rank < k {
            hits += 1;
        }
    }
    (hits, counted)
}

/// Perplexity `exp(total negative log-likelihood / tokens)` (natural log); 1 for no tokens.
pub fn perplexity(total_nll: f64, tokens: usize) -> f64 {
    if tokens == 0 {
        1.0
    } else {
        (total_nll / tokens as f64).exp()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<&str> {
        s.split_whitespace().collect()
    }

    #[test]
    fn bleu_by_hand_with_brevity_penalty() {
        // hyp: "the cat the cat on the mat" (7), ref: "the cat is on the mat" (6)
        // 1-grams: the×3 (ref 2 → 2), cat×2 (ref 1 → 1), on 1, mat 1 → 5/7
        // 2-grams: the cat×2 (ref 1 → 1), cat the 0, cat on 0, on the 1, the mat 1 → 3/6
        // 3-grams: the cat the 0, cat the cat 0, the cat on 0, cat on the 0, on the mat 1 → 1/5
        // 4-grams: ... on the mat only within "cat on the mat" (ref has "is on the mat") → 0/4
        let h = vec![toks("the cat the cat on the mat")];
        let r = vec![toks("the cat is on the mat")];
        let b = corpus_bleu(&h, &r, Smoothing::None);
        assert_eq!(b.score, 0.0);
        assert!((b.precisions[0] - 500.0 / 7.0).abs() < 1e-12);
        assert!((b.precisions[1] - 50.0).abs() < 1e-12);
        assert!((b.precisions[2] - 20.0).abs() < 1e-12);
        assert_eq!(b.precisions[3], 0.0);
        assert_eq!(b.brevity_penalty, 1.0);
        // exp smoothing: p4 = 1/(2·4)
        let s = corpus_bleu(&h, &r, Smoothing::Exp);
        let want = 100.0 * (0.25 * ((5.0f64 / 7.0).ln() + 0.5f64.ln() + 0.2f64.ln() + (1.0f64 / 8.0).ln())).exp();
        assert!((s.score - want).abs() < 1e-9, "{} vs {want}", s.score);
    }

    #[test]
    fn bleu_brevity_penalty_and_corpus_pooling() {
        // A short but perfect hypothesis: all precisions 1, BP = exp(1 − 8/6).
        let h = vec![toks("a b c d e f")];
        let r = vec![toks("a b c d e f g h")];
        let b = corpus_bleu(&h, &r, Smoothing::None);
        assert!((b.brevity_penalty - (1.0f64 - 8.0 / 6.0).exp()).abs() < 1e-15);
        assert!((b.score - 100.0 * b.brevity_penalty).abs() < 1e-9);
        // Pooling: statistics are summed before the geometric mean, so a sentence with no
        // 4-gram match does not zero the corpus.
        let h2 = vec![toks("a b c d e f"), toks("x y")];
        let r2 = vec![toks("a b c d e f"), toks("x z")];
        let b2 = corpus_bleu(&h2, &r2, Smoothing::None);
        // 1-grams 7/8, 2-grams 5/6, 3-grams 4/4, 4-grams 3/3; c = r = 8
        let want = 100.0 * (0.25 * ((7.0f64 / 8.0).ln() + (5.0f64 / 6.0).ln())).exp();
        assert!((b2.score - want).abs() < 1e-9, "{} vs {want}", b2.score);
    }

    #[test]
    fn bleu_of_nothing_is_zero() {
        let e: Vec<Vec<&str>> = vec![];
        assert_eq!(corpus_bleu(&e, &e, Smoothing::Exp).score, 0.0);
        assert_eq!(corpus_bleu(&[vec![]], &[toks("a")], Smoothing::Exp).score, 0.0);
    }

    #[test]
    fn edit_distance_and_error_rates() {
        assert_eq!(edit_distance(&toks("kitten"), &toks("sitting")), 1);
        assert_eq!(edit_distance(&"kitten".chars().collect::<Vec<_>>(), &"sitting".chars().collect::<Vec<_>>()), 3);
        assert_eq!(edit_distance::<u8>(&[], &[1, 2]), 2);
        let h = vec![toks("K AE T"), toks("D AO G")];
        let r = vec![toks("K AE T"), toks("D AA G Z")];
        assert!((token_error_rate(&h, &r) - 2.0 / 7.0).abs() < 1e-15);
        assert_eq!(sequence_error_rate(&h, &r), 0.5);
    }

    #[test]
    fn topk_counts_ranks_with_ties_and_masks() {
        let logits = [0.1, 0.5, 0.5, 0.2, /* row 2 */ 3.0, 2.0, 1.0, 0.0];
        // row 0 target 2: beaten by index 1 (tie, lower index) → rank 1
        assert_eq!(topk_hits(&logits, 4, &[2, 0], &[true, true], 1), (1, 2));
        assert_eq!(topk_hits(&logits, 4, &[2, 0], &[true, true], 2), (2, 2));
        assert_eq!(topk_hits(&logits, 4, &[2, 3], &[true, false], 2), (1, 1));
        assert!((perplexity(2.0f64.ln() * 3.0, 3) - 2.0).abs() < 1e-12);
    }
}
