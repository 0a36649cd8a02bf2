//! The training toolkit and the `chi train` / `chi eval` loop.
//!
//! * [`Config`]: every hyperparameter of a run (TOML file and/or flags), saved in checkpoints.
//! * [`train`]: seeded, resumable training with progress bar, per-step log, evaluation,
//!   gradient-flow statistics, plots and atomic checkpoints in an output directory. The loop is
//!   chi-nn's [`Trainer`]; everything specific to `chi train` hangs on it as [`callbacks`].
//! * [`evaluate_checkpoint`]: rebuilds the model of a checkpoint and reports its metrics.
//! * Building blocks: [`data`] (datasets, [`data::Batcher`]), [`chi_nn::metrics`], [`chi_nn::schedule`]
//!   (learning-rate schedules, block-coordinate freezing), [`log`], [`plot`], [`progress`],
//!   [`gradflow`], [`registry`] (model and dataset tables), [`recurrent`] (the LSTM / GRU /
//!   CA-RNN sequence classifiers), [`cli`] (clap argument types).
//!
//! ## Determinism
//! One seed fixes everything: the master generator `Rng::new(seed)` is forked, in this order,
//! into the data, initialisation, shuffling and dropout streams. The same seed and thread count
//! give bit-identical losses and weights; a run stopped and resumed from a checkpoint gives the
//! same results as an uninterrupted one (the checkpoint holds the shuffling position and the
//! dropout generator's state).
//!
//! ## Output directory
//! `config.toml`, `log.jsonl` or `log.csv` (`step, epoch, loss, lr, grad_norm, block,
//! examples_per_sec`), `eval.jsonl`, `gradflow.csv` (`step,param,norm`), `gradflow_time.csv`
//! (`step,t,norm`, recurrent models), `loss.svg/.png`, `eval.svg/.png`, `gradflow.svg/.png`,
//! `gradflow_time.svg/.png` (heatmap, training step × t) and `gradflow_time_lines.svg/.png`
//! (‖∂L/∂h_t‖ against t for a few training steps), `checkpoints/step-NNNNNNNN.ckpt.safetensors`,
//! `model.safetensors` (final weights, with the configuration and data schema in its metadata),
//! `summary.json`, and for file datasets `data.json` (the [`chi_nn::userdata::DataSchema`]:
//! how new files are read and encoded, the class names) and `data-fingerprint.json` (a hash of
//! the data files, [`files::DataFingerprint`]: `--resume` refuses data that changed since).
//! `chi eval` adds `eval-SPLIT/` (a split of the run's data) or `eval-file-STEM/` (`--data
//! STEM.csv`; `eval-file-STEM-2/`, … for other files of that stem, each directory's `source.txt`
//! naming its file), each with `report.json`, `confusion.csv` and `confusion.svg/.png`.
//!
//! ## Data
//! `--data PATH` trains on the user's file or folder ([`files`], [`chi_nn::userdata`]); the
//! models for each kind of data are in [`registry`] (`mlp`, [`recurrent`], [`zoo`]); [`infer`]
//! loads a trained model for `chi eval` and `chi predict`. Sentence pairs (`--model seq2seq`)
//! take their own path, [`translation`]: an encoder–decoder trained, evaluated and used there.

pub mod callbacks;
pub mod cli;
mod distributed;
pub mod files;
pub mod gradflow;
pub mod infer;
pub mod log;
pub mod model;
pub mod plot;
pub mod progress;
pub mod recurrent;
pub mod registry;
pub mod rundir;
pub mod translation;
pub mod zoo;

use chi_nn::checkpoint;
use chi_nn::optim::{OptimConfig, Optimizer};
use chi_autodiff::Rng;
use chi_nn::dataset::{self as data, Batcher, DataConfig, Dataset};
use log::{LogFormat, Logger};
use registry::Model;
pub use model::ModelConfig;
use chi_nn::schedule::{BlockCoordinate, LrSchedule};
use chi_nn::trainer::{StepOutput, TrainError, Trainer, TrainerState};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Everything that defines a training run. Every field has a default, so a TOML file needs only
/// what differs:
///
/// ```toml
/// model = "mlp"
/// dataset = "spirals"
/// steps = 2000
/// batch_size = 32
/// clip_norm = 5.0
/// [optim]
/// name = "adagrad"
/// lr = 0.1
/// [schedule]
/// kind = "cosine"
/// total_steps = 2000
/// [block]
/// em_steps = 100
/// blocks = [["hidden"], ["output"]]
/// [model_options]
/// hidden = [32, 32]
/// [data]
/// n_train = 1000
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Registered model name ([`registry::Registry`]).
    pub model: String,
    /// Registered dataset name ([`registry::Registry`]); `file` reads `data.path`.
    pub dataset: String,
    /// The one seed of the run.
    pub seed: u64,
    /// Total training steps (mini-batches).
    pub steps: u64,
    /// Examples per mini-batch.
    pub batch_size: usize,
    /// Optimiser and its hyperparameters.
    pub optim: OptimConfig,
    /// Learning-rate schedule applied to `optim.lr`.
    pub schedule: LrSchedule,
    /// Clip gradients to this global L2 norm.
    pub clip_norm: Option<f64>,
    /// Block-coordinate (`em_steps`) freezing of parameter groups.
    pub block: BlockCoordinate,
    /// Evaluate on the test split every this many steps (0: only at the end).
    pub eval_every: u64,
    /// Save a full checkpoint every this many steps (0: only at the end).
    pub checkpoint_every: u64,
    /// Full checkpoints to keep (older ones are deleted; 0 keeps all).
    pub keep_checkpoints: usize,
    /// Write a log row every this many steps (0: no step rows).
    pub log_every: u64,
    /// Step-log format.
    pub log_format: LogFormat,
    /// Record gradient-flow statistics every this many steps (0: never).
    pub gradflow_every: u64,
    /// Model options.
    pub model_options: ModelConfig,
    /// Dataset options.
    pub data: DataConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            model: "mlp".into(),
            dataset: "spirals".into(),
            seed: 0,
            steps: 2000,
            batch_size: 32,
            optim: OptimConfig::default(),
            schedule: LrSchedule::Constant {},
            clip_norm: None,
            block: BlockCoordinate::default(),
            eval_every: 200,
            checkpoint_every: 500,
            keep_checkpoints: 3,
            log_every: 1,
            log_format: LogFormat::Jsonl,
            gradflow_every: 10,
            model_options: ModelConfig::default(),
            data: DataConfig::default(),
        }
    }
}

