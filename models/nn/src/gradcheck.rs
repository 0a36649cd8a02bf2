//! Whole-model gradient checks: the gradient of a model's loss with respect to every parameter,
//! against float64 central differences (`chi gradcheck --model NAME` and the layer tests).

use crate::params::ParamStore;
use chi_autodiff::{gradcheck, GradcheckOptions, GradcheckReport, Tensor};

/// Gradchecks `loss` (a closure that runs the model forward using its parameters and any fixed
/// inputs, returning any tensor) with respect to every unfrozen parameter in `store`, plus the
/// extra `inputs` passed to it (e.g. the input batch, to check input gradients too).
///
/// Each parameter's value is temporarily replaced by the checker's leaf, so the closure must
/// read parameters with [`crate::params::Param::get`] at call time.
pub fn check_model(
    store: &ParamStore<f64>,
    inputs: &[Tensor<f64>],
    loss: impl Fn(&[Tensor<f64>]) -> Tensor<f64>,
    opts: &GradcheckOptions,
) -> Result<GradcheckReport, GradcheckReport> {
    let params: Vec<_> = store.params().iter().filter(|p| !p.is_frozen()).cloned().collect();
    let originals: Vec<Tensor<f64>> = params.iter().map(|p| p.get()).collect();
    let mut all: Vec<Tensor<f64>> = inputs.to_vec();
    all.extend(originals.iter().map(|t| t.detach()));
    let n_in = inputs.len();
    let f = |xs: &[Tensor<f64>]| {
        for (p, x) in params.iter().zip(&xs[n_in..]) {
            p.replace(x.clone());
        }
        loss(&xs[..n_in])
    };
    let r = gradcheck(f, &all, opts);
    for (p, o) in params.iter().zip(originals) {
        p.replace(o);
    }
    r
}

use crate::layers::{
    run_sequence_batch, stack_outputs, Activation, AdditiveScore, Attention, AttentionScore, ConcatScore, Conv1dText, Conv2d, DotScore, GeneralScore,
    GruCell, GruVariant, LstmCell, MaxPool2d, RecurrentCell, SelfAttention,
};
use crate::params::{init, ParamStore as Store};
use chi_autodiff::{gradgradcheck, Rng};

/// Adds `N(0, 0.3²)` noise to every parameter of `store`, so a check does not run at special
/// values (zero biases, identity-like initialisations) that can hide a wrong gradient.
pub fn perturb(store: &Store<f64>, rng: &mut Rng) {
    for p in store.params() {
        let noise: Vec<f64> = (0..p.numel()).map(|_| 0.3 * rng.normal()).collect();
        p.update(|v| v.iter_mut().zip(&noise).for_each(|(a, b)| *a += b));
    }
}

/// [`check_model`] at order 1, or its second-order counterpart ([`gradgradcheck`]) at order 2,
/// with respect to every unfrozen parameter and the extra `inputs`.
pub fn check_model_order(
    store: &Store<f64>,
    inputs: &[Tensor<f64>],
    loss: impl Fn(&[Tensor<f64>]) -> Tensor<f64>,
    order: u32,
    opts: &GradcheckOptions,
) -> Result<GradcheckReport, GradcheckReport> {
    if order < 2 {
        return check_model(store, inputs, loss, opts);
    }
    let params: Vec<_> = store.params().iter().filter(|p| !p.is_frozen()).cloned().collect();
    let originals: Vec<Tensor<f64>> = params.iter().map(|p| p.get()).collect();
    let n_in = inputs.len();
    let mut all = inputs.to_vec();
    all.extend(originals.iter().map(|t| t.detach()));
    let f = |xs: &[Tensor<f64>]| {
        for (p, x) in params.iter().zip(&xs[n_in..]) {
            p.replace(x.clone());
        }
        loss(&xs[..n_in])
    };
    let r = gradgradcheck(f, &all, opts);
    for (p, o) in params.iter().zip(originals) {
        p.replace(o);
    }
    r
}

