//! CA-ATT ([CAML](crate#references) §3.3): unnormalised context-aware attention
//!
//! ```text
//! s = v(c)·Σᵢ χ(sᵢ, c) + Σᵢ (1 − χ(sᵢ, c))·sᵢ          (Eq. 23)
//! v(c) = tanh(W_h c + b_h)                             (Eq. 25)
//! χ(sᵢ, c) = σ(w_gᵀsᵢ + u_gᵀc + b_g)                   (Eq. 26, ChiForm::Sigmoid)
//! χ(sᵢ, c) = σ(vᵀtanh(W₁c + W₂sᵢ) + b)                 (Eq. 43 Bahdanau form)
//! χ(sᵢ, c) = σ(cᵀW sᵢ + b)                             (Eq. 43 Luong form)
//! ```
//!
//! `1 − χ` is the importance of `sᵢ`; unlike softmax attention (Eq. 24) nothing forces the
//! weights to sum to one, so any number of inputs (including none) can be attended, and when none
//! is, the output falls back to the context-only vector `v(c)`.
//!
//! Masks: `mask [B, T]` (1 = real item, 0 = padding) removes padded items from both sums.
//! Choices where the paper is silent: a scalar bias `b` is added to the Bahdanau and Luong score
//! forms (so σ can shift); `σ_h = tanh`; Xavier-uniform matrices, zero biases.
//!
//! [`SoftmaxAttention`] is the baseline: `s = Σᵢ softmax(f)ᵢ sᵢ` with the Bahdanau or Luong
//! score `f` (Eq. 24, 43), padded items masked out before the softmax.

use super::{Activation, GROUP_CHI, GROUP_EMB};
use chi_nn::params::{init, Param, ParamStore};
use chi_autodiff::{Float, Rng, Tensor};

/// The form of CA-ATT's χ-function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChiForm {
    /// Eq. 26: `σ(w_gᵀsᵢ + u_gᵀc + b_g)`.
    Sigmoid,
    /// Eq. 43, Bahdanau: `σ(vᵀtanh(W₁c + W₂sᵢ) + b)` with an attention width.
    Bahdanau {
        /// Width of `W₁c + W₂sᵢ`.
        attn_dim: usize,
    },
    /// Eq. 43, Luong: `σ(cᵀW sᵢ + b)`.
    Luong,
}

/// Score function shared by CA-ATT's χ (Bahdanau/Luong forms) and the softmax baselines.
enum Score<T: Float> {
    Sigmoid { w_g: Param<T>, u_g: Param<T> },
    Bahdanau { w1: Param<T>, w2: Param<T>, v: Param<T> },
    Luong { w: Param<T> },
}

impl<T: Float> Score<T> {
    fn new(store: &mut ParamStore<T>, name: &str, group: &str, form: ChiForm, ds: usize, dc: usize, rng: &mut Rng) -> Self {
        let n = |s: &str| format!("{name}.{s}");
        match form {
            ChiForm::Sigmoid => Score::Sigmoid {
                w_g: store.add(&n("w_g"), group, init::xavier_uniform(&[ds], ds, 1, 1.0, rng)),
                u_g: store.add(&n("u_g"), group, init::xavier_uniform(&[dc], dc, 1, 1.0, rng)),
            },
            ChiForm::Bahdanau { attn_dim: a } => Score::Bahdanau {
                w1: store.add(&n("w1"), group, init::xavier_uniform(&[dc, a], dc, a, 1.0, rng)),
                w2: store.add(&n("w2"), group, init::xavier_uniform(&[ds, a], ds, a, 1.0, rng)),
                v: store.add(&n("v"), group, init::xavier_uniform(&[a], a, 1, 1.0, rng)),
            },
            ChiForm::Luong => Score::Luong { w: store.add(&n("w"), group, init::xavier_uniform(&[dc, ds], dc, ds, 1.0, rng)) },
        }
    }
    /// Scores `[B, T]` of memory `[B, T, ds]` against query `[B, dc]`.
    fn scores(&self, mem: &Tensor<T>, q: &Tensor<T>) -> Tensor<T> {
        match self {
            Score::Sigmoid { w_g, u_g } => mem.matmul(&w_g.get()).add(&q.matmul(&u_g.get()).unsqueeze(1)),
            Score::Bahdanau { w1, w2, v } => mem.matmul(&w2.get()).add(&q.matmul(&w1.get()).unsqueeze(1)).tanh().matmul(&v.get()),
            Score::Luong { w } => {
                let qw = q.matmul(&w.get()); // [B, ds]
                mem.matmul(&qw.unsqueeze(2)).squeeze(2) // [B, T, 1] → [B, T]
            }
        }
    }
}

/// Context-aware attention (Eq. 23).
pub struct CaAttention<T: Float> {
    score: Score<T>,
    /// χ bias `b_g` (group `chi`).
    pub b_g: Param<T>,
    /// `W_h: [dc, ds]` of `v(c)` (group `emb`).
    pub w_h: Param<T>,
    /// `b_h: [ds]`.
    pub b_h: Param<T>,
    /// `σ_h` (default tanh).
    pub h_act: Activation,
}

