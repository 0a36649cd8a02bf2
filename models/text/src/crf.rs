//! Linear-chain conditional random field (Lafferty et al. 2001; the BiLSTM-CRF of Huang et al.
//! 2015 and Lample et al. 2016).
//!
//! A tag sequence `y = y_0 … y_{L−1}` of a sentence of length `L` scores
//!
//! ```text
//! s(y) = start[y_0] + Σ_{t<L} E[t, y_t] + Σ_{1≤t<L} A[y_{t−1}, y_t] + end[y_{L−1}]
//! p(y) = exp(s(y)) / Z,      log Z = logsumexp over all K^L sequences of s(y)
//! ```
//!
//! with emission scores `E [B, T, K]` from any encoder (padded to `T`, one length per row) and
//! transition scores `A [K, K]`, `start [K]`, `end [K]`. The forward algorithm computes `log Z`
//! in `O(L·K²)`:
//!
//! ```text
//! α_0 = start + E[0]
//! α_t[j] = logsumexp_i(α_{t−1}[i] + A[i, j]) + E[t, j]
//! log Z = logsumexp_j(α_{L−1}[j] + end[j])
//! ```
//!
//! and the backward algorithm `β_{L−1} = end`, `β_t[i] = logsumexp_j(A[i, j] + E[t+1, j] +
//! β_{t+1}[j])`. Their product gives the marginals, which are the gradient of `log Z`:
//! `∂ log Z/∂E[t, k] = p(y_t = k)`, `∂ log Z/∂A[i, j] = Σ_t p(y_{t−1} = i, y_t = j)`.
//!
//! Two implementations of `log Z` with the same values and gradients:
//! * [`log_partition_composed`]: the recursion in tensor ops, differentiated by the tape (the
//!   reference);
//! * [`log_partition`]: one fused op ([`chi_autodiff::CustomOp`]) whose forward is a plain loop
//!   and whose backward *is* forward–backward (the marginals times the incoming gradient). Under
//!   `create_graph` the backward is written in tensor ops, so second derivatives are exact too.
//!
//! Positions past a row's length take no part in anything and get exactly zero gradient.

use crate::deps::{init, Param, ParamStore};
use crate::error::{Result, TextError};
use chi_autodiff::{is_grad_enabled, CustomOp, Float, Rng, Tensor};
use std::rc::Rc;

/// The score tensors of a linear-chain CRF over `K` tags.
#[derive(Clone, Debug)]
pub struct CrfScores<T: Float> {
    /// `E [B, T, K]`: score of tag `k` at position `t` of row `b`.
    pub emissions: Tensor<T>,
    /// `A [K, K]`: score of moving from tag `i` to tag `j`.
    pub transitions: Tensor<T>,
    /// `[K]`: score of starting in each tag.
    pub start: Tensor<T>,
    /// `[K]`: score of ending in each tag.
    pub end: Tensor<T>,
}

impl<T: Float> CrfScores<T> {
    /// Checks the shapes and lengths; returns `(B, T, K)`.
    pub fn check(&self, op: &'static str, lengths: &[usize]) -> Result<(usize, usize, usize)> {
        let e = self.emissions.shape();
        if e.len() != 3 || e[2] == 0 {
            return Err(TextError::Invalid { op, msg: format!("emission scores must be [batch, time, tags], got {e:?}") });
        }
        let (b, t, k) = (e[0], e[1], e[2]);
        if self.transitions.shape() != [k, k] {
            return Err(TextError::Shape { op, expected: vec![k, k], got: self.transitions.shape().to_vec() });
        }
        for v in [&self.start, &self.end] {
            if v.shape() != [k] {
                return Err(TextError::Shape { op, expected: vec![k], got: v.shape().to_vec() });
            }
        }
        if lengths.len() != b {
            return Err(TextError::Shape { op, expected: vec![b], got: vec![lengths.len()] });
        }
        for (row, &l) in lengths.iter().enumerate() {
            if l == 0 || l > t {
                return Err(TextError::Length { op, row, length: l, max: t });
            }
        }
        Ok((b, t, k))
    }

