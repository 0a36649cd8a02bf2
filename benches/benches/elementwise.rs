//! Elementwise kernels: bandwidth (GB/s) vs size across L1/L2/L3/DRAM, SIMD vs scalar `std`
//! for exp/tanh/sigmoid, a STREAM triad/copy reference measured in the same run, and the
//! compute-bound maps and recurrent-cell passes on each SIMD level the CPU runs (portable, AVX2,
//! AVX-512), forced in turn.
//!
//! `cargo bench -p chi-benches --bench elementwise` (≈4 min). Filter e.g. `-- simd_vs_std` or
//! `-- simd_levels`.
//! Bytes counted: unary 8 B/elem (read + write f32), binary/axpy/triad 12 B/elem, copy 8 B.

use chi_benches::{rand_vec, triad};
use chi_kernels::elementwise::{axpy, binary, sigmoid_scalar, unary, unary_backward, Binary, Unary};
use chi_kernels::rnn::{gru_backward, gru_forward, lstm_backward, lstm_forward, Rows};
use chi_kernels::simd::{cpu_simd_level, force_simd_level, SimdLevel};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;

const SIZES: [usize; 5] = [1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 25];

fn label(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{}M", n >> 20)
    } else {
        format!("{}K", n >> 10)
    }
}

fn bandwidth(c: &mut Criterion) {
    let mut g = c.benchmark_group("elementwise_f32");
    g.sample_size(10).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_millis(900));
    for &n in &SIZES {
        let a: Vec<f32> = rand_vec(n, 1, 4.0);
        let b: Vec<f32> = rand_vec(n, 2, 4.0);
        let mut out = vec![0f32; n];
        let id = |name: &str| BenchmarkId::new(name, label(n));
        g.throughput(Throughput::Bytes(12 * n as u64));
        g.bench_function(id("add"), |bch| bch.iter(|| binary(Binary::Add, black_box(&a), &b, &mut out)));
        g.bench_function(id("mul"), |bch| bch.iter(|| binary(Binary::Mul, black_box(&a), &b, &mut out)));
        g.bench_function(id("axpy"), |bch| bch.iter(|| axpy(0.5, black_box(&a), &mut out)));
        g.bench_function(id("triad_ref_1t"), |bch| bch.iter(|| triad(&mut out, black_box(&a), &b, 0.5, 1)));
        g.bench_function(id("triad_ref_2t"), |bch| bch.iter(|| triad(&mut out, black_box(&a), &b, 0.5, 2)));
        g.throughput(Throughput::Bytes(8 * n as u64));
        g.bench_function(id("copy_ref"), |bch| bch.iter(|| out.copy_from_slice(black_box(&a))));
        for op in [Unary::Exp, Unary::Tanh, Unary::Sigmoid] {
            g.bench_function(id(op.name()), |bch| bch.iter(|| unary(op, black_box(&a), &mut out)));
        }
    }
    g.finish();
}

fn simd_vs_std(c: &mut Criterion) {
    // 16K elements: in L1/L2, single-threaded (below the rayon threshold), compute-bound.
    let n = 1 << 14;
    let mut g = c.benchmark_group("simd_vs_std");
    g.sample_size(20).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_millis(800));
    g.throughput(Throughput::Elements(n as u64));
    macro_rules! pair {
        ($t:ty) => {{
            let x: Vec<$t> = rand_vec(n, 3, 10.0);
            let mut y = vec![0 as $t; n];
            let t = stringify!($t);
            for op in [Unary::Exp, Unary::Tanh, Unary::Sigmoid] {
                g.bench_function(format!("{}_{t}/simd", op.name()), |b| b.iter(|| unary(op, black_box(&x), &mut y)));
                g.bench_function(format!("{}_{t}/std", op.name()), |b| {
                    b.iter(|| {
                        for (yi, &xi) in y.iter_mut().zip(black_box(&x)) {
                            *yi = match op {
                                Unary::Exp => xi.exp(),
                                Unary::Tanh => xi.tanh(),
                                _ => sigmoid_scalar(xi),
                            };
                        }
                    })
                });
            }
        }};
    }
    pair!(f32);
    pair!(f64);
    g.finish();
}

