//! The low-latency fork-join (`chi_kernels::team`): 1-thread and 2-thread results agree bit for
//! bit around the split thresholds, panics propagate only after both shares stopped, concurrent
//! and nested callers work, and a 1-thread pool never splits. No timing assertions; the sleeps
//! below only make the partner likely to take a job, and every assertion holds either way.

use crate::common::{in_pool, XorShift};
use chi_kernels::elementwise::{unary, Unary};
use chi_kernels::gemm::{gemm_par, par_min_flops, KernelChoice, MatMut, MatRef, Par};
use chi_kernels::reduce::sum_all;
use chi_kernels::team::{for_each, in_share, split_counts};
use chi_kernels::threads::run_each;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::thread;
use std::time::Duration;

fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut r = XorShift::new(seed | 1);
    (0..n).map(|_| r.uniform(-1.0, 1.0) as f32).collect()
}

fn product(par: Par, m: usize, k: usize, n: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    gemm_par(par, 1.0, MatRef::row_major(a, m, k), MatRef::row_major(b, k, n), 0.0, MatMut::row_major(&mut c, m, n));
    c
}

fn same_bits(x: &[f32], y: &[f32]) -> bool {
    x.len() == y.len() && x.iter().zip(y).all(|(a, b)| a.to_bits() == b.to_bits())
}

/// Square sizes around the GEMM thread threshold, and an LSTM step's product, forced onto two
/// threads and left to `Par::Auto`: the same bits as one thread, and the split really happened.
#[test]
fn gemm_two_threads_equal_one_bitwise_around_threshold() {
    let cross = (par_min_flops::<f32>(KernelChoice::Auto) as f64 / 2.0).cbrt() as usize;
    let mut shapes: Vec<(usize, usize, usize)> = [cross.saturating_sub(17).max(8), cross - 1, cross, cross + 1, cross + 33].iter().map(|&s| (s, s, s)).collect();
    shapes.extend([(16, 128, 512), (128, 16, 512), (300, 64, 7)]);
    for (m, k, n) in shapes {
        let (a, b) = (data(m * k, 3), data(k * n, 5));
        let one = in_pool(1, || product(Par::Auto, m, k, n, &a, &b));
        for par in [Par::Split(2), Par::Auto] {
            let (two, splits) = in_pool(2, || {
                let before = split_counts();
                let c = product(par, m, k, n, &a, &b);
                let after = split_counts();
                (c, after.0 + after.1 - before.0 - before.1)
            });
            assert!(same_bits(&one, &two), "{m}×{k}×{n} {par:?}: 2 threads differ from 1");
            if par == Par::Split(2) {
                assert!(splits >= 1, "{m}×{k}×{n}: Split(2) in a 2-thread pool did not split");
            }
        }
    }
}

/// Elementwise maps and sums just below and above the split threshold.
#[test]
fn elementwise_two_threads_equal_one_bitwise_around_threshold() {
    for n in [(1 << 15) + 1, (1 << 17) - 1, 1 << 17, (1 << 17) + 65, 300_001] {
        let x: Vec<f32> = data(n, n as u64).iter().map(|v| v * 8.0).collect();
        for op in [Unary::Exp, Unary::Tanh, Unary::Relu] {
            let run = |threads| {
                in_pool(threads, || {
                    let mut y = vec![0f32; n];
                    unary(op, &x, &mut y);
                    (y, sum_all(&x))
                })
            };
            let (y1, s1) = run(1);
            let (y2, s2) = run(2);
            assert!(same_bits(&y1, &y2), "{} n={n}: 2 threads differ from 1", op.name());
            assert_eq!(s1.to_bits(), s2.to_bits(), "sum n={n}");
        }
    }
}

/// A panic in either share reaches the caller, only after the other share has finished with the
/// borrowed data; the team works afterwards.
#[test]
fn panics_propagate_after_both_shares_and_team_recovers() {
    for panic_on_caller in [true, false] {
        let started = AtomicBool::new(false);
        let finished = AtomicBool::new(false);
        let r = in_pool(2, || {
            let caller = thread::current().id();
            catch_unwind(AssertUnwindSafe(|| {
                for_each(2, 0..2, |_| {
                    let on_caller = thread::current().id() == caller;
                    if on_caller == panic_on_caller {
                        thread::sleep(Duration::from_millis(10));
                        panic!("share failed");
                    }
                    started.store(true, SeqCst);
                    thread::sleep(Duration::from_millis(40));
                    finished.store(true, SeqCst);
                })
            }))
        });
        let err = r.expect_err("the panic must propagate");
        assert_eq!(err.downcast_ref::<&str>().copied(), Some("share failed"));
        // Either the other share never started, or the caller waited for it to end.
        assert_eq!(started.load(SeqCst), finished.load(SeqCst), "caller returned while a share still ran");
    }
    // The team still runs work after the panics.
    let mut out = vec![0usize; 64];
    in_pool(2, || for_each(2, out.chunks_mut(8).enumerate(), |(i, c)| c.iter_mut().for_each(|v| *v = i + 1)));
    assert!(out.iter().enumerate().all(|(j, &v)| v == j / 8 + 1));
}

