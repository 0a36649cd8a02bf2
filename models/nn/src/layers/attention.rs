//! Attention ([Tixier](crate#references) §7): pluggable score functions ([`AttentionScore`]: Luong dot /
//! general / concat, Bahdanau additive), global attention ([`Attention`]), local attention with
//! predictive alignment and a Gaussian window ([`LocalAttention`], §7.1.5), and self-attention
//! against a learned context vector ([`SelfAttention`], hierarchical attention networks, §7.2).
//!
//! Shapes: a query `q [B, dq]` (e.g. the decoder state `h_t`), keys `[B, S, dk]` (the encoder
//! annotations `h̄_s`), values `[B, S, dv]` (usually the keys again), an optional padding mask
//! `[B, S]` (row-major `&[bool]`, `true` = a real key). Every attention returns the context
//! `c = Σ_s α_s v_s` `[B, dv]` and the weights `α [B, S]`.
//!
//! A score function is a trait object, so the context-aware attention (CA-ATT, [CAML](crate#references) §3.3)
//! can reuse the same scorers (its χ "may also use the Bahdanau or Luong score forms", Eq. 43)
//! with its own normalisation, and any layer taking a `Box<dyn AttentionScore<T>>` can swap one
//! score for another.

use super::param_name;
use crate::module::{visit_child, Layout, Parameterized};
use crate::params::{init, Param, ParamStore};
use chi_autodiff::{Float, Rng, Tensor};

/// A score function `score(q, k_s)` for every key: `q [B, dq]`, keys `[B, S, dk]` → `[B, S]`.
///
/// Split in two so key-side work is done once per source sentence, not once per decoder step:
/// [`AttentionScore::prepare_keys`] (default: the keys themselves) and
/// [`AttentionScore::score`] on the prepared keys. Its parameters are visible through the
/// [`Parameterized`] super-trait.
pub trait AttentionScore<T: Float>: Parameterized<T> {
    /// Key-side precomputation `[B, S, dk]` → `[B, S, ·]` (default: identity).
    fn prepare_keys(&self, keys: &Tensor<T>) -> Tensor<T> {
        keys.clone()
    }
    /// Scores `[B, S]` of `query [B, dq]` against keys prepared by [`AttentionScore::prepare_keys`].
    fn score(&self, query: &Tensor<T>, prepared: &Tensor<T>) -> Tensor<T>;
    /// Scores against raw keys: `score(query, prepare_keys(keys))`.
    fn score_keys(&self, query: &Tensor<T>, keys: &Tensor<T>) -> Tensor<T> {
        self.score(query, &self.prepare_keys(keys))
    }
    /// A short name ("dot", "general", "concat", "bahdanau").
    fn name(&self) -> &'static str;
}

/// `keys [B, S, d] · q [B, d]` → `[B, S]` (a batched matrix–vector product).
#[track_caller]
fn batched_dot<T: Float>(keys: &Tensor<T>, q: &Tensor<T>) -> Tensor<T> {
    let (b, s, d) = (keys.dim(0), keys.dim(1), keys.dim(2));
    assert!(q.shape() == [b, d], "attention: query {:?} does not match keys {:?}", q.shape(), keys.shape());
    keys.matmul(&q.reshape(&[b, d, 1])).reshape(&[b, s])
}

/// `vᵀ tanh(kp + qp)` for `kp [B, S, A]`, `qp [B, A]`, `v [A]` → `[B, S]`.
fn additive<T: Float>(kp: &Tensor<T>, qp: &Tensor<T>, v: &Tensor<T>) -> Tensor<T> {
    kp.add(&qp.unsqueeze(1)).tanh().matmul(v)
}

/// Luong dot score: `score(q, k) = qᵀ k` (needs `dq = dk`). No parameters.
#[derive(Clone, Copy, Debug, Default)]
pub struct DotScore;

impl<T: Float> AttentionScore<T> for DotScore {
    fn score(&self, query: &Tensor<T>, prepared: &Tensor<T>) -> Tensor<T> {
        batched_dot(prepared, query)
    }
    fn name(&self) -> &'static str {
        "dot"
    }
}

/// Luong general score: `score(q, k) = qᵀ W_a k`, `W_a [dq, dk]` (computed as `(q·W_a)·k`).
/// Parameter: `{prefix}.w [dq, dk]` (Xavier-uniform).
pub struct GeneralScore<T: Float> {
    /// `W_a [dq, dk]`.
    pub w: Param<T>,
}