impl Config {
    /// Parses a TOML config.
    pub fn from_toml(text: &str) -> Result<Config, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }
    /// Reads a TOML config file (at most [`rundir::MAX_CONFIG_BYTES`]).
    pub fn load(path: &Path) -> Result<Config, String> {
        let t = rundir::read_config_text(path)?;
        Self::from_toml(&t).map_err(|e| format!("{}: {e}", path.display()))
    }
    /// Whether `other` describes the same run: equal in everything but `steps`, which a resumed
    /// run may extend.
    pub fn same_run_as(&self, other: &Config) -> bool {
        Config { steps: 0, ..self.clone() } == Config { steps: 0, ..other.clone() }
    }
    /// The config as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# could not render config: {e}\n"))
    }
    /// Range checks of every value, and the size limit ([`chi_nn::limits`]) on every size,
    /// before anything is allocated. The documented ranges: `optim.lr` and schedule values
    /// finite and ≥ 0, `optim.momentum` in [0, 1), `clip_norm` finite and > 0, `dropout` in
    /// [0, 1), `batch_size`, `n_train`, `n_test` and hidden sizes ≥ 1, `steps` ≤ 2^53, and each
    /// weight matrix, activation and data buffer these imply at most the maximum tensor size.
    pub fn validate(&self) -> Result<(), String> {
        self.optim.validate()?;
        let m = self.optim.momentum;
        if !(0.0..1.0).contains(&m) {
            return Err(format!("optim.momentum (--momentum) must be in [0, 1), got {m}"));
        }
        validate_schedule(&self.schedule, self.optim.lr)?;
        if self.batch_size == 0 {
            return Err("batch_size must be positive".into());
        }
        if let Some(c) = self.clip_norm {
            if !(c > 0.0 && c.is_finite()) {
                return Err(format!("clip_norm must be positive and finite, got {c}"));
            }
        }
        if self.steps > checkpoint::MAX_STEP {
            return Err(format!("steps = {} is out of range (at most {})", self.steps, checkpoint::MAX_STEP));
        }
        let d = self.model_options.dropout;
        if !(0.0..1.0).contains(&d) {
            return Err(format!("model_options.dropout (--dropout) must be in [0, 1), got {d}"));
        }
        if self.model_options.hidden.contains(&0) {
            return Err(format!("model_options.hidden (--hidden) sizes must be at least 1, got {:?}", self.model_options.hidden));
        }
        if self.data.n_train == 0 || self.data.n_test == 0 {
            return Err(format!("data.n_train and data.n_test must be at least 1 (an empty split has no metrics), got {} and {}", self.data.n_train, self.data.n_test));
        }
        if !(self.data.noise >= 0.0 && self.data.noise.is_finite()) {
            return Err(format!("data.noise must be finite and >= 0, got {}", self.data.noise));
        }
        registry::model_entry(&self.model)?;
        registry::dataset_entry(&self.dataset)?;
        if self.dataset == registry::FILE_DATASET && self.data.path.is_none() {
            return Err("dataset \"file\" needs a path: --data FILE (or [data] path = \"…\")".into());
        }
        self.check_sizes()
    }

    /// The size limit on the buffers the configuration implies (see [`Config::validate`]).
    fn check_sizes(&self) -> Result<(), String> {
        use chi_nn::limits::check_elements;
        let opt = |k: &str, default: usize| self.model_options.options.get(k).or_else(|| self.data.options.get(k)).and_then(|v| v.as_u64()).map_or(default, |v| v as usize);
        // Values per example: a sequence length, or a few features for the dense datasets.
        let per_example = opt("seq_len", 12).max(16);
        check_elements("data.n_train (training examples × values per example)", &[self.data.n_train, per_example])?;
        check_elements("data.n_test (test examples × values per example)", &[self.data.n_test, per_example])?;
        let embed = opt("embed", 16);
        if self.dataset == registry::FILE_DATASET {
            // The vocabulary of file data is known once the data is read; the table is checked
            // again, whole, when the model is built.
            check_elements("model_options.embed (--embed, the embedding width)", &[embed])?;
        } else {
            let vocab = self.data.classes.saturating_add(opt("distractors", 8));
            check_elements("embedding table (vocabulary × embed)", &[vocab, embed])?;
        }
        let embed_given = self.model_options.options.contains_key("embed") || self.data.options.contains_key("embed");
        let mut input = embed.max(16);
        let recurrent = matches!(self.model.as_str(), "lstm" | "gru" | "ca-rnn");
        // Lower bounds on what the run holds at once: each layer has at least an input × hidden
        // weight, a training batch at least batch × hidden activations, and evaluation (chunks
        // of up to EVAL_CHUNK test examples, without gradients) one layer's chunk × hidden
        // pre-activations and as many activations.
        let (mut weights, mut activations, mut eval) = (0u128, 0u128, 0u128);
        let chunk = self.data.n_test.min(EVAL_CHUNK) as u128;
        // Gates per recurrent layer (each a hidden-wide block of the weight matrices), the n-gram
        // order of an RCNN layer (one block per word of the n-gram); one for the other layers.
        let gates = match self.model.as_str() {
            "lstm" | "ca-rnn" => 4,
            "gru" => 3,
            "rcnn" => opt("order", 2).clamp(1, zoo::RCNN_MAX_ORDER),
            _ => 1,
        };
        let by = if gates == 1 { "hidden".to_string() } else { format!("{gates}·hidden") };
        for (layer, &h) in self.model_options.hidden.iter().enumerate() {
            let what = if layer == 0 && embed_given {
                format!("model_options.embed and hidden (the first layer's weight matrix, --embed × {by})")
            } else {
                format!("model_options.hidden (a layer's weight matrix, input × {by})")
            };
            check_elements(&what, &[input, gates, h])?;
            if recurrent {
                check_elements(&format!("model_options.hidden (a recurrent weight matrix, hidden × {by})"), &[h, gates, h])?;
                weights += (h * h) as u128;
            }
            check_elements("batch_size and model_options.hidden (activations, batch_size × hidden × values per example)", &[self.batch_size, h, per_example])?;
            weights += (input * h) as u128;
            activations += (self.batch_size * h) as u128;
            eval = eval.max(2 * chunk * h as u128);
            input = h;
        }
        check_elements("output layer (hidden × classes)", &[input, self.data.classes.max(1)])?;
        weights += (input * self.data.classes.max(1)) as u128;
        // Every weight has a gradient and, under Adam (the default), two moment estimates; every
        // activation a gradient.
        let total = (4 * weights + 2 * activations).max(weights + eval);
        chi_nn::limits::check_total_elements("model_options.hidden (the model's weights, gradients, optimiser state and activations)", total)?;
        Ok(())
    }

    /// A lower bound on the number of parameter values of any model this configuration builds:
    /// every layer has at least an `input × hidden` weight matrix (input ≥ 1).
    pub fn min_parameters(&self) -> u128 {
        let mut input = 1u128;
        let mut n = 0u128;
        for &h in &self.model_options.hidden {
            n += input * h as u128;
            input = h as u128;
        }
        n + input
    }
}

