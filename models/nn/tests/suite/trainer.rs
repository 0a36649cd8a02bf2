//! The training loop: loss falls, clipping holds, callbacks run in the documented order,
//! a non-finite loss stops with an error, and a resumed run equals an uninterrupted one bitwise.

use chi_autodiff::{no_grad, Rng, Tensor};
use chi_nn::optim::{OptimConfig, OptimState, Optimizer};
use chi_nn::params::{init, ParamStore};
use chi_nn::schedule::{BlockCoordinate, LrSchedule};
use chi_nn::trainer::{Callback, CallbackResult, Metrics, Snapshot, StepInfo, StepOutput, TrainError, Trainer, TrainerState};
use std::cell::RefCell;

/// y = x·[1, -2, 0.5] + 0.3 + noise, 64 examples.
fn data() -> (Vec<[f64; 3]>, Vec<f64>) {
    let mut rng = Rng::new(7);
    let xs: Vec<[f64; 3]> = (0..64).map(|_| [rng.normal(), rng.normal(), rng.normal()]).collect();
    let ys = xs.iter().map(|x| x[0] - 2.0 * x[1] + 0.5 * x[2] + 0.3 + 0.01 * rng.normal()).collect();
    (xs, ys)
}

/// A two-layer tanh network in two parameter groups.
struct Net {
    store: ParamStore<f64>,
}

impl Net {
    fn new(seed: u64) -> Net {
        let mut rng = Rng::new(seed);
        let mut store = ParamStore::new();
        store.add("w1", "hidden", init::normal(&[3, 4], 0.5, &mut rng));
        store.add("b1", "hidden", init::zeros(&[1, 4]));
        store.add("w2", "output", init::normal(&[4, 1], 0.5, &mut rng));
        store.add("b2", "output", init::zeros(&[1, 1]));
        Net { store }
    }
    fn p(&self, n: &str) -> Tensor<f64> {
        self.store.get(n).unwrap().get()
    }
    fn loss(&self, b: &Batch) -> Tensor<f64> {
        let h = b.x.matmul(&self.p("w1")).add(&self.p("b1")).tanh();
        h.matmul(&self.p("w2")).add(&self.p("b2")).mse_loss(&b.y)
    }
    fn weights(&self) -> Vec<Vec<f64>> {
        self.store.params().iter().map(|p| p.to_vec()).collect()
    }
}

struct Batch {
    x: Tensor<f64>,
    y: Tensor<f64>,
}

/// Shuffled mini-batches of 8 with a seeded generator: its state and position are what a
/// checkpoint of the data source holds.
#[derive(Clone)]
struct Source {
    xs: Vec<[f64; 3]>,
    ys: Vec<f64>,
    order: Vec<usize>,
    pos: usize,
    rng: Rng,
}

impl Source {
    fn new() -> Source {
        let (xs, ys) = data();
        let order = (0..xs.len()).collect();
        Source { pos: xs.len(), xs, ys, order, rng: Rng::new(11) }
    }
    fn all(&self) -> Batch {
        let idx: Vec<usize> = (0..self.xs.len()).collect();
        self.batch(&idx)
    }
    fn batch(&self, idx: &[usize]) -> Batch {
        Batch {
            x: Tensor::from_vec(idx.iter().flat_map(|&i| self.xs[i]).collect(), &[idx.len(), 3]),
            y: Tensor::from_vec(idx.iter().map(|&i| self.ys[i]).collect(), &[idx.len(), 1]),
        }
    }
}

impl Iterator for Source {
    type Item = Batch;
    fn next(&mut self) -> Option<Batch> {
        if self.pos + 8 > self.order.len() {
            self.rng.shuffle(&mut self.order);
            self.pos = 0;
        }
        let idx = self.order[self.pos..self.pos + 8].to_vec();
        self.pos += 8;
        Some(self.batch(&idx))
    }
}