    fn inputs(&self) -> [Tensor<T>; 4] {
        [self.emissions.clone(), self.transitions.clone(), self.start.clone(), self.end.clone()]
    }
}

/// `[B·K]` mask: `true` where `t < lengths[b]`.
fn keep_mask(lengths: &[usize], t: usize, k: usize) -> Vec<bool> {
    lengths.iter().flat_map(|&l| std::iter::repeat_n(t < l, k)).collect()
}

/// `[B, 1]` (or `[B, 1, 1]` via reshape) 0/1 weights: 1 where `pred(len_b)`.
fn row_weights<T: Float>(lengths: &[usize], pred: impl Fn(usize) -> bool) -> Tensor<T> {
    Tensor::from_vec(lengths.iter().map(|&l| if pred(l) { T::ONE } else { T::ZERO }).collect(), &[lengths.len(), 1])
}

/// The forward variables `α_t [B, K]` for every padded position (a row's `α` is carried
/// unchanged past its length), in tensor ops.
fn alphas<T: Float>(s: &CrfScores<T>, lengths: &[usize], b: usize, t: usize, k: usize) -> Vec<Tensor<T>> {
    let em = s.emissions.permute(&[1, 0, 2]); // [T, B, K]
    let em_t = |i: usize| em.narrow(0, i, 1).reshape(&[b, k]);
    let trans = s.transitions.unsqueeze(0); // [1, K, K]
    let mut out = Vec::with_capacity(t);
    out.push(s.start.unsqueeze(0).add(&em_t(0)));
    for i in 1..t {
        let prev = &out[i - 1];
        let next = prev.unsqueeze(2).add(&trans).logsumexp(1, false).add(&em_t(i));
        out.push(Tensor::where_(&keep_mask(lengths, i, k), &[b, k], &next, prev));
    }
    out
}

/// `log Z [B]` by the forward algorithm in tensor ops (the reference for [`log_partition`]).
pub fn log_partition_composed<T: Float>(s: &CrfScores<T>, lengths: &[usize]) -> Result<Tensor<T>> {
    let (b, t, k) = s.check("crf log_partition_composed", lengths)?;
    let a = alphas(s, lengths, b, t, k);
    Ok(a[t - 1].add(&s.end.unsqueeze(0)).logsumexp(1, false))
}

/// `log Z [B]` by the fused forward algorithm: one recorded op whose backward is
/// forward–backward (see the module docs).
pub fn log_partition<T: Float>(s: &CrfScores<T>, lengths: &[usize]) -> Result<Tensor<T>> {
    s.check("crf log_partition", lengths)?;
    Ok(Tensor::apply_custom(Rc::new(LogPartition { lengths: lengths.to_vec() }), &s.inputs()))
}

/// The fused forward algorithm.
struct LogPartition {
    lengths: Vec<usize>,
}

