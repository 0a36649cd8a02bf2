//! A minimal supervised training loop shared by the classifiers of this crate.

use crate::deps::{OptimConfig, Optimizer, Param};
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
}

impl Default for FitConfig {
    fn default() -> Self {
        FitConfig { epochs: 10, batch_size: 50, optim: OptimConfig::adam(1e-3), seed: 0 }
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
pub fn fit<T: Float, M: Classifier<T>>(model: &M, inputs: &[M::Input], labels: &[usize], cfg: &FitConfig) -> Result<FitLog> {
    if inputs.len() != labels.len() || inputs.is_empty() {
        return Err(TextError::Invalid { op: "fit", msg: format!("{} inputs for {} labels", inputs.len(), labels.len()) });
    }
    let mut opt = Optimizer::try_new(cfg.optim.clone()).map_err(|msg| TextError::Invalid { op: "fit", msg: msg.to_string() })?;
    let params = model.params();
    let mut rng = Rng::new(cfg.seed);
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    let mut log = FitLog::default();
    model.set_training(true);
    for _ in 0..cfg.epochs {
        rng.shuffle(&mut order);
        let mut total = 0.0;
        for chunk in order.chunks(cfg.batch_size.max(1)) {
            let batch: Vec<&M::Input> = chunk.iter().map(|&i| &inputs[i]).collect();
            let y: Vec<usize> = chunk.iter().map(|&i| labels[i]).collect();
            for p in &params {
                p.zero_grad();
            }
            let loss = model.logits(&batch)?.cross_entropy(&y);
            total += loss.item().to_f64() * chunk.len() as f64;
            loss.try_backward()?;
            opt.step_params(&params);
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
