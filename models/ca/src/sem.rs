//! CA-SEM ([CAML](crate#references) §3.1, Alg. 1): sentence re-embedding by closed-form block-coordinate
//! energy minimisation — no backprop.
//!
//! Given pre-trained word vectors `w` and occurrence counts `n_w`, minimise (Eq. 17)
//!
//! ```text
//! E = Σ_w n_w ‖w − χ̃(w) v0 − (1 − χ̃(w)) w'‖²   s.t. v0 ⟂ w', χ̃(w) ∈ [0, 1]
//! ```
//!
//! Alg. 1, each step in closed form:
//! * **init**: `v0` = first principal component of all word occurrences (weighted by `n_w`).
//!   The paper gives a direction only; chi uses the *uncentred* component (like SIF's
//!   `TruncatedSVD`), oriented so the weighted mean projection `m = Σ n_w⟨w,u⟩/Σ n_w` is
//!   positive, and scaled to length `m`.
//! * **step 1a** (`w'`): `w' = (I − v0v0ᵀ/‖v0‖²) w` (the paper's projection; it enforces the
//!   constraint but is not the unconstrained minimiser over `w'`).
//! * **step 1b** (`χ̃`): the point of the segment `[w', v0]` closest to `w` (Fig. 1):
//!   `χ̃ = clamp(⟨w − w', v0 − w'⟩ / ‖v0 − w'‖², 0, 1)`.
//! * **step 2** (`v0`): linear least squares with `w'`, `χ̃` fixed:
//!   `v0 = Σ n_w χ̃ (w − (1 − χ̃) w') / Σ n_w χ̃²`.
//! * **step 3**: stop when the energy no longer drops (or after `max_iter`); the last state
//!   that lowered the energy is kept.
//!
//! Steps 1b and 2 are exact minimisers of their blocks (tested against brute force), so they can
//! only lower the energy; step 1a is a projection, so an iteration as a whole can raise it — that
//! is what the stopping rule of step 3 guards against. [`CaSem::energy`] records every accepted
//! iterate.
//!
//! Two places where the paper's text and its energy disagree, and which one chi follows:
//! * **Fig. 1's caption** describes χ̃ through the ratio `|v0 − o| / |w′ − v0|` of the
//!   construction; under Eq. 17 that ratio equals `1 − χ̃`, not `χ̃`. chi follows the energy
//!   (Eq. 17): step 1b is the projection onto the segment that minimises it
//!   (`models/ca/tests/suite/ca_formulas.rs` checks the step against the energy and the figure).
//! * **step 2** solves for `v0` without the constraint `v0 ⟂ w′`; the next step 1a restores it
//!   by re-projecting `w′`. So between step 2 and the next step 1a the state is not feasible; every
//!   state that [`CaSem::fit`] accepts (and reports an energy for) is taken after step 1b, and is.
//!
//! Sentence embedding (Eq. 18): `s = v0 Σ χ̃(w) + Σ (1 − χ̃(w)) w'`, OOV words embed as `v0` with
//! χ̃ = 1. Baselines: [`average`] and [`sif`] (Arora et al. 2017: weights `a/(a + p(w))`, then the
//! first principal component of the sentence set is removed).

use chi_autodiff::{Float, Tensor};

/// When Alg. 1 stops, besides [`CaSemOptions::max_iter`] and an energy that no longer drops by
/// more than [`CaSemOptions::tol`] (step 3, always applied).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum StopRule {
    /// Step 3 only: stop when the energy no longer drops (the paper's rule).
    #[default]
    EnergyIncrease,
    /// Also stop when an iteration lowers the energy by less than this fraction of the previous
    /// energy, `(E_{k−1} − E_k) / E_{k−1} < rtol` (that iteration is not accepted).
    RelativeEnergy(f64),
    /// Also stop before `‖v0‖` exceeds this bound (the iteration that would cross it is not
    /// accepted): `v0` grows without limit on small vocabularies while χ̃ shrinks, see
    /// [`CaSem::trace`].
    MaxV0Norm(f64),
}

