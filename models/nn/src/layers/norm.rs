//! Layer normalisation.

use super::param_name;
use crate::params::{init, Param, ParamStore};
use chi_autodiff::{Float, Tensor};

/// Layer normalisation over the last axis (Ba et al. 2016): `x [.., d]` → `[.., d]`,
///
/// ```text
/// μ = mean(x),  σ² = mean((x − μ)²)            (biased variance, over the last axis)
/// y = (x − μ) / √(σ² + eps) · γ + β            (γ, β ∈ ℝᵈ only if `affine`)
/// ```
///
/// A composite of differentiable ops (`mean_axis`, `sub`, `square`, `sqrt`, `div`), so it is
/// differentiable to any order. Parameters: `{prefix}.gamma` (ones), `{prefix}.beta` (zeros).
pub struct LayerNorm<T: Float> {
    /// Scale `γ [d]` (if affine).
    pub gamma: Option<Param<T>>,
    /// Shift `β [d]` (if affine).
    pub beta: Option<Param<T>>,
    dim: usize,
    eps: f64,
}

impl<T: Float> LayerNorm<T> {
    /// Normalises the last axis of size `dim`; `eps` is added to the variance (1e-5 is usual).
    pub fn new(store: &mut ParamStore<T>, prefix: &str, group: &str, dim: usize, eps: f64, affine: bool) -> Self {
        let (gamma, beta) = if affine {
            (
                Some(store.add(&param_name(prefix, "gamma"), group, init::constant(&[dim], 1.0))),
                Some(store.add(&param_name(prefix, "beta"), group, init::zeros(&[dim]))),
            )
        } else {
            (None, None)
        };
        LayerNorm { gamma, beta, dim, eps }
    }
    /// Normalised size.
    pub fn dim(&self) -> usize {
        self.dim
    }
    /// `x [.., d]` → normalised `[.., d]`.
    #[track_caller]
    pub fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        assert!(x.rank() >= 1 && x.dim(-1) == self.dim, "LayerNorm: input {:?} does not end in {}", x.shape(), self.dim);
        let mu = x.mean_axis(-1, true);
        let xc = x.sub(&mu);
        let var = xc.square().mean_axis(-1, true);
        let y = xc.div(&var.add_scalar(self.eps).sqrt());
        let y = match &self.gamma {
            Some(g) => y.mul(&g.get()),
            None => y,
        };
        match &self.beta {
            Some(b) => y.add(&b.get()),
            None => y,
        }
    }
}
