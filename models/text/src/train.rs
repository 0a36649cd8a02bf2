//! A minimal supervised training loop shared by the classifiers of this crate.

use crate::deps::{GradSync, Group, OptimConfig, Optimizer, Param};
use crate::error::{Result, TextError};
use chi_autodiff::{no_grad, Float, Rng, Tensor};

/// A model mapping a batch of inputs to class logits `[batch, classes]`.
pub trait Classifier<T: Float> {
    /// One example (a sentence of ids, a document of sentences, …).
    type Input;
    /// Logits `[inputs.len(), classes]`.
    fn logits(&self, inputs: &[&Self::Input]) -> Result<Tensor<T>>;
    /// The trainable parameters.
    fn params(&self) -> Vec<Param<T>>;
    /// Training (`true`: dropout on) or evaluation mode.
    fn set_training(&self, on: bool);
    /// Called after every optimiser step (e.g. a max-norm projection).
    fn after_step(&self) {}
    /// Restarts the stream of the model's random training-time masks (dropout) from `seed`.
    /// [`fit`] calls it on data-parallel ranks, so that ranks draw different masks; models
    /// without such masks ignore it.
    fn reseed_masks(&self, _seed: u64) {}
}

/// Options of [`fit`].
#[derive(Clone, Debug)]
pub struct FitConfig {
    /// Passes over the training set.
    pub epochs: usize,
    /// Examples per step.
    pub batch_size: usize,
    /// The optimiser.
    pub optim: OptimConfig,
    /// Seed of the shuffling.
    pub seed: u64,
    /// The processes training runs on ([`Group::one`] by default). With several ranks (all
    /// running `fit` with the same arguments), each takes its share of every batch and the
    /// gradients are averaged, which is the single-process step up to rounding.
    pub group: Group,
}

impl Default for FitConfig {
    fn default() -> Self {
        FitConfig { epochs: 10, batch_size: 50, optim: OptimConfig::adam(1e-3), seed: 0, group: Group::one() }
    }
}

/// Mean training loss of each epoch.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FitLog {
    /// One entry per epoch.
    pub epoch_loss: Vec<f64>,
}

/// Trains `model` with cross-entropy on `(inputs, labels)`, shuffling each epoch. Leaves the
/// model in evaluation mode.
///
/// On a group of several ranks ([`FitConfig::group`]) every rank shuffles alike, takes its
/// share of each batch, and the gradients are averaged (weighted by the shares) before the one
/// update every rank applies; the model's masks are reseeded per rank
/// ([`Classifier::reseed_masks`]). The logged loss is the global mean.
pub fn fit<T: Float, M: Classifier<T>>(model: &M, inputs: &[M::Input], labels: &[usize], cfg: &FitConfig) -> Result<FitLog> {
    if inputs.len() != labels.len() || inputs.is_empty() {
        return Err(TextError::Invalid { op: "fit", msg: format!("{} inputs for {} labels", inputs.len(), labels.len()) });
    }
    let mut opt = Optimizer::try_new(cfg.optim.clone()).map_err(|msg| TextError::Invalid { op: "fit", msg: msg.to_string() })?;
    let params = model.params();
    let group = &cfg.group;
    let mut sync = GradSync::new(group, &params);
    if group.size() > 1 {
        model.reseed_masks(group.rank_seed(cfg.seed));
    }
    let mut rng = Rng::new(cfg.seed);
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    let mut log = FitLog::default();
    model.set_training(true);
    for _ in 0..cfg.epochs {
        rng.shuffle(&mut order);
        let mut total = 0.0;
        for chunk in order.chunks(cfg.batch_size.max(1)) {
            let mine = group.shard(chunk);
            for p in &params {
                p.zero_grad();
            }
            let loss = if mine.is_empty() {
                Tensor::scalar(T::ZERO)
            } else {
                let batch: Vec<&M::Input> = mine.iter().map(|&i| &inputs[i]).collect();
                let y: Vec<usize> = mine.iter().map(|&i| labels[i]).collect();
                model.logits(&batch)?.cross_entropy(&y)
            };
            let (mean, grads) = sync.backward(&loss, mine.len() as f64)?;
            total += mean * chunk.len() as f64;
            opt.step(&params, &grads);
            model.after_step();
        }
        log.epoch_loss.push(total / inputs.len() as f64);
    }
    model.set_training(false);
    Ok(log)
}

/// Predicted classes (evaluation mode, no tape), in batches of `batch_size`.
pub fn predict<T: Float, M: Classifier<T>>(model: &M, inputs: &[M::Input], batch_size: usize) -> Result<Vec<usize>> {
    model.set_training(false);
    let mut out = Vec::with_capacity(inputs.len());
    for chunk in inputs.chunks(batch_size.max(1)) {
        let batch: Vec<&M::Input> = chunk.iter().collect();
        let logits = no_grad(|| model.logits(&batch))?;
        out.extend(logits.argmax_axis(1));
    }
    Ok(out)
}

/// Fraction of `predicted` equal to `labels`.
pub fn accuracy(predicted: &[usize], labels: &[usize]) -> f64 {
    if labels.is_empty() {
        return 0.0;
    }
    predicted.iter().zip(labels).filter(|(a, b)| a == b).count() as f64 / labels.len() as f64
}