impl<T: Float> CustomOp<T> for LogPartition {
    fn name(&self) -> &str {
        "crf_log_partition"
    }
    fn forward(&self, x: &[&Tensor<T>]) -> Tensor<T> {
        let p = Plain::new(x);
        let log_z: Vec<T> = (0..p.b).map(|row| T::from_f64(p.log_z(row, self.lengths[row]))).collect();
        Tensor::from_vec(log_z, &[p.b])
    }
    fn backward(&self, x: &[&Tensor<T>], _out: &Tensor<T>, g: &Tensor<T>) -> Vec<Option<Tensor<T>>> {
        if is_grad_enabled() {
            // Recording (create_graph): the marginals in tensor ops, so they can be differentiated.
            let s = CrfScores { emissions: x[0].clone(), transitions: x[1].clone(), start: x[2].clone(), end: x[3].clone() };
            let m = marginals_tensor(&s, &self.lengths);
            let (b, t, k) = (m.unary.dim(0), m.unary.dim(1), m.unary.dim(2));
            let g2 = g.reshape(&[b, 1]);
            let g3 = g.reshape(&[b, 1, 1]);
            let d_em = m.unary.mul(&g3);
            let d_start = m.unary.narrow(1, 0, 1).reshape(&[b, k]).mul(&g2).sum_axis(0, false);
            let last: Vec<T> = self.lengths.iter().flat_map(|&l| (0..t).map(move |i| if i + 1 == l { T::ONE } else { T::ZERO })).collect();
            let d_end = m.unary.mul(&Tensor::from_vec(last, &[b, t, 1])).sum_axis(1, false).mul(&g2).sum_axis(0, false);
            let d_trans = m.pairwise.mul(&g.reshape(&[b, 1, 1, 1])).sum_axes(&[0, 1], false);
            return vec![Some(d_em), Some(d_trans), Some(d_start), Some(d_end)];
        }
        let p = Plain::new(x);
        let (b, t, k) = (p.b, p.t, p.k);
        let gv: Vec<f64> = g.data().iter().map(|v| v.to_f64()).collect();
        let mut d_em = vec![T::ZERO; b * t * k];
        let mut d_trans = vec![0.0; k * k];
        let mut d_start = vec![0.0; k];
        let mut d_end = vec![0.0; k];
        p.visit_marginals(&self.lengths, |row, i, u, pw| {
            let gr = gv[row];
            for (d, &v) in d_em[(row * t + i) * k..(row * t + i + 1) * k].iter_mut().zip(u) {
                *d = T::from_f64(gr * v);
            }
            if i == 0 {
                d_start.iter_mut().zip(u).for_each(|(d, v)| *d += gr * v);
            }
            if i + 1 == self.lengths[row] {
                d_end.iter_mut().zip(u).for_each(|(d, v)| *d += gr * v);
            }
            if let Some(pw) = pw {
                d_trans.iter_mut().zip(pw).for_each(|(d, v)| *d += gr * v);
            }
        });
        let cast = |v: Vec<f64>, shape: &[usize]| Tensor::from_vec(v.into_iter().map(T::from_f64).collect(), shape);
        vec![Some(Tensor::from_vec(d_em, &[b, t, k])), Some(cast(d_trans, &[k, k])), Some(cast(d_start, &[k])), Some(cast(d_end, &[k]))]
    }
}

/// The score tensors as `f64` arrays, for the plain-loop algorithms.
struct Plain {
    b: usize,
    t: usize,
    k: usize,
    em: Vec<f64>,
    trans: Vec<f64>,
    start: Vec<f64>,
    end: Vec<f64>,
    /// Whether the scaled recursions are safe ([`Plain::scaled_ok`]).
    scaled: bool,
    /// `max A` and `exp(A − max A)` for the scaled recursions.
    m_a: f64,
    ea: Vec<f64>,
}

