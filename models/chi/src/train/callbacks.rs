//! What `chi train` hangs on the [`Trainer`](chi_nn::trainer::Trainer): the step log and
//! progress bar, gradient-flow records, the evaluation log and the run checkpoints.
//!
//! The data position (the [`Batcher`]) and the dropout generator are used by the training step
//! and saved by the checkpoints, so [`train`](super::train) keeps them in [`RunRngs`], shared by
//! reference between the batches, the step closure and [`Checkpointer`].

use super::gradflow;
use super::log::{Logger, Value};
use super::progress::Progress;
use super::Config;
use chi_autodiff::Rng;
use chi_nn::checkpoint::{self, CheckpointMeta};
use chi_nn::dataset::Batcher;
use chi_nn::optim::Optimizer;
use chi_nn::params::Param;
use chi_nn::trainer::{Callback, CallbackResult, Metrics, Snapshot, StepInfo};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The stateful data side of a run: mini-batch order and the dropout stream (both in every
/// checkpoint), and the number of examples seen in this call (for the throughput column).
pub struct RunRngs<'a> {
    /// Mini-batch order.
    pub batcher: RefCell<&'a mut Batcher>,
    /// Dropout stream.
    pub dropout: RefCell<&'a mut Rng>,
    /// Examples drawn since the start of this call.
    pub examples: Cell<usize>,
}

impl<'a> RunRngs<'a> {
    /// Shares `batcher` and `dropout` for one training call.
    pub fn new(batcher: &'a mut Batcher, dropout: &'a mut Rng) -> Self {
        RunRngs { batcher: RefCell::new(batcher), dropout: RefCell::new(dropout), examples: Cell::new(0) }
    }
    /// The next mini-batch (example indices), counted for the throughput.
    pub fn next_batch(&self) -> Vec<usize> {
        let idx = self.batcher.borrow_mut().next_batch();
        self.examples.set(self.examples.get() + idx.len());
        idx
    }
}

/// Saves a full run checkpoint (parameters, optimiser, step, generators, config); what
/// [`Run::load`](super::Run::load) reads back.
pub fn save_run_checkpoint(path: &Path, cfg: &Config, params: &[Param<f32>], optim: &Optimizer<f32>, batcher: &Batcher, dropout: &Rng, step: u64) -> Result<(), String> {
    let mut extra = BTreeMap::new();
    extra.insert("batcher".to_string(), serde_json::to_string(&batcher.state()).unwrap());
    let meta = CheckpointMeta {
        step,
        rngs: [("dropout".to_string(), dropout.state())].into_iter().collect(),
        config: serde_json::to_string(cfg).unwrap(),
        extra,
    };
    checkpoint::save_checkpoint(path, params, optim, &meta).map_err(String::from)
}

/// The per-step log (`log.jsonl` / `log.csv`) and the progress bar.
pub struct StepLog<'a> {
    /// The log file.
    pub log: Logger,
    /// Write a row every this many steps (0: never).
    pub every: u64,
    /// The progress bar.
    pub bar: &'a Progress,
    /// The last step of this call (the bar is updated there).
    pub end: u64,
    /// For the epoch and throughput columns.
    pub rngs: &'a RunRngs<'a>,
    /// Start of this call.
    pub t0: Instant,
}

impl Callback<f32> for StepLog<'_> {
    fn on_step_end(&mut self, info: &StepInfo<'_, f32>) -> CallbackResult {
        let done = info.step;
        if self.every > 0 && done % self.every == 0 {
            let eps = self.rngs.examples.get() as f64 / self.t0.elapsed().as_secs_f64().max(1e-9);
            self.log.row(&[
                Value::Int(done),
                Value::Int(self.rngs.batcher.borrow().epoch()),
                Value::Num(info.loss),
                Value::Num(info.lr),
                Value::Num(info.grad_norm),
                Value::Int(info.active_block.map_or(0, |a| a as u64)),
                Value::Num(eps),
            ])?;
        }
        if done % 10 == 0 || done == self.end {
            self.bar.update(done, format!("loss {:.4}", info.loss as f32));
        }
        Ok(())
    }
    fn on_checkpoint(&mut self, _: &Snapshot<'_, f32>) -> CallbackResult {
        Ok(self.log.flush()?)
    }
    fn on_train_end(&mut self, _: chi_nn::trainer::TrainerState) -> CallbackResult {
        self.bar.finish();
        Ok(self.log.flush()?)
    }
}

