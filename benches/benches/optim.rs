//! One optimiser step over a 1M-parameter f32 tensor (a 1024 × 1024 weight), dense gradient, for
//! every update rule `chi_nn::optim` implements: the per-step cost a training loop pays after
//! its backward pass (PyTorch's `foreach` optimisers are the peer).
//!
//! `cargo bench -p chi-benches --bench optim` (≈1 min). Throughput counts the bytes one step
//! reads and writes: weight and gradient, plus each state buffer read and written.

use chi_autodiff::Tensor;
use chi_benches::rand_vec;
use chi_nn::optim::{Grad, Grads, OptimConfig, Optimizer};
use chi_nn::ParamStore;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let n = 1 << 20;
    let mut g = c.benchmark_group("optim_step_f32_1M");
    g.sample_size(10).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1));
    let momentum = OptimConfig { momentum: 0.9, ..OptimConfig::sgd(0.01) };
    let centred = OptimConfig { centered: true, momentum: 0.9, ..OptimConfig::rmsprop(0.01) };
    // (name, config, state buffers)
    let rules = [
        ("sgd", OptimConfig::sgd(0.01), 0),
        ("sgd_momentum", momentum, 1),
        ("adagrad", OptimConfig::adagrad(0.01), 1),
        ("rmsprop_centred_momentum", centred, 3),
        ("adam", OptimConfig::adam(1e-3), 2),
        ("adamw", OptimConfig::adamw(1e-3), 2),
    ];
    for (name, cfg, slots) in rules {
        let mut store = ParamStore::<f32>::new();
        let w = store.add("w", "g", Tensor::from_vec(rand_vec(n, 1, 0.1), &[1024, 1024]));
        let params = vec![w];
        let grads = Grads { items: vec![Some(Grad::Dense(rand_vec(n, 2, 0.01)))] };
        let mut opt = Optimizer::<f32>::new(cfg);
        g.throughput(Throughput::Bytes(((3 + 2 * slots) * 4 * n) as u64));
        g.bench_function(BenchmarkId::new(name, n), |b| b.iter(|| opt.step(&params, &grads)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