fn lse(v: &[f64]) -> f64 {
    let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + v.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

impl Plain {
    fn new<T: Float>(x: &[&Tensor<T>]) -> Plain {
        let f = |t: &Tensor<T>| t.data().iter().map(|v| v.to_f64()).collect::<Vec<f64>>();
        let sh = x[0].shape();
        let mut p = Plain { b: sh[0], t: sh[1], k: sh[2], em: f(x[0]), trans: f(x[1]), start: f(x[2]), end: f(x[3]), scaled: false, m_a: 0.0, ea: vec![] };
        p.scaled = p.scaled_ok();
        p.m_a = p.trans.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        p.ea = p.trans.iter().map(|a| (a - p.m_a).exp()).collect();
        p
    }
    fn from_scores<T: Float>(s: &CrfScores<T>) -> Plain {
        Plain::new(&[&s.emissions, &s.transitions, &s.start, &s.end])
    }
    fn e(&self, row: usize, i: usize, j: usize) -> f64 {
        self.em[(row * self.t + i) * self.k + j]
    }
    /// `α_t` for `t < len` (flattened `[len, K]`) and `log Z` of one row.
    fn forward_row(&self, row: usize, len: usize) -> (Vec<f64>, f64) {
        let k = self.k;
        let mut alpha = vec![0.0; len * k];
        for (j, a) in alpha[..k].iter_mut().enumerate() {
            *a = self.start[j] + self.e(row, 0, j);
        }
        let mut buf = vec![0.0; k];
        for i in 1..len {
            for j in 0..k {
                for (p, b) in buf.iter_mut().enumerate() {
                    *b = alpha[(i - 1) * k + p] + self.trans[p * k + j];
                }
                alpha[i * k + j] = lse(&buf) + self.e(row, i, j);
            }
        }
        let fin: Vec<f64> = (0..k).map(|j| alpha[(len - 1) * k + j] + self.end[j]).collect();
        (alpha, lse(&fin))
    }
    /// `β_t` for `t < len` (flattened `[len, K]`) of one row.
    fn backward_row(&self, row: usize, len: usize) -> Vec<f64> {
        let k = self.k;
        let mut beta = vec![0.0; len * k];
        beta[(len - 1) * k..len * k].copy_from_slice(&self.end);
        let mut buf = vec![0.0; k];
        for i in (0..len - 1).rev() {
            for p in 0..k {
                for (j, b) in buf.iter_mut().enumerate() {
                    *b = self.trans[p * k + j] + self.e(row, i + 1, j) + beta[(i + 1) * k + j];
                }
                beta[i * k + p] = lse(&buf);
            }
        }
        beta
    }
    /// Whether the scaled (probability-space) recursions are safe for this input: every
    /// `exp(score − max)` product along a path stays far above the smallest `f64`.
    fn scaled_ok(&self) -> bool {
        let range = |v: &[f64]| {
            let (lo, hi) = v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| (l.min(x), h.max(x)));
            hi - lo
        };
        let em = self.em.chunks(self.k).map(range).fold(0.0, f64::max);
        let r = range(&self.trans) + 2.0 * em + range(&self.start) + range(&self.end);
        r.is_finite() && r < 600.0
    }
    /// `log Z` of one row.
    fn log_z(&self, row: usize, len: usize) -> f64 {
        if self.scaled {
            self.scaled_row(row, len, false).2
        } else {
            self.forward_row(row, len).1
        }
    }
    /// Forward–backward in probability space with per-step normalisation (Rabiner's scaling):
    /// `O(K²)` multiply–adds per position and only `O(K)` exponentials, against `O(K²)`
    /// exponentials in log space. Returns the normalised `α̂_t` and `β̂_t` (flattened `[len, K]`,
    /// each step summing to 1; `β̂` empty unless asked for), `exp(A − max A)`, and `log Z`.
    fn scaled_row(&self, row: usize, len: usize, with_beta: bool) -> (Vec<f64>, Vec<f64>, f64) {
        let k = self.k;
        let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (m_a, ea) = (self.m_a, &self.ea);
        let em_row = |i: usize| &self.em[(row * self.t + i) * k..(row * self.t + i + 1) * k];
        let normalize = |v: &mut [f64]| {
            let c: f64 = v.iter().sum();
            v.iter_mut().for_each(|x| *x /= c);
            c.ln()
        };
        let mut alpha = vec![0.0; len * k];
        let first: Vec<f64> = self.start.iter().zip(em_row(0)).map(|(s, e)| s + e).collect();
        let m0 = max(&first);
        for (a, f) in alpha[..k].iter_mut().zip(&first) {
            *a = (f - m0).exp();
        }
        let mut log_z = m0 + normalize(&mut alpha[..k]);
        let mut ee = vec![0.0; k];
        for i in 1..len {
            let e = em_row(i);
            let m = max(e);
            for (x, v) in ee.iter_mut().zip(e) {
                *x = (v - m).exp();
            }
            let (prev, cur) = alpha.split_at_mut(i * k);
            let prev = &prev[(i - 1) * k..];
            let cur = &mut cur[..k];
            cur.iter_mut().for_each(|x| *x = 0.0);
            for (p, pv) in prev.iter().enumerate() {
                for (c, a) in cur.iter_mut().zip(&ea[p * k..(p + 1) * k]) {
                    *c += pv * a;
                }
            }
            for (c, x) in cur.iter_mut().zip(&ee) {
                *c *= x;
            }
            log_z += m_a + m + normalize(cur);
        }
        let m_end = max(&self.end);
        let fin: f64 = alpha[(len - 1) * k..].iter().zip(&self.end).map(|(a, e)| a * (e - m_end).exp()).sum();
        log_z += m_end + fin.ln();
        let mut beta = Vec::new();
        if with_beta {
            beta = vec![0.0; len * k];
            for (b, e) in beta[(len - 1) * k..].iter_mut().zip(&self.end) {
                *b = (e - m_end).exp();
            }
            normalize(&mut beta[(len - 1) * k..]);
            let mut w = vec![0.0; k];
            for i in (0..len - 1).rev() {
                let e = em_row(i + 1);
                let m = max(e);
                let (cur, next) = beta.split_at_mut((i + 1) * k);
                for ((wj, v), b) in w.iter_mut().zip(e).zip(&next[..k]) {
                    *wj = (v - m).exp() * b;
                }
                let cur = &mut cur[i * k..];
                for (p, c) in cur.iter_mut().enumerate() {
                    *c = ea[p * k..(p + 1) * k].iter().zip(&w).map(|(a, x)| a * x).sum();
                }
                normalize(cur);
            }
        }
        (alpha, beta, log_z)
    }
    /// Calls `f(row, t, unary, pairwise)` with the marginals of every real position (`unary`
    /// `[K]`; `pairwise` `[K, K]` for `t ≥ 1`), without materialising `[B, T, K, K]`.
    fn visit_marginals(&self, lengths: &[usize], mut f: impl FnMut(usize, usize, &[f64], Option<&[f64]>)) {
        let (t, k) = (self.t, self.k);
        if !self.scaled {
            let m = self.forward_backward_log(lengths);
            for (row, &l) in lengths.iter().enumerate() {
                for i in 0..l {
                    let base = row * t + i;
                    let pair = (i >= 1).then(|| &m.pairwise[base * k * k..(base + 1) * k * k]);
                    f(row, i, &m.unary[base * k..(base + 1) * k], pair);
                }
            }
            return;
        }
        let mut w = vec![0.0; k];
        let mut u = vec![0.0; k];
        let mut pw = vec![0.0; k * k];
        for (row, &l) in lengths.iter().enumerate() {
            let (alpha, beta, _) = self.scaled_row(row, l, true);
            for i in 0..l {
                for ((x, a), bb) in u.iter_mut().zip(&alpha[i * k..(i + 1) * k]).zip(&beta[i * k..(i + 1) * k]) {
                    *x = a * bb;
                }
                let c: f64 = u.iter().sum();
                u.iter_mut().for_each(|x| *x /= c);
                if i == 0 {
                    f(row, i, &u, None);
                    continue;
                }
                let e = &self.em[(row * t + i) * k..(row * t + i + 1) * k];
                let m = e.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                for ((wj, v), bb) in w.iter_mut().zip(e).zip(&beta[i * k..(i + 1) * k]) {
                    *wj = (v - m).exp() * bb;
                }
                for p in 0..k {
                    let ap = alpha[(i - 1) * k + p];
                    for ((x, a), wj) in pw[p * k..(p + 1) * k].iter_mut().zip(&self.ea[p * k..(p + 1) * k]).zip(&w) {
                        *x = ap * a * wj;
                    }
                }
                let c: f64 = pw.iter().sum();
                pw.iter_mut().for_each(|x| *x /= c);
                f(row, i, &u, Some(&pw));
            }
        }
    }
    fn forward_backward(&self, lengths: &[usize]) -> Marginals {
        let (b, t, k) = (self.b, self.t, self.k);
        let mut unary = vec![0.0; b * t * k];
        let mut pairwise = vec![0.0; b * t * k * k];
        self.visit_marginals(lengths, |row, i, u, pw| {
            let base = row * t + i;
            unary[base * k..(base + 1) * k].copy_from_slice(u);
            if let Some(pw) = pw {
                pairwise[base * k * k..(base + 1) * k * k].copy_from_slice(pw);
            }
        });
        let log_z = lengths.iter().enumerate().map(|(row, &l)| self.log_z(row, l)).collect();
        Marginals { batch: b, time: t, tags: k, log_z, unary, pairwise }
    }
    /// Forward–backward in log space (any score range).
    fn forward_backward_log(&self, lengths: &[usize]) -> Marginals {
        let (b, t, k) = (self.b, self.t, self.k);
        let mut unary = vec![0.0; b * t * k];
        let mut pairwise = vec![0.0; b * t * k * k];
        let mut log_z = vec![0.0; b];
        for row in 0..b {
            let l = lengths[row];
            let (alpha, lz) = self.forward_row(row, l);
            let beta = self.backward_row(row, l);
            log_z[row] = lz;
            for i in 0..l {
                for j in 0..k {
                    unary[(row * t + i) * k + j] = (alpha[i * k + j] + beta[i * k + j] - lz).exp();
                }
                if i >= 1 {
                    for p in 0..k {
                        for j in 0..k {
                            let v = alpha[(i - 1) * k + p] + self.trans[p * k + j] + self.e(row, i, j) + beta[i * k + j] - lz;
                            pairwise[((row * t + i) * k + p) * k + j] = v.exp();
                        }
                    }
                }
            }
        }
        Marginals { batch: b, time: t, tags: k, log_z, unary, pairwise }
    }
}