/// Gradient-flow records every `every` steps: per-parameter gradient norms (`gradflow.csv`)
/// and, for recurrent models, ‖∂L/∂h_t‖ of the hidden states the step kept
/// (`gradflow_time.csv`).
pub struct GradFlowLog {
    /// `step,param,norm`.
    pub params: Logger,
    /// `step,t,norm`.
    pub time: Logger,
    /// Parameter names, aligned with the trainer's parameters.
    pub names: Vec<String>,
    /// Record every this many steps (0: never).
    pub every: u64,
}

impl GradFlowLog {
    /// Whether step `done` (1-based) is recorded; the step closure keeps the hidden states then.
    pub fn records(every: u64, done: u64) -> bool {
        every > 0 && done % every == 0
    }
}

impl Callback<f32> for GradFlowLog {
    fn on_step_end(&mut self, info: &StepInfo<'_, f32>) -> CallbackResult {
        if !Self::records(self.every, info.step) {
            return Ok(());
        }
        for (n, v) in self.names.iter().zip(info.grads.norms()) {
            if let Some(v) = v {
                self.params.row(&[Value::Int(info.step), Value::Text(n.clone()), Value::Num(v)])?;
            }
        }
        for (t, v) in gradflow::hidden_grad_norms(info.tensors).into_iter().enumerate() {
            self.time.row(&[Value::Int(info.step), Value::Int(t as u64), Value::Num(v)])?;
        }
        Ok(())
    }
    fn on_checkpoint(&mut self, _: &Snapshot<'_, f32>) -> CallbackResult {
        self.params.flush()?;
        Ok(self.time.flush()?)
    }
    fn on_train_end(&mut self, _: chi_nn::trainer::TrainerState) -> CallbackResult {
        self.params.flush()?;
        Ok(self.time.flush()?)
    }
}

/// The evaluation log (`eval.jsonl`, split `test`); periodic evaluations are also printed.
pub struct EvalLog<'a> {
    /// The log file.
    pub log: Logger,
    /// Metric columns, in order.
    pub metrics: Vec<String>,
    /// The run's last step (its evaluation is the final one, not printed).
    pub steps: u64,
    /// Where periodic evaluations are printed.
    pub bar: &'a Progress,
}

impl Callback<f32> for EvalLog<'_> {
    fn on_eval(&mut self, step: u64, m: &Metrics) -> CallbackResult {
        let mut row = vec![Value::Int(step), Value::Text("test".into())];
        row.extend(self.metrics.iter().map(|k| Value::Num(m[k])));
        self.log.row(&row)?;
        self.log.flush()?;
        if step != self.steps {
            self.bar.println(&format!("step {step}: test {}", super::fmt_metrics(m)));
        }
        Ok(())
    }
}

/// Writes the run checkpoints into `dir` (`step-NNNNNNNN.ckpt.safetensors`), keeping the last
/// `keep` (0: all).
pub struct Checkpointer<'a> {
    /// `out/checkpoints`.
    pub dir: PathBuf,
    /// Checkpoints to keep.
    pub keep: usize,
    /// The run's configuration (saved in each checkpoint).
    pub cfg: &'a Config,
    /// Batch order and dropout stream.
    pub rngs: &'a RunRngs<'a>,
}

impl Callback<f32> for Checkpointer<'_> {
    fn on_checkpoint(&mut self, s: &Snapshot<'_, f32>) -> CallbackResult {
        let p = self.dir.join(checkpoint::checkpoint_name(s.state.step));
        save_run_checkpoint(&p, self.cfg, s.params, s.optimizer, &self.rngs.batcher.borrow(), &self.rngs.dropout.borrow(), s.state.step)?;
        super::prune(&self.dir, self.keep);
        Ok(())
    }
}