/// Schedule values, checked as the library checks them ([`LrSchedule::validate`]).
fn validate_schedule(s: &LrSchedule, lr: f64) -> Result<(), String> {
    s.validate(lr).map_err(|e| e.to_string())
}

/// The file in a run directory that holds the data schema of a file dataset (how to read and
/// encode new files, the class names).
pub const DATA_SCHEMA_FILE: &str = "data.json";

/// Run-time switches of [`train`] that are not part of the run's definition.
#[derive(Clone, Debug, Default)]
pub struct TrainOptions {
    /// Show the progress bar (still hidden when stderr is not a terminal).
    pub progress: bool,
    /// Continue from the latest checkpoint in `out/checkpoints` (a fresh start if none).
    pub resume: bool,
    /// Stop after this step even if `steps` is larger (saving a checkpoint): simulates an
    /// interruption in tests.
    pub stop_after: Option<u64>,
    /// Write plots at the end.
    pub plots: bool,
    /// A fresh run in a directory that holds another run moves that run aside
    /// (`DIR.old-<time>`) instead of failing; see [`rundir`].
    pub overwrite: bool,
    /// Several processes (`mpirun -n K chi-mpi train`): local SGD, averaging the parameters every
    /// this many steps, instead of averaging gradients every step.
    pub local_sgd: Option<u64>,
    /// Several processes: gradient bucket size in bytes (default 1 MiB).
    pub bucket_bytes: Option<usize>,
    /// Several processes: exchange gradients only after backward (default: during it).
    pub no_overlap: bool,
}

/// What a finished [`train`] call reports.
#[derive(Clone, Debug)]
pub struct TrainSummary {
    /// Steps completed.
    pub step: u64,
    /// `(step, loss)` of the steps run in this call.
    pub losses: Vec<(u64, f32)>,
    /// Final test metrics.
    pub test: BTreeMap<String, f64>,
    /// Last checkpoint written.
    pub checkpoint: PathBuf,
}

/// A built run: dataset, model, optimiser and the stateful generators.
pub struct Run {
    /// The configuration.
    pub cfg: Config,
    /// The data.
    pub dataset: Dataset,
    /// The model.
    pub model: Box<dyn Model>,
    /// The optimiser.
    pub optim: Optimizer<f32>,
    /// Mini-batch order.
    pub batcher: Batcher,
    /// Dropout stream.
    pub dropout_rng: Rng,
    /// Steps completed.
    pub step: u64,
}

/// The generators of a run, forked from `Rng::new(seed)` in this order (see Determinism).
pub struct RunStreams {
    /// Data generation and splitting.
    pub data: Rng,
    /// Parameter initialisation.
    pub init: Rng,
    /// Mini-batch order.
    pub shuffle: Rng,
    /// Dropout masks.
    pub dropout: Rng,
}

impl RunStreams {
    /// The streams of seed `seed`.
    pub fn new(seed: u64) -> RunStreams {
        let mut master = Rng::new(seed);
        RunStreams { data: master.fork(), init: master.fork(), shuffle: master.fork(), dropout: master.fork() }
    }
}

impl Run {
    /// Builds everything from the seed: data, model (initialised), optimiser, batcher.
    pub fn new(cfg: &Config) -> Result<Run, String> {
        Run::with_ranks(cfg, 1)
    }

    /// [`Run::new`] for `ranks` data-parallel processes: the batcher draws global batches of
    /// `ranks × batch_size` examples, which the ranks split ([`chi_nn::dist::shard`]).
    pub fn with_ranks(cfg: &Config, ranks: usize) -> Result<Run, String> {
        cfg.validate()?;
        let RunStreams { mut data, mut init, shuffle, dropout } = RunStreams::new(cfg.seed);
        let dataset = (registry::dataset_entry(&cfg.dataset)?.build)(&cfg.data, &mut data)?;
        check_dataset(&cfg.dataset, &dataset)?;
        let model = registry::build_model(&registry::model_entry(&cfg.model)?, &cfg.model_options, &dataset, &mut init)?;
        cfg.block.validate(model.store())?;
        let optim = Optimizer::try_new(cfg.optim.clone())?;
        let global = cfg.batch_size.checked_mul(ranks).ok_or_else(|| format!("batch_size {} × {ranks} ranks overflows", cfg.batch_size))?;
        let batcher = Batcher::new(dataset.train.len(), global, true, shuffle);
        Ok(Run { cfg: cfg.clone(), dataset, model, optim, batcher, dropout_rng: dropout, step: 0 })
    }

    /// Loads a full checkpoint written by [`Run::save`] (all-or-nothing).
    pub fn load(&mut self, path: &Path) -> Result<(), String> {
        let meta = checkpoint::read_checkpoint_meta(path)?;
        let raw = meta.extra.get("batcher").ok_or_else(|| format!("{}: checkpoint lacks the batcher state", path.display()))?;
        let bs: data::BatcherState = serde_json::from_str(raw).map_err(|e| format!("{}: the checkpoint's batcher state is unreadable: {e}", path.display()))?;
        let drop = *meta.rngs.get("dropout").ok_or_else(|| format!("{}: checkpoint lacks the dropout RNG state", path.display()))?;
        // Checked before anything is changed: a refused checkpoint leaves the run as it was.
        let mut batcher = self.batcher.clone();
        batcher.restore(bs).map_err(|e| format!("{}: {e}", path.display()))?;
        let meta = checkpoint::load_checkpoint(path, self.model.store().params(), &mut self.optim)?;
        self.batcher = batcher;
        self.dropout_rng = Rng::from_state(drop);
        self.step = meta.step;
        Ok(())
    }

    /// Saves a full checkpoint (parameters, optimiser, step, generators, config).
    pub fn save(&self, path: &Path) -> Result<(), String> {
        callbacks::save_run_checkpoint(path, &self.cfg, self.model.store().params(), &self.optim, &self.batcher, &self.dropout_rng, self.step)
    }

    /// Test-split metrics (and the validation split's, as `valid_*`, when there is one).
    pub fn evaluate_test(&self) -> BTreeMap<String, f64> {
        evaluate_splits(self.model.as_ref(), &self.dataset)
    }
}

/// Examples per forward pass when evaluating a split.
const EVAL_CHUNK: usize = 1024;

/// The test metrics and, when the dataset has a validation split, its metrics as `valid_*`.
pub fn evaluate_splits(model: &dyn Model, ds: &Dataset) -> BTreeMap<String, f64> {
    let scale = ds.schema.as_ref().and_then(|s| s.target_scale);
    let mut m = registry::evaluate_scaled(model, ds.task, &ds.test, EVAL_CHUNK, scale);
    if let Some(v) = &ds.valid {
        for (k, x) in registry::evaluate_scaled(model, ds.task, v, EVAL_CHUNK, scale) {
            m.insert(format!("valid_{k}"), x);
        }
    }
    m
}