/// Posterior marginals of a batch, from the explicit forward–backward algorithm (`f64`).
#[derive(Clone, Debug)]
pub struct Marginals {
    /// `B`.
    pub batch: usize,
    /// Padded length `T`.
    pub time: usize,
    /// Number of tags `K`.
    pub tags: usize,
    /// `log Z` per row.
    pub log_z: Vec<f64>,
    /// `p(y_t = k)`, `[B, T, K]` row-major (0 past each row's length).
    pub unary: Vec<f64>,
    /// `p(y_{t−1} = i, y_t = j)` at `[b, t, i, j]`, `[B, T, K, K]` row-major (0 at `t = 0` and past
    /// each row's length).
    pub pairwise: Vec<f64>,
}

/// Forward–backward on plain arrays: `log Z` and the unary and pairwise marginals.
pub fn marginals<T: Float>(s: &CrfScores<T>, lengths: &[usize]) -> Result<Marginals> {
    s.check("crf marginals", lengths)?;
    Ok(Plain::from_scores(s).forward_backward(lengths))
}

/// Marginals as (differentiable) tensors.
struct TensorMarginals<T: Float> {
    /// `[B, T, K]`, zero past each length.
    unary: Tensor<T>,
    /// `[B, T, K, K]`, zero at `t = 0` and past each length.
    pairwise: Tensor<T>,
}