/// Options of Alg. 1.
#[derive(Clone, Debug)]
pub struct CaSemOptions {
    /// Maximum iterations.
    pub max_iter: usize,
    /// Minimum energy decrease to continue.
    pub tol: f64,
    /// An additional stopping rule.
    pub stop: StopRule,
}

impl Default for CaSemOptions {
    fn default() -> Self {
        CaSemOptions { max_iter: 100, tol: 0.0, stop: StopRule::EnergyIncrease }
    }
}

/// The state of Alg. 1 after one accepted iteration (or the initial state).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IterStats {
    /// Energy (Eq. 17).
    pub energy: f64,
    /// `‖v0‖`.
    pub v0_norm: f64,
    /// Count-weighted mean χ̃ over the vocabulary, `Σ n_w χ̃(w) / Σ n_w`.
    pub mean_chi: f64,
}

/// A fitted CA-SEM model.
#[derive(Clone, Debug)]
pub struct CaSem {
    /// The global context vector.
    pub v0: Vec<f64>,
    /// χ̃ per vocabulary word.
    pub chi: Vec<f64>,
    /// `w'` per vocabulary word.
    pub w_prime: Vec<Vec<f64>>,
    /// Energy (Eq. 17) of the initial state and of every accepted iteration (non-increasing).
    pub energy: Vec<f64>,
    /// Energy, `‖v0‖` and mean χ̃ of the initial state and of every accepted iteration.
    pub trace: Vec<IterStats>,
    /// Why the iteration stopped.
    pub stopped: &'static str,
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Cosine similarity (0 if either vector is 0).
pub fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let d = (dot(a, a) * dot(b, b)).sqrt();
    if d == 0.0 {
        0.0
    } else {
        dot(a, b) / d
    }
}

/// Uncentred first principal component (unit length) of `points` weighted by `weights`, by power
/// iteration on `Σ wᵢ pᵢpᵢᵀ`.
pub fn first_pc(points: &[Vec<f64>], weights: &[f64]) -> Vec<f64> {
    let d = points[0].len();
    let mut m = vec![0.0; d * d];
    for (p, &w) in points.iter().zip(weights) {
        for i in 0..d {
            for j in 0..d {
                m[i * d + j] += w * p[i] * p[j];
            }
        }
    }
    let mut u: Vec<f64> = (0..d).map(|i| 1.0 + 0.01 * i as f64).collect();
    for _ in 0..500 {
        let mut nu = vec![0.0; d];
        for i in 0..d {
            nu[i] = dot(&m[i * d..(i + 1) * d], &u);
        }
        let n = dot(&nu, &nu).sqrt();
        if n == 0.0 {
            break;
        }
        nu.iter_mut().for_each(|v| *v /= n);
        u = nu;
    }
    u
}

