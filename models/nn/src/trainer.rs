//! One training loop: [`Trainer`].
//!
//! A `Trainer` owns the step loop that every chi model trains with, in the spirit of PyTorch
//! Lightning's `Trainer` or fastai's `Learner` but small. Each step it
//!
//! 1. applies the block-coordinate schedule ([`BlockCoordinate`]: freezes the inactive groups),
//! 2. sets the learning rate from the [`LrSchedule`],
//! 3. clears the gradients, takes the next batch and runs the user's step closure, which
//!    returns the loss (and optionally metrics) — see [`StepOutput`],
//! 4. stops with [`TrainError::NonFiniteLoss`] if the loss is NaN or infinite,
//! 5. backpropagates, collects the gradients (averaged over the ranks with
//!    [`Trainer::data_parallel`]), clips them to a global L2 norm if asked,
//! 6. applies one [`Optimizer`] update,
//! 7. calls the [`Callback`]s' [`Callback::on_step_end`] with the step, loss, learning rate,
//!    gradient norm and gradients, then evaluates and checkpoints when due.
//!
//! Everything that is not the loop — logging, progress bars, plots, gradient-flow records,
//! writing checkpoint files — plugs in through [`Callback`]s, so this library needs none of it.
//!
//! ## Example
//! Least squares on four points, with an evaluation every 50 steps:
//! ```
//! use chi_autodiff::Tensor;
//! use chi_nn::optim::{OptimConfig, Optimizer};
//! use chi_nn::params::ParamStore;
//! use chi_nn::trainer::{Metrics, Trainer};
//!
//! let mut store = ParamStore::<f64>::new();
//! let w = store.add("w", "main", Tensor::from_vec(vec![0.0, 0.0], &[2, 1]));
//! let x = Tensor::from_vec(vec![1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 1.0], &[4, 2]);
//! let y = Tensor::from_vec(vec![1.0, -1.0, 0.0, 1.0], &[4, 1]);
//! let mut opt = Optimizer::new(OptimConfig::adam(0.05));
//!
//! let fit = Trainer::new(&store, &mut opt)
//!     .steps(300)
//!     .clip_norm(1.0)
//!     .eval_every(50)
//!     .evaluate(|_step| Metrics::from([("mse".to_string(), chi_autodiff::no_grad(|| x.matmul(&w.get()).mse_loss(&y).item()))]))
//!     // Full-batch training: every batch is the whole data set.
//!     .fit(std::iter::repeat(()), |()| x.matmul(&w.get()).mse_loss(&y))
//!     .unwrap();
//! let curve = fit.eval_curve("mse");
//! assert_eq!(curve.len(), 6);
//! assert!(curve[5].1 < curve[0].1);
//! assert_eq!(fit.state.step, 300);
//! ```
//!
//! ## Data
//! Batches come from any [`IntoIterator`]: a data loader, `std::iter::repeat(batch)` for
//! full-batch training, or `std::iter::from_fn(|| ...)` around a sampler. Without
//! [`Trainer::steps`] the loop runs until the batches run out (e.g. a fixed number of epochs).
//!
//! ## Resuming
//! The trainer's own state is [`TrainerState`] (the number of steps done); the optimiser state
//! and the parameters are saved by [`crate::checkpoint`], and the data position (shuffling
//! generator, position in the epoch) and any other generator (dropout) belong to the caller's
//! data source and step closure. To resume: restore the parameters, the optimiser and the data
//! source, then [`Trainer::resume`] from the saved [`TrainerState`]. The steps run are then
//! bitwise those of an uninterrupted run — the loop does nothing else that consumes randomness
//! or changes arithmetic order.
//!
//! ## When things happen
//! Step numbers given to callbacks count completed steps (the first step is 1).
//! * Evaluation: after every step that is a multiple of [`Trainer::eval_every`]; with
//!   [`Trainer::eval_at_end`], once more when the run has finished (unless it just did).
//! * Checkpoints: after every step that is a multiple of [`Trainer::checkpoint_every`] (except
//!   the last step of this call), and with [`Trainer::checkpoint_at_end`] once after the loop —
//!   also when [`Trainer::stop_at`] ended it early.
//! * After the loop every group of the block-coordinate schedule is unfrozen again, the
//!   gradients are cleared, then the end checkpoint, the end evaluation and
//!   [`Callback::on_train_end`] follow, in that order.