/// Forward–backward in tensor ops (the create-graph backward of [`log_partition`]).
fn marginals_tensor<T: Float>(s: &CrfScores<T>, lengths: &[usize]) -> TensorMarginals<T> {
    let (b, t, k) = (s.emissions.dim(0), s.emissions.dim(1), s.emissions.dim(2));
    let a = alphas(s, lengths, b, t, k);
    let log_z = a[t - 1].add(&s.end.unsqueeze(0)).logsumexp(1, true); // [B, 1]
    let em = s.emissions.permute(&[1, 0, 2]);
    let em_t = |i: usize| em.narrow(0, i, 1).reshape(&[b, k]);
    let end_b = s.end.unsqueeze(0).broadcast_to(&[b, k]);
    let trans = s.transitions.unsqueeze(0); // [1, K, K]
    let mut betas: Vec<Tensor<T>> = vec![end_b.clone(); t];
    for i in (0..t - 1).rev() {
        let rec = trans.add(&em_t(i + 1).add(&betas[i + 1]).unsqueeze(1)).logsumexp(2, false);
        betas[i] = Tensor::where_(&keep_mask(lengths, i + 1, k), &[b, k], &rec, &end_b);
    }
    let unary: Vec<Tensor<T>> =
        (0..t).map(|i| a[i].add(&betas[i]).sub(&log_z).exp().mul(&row_weights(lengths, |l| i < l))).collect();
    let lz3 = log_z.reshape(&[b, 1, 1]);
    let mut pair: Vec<Tensor<T>> = vec![Tensor::zeros(&[b, k, k])];
    for i in 1..t {
        let v = a[i - 1].unsqueeze(2).add(&trans).add(&em_t(i).add(&betas[i]).unsqueeze(1)).sub(&lz3).exp();
        pair.push(v.mul(&row_weights(lengths, |l| i < l).reshape(&[b, 1, 1])));
    }
    TensorMarginals { unary: Tensor::stack(&unary, 1), pairwise: Tensor::stack(&pair, 1) }
}

