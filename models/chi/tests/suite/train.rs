//! Training toolkit tests: optimiser steps against their formulas, sparse updates, clipping,
//! schedules, block-coordinate freezing, metrics, and end-to-end runs (loss falls, determinism,
//! interrupted-and-resumed = uninterrupted).

use chi_autodiff::{Rng, Tensor};
use chi_nn::optim::{Grad, Grads, OptimConfig, Optimizer};
use chi_nn::params::{Param, ParamStore};
use chi_nn::metrics::{accuracy, mse, pearson, ranks, spearman};
use chi_nn::schedule::{BlockCoordinate, LrSchedule};
use chi_cli::train::{self, Config, TrainOptions};

const W0: [f64; 2] = [1.0, -2.0];
const G: [f64; 2] = [0.5, -1.0];

/// One parameter `w = W0` whose gradient is the constant `G` (loss = Σ G·w).
fn setup() -> (ParamStore<f64>, Param<f64>) {
    let mut s = ParamStore::new();
    let w = s.add("w", "g", Tensor::from_vec(W0.to_vec(), &[2]));
    (s, w)
}

fn backward(w: &Param<f64>) {
    w.zero_grad();
    w.get().mul(&Tensor::from_vec(G.to_vec(), &[2])).sum().backward();
}

/// Runs `steps` steps of `cfg` and returns the values.
fn run(cfg: OptimConfig, steps: usize) -> Vec<f64> {
    let (s, w) = setup();
    let mut o = Optimizer::new(cfg);
    for _ in 0..steps {
        backward(&w);
        o.step_params(s.params());
    }
    w.to_vec()
}

