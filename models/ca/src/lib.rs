//! The context-aware model family of *Context Aware Machine Learning* (Yun Zeng).
//!
//! Every model here is one instance of the Embedding Decomposition Formula (EDF, Eq. 12)
//!
//! ```text
//! w = χ(w, c)·v_c + (1 − χ(w, c))·w'
//! ```
//!
//! with a different choice of the χ-function (a gate in `[0, 1]`), the context-free part `v`
//! and the context-sensitive part `w'`:
//!
//! | module | model | paper |
//! |---|---|---|
//! | [`sem`] | CA-SEM: closed-form block-coordinate sentence re-embedding (no backprop) | §3.1, Alg. 1, Eq. 16–18 |
//! | [`bsfe`] | CA-EM / CA-BSFE: bag-of-sparse-features embedding, χ̃(w;θ) = σ(θᵀw_σ) | §3.2, Eq. 19–22 |
//! | [`att`] | CA-ATT: unnormalised context-aware attention | §3.3, Eq. 23, 25, 26, 43 |
//! | [`rnn`] | CA-RNN: two scalar gates, vector peephole | §3.4, Eq. 34, 36 |
//! | [`ca_nn`] | CA-NN: w = χ(c)v(c) + (1 − χ(c))w0 | §3.5, Eq. 38–39 |
//! | [`cnn`] | CA-CNN: CA-NN per patch as a convolution, with its σ-map | §3.5.1, Eq. 40 |
//! | [`res`] | CA-RES: multi-layer CA-NN controlled by (l, n_v, n_σ, b) | §3.5.2, Eq. 42 |
//!
//! All layers are generic over the element type (`f32` for training, `f64` for gradient checks)
//! and take their parameters from a [`ParamStore`]. Parameters are put in named *groups* so the
//! block-coordinate `em_steps` schedule (§4.2.1) can freeze the χ-parameters and the embeddings
//! alternately: group [`GROUP_CHI`] holds every χ-function parameter.
//!
//! Whole-model gradient checks of tiny `f64` instances of each model are in
//! [`gradcheck_cases`] (for `chi gradcheck --model`) and in `models/ca/tests/suite/ca.rs`.
//!
//! ## References
//!
//! - **\[CAML\]** Yun Zeng, *Context Aware Machine Learning*.

pub mod att;
pub mod bsfe;
pub mod cnn;
pub mod ca_nn;
pub mod res;
pub mod rnn;
pub mod sem;

pub use att::{CaAttention, ChiForm, SoftmaxAttention, SoftmaxScore};
pub use bsfe::{BagAverage, CaBsfe, LogisticHead, Vocab, OOV};
pub use cnn::CaConv2d;
pub use ca_nn::{CaNn, CaNnConfig, CaNnLayer};
pub use res::{CaRes, CaResConfig};
pub use rnn::{CaRnnCell, CaRnnConfig, Peephole};
pub use sem::{CaSem, CaSemOptions, IterStats, StopRule};

pub use chi_nn::Activation;
use chi_nn::gradcheck::{ModelCase, ModelInstance};
use chi_nn::params::{Param, ParamStore};
use chi_autodiff::{Float, Rng, Tensor};

/// Group of every χ-function parameter (θ and w_σ of CA-BSFE, gate weights elsewhere).
pub const GROUP_CHI: &str = "chi";
/// Group of embeddings / context-free and context-sensitive parts (w', v0, v(·), w0).
pub const GROUP_EMB: &str = "emb";
/// Group of output heads (never frozen by `em_steps`).
pub const GROUP_HEAD: &str = "head";

/// A dense layer `act(x·W + b)` used inside the CA models (v(·) networks, heads): chi-nn's one
/// affine layer, [`Linear`](chi_nn::Linear) (`W: [in, out]`, Xavier-uniform; zero bias), followed
/// by an [`Activation`].
pub struct Dense<T: Float> {
    /// The affine map: parameters `{name}.weight` `[in, out]` and `{name}.bias`.
    pub linear: chi_nn::Linear<T>,
    /// Activation.
    pub act: Activation,
}

impl<T: Float> Dense<T> {
    /// A new layer with parameters `{name}.weight`, `{name}.bias` in `group`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(store: &mut ParamStore<T>, name: &str, group: &str, din: usize, dout: usize, bias: bool, act: Activation, rng: &mut Rng) -> Self {
        Dense { linear: chi_nn::Linear::in_store(store, name, group, din, dout, bias, rng), act }
    }
    /// `act(x·W + b)` for `x: […, in]`.
    pub fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        self.act.apply(&self.linear.forward(x))
    }
    /// Input size.
    pub fn din(&self) -> usize {
        self.linear.in_features()
    }
    /// Output size.
    pub fn dout(&self) -> usize {
        self.linear.out_features()
    }
}

impl<T: Float> chi_nn::Parameterized<T> for Dense<T> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, chi_nn::Layout)) {
        self.linear.visit_parameters(f);
    }
}

/// A [`Dense`] layer is a module: `act(x·W + b)`.
impl<T: Float> chi_nn::Module<T> for Dense<T> {
    fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        Dense::forward(self, x)
    }
}

/// `χ·v + (1 − χ)·w0`, written `w0 + χ·(v − w0)` (one fewer op); broadcasting.
pub fn edf<T: Float>(chi: &Tensor<T>, v: &Tensor<T>, w0: &Tensor<T>) -> Tensor<T> {
    w0.add(&chi.mul(&v.sub(w0)))
}

/// Whole-model gradient-check cases of the CA family (tiny `f64` instances), for
/// the `chi` program's model registry (`chi gradcheck --model`).
pub fn gradcheck_cases() -> Vec<ModelCase> {
    vec![
        ModelCase { name: "ca-bsfe", build: bsfe::gradcheck_instance },
        ModelCase { name: "ca-att", build: || att::gradcheck_instance(ChiForm::Sigmoid) },
        ModelCase { name: "ca-att-bahdanau", build: || att::gradcheck_instance(ChiForm::Bahdanau { attn_dim: 3 }) },
        ModelCase { name: "ca-att-luong", build: || att::gradcheck_instance(ChiForm::Luong) },
        ModelCase { name: "ca-rnn", build: rnn::gradcheck_instance },
        ModelCase { name: "ca-nn", build: ca_nn::gradcheck_instance },
        ModelCase { name: "ca-cnn", build: cnn::gradcheck_instance },
        ModelCase { name: "ca-res", build: res::gradcheck_instance },
    ]
}

#[doc(hidden)]
pub fn instance(store: ParamStore<f64>, inputs: Vec<Tensor<f64>>, loss: impl Fn(&[Tensor<f64>]) -> Tensor<f64> + 'static) -> ModelInstance {
    ModelInstance { store, inputs, loss: Box::new(loss) }
}
