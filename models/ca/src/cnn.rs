//! CA-CNN ([CAML](crate#references) §3.5.1): CA-NN applied to every patch, i.e. a convolution with a gate.
//!
//! ```text
//! v(c) = W ⋆ c + b                    (Eq. 40: a convolution, `Cout` output channels)
//! χ(c) = σ(w_χ ⋆ c + b_χ)             (Eq. 39 per patch: one value per spatial position)
//! w    = χ ⊙ v + (1 − χ) ⊙ w0          (Eq. 38; w0 ∈ R^Cout, one default per output channel)
//! ```
//!
//! The per-position χ is the paper's "σ-map" (Fig. 6, 18): near 1 where the patch is relevant
//! (foreground), near 0 where the layer returns its default `w0` (background). It is returned by
//! [`CaConv2d::forward`] for plotting.
//!
//! Choices where the paper is silent: `v` linear (Eq. 40's "linear case"; configurable
//! `v_act`), He-uniform kernels, zero biases, `w0 = 0`.

use super::{Activation, GROUP_CHI, GROUP_EMB};
use chi_nn::params::{init, Param, ParamStore};
use chi_autodiff::{Float, Rng, Tensor};

/// A context-aware 2-D convolution layer.
pub struct CaConv2d<T: Float> {
    /// `[Cout, Cin, k, k]` (group `emb`).
    pub w: Param<T>,
    /// `[Cout]`.
    pub b: Param<T>,
    /// `[1, Cin, k, k]` χ filter (group `chi`).
    pub w_chi: Param<T>,
    /// `[1]`.
    pub b_chi: Param<T>,
    /// `[Cout]` default value per output channel (group `emb`).
    pub w0: Param<T>,
    /// Activation of `v` (default identity, Eq. 40).
    pub v_act: Activation,
    /// Stride.
    pub stride: usize,
    /// Zero padding.
    pub padding: usize,
}

impl<T: Float> CaConv2d<T> {
    /// `cin → cout` channels, `k×k` kernel.
    #[allow(clippy::too_many_arguments)]
    pub fn new(store: &mut ParamStore<T>, name: &str, cin: usize, cout: usize, k: usize, stride: usize, padding: usize, rng: &mut Rng) -> Self {
        let fan = cin * k * k;
        let w = store.add(&format!("{name}.w"), GROUP_EMB, init::he_uniform(&[cout, cin, k, k], fan, rng));
        let b = store.add(&format!("{name}.b"), GROUP_EMB, init::zeros(&[cout]));
        let w_chi = store.add(&format!("{name}.w_chi"), GROUP_CHI, init::xavier_uniform(&[1, cin, k, k], fan, 1, 1.0, rng));
        let b_chi = store.add(&format!("{name}.b_chi"), GROUP_CHI, init::zeros(&[1]));
        let w0 = store.add(&format!("{name}.w0"), GROUP_EMB, init::zeros(&[cout]));
        CaConv2d { w, b, w_chi, b_chi, w0, v_act: Activation::Identity, stride, padding }
    }
    /// The σ-map `[N, 1, OH, OW]` of input `x: [N, Cin, H, W]`.
    pub fn sigma_map(&self, x: &Tensor<T>) -> Tensor<T> {
        x.conv2d(&self.w_chi.get(), Some(&self.b_chi.get()), self.stride, self.padding).sigmoid()
    }
    /// `(w [N, Cout, OH, OW], σ-map [N, 1, OH, OW])`.
    pub fn forward(&self, x: &Tensor<T>) -> (Tensor<T>, Tensor<T>) {
        let v = self.v_act.apply(&x.conv2d(&self.w.get(), Some(&self.b.get()), self.stride, self.padding));
        let chi = self.sigma_map(x);
        let co = self.w0.numel();
        let w0 = self.w0.get().reshape(&[1, co, 1, 1]);
        (super::edf(&chi, &v, &w0), chi)
    }
}

/// Tiny instance: N = 2, 2 → 3 channels, 4×4 image, 3×3 kernel, padding 1.
pub fn gradcheck_instance() -> chi_nn::gradcheck::ModelInstance {
    let mut rng = Rng::new(51);
    let mut store = ParamStore::new();
    let conv = CaConv2d::new(&mut store, "cacnn", 2, 3, 3, 1, 1, &mut rng);
    chi_nn::gradcheck::perturb(&store, &mut rng);
    let x = Tensor::randn(&[2, 2, 4, 4], &mut rng);
    super::instance(store, vec![x], move |xs| conv.forward(&xs[0]).0)
}
