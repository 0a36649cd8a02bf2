//! Functional transforms against closed forms and float64 central differences, and
//! per-example gradients against a loop of `grad`.

use chi_autodiff::*;

fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "index {i}: {x} vs {y}");
    }
}

/// Central-difference Jacobian of `f` at `x` (float64, eps 1e-6), `[m, n]` row-major.
fn fd_jacobian(f: &dyn Fn(&Tensor<f64>) -> Tensor<f64>, x: &Tensor<f64>) -> Vec<f64> {
    let n = x.numel();
    let m = f(&x.detach()).numel();
    let eps = 1e-6;
    let mut j = vec![0.0; m * n];
    for c in 0..n {
        let (mut xp, mut xm) = (x.detach(), x.detach());
        xp.update(|v| v[c] += eps);
        xm.update(|v| v[c] -= eps);
        let (yp, ym) = (f(&xp), f(&xm)); // constants in, constants out (no graph)
        for i in 0..m {
            j[i * n + c] = (yp.data()[i] - ym.data()[i]) / (2.0 * eps);
        }
    }
    j
}

fn g_fn(x: &Tensor<f64>) -> Tensor<f64> {
    // R³ → R²: (x0·sin-free smooth mix) = (tanh(x0)·x1, exp(x2)·x0 + x1²)
    let (a, b, c) = (x.narrow(0, 0, 1), x.narrow(0, 1, 1), x.narrow(0, 2, 1));
    Tensor::concat(&[a.tanh().mul(&b), c.exp().mul(&a).add(&b.square())], 0)
}

#[test]
fn jacobian_both_modes_match_closed_form_and_finite_differences() {
    let x = Tensor::<f64>::from_vec(vec![0.3, -0.7, 0.2], &[3]);
    let (x0, x1, x2) = (0.3f64, -0.7f64, 0.2f64);
    let s = 1.0 - x0.tanh().powi(2);
    let closed = [s * x1, x0.tanh(), 0.0, x2.exp(), 2.0 * x1, x2.exp() * x0];
    let fd = fd_jacobian(&g_fn, &x);
    for mode in [JacobianMode::Reverse, JacobianMode::Forward, JacobianMode::Auto] {
        let j = jacobian(g_fn, &x, mode).unwrap();
        assert_eq!(j.shape(), &[2, 3]);
        close(j.data(), &closed, 1e-12);
        close(j.data(), &fd, 1e-7);
    }
    // Matrix-valued input and output keep their shapes: d(W·v)/dW for fixed v.
    let v = Tensor::from_vec(vec![1.0, -2.0], &[2]);
    let w = Tensor::from_vec(vec![0.1, 0.2, 0.3, 0.4], &[2, 2]);
    let j = jacobian(|w| w.matmul(&v), &w, JacobianMode::Forward).unwrap();
    assert_eq!(j.shape(), &[2, 2, 2]);
    close(j.data(), &[1.0, -2.0, 0.0, 0.0, 0.0, 0.0, 1.0, -2.0], 1e-15);
}

#[test]
fn hessian_matches_closed_form_and_finite_differences() {
    // f(x) = log Σ exp(x) + ½ Σ x²·x₀ ... closed form for logsumexp: diag(p) − p pᵀ.
    let x = Tensor::<f64>::from_vec(vec![0.5, -0.25, 1.0], &[3]);
    let h = hessian(|x| x.logsumexp(0, false), &x).unwrap();
    let e: Vec<f64> = x.data().iter().map(|v| v.exp()).collect();
    let z: f64 = e.iter().sum();
    let p: Vec<f64> = e.iter().map(|v| v / z).collect();
    let mut closed = vec![0.0; 9];
    for i in 0..3 {
        for j in 0..3 {
            closed[i * 3 + j] = if i == j { p[i] } else { 0.0 } - p[i] * p[j];
        }
    }
    close(h.data(), &closed, 1e-12);
    // Against differences of the analytic gradient.
    let f = |x: &Tensor<f64>| x.tanh().mul(x).sum().square();
    let h = hessian(f, &x).unwrap();
    let grad_f = |x: &Tensor<f64>| value_and_grad(|xs| f(&xs[0]), &[x.clone()]).unwrap().1.remove(0);
    let fd = fd_jacobian(&grad_f, &x);
    close(h.data(), &fd, 1e-6);
    // Symmetric.
    for i in 0..3 {
        for j in 0..3 {
            assert!((h.data()[i * 3 + j] - h.data()[j * 3 + i]).abs() < 1e-12);
        }
    }
}

