//! What `chi train` trains: the [`Model`] trait, its options ([`ModelConfig`]) and forward
//! output ([`ForwardOut`]) and the task losses ([`task_loss`]) shared by the registered models
//! ([`super::registry`], [`super::recurrent`]). Dropout is [`chi_nn::Dropout`], fed the run's
//! dropout stream through [`chi_nn::Dropout::forward_rng`].

use chi_autodiff::{Float, Rng, Tensor};
use chi_nn::Activation;
use chi_nn::dataset::{Split, Task};
use chi_nn::params::ParamStore;
use serde::{Deserialize, Serialize};

/// Model options common to the registered models; model-specific ones go in `options`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// Hidden layer sizes: of the MLP, or of each stacked cell of a recurrent model
    /// (`[32]` = one layer of 32).
    pub hidden: Vec<usize>,
    /// Activation of the MLP (any [`Activation`] name: `tanh`, `relu`, `sigmoid`, `gelu`, …;
    /// recurrent cells have their own).
    pub activation: Activation,
    /// Dropout probability on hidden activations while training.
    pub dropout: f64,
    /// Model-specific options.
    pub options: serde_json::Map<String, serde_json::Value>,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig { hidden: vec![32, 32], activation: Activation::Tanh, dropout: 0.0, options: Default::default() }
    }
}

impl ModelConfig {
    /// An error naming the first of `fields` (`hidden`, `dropout`, `activation`) that differs
    /// from its default for a model that does not read it (a text CNN has no hidden layers; the
    /// recurrent cells have their own nonlinearities), instead of training as if it were not
    /// given; `instead` says what the model has in its place.
    pub fn check_unused(&self, model: &str, fields: &[&str], instead: &str) -> Result<(), String> {
        let d = ModelConfig::default();
        for &f in fields {
            let given = match f {
                "hidden" => (self.hidden != d.hidden).then(|| format!("{:?}", self.hidden)),
                "dropout" => (self.dropout.to_bits() != d.dropout.to_bits()).then(|| self.dropout.to_string()),
                "activation" => (self.activation != d.activation).then(|| format!("{:?}", self.activation).to_lowercase()),
                _ => None,
            };
            if let Some(v) = given {
                return Err(format!("{model} does not use {f} ({v} given; --{f} or [model_options] {f}), so it would be ignored{instead}"));
            }
        }
        Ok(())
    }
}

/// What a forward pass returns.
pub struct ForwardOut {
    /// `[batch, classes]` logits (classification) or `[batch]` / `[batch, 1]` (binary logits,
    /// regression values).
    pub output: Tensor<f32>,
    /// Hidden states `h_1..h_T` of a recurrent model (for the ‖∂L/∂h_t‖ gradient-flow
    /// picture); empty for other models.
    pub hidden: Vec<Tensor<f32>>,
    /// The embedding lookups of a text model's tokens (for saliency, |∂score/∂embedding|);
    /// empty for other models.
    pub embedded: Vec<Embedded>,
}

impl ForwardOut {
    /// Just an output.
    pub fn new(output: Tensor<f32>) -> ForwardOut {
        ForwardOut { output, hidden: Vec::new(), embedded: Vec::new() }
    }
}

/// One embedding lookup of a batch's tokens and where each token's vector sits in it.
pub struct Embedded {
    /// The looked-up vectors (a graph node: its gradient is the saliency).
    pub tensor: Tensor<f32>,
    /// Layout of `tensor`.
    pub layout: EmbedLayout,
}

/// Where token `t` of example `r` (of length `n`) sits in an [`Embedded`] tensor.
#[derive(Clone, Debug)]
pub enum EmbedLayout {
    /// `[B, time, E]`, at `[r, t]`.
    Padded {
        /// Padded length.
        time: usize,
    },
    /// `[B, time, E]` of the reversed texts, at `[r, n − 1 − t]`.
    Reversed {
        /// Padded length.
        time: usize,
    },
    /// `[tokens, E]`, example `r`'s tokens from row `offsets[r]`.
    Flat {
        /// First row of each example.
        offsets: Vec<usize>,
    },
    /// Any layout (e.g. sentences of a document padded to a common length), token `t` of
    /// example `r` at row `rows[r][t]`.
    Indexed {
        /// The row of every token of every example.
        rows: Vec<Vec<usize>>,
    },
}