impl<T: Float> GeneralScore<T> {
    /// A new score for `dq`-dim queries and `dk`-dim keys.
    pub fn new(store: &mut ParamStore<T>, prefix: &str, group: &str, dq: usize, dk: usize, rng: &mut Rng) -> Self {
        GeneralScore { w: store.add(&param_name(prefix, "w"), group, init::xavier_uniform(&[dq, dk], dq, dk, 1.0, rng)) }
    }
}

impl<T: Float> AttentionScore<T> for GeneralScore<T> {
    fn score(&self, query: &Tensor<T>, prepared: &Tensor<T>) -> Tensor<T> {
        batched_dot(prepared, &query.matmul(&self.w.get()))
    }
    fn name(&self) -> &'static str {
        "general"
    }
}

/// Luong concat score: `score(q, k) = v_aᵀ tanh(W_a [q; k])`, one `W_a [dq + dk, A]` (its
/// first `dq` rows act on `q`, the rest on `k`; the key half is applied once per source).
/// The seed names this form without a formula ([Tixier](crate#references) §7.1.4); this is Luong et al.'s.
/// Parameters: `{prefix}.w [dq+dk, A]`, `{prefix}.v [A]`.
pub struct ConcatScore<T: Float> {
    /// `W_a [dq + dk, A]`.
    pub w: Param<T>,
    /// `v_a [A]`.
    pub v: Param<T>,
    dq: usize,
    dk: usize,
}

impl<T: Float> ConcatScore<T> {
    /// A new score with attention size `a`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(store: &mut ParamStore<T>, prefix: &str, group: &str, dq: usize, dk: usize, a: usize, rng: &mut Rng) -> Self {
        let w = store.add(&param_name(prefix, "w"), group, init::xavier_uniform(&[dq + dk, a], dq + dk, a, 1.0, rng));
        let v = store.add(&param_name(prefix, "v"), group, init::xavier_uniform(&[a], a, 1, 1.0, rng));
        ConcatScore { w, v, dq, dk }
    }
}

impl<T: Float> AttentionScore<T> for ConcatScore<T> {
    fn prepare_keys(&self, keys: &Tensor<T>) -> Tensor<T> {
        keys.matmul(&self.w.get().narrow(0, self.dq, self.dk))
    }
    fn score(&self, query: &Tensor<T>, prepared: &Tensor<T>) -> Tensor<T> {
        additive(prepared, &query.matmul(&self.w.get().narrow(0, 0, self.dq)), &self.v.get())
    }
    fn name(&self) -> &'static str {
        "concat"
    }
}

/// Bahdanau additive score: `score(q, k) = vᵀ tanh(W_q q + W_k k)`, `W_q [dq, A]`,
/// `W_k [dk, A]`, `v [A]` (Bahdanau et al. 2015, no bias). `W_k k` is computed once per source.
/// Parameters: `{prefix}.w_q`, `{prefix}.w_k`, `{prefix}.v`.
pub struct AdditiveScore<T: Float> {
    /// `W_q [dq, A]`.
    pub w_q: Param<T>,
    /// `W_k [dk, A]`.
    pub w_k: Param<T>,
    /// `v [A]`.
    pub v: Param<T>,
}

impl<T: Float> AdditiveScore<T> {
    /// A new score with attention size `a`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(store: &mut ParamStore<T>, prefix: &str, group: &str, dq: usize, dk: usize, a: usize, rng: &mut Rng) -> Self {
        let w_q = store.add(&param_name(prefix, "w_q"), group, init::xavier_uniform(&[dq, a], dq, a, 1.0, rng));
        let w_k = store.add(&param_name(prefix, "w_k"), group, init::xavier_uniform(&[dk, a], dk, a, 1.0, rng));
        let v = store.add(&param_name(prefix, "v"), group, init::xavier_uniform(&[a], a, 1, 1.0, rng));
        AdditiveScore { w_q, w_k, v }
    }
}

impl<T: Float> AttentionScore<T> for AdditiveScore<T> {
    fn prepare_keys(&self, keys: &Tensor<T>) -> Tensor<T> {
        keys.matmul(&self.w_k.get())
    }
    fn score(&self, query: &Tensor<T>, prepared: &Tensor<T>) -> Tensor<T> {
        additive(prepared, &query.matmul(&self.w_q.get()), &self.v.get())
    }
    fn name(&self) -> &'static str {
        "bahdanau"
    }
}