/// Per SIMD level: sigmoid and tanh with their derivatives on 16K f32 (in L1/L2), and one LSTM and
/// one GRU time step's pointwise passes at batch 64, hidden 512 (the fused sequences' per-step
/// kernels in the side-by-side LSTM/GRU workloads), forward and backward.
fn simd_levels(c: &mut Criterion) {
    let mut levels = vec![SimdLevel::Portable];
    for l in [SimdLevel::Avx2Fma, SimdLevel::Avx512] {
        if cpu_simd_level() >= l {
            levels.push(l);
        }
    }
    let mut g = c.benchmark_group("simd_levels");
    g.sample_size(20).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_millis(800));
    let n = 1 << 14;
    let x: Vec<f32> = rand_vec(n, 5, 6.0);
    let gy: Vec<f32> = rand_vec(n, 6, 1.0);
    let (b, h) = (64, 512);
    let pre: Vec<f32> = rand_vec(4 * b * h, 7, 3.0);
    let c0: Vec<f32> = rand_vec(b * h, 8, 1.0);
    let g2: Vec<f32> = rand_vec(2 * b * h, 9, 1.0);
    let xp: Vec<f32> = rand_vec(3 * b * h, 10, 3.0);
    for &l in &levels {
        force_simd_level(Some(l));
        let lv = format!("{l:?}");
        let mut y = vec![0f32; n];
        let mut dx = vec![0f32; n];
        for op in [Unary::Sigmoid, Unary::Tanh] {
            g.throughput(Throughput::Elements(n as u64));
            g.bench_function(BenchmarkId::new(format!("{}_f32_fwd_bwd", op.name()), &lv), |bch| {
                bch.iter(|| {
                    unary(op, black_box(&x), &mut y);
                    unary_backward(op, &x, &y, &gy, &mut dx);
                })
            });
        }
        g.throughput(Throughput::Elements((b * h) as u64));
        let mut gates = pre.clone();
        let (mut hc, mut tc) = (vec![0f32; 2 * b * h], vec![0f32; b * h]);
        g.bench_function(BenchmarkId::new("lstm_step_fwd_b64_h512", &lv), |bch| {
            bch.iter(|| {
                gates.copy_from_slice(&pre);
                lstm_forward(b, h, black_box(&mut gates), None, &c0, None, &mut hc, &mut tc)
            })
        });
        let (mut da, mut dc) = (vec![0f32; 4 * b * h], vec![0f32; b * h]);
        g.bench_function(BenchmarkId::new("lstm_step_bwd_b64_h512", &lv), |bch| {
            bch.iter(|| lstm_backward(b, h, black_box(&gates), &c0, &hc, &tc, None, &g2, &mut da, &mut dc, None))
        });
        let (mut rz, mut nn, mut hn) = (pre[..2 * b * h].to_vec(), vec![0f32; b * h], vec![0f32; b * h]);
        g.bench_function(BenchmarkId::new("gru_step_fwd_b64_h512", &lv), |bch| {
            bch.iter(|| {
                rz.copy_from_slice(&pre[..2 * b * h]);
                gru_forward(b, h, true, Rows::dense(black_box(&xp), 3 * h), &mut rz, &c0, &c0, &mut nn, &mut hn)
            })
        });
        let (mut da3, mut dhn, mut dh) = (vec![0f32; 3 * b * h], vec![0f32; b * h], vec![0f32; b * h]);
        g.bench_function(BenchmarkId::new("gru_step_bwd_b64_h512", &lv), |bch| {
            bch.iter(|| gru_backward(b, h, true, black_box(&rz), &nn, &c0, &c0, &g2[..b * h], &mut da3, &mut dhn, &mut dh))
        });
    }
    force_simd_level(None);
    g.finish();
}

criterion_group!(benches, bandwidth, simd_vs_std, simd_levels);
criterion_main!(benches);
