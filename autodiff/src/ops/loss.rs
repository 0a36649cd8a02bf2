//! Loss functions: cross-entropy (class indices or soft targets), binary cross-entropy with
//! logits, mean squared error, mean absolute error.
//!
//! Every loss is composed from differentiable ops (`log_softmax`, `take`, `softplus`, …), so it
//! is differentiable to any order, and each is numerically stable for large logits:
//! cross-entropy goes through `log_softmax` (`x − logsumexp(x)`, never `ln(softmax)`), and
//! BCE uses `softplus(x) − x·t`, which equals `−t·ln σ(x) − (1−t)·ln(1−σ(x))` without
//! forming `σ(x)`.
//!
//! Each loss has a `*_with` form taking a [`Reduction`]; the plain form averages.

use crate::tensor::Tensor;
use crate::Float;
use std::rc::Rc;

/// How per-element (or per-sample) losses are combined.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reduction {
    /// The mean (the default).
    #[default]
    Mean,
    /// The sum.
    Sum,
    /// No reduction: the per-sample (cross-entropy: `[N]`) or per-element losses.
    None,
}

impl Reduction {
    /// Applies this reduction to a tensor of losses.
    #[track_caller]
    pub fn apply<T: Float>(self, losses: &Tensor<T>) -> Tensor<T> {
        match self {
            Reduction::Mean => losses.mean(),
            Reduction::Sum => losses.sum(),
            Reduction::None => losses.clone(),
        }
    }
}

#[track_caller]
fn same_shape<T: Float>(op: &str, a: &Tensor<T>, b: &Tensor<T>, what: (&str, &str)) {
    assert!(a.shape() == b.shape(), "{op}: {} {:?} and {} {:?} differ in shape", what.0, a.shape(), what.1, b.shape());
}

impl<T: Float> Tensor<T> {
    /// Cross-entropy of `[N, C]` logits against class indices, averaged over the batch:
    /// `mean_n (logsumexp(xₙ) − xₙ[tₙ])`. Stable for any logit magnitude.
    ///
    /// Panics (naming the sample, the index and the class count) if a target is `≥ C`.
    ///
    /// ```
    /// use chi_autodiff::Tensor;
    /// let logits = Tensor::<f64>::from_vec(vec![0.0, 0.0, 1e4, -1e4], &[2, 2]);
    /// let l = logits.cross_entropy(&[1, 0]);
    /// assert!((l.item() - 2f64.ln() / 2.0).abs() < 1e-12); // sample 2 is certain and right
    /// ```
    #[track_caller]
    pub fn cross_entropy(&self, targets: &[usize]) -> Tensor<T> {
        self.cross_entropy_with(targets, Reduction::Mean)
    }

    /// [`Tensor::cross_entropy`] with a chosen [`Reduction`] (`None` gives the `[N]` per-sample
    /// losses).
    #[track_caller]
    pub fn cross_entropy_with(&self, targets: &[usize], reduction: Reduction) -> Tensor<T> {
        assert!(self.rank() == 2, "cross_entropy: logits must be [N, C], got {:?}", self.shape());
        let (n, c) = (self.shape()[0], self.shape()[1]);
        assert!(targets.len() == n, "cross_entropy: {} targets for logits {:?} (N = {n})", targets.len(), self.shape());
        assert!(n > 0 || reduction != Reduction::Mean, "cross_entropy: no samples (logits {:?}): the mean over zero samples is undefined", self.shape());
        let idx: Vec<usize> = targets
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                assert!(t < c, "cross_entropy: target {t} of sample {i} is out of range for {c} classes (logits {:?})", self.shape());
                i * c + t
            })
            .collect();
        let nll = self.log_softmax(1).take(Rc::new(idx), &[n]).neg();
        reduction.apply(&nll)
    }

    /// Cross-entropy against soft targets (probabilities, e.g. label smoothing or distillation),
    /// both `[N, C]`: `mean_n −Σ_c pₙ꜀·log_softmax(xₙ)꜀`. Differentiable in both arguments.
    #[track_caller]
    pub fn cross_entropy_soft(&self, target_probs: &Tensor<T>) -> Tensor<T> {
        self.cross_entropy_soft_with(target_probs, Reduction::Mean)
    }

    /// [`Tensor::cross_entropy_soft`] with a chosen [`Reduction`] over the batch.
    #[track_caller]
    pub fn cross_entropy_soft_with(&self, target_probs: &Tensor<T>, reduction: Reduction) -> Tensor<T> {
        assert!(self.rank() == 2, "cross_entropy_soft: logits must be [N, C], got {:?}", self.shape());
        same_shape("cross_entropy_soft", self, target_probs, ("logits", "target probabilities"));
        let per_sample = self.log_softmax(1).mul(target_probs).sum_axis(1, false).neg();
        reduction.apply(&per_sample)
    }

    /// Binary cross-entropy on logits, averaged: `mean(softplus(x) − x·t)` with targets
    /// `t ∈ [0, 1]` of the same shape. Stable for any logit magnitude (no `σ(x)` is formed).
    ///
    /// ```
    /// use chi_autodiff::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![100.0, -100.0], &[2]);
    /// let t = Tensor::from_vec(vec![0.0, 0.0], &[2]);
    /// assert!((x.binary_cross_entropy_with_logits(&t).item() - 50.0).abs() < 1e-3);
    /// ```
    #[track_caller]
    pub fn binary_cross_entropy_with_logits(&self, targets: &Tensor<T>) -> Tensor<T> {
        self.binary_cross_entropy_with_logits_with(targets, Reduction::Mean)
    }

    /// [`Tensor::binary_cross_entropy_with_logits`] with a chosen [`Reduction`].
    #[track_caller]
    pub fn binary_cross_entropy_with_logits_with(&self, targets: &Tensor<T>, reduction: Reduction) -> Tensor<T> {
        same_shape("binary_cross_entropy_with_logits", self, targets, ("logits", "targets"));
        reduction.apply(&self.softplus().sub(&self.mul(targets)))
    }

    /// Mean squared error `mean((a − b)²)`; shapes must match.
    #[track_caller]
    pub fn mse_loss(&self, other: &Tensor<T>) -> Tensor<T> {
        self.mse_loss_with(other, Reduction::Mean)
    }

    /// [`Tensor::mse_loss`] with a chosen [`Reduction`].
    #[track_caller]
    pub fn mse_loss_with(&self, other: &Tensor<T>, reduction: Reduction) -> Tensor<T> {
        same_shape("mse_loss", self, other, ("input", "target"));
        reduction.apply(&self.sub(other).square())
    }

    /// Mean absolute error `mean(|a − b|)`; shapes must match. (Gradient 0 where `a == b`.)
    #[track_caller]
    pub fn l1_loss(&self, other: &Tensor<T>) -> Tensor<T> {
        self.l1_loss_with(other, Reduction::Mean)
    }

    /// [`Tensor::l1_loss`] with a chosen [`Reduction`].
    #[track_caller]
    pub fn l1_loss_with(&self, other: &Tensor<T>, reduction: Reduction) -> Tensor<T> {
        same_shape("l1_loss", self, other, ("input", "target"));
        reduction.apply(&self.sub(other).abs())
    }
}