/// Softmax over the last axis of `scores [B, S]`, with masked-out entries (`mask[b·S + s] ==
/// false`) given weight exactly 0 (their scores are replaced by −10³⁰ before the softmax, so
/// no gradient reaches them). A row with every key masked gets uniform weights.
#[track_caller]
pub fn masked_softmax<T: Float>(scores: &Tensor<T>, mask: Option<&[bool]>) -> Tensor<T> {
    match mask {
        Some(m) if !m.iter().all(|&v| v) => {
            assert!(m.len() == scores.numel(), "masked_softmax: mask of {} for scores {:?}", m.len(), scores.shape());
            let neg = Tensor::full(&[1], T::from_f64(-1e30));
            Tensor::where_(m, scores.shape(), scores, &neg).softmax(-1)
        }
        _ => scores.softmax(-1),
    }
}

/// The weighted sum `c_b = Σ_s α[b, s] · values[b, s, :]`: `α [B, S]`, `values [B, S, dv]` →
/// `[B, dv]` (one batched matmul).
#[track_caller]
pub fn attend<T: Float>(weights: &Tensor<T>, values: &Tensor<T>) -> Tensor<T> {
    let (b, dv) = (values.dim(0), values.dim(2));
    weights.unsqueeze(1).matmul(values).reshape(&[b, dv])
}

/// Context and weights of an attention.
pub struct AttentionOutput<T: Float> {
    /// `c [B, dv]`.
    pub context: Tensor<T>,
    /// `α [B, S]` (each row sums to 1 over unmasked keys for softmax attentions).
    pub weights: Tensor<T>,
}

/// Global attention ([Tixier](crate#references) §7.1.4, Luong; §7.1.1, Bahdanau) with any score:
///
/// ```text
/// α_s = exp(score(q, k_s)) / Σ_{s' unmasked} exp(score(q, k_{s'}))      (0 for masked s)
/// c   = Σ_s α_s v_s
/// ```
pub struct Attention<T: Float> {
    /// The score function.
    pub scorer: Box<dyn AttentionScore<T>>,
}

impl<T: Float> Attention<T> {
    /// Global attention with the given score.
    pub fn new(scorer: Box<dyn AttentionScore<T>>) -> Self {
        Attention { scorer }
    }
    /// Key-side precomputation, for [`Attention::forward_prepared`] in decoder loops.
    pub fn prepare(&self, keys: &Tensor<T>) -> Tensor<T> {
        self.scorer.prepare_keys(keys)
    }
    /// `query [B, dq]`, `keys [B, S, dk]`, `values [B, S, dv]`, `mask [B·S]` → context, weights.
    #[track_caller]
    pub fn forward(&self, query: &Tensor<T>, keys: &Tensor<T>, values: &Tensor<T>, mask: Option<&[bool]>) -> AttentionOutput<T> {
        self.forward_prepared(query, &self.prepare(keys), values, mask)
    }
    /// As [`Attention::forward`] with keys already passed through [`Attention::prepare`].
    #[track_caller]
    pub fn forward_prepared(&self, query: &Tensor<T>, prepared: &Tensor<T>, values: &Tensor<T>, mask: Option<&[bool]>) -> AttentionOutput<T> {
        // Named here, before the scoring products would name their own shapes.
        assert!(values.rank() == 3 && prepared.rank() == 3, "Attention: keys and values must be [batch, keys, dim], got {:?} and {:?}", prepared.shape(), values.shape());
        assert!(
            prepared.dim(0) == values.dim(0) && prepared.dim(1) == values.dim(1),
            "Attention: keys {:?} and values {:?} differ in batch or number of keys",
            prepared.shape(),
            values.shape()
        );
        assert!(values.dim(1) > 0, "Attention: no keys to attend to (values {:?})", values.shape());
        let weights = masked_softmax(&self.scorer.score(query, prepared), mask);
        AttentionOutput { context: attend(&weights, values), weights }
    }
}

