//! GEMM benchmarks: chi vs `matrixmultiply`, square sizes and the skinny shapes chi's models use.
//!
//! Throughput is reported in FLOPs (`2·m·n·k` per product, via criterion's `Elements`).
//!
//! Threads: chi runs with `Par::Seq` (id `chi/t1`) and with `Par::Split(2)` on rayon's global
//! pool (id `chi/t2`; the pool has one thread per core, 2 on the target machine).
//! `matrixmultiply` uses its own thread pool, whose size it reads **once per process** from the
//! environment variable `MATMUL_NUM_THREADS`; this bench sets it to 1 unless it is already set,
//! and labels matrixmultiply's ids with the count actually used (`matrixmultiply/t1`). For the
//! two-thread comparison run
//!
//! ```text
//! MATMUL_NUM_THREADS=2 cargo bench -p chi-benches --bench gemm -- t2
//! ```
//!
//! Sample counts are kept small (10 samples, ~1 s per benchmark) so the whole file runs in a few
//! minutes; `chi bench gemm` gives the same comparison as medians of alternating runs.

use chi_kernels::gemm::{gemm_batched, gemm_packed_par, gemm_par, BatchRef, MatMut, MatRef, PackedB, Par};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;

fn data(n: usize, seed: u32) -> Vec<f32> {
    (0..n).map(|i| ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) as f32 / (1u32 << 24) as f32 - 0.5).collect()
}

fn mm_threads() -> usize {
    if std::env::var_os("MATMUL_NUM_THREADS").is_none() {
        // Must happen before the first matrixmultiply call (it reads the variable once).
        std::env::set_var("MATMUL_NUM_THREADS", "1");
    }
    std::env::var("MATMUL_NUM_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(1)
}

/// chi's thread settings: (label, parallelism).
const PARS: [(usize, Par); 2] = [(1, Par::Seq), (2, Par::Split(2))];

/// `C (m×n) ← A (m×k) · B (k×n)`, all row-major: chi at 1 and 2 threads, matrixmultiply.
fn bench_shape(c: &mut Criterion, group: &str, label: &str, m: usize, k: usize, n: usize, mmt: usize) {
    let a = data(m * k, 1);
    let b = data(k * n, 2);
    let mut out = vec![0.0f32; m * n];
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements((2 * m * n * k) as u64));
    let big = 2 * m * n * k > 1 << 30;
    g.sample_size(10).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_millis(if big { 3000 } else { 1000 }));
    for (t, par) in PARS {
        g.bench_with_input(BenchmarkId::new(format!("chi/t{t}"), label), &(), |bch, _| {
            bch.iter(|| {
                gemm_par(par, 1.0, MatRef::row_major(&a, m, k), MatRef::row_major(&b, k, n), 0.0, MatMut::row_major(&mut out, m, n));
                black_box(&mut out);
            })
        });
    }
    g.bench_with_input(BenchmarkId::new(format!("matrixmultiply/t{mmt}"), label), &(), |bch, _| {
        bch.iter(|| {
            // SAFETY: a is m×k, b is k×n, out is m×n, all row-major and fully allocated.
            unsafe {
                matrixmultiply::sgemm(m, k, n, 1.0, a.as_ptr(), k as isize, 1, b.as_ptr(), n as isize, 1, 0.0, out.as_mut_ptr(), n as isize, 1)
            };
            black_box(&mut out);
        })
    });
    g.finish();
}