#[test]
fn loss_decreases_on_a_small_regression() {
    let net = Net::new(1);
    let src = Source::new();
    let full = src.all();
    let before = no_grad(|| net.loss(&full).item());
    let mut opt = Optimizer::new(OptimConfig::adam(0.02));
    let fit = Trainer::new(&net.store, &mut opt)
        .steps(400)
        .eval_every(100)
        .evaluate(|_| Metrics::from([("mse".to_string(), no_grad(|| net.loss(&full).item()))]))
        .fit(src, |b| net.loss(&b))
        .unwrap();
    let after = no_grad(|| net.loss(&full).item());
    assert!(after < 0.1 * before, "full-batch MSE {before} → {after}");
    assert_eq!(fit.state.step, 400);
    assert_eq!(fit.losses.len(), 400);
    assert!(fit.finished);
    let curve = fit.eval_curve("mse");
    assert_eq!(curve.iter().map(|p| p.0).collect::<Vec<_>>(), vec![100.0, 200.0, 300.0, 400.0]);
    assert!(curve[3].1 < curve[0].1);
    assert_eq!(curve[3].1, after);
}

#[test]
fn clipping_bounds_the_applied_gradient_and_the_update() {
    let net = Net::new(2);
    let src = Source::new();
    let clip = 0.05;
    // SGD with lr 1: the update is exactly minus the clipped gradient.
    let mut opt = Optimizer::new(OptimConfig::sgd(1.0));
    let prev = RefCell::new(net.weights());
    let clipped_steps = RefCell::new(0);
    let fit = Trainer::new(&net.store, &mut opt)
        .steps(20)
        .clip_norm(clip)
        .on_step_end(|info: &StepInfo<'_, f64>| {
            let applied = info.grads.global_norm();
            assert!(applied <= clip * (1.0 + 1e-9), "step {}: applied gradient norm {applied} > {clip}", info.step);
            if info.grad_norm > clip {
                *clipped_steps.borrow_mut() += 1;
                assert!((applied - clip).abs() < 1e-6, "clipped norm {applied}");
            } else {
                assert!((applied - info.grad_norm).abs() <= 1e-12 * info.grad_norm.max(1.0));
            }
            let now: Vec<Vec<f64>> = info.params.iter().map(|p| p.to_vec()).collect();
            let moved = now.iter().flatten().zip(prev.borrow().iter().flatten()).map(|(a, b)| (a - b) * (a - b)).sum::<f64>().sqrt();
            assert!(moved <= clip * (1.0 + 1e-9), "step {}: parameters moved {moved}", info.step);
            *prev.borrow_mut() = now;
        })
        .fit(src, |b| net.loss(&b))
        .unwrap();
    assert_eq!(fit.state.step, 20);
    assert!(*clipped_steps.borrow() > 0, "the test never clipped: choose a smaller clip norm");
}

/// Records every hook call as text into a shared journal.
struct Recorder<'a> {
    name: &'static str,
    journal: &'a RefCell<Vec<String>>,
}

impl Callback<f64> for Recorder<'_> {
    fn on_train_start(&mut self, state: TrainerState) -> CallbackResult {
        self.journal.borrow_mut().push(format!("{} start {}", self.name, state.step));
        Ok(())
    }
    fn on_step_end(&mut self, info: &StepInfo<'_, f64>) -> CallbackResult {
        self.journal.borrow_mut().push(format!("{} step {}", self.name, info.step));
        Ok(())
    }
    fn on_eval(&mut self, step: u64, metrics: &Metrics) -> CallbackResult {
        assert!(metrics.contains_key("mse"));
        self.journal.borrow_mut().push(format!("{} eval {step}", self.name));
        Ok(())
    }
    fn on_checkpoint(&mut self, s: &Snapshot<'_, f64>) -> CallbackResult {
        self.journal.borrow_mut().push(format!("{} ckpt {}{}", self.name, s.state.step, if s.at_end { " end" } else { "" }));
        Ok(())
    }
    fn on_train_end(&mut self, state: TrainerState) -> CallbackResult {
        self.journal.borrow_mut().push(format!("{} end {}", self.name, state.step));
        Ok(())
    }
}

