//! Quick variants of the experiment runners (seconds each).

use chi_nn::dist::{Group, ThreadGroup};
use chi_rcnn::experiments::{
    hidden_for_params, markov_stream, run_language_models, run_language_models_on, run_rationale_task, run_rationale_task_on, synthetic_rationale_task, LmKind,
    LmRunConfig, RationaleRunConfig,
};
use std::rc::Rc;
use chi_rcnn::{Decay, GeneratorKind};

#[test]
fn language_models_learn_a_markov_stream() {
    let vocab = 30;
    let stream = markov_stream(vocab, 12_000, 3, 1);
    let (train, test) = stream.split_at(10_000);
    let cfg = LmRunConfig { vocab, emb: 16, target_params: 3_000, unroll: 12, batch: 16, steps: 150, lr: 0.01, clip: 5.0, seed: 3 };
    let kinds = [LmKind::Rcnn(Decay::Constant(0.5)), LmKind::Rcnn(Decay::Learned(0.5)), LmKind::Rcnn(Decay::AdaptiveX), LmKind::Lstm, LmKind::Cnn];
    let t0 = std::time::Instant::now();
    let res = run_language_models(train, test, &kinds, &cfg).unwrap();
    eprintln!("{:.1}s", t0.elapsed().as_secs_f64());
    for r in &res {
        eprintln!("{r:?}");
        assert!(r.test_perplexity.is_finite() && r.test_perplexity < vocab as f64, "{} is no better than uniform: {r:?}", r.model);
        assert!(r.train_loss_end < r.train_loss_start, "{r:?}");
        assert!((r.params as f64 - 3_000.0).abs() / 3_000.0 < 0.15, "parameter counts should match: {r:?}");
    }
    assert!(hidden_for_params(LmKind::Lstm, vocab, 16, 3_000).unwrap() < hidden_for_params(LmKind::Cnn, vocab, 16, 3_000).unwrap());
}

#[test]
fn synthetic_rationale_task_runs_and_spans_are_planted() {
    let train = synthetic_rationale_task(600, 3, 15, 0.2, 1).unwrap();
    let test = synthetic_rationale_task(100, 3, 15, 0.2, 2).unwrap();
    for (text, (spans, tg)) in train.texts.iter().zip(train.spans.iter().zip(&train.targets)) {
        for (a, &(s, e)) in spans.iter().enumerate() {
            assert_eq!(e - s, 3);
            assert_eq!(text[s], 20 + 10 + a, "span starts with the aspect marker");
            assert!(((text[s + 1] - 20) / 2) as f64 / 4.0 == tg[a]);
        }
    }
    for generator in [GeneratorKind::Independent, GeneratorKind::Dependent { state: 4 }] {
        let cfg = RationaleRunConfig { aspect: 0, emb: 16, hidden: 16, generator, lambda1: 0.002, lambda2: 0.004, steps: 300, batch: 32, lr: 0.005, baseline: true, seed: 5 };
        let t0 = std::time::Instant::now();
        let r = run_rationale_task(&train, &test, &cfg).unwrap();
        eprintln!("{generator:?}: {r:?} in {:.1}s", t0.elapsed().as_secs_f64());
        assert!((0.0..=1.0).contains(&r.generator_precision) && (0.0..=1.0).contains(&r.selection_rate));
        assert!(r.cost_start_end.1 < r.cost_start_end.0, "training should lower the cost: {r:?}");
        // Selecting at random would give the span's share of the text, 3/15 = 0.2.
        assert!(r.selection_rate > 0.0 && r.generator_precision > 0.3, "rationales should concentrate on the planted span: {r:?}");
    }
}

/// The longer run (about 30 s): `cargo test -p chi-rcnn --release --test suite experiments:: -- --ignored --nocapture`.
#[test]
#[ignore = "about 30 s: the longer rationale run (precision and selection rate at two sparsity weights); run with --ignored"]
fn rationale_task_longer_run() {
    let train = synthetic_rationale_task(2000, 3, 15, 0.2, 1).unwrap();
    let test = synthetic_rationale_task(200, 3, 15, 0.2, 2).unwrap();
    for l1 in [0.002, 0.005] {
        for generator in [GeneratorKind::Independent, GeneratorKind::Dependent { state: 4 }] {
            let cfg = RationaleRunConfig { aspect: 0, emb: 16, hidden: 16, generator, lambda1: l1, lambda2: 2.0 * l1, steps: 1000, batch: 32, lr: 0.005, baseline: true, seed: 5 };
            let r = run_rationale_task(&train, &test, &cfg).unwrap();
            eprintln!("λ1={l1} {generator:?}: {r:?}");
            assert!(r.cost_start_end.1 < r.cost_start_end.0);
        }
    }
}