use crate::dist::{self, DataParallel, Mode, Reducer};
use crate::optim::{Grads, Optimizer};
use crate::params::{Param, ParamStore};
use crate::schedule::{BlockCoordinate, LrSchedule};
use chi_autodiff::{Float, Tensor};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Named scalar results (`"accuracy" → 0.93`), of an evaluation or of a step.
pub type Metrics = BTreeMap<String, f64>;

/// What a callback returns: any error stops training and is reported as
/// [`TrainError::Callback`].
pub type CallbackResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// Why [`Trainer::fit`] stopped early.
#[derive(Debug)]
#[non_exhaustive]
pub enum TrainError {
    /// The loss of a step was NaN or infinite; no update was applied for that step.
    NonFiniteLoss {
        /// The step (1-based) whose loss was not finite.
        step: u64,
        /// The loss value.
        loss: f64,
    },
    /// Data-parallel training: no rank had an example in the step's batch.
    EmptyBatch {
        /// The step (1-based).
        step: u64,
    },
    /// The schedule gave a learning rate that is not finite (it overflows); no update was
    /// applied for that step.
    NonFiniteLr {
        /// The step (1-based) whose learning rate was not finite.
        step: u64,
        /// The learning rate.
        lr: f64,
    },
    /// A callback failed.
    Callback {
        /// The hook that failed (`"on_step_end"`, `"on_checkpoint"`, …).
        hook: &'static str,
        /// Steps completed when it failed.
        step: u64,
        /// The callback's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl fmt::Display for TrainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrainError::NonFiniteLoss { step, loss } => write!(f, "training diverged: loss is {loss} at step {step}"),
            TrainError::EmptyBatch { step } => write!(f, "step {step}: no rank had an example in its shard of the batch"),
            TrainError::NonFiniteLr { step, lr } => write!(f, "the learning-rate schedule gives {lr} at step {step}: it overflows (a smaller learning rate or decay factor)"),
            TrainError::Callback { hook, step, source } => write!(f, "{source} (in {hook} at step {step})"),
        }
    }
}

impl std::error::Error for TrainError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TrainError::Callback { source, .. } => Some(source.as_ref()),
            TrainError::NonFiniteLoss { .. } | TrainError::EmptyBatch { .. } | TrainError::NonFiniteLr { .. } => None,
        }
    }
}

impl From<TrainError> for String {
    fn from(e: TrainError) -> String {
        e.to_string()
    }
}

/// The trainer's own resumable state. Save it with a checkpoint and pass it to
/// [`Trainer::resume`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrainerState {
    /// Optimiser steps completed.
    pub step: u64,
}

/// What the step closure returns: the loss to minimise, and optionally metrics of the batch
/// and tensors that callbacks should see after backward (e.g. hidden states whose gradients a
/// gradient-flow callback reads; call `retain_grad` on them in the closure). A bare loss tensor
/// converts into a `StepOutput`.
pub struct StepOutput<T: Float> {
    /// The scalar loss.
    pub loss: Tensor<T>,
    /// Metrics of this batch (shown to callbacks, recorded nowhere else).
    pub metrics: Metrics,
    /// Tensors kept alive until the callbacks of this step have run.
    pub tensors: Vec<Tensor<T>>,
    /// Data-parallel training: how many examples the loss averages over on this rank (see
    /// [`crate::dist`]); `None` counts as 1, i.e. equal shards.
    pub weight: Option<f64>,
}

