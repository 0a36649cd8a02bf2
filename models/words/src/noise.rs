//! The negative-sampling noise distribution `P_n(w) ∝ count(w)^p`.
//!
//! word2vec and gensim use `p = 3/4`, the value of Mikolov et al., *Distributed
//! Representations of Words and Phrases and their Compositionality*; White et al., *Neural
//! Representations of Natural Language* print `2/3` (their eq. 3.58). `p` is a parameter here,
//! default `0.75`.
//!
//! Sampling uses Walker's alias method: one uniform index and one comparison per draw, exact
//! probabilities (word2vec's C code uses a 10⁸-entry table of ids instead, whose resolution
//! limits rare words; gensim bisects a cumulative table).

use chi_autodiff::Rng;

/// An alias table over the vocabulary.
#[derive(Clone, Debug)]
pub struct NoiseTable {
    /// Acceptance threshold of each bucket, scaled to `u32`.
    accept: Vec<u32>,
    /// The other word of each bucket.
    alias: Vec<u32>,
    /// The exact probabilities the table samples from.
    probs: Vec<f64>,
}

impl NoiseTable {
    /// The table for `count^power` (an empty or all-zero `counts` gives a table that always
    /// returns 0).
    pub fn new(counts: &[u64], power: f64) -> NoiseTable {
        let n = counts.len().max(1);
        let w: Vec<f64> = counts.iter().map(|&c| (c as f64).powf(power)).collect();
        let total: f64 = w.iter().sum();
        let probs: Vec<f64> = if total > 0.0 { w.iter().map(|x| x / total).collect() } else { vec![1.0 / n as f64; n] };
        // Vose's construction: scaled probabilities, split into small (< 1) and large buckets.
        let mut scaled: Vec<f64> = probs.iter().map(|p| p * n as f64).collect();
        let mut accept = vec![u32::MAX; n];
        let mut alias: Vec<u32> = (0..n as u32).collect();
        let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| scaled[i] < 1.0);
        while let (Some(s), Some(&l)) = (small.pop(), large.last()) {
            accept[s] = (scaled[s] * 4_294_967_296.0).min(u32::MAX as f64) as u32;
            alias[s] = l as u32;
            scaled[l] -= 1.0 - scaled[s];
            if scaled[l] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        NoiseTable { accept, alias, probs }
    }

    /// The probabilities being sampled.
    pub fn probabilities(&self) -> &[f64] {
        &self.probs
    }

    /// One draw.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u32 {
        let r = rng.next_u64();
        let i = (((r >> 32) * self.accept.len() as u64) >> 32) as usize;
        if (r as u32) < self.accept[i] || self.accept[i] == u32::MAX {
            i as u32
        } else {
            self.alias[i]
        }
    }
}
