//! Decoding: greedy (a batch at a time) and beam search (one source at a time, the beam as the
//! batch). Both run without recording a graph.

use crate::error::Seq2SeqError;
use crate::model::Seq2Seq;
use crate::vocab::{Padded, BOS, EOS};
use chi_autodiff::{no_grad, Float};

/// One step of a partial output in beam search: the link it extends, the token it adds, and
/// where its attention row is (`step`'s weights, row `row`: the output it extends).
struct Link {
    parent: Option<usize>,
    token: usize,
    step: usize,
    row: usize,
}

/// One decoded output.
#[derive(Clone, Debug, PartialEq)]
pub struct Hypothesis {
    /// Target ids, without `BOS` and `EOS`.
    pub ids: Vec<usize>,
    /// Sum of the token log-probabilities (`EOS` included when it was produced).
    pub log_prob: f64,
    /// The ranking score: `log_prob / len^α` with `len` the number of scored tokens.
    pub score: f64,
    /// Whether it ended with `EOS` (rather than at the length limit).
    pub finished: bool,
    /// Attention weights over the source, one row per produced token.
    pub attention: Vec<Vec<f64>>,
}

/// Greedy decoding of a padded source batch: at each step the most probable token (the lowest
/// id among equals), until every row has produced `EOS` or `max_len` tokens.
pub fn greedy<T: Float>(model: &Seq2Seq<T>, src: &Padded, max_len: usize) -> Result<Vec<Hypothesis>, Seq2SeqError> {
    no_grad(|| {
        let (mem, mut state) = model.encode(src)?;
        let b = src.batch();
        let s = src.max_len;
        let mut out: Vec<Hypothesis> = (0..b).map(|_| Hypothesis { ids: vec![], log_prob: 0.0, score: 0.0, finished: false, attention: vec![] }).collect();
        let mut prev = vec![BOS; b];
        for _ in 0..max_len {
            if out.iter().all(|h| h.finished) {
                break;
            }
            let st = model.step(&mem, &state, &prev);
            let lp = st.logits.log_softmax(1);
            let (lp, w) = (lp.data(), st.weights.data());
            let v = model.config.tgt_vocab;
            // The first maximum of the log-probabilities (not of the logits), so that ties are
            // broken exactly as beam search breaks them.
            let best: Vec<usize> = (0..b)
                .map(|r| {
                    let row = &lp[r * v..(r + 1) * v];
                    (1..v).fold(0, |m, j| if row[j] > row[m] { j } else { m })
                })
                .collect();
            for (r, h) in out.iter_mut().enumerate() {
                if h.finished {
                    continue;
                }
                h.log_prob += lp[r * v + best[r]].to_f64();
                h.attention.push(w[r * s..(r + 1) * s].iter().map(|x| x.to_f64()).collect());
                if best[r] == EOS {
                    h.finished = true;
                } else {
                    h.ids.push(best[r]);
                }
            }
            prev = best;
            state = st.state;
        }
        for h in &mut out {
            h.score = h.log_prob;
        }
        Ok(out)
    })
}