#[test]
fn callbacks_run_in_order() {
    let net = Net::new(3);
    let src = Source::new();
    let full = src.all();
    let mut opt = Optimizer::new(OptimConfig::adagrad(0.1));
    let journal = RefCell::new(Vec::new());
    let fit = Trainer::new(&net.store, &mut opt)
        .steps(6)
        .eval_every(2)
        .eval_at_end(true)
        .checkpoint_every(3)
        .checkpoint_at_end(true)
        .evaluate(|_| Metrics::from([("mse".to_string(), no_grad(|| net.loss(&full).item()))]))
        .callback(Recorder { name: "a", journal: &journal })
        .callback(Recorder { name: "b", journal: &journal })
        .fit(src, |b| net.loss(&b))
        .unwrap();
    let expected = [
        "start 0", "step 1", "step 2", "eval 2", "step 3", "ckpt 3", "step 4", "eval 4", "step 5", "step 6", "ckpt 6 end", "eval 6", "end 6",
    ];
    let want: Vec<String> = expected.iter().flat_map(|e| [format!("a {e}"), format!("b {e}")]).collect();
    assert_eq!(*journal.borrow(), want);
    assert_eq!(fit.evals.iter().map(|e| e.0).collect::<Vec<_>>(), vec![2, 4, 6]);

    // Interrupted at step 4: the end checkpoint is written, the end evaluation is not.
    journal.borrow_mut().clear();
    let mut opt = Optimizer::new(OptimConfig::adagrad(0.1));
    let fit = Trainer::new(&net.store, &mut opt)
        .steps(6)
        .stop_at(4)
        .eval_every(3)
        .eval_at_end(true)
        .checkpoint_every(2)
        .checkpoint_at_end(true)
        .evaluate(|_| Metrics::from([("mse".to_string(), 0.0)]))
        .callback(Recorder { name: "a", journal: &journal })
        .fit(Source::new(), |b| net.loss(&b))
        .unwrap();
    let want: Vec<String> = ["start 0", "step 1", "step 2", "ckpt 2", "step 3", "eval 3", "step 4", "ckpt 4 end", "end 4"].iter().map(|e| format!("a {e}")).collect();
    assert_eq!(*journal.borrow(), want);
    assert!(!fit.finished);
}

#[test]
fn a_failing_callback_stops_training_with_its_error() {
    struct Fails;
    impl Callback<f64> for Fails {
        fn on_step_end(&mut self, info: &StepInfo<'_, f64>) -> CallbackResult {
            if info.step == 3 {
                return Err("disk full".into());
            }
            Ok(())
        }
    }
    let net = Net::new(3);
    let mut opt = Optimizer::new(OptimConfig::sgd(0.1));
    let err = Trainer::new(&net.store, &mut opt).steps(10).callback(Fails).fit(Source::new(), |b| net.loss(&b)).unwrap_err();
    assert!(matches!(err, TrainError::Callback { hook: "on_step_end", step: 3, .. }), "{err:?}");
    assert_eq!(err.to_string(), "disk full (in on_step_end at step 3)");
}

#[test]
fn non_finite_loss_stops_with_an_error_before_the_update() {
    let run = |poison_at: Option<u64>, steps: u64| {
        let net = Net::new(4);
        let mut opt = Optimizer::new(OptimConfig::adam(0.01));
        let mut k = 0;
        let r = Trainer::new(&net.store, &mut opt).steps(steps).fit(Source::new(), |b| {
            k += 1;
            let l = net.loss(&b);
            if Some(k) == poison_at {
                l.mul_scalar(f64::NAN)
            } else {
                l
            }
        });
        (r, net.weights())
    };
    let (r, w) = run(Some(3), 10);
    match r {
        Err(TrainError::NonFiniteLoss { step: 3, loss }) => assert!(loss.is_nan()),
        other => panic!("expected a non-finite-loss error at step 3, got {:?}", other.map(|s| s.state)),
    }
    let (ok, w2) = run(None, 2);
    assert_eq!(ok.unwrap().state.step, 2);
    assert_eq!(w, w2, "the poisoned step must not change the parameters");
    let msg = TrainError::NonFiniteLoss { step: 3, loss: f64::INFINITY }.to_string();
    assert_eq!(msg, "training diverged: loss is inf at step 3");
}

