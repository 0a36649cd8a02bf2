//! The Hessian of a small function, three ways: `hessian`, Hessian–vector products, and the
//! closed form. Run with `cargo run --release -p chi-autodiff --example hessian`.
//!
//! f(x) = Σᵢ xᵢ² · x₍ᵢ₊₁₎ mod n + Σᵢ sin(xᵢ), whose Hessian is
//! H[i][i] = 2·x₍ᵢ₊₁₎ − sin(xᵢ), H[i][i+1] = H[i+1][i] = 2·xᵢ (indices mod n, n ≥ 3).

use chi_autodiff::{hessian, hvp, Tensor};

fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let n = x.numel();
    let next = Tensor::concat(&[x.narrow(0, 1, n - 1), x.narrow(0, 0, 1)], 0); // x rolled by one
    x.square().mul(&next).sum().add(&x.sin().sum())
}

fn main() {
    let x = Tensor::from_vec(vec![0.3, -1.2, 0.8, 2.0], &[4]);
    let n = x.numel();
    let h = hessian(f, &x).expect("hessian");
    let xs = x.data();
    // The closed form: each term xᵢ²·xⱼ (j = i+1 mod n) adds 2xⱼ to H[i][i] and 2xᵢ to H[i][j]
    // and H[j][i]; each sin(xᵢ) adds −sin(xᵢ) to H[i][i].
    let mut exact = vec![0.0; n * n];
    for i in 0..n {
        let j = (i + 1) % n;
        exact[i * n + i] += 2.0 * xs[j] - xs[i].sin();
        exact[i * n + j] += 2.0 * xs[i];
        exact[j * n + i] += 2.0 * xs[i];
    }
    let worst = h.data().iter().zip(&exact).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    println!("Hessian of f at x = {:?}:", xs);
    for i in 0..n {
        println!("  {:?}", &h.data()[i * n..(i + 1) * n].iter().map(|v| (v * 1e6).round() / 1e6).collect::<Vec<_>>());
    }
    println!("largest difference from the closed form: {worst:.1e}");
    // Each column of H is a Hessian–vector product with a unit vector.
    let mut e = vec![0.0; n];
    e[2] = 1.0;
    let (value, col) = hvp(f, &x, &Tensor::from_vec(e, &[n])).expect("hvp");
    println!("f(x) = {:.6}; H·e₂ = {:?}", value.item(), col.data());
    assert!(worst < 1e-12, "Hessian differs from the closed form by {worst}");
    for i in 0..n {
        assert!((col.data()[i] - h.data()[i * n + 2]).abs() < 1e-12);
    }
}
