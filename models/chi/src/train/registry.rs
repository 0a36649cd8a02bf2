//! The model and dataset registries of `chi train`: plain function tables. To add a model,
//! write a [`ModelBuilder`] and add one [`ModelEntry`] line to [`MODELS`]; to add a dataset, a
//! [`DatasetBuilder`] and one [`DatasetEntry`] line to [`DATASETS`].

use chi_nn::dataset::{self as data, DataConfig, Dataset, Inputs, Split, Task};
use chi_nn::metrics;
use super::recurrent::{self, CellKind};
pub use super::model::{task_loss, ForwardOut, Model, ModelConfig};
use chi_nn::layers::{Dropout, Linear};
use chi_nn::params::ParamStore;
use chi_nn::Activation;
use chi_autodiff::{no_grad, Rng, Tensor};
use std::collections::BTreeMap;

/// Builds a model for a dataset, initialising parameters from `rng`.
pub type ModelBuilder = fn(&ModelConfig, &Dataset, &mut Rng) -> Result<Box<dyn Model>, String>;
/// Builds (loads or generates) a dataset; synthetic ones draw from `rng`.
pub type DatasetBuilder = fn(&DataConfig, &mut Rng) -> Result<Dataset, String>;

/// One registered model.
pub struct ModelEntry {
    /// Name used by `--model`.
    pub name: &'static str,
    /// One line for `chi train --list`.
    pub about: &'static str,
    /// Constructor.
    pub build: ModelBuilder,
}

/// One registered dataset.
pub struct DatasetEntry {
    /// Name used by `--dataset`.
    pub name: &'static str,
    /// One line for `chi train --list`.
    pub about: &'static str,
    /// Constructor.
    pub build: DatasetBuilder,
}

/// Registered models. The recurrent ones are [`recurrent::SeqClassifier`]s differing only in
/// the cell.
pub static MODELS: &[ModelEntry] = &[
    ModelEntry { name: "mlp", about: "multi-layer perceptron on dense inputs (hidden sizes, activation, dropout)", build: build_mlp },
    ModelEntry { name: "lstm", about: "token sequences: embedding → LSTM layers → linear head (options: embed, peephole)", build: build_lstm },
    ModelEntry { name: "gru", about: "token sequences: embedding → GRU layers → linear head (option: embed)", build: build_gru },
    ModelEntry { name: "ca-rnn", about: "token sequences: embedding → CA-RNN layers (paper §3.4) → linear head (option: embed)", build: build_ca_rnn },
];

/// Registered datasets.
pub static DATASETS: &[DatasetEntry] = &[
    DatasetEntry { name: "spirals", about: "synthetic: interleaved 2-D spirals, `classes` classes", build: |c, r| data::spirals(c, r).map_err(String::from) },
    DatasetEntry { name: "xor-noise", about: "synthetic: 2-D XOR with label noise, binary", build: |c, r| data::xor_noise(c, r).map_err(String::from) },
    DatasetEntry { name: "surface", about: "synthetic: z = x·exp(−x²−y²) regression (paper §4.5.1)", build: |c, r| data::surface(c, r).map_err(String::from) },
    DatasetEntry {
        name: "first-token",
        about: "synthetic: token sequences labelled by their first token (long-range memory; options seq_len, distractors)",
        build: |c, r| data::first_token(c, r).map_err(String::from),
    },
];

/// Looks up a model.
pub fn model_entry(name: &str) -> Result<&'static ModelEntry, String> {
    MODELS.iter().find(|m| m.name == name).ok_or_else(|| {
        format!("unknown model {name:?}; available: {}", MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", "))
    })
}

/// Looks up a dataset.
pub fn dataset_entry(name: &str) -> Result<&'static DatasetEntry, String> {
    DATASETS.iter().find(|m| m.name == name).ok_or_else(|| {
        format!("unknown dataset {name:?}; available: {}", DATASETS.iter().map(|m| m.name).collect::<Vec<_>>().join(", "))
    })
}

// ------------------------------------------------------------------------------------ MLP

/// A multi-layer perceptron of [`Linear`] layers `layer{i}` (parameters `layer{i}.weight`
/// `[in, out]`, Xavier-uniform, and `layer{i}.bias`, zeros). Hidden layers are in group
/// `"hidden"`, the output layer in group `"output"`.
pub struct Mlp {
    store: ParamStore<f32>,
    layers: Vec<Linear<f32>>,
    activation: Activation,
    dropout: Dropout,
}

