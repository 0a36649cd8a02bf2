//! Softmax / log-softmax forward and backward (f32), last axis (SIMD row path) over
//! 4096×1024 and smaller shapes, plus one first-axis case (vectorised across `inner`).
//!
//! `cargo bench -p chi-benches --bench softmax` (≈1 min). Throughput counts bytes moved:
//! forward 8 B/elem (read x, write y), backward 12 B/elem (read y, g, write dx).

use chi_benches::rand_vec;
use chi_kernels::reduce::{log_softmax, log_softmax_backward, softmax, softmax_backward};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("softmax_f32");
    g.sample_size(10).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1));
    // (outer, n, inner): reduce along n.
    for &(outer, n, inner) in &[(4096, 1024, 1), (512, 1024, 1), (64, 128, 1), (32, 10, 1), (1, 1024, 4096)] {
        let len = outer * n * inner;
        let x: Vec<f32> = rand_vec(len, 1, 8.0);
        let gr: Vec<f32> = rand_vec(len, 2, 1.0);
        let mut y = vec![0f32; len];
        let mut ly = vec![0f32; len];
        let mut dx = vec![0f32; len];
        softmax(&x, outer, n, inner, &mut y);
        log_softmax(&x, outer, n, inner, &mut ly);
        let shape = if inner == 1 { format!("{outer}x{n}") } else { format!("{n}x{inner}_axis0") };
        g.throughput(Throughput::Bytes(8 * len as u64));
        g.bench_function(BenchmarkId::new("softmax", &shape), |b| b.iter(|| softmax(black_box(&x), outer, n, inner, &mut y)));
        g.bench_function(BenchmarkId::new("log_softmax", &shape), |b| b.iter(|| log_softmax(black_box(&x), outer, n, inner, &mut ly)));
        g.throughput(Throughput::Bytes(12 * len as u64));
        g.bench_function(BenchmarkId::new("softmax_backward", &shape), |b| b.iter(|| softmax_backward(black_box(&y), &gr, outer, n, inner, &mut dx)));
        g.bench_function(BenchmarkId::new("log_softmax_backward", &shape), |b| {
            b.iter(|| log_softmax_backward(black_box(&ly), &gr, outer, n, inner, &mut dx))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