/// Scores `s(y) [B]` of given tag sequences (one per row, each at least as long as the row's
/// length; extra tags are ignored), differentiable in all four score tensors.
pub fn sequence_score<T: Float>(s: &CrfScores<T>, tags: &[Vec<usize>], lengths: &[usize]) -> Result<Tensor<T>> {
    let op = "crf sequence_score";
    let (b, t, k) = s.check(op, lengths)?;
    if tags.len() != b {
        return Err(TextError::Shape { op, expected: vec![b], got: vec![tags.len()] });
    }
    let mut em_w = vec![T::ZERO; b * t * k];
    let mut tr_w = vec![T::ZERO; b * k * k];
    let mut st_w = vec![T::ZERO; b * k];
    let mut en_w = vec![T::ZERO; b * k];
    for (row, (y, &l)) in tags.iter().zip(lengths).enumerate() {
        if y.len() < l {
            return Err(TextError::Invalid { op, msg: format!("row {row} has {} tags for length {l}", y.len()) });
        }
        if let Some(&bad) = y[..l].iter().find(|&&v| v >= k) {
            return Err(TextError::Id { op, id: bad, count: k });
        }
        for i in 0..l {
            em_w[(row * t + i) * k + y[i]] += T::ONE;
            if i >= 1 {
                tr_w[(row * k + y[i - 1]) * k + y[i]] += T::ONE;
            }
        }
        st_w[row * k + y[0]] = T::ONE;
        en_w[row * k + y[l - 1]] = T::ONE;
    }
    let e = s.emissions.mul(&Tensor::from_vec(em_w, &[b, t, k])).sum_axes(&[1, 2], false);
    let a = s.transitions.unsqueeze(0).mul(&Tensor::from_vec(tr_w, &[b, k, k])).sum_axes(&[1, 2], false);
    let st = s.start.unsqueeze(0).mul(&Tensor::from_vec(st_w, &[b, k])).sum_axis(1, false);
    let en = s.end.unsqueeze(0).mul(&Tensor::from_vec(en_w, &[b, k])).sum_axis(1, false);
    Ok(e.add(&a).add(&st).add(&en))
}

