//! Saliency of an input: the gradient of one class score with respect to the input, a gradient
//! of a non-leaf tensor taken with `grad` (the model's parameters are untouched, their `.grad`
//! stays empty). Run with `cargo run --release -p chi-autodiff --example saliency`.
//!
//! A fixed 2-layer network scores 3 classes from 6 features; feature 4 carries the evidence for
//! class 1, so its saliency |∂score₁/∂xᵢ| should stand out.

use chi_autodiff::{grad, GradOptions, Rng, Tensor};

fn main() {
    let mut rng = Rng::new(0);
    let w1 = Tensor::<f64>::randn(&[6, 8], &mut rng).mul_scalar(0.1).requires_grad();
    // Make feature 4 matter: a large weight into hidden unit 0, which feeds class 1.
    let w1 = w1.add(&Tensor::from_vec((0..48).map(|k| if k == 4 * 8 { 3.0 } else { 0.0 }).collect(), &[6, 8]));
    let mut w2v = vec![0.0; 8 * 3];
    w2v[1] = 2.0; // hidden 0 → class 1
    let w2 = Tensor::from_vec(w2v, &[8, 3]).add(&Tensor::randn(&[8, 3], &mut rng).mul_scalar(0.1));
    let x = Tensor::from_vec(vec![0.2, -0.1, 0.4, 0.3, 0.9, -0.5], &[1, 6]).requires_grad();
    let scores = x.matmul(&w1).tanh().matmul(&w2);
    let class = 1;
    let score = scores.narrow(1, class, 1).sum();
    let g = grad(&[&score], &[&x], None, GradOptions::default()).expect("grad");
    let saliency: Vec<f64> = g[0].data().iter().map(|v| v.abs()).collect();
    println!("scores {:?}", scores.data());
    println!("saliency of class {class} per feature: {saliency:?}");
    let top = saliency.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map(|(i, _)| i).unwrap();
    println!("most salient feature: {top}");
    assert_eq!(top, 4);
    // Gradient × input, the other common attribution.
    let gxi: Vec<f64> = g[0].data().iter().zip(x.data()).map(|(a, b)| a * b).collect();
    println!("gradient × input: {gxi:?}");
}