#[test]
fn batches_running_out_end_the_run() {
    let net = Net::new(5);
    let mut opt = Optimizer::new(OptimConfig::sgd(0.05));
    let src = Source::new();
    let journal = RefCell::new(Vec::new());
    let fit = Trainer::new(&net.store, &mut opt)
        .eval_every(5)
        .eval_at_end(true)
        .evaluate(|_| Metrics::from([("mse".to_string(), 0.0)]))
        .callback(Recorder { name: "a", journal: &journal })
        .fit(src.take(5), |b| net.loss(&b))
        .unwrap();
    assert!(fit.finished);
    assert_eq!(fit.state.step, 5);
    // The evaluation at step 5 is not repeated as the end evaluation.
    assert_eq!(fit.evals.len(), 1);
}

/// What a checkpoint of the test run holds.
#[derive(Default)]
struct Saved {
    state: TrainerState,
    weights: Vec<Vec<f64>>,
    optim: Option<OptimState<f64>>,
}

struct Saver<'a>(&'a RefCell<Saved>);

impl Callback<f64> for Saver<'_> {
    fn on_checkpoint(&mut self, s: &Snapshot<'_, f64>) -> CallbackResult {
        *self.0.borrow_mut() = Saved { state: s.state, weights: s.params.iter().map(|p| p.to_vec()).collect(), optim: Some(s.optimizer.state()) };
        Ok(())
    }
}

fn trainer<'a>(net: &'a Net, opt: &'a mut Optimizer<f64>) -> Trainer<'a, f64> {
    Trainer::new(&net.store, opt)
        .steps(60)
        .clip_norm(0.5)
        .schedule(LrSchedule::Warmup { steps: 5, after: Box::new(LrSchedule::Cosine { total_steps: 55, min_lr: 0.001 }) })
        .block(BlockCoordinate::from_groups(7, &["hidden", "output"]))
}

#[test]
fn resumed_run_equals_uninterrupted_run_bitwise() {
    let cfg = OptimConfig::adam(0.03);
    // Uninterrupted.
    let net = Net::new(6);
    let mut opt = Optimizer::new(cfg.clone());
    let whole = trainer(&net, &mut opt).fit(Source::new(), |b| net.loss(&b)).unwrap();
    let whole_weights = net.weights();

    // Interrupted after 23 steps: the checkpoint callback saves weights, optimiser and trainer
    // state; the data source is cloned at the same moment.
    let net = Net::new(6);
    let mut opt = Optimizer::new(cfg.clone());
    let saved = RefCell::new(Saved::default());
    let mut src = Source::new();
    let part = trainer(&net, &mut opt).stop_at(23).checkpoint_at_end(true).callback(Saver(&saved)).fit(src.by_ref(), |b| net.loss(&b)).unwrap();
    assert!(!part.finished);
    let saved = saved.into_inner();
    assert_eq!(saved.state.step, 23);
    let src_at_23 = src.clone();

    // A fresh process: rebuild, restore, resume.
    let net = Net::new(99); // different initialisation, overwritten by the restore
    for (p, w) in net.store.params().iter().zip(&saved.weights) {
        p.set_values(w.clone());
    }
    let mut opt = Optimizer::new(cfg);
    opt.load_state(saved.optim.unwrap(), net.store.params()).unwrap();
    let rest = trainer(&net, &mut opt).resume(saved.state).fit(src_at_23, |b| net.loss(&b)).unwrap();

    assert!(rest.finished);
    assert_eq!(rest.state.step, 60);
    let joined: Vec<(u64, f64)> = part.losses.iter().chain(&rest.losses).copied().collect();
    assert_eq!(joined.len(), whole.losses.len());
    for (a, b) in joined.iter().zip(&whole.losses) {
        assert_eq!(a.0, b.0);
        assert_eq!(a.1.to_bits(), b.1.to_bits(), "loss at step {}", a.0);
    }
    let bits = |w: &Vec<Vec<f64>>| w.iter().flatten().map(|v| v.to_bits()).collect::<Vec<u64>>();
    assert_eq!(bits(&net.weights()), bits(&whole_weights));
    // Every group is trainable again after block-coordinate training.
    assert!(net.store.params().iter().all(|p| !p.is_frozen()));
}