#[test]
fn value_and_grad_hvp_jvp_return_values() {
    let x = Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2]);
    let y = Tensor::<f64>::from_vec(vec![3.0], &[1]);
    let (v, g) = value_and_grad(|xs| xs[0].mul(&xs[1]).sum(), &[x.clone(), y.clone()]).unwrap();
    assert_eq!(v.item(), 9.0);
    assert_eq!(g[0].to_vec(), vec![3.0, 3.0]);
    assert_eq!(g[1].to_vec(), vec![3.0]);
    assert!(!v.is_tracked() && !g[0].is_tracked());
    let e = jvp(|x| x.exp(), &x, &y).unwrap_err();
    assert!(matches!(e, AutodiffError::Shape { .. }), "{e}");
    // hvp equals the Hessian times v.
    let f = |x: &Tensor<f64>| x.tanh().square().sum();
    let vv = Tensor::from_vec(vec![0.5, -1.5], &[2]);
    let (val, hv) = hvp(f, &x, &vv).unwrap();
    let h = hessian(f, &x).unwrap();
    let expect = [h.data()[0] * 0.5 + h.data()[1] * -1.5, h.data()[2] * 0.5 + h.data()[3] * -1.5];
    close(hv.data(), &expect, 1e-12);
    close(&[val.item()], &[1f64.tanh().powi(2) + 2f64.tanh().powi(2)], 1e-15);
}

/// A two-layer MLP with softmax cross-entropy on one example: `x [4]`, label one-hot `y [3]`.
fn mlp_loss(p: &[Tensor<f64>], e: &[Tensor<f64>]) -> Tensor<f64> {
    let x = e[0].reshape(&[1, 4]);
    let h = x.matmul(&p[0]).add(&p[1]).tanh();
    let logits = h.matmul(&p[2]).add(&p[3]);
    logits.log_softmax(1).reshape(&[3]).mul(&e[1]).sum().neg()
}

fn mlp_setup(b: usize) -> (Vec<Tensor<f64>>, Vec<Tensor<f64>>) {
    let mut rng = Rng::new(11);
    let params = vec![
        Tensor::randn(&[4, 8], &mut rng).mul_scalar(0.5),
        Tensor::randn(&[8], &mut rng).mul_scalar(0.1),
        Tensor::randn(&[8, 3], &mut rng).mul_scalar(0.5),
        Tensor::randn(&[3], &mut rng).mul_scalar(0.1),
    ];
    let xs = Tensor::randn(&[b, 4], &mut rng);
    let mut ys = vec![0.0; b * 3];
    for i in 0..b {
        ys[i * 3 + (i * 7 + 1) % 3] = 1.0;
    }
    (params, vec![xs, Tensor::from_vec(ys, &[b, 3])])
}

fn loop_grads(params: &[Tensor<f64>], batch: &[Tensor<f64>]) -> (Vec<f64>, Vec<Vec<f64>>) {
    let b = batch[0].shape()[0];
    let mut values = Vec::new();
    let mut grads = vec![Vec::new(); params.len()];
    for i in 0..b {
        let ex: Vec<Tensor<f64>> = batch.iter().map(|x| x.narrow(0, i, 1).reshape(&x.shape()[1..])).collect();
        let (v, g) = value_and_grad(|ps| mlp_loss(ps, &ex), params).unwrap();
        values.push(v.item());
        for (k, gk) in g.iter().enumerate() {
            grads[k].extend_from_slice(gk.data());
        }
    }
    (values, grads)
}

#[test]
fn per_example_gradients_equal_the_loop() {
    let (params, batch) = mlp_setup(7);
    let r = vmap_grad(mlp_loss, &params, &batch).unwrap();
    let (values, grads) = loop_grads(&params, &batch);
    close(r.values.data(), &values, 1e-12);
    for (k, g) in r.grads.iter().enumerate() {
        assert_eq!(g.shape()[0], 7);
        assert_eq!(&g.shape()[1..], params[k].shape());
        close(g.data(), &grads[k], 1e-12);
    }
    // Norms equal the loop's.
    let norms = r.grad_norms();
    for (i, n) in norms.iter().enumerate() {
        let mut sq = 0.0;
        for (k, p) in params.iter().enumerate() {
            let m = p.numel();
            sq += grads[k][i * m..(i + 1) * m].iter().map(|v| v * v).sum::<f64>();
        }
        assert!((n - sq.sqrt()).abs() < 1e-12);
    }
}

#[test]
fn per_example_gradients_with_broadcast_reductions_and_shapes() {
    // Exercises permute, sum_axis, broadcasting against constants and a softmax over axis 0.
    let c = Tensor::<f64>::from_vec(vec![0.5, -0.5, 1.0], &[3, 1]);
    let f = |p: &[Tensor<f64>], e: &[Tensor<f64>]| {
        let m = e[0].reshape(&[2, 3]).t(); // [3, 2]
        let z = m.mul(&p[0]).add(&c).softmax(0); // p[0]: [2]
        z.sum_axis(1, false).mul(&p[1]).sum().add(&p[0].square().sum())
    };
    let mut rng = Rng::new(5);
    let params = vec![Tensor::randn(&[2], &mut rng), Tensor::randn(&[3], &mut rng)];
    let batch = vec![Tensor::randn(&[5, 6], &mut rng)];
    let r = vmap_grad(f, &params, &batch).unwrap();
    for i in 0..5 {
        let ex = vec![batch[0].narrow(0, i, 1).reshape(&[6])];
        let (v, g) = value_and_grad(|ps| f(ps, &ex), &params).unwrap();
        close(&r.values.data()[i..i + 1], &[v.item()], 1e-12);
        close(&r.grads[0].data()[i * 2..i * 2 + 2], g[0].data(), 1e-12);
        close(&r.grads[1].data()[i * 3..i * 3 + 3], g[1].data(), 1e-12);
    }
}