/// A model whose whole-graph gradient `chi gradcheck --model` can check.
pub struct ModelCase {
    /// Name.
    pub name: &'static str,
    /// Builds the parameters, fixed inputs and the loss closure of a tiny instance.
    pub build: fn() -> ModelInstance,
}

/// A closure running a model on the checked inputs and returning its output or loss.
pub type LossFn = Box<dyn Fn(&[Tensor<f64>]) -> Tensor<f64>>;

/// A tiny model instance for a gradient check.
pub struct ModelInstance {
    /// The model's parameters.
    pub store: Store<f64>,
    /// Inputs whose gradients are checked too.
    pub inputs: Vec<Tensor<f64>>,
    /// Runs the model and returns its output or loss.
    pub loss: LossFn,
}

fn mlp_instance() -> ModelInstance {
    let mut rng = Rng::new(11);
    let mut store = Store::new();
    let w1 = store.add("fc1.weight", "mlp", init::xavier_normal(&[3, 4], 3, 4, 1.0, &mut rng));
    let b1 = store.add("fc1.bias", "mlp", init::normal(&[4], 0.1, &mut rng));
    let w2 = store.add("fc2.weight", "mlp", init::xavier_normal(&[4, 2], 4, 2, 1.0, &mut rng));
    let x = Tensor::randn(&[5, 3], &mut rng);
    let loss = move |xs: &[Tensor<f64>]| xs[0].matmul(&w1.get()).add(&b1.get()).tanh().matmul(&w2.get()).log_softmax(1);
    ModelInstance { store, inputs: vec![x], loss: Box::new(loss) }
}

/// A recurrent cell over 4 steps of a batch of 2 (second sequence 2 steps long, so the
/// padding mask is checked too), 3 → 4; output: every step's output and the final state.
fn recurrent_instance(make: fn(&mut Store<f64>, &mut Rng) -> Box<dyn RecurrentCell<f64>>) -> ModelInstance {
    let mut rng = Rng::new(12);
    let mut store = Store::new();
    let cell = make(&mut store, &mut rng);
    perturb(&store, &mut rng);
    let xs = Tensor::randn(&[2, 4, 3], &mut rng); // [B, T, in]
    let loss = move |x: &[Tensor<f64>]| {
        let (outs, state) = run_sequence_batch(cell.as_ref(), &x[0], None, Some(&[4, 2]));
        Tensor::concat(&[stack_outputs(&outs).reshape(&[2, 16]), Tensor::concat(&state, 1)], 1)
    };
    ModelInstance { store, inputs: vec![xs], loss: Box::new(loss) }
}

/// Global attention of a query `[2, 3]` over 4 keys `[2, 4, 3]` and values `[2, 4, 2]`, one key
/// masked; output: context and weights. Query, keys and values are checked too.
fn attention_instance(make: fn(&mut Store<f64>, &mut Rng) -> Box<dyn AttentionScore<f64>>) -> ModelInstance {
    let mut rng = Rng::new(13);
    let mut store = Store::new();
    let att = Attention::new(make(&mut store, &mut rng));
    perturb(&store, &mut rng);
    let inputs = vec![Tensor::randn(&[2, 3], &mut rng), Tensor::randn(&[2, 4, 3], &mut rng), Tensor::randn(&[2, 4, 2], &mut rng)];
    let mask = [true, true, true, false, true, true, true, true];
    let loss = move |x: &[Tensor<f64>]| {
        let o = att.forward(&x[0], &x[1], &x[2], Some(&mask));
        Tensor::concat(&[o.context, o.weights], 1)
    };
    ModelInstance { store, inputs, loss: Box::new(loss) }
}