impl<T: Float> StepOutput<T> {
    /// The loss alone.
    pub fn new(loss: Tensor<T>) -> Self {
        StepOutput { loss, metrics: Metrics::new(), tensors: Vec::new(), weight: None }
    }
    /// Adds a metric.
    pub fn metric(mut self, name: &str, value: f64) -> Self {
        self.metrics.insert(name.to_string(), value);
        self
    }
    /// The number of examples this rank's loss is a mean over, for data-parallel training
    /// ([`Trainer::data_parallel`]): ranks' gradients are weighted by it. A rank whose shard is
    /// empty returns a constant loss (not tracked) with weight 0.
    pub fn weight(mut self, examples: f64) -> Self {
        self.weight = Some(examples);
        self
    }
    /// Keeps `tensors` for the callbacks ([`StepInfo::tensors`]).
    pub fn keep(mut self, tensors: Vec<Tensor<T>>) -> Self {
        self.tensors = tensors;
        self
    }
}

impl<T: Float> From<Tensor<T>> for StepOutput<T> {
    fn from(loss: Tensor<T>) -> Self {
        StepOutput::new(loss)
    }
}

/// What callbacks see of a finished step.
pub struct StepInfo<'a, T: Float> {
    /// Steps completed (this step's 1-based number).
    pub step: u64,
    /// The loss of the step.
    pub loss: f64,
    /// The step closure's metrics.
    pub metrics: &'a Metrics,
    /// The learning rate the update used.
    pub lr: f64,
    /// Global L2 norm of the gradients before clipping.
    pub grad_norm: f64,
    /// The active block of the block-coordinate schedule (`None` when it is off).
    pub active_block: Option<usize>,
    /// The gradients the optimiser applied (after clipping), aligned with [`StepInfo::params`].
    pub grads: &'a Grads<T>,
    /// The parameters, updated by this step.
    pub params: &'a [Param<T>],
    /// The tensors the step closure kept ([`StepOutput::keep`]).
    pub tensors: &'a [Tensor<T>],
}

/// What [`Callback::on_checkpoint`] gets: everything of the trainer a checkpoint holds.
pub struct Snapshot<'a, T: Float> {
    /// The trainer's state.
    pub state: TrainerState,
    /// The parameters.
    pub params: &'a [Param<T>],
    /// The optimiser (its state goes into the checkpoint).
    pub optimizer: &'a Optimizer<T>,
    /// Whether this is the checkpoint written after the loop (rather than a periodic one).
    pub at_end: bool,
}

/// Hooks into [`Trainer::fit`]; every method has an empty default. Callbacks run in the order
/// they were added, so e.g. a logger that flushes its files in `on_checkpoint` should come
/// before the callback that writes the checkpoint.
pub trait Callback<T: Float> {
    /// Before the first step; `state` is where training starts (0, or the resumed step).
    fn on_train_start(&mut self, state: TrainerState) -> CallbackResult {
        let _ = state;
        Ok(())
    }
    /// After every step's update.
    fn on_step_end(&mut self, info: &StepInfo<'_, T>) -> CallbackResult {
        let _ = info;
        Ok(())
    }
    /// After an evaluation at step `step`.
    fn on_eval(&mut self, step: u64, metrics: &Metrics) -> CallbackResult {
        let _ = (step, metrics);
        Ok(())
    }
    /// When a checkpoint is due: write it.
    fn on_checkpoint(&mut self, snapshot: &Snapshot<'_, T>) -> CallbackResult {
        let _ = snapshot;
        Ok(())
    }
    /// After the loop (and the end checkpoint and evaluation).
    fn on_train_end(&mut self, state: TrainerState) -> CallbackResult {
        let _ = state;
        Ok(())
    }
}