impl Mlp {
    /// An MLP `input → hidden… → output`.
    pub fn new(input: usize, hidden: &[usize], output: usize, activation: Activation, dropout: f64, rng: &mut Rng) -> Result<Mlp, String> {
        if !(0.0..1.0).contains(&dropout) {
            return Err(format!("mlp: dropout must be in [0, 1), got {dropout}"));
        }
        let mut store = ParamStore::new();
        let mut sizes = vec![input];
        sizes.extend_from_slice(hidden);
        sizes.push(output);
        let mut layers = Vec::new();
        for i in 0..sizes.len() - 1 {
            let group = if i + 2 == sizes.len() { "output" } else { "hidden" };
            layers.push(Linear::in_store(&mut store, &format!("layer{i}"), group, sizes[i], sizes[i + 1], true, rng));
        }
        // The masks come from the run's dropout stream (`forward_rng`), not the layer's own.
        Ok(Mlp { store, layers, activation, dropout: Dropout::with_seed(dropout, 0) })
    }
    /// Forward on a `[batch, input]` tensor.
    pub fn forward_x(&self, x: &Tensor<f32>, train: bool, rng: &mut Rng) -> Tensor<f32> {
        let mut h = x.clone();
        for (i, layer) in self.layers.iter().enumerate() {
            h = layer.forward(&h);
            if i + 1 < self.layers.len() {
                h = self.dropout.forward_rng(&self.activation.apply(&h), train, rng);
            }
        }
        h
    }
}

impl Model for Mlp {
    fn store(&self) -> &ParamStore<f32> {
        &self.store
    }
    fn forward(&self, split: &Split, idx: &[usize], train: bool, rng: &mut Rng) -> ForwardOut {
        let x = split.inputs.dense_batch(idx);
        let x = x.reshape(&[idx.len(), x.numel() / idx.len().max(1)]);
        ForwardOut { output: self.forward_x(&x, train, rng), hidden: Vec::new() }
    }
}

fn build_mlp(cfg: &ModelConfig, ds: &Dataset, rng: &mut Rng) -> Result<Box<dyn Model>, String> {
    chi_nn::dataset::check_options(&cfg.options, &[], "model mlp").map_err(|e| e.to_string())?;
    let Inputs::Dense { shape, .. } = &ds.train.inputs else {
        return Err(format!("mlp needs dense inputs; dataset {:?} has token inputs", ds.name));
    };
    let input = shape.iter().product();
    let output = match ds.task {
        Task::Classification { classes } => classes,
        Task::Binary | Task::Regression => 1,
    };
    Ok(Box::new(Mlp::new(input, &cfg.hidden, output, cfg.activation, cfg.dropout, rng)?))
}

fn build_lstm(cfg: &ModelConfig, ds: &Dataset, rng: &mut Rng) -> Result<Box<dyn Model>, String> {
    recurrent::build(CellKind::Lstm, cfg, ds, rng)
}

fn build_gru(cfg: &ModelConfig, ds: &Dataset, rng: &mut Rng) -> Result<Box<dyn Model>, String> {
    recurrent::build(CellKind::Gru, cfg, ds, rng)
}

fn build_ca_rnn(cfg: &ModelConfig, ds: &Dataset, rng: &mut Rng) -> Result<Box<dyn Model>, String> {
    recurrent::build(CellKind::CaRnn, cfg, ds, rng)
}

// ------------------------------------------------------------------------------------ loss

/// Evaluates `model` on a whole split (no gradients, no dropout), in batches of `batch`.
/// Returns `loss` plus `accuracy` (classification, binary) or `mse`, `pearson`, `spearman`
/// (regression).
pub fn evaluate(model: &dyn Model, task: Task, split: &Split, batch: usize) -> BTreeMap<String, f64> {
    let n = split.len();
    let mut rng = Rng::new(0); // unused: no dropout in evaluation
    let mut loss_sum = 0.0;
    let mut outs: Vec<f64> = Vec::new();
    let cols = match task {
        Task::Classification { classes } => classes,
        _ => 1,
    };
    no_grad(|| {
        let mut s = 0;
        while s < n {
            let idx: Vec<usize> = (s..(s + batch).min(n)).collect();
            let o = model.forward(split, &idx, false, &mut rng).output;
            loss_sum += task_loss(task, &o, split, &idx).item() as f64 * idx.len() as f64;
            outs.extend(o.data().iter().map(|v| *v as f64));
            s += batch;
        }
    });
    let mut m = BTreeMap::new();
    m.insert("loss".to_string(), if n > 0 { loss_sum / n as f64 } else { f64::NAN });
    match task {
        Task::Classification { .. } => {
            let pred = metrics::argmax_rows(&outs, cols);
            let y: Vec<usize> = (0..n).map(|i| split.targets.class(i)).collect();
            m.insert("accuracy".into(), metrics::accuracy(&pred, &y));
        }
        Task::Binary => {
            let pred: Vec<usize> = outs.iter().map(|&z| (z > 0.0) as usize).collect();
            let y: Vec<usize> = (0..n).map(|i| split.targets.class(i)).collect();
            m.insert("accuracy".into(), metrics::accuracy(&pred, &y));
        }
        Task::Regression => {
            let y: Vec<f64> = (0..n).map(|i| split.targets.value(i)).collect();
            m.insert("mse".into(), metrics::mse(&outs, &y));
            m.insert("pearson".into(), metrics::pearson(&outs, &y));
            m.insert("spearman".into(), metrics::spearman(&outs, &y));
        }
    }
    m
}
