//! Elementwise kernels: bandwidth (GB/s) vs size across L1/L2/L3/DRAM, SIMD vs scalar `std`
//! for exp/tanh/sigmoid, and a STREAM triad/copy reference measured in the same run.
//!
//! `cargo bench -p chi-benches --bench elementwise` (≈3 min). Filter e.g. `-- simd_vs_std`.
//! Bytes counted: unary 8 B/elem (read + write f32), binary/axpy/triad 12 B/elem, copy 8 B.

use chi_benches::{rand_vec, triad};
use chi_kernels::elementwise::{axpy, binary, sigmoid_scalar, unary, Binary, Unary};
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

criterion_group!(benches, bandwidth, simd_vs_std);
criterion_main!(benches);
