//! Ready-made gradient-check instances and the REINFORCE self-check, for a command-line front
//! end (`chi gradcheck --model rcnn-…`, `chi gradcheck --estimator reinforce`).
//!
//! Each instance is a tiny model in `f64` with generic (non-zero) parameter values, inputs whose
//! gradients are checked too, and a loss closure that reads the parameters at call time (so a
//! checker can swap them for its own leaves with [`crate::deps::Param::replace`]).

use crate::deps::ParamStore;
use crate::error::Result;
use crate::layer::{pool, Decay, Pooling, RcnnConfig, RcnnLayer, ScanImpl};
use crate::oracle::{check_estimator, reinforce_variance, BaselineVariance, EstimatorCheck, EstimatorCheckOptions, RationaleDistribution};
use crate::rationale::{GeneratorKind, RationaleConfig, RationaleModel};
use crate::scan::FeatureMap;
use chi_autodiff::{Rng, Tensor};

/// A tiny model for a whole-model gradient check.
pub struct CheckInstance {
    /// Parameters (checked unless frozen).
    pub store: ParamStore<f64>,
    /// Inputs whose gradients are checked too.
    pub inputs: Vec<Tensor<f64>>,
    /// Runs the model on the inputs.
    pub loss: Box<dyn Fn(&[Tensor<f64>]) -> Tensor<f64>>,
}

fn perturbed(store: &ParamStore<f64>, rng: &mut Rng) {
    // Zero biases would hide bias-gradient bugs.
    for p in store.params() {
        p.update(|v| v.iter_mut().for_each(|x| *x += 0.3 * rng.normal()));
    }
}

fn layer_instance(cfg: RcnnConfig, seed: u64) -> CheckInstance {
    let mut rng = Rng::new(seed);
    let mut store = ParamStore::new();
    let layer = RcnnLayer::new(&mut store, "rcnn", "model", cfg, &mut rng).expect("a valid built-in configuration");
    perturbed(&store, &mut rng);
    let x = Tensor::randn(&[2, 4, 3], &mut rng);
    let loss = move |xs: &[Tensor<f64>]| {
        let h = layer.forward(&xs[0], Some(&[4, 3])).expect("shapes fixed by the instance");
        pool(&h, Some(&[4, 3]), Pooling::Mean).expect("shapes fixed by the instance")
    };
    CheckInstance { store, inputs: vec![x], loss: Box::new(loss) }
}

/// RCNN layer, 2-gram multiplicative normalised, learned λ, fused scan, mean pooling.
pub fn rcnn_fused_instance() -> CheckInstance {
    let mut c = RcnnConfig::new(3, 3);
    c.decay = Decay::Learned(0.4);
    c.output_matrix = true;
    layer_instance(c, 1)
}

/// The same layer with the composed (reference) scan.
pub fn rcnn_composed_instance() -> CheckInstance {
    let mut c = RcnnConfig::new(3, 3);
    c.decay = Decay::Learned(0.4);
    c.output_matrix = true;
    c.scan = ScanImpl::Composed;
    layer_instance(c, 1)
}

/// 3-gram additive layer with λ adaptive on x and h and a highway connection.
pub fn rcnn_adaptive_instance() -> CheckInstance {
    let mut c = RcnnConfig::new(3, 3);
    c.order = 3;
    c.map = FeatureMap::Additive;
    c.decay = Decay::AdaptiveXH;
    c.highway = true;
    layer_instance(c, 2)
}

/// The text classifier of `chi train --model rcnn` end to end: embedding, two bidirectional
/// layers (λ adaptive on x), mean pooling, head, softmax cross-entropy, on three texts of
/// lengths 3, 2 and 4 (so the padding is exercised).
pub fn rcnn_classifier_instance() -> CheckInstance {
    use crate::classifier::{ClassifierConfig, RcnnClassifier};
    use crate::deps::Embedding;
    let mut rng = Rng::new(4);
    let mut store = ParamStore::new();
    let embedding = Embedding::in_store(&mut store, "embedding", "embedding", 6, 3, false, &mut rng);
    let layer = RcnnConfig { decay: Decay::AdaptiveX, ..RcnnConfig::new(3, 3) };
    let cfg = ClassifierConfig { layer, hidden: vec![3, 2], outputs: 3, pooling: Pooling::Mean, bidirectional: true, dropout: 0.0 };
    let net = RcnnClassifier::new(&mut store, "rcnn", embedding, &cfg, &mut rng).expect("a valid built-in configuration");
    perturbed(&store, &mut rng);
    let loss = move |_: &[Tensor<f64>]| {
        let texts: [&[usize]; 3] = [&[0, 3, 4], &[1, 2], &[5, 4, 1, 0]];
        let (logits, _, _) = net.forward(&texts, false, &mut Rng::new(0)).expect("shapes fixed by the instance");
        let onehot = Tensor::from_vec(vec![0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0], &[3, 3]);
        logits.log_softmax(-1).mul(&onehot).sum().mul_scalar(-1.0 / 3.0)
    };
    CheckInstance { store, inputs: Vec::new(), loss: Box::new(loss) }
}