#[test]
fn step_output_carries_metrics_and_tensors_to_callbacks() {
    let net = Net::new(8);
    let mut opt = Optimizer::new(OptimConfig::sgd(0.01));
    let seen = RefCell::new(Vec::new());
    Trainer::new(&net.store, &mut opt)
        .steps(3)
        .on_step_end(|info: &StepInfo<'_, f64>| {
            let g = info.tensors[0].grad().expect("a kept tensor with retain_grad has its gradient after backward");
            seen.borrow_mut().push((info.metrics["batch"], g.shape().to_vec()));
        })
        .fit(Source::new(), |b| {
            let h = b.x.matmul(&net.p("w1")).tanh();
            h.retain_grad();
            let loss = h.matmul(&net.p("w2")).add(&net.p("b2")).mse_loss(&b.y);
            StepOutput::new(loss).metric("batch", b.y.to_vec().len() as f64).keep(vec![h])
        })
        .unwrap();
    assert_eq!(*seen.borrow(), vec![(8.0, vec![8, 4]); 3]);
}

#[test]
fn schedule_and_block_coordinate_freezing_reach_each_step() {
    let net = Net::new(9);
    let mut opt = Optimizer::new(OptimConfig::sgd(0.1));
    let seen = RefCell::new(Vec::new());
    Trainer::new(&net.store, &mut opt)
        .steps(8)
        .schedule(LrSchedule::Step { every: 3, gamma: 0.5 })
        .block(BlockCoordinate::from_groups(2, &["hidden", "output"]))
        .on_step_end(|info: &StepInfo<'_, f64>| {
            // Parameters 0, 1 are the hidden group, 2, 3 the output group.
            let with_grad: Vec<bool> = info.grads.items.iter().map(|g| g.is_some()).collect();
            seen.borrow_mut().push((info.step, info.lr, info.active_block, with_grad));
        })
        .fit(Source::new(), |b| net.loss(&b))
        .unwrap();
    for (step, lr, active, with_grad) in seen.into_inner() {
        let s = step - 1;
        assert_eq!(lr, 0.1 * 0.5f64.powi((s / 3) as i32), "lr at step {step}");
        let a = ((s / 2) % 2) as usize;
        assert_eq!(active, Some(a), "active block at step {step}");
        assert_eq!(with_grad, if a == 0 { vec![true, true, false, false] } else { vec![false, false, true, true] }, "step {step}");
    }
    assert!(net.store.params().iter().all(|p| !p.is_frozen()));
}

#[test]
fn an_error_leaves_every_group_trainable() {
    let net = Net::new(10);
    let mut opt = Optimizer::new(OptimConfig::sgd(0.1));
    let mut k = 0;
    let err = Trainer::new(&net.store, &mut opt)
        .steps(10)
        .block(BlockCoordinate::from_groups(1, &["hidden", "output"]))
        .fit(Source::new(), |b| {
            k += 1;
            if k == 4 {
                net.loss(&b).mul_scalar(f64::INFINITY)
            } else {
                net.loss(&b)
            }
        })
        .unwrap_err();
    assert!(matches!(err, TrainError::NonFiniteLoss { step: 4, .. }), "{err:?}");
    assert!(net.store.params().iter().all(|p| !p.is_frozen()));
}
