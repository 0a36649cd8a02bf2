//! Where a second thread starts to pay for a GEMM: chi at one thread (`Par::Seq`, id `t1`) and
//! forced onto two (`Par::Split(2)`, id `t2`) for square sizes around the threshold and for the
//! products of one LSTM training step (forward `h·W_hh`, backward `da·W_hhᵀ` and `hᵀ·da`).
//! `Par::Auto` / `Par::Threads` use one thread below `chi_kernels::gemm::par_min_flops`; this
//! bench is how that constant is chosen. Run on an otherwise idle machine if possible:
//!
//! ```text
//! cargo bench -p chi-benches --bench par_crossover
//! ```
//!
//! Each shape runs t1 then t2 (criterion does not interleave); short samples keep the whole file
//! under two minutes.

use chi_kernels::gemm::{gemm_par, MatMut, MatRef, Par};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;

fn data(n: usize, seed: u32) -> Vec<f32> {
    (0..n).map(|i| ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) as f32 / (1u32 << 24) as f32 - 0.5).collect()
}

/// `C (m×n) ← A·B` with A `m×k` (transposed view if `ta`), B `k×n` (transposed view if `tb`).
fn shape(c: &mut Criterion, label: &str, (m, k, n): (usize, usize, usize), ta: bool, tb: bool) {
    let a = data(m * k, 1);
    let b = data(k * n, 2);
    let mut out = vec![0.0f32; m * n];
    let mut g = c.benchmark_group("par_crossover");
    g.throughput(Throughput::Elements((2 * m * n * k) as u64));
    g.sample_size(10).warm_up_time(Duration::from_millis(200)).measurement_time(Duration::from_millis(600));
    for (t, par) in [(1, Par::Seq), (2, Par::Split(2))] {
        g.bench_with_input(BenchmarkId::new(format!("t{t}"), label), &(), |bch, _| {
            bch.iter(|| {
                let av = if ta { MatRef::row_major(&a, k, m).t() } else { MatRef::row_major(&a, m, k) };
                let bv = if tb { MatRef::row_major(&b, n, k).t() } else { MatRef::row_major(&b, k, n) };
                gemm_par(par, 1.0, av, bv, 0.0, MatMut::row_major(&mut out, m, n));
                black_box(&mut out);
            })
        });
    }
    g.finish();
}

fn crossover(c: &mut Criterion) {
    for n in [64, 80, 96, 112, 128, 160, 192, 256] {
        shape(c, &format!("square{n}"), (n, n, n), false, false);
    }
    // LSTM hidden 128 (input 64), batch 16: forward h·W_hh, backward da·W_hhᵀ and hᵀ·da.
    shape(c, "lstm128_fwd_m16_k128_n512", (16, 128, 512), false, false);
    shape(c, "lstm128_dh_m16_k512_n128", (16, 512, 128), false, true);
    shape(c, "lstm128_dw_m128_k16_n512", (128, 16, 512), true, false);
    // LSTM hidden 512, batch 16 and 64.
    shape(c, "lstm512_fwd_m16_k512_n2048", (16, 512, 2048), false, false);
    shape(c, "lstm512_dw_m512_k16_n2048", (512, 16, 2048), true, false);
    shape(c, "lstm512_fwd_m64_k512_n2048", (64, 512, 2048), false, false);
}

criterion_group!(benches, crossover);
criterion_main!(benches);