/// Self-attention (learned context vector) over `[2, 4, 3]` annotations, one step masked.
fn self_attention_instance() -> ModelInstance {
    let mut rng = Rng::new(14);
    let mut store = Store::new();
    let sa = SelfAttention::new(&mut store, "self_att", "att", 3, 4, &mut rng);
    perturb(&store, &mut rng);
    let mask = [true, true, true, false, true, true, true, true];
    let loss = move |x: &[Tensor<f64>]| sa.forward(&x[0], Some(&mask)).context;
    ModelInstance { store, inputs: vec![Tensor::randn(&[2, 4, 3], &mut rng)], loss: Box::new(loss) }
}

/// 3×3 convolution 2 → 3 channels (padding 1), tanh, 2×2 max-pooling, on `[1, 2, 6, 6]`.
fn conv2d_maxpool_instance() -> ModelInstance {
    let mut rng = Rng::new(15);
    let mut store = Store::new();
    let conv = Conv2d::in_store(&mut store, "conv", "conv", 2, 3, 3, 1, 1, true, &mut rng);
    perturb(&store, &mut rng);
    let pool = MaxPool2d::new(2, 2);
    let loss = move |x: &[Tensor<f64>]| pool.forward(&conv.forward(&x[0]).tanh());
    ModelInstance { store, inputs: vec![Tensor::randn(&[1, 2, 6, 6], &mut rng)], loss: Box::new(loss) }
}

/// Text convolution (Kim 2014): widths 2 and 3, 2 filters each, tanh, max over time, on
/// `[2, 6, 3]` word vectors.
fn text_conv1d_instance() -> ModelInstance {
    let mut rng = Rng::new(16);
    let mut store = Store::new();
    let conv = Conv1dText::in_store(&mut store, "textconv", "conv", 3, &[2, 3], 2, Activation::Tanh, &mut rng);
    perturb(&store, &mut rng);
    let loss = move |x: &[Tensor<f64>]| conv.forward(&x[0]);
    ModelInstance { store, inputs: vec![Tensor::randn(&[2, 6, 3], &mut rng)], loss: Box::new(loss) }
}

/// Whole-layer gradient-check cases of this crate's layers: an MLP, recurrent cells over a
/// masked sequence, attention with each score, self-attention and the convolutions. Model
/// families add their own (`chi gradcheck --model` lists them all).
pub fn layer_cases() -> Vec<ModelCase> {
    vec![
        ModelCase { name: "mlp", build: mlp_instance },
        ModelCase { name: "lstm", build: || recurrent_instance(|s, r| Box::new(LstmCell::new(s, "lstm", "rnn", 3, 4, false, r))) },
        ModelCase { name: "lstm-peephole", build: || recurrent_instance(|s, r| Box::new(LstmCell::new(s, "lstm", "rnn", 3, 4, true, r))) },
        ModelCase {
            name: "gru",
            build: || recurrent_instance(|s, r| Box::new(GruCell::new(s, "gru", "rnn", 3, 4, GruVariant::ResetBeforeMatmul, r))),
        },
        ModelCase {
            name: "gru-reset-after",
            build: || recurrent_instance(|s, r| Box::new(GruCell::new(s, "gru", "rnn", 3, 4, GruVariant::ResetAfterMatmul, r))),
        },
        ModelCase { name: "attention-bahdanau", build: || attention_instance(|s, r| Box::new(AdditiveScore::new(s, "bahdanau", "att", 3, 3, 5, r))) },
        ModelCase { name: "attention-luong", build: || attention_instance(|s, r| Box::new(GeneralScore::new(s, "luong", "att", 3, 3, r))) },
        ModelCase { name: "attention-luong-dot", build: || attention_instance(|_, _| Box::new(DotScore)) },
        ModelCase { name: "attention-luong-concat", build: || attention_instance(|s, r| Box::new(ConcatScore::new(s, "concat", "att", 3, 3, 5, r))) },
        ModelCase { name: "self-attention", build: self_attention_instance },
        ModelCase { name: "conv2d-maxpool", build: conv2d_maxpool_instance },
        ModelCase { name: "text-conv1d", build: text_conv1d_instance },
    ]
}