fn close(a: &[f64], b: &[f64]) {
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-12 * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

fn each(f: impl Fn(f64, f64) -> f64) -> Vec<f64> {
    W0.iter().zip(G).map(|(&w, g)| f(w, g)).collect()
}

#[test]
fn sgd_plain_momentum_nesterov_weight_decay() {
    let lr = 0.1;
    close(&run(OptimConfig::sgd(lr), 1), &each(|w, g| w - lr * g));
    let m = OptimConfig { momentum: 0.9, ..OptimConfig::sgd(lr) };
    // b₁ = g, b₂ = 0.9·g + g → total 2.9·lr·g
    close(&run(m.clone(), 2), &each(|w, g| w - lr * g - lr * 1.9 * g));
    // Nesterov: step 1 uses g + 0.9·b₁ = 1.9g; step 2: b₂ = 1.9g, uses g + 0.9·1.9g = 2.71g
    let n = OptimConfig { nesterov: true, ..m };
    close(&run(n, 2), &each(|w, g| w - lr * 1.9 * g - lr * 2.71 * g));
    let wd = OptimConfig { weight_decay: Some(0.1), ..OptimConfig::sgd(lr) };
    close(&run(wd, 1), &each(|w, g| w - lr * (g + 0.1 * w)));
}

#[test]
fn adagrad_formula() {
    let lr = 0.1;
    let eps = 1e-10;
    // sum₁ = g², sum₂ = 2g²
    close(
        &run(OptimConfig::adagrad(lr), 2),
        &each(|w, g| {
            let w1 = w - lr * g / ((g * g).sqrt() + eps);
            w1 - lr * g / ((2.0 * g * g).sqrt() + eps)
        }),
    );
    let c = OptimConfig { initial_accumulator_value: 0.1, lr_decay: 0.5, ..OptimConfig::adagrad(lr) };
    close(
        &run(c, 2),
        &each(|w, g| {
            let w1 = w - lr * g / ((0.1 + g * g).sqrt() + eps);
            w1 - lr / 1.5 * g / ((0.1 + 2.0 * g * g).sqrt() + eps)
        }),
    );
}

#[test]
fn rmsprop_formula() {
    let lr = 0.01;
    let eps = 1e-8;
    close(
        &run(OptimConfig::rmsprop(lr), 2),
        &each(|w, g| {
            let v1 = 0.01 * g * g;
            let w1 = w - lr * g / (v1.sqrt() + eps);
            let v2 = 0.99 * v1 + 0.01 * g * g;
            w1 - lr * g / (v2.sqrt() + eps)
        }),
    );
    let c = OptimConfig { centered: true, momentum: 0.5, ..OptimConfig::rmsprop(lr) };
    close(
        &run(c, 2),
        &each(|w, g| {
            let (v1, a1) = (0.01 * g * g, 0.01 * g);
            let b1 = g / ((v1 - a1 * a1).sqrt() + eps);
            let w1 = w - lr * b1;
            let (v2, a2) = (0.99 * v1 + 0.01 * g * g, 0.99 * a1 + 0.01 * g);
            let b2 = 0.5 * b1 + g / ((v2 - a2 * a2).sqrt() + eps);
            w1 - lr * b2
        }),
    );
}

#[test]
fn adam_and_adamw_formula() {
    let lr = 0.1;
    let eps = 1e-8;
    let adam2 = |w: f64, g: f64, wd: f64, decoupled: bool| {
        let (mut w, mut m, mut v) = (w, 0.0, 0.0);
        for t in 1..=2 {
            let mut gg = g;
            if decoupled {
                w *= 1.0 - lr * wd;
            } else {
                gg += wd * w;
            }
            m = 0.9 * m + 0.1 * gg;
            v = 0.999 * v + 0.001 * gg * gg;
            let mh = m / (1.0 - 0.9f64.powi(t));
            let vh = v / (1.0 - 0.999f64.powi(t));
            w -= lr * mh / (vh.sqrt() + eps);
        }
        w
    };
    close(&run(OptimConfig::adam(lr), 2), &each(|w, g| adam2(w, g, 0.0, false)));
    close(&run(OptimConfig { weight_decay: Some(0.1), ..OptimConfig::adam(lr) }, 2), &each(|w, g| adam2(w, g, 0.1, false)));
    close(&run(OptimConfig::adamw(lr), 2), &each(|w, g| adam2(w, g, 0.01, true)));
    // First Adam step moves each weight by ≈ lr·sign(g).
    let one = run(OptimConfig::adam(lr), 1);
    close(&one, &each(|w, g| w - lr * g / (g.abs() + eps)));
}

fn table() -> (ParamStore<f64>, Param<f64>) {
    let mut s = ParamStore::new();
    let mut rng = Rng::new(5);
    let e = s.add("emb", "embedding", Tensor::randn(&[5, 2], &mut rng));
    e.replace(e.get().sparse_grad());
    (s, e)
}

#[test]
fn sparse_adagrad_touches_only_given_rows_and_matches_dense() {
    let (s, e) = table();
    let before = e.to_vec();
    let c = Tensor::from_vec(vec![1.0, -2.0, 0.5, 0.25, 3.0, 1.0], &[3, 2]);
    e.get().embedding(&[1, 3, 1]).mul(&c).sum().backward();
    let grads = Grads::collect(s.params());
    match &grads.items[0] {
        Some(Grad::Rows { ids, values, dim }) => {
            assert_eq!(ids, &vec![1, 3]);
            assert_eq!(*dim, 2);
            assert_eq!(values, &vec![4.0, -1.0, 0.5, 0.25]); // row 1 twice: (1+3, −2+1)
        }
        other => panic!("expected row gradient, got {other:?}"),
    }
    let mut o = Optimizer::new(OptimConfig::adagrad(0.1));
    o.step(s.params(), &grads);
    let after = e.to_vec();
    for r in [0, 2, 4] {
        assert_eq!(after[2 * r..2 * r + 2], before[2 * r..2 * r + 2], "row {r} must not move");
    }
    let st = o.param_state("emb").unwrap();
    let sum = &st.slots["sum"];
    assert_eq!(sum, &vec![0.0, 0.0, 16.0, 1.0, 0.0, 0.0, 0.25, 0.0625, 0.0, 0.0]);
    // Same as a dense Adagrad step on the densified gradient.
    let mut s2 = ParamStore::new();
    let d = s2.add("emb", "embedding", Tensor::from_vec(before.clone(), &[5, 2]));
    let dense = Grads { items: vec![Some(Grad::Dense(grads.items[0].as_ref().unwrap().to_dense(10)))] };
    Optimizer::new(OptimConfig::adagrad(0.1)).step(s2.params(), &dense);
    assert_eq!(d.to_vec(), after);
}

#[test]
fn sparse_sgd_and_lazy_adam_update_rows_only() {
    for cfg in [OptimConfig::sgd(0.1), OptimConfig::adam(0.1), OptimConfig::adamw(0.1)] {
        let (s, e) = table();
        let before = e.to_vec();
        e.get().embedding(&[0, 2]).sum().backward();
        let mut o = Optimizer::new(cfg.clone());
        o.step_params(s.params());
        let after = e.to_vec();
        for r in 0..5 {
            let moved = after[2 * r..2 * r + 2] != before[2 * r..2 * r + 2];
            assert_eq!(moved, r == 0 || r == 2, "{:?}: row {r}", cfg.name);
        }
        if cfg.name != chi_nn::optim::OptimKind::Sgd {
            let m = &o.param_state("emb").unwrap().slots["exp_avg"];
            assert_eq!(m[2..4], [0.0, 0.0], "untouched rows keep their (zero) moments");
            assert!((m[0] - 0.1).abs() < 1e-15);
        }
    }
}

#[test]
fn frozen_and_gradless_params_are_skipped() {
    let mut s = ParamStore::<f64>::new();
    let a = s.add("a", "g1", Tensor::from_vec(vec![1.0], &[1]));
    let b = s.add("b", "g2", Tensor::from_vec(vec![1.0], &[1]));
    let c = s.add("c", "g2", Tensor::from_vec(vec![1.0], &[1]));
    s.set_group_frozen("g1", true);
    a.get().add(&b.get()).sum().backward();
    let mut o = Optimizer::new(OptimConfig::adam(0.1));
    o.step_params(s.params());
    assert_eq!(a.to_vec(), vec![1.0]);
    assert_eq!(c.to_vec(), vec![1.0]);
    assert!(b.to_vec()[0] < 1.0);
    assert!(o.param_state("a").is_none() && o.param_state("c").is_none());
}

#[test]
fn clipping_by_global_norm() {
    let mut g = Grads::<f64> { items: vec![Some(Grad::Dense(vec![3.0])), None, Some(Grad::Rows { ids: vec![2], values: vec![4.0], dim: 1 })] };
    assert_eq!(g.global_norm(), 5.0);
    let n = g.clip_global_norm(1.0);
    assert_eq!(n, 5.0);
    let coef = 1.0 / (5.0 + 1e-6);
    assert_eq!(g.items[0], Some(Grad::Dense(vec![3.0 * coef])));
    assert_eq!(g.items[2], Some(Grad::Rows { ids: vec![2], values: vec![4.0 * coef], dim: 1 }));
    let before = g.clone();
    g.clip_global_norm(10.0); // below the limit: unchanged
    assert_eq!(g.items, before.items);
}

#[test]
fn schedule_values() {
    let b = 0.1;
    assert_eq!(LrSchedule::Constant {}.lr_at(b, 1000), 0.1);
    let s = LrSchedule::Step { every: 10, gamma: 0.5 };
    assert_eq!(s.lr_at(b, 9), 0.1);
    assert_eq!(s.lr_at(b, 25), 0.1 * 0.25);
    assert!((LrSchedule::Exponential { gamma: 0.9 }.lr_at(b, 2) - 0.081).abs() < 1e-15);
    let c = LrSchedule::Cosine { total_steps: 100, min_lr: 0.01 };
    assert_eq!(c.lr_at(b, 0), 0.1);
    assert!((c.lr_at(b, 50) - 0.055).abs() < 1e-15);
    assert_eq!(c.lr_at(b, 100), 0.01);
    assert_eq!(c.lr_at(b, 500), 0.01);
    let w = LrSchedule::Warmup { steps: 4, after: Box::new(LrSchedule::Constant {}) };
    assert_eq!([0, 1, 3, 4, 9].map(|s| w.lr_at(b, s)), [0.025, 0.05, 0.1, 0.1, 0.1]);
    assert_eq!(LrSchedule::parse("warmup:4,cosine:100:0.01").unwrap(), LrSchedule::Warmup { steps: 4, after: Box::new(c) });
    assert!(LrSchedule::parse("cosine").is_err());
    let t: Config = Config::from_toml("[schedule]\nkind = \"step\"\nevery = 10\ngamma = 0.5\n").unwrap();
    assert_eq!(t.schedule, s);
}

/// Schedules that parse but cannot mean what they say are refused before training: a decay
/// every 0 steps, a cosine over 0 steps (both dropped the rate at once) and a cosine "down" to a
/// rate above the one it starts from (it raised the rate 38-fold in three steps).
#[test]
fn schedules_that_cannot_decay_as_written_are_refused() {
    let with = |text: &str, lr: f64| {
        let mut c: Config = Config::from_toml("").unwrap();
        c.optim.lr = lr;
        c.schedule = LrSchedule::parse(text).map_err(|e| e.to_string())?;
        c.validate()
    };
    for (text, why) in [
        ("step:0:0.5", "step EVERY = 0 (must be at least 1 step)"),
        ("cosine:0", "cosine TOTAL = 0 (must be at least 1 step)"),
        ("warmup:5,cosine:0", "cosine TOTAL = 0 (must be at least 1 step)"),
        ("cosine:3:5", "cosine MIN_LR = 5 (above the learning rate 0.1 it decays from)"),
        ("exp:nan", "gamma = NaN (must be finite and >= 0)"),
        ("step:10:-1", "gamma = -1 (must be finite and >= 0)"),
    ] {
        let e = with(text, 0.1).unwrap_err();
        assert!(e.contains(why), "{text}: {e}");
    }
    for ok in ["step:1:0.5", "cosine:1", "cosine:100:0.1", "warmup:0,constant"] {
        assert!(with(ok, 0.1).is_ok(), "{ok}");
    }
}

#[test]
fn block_coordinate_alternates_groups() {
    let mut s = ParamStore::<f32>::new();
    let a = s.add("a", "chi", Tensor::zeros(&[1]));
    let e = s.add("e", "embedding", Tensor::zeros(&[1]));
    let other = s.add("o", "other", Tensor::zeros(&[1]));
    let bc = BlockCoordinate::from_groups(2, &["chi", "embedding"]);
    let frozen = |step| {
        bc.apply(&s, step);
        (a.is_frozen(), e.is_frozen(), other.is_frozen())
    };
    assert_eq!(frozen(0), (false, true, false));
    assert_eq!(frozen(1), (false, true, false));
    assert_eq!(frozen(2), (true, false, false));
    assert_eq!(frozen(3), (true, false, false));
    assert_eq!(frozen(4), (false, true, false));
    assert_eq!(bc.active(7), Some(1));
    let off = BlockCoordinate::from_groups(0, &["chi", "embedding"]);
    off.apply(&s, 3);
    assert!(!a.is_frozen() && !e.is_frozen());
}

#[test]
fn metrics_known_values() {
    let x = [1.0, 2.0, 3.0, 4.0, 5.0];
    let y = [2.0, 4.0, 5.0, 4.0, 5.0];
    assert!((pearson(&x, &y) - 6.0 / 60f64.sqrt()).abs() < 1e-15);
    assert!((pearson(&x, &y) - 0.7745966692414834).abs() < 1e-12);
    assert_eq!(ranks(&y), vec![1.0, 2.5, 4.5, 2.5, 4.5]);
    // scipy.stats.spearmanr([1,2,3,4,5], [2,4,5,4,5]) = 0.7378647873726218
    assert!((spearman(&x, &y) - 0.7378647873726218).abs() < 1e-12);
    assert!((spearman(&x, &[10.0, 20.0, 30.0, 40.0, 1000.0]) - 1.0).abs() < 1e-15);
    assert!((pearson(&x, &[5.0, 4.0, 3.0, 2.0, 1.0]) + 1.0).abs() < 1e-15);
    assert!(pearson(&x, &[1.0; 5]).is_nan());
    assert_eq!(accuracy(&[1, 0, 2, 2], &[1, 1, 2, 0]), 0.5);
    assert_eq!(mse(&[1.0, 3.0], &[0.0, 1.0]), 2.5);
}

#[test]
fn batcher_covers_each_epoch_and_restores() {
    use chi_nn::dataset::{Batcher, BatcherState};
    let mut b = Batcher::new(10, 4, true, Rng::new(1));
    let mut seen: Vec<usize> = (0..3).flat_map(|_| b.next_batch()).collect();
    seen.sort();
    assert_eq!(seen, (0..10).collect::<Vec<_>>());
    b.next_batch();
    let st = b.state();
    let mut c = Batcher::new(10, 4, true, Rng::new(99));
    c.restore(st).unwrap();
    for _ in 0..7 {
        assert_eq!(b.next_batch(), c.next_batch());
    }
    // A position past an epoch's end (another dataset's state, or an edited one) is refused.
    let e = c.restore(BatcherState { pos: 11, ..st }).unwrap_err();
    assert!(e.contains("position 11") && e.contains("10 examples"), "{e}");
    c.restore(BatcherState { pos: 10, ..st }).unwrap();
}

fn small_cfg() -> Config {
    let mut c = Config::default();
    c.steps = 60;
    c.batch_size = 16;
    c.data.n_train = 200;
    c.data.n_test = 100;
    c.model_options.hidden = vec![16];
    c.model_options.dropout = 0.2;
    c.optim = OptimConfig::adam(0.02);
    c.clip_norm = Some(5.0);
    c.eval_every = 20;
    c.checkpoint_every = 20;
    c.keep_checkpoints = 0;
    c.gradflow_every = 5;
    c.block = BlockCoordinate::from_groups(7, &["hidden", "output"]);
    c.seed = 11;
    c
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("chi-train-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The tensor bytes of the final weights (the header's metadata order is not fixed).
fn weights(dir: &std::path::Path) -> Vec<u8> {
    let b = std::fs::read(dir.join("model.safetensors")).unwrap();
    let n = u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
    b[8 + n..].to_vec()
}

fn log_losses(dir: &std::path::Path) -> Vec<(u64, f64)> {
    train::log::read_column(&dir.join("log.jsonl"), "loss").unwrap()
}

#[test]
fn tiny_end_to_end_run_loss_falls_and_writes_outputs() {
    let mut c = Config::default();
    c.steps = 400;
    c.optim = OptimConfig::adam(0.02);
    c.model_options.hidden = vec![32, 32];
    c.eval_every = 100;
    c.log_format = train::log::LogFormat::Csv;
    let out = tmp("e2e");
    let s = train::train(&c, &out, &TrainOptions { plots: true, ..Default::default() }).unwrap();
    let first: f32 = s.losses[..20].iter().map(|l| l.1).sum::<f32>() / 20.0;
    let last: f32 = s.losses[s.losses.len() - 20..].iter().map(|l| l.1).sum::<f32>() / 20.0;
    assert!(last < 0.6 * first, "loss should fall: first {first}, last {last}");
    assert!(s.test["accuracy"] > 0.6, "test accuracy {:?}", s.test);
    for f in ["log.csv", "eval.jsonl", "gradflow.csv", "loss.svg", "loss.png", "eval.svg", "gradflow.svg", "model.safetensors", "summary.json", "config.toml"] {
        assert!(out.join(f).exists(), "missing {f}");
    }
    let svg = std::fs::read_to_string(out.join("loss.svg")).unwrap();
    assert!(svg.contains("training loss"));
    // eval of the final checkpoint reproduces the final test metrics
    let (_, step, m) = train::evaluate_checkpoint(&s.checkpoint, "test").unwrap();
    assert_eq!(step, 400);
    assert_eq!(m, s.test);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn same_seed_gives_bit_identical_runs() {
    let c = small_cfg();
    let (a, b) = (tmp("det-a"), tmp("det-b"));
    let sa = train::train(&c, &a, &TrainOptions::default()).unwrap();
    let sb = train::train(&c, &b, &TrainOptions::default()).unwrap();
    assert_eq!(sa.losses, sb.losses);
    assert!(weights(&a) == weights(&b), "weights differ");
    let mut c2 = c.clone();
    c2.seed = 12;
    let sc = train::train(&c2, &tmp("det-c"), &TrainOptions::default()).unwrap();
    assert_ne!(sa.losses, sc.losses);
    for d in [a, b, tmp("det-c")] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn interrupted_and_resumed_run_equals_uninterrupted() {
    let c = small_cfg();
    let (a, b) = (tmp("res-a"), tmp("res-b"));
    let full = train::train(&c, &a, &TrainOptions::default()).unwrap();
    // Interrupt at 33 (not a checkpoint step: the session-end checkpoint is used), then resume
    // at 33 and once more mid-way.
    let part = train::train(&c, &b, &TrainOptions { stop_after: Some(33), ..Default::default() }).unwrap();
    assert_eq!(part.step, 33);
    let part2 = train::train(&c, &b, &TrainOptions { resume: true, stop_after: Some(47), ..Default::default() }).unwrap();
    assert_eq!(part2.losses.first().unwrap().0, 34);
    let rest = train::train(&c, &b, &TrainOptions { resume: true, ..Default::default() }).unwrap();
    assert_eq!(rest.step, 60);
    let mut joined = part.losses.clone();
    joined.extend(part2.losses);
    joined.extend(rest.losses);
    assert_eq!(joined, full.losses, "losses differ after resume");
    assert!(weights(&a) == weights(&b), "final weights differ after resume");
    assert_eq!(log_losses(&a), log_losses(&b), "logs differ after resume");
    assert_eq!(full.test, rest.test);
    // A different config cannot resume this run.
    let mut other = c.clone();
    other.optim.lr = 0.5;
    assert!(train::train(&other, &b, &TrainOptions { resume: true, ..Default::default() }).is_err());
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

/// A checkpoint whose batcher state is missing, unreadable or past the end of an epoch is
/// refused, naming the file and which of these it is.
#[test]
fn a_checkpoint_with_a_missing_unreadable_or_impossible_batcher_state_is_refused_by_name() {
    let d = tmp("batcher-state");
    std::fs::create_dir_all(&d).unwrap();
    let path = d.join("step.ckpt.safetensors");
    let mut run = train::Run::new(&small_cfg()).unwrap();
    run.save(&path).unwrap();
    let meta = chi_nn::checkpoint::read_checkpoint_meta(&path).unwrap();
    let far = r#"{"epoch":0,"pos":1000000000000,"epoch_rng":1}"#;
    for (state, want) in [(Some("{not json"), "batcher state is unreadable"), (None, "lacks the batcher state"), (Some(far), "past the end of an epoch of 200 examples")] {
        let mut m = meta.clone();
        match state {
            Some(v) => m.extra.insert("batcher".into(), v.into()),
            None => m.extra.remove("batcher"),
        };
        chi_nn::checkpoint::save_checkpoint(&path, run.model.store().params(), &run.optim, &m).unwrap();
        let e = run.load(&path).unwrap_err();
        assert!(e.contains(want) && e.contains(path.to_str().unwrap()), "{e}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn regression_and_binary_datasets_train() {
    for (ds, metric) in [("surface", "pearson"), ("xor-noise", "accuracy")] {
        let mut c = Config::default();
        c.dataset = ds.into();
        c.steps = 300;
        c.optim = OptimConfig::adam(0.02);
        c.gradflow_every = 0;
        let out = tmp(ds);
        let s = train::train(&c, &out, &TrainOptions::default()).unwrap();
        assert!(s.test[metric] > 0.6, "{ds}: {:?}", s.test);
        let _ = std::fs::remove_dir_all(&out);
    }
}

#[test]
fn config_toml_round_trip_and_unknown_keys() {
    let c = small_cfg();
    assert_eq!(Config::from_toml(&c.to_toml()).unwrap(), c);
    assert!(Config::from_toml("stepz = 3").unwrap_err().contains("stepz"));
}