/// Beam search for one source sentence `src` (ids, ending with `EOS` as the training data
/// does): keeps the `width` best partial outputs by summed log-probability; an output that
/// produces `EOS` is set aside as finished; the search stops when `width` outputs are finished
/// or after `max_len` steps (the partial outputs alive then are returned unfinished). Outputs
/// are ranked by `log_prob / len^alpha` (`alpha = 0`: no length normalisation; Wu et al. use a
/// related penalty with α ≈ 0.6–0.7), best first. Among equal scores the earlier beam and the
/// lower token id win, so width 1 is exactly [`greedy`].
pub fn beam_search<T: Float>(model: &Seq2Seq<T>, src: &[usize], width: usize, max_len: usize, alpha: f64) -> Result<Vec<Hypothesis>, Seq2SeqError> {
    if width == 0 {
        return Err(Seq2SeqError::Config("beam width must be ≥ 1".into()));
    }
    if !alpha.is_finite() || alpha < 0.0 {
        return Err(Seq2SeqError::Config(format!("length-normalisation alpha must be finite and ≥ 0, got {alpha}")));
    }
    no_grad(|| {
        let padded = Padded::new(&[src.to_vec()]);
        let (mem1, state1) = model.encode(&padded)?;
        let s = padded.max_len;
        let v = model.config.tgt_vocab;
        // Partial outputs are kept as back-pointers into `trail` (a parent, a token, the step's
        // attention row), not as copies of their whole history: copying every kept output's
        // tokens and attention rows at every step costs steps² · width · source length.
        let mut trail: Vec<Link> = Vec::new();
        let mut weights: Vec<Vec<T>> = Vec::new();
        // (log-probability, last link) of each alive output, best first.
        let mut alive: Vec<(f64, Option<usize>)> = vec![(0.0, None)];
        let mut state = state1;
        let mut finished: Vec<(f64, usize)> = Vec::new();
        for step in 0..max_len {
            let n = alive.len();
            let mem = mem1.select(&vec![0; n]);
            let prev: Vec<usize> = alive.iter().map(|&(_, l)| l.map_or(BOS, |l| trail[l].token)).collect();
            let st = model.step(&mem, &state, &prev);
            let lp = st.logits.log_softmax(1);
            let lp = lp.data();
            weights.push(st.weights.data().to_vec());
            // Candidates (score, beam, token), best first; ties to the lower beam, then token.
            let mut cand: Vec<(f64, usize, usize)> = (0..n).flat_map(|i| (0..v).map(move |tok| (i, tok))).map(|(i, tok)| (alive[i].0 + lp[i * v + tok].to_f64(), i, tok)).collect();
            let keep = width - finished.len();
            let cmp = |a: &(f64, usize, usize), b: &(f64, usize, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2));
            if cand.len() > keep {
                cand.select_nth_unstable_by(keep - 1, cmp);
                cand.truncate(keep);
            }
            cand.sort_by(cmp);
            let mut next = Vec::new();
            let mut rows = Vec::new();
            for (score, i, tok) in cand {
                trail.push(Link { parent: alive[i].1, token: tok, step, row: i });
                let link = trail.len() - 1;
                if tok == EOS {
                    finished.push((score, link));
                } else {
                    next.push((score, Some(link)));
                    rows.push(i);
                }
            }
            if finished.len() >= width || next.is_empty() {
                alive = next;
                break;
            }
            state = st.state.select(&rows);
            alive = next;
        }
        // Histories are read back from the links only for the outputs returned.
        let history = |last: Option<usize>, done: bool| {
            let (mut ids, mut attention) = (Vec::new(), Vec::new());
            let mut at = last;
            while let Some(l) = at {
                let k = &trail[l];
                attention.push(weights[k.step][k.row * s..(k.row + 1) * s].iter().map(|x| x.to_f64()).collect());
                if !(done && Some(l) == last) {
                    ids.push(k.token);
                }
                at = k.parent;
            }
            ids.reverse();
            attention.reverse();
            Hypothesis { ids, log_prob: 0.0, score: 0.0, finished: done, attention }
        };
        let finished: Vec<Hypothesis> = finished.into_iter().map(|(lp, l)| Hypothesis { log_prob: lp, ..history(Some(l), true) }).collect();
        let alive: Vec<Hypothesis> = alive.into_iter().map(|(lp, l)| Hypothesis { log_prob: lp, ..history(l, false) }).collect();
        let mut all: Vec<Hypothesis> = finished.into_iter().chain(alive).collect();
        for h in &mut all {
            let len = h.ids.len() + usize::from(h.finished);
            h.score = if alpha == 0.0 || len == 0 { h.log_prob } else { h.log_prob / (len as f64).powf(alpha) };
        }
        all.sort_by(|a, b| b.score.total_cmp(&a.score));
        all.truncate(width);
        Ok(all)
    })
}
