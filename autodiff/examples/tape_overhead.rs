//! Per-op overhead of recording and differentiating a scalar chain (the workload of
//! `chi bench tape`): `y ← tanh(1.01·y + 0.1)`, 3 ops per step, forward + backward, median of
//! 51 runs. `cargo run --release -p chi-autodiff --example tape_overhead`
use chi_autodiff::Tensor;
use std::time::Instant;

fn chain(steps: usize) -> f64 {
    let x = Tensor::<f64>::scalar(0.5).requires_grad();
    let mut y = x.clone();
    for _ in 0..steps {
        y = y.mul_scalar(1.01).add_scalar(0.1).tanh();
    }
    y.backward();
    let g = x.grad().map(|g| g.item()).unwrap_or(0.0);
    x.zero_grad();
    g
}

fn main() {
    let steps = 1000;
    let mut sink = 0.0;
    for _ in 0..3 {
        sink += chain(steps);
    }
    let reps: usize = std::env::var("REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(51);
    let mut times: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            sink += chain(steps);
            t.elapsed().as_nanos() as f64 / (3 * steps) as f64
        })
        .collect();
    std::hint::black_box(sink);
    times.sort_by(|a, b| a.total_cmp(b));
    println!("{{\"bench\":\"scalar_chain\",\"steps\":{steps},\"ns_per_op\":{:.1},\"min_ns_per_op\":{:.1}}}", times[times.len() / 2], times[0]);
}