fn prune(dir: &Path, keep: usize) {
    rundir::prune_checkpoints(dir, keep)
}

/// Trains according to `cfg`, writing everything to `out` (see the module docs).
///
/// As one of several processes (`mpirun -n K`, see [`crate::dist`]) every rank calls it; rank 0
/// runs as above and leads, the others take the configuration (and any checkpoint to resume
/// from) from rank 0, ignore their own `cfg` and `out`, and write nothing.
pub fn train(cfg: &Config, out: &Path, opts: &TrainOptions) -> Result<TrainSummary, String> {
    let comm = crate::dist::world().filter(|c| c.size() > 1);
    let ranks = comm.as_ref().map_or(1, |c| c.size());
    if let Some(c) = comm.as_ref().filter(|c| c.rank() != 0) {
        return distributed::worker(opts, c.clone());
    }
    let setup = setup(cfg, out, opts, ranks);
    if let Some(c) = &comm {
        distributed::lead(&**c, setup.as_ref().map_err(|e| e.as_str()))?;
    }
    let (mut run, resumed, _lock) = match setup? {
        Setup::Ready { run, resumed, lock, .. } => (run, resumed, lock),
        Setup::Finished(summary) => return Ok(summary),
    };
    if cfg.optim.lr == 0.0 {
        // Legal (it measures the model as initialised), but more often a slip than a choice.
        eprintln!("chi: warning: the learning rate is 0: every schedule scales it, so the weights never change and the run measures the model as initialised");
    }
    let ckdir = out.join("checkpoints");
    let start = run.step;
    let keep = resumed.then_some(start);
    let log_path = out.join(format!("log.{}", cfg.log_format.ext()));
    let log = Logger::open(&log_path, cfg.log_format, &["step", "epoch", "loss", "lr", "grad_norm", "block", "examples_per_sec"], keep)?;
    let gf_log = Logger::open(&out.join("gradflow.csv"), LogFormat::Csv, &["step", "param", "norm"], keep)?;
    let gft_log = Logger::open(&out.join("gradflow_time.csv"), LogFormat::Csv, &["step", "t", "norm"], keep)?;
    let metric_names: Vec<String> = run.evaluate_test_names();
    let mut eval_cols: Vec<&str> = vec!["step", "split"];
    eval_cols.extend(metric_names.iter().map(|s| s.as_str()));
    // A run killed after its final checkpoint but before its summary already logged the final
    // evaluation, which is about to be repeated.
    let eval_keep = keep.map(|k| if k == cfg.steps { k.saturating_sub(1) } else { k });
    let eval_log = Logger::open(&out.join("eval.jsonl"), LogFormat::Jsonl, &eval_cols, eval_keep)?;

    let names: Vec<String> = run.model.store().params().iter().map(|p| p.name().to_string()).collect();
    let end = opts.stop_after.map_or(cfg.steps, |s| s.min(cfg.steps)).max(start);
    let bar = progress::Progress::new(cfg.steps, start, opts.progress);
    let Run { dataset, model, optim, batcher, dropout_rng, .. } = &mut run;
    let (model, dataset) = (&**model, &*dataset);
    let rngs = callbacks::RunRngs::new(batcher, dropout_rng);
    let flow_every = cfg.gradflow_every;
    let mut trainer = Trainer::new(model.store(), optim);
    let dp = comm.as_ref().map(|c| distributed::data_parallel(c.clone(), opts)).transpose()?;
    if let Some(dp) = &dp {
        trainer = trainer.data_parallel(dp.clone());
    }
    let t_fit = Instant::now();
    let fit = trainer
        .steps(cfg.steps)
        .stop_at(end)
        .clip_norm_opt(cfg.clip_norm)
        .schedule(cfg.schedule.clone())
        .block(cfg.block.clone())
        .eval_every(cfg.eval_every)
        .eval_at_end(true)
        .evaluate(|_| evaluate_splits(model, dataset))
        .checkpoint_every(cfg.checkpoint_every)
        .checkpoint_at_end(true)
        // Logs first: they flush before a checkpoint is written.
        .callback(callbacks::StepLog { log, every: cfg.log_every, bar: &bar, end, rngs: &rngs, t0: Instant::now() })
        .callback(callbacks::GradFlowLog { params: gf_log, time: gft_log, names, every: flow_every })
        .callback(callbacks::EvalLog { log: eval_log, metrics: metric_names, steps: cfg.steps, bar: &bar })
        .callback(callbacks::Checkpointer { dir: ckdir.clone(), keep: cfg.keep_checkpoints, cfg, rngs: &rngs })
        .resume(TrainerState { step: start })
        .fit((start..).map(|s| (s, rngs.next_batch())), |(s, global)| {
            let flow = callbacks::GradFlowLog::records(flow_every, s + 1);
            let Some(idx) = distributed::my_shard(comm.as_deref(), &global) else { return distributed::empty_step() };
            let mut rank_dropout = distributed::dropout_stream(comm.as_deref(), cfg.seed, s);
            let mut forward = || match rank_dropout.as_mut() {
                Some(r) => model.forward(&dataset.train, idx, true, r),
                None => model.forward(&dataset.train, idx, true, &mut **rngs.dropout.borrow_mut()),
            };
            // ‖∂L/∂h_t‖ needs a graph node per time step: the whole-sequence LSTM op would keep
            // the recurrent part of each step's gradient inside itself.
            let fo = if flow { chi_nn::layers::with_stepwise_recurrence(forward) } else { forward() };
            let loss = registry::task_loss(dataset.task, &fo.output, &dataset.train, idx);
            let out = StepOutput::new(loss).weight(idx.len() as f64);
            if flow {
                gradflow::retain_hidden(&fo.hidden);
                out.keep(fo.hidden)
            } else {
                out
            }
        })
        .map_err(|e| match e {
            // A log or checkpoint write failed: its message names the file.
            TrainError::Callback { source, .. } => source.to_string(),
            e @ TrainError::NonFiniteLoss { .. } => {
                let kept = std::fs::read_dir(&ckdir).map(|d| d.count()).unwrap_or(0);
                let ckpts = if kept > 0 { format!("; the checkpoints in {} are of steps before it", ckdir.display()) } else { String::new() };
                format!("{e} (learning rate {}): a lower --lr, or --clip-norm, may keep it finite{ckpts}", fmt_rate(cfg.optim.lr))
            }
            e => e.to_string(),
        })?;
    run.step = fit.state.step;
    if let Some(dp) = &dp {
        distributed::report(out, dp, t_fit.elapsed().as_secs_f64(), run.step - start, opts)?;
    }
    if let Some((best, step, last)) = diverging(&fit.losses, start == 0) {
        eprintln!(
            "warning: the training loss ended at {} (median of the last ten steps), {:.0}× the loss at step {step} ({}): the run diverged; a lower --lr (now {}) or --clip-norm may help",
            fmt_value(last),
            last / best,
            fmt_value(best),
            fmt_rate(cfg.optim.lr)
        );
    } else if fit.finished {
        if let Some((before, last, steps)) = still_improving(&fit.eval_curve("valid_loss")) {
            // Each step reads a batch on every rank.
            let passes = run.step as f64 * (cfg.batch_size * ranks) as f64 / run.dataset.train.len().max(1) as f64;
            eprintln!(
                "note: the validation loss was still falling when the run ended ({before:.4} → {last:.4} over its last {steps} steps; {} steps were {passes:.1} passes over the {} training examples): a longer run (--steps) may do better",
                run.step,
                run.dataset.train.len()
            );
        }
    }
    let losses = fit.losses.iter().map(|&(s, l)| (s, l as f32)).collect();
    let test = fit.last_eval().cloned().unwrap_or_default();
    let final_ckpt = ckdir.join(checkpoint::checkpoint_name(run.step));
    if run.step == cfg.steps {
        let mut meta: BTreeMap<String, String> =
            [("step".to_string(), run.step.to_string()), ("config".to_string(), serde_json::to_string(cfg).unwrap())].into_iter().collect();
        // The data schema travels with the weights, so a copied model.safetensors still reads new files.
        if let Some(schema) = &run.dataset.schema {
            meta.insert("data_schema".into(), serde_json::to_string(schema).map_err(|e| e.to_string())?);
        }
        checkpoint::save_params(&out.join("model.safetensors"), run.model.store().params(), &meta)?;
        let summary = serde_json::json!({ "step": run.step, "test": test, "model": cfg.model, "dataset": cfg.dataset, "seed": cfg.seed, "ranks": ranks });
        checkpoint::atomic_write(&out.join("summary.json"), serde_json::to_string_pretty(&summary).unwrap().as_bytes())?;
    }
    if opts.plots {
        write_plots(out, cfg.log_format)?;
    }
    Ok(TrainSummary { step: run.step, losses, test, checkpoint: final_ckpt })
}

