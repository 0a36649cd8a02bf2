//! Per-op overhead of the tape: record and differentiate a chain of scalar ops,
//! `y ← tanh(1.01·y + 0.1)` repeated (3 ops per step). Throughput is reported per op, so
//! criterion's "elements/s" reads as ops per second (forward + backward).
//!
//! `cargo bench -p chi-benches --bench tape`

use chi_autodiff::Tensor;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

fn chain(steps: usize) -> f64 {
    let x = Tensor::<f64>::scalar(0.5).requires_grad();
    let mut y = x.clone();
    for _ in 0..steps {
        y = y.mul_scalar(1.01).add_scalar(0.1).tanh();
    }
    y.backward();
    x.grad().unwrap().item()
}

fn forward_only(steps: usize) -> f64 {
    let x = Tensor::<f64>::scalar(0.5).requires_grad();
    let mut y = x.clone();
    for _ in 0..steps {
        y = y.mul_scalar(1.01).add_scalar(0.1).tanh();
    }
    y.item() // dropping y frees the recorded chain
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("scalar_chain");
    g.sample_size(30).measurement_time(std::time::Duration::from_secs(3));
    for steps in [100usize, 1000] {
        g.throughput(Throughput::Elements(3 * steps as u64));
        g.bench_with_input(BenchmarkId::new("forward_backward", steps), &steps, |b, &s| b.iter(|| black_box(chain(s))));
        g.bench_with_input(BenchmarkId::new("forward_recorded", steps), &steps, |b, &s| b.iter(|| black_box(forward_only(s))));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