/// Local attention with predictive alignment (Luong et al. 2015; [Tixier](crate#references) §7.1.5, eqs. 20–22):
///
/// ```text
/// p_t = S_b · σ(v_pᵀ tanh(W_p h_t))                         predicted centre, p_t ∈ [0, S_b]
/// window W_t = { s : |s − p_t| ≤ D }  (s = 0 … S_b − 1, unmasked)
/// α_{t,s} = softmax_{s ∈ W_t}(score(h_t, h̄_s)) · exp(−(s − p_t)² / (2σ²)),   σ = D/2
/// c_t = Σ_{s ∈ W_t} α_{t,s} h̄_s
/// ```
///
/// `S_b` is the length of sequence `b` (its number of unmasked keys; keys are assumed to be a
/// prefix). Positions are 0-based. Weights outside the window are exactly 0; the window's
/// membership is a step function of `p_t`, while `p_t` gets gradient through the Gaussian.
/// Because of the Gaussian factor the weights do not sum to 1 (as in the paper).
/// Parameters: `{prefix}.w_p [dq, A]`, `{prefix}.v_p [A]` plus the scorer's.
pub struct LocalAttention<T: Float> {
    /// The score function (Luong found `general` best for local attention).
    pub scorer: Box<dyn AttentionScore<T>>,
    /// `W_p [dq, A]`.
    pub w_p: Param<T>,
    /// `v_p [A]`.
    pub v_p: Param<T>,
    d: usize,
}

impl<T: Float> LocalAttention<T> {
    /// Local-p attention with half-window `d ≥ 1` (window `2D + 1`) and hidden size `a` for the
    /// position predictor.
    #[allow(clippy::too_many_arguments)]
    pub fn new(store: &mut ParamStore<T>, prefix: &str, group: &str, scorer: Box<dyn AttentionScore<T>>, dq: usize, a: usize, d: usize, rng: &mut Rng) -> Self {
        assert!(d >= 1, "LocalAttention: half-window D must be ≥ 1");
        let w_p = store.add(&param_name(prefix, "w_p"), group, init::xavier_uniform(&[dq, a], dq, a, 1.0, rng));
        let v_p = store.add(&param_name(prefix, "v_p"), group, init::xavier_uniform(&[a], a, 1, 1.0, rng));
        LocalAttention { scorer, w_p, v_p, d }
    }
    /// Half-window `D`.
    pub fn half_window(&self) -> usize {
        self.d
    }
    /// The predicted centres `p_t [B]` for `query [B, dq]` and per-sequence lengths.
    pub fn positions(&self, query: &Tensor<T>, lengths: &[usize]) -> Tensor<T> {
        let b = query.dim(0);
        let sl = Tensor::from_vec(lengths.iter().map(|&l| T::from_usize(l)).collect(), &[b]);
        query.matmul(&self.w_p.get()).tanh().matmul(&self.v_p.get()).sigmoid().mul(&sl)
    }
    /// `query [B, dq]`, `keys [B, S, dk]`, `values [B, S, dv]`, `mask [B·S]` → context, weights
    /// and the predicted positions `p [B]`.
    #[track_caller]
    pub fn forward(&self, query: &Tensor<T>, keys: &Tensor<T>, values: &Tensor<T>, mask: Option<&[bool]>) -> (AttentionOutput<T>, Tensor<T>) {
        let (b, s) = (keys.dim(0), keys.dim(1));
        let lengths: Vec<usize> = match mask {
            Some(m) => (0..b).map(|i| m[i * s..(i + 1) * s].iter().filter(|&&v| v).count()).collect(),
            None => vec![s; b],
        };
        let p = self.positions(query, &lengths);
        let d = self.d as f64;
        let window: Vec<bool> = (0..b * s)
            .map(|k| {
                let (i, j) = (k / s, k % s);
                j < lengths[i] && mask.is_none_or(|m| m[k]) && (j as f64 - p.data()[i].to_f64()).abs() <= d
            })
            .collect();
        let alpha = masked_softmax(&self.scorer.score_keys(query, keys), Some(&window));
        let sigma = d / 2.0;
        let pos = Tensor::from_vec((0..s).map(T::from_usize).collect(), &[1, s]);
        let gauss = pos.sub(&p.unsqueeze(1)).square().mul_scalar(-1.0 / (2.0 * sigma * sigma)).exp();
        let weights = alpha.mul(&gauss);
        (AttentionOutput { context: attend(&weights, values), weights }, p)
    }
}