/// Whether a run stopped while its validation loss was still falling: the last of at least three
/// evaluations `(step, loss)` is the lowest, and more than 1 % below the one before it. Returns
/// that evaluation's loss, the last one and the steps between them.
fn still_improving(curve: &[(f64, f64)]) -> Option<(f64, f64, u64)> {
    let [.., (s0, before), (s1, last)] = *curve else { return None };
    let lowest = curve.iter().all(|&(_, l)| l >= last);
    (curve.len() >= 3 && last.is_finite() && lowest && last < 0.99 * before).then_some((before, last, (s1 - s0) as u64))
}

/// Whether the training loss ended far above where it was, judged on the median loss of blocks
/// of ten steps (medians, so single spikes do not count): the last block's above 10 times the
/// loss of the run's first step (a run that blew up at once; only when `from_start`, since a
/// resumed run's first batch says little), or above 100 times the lowest block's (one that
/// learned, then blew up). Returns the reference (that first loss and its step, or the lowest
/// block median and the step its block ended at) and the last block's median.
fn diverging(losses: &[(u64, f64)], from_start: bool) -> Option<(f64, u64, f64)> {
    let median = |c: &[(u64, f64)]| chi_nn::metrics::median(&c.iter().map(|l| l.1).collect::<Vec<_>>());
    let blocks: Vec<(u64, f64)> = losses.chunks(10).filter(|c| c.len() == 10).map(|c| (c[9].0, median(c))).collect();
    let &(_, last) = blocks.last()?;
    let &(step, best) = blocks.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    if !last.is_finite() {
        return None;
    }
    let (s0, first) = losses[0];
    if from_start && first > 0.0 && last > 10.0 * first {
        return Some((first, s0, last));
    }
    (best > 0.0 && last > 100.0 * best).then_some((best, step, last))
}

/// Checks a built dataset before training on it: both splits non-empty, one target per
/// example, finite inputs and targets, class labels below the class count and every class
/// present in the training split. Errors name the dataset, the split, the example and the problem.
pub fn check_dataset(name: &str, ds: &Dataset) -> Result<(), String> {
    for (split, s) in [("training", &ds.train), ("validation", ds.valid.as_ref().unwrap_or(&ds.train)), ("test", &ds.test)] {
        if s.is_empty() {
            return Err(format!("dataset {name:?}: the {split} split is empty (its metrics would be NaN)"));
        }
        if s.targets.len() != s.len() {
            return Err(format!("dataset {name:?}: the {split} split has {} examples but {} targets", s.len(), s.targets.len()));
        }
        if let data::Inputs::Dense { x, .. } = &s.inputs {
            if let Some(i) = x.iter().position(|v| !v.is_finite()) {
                return Err(format!("dataset {name:?}: {split} input value {i} is {} (inputs must be finite)", x[i]));
            }
        }
        if let data::Targets::Values(v) = &s.targets {
            if let Some(i) = v.iter().position(|t| !t.is_finite()) {
                return Err(format!("dataset {name:?}: {split} target of example {i} is {} (targets must be finite)", v[i]));
            }
        }
        let classes = match ds.task {
            data::Task::Classification { classes } => classes,
            data::Task::Binary => 2,
            data::Task::Regression => continue,
        };
        let mut seen = vec![false; classes];
        for i in 0..s.len() {
            let c = s.targets.class(i);
            if c >= classes {
                return Err(format!("dataset {name:?}: {split} label {c} of example {i} is out of range for {classes} classes"));
            }
            seen[c] = true;
        }
        if split == "training" {
            if let Some(c) = seen.iter().position(|&x| !x) {
                return Err(format!("dataset {name:?}: class {c} of {classes} never occurs in the training split (use more examples or fewer classes)"));
            }
        }
    }
    Ok(())
}

/// What [`setup`] found.
enum Setup {
    /// Built (and, when resuming, loaded): train from `run.step`.
    Ready { run: Run, resumed: bool, lock: rundir::RunLock, checkpoint: Option<PathBuf> },
    /// `--resume` of a run that already finished: nothing to do.
    Finished(TrainSummary),
}

