//! How the tape works, step by step: `cargo run --release -p chi-autodiff --example tape_walkthrough`.
//!
//! We compute `L = Σ tanh(x·w + b)²` for a 2×2 weight, print the tape the forward pass recorded,
//! walk it backward, and check the gradients against finite differences.

use chi_autodiff::{dot, gradcheck, tape_len, GradcheckOptions, Tensor};

fn main() {
    // Leaves: tensors we want gradients for. `named` labels them in listings and graphs.
    let w = Tensor::<f64>::from_vec(vec![0.5, -0.3, 0.8, 0.1], &[2, 2]).requires_grad().named("w");
    let b = Tensor::<f64>::from_vec(vec![0.1, -0.2], &[2]).requires_grad().named("b");
    // A constant input: no gradient, not on the tape.
    let x = Tensor::from_vec(vec![1.0, 2.0], &[1, 2]);

    // Forward. Each op computes its value with the kernels and, because an input requires grad,
    // records one node owned by its output: the op and the inputs its backward rule needs.
    let z = x.matmul(&w).add(&b); // b broadcasts over the batch axis
    let h = z.tanh();
    let loss = h.square().sum();

    println!("The graph after the forward pass ({} nodes):", tape_len::<f64>());
    print!("{}", dot::tape_listing(&[&loss]).expect("the graph is intact before backward"));

    // Backward runs the nodes from the last recorded to the first (the listing's second part). Each node receives the gradient
    // of the loss with respect to its output, applies its rule (e.g. tanh: g ⊙ (1 − tanh²)),
    // and adds the result into the gradients of its inputs. Leaves accumulate into `.grad()`.
    loss.backward();
    println!("\nloss = {:.6}", loss.item());
    println!("dL/dw = {:?}", w.grad().unwrap().data());
    println!("dL/db = {:?}", b.grad().unwrap().data());
    println!("after backward: {} nodes hold saved values (backward released them)", tape_len::<f64>());

    // By hand: dL/dz = 2·tanh(z)·(1 − tanh²(z)); dL/db = dL/dz; dL/dw = xᵀ·dL/dz.
    let zv = [1.0 * 0.5 + 2.0 * 0.8 + 0.1, 1.0 * -0.3 + 2.0 * 0.1 - 0.2];
    let dz: Vec<f64> = zv.iter().map(|z: &f64| 2.0 * z.tanh() * (1.0 - z.tanh().powi(2))).collect();
    println!("by hand: dL/db = {dz:?}");

    // The same gradient, proved numerically: central differences in float64.
    let report = gradcheck(
        |p| x.matmul(&p[0]).add(&p[1]).tanh().square().sum(),
        &[w.detach(), b.detach()],
        &GradcheckOptions::default(),
    )
    .expect("gradients agree with finite differences");
    println!("gradcheck: {report}");
}