impl Embedded {
    /// The row of `tensor` (viewed as `[rows, E]`) holding token `t` of example `r`, a text of
    /// length `n`.
    pub fn row(&self, r: usize, t: usize, n: usize) -> usize {
        match &self.layout {
            EmbedLayout::Padded { time } => r * time + t,
            EmbedLayout::Reversed { time } => r * time + (n - 1 - t),
            EmbedLayout::Flat { offsets } => offsets[r] + t,
            EmbedLayout::Indexed { rows } => rows[r][t],
        }
    }
}

/// A trainable model as `chi train` sees it.
pub trait Model {
    /// The parameters (names are the checkpoint tensor names; groups feed block-coordinate
    /// training).
    fn store(&self) -> &ParamStore<f32>;
    /// Forward pass on examples `idx` of `split`. `train` enables dropout, which draws from
    /// `rng` (the run's seeded stream).
    fn forward(&self, split: &Split, idx: &[usize], train: bool, rng: &mut Rng) -> ForwardOut;
    /// The weight the model's own attention gives each token of example `i` (summing to 1
    /// over the text), for models that have one; `chi explain` shows it beside the gradients.
    fn attention(&self, _split: &Split, _i: usize) -> Option<Vec<f64>> {
        None
    }
    /// For convolutional text models: the filter widths and, for examples `idx`, one
    /// activation map `[batch, regions, filters]` per width (region `i` = the window starting
    /// at token `i`), for the n-grams each filter responds to most (`chi explain --ngrams`).
    fn filter_maps(&self, _split: &Split, _idx: &[usize]) -> Option<(Vec<usize>, Vec<Tensor<f32>>)> {
        None
    }
    /// The representation the output layer reads, `[batch, features]` (evaluation mode), for
    /// models that have one; `chi explain --pca` projects it to 2-D.
    fn features(&self, _split: &Split, _idx: &[usize]) -> Option<Tensor<f32>> {
        None
    }
}

/// The task's loss on a batch (mean over examples): softmax cross-entropy, sigmoid
/// cross-entropy (binary) or mean squared error (regression). Built from core ops only; `f32`
/// in training, `f64` in whole-model gradient checks.
pub fn task_loss<T: Float>(task: Task, output: &Tensor<T>, split: &Split, idx: &[usize]) -> Tensor<T> {
    let b = idx.len();
    let targets = || Tensor::from_vec(idx.iter().map(|&i| T::from_f64(split.targets.value(i))).collect(), &[b]);
    match task {
        Task::Classification { classes } => {
            let mut onehot = vec![T::ZERO; b * classes];
            for (r, &i) in idx.iter().enumerate() {
                onehot[r * classes + split.targets.class(i)] = T::ONE;
            }
            let lp = output.log_softmax(-1);
            lp.mul(&Tensor::from_vec(onehot, &[b, classes])).sum().mul_scalar(-1.0 / b as f64)
        }
        Task::Binary => {
            let z = output.reshape(&[b]);
            let y = targets();
            // −[y·log σ(z) + (1 − y)·log σ(−z)]
            let pos = y.mul(&z.log_sigmoid());
            let neg = y.rsub_scalar(1.0).mul(&z.neg().log_sigmoid());
            pos.add(&neg).sum().mul_scalar(-1.0 / b as f64)
        }
        Task::Regression => {
            let z = output.reshape(&[b]);
            let y = targets();
            z.sub(&y).square().mean()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activation_parses_from_config_and_unknown_names_list_the_choices() {
        let c: ModelConfig = toml::from_str("activation = \"gelu\"").unwrap();
        assert_eq!(c.activation, Activation::Gelu);
        assert!(toml::to_string(&c).unwrap().contains("activation = \"gelu\""));
        let e = toml::from_str::<ModelConfig>("activation = \"tanhh\"").unwrap_err().to_string();
        assert!(e.contains("unknown activation \"tanhh\"") && e.contains("identity, relu, tanh, sigmoid, gelu, silu, softplus"), "{e}");
    }
}