/// Mean negative log-likelihood `(1/B) Σ_b (log Z_b − s(y_b))` of gold tags, with the fused
/// `log Z` (`fused = true`) or the composed reference.
pub fn neg_log_likelihood<T: Float>(s: &CrfScores<T>, tags: &[Vec<usize>], lengths: &[usize], fused: bool) -> Result<Tensor<T>> {
    let log_z = if fused { log_partition(s, lengths)? } else { log_partition_composed(s, lengths)? };
    Ok(log_z.sub(&sequence_score(s, tags, lengths)?).mean())
}

/// The best tag sequence of every row (Viterbi) and its score `s(y*)`.
pub fn viterbi<T: Float>(s: &CrfScores<T>, lengths: &[usize]) -> Result<Vec<(Vec<usize>, f64)>> {
    s.check("crf viterbi", lengths)?;
    let p = Plain::from_scores(s);
    let k = p.k;
    Ok((0..p.b)
        .map(|row| {
            let l = lengths[row];
            let mut delta: Vec<f64> = (0..k).map(|j| p.start[j] + p.e(row, 0, j)).collect();
            let mut back = vec![0usize; l * k];
            for i in 1..l {
                let mut next = vec![0.0; k];
                for j in 0..k {
                    let (mut best, mut arg) = (f64::NEG_INFINITY, 0);
                    for (q, d) in delta.iter().enumerate() {
                        let v = d + p.trans[q * k + j];
                        if v > best {
                            best = v;
                            arg = q;
                        }
                    }
                    next[j] = best + p.e(row, i, j);
                    back[i * k + j] = arg;
                }
                delta = next;
            }
            let (mut best, mut last) = (f64::NEG_INFINITY, 0);
            for (j, (d, e)) in delta.iter().zip(&p.end).enumerate() {
                let v = d + e;
                if v > best {
                    best = v;
                    last = j;
                }
            }
            let mut path = vec![last; l];
            for i in (1..l).rev() {
                path[i - 1] = back[i * k + path[i]];
            }
            (path, best)
        })
        .collect())
}

/// A CRF layer: learned transition, start and end scores on top of any emission scores.
/// Parameters: `{prefix}.transitions [K, K]`, `{prefix}.start [K]`, `{prefix}.end [K]`, all
/// initialised `U(−0.1, 0.1)`.
pub struct Crf<T: Float> {
    /// `A [K, K]`.
    pub transitions: Param<T>,
    /// `[K]`.
    pub start: Param<T>,
    /// `[K]`.
    pub end: Param<T>,
    /// Use the fused `log Z` (default true).
    pub fused: bool,
}

impl<T: Float> Crf<T> {
    /// A CRF over `k` tags.
    pub fn new(store: &mut ParamStore<T>, prefix: &str, group: &str, k: usize, rng: &mut Rng) -> Self {
        let name = |s: &str| if prefix.is_empty() { s.to_string() } else { format!("{prefix}.{s}") };
        Crf {
            transitions: store.add(&name("transitions"), group, init::uniform(&[k, k], -0.1, 0.1, rng)),
            start: store.add(&name("start"), group, init::uniform(&[k], -0.1, 0.1, rng)),
            end: store.add(&name("end"), group, init::uniform(&[k], -0.1, 0.1, rng)),
            fused: true,
        }
    }
    /// The score tensors for given emissions.
    pub fn scores(&self, emissions: &Tensor<T>) -> CrfScores<T> {
        CrfScores { emissions: emissions.clone(), transitions: self.transitions.get(), start: self.start.get(), end: self.end.get() }
    }
    /// Mean negative log-likelihood of gold tags.
    pub fn loss(&self, emissions: &Tensor<T>, tags: &[Vec<usize>], lengths: &[usize]) -> Result<Tensor<T>> {
        neg_log_likelihood(&self.scores(emissions), tags, lengths, self.fused)
    }
    /// Viterbi decoding of every row.
    pub fn decode(&self, emissions: &Tensor<T>, lengths: &[usize]) -> Result<Vec<Vec<usize>>> {
        Ok(viterbi(&self.scores(emissions), lengths)?.into_iter().map(|(p, _)| p).collect())
    }
}