/// `affine` under `vmap_grad` with each of its inputs batched or shared: per-example gradients
/// equal a loop of `value_and_grad`.
#[test]
fn per_example_gradients_through_affine() {
    let mut rng = Rng::new(9);
    let params = vec![Tensor::randn(&[4, 3], &mut rng), Tensor::randn(&[3], &mut rng)];
    let batch = vec![Tensor::randn(&[5, 2, 4], &mut rng), Tensor::randn(&[5, 3], &mut rng), Tensor::randn(&[5, 4, 3], &mut rng)];
    let fs: [fn(&[Tensor<f64>], &[Tensor<f64>]) -> Tensor<f64>; 4] = [
        |p, e| e[0].affine(&p[0], &p[1]).tanh().sum(),
        |p, e| e[0].affine(&p[0], &e[1]).tanh().sum().add(&p[1].sum()),
        |p, e| e[0].affine(&e[2], &p[1]).tanh().sum().add(&p[0].sum()),
        |p, e| p[0].t().reshape(&[3, 4]).affine(&e[2], &e[1]).square().sum().add(&p[1].sum()),
    ];
    for (fi, f) in fs.into_iter().enumerate() {
        let r = vmap_grad(f, &params, &batch).unwrap();
        for i in 0..5 {
            let ex: Vec<Tensor<f64>> = batch.iter().map(|x| x.narrow(0, i, 1).reshape(&x.shape()[1..])).collect();
            let (v, g) = value_and_grad(|ps| f(ps, &ex), &params).unwrap();
            close(&r.values.data()[i..i + 1], &[v.item()], 1e-12);
            for k in 0..2 {
                let m = params[k].numel();
                assert!(r.grads[k].data()[i * m..(i + 1) * m].iter().zip(g[k].data()).all(|(a, b)| (a - b).abs() <= 1e-12 * (1.0 + b.abs())), "function {fi}, example {i}, parameter {k}");
            }
        }
    }
}

/// `stack` under `vmap_grad` stacks (it was replayed as a concatenation: the shape changed and
/// an axis-dependent op after it grouped the wrong values).
#[test]
fn per_example_gradients_through_stack() {
    let mut rng = Rng::new(21);
    let params = vec![Tensor::<f64>::randn(&[2, 3], &mut rng)];
    let batch = vec![Tensor::<f64>::randn(&[3, 2, 3], &mut rng)];
    let fs: [fn(&[Tensor<f64>], &[Tensor<f64>]) -> Tensor<f64>; 3] = [
        |p, e| Tensor::stack(&[e[0].clone(), p[0].clone()], 1).softmax(1).reshape(&[12]).ln().sum(),
        |p, e| Tensor::stack(&[p[0].clone(), e[0].clone()], 0).softmax(0).mul(&p[0]).sum(),
        |p, e| Tensor::stack(&[e[0].sum_axis(0, false), p[0].sum_axis(0, false)], 1).log_softmax(0).square().sum(),
    ];
    for (fi, f) in fs.into_iter().enumerate() {
        let r = vmap_grad(f, &params, &batch).unwrap();
        for i in 0..3 {
            let ex = vec![batch[0].narrow(0, i, 1).reshape(&[2, 3])];
            let (v, g) = value_and_grad(|ps| f(ps, &ex), &params).unwrap();
            close(&r.values.data()[i..i + 1], &[v.item()], 1e-12);
            assert!(r.grads[0].data()[i * 6..(i + 1) * 6].iter().zip(g[0].data()).all(|(a, b)| (a - b).abs() <= 1e-12 * (1.0 + b.abs())), "function {fi}, example {i}");
        }
    }
}

/// An empty batch is an error naming vmap_grad (it named `Tensor::from_vec`).
#[test]
fn vmap_refuses_an_empty_batch() {
    let p = vec![Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2])];
    let e = vmap_grad(|p, _| p[0].sum(), &p, &[Tensor::zeros(&[0, 4])]).unwrap_err().to_string();
    assert!(e.contains("vmap_grad: the batch is empty"), "{e}");
}

#[test]
fn vmap_reports_ops_without_a_batching_rule() {
    let params = vec![Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2])];
    let batch = vec![Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2])];
    let e = vmap_grad(|p, e| p[0].mul(&e[0]).take_flat_for_test(), &params, &batch).unwrap_err();
    assert!(e.to_string().contains("no batching rule"), "{e}");
    let bad = vec![Tensor::<f64>::zeros(&[2, 2]), Tensor::zeros(&[3])];
    assert!(matches!(vmap_grad(|p, _| p[0].sum(), &params, &bad), Err(AutodiffError::Shape { .. })));
}

trait TakeFlat {
    fn take_flat_for_test(&self) -> Tensor<f64>;
}
impl TakeFlat for Tensor<f64> {
    fn take_flat_for_test(&self) -> Tensor<f64> {
        self.index_select(0, &[1, 0]).sum()
    }
}