/// Four user threads, each with its own 2-thread pool, hammer small splits at once: they contend
/// for the one partner (losers fall back to rayon) and every result is right.
#[test]
fn concurrent_callers_get_correct_results() {
    let (m, k, n) = (48, 40, 64);
    let (a, b) = (data(m * k, 11), data(k * n, 13));
    let want = product(Par::Seq, m, k, n, &a, &b);
    let x: Vec<f32> = data(200_000, 17);
    let mut want_exp = vec![0f32; x.len()];
    in_pool(1, || unary(Unary::Exp, &x, &mut want_exp));
    let team_jobs = AtomicUsize::new(0);
    thread::scope(|s| {
        for t in 0..4 {
            let (a, b, x, want, want_exp, team_jobs) = (&a, &b, &x, &want, &want_exp, &team_jobs);
            s.spawn(move || {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
                pool.install(|| {
                    let before = split_counts();
                    for i in 0..150 {
                        let c = product(Par::Split(2), m, k, n, a, b);
                        assert!(same_bits(&c, want), "thread {t} round {i}: GEMM");
                        let mut sums = vec![0usize; 16];
                        for_each(2, sums.iter_mut().enumerate(), |(j, v)| *v = (0..=j + i).sum());
                        assert!(sums.iter().enumerate().all(|(j, &v)| v == (0..=j + i).sum::<usize>()), "thread {t} round {i}: for_each");
                        if i % 10 == 0 {
                            let mut y = vec![0f32; x.len()];
                            unary(Unary::Exp, x, &mut y);
                            assert!(same_bits(&y, want_exp), "thread {t} round {i}: exp");
                        }
                    }
                    let after = split_counts();
                    team_jobs.fetch_add(after.0 - before.0, SeqCst);
                });
            });
        }
    });
    assert!(team_jobs.load(SeqCst) > 0, "no caller ever got the partner");
}

/// Kernels and splits called from inside a share run inline (no deadlock, no further split),
/// and give the sequential results.
#[test]
fn nested_calls_run_inline() {
    let (m, k, n) = (130, 130, 130);
    let (a, b) = (data(m * k, 19), data(k * n, 23));
    let want = product(Par::Seq, m, k, n, &a, &b);
    let x = data(300_000, 29);
    let mut want_exp = vec![0f32; x.len()];
    unary(Unary::Exp, &x, &mut want_exp);
    let ok = AtomicUsize::new(0);
    in_pool(2, || {
        assert!(!in_share());
        for_each(2, 0..4, |i| {
            assert!(in_share());
            let before = split_counts();
            let c = product(Par::Split(2), m, k, n, &a, &b);
            let mut y = vec![0f32; x.len()];
            unary(Unary::Exp, &x, &mut y);
            let mut inner = vec![0usize; 8];
            for_each(2, inner.iter_mut().enumerate(), |(j, v)| *v = i * j);
            run_each(vec![1, 2], |_| ());
            assert_eq!(split_counts(), before, "a nested call split");
            assert!(same_bits(&c, &want) && same_bits(&y, &want_exp));
            assert!(inner.iter().enumerate().all(|(j, &v)| v == i * j));
            ok.fetch_add(1, SeqCst);
        });
        assert!(!in_share());
    });
    assert_eq!(ok.load(SeqCst), 4);
}

/// In a 1-thread pool nothing is handed off or split, whatever `Par` asks for.
#[test]
fn one_thread_never_splits() {
    let (m, k, n) = (300, 200, 300);
    let (a, b) = (data(m * k, 31), data(k * n, 37));
    let x = data(1 << 20, 41);
    in_pool(1, || {
        let before = split_counts();
        for par in [Par::Split(2), Par::Auto, Par::Threads(4)] {
            product(par, m, k, n, &a, &b);
        }
        let mut y = vec![0f32; x.len()];
        unary(Unary::Tanh, &x, &mut y);
        sum_all(&x);
        for_each(2, y.chunks_mut(1000), |c| c.fill(1.0));
        run_each(vec![1, 2, 3], |_| ());
        assert_eq!(split_counts(), before, "a 1-thread pool split work");
    });
    chi_kernels::threads::with_threads(1, || {
        let before = split_counts();
        product(Par::Split(2), m, k, n, &a, &b);
        assert_eq!(split_counts(), before);
    })
    .unwrap();
}