impl CaSem {
    /// Init: `v0` = weighted first principal component, oriented and scaled by the mean projection.
    pub fn init_v0(words: &[Vec<f64>], counts: &[f64]) -> Vec<f64> {
        let u = first_pc(words, counts);
        let total: f64 = counts.iter().sum();
        let m: f64 = words.iter().zip(counts).map(|(w, &n)| n * dot(w, &u)).sum::<f64>() / total.max(1e-300);
        let (s, m) = if m < 0.0 { (-1.0, -m) } else { (1.0, m) };
        u.iter().map(|x| s * x * m.max(1e-12)).collect()
    }
    /// Step 1a: `w' = (I − v0v0ᵀ/‖v0‖²) w`.
    pub fn solve_w_prime(v0: &[f64], w: &[f64]) -> Vec<f64> {
        Self::w_prime_given_norm(v0, dot(v0, v0).max(1e-300), w)
    }
    /// [`CaSem::solve_w_prime`] with `‖v0‖²` (floored at 1e-300) computed once by the caller,
    /// which Step 1 shares between all words.
    fn w_prime_given_norm(v0: &[f64], vv: f64, w: &[f64]) -> Vec<f64> {
        let k = dot(v0, w) / vv;
        w.iter().zip(v0).map(|(a, b)| a - k * b).collect()
    }
    /// Step 1b: the optimal `χ̃ ∈ [0, 1]` for fixed `w'`, `v0` (closest point of the segment):
    /// `χ̃ = ⟨w − w', v0 − w'⟩ / ‖v0 − w'‖²`, clamped.
    pub fn solve_chi(w: &[f64], w_prime: &[f64], v0: &[f64]) -> f64 {
        // Both sums in one pass, without the difference vectors; each accumulates its terms in
        // index order from −0.0, as `Iterator::sum` does, so the result is the same to the bit.
        let (mut rd, mut dd) = (-0.0, -0.0);
        for ((&a, &p), &x) in v0.iter().zip(w_prime).zip(w) {
            let (d, r) = (a - p, x - p);
            rd += r * d;
            dd += d * d;
        }
        if dd == 0.0 {
            return 0.0;
        }
        (rd / dd).clamp(0.0, 1.0)
    }
    /// Step 2: least-squares `v0` for fixed `w'`, `χ̃` (unchanged `prev` if every χ̃ is 0).
    ///
    /// # Panics
    /// If a word has no count, χ̃ or `w'`, or a word or its `w'` is shorter than the first word.
    pub fn solve_v0(words: &[Vec<f64>], counts: &[f64], chi: &[f64], w_prime: &[Vec<f64>], prev: &[f64]) -> Vec<f64> {
        let d = words[0].len();
        assert!(counts.len() >= words.len() && chi.len() >= words.len() && w_prime.len() >= words.len(), "CaSem::solve_v0: need a count, a χ̃ and a w' per word");
        let mut num = vec![0.0; d];
        let mut den = 0.0;
        for (((w, p), &n), &c) in words.iter().zip(w_prime).zip(counts).zip(chi) {
            assert!(w.len() >= d && p.len() >= d, "CaSem::solve_v0: every word and w' needs {d} components");
            den += n * c * c;
            // Iterators instead of indexing, so the loop over components vectorises (each
            // component's sum still runs over the words in order).
            for ((acc, &x), &y) in num.iter_mut().zip(w).zip(p) {
                *acc += n * c * (x - (1.0 - c) * y);
            }
        }
        if den <= 0.0 {
            return prev.to_vec();
        }
        num.iter().map(|v| v / den).collect()
    }
    /// Eq. 17.
    ///
    /// # Panics
    /// If a word has no count, χ̃ or `w'`, or a word or its `w'` is shorter than `v0`.
    pub fn energy_of(words: &[Vec<f64>], counts: &[f64], chi: &[f64], w_prime: &[Vec<f64>], v0: &[f64]) -> f64 {
        assert!(counts.len() >= words.len() && chi.len() >= words.len() && w_prime.len() >= words.len(), "CaSem::energy_of: need a count, a χ̃ and a w' per word");
        let mut e = 0.0;
        for (((w, p), &n), &c) in words.iter().zip(w_prime).zip(counts).zip(chi) {
            assert!(w.len() >= v0.len() && p.len() >= v0.len(), "CaSem::energy_of: every word and w' needs {} components", v0.len());
            for ((&x, &y), &v) in w.iter().zip(p).zip(v0) {
                let r = x - c * v - (1.0 - c) * y;
                e += n * r * r;
            }
        }
        e
    }
    /// Eq. 17 as a differentiable chi expression in `v0` (`[d]`), for checking the closed-form
    /// steps against chi's autodiff: `words`, `w_prime` `[V, d]`, `chi`, `counts` `[V]`.
    pub fn energy_tensor<T: Float>(words: &Tensor<T>, counts: &Tensor<T>, chi: &Tensor<T>, w_prime: &Tensor<T>, v0: &Tensor<T>) -> Tensor<T> {
        let c = chi.unsqueeze(1);
        let r = words.sub(&c.mul(v0)).sub(&c.rsub_scalar(1.0).mul(w_prime));
        r.square().sum_axis(1, false).mul(counts).sum()
    }
    /// Step 1 (1a then 1b) for every word.
    pub fn solve_step1(words: &[Vec<f64>], v0: &[f64]) -> (Vec<Vec<f64>>, Vec<f64>) {
        let vv = dot(v0, v0).max(1e-300);
        let wp: Vec<Vec<f64>> = words.iter().map(|w| Self::w_prime_given_norm(v0, vv, w)).collect();
        let chi = words.iter().zip(&wp).map(|(w, p)| Self::solve_chi(w, p, v0)).collect();
        (wp, chi)
    }
    /// Runs Alg. 1 on a vocabulary of word vectors with occurrence counts.
    pub fn fit(words: &[Vec<f64>], counts: &[f64], opts: &CaSemOptions) -> CaSem {
        assert!(!words.is_empty() && words.len() == counts.len(), "CaSem::fit: need one count per word");
        let total: f64 = counts.iter().sum::<f64>().max(1e-300);
        let stats = |e: f64, v0: &[f64], chi: &[f64]| IterStats { energy: e, v0_norm: dot(v0, v0).sqrt(), mean_chi: chi.iter().zip(counts).map(|(c, n)| c * n).sum::<f64>() / total };
        let mut v0 = Self::init_v0(words, counts);
        let (mut wp, mut chi) = Self::solve_step1(words, &v0);
        let e0 = Self::energy_of(words, counts, &chi, &wp, &v0);
        let mut energy = vec![e0];
        let mut trace = vec![stats(e0, &v0, &chi)];
        let mut stopped = "max_iter reached";
        for _ in 0..opts.max_iter {
            let nv0 = Self::solve_v0(words, counts, &chi, &wp, &v0);
            let (nwp, nchi) = Self::solve_step1(words, &nv0);
            let e = Self::energy_of(words, counts, &nchi, &nwp, &nv0);
            let prev = *energy.last().unwrap();
            if !(e < prev - opts.tol) {
                stopped = "energy no longer decreases";
                break;
            }
            match opts.stop {
                StopRule::EnergyIncrease => {}
                StopRule::RelativeEnergy(rtol) => {
                    if (prev - e) / prev.abs().max(1e-300) < rtol {
                        stopped = "relative energy decrease below tolerance";
                        break;
                    }
                }
                StopRule::MaxV0Norm(max) => {
                    if dot(&nv0, &nv0).sqrt() > max {
                        stopped = "‖v0‖ would exceed its bound";
                        break;
                    }
                }
            }
            (v0, wp, chi) = (nv0, nwp, nchi);
            energy.push(e);
            trace.push(stats(e, &v0, &chi));
        }
        CaSem { v0, chi, w_prime: wp, energy, trace, stopped }
    }
    /// Embeds a word not seen during fitting (closed form from `v0`, Step 1).
    pub fn embed_new(&self, w: &[f64]) -> (Vec<f64>, f64) {
        let wp = Self::solve_w_prime(&self.v0, w);
        let c = Self::solve_chi(w, &wp, &self.v0);
        (wp, c)
    }
    /// Eq. 18: sentence of vocabulary ids (`None` = OOV → `v0` with χ̃ = 1).
    pub fn sentence(&self, ids: &[Option<usize>]) -> Vec<f64> {
        let d = self.v0.len();
        let mut s = vec![0.0; d];
        let mut sum_chi = 0.0;
        for id in ids {
            match id {
                Some(i) => {
                    let c = self.chi[*i];
                    sum_chi += c;
                    for k in 0..d {
                        s[k] += (1.0 - c) * self.w_prime[*i][k];
                    }
                }
                None => sum_chi += 1.0,
            }
        }
        for k in 0..d {
            s[k] += sum_chi * self.v0[k];
        }
        s
    }
}

