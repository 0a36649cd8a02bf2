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

use crate::nn::{
    run_sequence_batch, stack_outputs, Activation, AdditiveScore, Attention, AttentionScore, ConcatScore, Conv1dText, Conv2d, DotScore, GeneralScore,
    GruCell, GruVariant, LstmCell, MaxPool2d, RecurrentCell, SelfAttention,
};
// Generic parameter values for the checks below: zero biases would hide bias-gradient bugs.
use crate::ca::nn::perturb;
use crate::params::{init, ParamStore as Store};
use crate::train::recurrent::CellKind;
use chi_autodiff::registry::{check_case, registry};
use chi_autodiff::Rng;
use clap::Args;

/// Options of `chi gradcheck`.
#[derive(Args, Debug, Clone)]
pub struct GradcheckArgs {
    /// Check only this op (see `--list`).
    #[arg(long)]
    pub op: Option<String>,
    /// Check a whole model's parameters instead of ops (`all` for every registered model).
    #[arg(long)]
    pub model: Option<String>,
    /// 1 = gradients (gradcheck), 2 = second derivatives (gradgradcheck).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=2))]
    pub order: u32,
    /// Random instances (shapes, broadcasts, values) per op.
    #[arg(long, default_value_t = 5)]
    pub instances: u64,
    /// Fast mode: random projections vᵀJu instead of every element.
    #[arg(long)]
    pub fast: bool,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
    /// List the registered ops and models.
    #[arg(long)]
    pub list: bool,
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
    let conv = Conv2d::new(&mut store, "conv", "conv", 2, 3, 3, 1, 1, true, &mut rng);
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
    let conv = Conv1dText::new(&mut store, "textconv", "conv", 3, &[2, 3], 2, Activation::Tanh, &mut rng);
    perturb(&store, &mut rng);
    let loss = move |x: &[Tensor<f64>]| conv.forward(&x[0]);
    ModelInstance { store, inputs: vec![Tensor::randn(&[2, 6, 3], &mut rng)], loss: Box::new(loss) }
}

/// Every model registered for whole-graph gradient checks. Model families append theirs here.
///
/// Besides the MLP: the layers of [`crate::nn`] (recurrent cells over a masked sequence,
/// attention with each score, convolutions), the `chi train` sequence classifiers end to end
/// with their cross-entropy (`seq-*`, [`crate::train::recurrent::gradcheck_instance`]), and the
/// context-aware models ([`crate::ca::gradcheck_cases`]).
pub fn model_registry() -> Vec<ModelCase> {
    let mut v = vec![
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
        ModelCase { name: "seq-lstm", build: || crate::train::recurrent::gradcheck_instance(CellKind::Lstm) },
        ModelCase { name: "seq-gru", build: || crate::train::recurrent::gradcheck_instance(CellKind::Gru) },
        ModelCase { name: "seq-ca-rnn", build: || crate::train::recurrent::gradcheck_instance(CellKind::CaRnn) },
    ];
    v.extend(crate::model_gradcheck_cases());
    v
}

fn print_row(json: bool, kind: &str, name: &str, order: u32, r: &Result<GradcheckReport, GradcheckReport>, shapes: &str) {
    let rep = match r {
        Ok(x) | Err(x) => x,
    };
    let status = if r.is_ok() { "PASS" } else { "FAIL" };
    if json {
        println!(
            "{{\"{kind}\":\"{name}\",\"order\":{order},\"max_abs_err\":{:e},\"max_rel_err\":{:e},\"checked\":{},\"passed\":{},\"shapes\":\"{}\"}}",
            rep.max_abs_err,
            rep.max_rel_err,
            rep.checked,
            r.is_ok(),
            shapes
        );
    } else {
        println!("{name:<22} order {order}  max abs err {:>9.2e}  max rel err {:>9.2e}  {status}", rep.max_abs_err, rep.max_rel_err);
        if let Err(e) = r {
            println!("    {e} (shapes {shapes})");
        }
    }
}

/// Runs `chi gradcheck`; returns an error (non-zero exit) if anything fails.
pub fn run_cli(args: &GradcheckArgs) -> Result<(), String> {
    let opts = GradcheckOptions { fast_mode: args.fast, ..Default::default() };
    if args.list {
        println!("ops:");
        for o in registry() {
            println!("  {}{}", o.name, if o.order2 { "" } else { " (order 1 only)" });
        }
        println!("models:");
        for m in model_registry() {
            println!("  {}", m.name);
        }
        return Ok(());
    }
    let (mut passed, mut failed) = (0usize, 0usize);
    if let Some(model) = &args.model {
        let cases: Vec<ModelCase> = model_registry().into_iter().filter(|m| model == "all" || m.name == model).collect();
        if cases.is_empty() {
            return Err(format!("no model named {model:?} (see chi gradcheck --list)"));
        }
        for m in cases {
            let inst = (m.build)();
            let r = if args.order == 2 {
                let params: Vec<_> = inst.store.params().to_vec();
                let originals: Vec<Tensor<f64>> = params.iter().map(|p| p.get()).collect();
                let n_in = inst.inputs.len();
                let mut all = inst.inputs.clone();
                all.extend(originals.iter().map(|t| t.detach()));
                let f = |xs: &[Tensor<f64>]| {
                    for (p, x) in params.iter().zip(&xs[n_in..]) {
                        p.replace(x.clone());
                    }
                    (inst.loss)(&xs[..n_in])
                };
                let r = chi_autodiff::gradgradcheck(f, &all, &opts);
                for (p, o) in params.iter().zip(originals) {
                    p.replace(o);
                }
                r
            } else {
                check_model(&inst.store, &inst.inputs, |xs| (inst.loss)(xs), &opts)
            };
            let shapes = format!("{} params", inst.store.num_scalars());
            print_row(args.json, "model", m.name, args.order, &r, &shapes);
            if r.is_ok() {
                passed += 1
            } else {
                failed += 1
            }
        }
    } else {
        let ops: Vec<_> = registry().into_iter().filter(|o| args.op.as_deref().is_none_or(|n| n == o.name)).collect();
        if ops.is_empty() {
            return Err(format!("no op named {:?} (see chi gradcheck --list)", args.op.as_deref().unwrap_or("")));
        }
        for op in ops {
            if args.order == 2 && !op.order2 {
                continue;
            }
            // Aggregate the worst result over several random instances.
            let mut worst: Option<(Result<GradcheckReport, GradcheckReport>, String)> = None;
            for seed in 0..args.instances.max(1) {
                let (case, r) = check_case(&op, args.order, seed, &opts);
                let bad = r.is_err();
                let err = match &r {
                    Ok(x) | Err(x) => x.max_abs_err,
                };
                let replace = match &worst {
                    None => true,
                    Some((w, _)) => (bad && w.is_ok()) || (bad == w.is_err() && err > w.as_ref().map_or_else(|e| e.max_abs_err, |x| x.max_abs_err)),
                };
                if replace {
                    worst = Some((r, case.shapes()));
                }
            }
            let (r, shapes) = worst.unwrap();
            print_row(args.json, "op", op.name, args.order, &r, &shapes);
            if r.is_ok() {
                passed += 1
            } else {
                failed += 1
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        Err(format!("{failed} gradient checks failed"))
    } else {
        Ok(())
    }
}