/// Takes the run directory ([`rundir::prepare`]), finds the resume point, checks `cfg` against
/// the directory's configuration and the checkpoint's sizes, builds the run, loads the
/// checkpoint and writes `config.toml`.
fn setup(cfg: &Config, out: &Path, opts: &TrainOptions, ranks: usize) -> Result<Setup, String> {
    cfg.validate()?;
    if let Some(data) = cfg.data.path.as_deref().map(Path::new).filter(|d| cfg.dataset == registry::FILE_DATASET && d.is_dir()) {
        // Checkpoints and logs inside a text folder would be read as texts by the next run.
        if rundir::lies_within(out, data) {
            return Err(format!("--out {} is inside the data folder {}: the run's files would become examples of the next run on it; choose an --out outside it", out.display(), data.display()));
        }
    }
    let lock = rundir::prepare(out, opts.resume, opts.overwrite)?;
    let point = if opts.resume { Some(rundir::resume_point(out)?) } else { None };
    if let Some(p) = &point {
        if !p.config.same_run_as(cfg) {
            let from = p.checkpoint.as_ref().map_or_else(|| out.join("config.toml"), |c| c.0.clone());
            return Err(format!(
                "{}: the run was made with a different configuration ({}); resume with the run's config (only `steps` may change)",
                from.display(),
                config_diff(&p.config, cfg)
            ));
        }
    }
    let ckpt = point.and_then(|p| p.checkpoint);
    if let Some((path, step)) = &ckpt {
        if *step > cfg.steps {
            return Err(format!("{}: the run is at step {step}, beyond steps = {}; pass --steps {step} or more", path.display(), cfg.steps));
        }
        check_checkpoint_sizes(cfg, path)?;
    }
    let user_data = cfg.dataset == registry::FILE_DATASET;
    if opts.resume && user_data {
        check_same_fingerprint(cfg, out)?;
    }
    let mut run = Run::with_ranks(cfg, ranks)?;
    if opts.resume && user_data {
        check_same_schema(cfg, out, run.dataset.schema.as_deref())?;
    }
    if let Some((path, step)) = &ckpt {
        run.load(path)?;
        if rundir::is_finished(out, *step, cfg.steps) {
            let test = run.evaluate_test();
            return Ok(Setup::Finished(TrainSummary { step: *step, losses: Vec::new(), test, checkpoint: path.clone() }));
        }
    }
    if let (true, Some(schema)) = (user_data, &run.dataset.schema) {
        eprintln!("{}", files::describe(schema, &cfg.data));
    }
    checkpoint::atomic_write(&out.join("config.toml"), cfg.to_toml().as_bytes())?;
    if let Some(schema) = &run.dataset.schema {
        let json = serde_json::to_string_pretty(schema).map_err(|e| format!("data.json: {e}"))?;
        checkpoint::atomic_write(&out.join(DATA_SCHEMA_FILE), json.as_bytes())?;
    }
    if user_data && !opts.resume {
        let fp = files::DataFingerprint::of(&cfg.data)?;
        let json = serde_json::to_string_pretty(&fp).map_err(|e| format!("{}: {e}", files::DATA_FINGERPRINT_FILE))?;
        checkpoint::atomic_write(&out.join(files::DATA_FINGERPRINT_FILE), json.as_bytes())?;
    }
    Ok(Setup::Ready { run, resumed: opts.resume, lock, checkpoint: ckpt.map(|c| c.0) })
}

/// The refusal of a resume whose data differs from the data the run started with.
fn data_changed(path: &str) -> String {
    format!("the data ({path}) changed since this run started: resume needs the same data; start a new run (another --out, or --overwrite)")
}

/// Refuses to resume when the run's data files differ from their fingerprint recorded at the
/// run's start ([`files::DATA_FINGERPRINT_FILE`]); a run made without one is checked by its
/// schema alone ([`check_same_schema`]).
fn check_same_fingerprint(cfg: &Config, out: &Path) -> Result<(), String> {
    let file = out.join(files::DATA_FINGERPRINT_FILE);
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{}: cannot read the run's data fingerprint: {e}", file.display())),
    };
    let recorded: files::DataFingerprint =
        serde_json::from_str(&text).map_err(|e| format!("{}: not a data fingerprint written by chi train ({e}); the run's files were edited", file.display()))?;
    let now = files::DataFingerprint::of(&cfg.data)?;
    match now.changed_since(&recorded) {
        Some(s) => Err(data_changed(&s.path)),
        None => Ok(()),
    }
}

/// Refuses to resume when the data, read and fitted again, gives another schema (statistics,
/// categories, vocabulary, classes) than the run's `data.json`. The two are compared as the
/// JSON text the run wrote: a float read back from JSON may differ from the one written in its
/// last bit, the text of the same value does not.
fn check_same_schema(cfg: &Config, out: &Path, fresh: Option<&chi_nn::userdata::DataSchema>) -> Result<(), String> {
    let file = out.join(DATA_SCHEMA_FILE);
    let (Some(fresh), Ok(text)) = (fresh, std::fs::read_to_string(&file)) else { return Ok(()) };
    // A file that is not a schema at all was damaged or edited; the data may be as it was.
    if serde_json::from_str::<chi_nn::userdata::DataSchema>(&text).is_err() {
        return Err(format!(
            "{} is not a data schema written by chi train (damaged or edited?): restore it, or start a new run (another --out, or --overwrite)",
            file.display()
        ));
    }
    if !same_schema(fresh, &text) {
        return Err(format!(
            "the data ({}), read again, gives another preprocessing than the run's {} (its statistics, categories, vocabulary or classes): the data changed since this run started, or the run was made by a chi whose rules for reading files differ; resume needs the same data read the same way; start a new run (another --out, or --overwrite)",
            cfg.data.path.as_deref().unwrap_or("?"),
            file.display()
        ));
    }
    Ok(())
}

/// Whether `fresh` is the schema whose JSON is `saved`. Both are compared as JSON values parsed
/// from text: a float read back from JSON may differ from the one written in its last bit, but
/// the same float is written as the same text, and the same text parses to the same value.
pub fn same_schema(fresh: &chi_nn::userdata::DataSchema, saved: &str) -> bool {
    let parse = |t: &str| serde_json::from_str::<serde_json::Value>(t).ok();
    let fresh = serde_json::to_string(fresh).ok();
    matches!((fresh.as_deref().and_then(parse), parse(saved)), (Some(a), Some(b)) if a == b)
}

/// The keys whose values differ between two configurations (`steps` aside), as
/// `key: a in the run, b now`; within tables, the dotted keys that differ (`optim.lr`), not the
/// whole tables.
pub fn config_diff(a: &Config, b: &Config) -> String {
    config_diff_as(a, "in the run", b, "now")
}

/// [`config_diff`] with the words that say where each value is from: `key: a {a_is}, b {b_is}`.
pub fn config_diff_as(a: &Config, a_is: &str, b: &Config, b_is: &str) -> String {
    use serde_json::Value;
    fn walk(path: &str, va: &Value, vb: &Value, is: (&str, &str), diffs: &mut Vec<String>) {
        let key = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
        match (va.as_object(), vb.as_object()) {
            // Tables of the same kind (or untagged) differ key by key.
            (Some(ma), Some(mb)) if ma.get("kind") == mb.get("kind") => {
                for (k, x) in ma {
                    walk(&key(k), x, mb.get(k).unwrap_or(&Value::Null), is, diffs);
                }
                for (k, y) in mb.iter().filter(|(k, _)| !ma.contains_key(*k)) {
                    walk(&key(k), &Value::Null, y, is, diffs);
                }
            }
            _ if va != vb && path != "steps" => diffs.push(format!("{path}: {va} {}, {vb} {}", is.0, is.1)),
            _ => {}
        }
    }
    let (ja, jb) = (serde_json::to_value(a).unwrap_or_default(), serde_json::to_value(b).unwrap_or_default());
    let mut diffs = Vec::new();
    walk("", &ja, &jb, (a_is, b_is), &mut diffs);
    diffs.join("; ")
}

