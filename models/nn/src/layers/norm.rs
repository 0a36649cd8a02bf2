//! Layer normalisation.

use super::param_name;
use crate::module::{Layout, Module, Parameterized};
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
/// differentiable to any order. Parameters: `{prefix}.gamma` (ones), `{prefix}.beta` (zeros)
/// in a store; in the [state dict](crate::state_dict) `weight` and `bias`, as
/// `torch.nn.LayerNorm`.
pub struct LayerNorm<T: Float> {
    /// Scale `γ [d]` (if affine).
    pub gamma: Option<Param<T>>,
    /// Shift `β [d]` (if affine).
    pub beta: Option<Param<T>>,
    dim: usize,
    eps: f64,
}

impl<T: Float> LayerNorm<T> {
    /// A free-standing affine layer norm over a last axis of `dim` (`eps = 1e-5`, PyTorch's
    /// default): parameters `weight` (ones) and `bias` (zeros).
    pub fn new(dim: usize) -> Self {
        let gamma = Some(Param::new("weight", init::constant(&[dim], 1.0)));
        let beta = Some(Param::new("bias", init::zeros(&[dim])));
        LayerNorm { gamma, beta, dim, eps: 1e-5 }
    }
    /// Another `eps` (added to the variance). Panics unless it is finite and > 0 (a NaN or a
    /// negative one gives NaN outputs).
    #[track_caller]
    pub fn eps(mut self, eps: f64) -> Self {
        assert!(eps.is_finite() && eps > 0.0, "LayerNorm: eps {eps} must be finite and > 0");
        self.eps = eps;
        self
    }
    /// Without the affine parameters.
    pub fn no_affine(mut self) -> Self {
        self.gamma = None;
        self.beta = None;
        self
    }
    /// Normalises the last axis of size `dim`, with `γ`, `β` registered in `store` if
    /// `affine`; `eps` is added to the variance (1e-5 is usual).
    pub fn in_store(store: &mut ParamStore<T>, prefix: &str, group: &str, dim: usize, eps: f64, affine: bool) -> Self {
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

impl<T: Float> Parameterized<T> for LayerNorm<T> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
        if let Some(g) = &self.gamma {
            f("weight", g, Layout::Native);
        }
        if let Some(b) = &self.beta {
            f("bias", b, Layout::Native);
        }
    }
}

impl<T: Float> Module<T> for LayerNorm<T> {
    fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        LayerNorm::forward(self, x)
    }
}