/// The rationale model's cost at a fixed mask, with respect to the encoder (the pathwise half of
/// the doubly stochastic gradient).
pub fn rationale_encoder_instance() -> CheckInstance {
    let mut rng = Rng::new(3);
    let mut store = ParamStore::new();
    let cfg = RationaleConfig { rcnn: RcnnConfig::new(3, 3), outputs: 2, generator: GeneratorKind::Independent, lambda1: 0.05, lambda2: 0.1, encoder_depth: 1 };
    let model = RationaleModel::new(&mut store, cfg, &mut rng).expect("a valid built-in configuration");
    perturbed(&store, &mut rng);
    for p in store.params() {
        p.set_frozen(p.group() != "encoder");
    }
    let x = Tensor::randn(&[2, 4, 3], &mut rng);
    let y = Tensor::from_vec(vec![0.2, 0.9, 0.6, 0.4], &[2, 2]);
    let z = vec![true, false, true, true, false, true, true, false];
    let loss = move |xs: &[Tensor<f64>]| model.cost(&xs[0], Some(&[4, 3]), &y, &z).expect("shapes fixed by the instance").0;
    CheckInstance { store, inputs: vec![x], loss: Box::new(loss) }
}

/// Every instance by name.
pub fn gradcheck_cases() -> Vec<(&'static str, fn() -> CheckInstance)> {
    vec![
        ("rcnn-fused", rcnn_fused_instance as fn() -> CheckInstance),
        ("rcnn-composed", rcnn_composed_instance),
        ("rcnn-adaptive-xh", rcnn_adaptive_instance),
        ("rationale-encoder", rationale_encoder_instance),
        ("rcnn-classifier", rcnn_classifier_instance),
    ]
}

/// Options of [`reinforce_self_check`].
#[derive(Clone, Debug, PartialEq)]
pub struct ReinforceCheckOptions {
    /// Text length `L ≤ 12` (all `2^L` masks are enumerated).
    pub length: usize,
    /// Use the dependent generator.
    pub dependent: bool,
    /// Draws, seed and family-wise false-failure rate of the z-test.
    pub test: EstimatorCheckOptions,
    /// Decay of the moving-average baseline in the variance comparison.
    pub baseline_decay: f64,
}

impl Default for ReinforceCheckOptions {
    fn default() -> Self {
        ReinforceCheckOptions { length: 6, dependent: false, test: EstimatorCheckOptions::default(), baseline_decay: 0.9 }
    }
}

/// Builds a small seeded rationale model and one random text, z-tests the plain REINFORCE
/// estimate of the generator gradient against the exact gradient over all `2^L` masks, and
/// measures the estimator's variance with and without a moving-average baseline.
pub fn reinforce_self_check(opts: &ReinforceCheckOptions) -> Result<(EstimatorCheck, BaselineVariance)> {
    let mut rng = Rng::new(opts.test.seed ^ 0x7e57);
    let mut rcnn = RcnnConfig::new(3, 3);
    rcnn.map = FeatureMap::Additive;
    rcnn.decay = Decay::AdaptiveX;
    let generator = if opts.dependent { GeneratorKind::Dependent { state: 2 } } else { GeneratorKind::Independent };
    let cfg = RationaleConfig { rcnn, outputs: 2, generator, lambda1: 0.05, lambda2: 0.1, encoder_depth: 1 };
    let mut store = ParamStore::new();
    let model = RationaleModel::new(&mut store, cfg, &mut rng)?;
    for p in store.params() {
        p.update(|v| v.iter_mut().for_each(|x| *x *= 2.0));
    }
    let x = Tensor::randn(&[1, opts.length, 3], &mut rng);
    let y = Tensor::from_vec(vec![0.9, 0.1], &[1, 2]);
    let params: Vec<Tensor<f64>> = store.params().iter().filter(|p| p.group() == "generator").map(|p| p.get()).collect();
    let dist = RationaleDistribution::new(&model, &x)?;
    let cost = |zs: &[Vec<bool>]| dist.costs(&y, zs);
    let mut reinforce = |_: &Vec<bool>, f: f64, lp: &Tensor<f64>| lp.mul_scalar(f);
    let check = check_estimator(&dist, &params, &cost, &mut reinforce, &opts.test)?;
    let var = reinforce_variance(&model, &params, &x, &y, opts.baseline_decay, &opts.test)?;
    Ok((check, var))
}
