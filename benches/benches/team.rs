//! The cost of one two-way fork-join: `rayon::join` against `chi_kernels::team::for_each` (the
//! calling thread plus the spinning partner), for two jobs of a fixed amount of busy work each
//! (`0` = empty jobs; there the caller usually runs both before the partner looks). The
//! sequential time of the two jobs (`seq`) is the floor a split must beat:
//! overhead ≈ time − seq / 2.
//!
//! ```text
//! cargo bench -p chi-benches --bench team
//! ```
//!
//! Each case runs in a 2-thread rayon pool entered once (`install`), as `chi --threads 2` does
//! for its whole run, so `rayon::join` is called from a worker. `after_gap` first lets the
//! partner park (a sleep longer than its spin bound): the hand-off then includes a wake-up.

use chi_kernels::team::{for_each, SPIN};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// About `ns` nanoseconds of register-only work.
fn busy(ns: u64) {
    let until = Instant::now() + Duration::from_nanos(ns);
    let mut x = 1u64;
    while Instant::now() < until {
        for _ in 0..64 {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

fn handoff(c: &mut Criterion) {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let mut g = c.benchmark_group("handoff");
    g.sample_size(30).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1));
    for job_ns in [0u64, 5_000, 20_000] {
        g.bench_with_input(BenchmarkId::new("seq", job_ns), &job_ns, |b, &ns| {
            b.iter(|| {
                busy(ns);
                busy(ns)
            })
        });
        g.bench_with_input(BenchmarkId::new("rayon_join", job_ns), &job_ns, |b, &ns| {
            pool.install(|| b.iter(|| rayon::join(|| busy(ns), || busy(ns))))
        });
        g.bench_with_input(BenchmarkId::new("team", job_ns), &job_ns, |b, &ns| {
            pool.install(|| b.iter(|| for_each(2, 0..2, |_| busy(ns))))
        });
    }
    // A split after the helpers went to sleep (the first split after a pause in the work).
    let gap = SPIN * 3;
    let ns = 20_000;
    // Each timed split follows a sleep of `gap`; only the split is timed.
    let after_gap = |b: &mut criterion::Bencher, split: &(dyn Fn() + Sync)| {
        pool.install(|| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    std::thread::sleep(gap);
                    let t = Instant::now();
                    split();
                    total += t.elapsed();
                }
                total
            })
        })
    };
    g.bench_function(BenchmarkId::new("rayon_join_after_gap", ns), |b| after_gap(b, &|| {
        rayon::join(|| busy(ns), || busy(ns));
    }));
    g.bench_function(BenchmarkId::new("team_after_gap", ns), |b| after_gap(b, &|| for_each(2, 0..2, |_| busy(ns))));
    g.finish();
}

criterion_group!(benches, handoff);
criterion_main!(benches);