/// Refuses a checkpoint whose configuration asks for a model larger than the parameters the
/// file holds (a forged or mismatched config), before the model is built.
pub fn check_checkpoint_sizes(cfg: &Config, path: &Path) -> Result<(), String> {
    check_checkpoint_shapes(cfg, path, &checkpoint::read_tensor_shapes(path)?)
}

/// [`check_checkpoint_sizes`] with the file's tensor shapes already read (reading them parses
/// and checksums the whole file).
pub fn check_checkpoint_shapes(cfg: &Config, path: &Path, shapes: &BTreeMap<String, Vec<usize>>) -> Result<(), String> {
    let held = held_values(shapes);
    let need = cfg.min_parameters();
    if need > held {
        return Err(format!(
            "{}: the configuration in the checkpoint (hidden {:?}) needs at least {need} parameter values, but the file holds {held}: the checkpoint is inconsistent",
            path.display(),
            cfg.model_options.hidden
        ));
    }
    Ok(())
}

/// The number of parameter values a weights file holds, from its tensor shapes.
pub fn held_values(shapes: &BTreeMap<String, Vec<usize>>) -> u128 {
    shapes.values().map(|s| s.iter().map(|&d| d as u128).product::<u128>()).sum()
}

impl Run {
    fn evaluate_test_names(&self) -> Vec<String> {
        let names: Vec<String> = match self.dataset.task {
            data::Task::Regression => vec!["loss".into(), "mse".into(), "pearson".into(), "spearman".into()],
            _ => vec!["loss".into(), "accuracy".into()],
        };
        match self.dataset.valid {
            Some(_) => names.iter().cloned().chain(names.iter().map(|n| format!("valid_{n}"))).collect(),
            None => names,
        }
    }
}

/// `k=v` pairs for messages.
pub fn fmt_metrics(m: &BTreeMap<String, f64>) -> String {
    m.iter().map(|(k, v)| format!("{k} {}", fmt_value(*v))).collect::<Vec<_>>().join(", ")
}

/// A metric with four decimals between 0.001 and a million (and at 0), else with five
/// significant digits in exponent form: `0.0000` for an MSE of 2e-5, or 31 digits for a loss
/// of 1e30, say nothing.
pub fn fmt_value(v: f64) -> String {
    if v == 0.0 || !v.is_finite() || (1e-3..1e6).contains(&v.abs()) {
        format!("{v:.4}")
    } else {
        format!("{v:.4e}")
    }
}