impl<T: Float> CaAttention<T> {
    /// Attention over memory items of size `ds` from queries of size `dc`.
    pub fn new(store: &mut ParamStore<T>, name: &str, form: ChiForm, ds: usize, dc: usize, rng: &mut Rng) -> Self {
        let score = Score::new(store, &format!("{name}.chi"), GROUP_CHI, form, ds, dc, rng);
        let b_g = store.add(&format!("{name}.chi.b"), GROUP_CHI, init::zeros(&[1]));
        let w_h = store.add(&format!("{name}.w_h"), GROUP_EMB, init::xavier_uniform(&[dc, ds], dc, ds, 1.0, rng));
        let b_h = store.add(&format!("{name}.b_h"), GROUP_EMB, init::zeros(&[ds]));
        CaAttention { score, b_g, w_h, b_h, h_act: Activation::Tanh }
    }
    /// χ(sᵢ, c) for every item: `[B, T]` (padding not applied).
    pub fn chi(&self, mem: &Tensor<T>, q: &Tensor<T>) -> Tensor<T> {
        self.score.scores(mem, q).add(&self.b_g.get()).sigmoid()
    }
    /// `v(c) = σ_h(W_h c + b_h)`: `[B, ds]`.
    pub fn v(&self, q: &Tensor<T>) -> Tensor<T> {
        self.h_act.apply(&q.matmul(&self.w_h.get()).add(&self.b_h.get()))
    }
    /// Eq. 23: memory `[B, T, ds]`, query `[B, dc]`, optional mask `[B, T]` → (`s [B, ds]`,
    /// `χ [B, T]`, zero at padded items).
    pub fn forward(&self, mem: &Tensor<T>, q: &Tensor<T>, mask: Option<&Tensor<T>>) -> (Tensor<T>, Tensor<T>) {
        let chi = self.chi(mem, q);
        let one_minus = chi.rsub_scalar(1.0);
        let (chi, one_minus) = match mask {
            Some(m) => (chi.mul(m), one_minus.mul(m)),
            None => (chi, one_minus),
        };
        let sum_chi = chi.sum_axis(1, true); // [B, 1]
        let ctx = one_minus.unsqueeze(2).mul(mem).sum_axis(1, false); // [B, ds]
        (self.v(q).mul(&sum_chi).add(&ctx), chi)
    }
}

/// Score form of the softmax attention baselines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoftmaxScore {
    /// Bahdanau et al. (2014): `vᵀtanh(W₁c + W₂sᵢ)`.
    Bahdanau {
        /// Attention width.
        attn_dim: usize,
    },
    /// Luong et al. (2015) "general": `cᵀW sᵢ`.
    Luong,
}

/// Softmax attention (Eq. 24) with a Bahdanau or Luong score (Eq. 43).
pub struct SoftmaxAttention<T: Float> {
    score: Score<T>,
}

impl<T: Float> SoftmaxAttention<T> {
    /// A new attention over items of size `ds` from queries of size `dc`.
    pub fn new(store: &mut ParamStore<T>, name: &str, form: SoftmaxScore, ds: usize, dc: usize, rng: &mut Rng) -> Self {
        let f = match form {
            SoftmaxScore::Bahdanau { attn_dim } => ChiForm::Bahdanau { attn_dim },
            SoftmaxScore::Luong => ChiForm::Luong,
        };
        SoftmaxAttention { score: Score::new(store, name, GROUP_EMB, f, ds, dc, rng) }
    }
    /// `(Σᵢ αᵢ sᵢ [B, ds], α [B, T])`; padded items get weight 0.
    pub fn forward(&self, mem: &Tensor<T>, q: &Tensor<T>, mask: Option<&Tensor<T>>) -> (Tensor<T>, Tensor<T>) {
        let mut s = self.score.scores(mem, q);
        if let Some(m) = mask {
            // −1e9 on padding: exp underflows to exactly 0.
            s = s.add(&m.sub_scalar(1.0).mul_scalar(1e9));
        }
        let alpha = s.softmax(1);
        (alpha.unsqueeze(2).mul(mem).sum_axis(1, false), alpha)
    }
}

/// Tiny instance: B = 2, T = 3, ds = 3, dc = 2, second sequence has one padded item.
pub fn gradcheck_instance(form: ChiForm) -> chi_nn::gradcheck::ModelInstance {
    let mut rng = Rng::new(41);
    let mut store = ParamStore::new();
    let att = CaAttention::new(&mut store, "att", form, 3, 2, &mut rng);
    chi_nn::gradcheck::perturb(&store, &mut rng);
    let mem = Tensor::randn(&[2, 3, 3], &mut rng);
    let q = Tensor::randn(&[2, 2], &mut rng);
    let mask = Tensor::from_vec(vec![1.0, 1.0, 1.0, 1.0, 1.0, 0.0], &[2, 3]);
    super::instance(store, vec![mem, q], move |xs| att.forward(&xs[0], &xs[1], Some(&mask)).0)
}