impl<T: Float, C: Callback<T> + ?Sized> Callback<T> for &mut C {
    fn on_train_start(&mut self, state: TrainerState) -> CallbackResult {
        (**self).on_train_start(state)
    }
    fn on_step_end(&mut self, info: &StepInfo<'_, T>) -> CallbackResult {
        (**self).on_step_end(info)
    }
    fn on_eval(&mut self, step: u64, metrics: &Metrics) -> CallbackResult {
        (**self).on_eval(step, metrics)
    }
    fn on_checkpoint(&mut self, snapshot: &Snapshot<'_, T>) -> CallbackResult {
        (**self).on_checkpoint(snapshot)
    }
    fn on_train_end(&mut self, state: TrainerState) -> CallbackResult {
        (**self).on_train_end(state)
    }
}

/// A closure as an `on_step_end` callback ([`Trainer::on_step_end`]).
struct StepEnd<F>(F);

impl<T: Float, F: FnMut(&StepInfo<'_, T>)> Callback<T> for StepEnd<F> {
    fn on_step_end(&mut self, info: &StepInfo<'_, T>) -> CallbackResult {
        (self.0)(info);
        Ok(())
    }
}

/// A fallible closure as an `on_step_end` callback ([`Trainer::try_on_step_end`]).
struct TryStepEnd<F>(F);

impl<T: Float, E: Into<Box<dyn std::error::Error + Send + Sync>>, F: FnMut(&StepInfo<'_, T>) -> Result<(), E>> Callback<T> for TryStepEnd<F> {
    fn on_step_end(&mut self, info: &StepInfo<'_, T>) -> CallbackResult {
        (self.0)(info).map_err(Into::into)
    }
}

/// What [`Trainer::fit`] returns.
#[derive(Clone, Debug, Default)]
pub struct FitSummary {
    /// The trainer's state at the end (save it to resume).
    pub state: TrainerState,
    /// `(step, loss)` of every step run in this call.
    pub losses: Vec<(u64, f64)>,
    /// `(step, metrics)` of every evaluation in this call.
    pub evals: Vec<(u64, Metrics)>,
    /// Whether the run reached its end ([`Trainer::steps`], or the end of the batches), as
    /// opposed to stopping at [`Trainer::stop_at`].
    pub finished: bool,
}

impl FitSummary {
    /// `(step, value)` of metric `name` over the evaluations (as `f64` pairs, ready to plot).
    pub fn eval_curve(&self, name: &str) -> Vec<(f64, f64)> {
        self.evals.iter().filter_map(|(s, m)| m.get(name).map(|v| (*s as f64, *v))).collect()
    }
    /// The metrics of the last evaluation.
    pub fn last_eval(&self) -> Option<&Metrics> {
        self.evals.last().map(|e| &e.1)
    }
    /// The loss of the last step run.
    pub fn last_loss(&self) -> Option<f64> {
        self.losses.last().map(|l| l.1)
    }
}

type EvalFn<'a> = Box<dyn FnMut(u64) -> Metrics + 'a>;

/// The training loop; see the [module documentation](self). Configure it with the builder
/// methods, then call [`Trainer::fit`].
pub struct Trainer<'a, T: Float> {
    store: &'a ParamStore<T>,
    optim: &'a mut Optimizer<T>,
    base_lr: f64,
    steps: Option<u64>,
    stop_at: Option<u64>,
    clip_norm: Option<f64>,
    schedule: LrSchedule,
    block: BlockCoordinate,
    eval_every: u64,
    eval_at_end: bool,
    evaluate: Option<EvalFn<'a>>,
    checkpoint_every: u64,
    checkpoint_at_end: bool,
    callbacks: Vec<Box<dyn Callback<T> + 'a>>,
    state: TrainerState,
    dp: Option<DataParallel>,
}