/// A learning rate as written (`0.001`, `30`) between 1e-4 and a million, else in exponent form
/// (`1e300`, not 301 digits).
pub fn fmt_rate(v: f64) -> String {
    if v == 0.0 || !v.is_finite() || (1e-4..1e6).contains(&v.abs()) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// Metrics that are undefined, not wrong, when NaN: correlations and R² of fewer than two
/// examples or of equal targets. A run or an evaluation with one of these NaN still succeeds.
pub const UNDEFINED_OK: &[&str] = &["pearson", "spearman", "r2", "valid_pearson", "valid_spearman"];

/// Says which of [`UNDEFINED_OK`] are NaN in `m` and why they can be.
pub fn note_undefined(m: &BTreeMap<String, f64>, what: &str) {
    let undefined: Vec<&str> = m.iter().filter(|(k, v)| v.is_nan() && UNDEFINED_OK.contains(&k.as_str())).map(|(k, _)| k.as_str()).collect();
    if !undefined.is_empty() {
        eprintln!("note: {} undefined (n/a) on the {what}: correlations and R² need at least two examples, targets that are not all equal, and predictions that are not all equal (a model that predicts one value everywhere learned nothing)", undefined.join(", "));
    }
}

/// Draws the plots of a run directory from its logs: `loss`, `eval`, `gradflow`,
/// `gradflow_time` and `gradflow_time_lines` as SVG and PNG (where there is data).
pub fn write_plots(out: &Path, format: LogFormat) -> Result<(), String> {
    let log_path = out.join(format!("log.{}", format.ext()));
    let loss = log::read_column(&log_path, "loss")?;
    for ext in ["svg", "png"] {
        let pts: Vec<(f64, f64)> = loss.iter().map(|(s, v)| (*s as f64, *v)).collect();
        // Smoothed curve (moving average over ~1% of the run) next to the raw one.
        let w = (pts.len() / 100).max(1);
        let smooth: Vec<(f64, f64)> =
            pts.windows(w).map(|win| (win[win.len() - 1].0, win.iter().map(|p| p.1).sum::<f64>() / win.len() as f64)).collect();
        let series = vec![("loss".to_string(), pts), (format!("mean of {w}"), smooth)];
        plot::line_plot(&out.join(format!("loss.{ext}")), &plot::LinePlot { title: "training loss", x_label: "step", y_label: "loss", log_y: false, series: &series })?;
        let ev = out.join("eval.jsonl");
        if ev.exists() {
            let mut series = Vec::new();
            for m in ["accuracy", "loss", "pearson", "spearman", "mse"] {
                for (split, key) in [("test", m.to_string()), ("validation", format!("valid_{m}"))] {
                    let c = log::read_column(&ev, &key)?;
                    if !c.is_empty() {
                        series.push((format!("{split} {m}"), c.iter().map(|(s, v)| (*s as f64, *v)).collect()));
                    }
                }
            }
            let title = if series.iter().any(|s| s.0.starts_with("validation")) { "validation and test metrics" } else { "test metrics" };
            plot::line_plot(&out.join(format!("eval.{ext}")), &plot::LinePlot { title, x_label: "step", y_label: "value", log_y: false, series: &series })?;
        }
        let gf = read_gradflow(out)?;
        if !gf.params.is_empty() {
            let series = gf.param_series();
            plot::line_plot(
                &out.join(format!("gradflow.{ext}")),
                &plot::LinePlot { title: "gradient norm per parameter", x_label: "step", y_label: "‖∂L/∂θ‖", log_y: true, series: &series },
            )?;
        }
        if !gf.time.is_empty() {
            let (steps, rows) = gf.time_matrix();
            let ys: Vec<f64> = steps.iter().map(|s| *s as f64).collect();
            plot::heatmap(&out.join(format!("gradflow_time.{ext}")), "‖∂L/∂h_t‖ per time step", "time step t", "training step", &ys, &rows)?;
            // The same numbers as curves over t for up to four recorded steps (first … last).
            let picks: Vec<usize> = if rows.len() <= 4 { (0..rows.len()).collect() } else { (0..4).map(|k| k * (rows.len() - 1) / 3).collect() };
            let series: Vec<(String, Vec<(f64, f64)>)> = picks
                .iter()
                .map(|&i| (format!("step {}", steps[i]), rows[i].iter().enumerate().map(|(t, v)| (t as f64, *v)).collect()))
                .collect();
            plot::line_plot(
                &out.join(format!("gradflow_time_lines.{ext}")),
                &plot::LinePlot { title: "‖∂L/∂h_t‖ against time step", x_label: "time step t", y_label: "‖∂L/∂h_t‖", log_y: true, series: &series },
            )?;
        }
    }
    Ok(())
}

/// Reads `gradflow.csv` and `gradflow_time.csv` of a run directory.
pub fn read_gradflow(out: &Path) -> Result<gradflow::GradFlow, String> {
    let mut g = gradflow::GradFlow::default();
    if let Ok(t) = std::fs::read_to_string(out.join("gradflow.csv")) {
        for l in t.lines().skip(1) {
            let f: Vec<&str> = l.split(',').collect();
            if let (Some(Ok(s)), Some(n), Some(Ok(v))) = (f.first().map(|x| x.parse()), f.get(1), f.get(2).map(|x| x.parse())) {
                g.params.push((s, n.to_string(), v));
            }
        }
    }
    if let Ok(t) = std::fs::read_to_string(out.join("gradflow_time.csv")) {
        for l in t.lines().skip(1) {
            let f: Vec<&str> = l.split(',').collect();
            if let (Some(Ok(s)), Some(Ok(tt)), Some(Ok(v))) = (f.first().map(|x| x.parse()), f.get(1).map(|x| x.parse()), f.get(2).map(|x| x.parse())) {
                g.time.push((s, tt, v));
            }
        }
    }
    Ok(g)
}

/// Loads a full checkpoint, rebuilds its run from the saved config (same seed → same data) and
/// evaluates the test split (`split = "test"`) or the training split (`"train"`).
pub fn evaluate_checkpoint(path: &Path, split: &str) -> Result<(Config, u64, BTreeMap<String, f64>), String> {
    let meta = checkpoint::read_checkpoint_meta(path)?;
    let cfg: Config = serde_json::from_str(&meta.config).map_err(|e| format!("{}: bad config in checkpoint: {e}", path.display()))?;
    cfg.validate().map_err(|e| format!("{}: bad config in checkpoint: {e}", path.display()))?;
    if meta.step > cfg.steps {
        return Err(format!("{}: step {} is beyond the run's steps = {}", path.display(), meta.step, cfg.steps));
    }
    check_checkpoint_sizes(&cfg, path)?;
    let mut run = Run::new(&cfg)?;
    run.load(path)?;
    let s = match split {
        "test" => &run.dataset.test,
        "train" => &run.dataset.train,
        _ => return Err(format!("unknown split {split:?} (test or train)")),
    };
    let m = registry::evaluate_scaled(run.model.as_ref(), run.dataset.task, s, 1024, run.dataset.schema.as_ref().and_then(|s| s.target_scale));
    Ok((cfg, run.step, m))
}

#[cfg(test)]
mod tests {
    use super::{diverging, still_improving};

    /// The size checks count a layer's gates: four for an LSTM, one for a dense layer (whose
    /// 16000 × 16000 weight is within the element limit that 4 × 16000 × 16000 is not).
    #[test]
    fn size_checks_count_the_gates_the_model_has() {
        let cfg = |model: &str, hidden: Vec<usize>| super::Config { model: model.into(), model_options: super::ModelConfig { hidden, ..Default::default() }, ..Default::default() };
        let mlp = cfg("mlp", vec![16000, 16000]).check_sizes();
        assert!(mlp.as_ref().map_or_else(|e| !e.contains("weight matrix"), |_| true), "{mlp:?}");
        let lstm = cfg("lstm", vec![16000]).check_sizes().unwrap_err();
        assert!(lstm.contains("hidden × 4·hidden"), "{lstm}");
        let gru = cfg("gru", vec![16000]).check_sizes().unwrap_err();
        assert!(gru.contains("hidden × 3·hidden"), "{gru}");
    }

    #[test]
    fn a_run_diverges_when_its_last_ten_steps_sit_far_above_its_start_or_its_best() {
        let run = |f: &dyn Fn(u64) -> f64| (1..=40).map(|s| (s, f(s))).collect::<Vec<_>>();
        assert_eq!(diverging(&run(&|s| if s <= 30 { 1.0 } else { 500.0 }), true), Some((1.0, 1, 500.0)));
        // Learned (from 2 to 0.01), then rose to 2 again: 200× its lowest, not above the start.
        assert_eq!(diverging(&run(&|s| if s <= 10 { 2.0 } else if s <= 30 { 0.01 } else { 2.0 }), true), Some((0.01, 20, 2.0)));
        // Blew up at the second step and stayed there; resumed, the first batch is no reference.
        assert_eq!(diverging(&run(&|s| if s == 1 { 1.4 } else { 60.0 }), true), Some((1.4, 1, 60.0)));
        assert_eq!(diverging(&run(&|s| if s == 1 { 1.4 } else { 60.0 }), false), None);
        // Falling, flat, noisy with single bad steps, or too short: no warning.
        assert_eq!(diverging(&run(&|s| 1.0 / s as f64), true), None);
        assert_eq!(diverging(&run(&|s| if s % 10 == 3 { 50.0 } else { 0.5 }), true), None);
        assert_eq!(diverging(&run(&|s| if s == 40 { 500.0 } else { 1.0 }), true), None);
        assert_eq!(diverging(&[(1, 1.0), (2, 1e9)], true), None);
    }

    #[test]
    fn a_run_is_still_improving_only_if_its_last_validation_loss_is_the_lowest_by_a_margin() {
        assert_eq!(still_improving(&[(0.0, 1.0), (200.0, 0.8), (400.0, 0.7)]), Some((0.8, 0.7, 200)));
        // Flat (within 1 %), rising, or lowest earlier: converged or overfitting, no note.
        assert_eq!(still_improving(&[(0.0, 1.0), (200.0, 0.8), (400.0, 0.795)]), None);
        assert_eq!(still_improving(&[(0.0, 1.0), (200.0, 0.6), (400.0, 0.7)]), None);
        assert_eq!(still_improving(&[(0.0, 0.5), (200.0, 0.8), (400.0, 0.7)]), None);
        // Too few evaluations to tell, or a loss that is not a number.
        assert_eq!(still_improving(&[(0.0, 1.0), (200.0, 0.5)]), None);
        assert_eq!(still_improving(&[]), None);
        assert_eq!(still_improving(&[(0.0, 1.0), (200.0, 0.8), (400.0, f64::NAN)]), None);
    }
}