/// Averaging baseline: mean of the in-vocabulary word vectors (OOV skipped).
pub fn average(words: &[Vec<f64>], ids: &[Option<usize>]) -> Vec<f64> {
    let d = words[0].len();
    let mut s = vec![0.0; d];
    let mut n = 0.0;
    for i in ids.iter().flatten() {
        n += 1.0;
        s.iter_mut().zip(&words[*i]).for_each(|(a, b)| *a += b);
    }
    if n > 0.0 {
        s.iter_mut().for_each(|a| *a /= n);
    }
    s
}

/// SIF (Arora et al. 2017): `v_s = Σ a/(a + p(w)) w / |s|`, then each `v_s` minus its
/// projection on the first principal component of all `v_s`. `probs[i]` = unigram probability.
pub fn sif(words: &[Vec<f64>], probs: &[f64], sentences: &[Vec<Option<usize>>], a: f64) -> Vec<Vec<f64>> {
    let d = words[0].len();
    let vs: Vec<Vec<f64>> = sentences
        .iter()
        .map(|ids| {
            let mut s = vec![0.0; d];
            let n = ids.iter().flatten().count().max(1) as f64;
            for i in ids.iter().flatten() {
                let wgt = a / (a + probs[*i]);
                s.iter_mut().zip(&words[*i]).for_each(|(x, y)| *x += wgt * y / n);
            }
            s
        })
        .collect();
    let u = first_pc(&vs, &vec![1.0; vs.len()]);
    vs.into_iter()
        .map(|v| {
            let k = dot(&v, &u);
            v.iter().zip(&u).map(|(x, y)| x - k * y).collect()
        })
        .collect()
}

