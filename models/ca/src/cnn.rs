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

/// Stacked CA-CNN (§4.6.3): `layers` [`CaConv2d`] layers with "same" padding, each followed by
/// an activation, `x → act(CaConv2d_1(x)) → … → act(CaConv2d_L(·))`. Every layer's χ filter is in
/// group `chi` and its convolution and default `w0` in group `emb`, so the `em_steps` schedule
/// (§4.2.1; the paper needs it at 16 layers) alternates between the gates and the filters.
pub struct CaCnnStack<T: Float> {
    /// The layers, input first.
    pub layers: Vec<CaConv2d<T>>,
    /// Activation after every layer (`Relu` in the experiments).
    pub act: Activation,
}

impl<T: Float> CaCnnStack<T> {
    /// `layers ≥ 1` layers `cin → channels → … → channels` with odd `k×k` kernels; parameters
    /// `{name}.{i}.*`. Errors on zero layers or channels or an even kernel.
    #[allow(clippy::too_many_arguments)]
    pub fn new(store: &mut ParamStore<T>, name: &str, cin: usize, channels: usize, layers: usize, k: usize, act: Activation, rng: &mut Rng) -> Result<Self, String> {
        if layers == 0 || channels == 0 || cin == 0 {
            return Err(format!("stacked CA-CNN: need at least one layer, input channel and channel (got {layers} layers, {cin} → {channels} channels)"));
        }
        if k % 2 == 0 {
            return Err(format!("stacked CA-CNN: kernel {k} must be odd (same padding k/2 keeps the spatial size)"));
        }
        let layers = (0..layers).map(|i| CaConv2d::new(store, &format!("{name}.{i}"), if i == 0 { cin } else { channels }, channels, k, 1, k / 2, rng)).collect();
        Ok(CaCnnStack { layers, act })
    }
    /// The output `[N, channels, H, W]` and every layer's σ-map `[N, 1, H, W]`.
    pub fn forward_with_maps(&self, x: &Tensor<T>) -> (Tensor<T>, Vec<Tensor<T>>) {
        let mut h = x.clone();
        let mut maps = Vec::with_capacity(self.layers.len());
        for l in &self.layers {
            let (w, chi) = l.forward(&h);
            h = self.act.apply(&w);
            maps.push(chi);
        }
        (h, maps)
    }
    /// The output.
    pub fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        self.forward_with_maps(x).0
    }
}

/// Tiny stacked instance: 3 layers, 1 → 2 channels, 3×3, tanh, on a `[2, 1, 4, 4]` input.
pub fn stack_gradcheck_instance() -> chi_nn::gradcheck::ModelInstance {
    let mut rng = Rng::new(53);
    let mut store = ParamStore::new();
    let stack = CaCnnStack::new(&mut store, "castack", 1, 2, 3, 3, Activation::Tanh, &mut rng).expect("valid shapes");
    chi_nn::gradcheck::perturb(&store, &mut rng);
    let x = Tensor::randn(&[2, 1, 4, 4], &mut rng);
    super::instance(store, vec![x], move |xs| stack.forward(&xs[0]))
}
