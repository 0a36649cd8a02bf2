//! CA-NN ([CAML](crate#references) §3.5, Eq. 38–39): a generic context-aware layer
//!
//! ```text
//! w = χ(c)·v(c) + (1 − χ(c))·w0,   χ(c) = σ(vᵀc + b),   v(c) = h(W·c + b_v)
//! ```
//!
//! `c` is the layer input, `w0` a learned "default value" vector returned when the input is
//! judged irrelevant (χ → 0), and χ a **scalar** gate per example (Eq. 39 maps `c` to one value).
//!
//! Choices where the paper is silent (all in [`CaNnConfig`]):
//! * `h` = `tanh` (the paper's §4.5.1 "simple linear mapping with tanh activation").
//! * `W` Xavier-uniform, `b_v = 0`; χ weights `N(0, 1/dim c)`, χ bias `chi_bias_init = 0`
//!   (χ starts near ½); `w0 = 0`.
//! * Layers stack by feeding one layer's `w` as the next layer's `c` ([`CaNn`]), as in the
//!   paper's "stacked two layers" of §4.5.1; an optional linear readout maps the last `w` to the
//!   target dimension.

use super::{edf, Activation, Dense, GROUP_CHI, GROUP_EMB, GROUP_HEAD};
use chi_nn::params::{init, Param, ParamStore};
use chi_autodiff::{Float, Rng, Tensor};

/// Options of a CA-NN layer.
#[derive(Clone, Copy, Debug)]
pub struct CaNnConfig {
    /// Activation `h` of `v(c) = h(Wc + b)` (default `tanh`).
    pub v_act: Activation,
    /// Initial χ bias (default 0: χ ≈ ½ at start).
    pub chi_bias_init: f64,
}

impl Default for CaNnConfig {
    fn default() -> Self {
        CaNnConfig { v_act: Activation::Tanh, chi_bias_init: 0.0 }
    }
}

/// One CA-NN layer (Eq. 38).
pub struct CaNnLayer<T: Float> {
    /// `v(c) = h(W c + b)`; parameters in group `emb`.
    pub v: Dense<T>,
    /// χ weight `v` of Eq. 39, `[dim c]` (group `chi`).
    pub chi_w: Param<T>,
    /// χ bias, `[1]` (group `chi`).
    pub chi_b: Param<T>,
    /// Default vector `w0`, `[dim w]` (group `emb`).
    pub w0: Param<T>,
}

impl<T: Float> CaNnLayer<T> {
    /// A layer `din → dout` with parameters named `{name}.*`.
    pub fn new(store: &mut ParamStore<T>, name: &str, din: usize, dout: usize, cfg: CaNnConfig, rng: &mut Rng) -> Self {
        let v = Dense::new(store, &format!("{name}.v"), GROUP_EMB, din, dout, true, cfg.v_act, rng);
        let chi_w = store.add(&format!("{name}.chi_w"), GROUP_CHI, init::normal(&[din], (1.0 / din as f64).sqrt(), rng));
        let chi_b = store.add(&format!("{name}.chi_b"), GROUP_CHI, init::constant(&[1], cfg.chi_bias_init));
        let w0 = store.add(&format!("{name}.w0"), GROUP_EMB, init::zeros(&[dout]));
        CaNnLayer { v, chi_w, chi_b, w0 }
    }
    /// χ(c) = σ(vᵀc + b) for `c: [B, din]` → `[B, 1]`.
    pub fn chi(&self, c: &Tensor<T>) -> Tensor<T> {
        let k = self.chi_w.numel();
        c.matmul(&self.chi_w.get().reshape(&[k, 1])).add(&self.chi_b.get()).sigmoid()
    }
    /// `w = χ(c) v(c) + (1 − χ(c)) w0` for `c: [B, din]` → `[B, dout]`.
    pub fn forward(&self, c: &Tensor<T>) -> Tensor<T> {
        edf(&self.chi(c), &self.v.forward(c), &self.w0.get())
    }
}

/// Stacked CA-NN layers with an optional linear readout.
pub struct CaNn<T: Float> {
    /// The layers, applied in order.
    pub layers: Vec<CaNnLayer<T>>,
    /// Linear readout (group `head`).
    pub readout: Option<Dense<T>>,
}

impl<T: Float> CaNn<T> {
    /// `dims = [din, h1, …, hk]` gives k CA-NN layers; `readout = Some(dout)` adds `W·w + b`.
    pub fn new(store: &mut ParamStore<T>, name: &str, dims: &[usize], readout: Option<usize>, cfg: CaNnConfig, rng: &mut Rng) -> Self {
        let layers = dims.windows(2).enumerate().map(|(i, d)| CaNnLayer::new(store, &format!("{name}.l{i}"), d[0], d[1], cfg, rng)).collect();
        let last = *dims.last().unwrap();
        let readout = readout.map(|o| Dense::new(store, &format!("{name}.out"), GROUP_HEAD, last, o, true, Activation::Identity, rng));
        CaNn { layers, readout }
    }
    /// Forward through every layer and the readout.
    pub fn forward(&self, c: &Tensor<T>) -> Tensor<T> {
        let mut h = c.clone();
        for l in &self.layers {
            h = l.forward(&h);
        }
        match &self.readout {
            Some(r) => r.forward(&h),
            None => h,
        }
    }
    /// χ of every layer at input `c` (each `[B, 1]`).
    pub fn chis(&self, c: &Tensor<T>) -> Vec<Tensor<T>> {
        let mut h = c.clone();
        let mut out = Vec::new();
        for l in &self.layers {
            out.push(l.chi(&h));
            h = l.forward(&h);
        }
        out
    }
}

/// Tiny instance: 2 stacked layers 3 → 4 → 2 and a readout to 1, batch 5.
pub fn gradcheck_instance() -> chi_nn::gradcheck::ModelInstance {
    let mut rng = Rng::new(21);
    let mut store = ParamStore::new();
    let m = CaNn::new(&mut store, "cann", &[3, 4, 2], Some(1), CaNnConfig::default(), &mut rng);
    chi_nn::gradcheck::perturb(&store, &mut rng);
    let x = Tensor::randn(&[5, 3], &mut rng);
    super::instance(store, vec![x], move |xs| m.forward(&xs[0]))
}