/// One piece of a segmented sentence: tokens `start..end`, and the dictionary entry they form
/// (`None`: a single out-of-vocabulary token).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// First token.
    pub start: usize,
    /// One past the last token.
    pub end: usize,
    /// Dictionary id of the phrase, or `None` for an OOV token.
    pub id: Option<usize>,
}

/// §4.1.1's segmentation of a sentence into dictionary phrases: "the segmentation with least
/// number of phrases and OOV tokens", by dynamic programming over prefixes. `lookup(span)` gives
/// the dictionary id of a span of 1 to `max_len` tokens (`None` if it is not an entry); a token
/// that starts no entry is one OOV piece. The cost of a segmentation is its number of pieces
/// (phrases + OOV tokens); among segmentations of least cost the one with fewest OOV tokens is
/// chosen (the paper is silent on ties; preferring known words keeps more of the sentence in the
/// embedding), and among those the first found scanning span ends left to right and shorter last
/// pieces first. `O(n · max_len)` lookups.
pub fn segment<'a>(tokens: &[&'a str], max_len: usize, lookup: impl Fn(&[&'a str]) -> Option<usize>) -> Vec<Segment> {
    let n = tokens.len();
    let max_len = max_len.max(1);
    // best[i] = (pieces, oov) of the best segmentation of tokens[..i]; back[i] its last piece.
    let mut best: Vec<(usize, usize)> = vec![(usize::MAX, usize::MAX); n + 1];
    let mut back: Vec<Option<Segment>> = vec![None; n + 1];
    best[0] = (0, 0);
    for end in 1..=n {
        for len in 1..=max_len.min(end) {
            let start = end - len;
            let (p, o) = best[start];
            if p == usize::MAX {
                continue;
            }
            let piece = match lookup(&tokens[start..end]) {
                Some(id) => Some((Segment { start, end, id: Some(id) }, (p + 1, o))),
                None if len == 1 => Some((Segment { start, end, id: None }, (p + 1, o + 1))),
                None => None,
            };
            if let Some((seg, cost)) = piece {
                if cost < best[end] {
                    best[end] = cost;
                    back[end] = Some(seg);
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut i = n;
    while i > 0 {
        let seg = back[i].expect("every prefix has a segmentation: a single token is always a piece");
        out.push(seg);
        i = seg.start;
    }
    out.reverse();
    out
}

/// `(pieces, OOV tokens)` of a segmentation, the quantity [`segment`] minimises.
pub fn segmentation_cost(segs: &[Segment]) -> (usize, usize) {
    (segs.len(), segs.iter().filter(|s| s.id.is_none()).count())
}

#[cfg(test)]
mod segment_tests {
    use super::*;
    use std::collections::HashMap;

    /// Every segmentation of `tokens` into valid pieces (2^(n−1) splits), its least cost.
    fn brute_force(tokens: &[&str], max_len: usize, dict: &HashMap<String, usize>) -> (usize, usize) {
        let n = tokens.len();
        let mut best = (usize::MAX, usize::MAX);
        for mask in 0u32..(1 << (n - 1)) {
            let mut cuts = vec![0];
            cuts.extend((1..n).filter(|i| mask & (1 << (i - 1)) != 0));
            cuts.push(n);
            let mut cost = (0, 0);
            let mut ok = true;
            for w in cuts.windows(2) {
                let span = &tokens[w[0]..w[1]];
                if span.len() <= max_len && dict.contains_key(&span.join(" ")) {
                    cost.0 += 1;
                } else if span.len() == 1 {
                    cost = (cost.0 + 1, cost.1 + 1);
                } else {
                    ok = false;
                }
            }
            if ok && cost < best {
                best = cost;
            }
        }
        best
    }

    #[test]
    fn the_papers_example_prefers_the_phrase() {
        let dict: HashMap<String, usize> = [("united", 0), ("states", 1), ("united state", 2), ("united states", 3)].iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let look = |s: &[&str]| dict.get(&s.join(" ")).copied();
        assert_eq!(segment(&["united", "state"], 3, look), vec![Segment { start: 0, end: 2, id: Some(2) }]);
        let segs = segment(&["the", "united", "states", "of"], 3, look);
        assert_eq!(segs.iter().map(|s| s.id).collect::<Vec<_>>(), vec![None, Some(3), None]);
        assert_eq!(segmentation_cost(&segs), (3, 2));
        assert!(segment(&[], 3, look).is_empty());
    }

    #[test]
    fn dynamic_program_matches_brute_force_on_random_small_cases() {
        let alphabet = ["a", "b", "c", "d"];
        let mut state = 12345u64;
        let mut next = |m: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % m
        };
        for _ in 0..400 {
            // A random dictionary of phrases of 1–3 letters, and a random sentence of 1–9 tokens.
            let mut dict = HashMap::new();
            for _ in 0..next(12) {
                let len = 1 + next(3) as usize;
                let p: Vec<&str> = (0..len).map(|_| alphabet[next(4) as usize]).collect();
                let id = dict.len();
                dict.entry(p.join(" ")).or_insert(id);
            }
            let n = 1 + next(9) as usize;
            let toks: Vec<&str> = (0..n).map(|_| alphabet[next(4) as usize]).collect();
            let max_len = 1 + next(3) as usize;
            let segs = segment(&toks, max_len, |s| dict.get(&s.join(" ")).copied());
            // A valid segmentation: contiguous, covering, phrases are entries, OOV pieces single.
            assert_eq!(segs.first().map(|s| s.start), Some(0));
            assert_eq!(segs.last().map(|s| s.end), Some(n));
            for w in segs.windows(2) {
                assert_eq!(w[0].end, w[1].start);
            }
            for s in &segs {
                match s.id {
                    Some(id) => assert_eq!(dict.get(&toks[s.start..s.end].join(" ")), Some(&id)),
                    None => assert_eq!(s.end - s.start, 1),
                }
                assert!(s.end - s.start <= max_len);
            }
            assert_eq!(segmentation_cost(&segs), brute_force(&toks, max_len, &dict), "{toks:?} {dict:?} max_len {max_len}");
        }
    }
}