/// Self-attention against a learned context vector (Yang et al. 2016, hierarchical attention
/// networks; [Tixier](crate#references) §7.2, eq. 23):
///
/// ```text
/// u_t = tanh(W h_t + b)                         [B, T, A]
/// α_t = softmax_t(score(u_w, u_t))              (default score: u_tᵀ u_w; masked t get 0)
/// s   = Σ_t α_t h_t                             [B, d]
/// ```
///
/// `h [B, T, d]` → `s [B, d]` and `α [B, T]`. For a hierarchical network apply one over the
/// words of each sentence and another over the sentence vectors. The score is pluggable
/// (query = `u_w`, keys = `u_t`). Parameters: `{prefix}.w [d, A]`, `{prefix}.b [A]`,
/// `{prefix}.u [A]` (`U(−√(3/A), √(3/A))`, unit expected squared norm).
pub struct SelfAttention<T: Float> {
    /// `W [d, A]`.
    pub w: Param<T>,
    /// `b [A]`.
    pub b: Param<T>,
    /// The context vector `u_w [A]`.
    pub u: Param<T>,
    /// The score of `u_w` against each `u_t` ([`DotScore`] by default).
    pub scorer: Box<dyn AttentionScore<T>>,
}

impl<T: Float> SelfAttention<T> {
    /// Self-attention over `d`-dim annotations with attention size `a` and the dot score.
    pub fn new(store: &mut ParamStore<T>, prefix: &str, group: &str, d: usize, a: usize, rng: &mut Rng) -> Self {
        let w = store.add(&param_name(prefix, "w"), group, init::xavier_uniform(&[d, a], d, a, 1.0, rng));
        let b = store.add(&param_name(prefix, "b"), group, init::zeros(&[a]));
        let r = (3.0 / a.max(1) as f64).sqrt();
        let u = store.add(&param_name(prefix, "u"), group, init::uniform(&[a], -r, r, rng));
        SelfAttention { w, b, u, scorer: Box::new(DotScore) }
    }
    /// Replaces the score function (its query is `u_w [A]`, its keys `u_t [A]`).
    pub fn with_scorer(mut self, scorer: Box<dyn AttentionScore<T>>) -> Self {
        self.scorer = scorer;
        self
    }
    /// `h [B, T, d]`, `mask [B·T]` → `s [B, d]` and `α [B, T]`.
    #[track_caller]
    pub fn forward(&self, h: &Tensor<T>, mask: Option<&[bool]>) -> AttentionOutput<T> {
        assert!(h.rank() == 3, "SelfAttention: input must be [B, T, d], got {:?}", h.shape());
        let b = h.dim(0);
        let ut = h.matmul(&self.w.get()).add(&self.b.get()).tanh();
        let u = self.u.get();
        let a = u.dim(0);
        let q = u.reshape(&[1, a]).broadcast_to(&[b, a]);
        let weights = masked_softmax(&self.scorer.score_keys(&q, &ut), mask);
        AttentionOutput { context: attend(&weights, h), weights }
    }
}

impl<T: Float> Parameterized<T> for DotScore {
    fn visit_parameters(&self, _f: &mut dyn FnMut(&str, &Param<T>, Layout)) {}
}

impl<T: Float> Parameterized<T> for GeneralScore<T> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
        f("w", &self.w, Layout::Native);
    }
}

impl<T: Float> Parameterized<T> for ConcatScore<T> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
        f("w", &self.w, Layout::Native);
        f("v", &self.v, Layout::Native);
    }
}

impl<T: Float> Parameterized<T> for AdditiveScore<T> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
        f("w_q", &self.w_q, Layout::Native);
        f("w_k", &self.w_k, Layout::Native);
        f("v", &self.v, Layout::Native);
    }
}

impl<T: Float> Parameterized<T> for Attention<T> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
        visit_child("scorer", self.scorer.as_ref(), f);
    }
}

impl<T: Float> Parameterized<T> for LocalAttention<T> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
        visit_child("scorer", self.scorer.as_ref(), f);
        f("w_p", &self.w_p, Layout::Native);
        f("v_p", &self.v_p, Layout::Native);
    }
}

impl<T: Float> Parameterized<T> for SelfAttention<T> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
        f("w", &self.w, Layout::Native);
        f("b", &self.b, Layout::Native);
        f("u", &self.u, Layout::Native);
        visit_child("scorer", self.scorer.as_ref(), f);
    }
}