impl<'a, T: Float> Trainer<'a, T> {
    /// A trainer updating every unfrozen parameter of `store` with `optim`. The schedule's base
    /// learning rate is `optim`'s configured `lr`.
    pub fn new(store: &'a ParamStore<T>, optim: &'a mut Optimizer<T>) -> Self {
        Trainer {
            store,
            base_lr: optim.config().lr,
            optim,
            steps: None,
            stop_at: None,
            clip_norm: None,
            schedule: LrSchedule::Constant {},
            block: BlockCoordinate::default(),
            eval_every: 0,
            eval_at_end: false,
            evaluate: None,
            checkpoint_every: 0,
            checkpoint_at_end: false,
            callbacks: Vec::new(),
            state: TrainerState::default(),
            dp: None,
        }
    }
    /// The length of the run in optimiser steps (default: until the batches run out).
    pub fn steps(mut self, steps: u64) -> Self {
        self.steps = Some(steps);
        self
    }
    /// Stops this call after step `step` even if the run is longer (an interruption: the end
    /// checkpoint is still written, the end evaluation is not).
    pub fn stop_at(mut self, step: u64) -> Self {
        self.stop_at = Some(step);
        self
    }
    /// Clips the gradients to global L2 norm `max_norm` (see [`Grads::clip_global_norm`]).
    /// Panics if `max_norm` is negative or not finite.
    #[track_caller]
    pub fn clip_norm(self, max_norm: f64) -> Self {
        self.clip_norm_opt(Some(max_norm))
    }
    /// [`Trainer::clip_norm`] when `Some`.
    #[track_caller]
    pub fn clip_norm_opt(mut self, max_norm: Option<f64>) -> Self {
        if let Some(c) = max_norm {
            // Negative, it would reverse every gradient (gradient ascent); NaN, switch clipping off.
            assert!(c.is_finite() && c >= 0.0, "Trainer::clip_norm: max_norm {c} must be finite and >= 0");
        }
        self.clip_norm = max_norm;
        self
    }
    /// The learning-rate schedule (default constant). Panics if its values are out of range
    /// for the optimiser's learning rate ([`LrSchedule::validate`]).
    #[track_caller]
    pub fn schedule(mut self, schedule: LrSchedule) -> Self {
        if let Err(e) = schedule.validate(self.base_lr) {
            panic!("Trainer::schedule: {e}");
        }
        self.schedule = schedule;
        self
    }
    /// Block-coordinate freezing of parameter groups (default off).
    pub fn block(mut self, block: BlockCoordinate) -> Self {
        self.block = block;
        self
    }
    /// The evaluation: `f(step)` returns the metrics (evaluate under
    /// [`chi_autodiff::no_grad`]). It runs when [`Trainer::eval_every`] or
    /// [`Trainer::eval_at_end`] say so.
    pub fn evaluate(mut self, f: impl FnMut(u64) -> Metrics + 'a) -> Self {
        self.evaluate = Some(Box::new(f));
        self
    }
    /// Evaluate after every `every` steps (0: never during the loop).
    pub fn eval_every(mut self, every: u64) -> Self {
        self.eval_every = every;
        self
    }
    /// Evaluate once more when the run has finished.
    pub fn eval_at_end(mut self, yes: bool) -> Self {
        self.eval_at_end = yes;
        self
    }
    /// Ask the callbacks for a checkpoint after every `every` steps (0: never during the loop).
    pub fn checkpoint_every(mut self, every: u64) -> Self {
        self.checkpoint_every = every;
        self
    }
    /// Ask the callbacks for a checkpoint after the loop.
    pub fn checkpoint_at_end(mut self, yes: bool) -> Self {
        self.checkpoint_at_end = yes;
        self
    }
    /// Adds a callback (pass `&mut c` to keep using `c` after training).
    pub fn callback(mut self, c: impl Callback<T> + 'a) -> Self {
        self.callbacks.push(Box::new(c));
        self
    }
    /// Adds a closure called after every step.
    pub fn on_step_end(self, f: impl FnMut(&StepInfo<'_, T>) + 'a) -> Self {
        self.callback(StepEnd(f))
    }
    /// Adds a fallible closure called after every step; an error stops training
    /// ([`TrainError::Callback`]).
    pub fn try_on_step_end<E: Into<Box<dyn std::error::Error + Send + Sync>>>(self, f: impl FnMut(&StepInfo<'_, T>) -> Result<(), E> + 'a) -> Self {
        self.callback(TryStepEnd(f))
    }
    /// Trains data-parallel with the other ranks of `dp`'s group (see [`crate::dist`]): the
    /// parameters are broadcast from rank 0 when `fit` starts, then every step's gradients are
    /// averaged (or, in local SGD, the parameters every few steps). Each rank's step closure
    /// computes the loss of its own shard of the batch ([`dist::shard`]) and states its size with
    /// [`StepOutput::weight`]. Callbacks, evaluation and checkpoints run on every rank: give them
    /// to rank 0 only if only it should write.
    pub fn data_parallel(mut self, dp: DataParallel) -> Self {
        self.dp = Some(dp);
        self
    }
    /// Continues from a saved state (restore the parameters, optimiser and data source first).
    pub fn resume(mut self, state: TrainerState) -> Self {
        self.state = state;
        self
    }

    fn each(callbacks: &mut [Box<dyn Callback<T> + 'a>], hook: &'static str, step: u64, mut f: impl FnMut(&mut dyn Callback<T>) -> CallbackResult) -> Result<(), TrainError> {
        for c in callbacks.iter_mut() {
            f(c.as_mut()).map_err(|source| TrainError::Callback { hook, step, source })?;
        }
        Ok(())
    }

    fn run_eval(&mut self, step: u64, evals: &mut Vec<(u64, Metrics)>) -> Result<(), TrainError> {
        let Some(f) = self.evaluate.as_mut() else { return Ok(()) };
        let m = f(step);
        Self::each(&mut self.callbacks, "on_eval", step, |c| c.on_eval(step, &m))?;
        evals.push((step, m));
        Ok(())
    }

    fn checkpoint(&mut self, at_end: bool) -> Result<(), TrainError> {
        let snap = Snapshot { state: self.state, params: self.store.params(), optimizer: &*self.optim, at_end };
        Self::each(&mut self.callbacks, "on_checkpoint", self.state.step, |c| c.on_checkpoint(&snap))
    }

    /// Trains: takes batches from `batches` and passes each to `step`, which returns the loss
    /// (a [`Tensor`] or a [`StepOutput`]), until [`Trainer::steps`] (or [`Trainer::stop_at`])
    /// steps are done or the batches run out. Also on an error, every group of the
    /// block-coordinate schedule is left trainable and the gradients are cleared.
    pub fn fit<B, O: Into<StepOutput<T>>>(mut self, batches: impl IntoIterator<Item = B>, step: impl FnMut(B) -> O) -> Result<FitSummary, TrainError> {
        let mut summary = FitSummary::default();
        let start = self.state;
        if let Some(dp) = &self.dp {
            dist::broadcast_params(&*dp.comm, self.store.params());
        }
        Self::each(&mut self.callbacks, "on_train_start", start.step, |c| c.on_train_start(start))?;
        let looped = self.run_steps(batches.into_iter(), step, &mut summary);
        // Leave every group trainable after block-coordinate training.
        for g in self.block.blocks.iter().flatten() {
            self.store.set_group_frozen(g, false);
        }
        self.store.zero_grad();
        let exhausted = looped?;
        summary.finished = exhausted || self.steps.is_some_and(|s| self.state.step >= s);
        // Local SGD ends with one model: the mean, unless the last step just averaged.
        if let Some(DataParallel { comm, mode: Mode::LocalSgd { every }, .. }) = &self.dp {
            if summary.finished && self.state.step % every != 0 {
                dist::average_params(&**comm, self.store.params());
            }
        }
        if self.checkpoint_at_end {
            self.checkpoint(true)?;
        }
        let step = self.state.step;
        if self.eval_at_end && summary.finished && summary.evals.last().map(|e| e.0) != Some(step) {
            self.run_eval(step, &mut summary.evals)?;
        }
        let state = self.state;
        Self::each(&mut self.callbacks, "on_train_end", state.step, |c| c.on_train_end(state))?;
        summary.state = state;
        Ok(summary)
    }

    /// The step loop of [`Trainer::fit`]; returns whether the batches ran out.
    fn run_steps<B, O: Into<StepOutput<T>>>(&mut self, mut batches: impl Iterator<Item = B>, mut step: impl FnMut(B) -> O, summary: &mut FitSummary) -> Result<bool, TrainError> {
        let store = self.store;
        let params = store.params();
        let end = match (self.steps, self.stop_at) {
            (Some(s), Some(t)) => Some(s.min(t)),
            (s, t) => s.or(t),
        };
        let mut reducer = match &self.dp {
            Some(dp) if dp.mode == Mode::Sync && dp.comm.size() > 1 => Some(Reducer::new(dp.clone(), params)),
            _ => None,
        };
        while !matches!(end, Some(e) if self.state.step >= e) {
            let Some(batch) = batches.next() else { return Ok(true) };
            let s = self.state.step;
            let active_block = self.block.apply(store, s);
            let lr = self.schedule.lr_at(self.base_lr, s);
            if !lr.is_finite() {
                return Err(TrainError::NonFiniteLr { step: s + 1, lr });
            }
            self.optim.set_lr(lr);
            store.zero_grad();
            let out: StepOutput<T> = step(batch).into();
            let mut loss = out.loss.item().to_f64();
            let done = s + 1;
            // This rank's share of the global gradient.
            let mut share = 1.0;
            if let Some(dp) = &self.dp {
                // Every rank learns the global (weighted mean) loss, so all stop together.
                let t0 = std::time::Instant::now();
                let agreed = dist::global_loss(&*dp.comm, loss, out.weight.unwrap_or(1.0));
                dp.add_wait(t0);
                (loss, share) = agreed.ok_or(TrainError::EmptyBatch { step: done })?;
            }
            if !loss.is_finite() {
                return Err(TrainError::NonFiniteLoss { step: done, loss });
            }
            if let Some(r) = reducer.as_mut() {
                r.begin(params, share);
            }
            // An empty shard's constant loss has no graph: its rank contributes no gradient.
            if self.dp.is_none() || out.loss.is_tracked() {
                out.loss.backward();
            }
            let mut grads = match reducer.as_mut() {
                Some(r) => r.finish(params),
                None => Grads::collect(params),
            };
            let grad_norm = match self.clip_norm {
                Some(c) => grads.clip_global_norm(c),
                None => grads.global_norm(),
            };
            self.optim.step(params, &grads);
            self.state.step = done;
            if let Some(dp @ DataParallel { mode: Mode::LocalSgd { every }, .. }) = &self.dp {
                if done % every == 0 {
                    let t0 = std::time::Instant::now();
                    dist::average_params(&*dp.comm, params);
                    dp.add_wait(t0);
                }
            }
            summary.losses.push((done, loss));
            let info = StepInfo {
                step: done,
                loss,
                metrics: &out.metrics,
                lr: self.optim.lr(),
                grad_norm,
                active_block,
                grads: &grads,
                params,
                tensors: &out.tensors,
            };
            Self::each(&mut self.callbacks, "on_step_end", done, |c| c.on_step_end(&info))?;
            drop(out);
            let last_of_run = self.steps == Some(done);
            if self.eval_every > 0 && done % self.eval_every == 0 && !(self.eval_at_end && last_of_run) {
                self.run_eval(done, &mut summary.evals)?;
            }
            if self.checkpoint_every > 0 && done % self.checkpoint_every == 0 && end != Some(done) {
                self.checkpoint(false)?;
            }
        }
        Ok(false)
    }
}
