//! Per-example gradients of a small MLP: `vmap_grad` (one batched trace) against a loop of
//! `value_and_grad` over the examples. Prints both times and their ratio (fastest of 21 runs: the machine this was written on is
//! shared, and the minimum is the least disturbed figure).
//!
//! `cargo run --release -p chi-autodiff --example per_example_grads`
use chi_autodiff::{value_and_grad, vmap_grad, Rng, Tensor};
use std::time::Instant;

fn loss(p: &[Tensor<f64>], e: &[Tensor<f64>]) -> Tensor<f64> {
    let h = e[0].reshape(&[1, 16]).matmul(&p[0]).add(&p[1]).tanh();
    h.matmul(&p[2]).add(&p[3]).log_softmax(1).reshape(&[4]).mul(&e[1]).sum().neg()
}

fn fastest(v: Vec<f64>) -> f64 {
    v.into_iter().fold(f64::INFINITY, f64::min)
}

fn main() {
    let b = 64;
    let mut rng = Rng::new(3);
    let params = vec![
        Tensor::randn(&[16, 32], &mut rng).mul_scalar(0.25),
        Tensor::zeros(&[32]),
        Tensor::randn(&[32, 4], &mut rng).mul_scalar(0.25),
        Tensor::zeros(&[4]),
    ];
    let xs = Tensor::randn(&[b, 16], &mut rng);
    let ys = Tensor::from_vec((0..b * 4).map(|i| if i % 4 == (i / 4) % 4 { 1.0 } else { 0.0 }).collect(), &[b, 4]);
    let batch = [xs, ys];
    let run_loop = || {
        let mut norms = Vec::with_capacity(b);
        for i in 0..b {
            let ex: Vec<Tensor<f64>> = batch.iter().map(|x| x.narrow(0, i, 1).reshape(&x.shape()[1..])).collect();
            let (_, g) = value_and_grad(|p| loss(p, &ex), &params).unwrap();
            norms.push(g.iter().map(|g| g.norm().powi(2)).sum::<f64>().sqrt());
        }
        norms
    };
    let run_vmap = || vmap_grad(loss, &params, &batch).unwrap().grad_norms();
    let (a, v) = (run_loop(), run_vmap());
    let err = a.iter().zip(&v).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
    let time = |f: &dyn Fn() -> Vec<f64>| {
        fastest((0..21).map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed().as_secs_f64() * 1e6
        }).collect())
    };
    let (tl, tv) = (time(&run_loop), time(&run_vmap));
    println!("per-example gradients, MLP 16-32-4, batch {b}, f64");
    println!("  loop of value_and_grad: {tl:.0} µs");
    println!("  vmap_grad:              {tv:.0} µs");
    println!("  speed-up {:.1}×, max |Δ norm| = {err:.1e}", tl / tv);
}
