//! `chi bench tape`: the per-op overhead of recording and differentiating small dynamic graphs.
//!
//! Workload (PyTorch 2.15 from Python costs ~9–28 µs per op on the same chain; see BENCHMARKS.md):
//! a scalar chain `y ← tanh(1.01·y + 0.1)` repeated `steps` times (3 recorded ops per step),
//! then `backward`. Reported: nanoseconds per op for forward + backward, median over repeats.

use chi_autodiff::Tensor;
use clap::Args;
use std::time::Instant;

/// Options of `chi bench tape`.
#[derive(Args, Debug, Clone)]
pub struct TapeBenchArgs {
    /// Chain length (steps of 3 ops each), 1 to 10^6 (the tape of one chain is held in memory).
    #[arg(long, default_value_t = 1000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub steps: usize,
    /// Timed repetitions (the median is reported), 1 to 100000.
    #[arg(long, default_value_t = 51, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    pub reps: usize,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
}

/// Runs the chain once (forward + backward) and returns the gradient, so the work is not optimised away.
pub fn scalar_chain(steps: usize) -> f64 {
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

/// Median nanoseconds per op (forward + backward).
pub fn measure(steps: usize, reps: usize) -> f64 {
    let mut sink = 0.0;
    for _ in 0..3 {
        sink += scalar_chain(steps); // warm-up
    }
    let mut times: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let t = Instant::now();
            sink += scalar_chain(steps);
            t.elapsed().as_nanos() as f64 / (3 * steps) as f64
        })
        .collect();
    std::hint::black_box(sink);
    times.sort_by(|a, b| a.total_cmp(b));
    times[times.len() / 2]
}

/// Runs the benchmark and prints the result.
pub fn run(args: &TapeBenchArgs) -> Result<(), String> {
    if args.steps == 0 {
        return Err("--steps must be positive".into());
    }
    let ns = measure(args.steps, args.reps);
    if args.json {
        println!("{{\"bench\":\"scalar_chain\",\"steps\":{},\"ns_per_op\":{ns:.1}}}", args.steps);
    } else {
        println!("scalar chain y = tanh(1.01·y + 0.1), {} steps × 3 ops, forward + backward", args.steps);
        println!("  {ns:.1} ns per op (median of {} runs)", args.reps);
    }
    Ok(())
}