fn gemm_benches(c: &mut Criterion) {
    let mmt = mm_threads();
    for n in [64, 128, 256, 512, 1024, 2048] {
        bench_shape(c, "sgemm_square", &n.to_string(), n, n, n, mmt);
    }
    // One LSTM step's gate product [x, h] · W: batch 16, input 64 + hidden 128 → 4·128 gates,
    // and hidden 512 with input 512 → 4·512 gates.
    bench_shape(c, "sgemm_lstm_step", "m16_k192_n512", 16, 192, 512, mmt);
    bench_shape(c, "sgemm_lstm_step", "m16_k1024_n2048", 16, 1024, 2048, mmt);
    // One attention head: (64 × 64) queries·keysᵀ-sized product with 128 outputs.
    bench_shape(c, "sgemm_attention_head", "m64_k64_n128", 64, 64, 128, mmt);

    // Eight attention heads (Q·Kᵀ, 64×64 by 64×128 each) as one batched call vs a loop.
    let (heads, m, k, n) = (8, 64, 64, 128);
    let a = data(heads * m * k, 3);
    let bt = data(heads * n * k, 4); // Kᵀ: each head stored n × k, used transposed
    let mut out = vec![0.0f32; heads * m * n];
    let mut g = c.benchmark_group("sgemm_attention_batched");
    g.throughput(Throughput::Elements((2 * heads * m * n * k) as u64));
    g.sample_size(10).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_millis(1000));
    // gemm_batched has no thread argument: it spreads small products over rayon's global pool.
    g.bench_function(BenchmarkId::new("chi/t2", "8x_m64_k64_n128"), |bch| {
        bch.iter(|| {
            gemm_batched(1.0, BatchRef::row_major(&a, heads, m, k), BatchRef::row_major(&bt, heads, n, k).t(), 0.0, &mut out);
            black_box(&mut out);
        })
    });
    g.bench_function(BenchmarkId::new("chi/t1", "8x_m64_k64_n128"), |bch| {
        bch.iter(|| {
            for h in 0..heads {
                let (ah, bh) = (BatchRef::row_major(&a, heads, m, k).mat(h), BatchRef::row_major(&bt, heads, n, k).t().mat(h));
                gemm_par(Par::Seq, 1.0, ah, bh, 0.0, MatMut::row_major(&mut out[h * m * n..(h + 1) * m * n], m, n));
            }
            black_box(&mut out);
        })
    });
    g.bench_function(BenchmarkId::new(format!("matrixmultiply/t{mmt}"), "8x_m64_k64_n128"), |bch| {
        bch.iter(|| {
            for h in 0..heads {
                // SAFETY: head h's A (m×k row-major), Bᵀ (n×k row-major, read with strides (1, k))
                // and C (m×n row-major) lie inside their buffers.
                unsafe {
                    matrixmultiply::sgemm(
                        m, k, n, 1.0,
                        a.as_ptr().add(h * m * k), k as isize, 1,
                        bt.as_ptr().add(h * n * k), 1, k as isize,
                        0.0, out.as_mut_ptr().add(h * m * n), n as isize, 1,
                    )
                };
            }
            black_box(&mut out);
        })
    });
    g.finish();
}

/// The skinny products of a recurrent layer, `X (m × k) · W` with the weight packed once
/// ([`PackedB`]) vs packed inside every call, for `W` stored `k × n` (forward) and for `W` stored
/// `n × k` and used transposed (the transposing pack): m = 16 and 64, k = 512, n = 2048; one thread.
/// `cargo bench -p chi-benches --bench gemm -- gemm_packed`
fn gemm_packed_benches(c: &mut Criterion) {
    let (k, n) = (512, 2048);
    let w = data(k * n, 5);
    let mut g = c.benchmark_group("gemm_packed");
    g.sample_size(10).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_millis(1000));
    for m in [16, 64] {
        let x = data(m * k, 6);
        let mut out = vec![0.0f32; m * n];
        g.throughput(Throughput::Elements((2 * m * n * k) as u64));
        for (label, b) in [("W", MatRef::row_major(&w, k, n)), ("Wt", MatRef::row_major(&w, n, k).t())] {
            let packed = PackedB::new(b);
            g.bench_function(BenchmarkId::new(format!("prepacked/{label}"), format!("m{m}_k{k}_n{n}")), |bch| {
                bch.iter(|| {
                    gemm_packed_par(Par::Seq, 1.0, MatRef::row_major(black_box(&x), m, k), &packed, 0.0, MatMut::row_major(&mut out, m, n));
                    black_box(&mut out);
                })
            });
            g.bench_function(BenchmarkId::new(format!("packed_per_call/{label}"), format!("m{m}_k{k}_n{n}")), |bch| {
                bch.iter(|| {
                    gemm_par(Par::Seq, 1.0, MatRef::row_major(black_box(&x), m, k), b, 0.0, MatMut::row_major(&mut out, m, n));
                    black_box(&mut out);
                })
            });
        }
    }
    g.throughput(Throughput::Elements((k * n) as u64));
    g.bench_function(BenchmarkId::new("pack_only/Wt", format!("k{k}_n{n}")), |bch| bch.iter(|| black_box(PackedB::new(MatRef::row_major(&w, n, k).t()))));
    g.finish();
}

criterion_group!(benches, gemm_benches, gemm_packed_benches);
criterion_main!(benches);