/// Training throughput of one layer at equal parameter count (about a minute):
/// `cargo test -p chi-rcnn --release --test suite experiments::throughput -- --ignored --nocapture`.
#[test]
#[ignore = "about a minute and prints a timing report (no assertion on time); run with --ignored"]
fn throughput_report() {
    use chi_rcnn::experiments::layer_training_throughput;
    use chi_rcnn::ScanImpl;
    for (kind, scan) in [
        (LmKind::Rcnn(Decay::Constant(0.5)), ScanImpl::Fused),
        (LmKind::Rcnn(Decay::Constant(0.5)), ScanImpl::Composed),
        (LmKind::Rcnn(Decay::AdaptiveX), ScanImpl::Fused),
        (LmKind::Rcnn(Decay::AdaptiveX), ScanImpl::Composed),
        (LmKind::Lstm, ScanImpl::Fused),
    ] {
        let r = layer_training_throughput(kind, scan, 32, 35, 128, 200_000, 10, 1).unwrap();
        eprintln!("{r:?}");
        assert!(r.tokens_per_sec > 0.0);
    }
}

/// Runs `f` on each of `k` thread ranks, in rank order.
fn on_ranks<R: Send + 'static>(k: usize, f: impl Fn(Group) -> R + Send + Sync + 'static) -> Vec<R> {
    ThreadGroup::run_each(k, move |m| f(Group::new(Rc::new(m))))
}

/// The language models on 3 thread ranks (the protocol `mpirun` runs; windows of a step of 16
/// split 6/5/5): the perplexities of one process, up to float32 rounding of the other summation
/// order, the training losses logged as global means.
#[test]
fn language_models_on_three_ranks_match_one_process() {
    let cfg = LmRunConfig { vocab: 30, emb: 8, target_params: 2_000, unroll: 10, batch: 16, steps: 40, lr: 0.01, clip: 0.5, seed: 3 };
    let kinds = [LmKind::Rcnn(Decay::AdaptiveX), LmKind::Lstm];
    let stream = markov_stream(30, 6_000, 3, 1);
    let (train, test) = stream.split_at(5_000);
    let single = run_language_models(train, test, &kinds, &cfg).unwrap();
    let (train, test) = (train.to_vec(), test.to_vec());
    for ranked in on_ranks(3, move |g| run_language_models_on(&train, &test, &kinds, &cfg, &g).unwrap()) {
        for (a, b) in ranked.iter().zip(&single) {
            let rel = (a.test_perplexity - b.test_perplexity).abs() / b.test_perplexity;
            assert!(rel < 1e-4, "{}: {} vs {}", a.model, a.test_perplexity, b.test_perplexity);
            assert!((a.train_loss_end - b.train_loss_end).abs() < 1e-4 * b.train_loss_end, "{a:?} vs {b:?}");
        }
    }
}

/// The rationale task on 2 thread ranks: each rank samples its own masks, so the run is not one
/// process's, but the ranks apply the same averaged updates (identical held-out results) and
/// the model still learns.
#[test]
fn rationale_task_on_two_ranks_keeps_the_ranks_equal() {
    let train = synthetic_rationale_task(400, 3, 15, 0.2, 1).unwrap();
    let test = synthetic_rationale_task(80, 3, 15, 0.2, 2).unwrap();
    let cfg = RationaleRunConfig { aspect: 0, emb: 16, hidden: 16, generator: GeneratorKind::Independent, lambda1: 0.002, lambda2: 0.004, steps: 200, batch: 32, lr: 0.005, baseline: true, seed: 5 };
    let results = on_ranks(2, move |g| run_rationale_task_on(&train, &test, &cfg, &g).unwrap());
    assert_eq!(results[0], results[1], "ranks must end with the same model");
    let r = &results[0];
    assert!(r.cost_start_end.1 < r.cost_start_end.0, "training should lower the cost: {r:?}");
}
