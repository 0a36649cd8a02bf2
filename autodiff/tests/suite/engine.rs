//! Engine behaviour: wrong rules are caught, closed-form oracles, hooks, retain_grad, gradients
//! of intermediates, detach/no-grad/freezing, errors, higher order, anomaly provenance.

use chi_autodiff::*;
use std::cell::RefCell;
use std::rc::Rc;

fn t(v: &[f64], s: &[usize]) -> Tensor<f64> {
    Tensor::from_vec(v.to_vec(), s)
}
fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

/// sin-like op whose backward is deliberately wrong (uses 2x instead of 3x²).
struct WrongCube;
impl CustomOp<f64> for WrongCube {
    fn name(&self) -> &str {
        "wrong_cube"
    }
    fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> {
        x[0].mul(x[0]).mul(x[0])
    }
    fn backward(&self, x: &[&Tensor<f64>], _o: &Tensor<f64>, g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
        vec![Some(g.mul(x[0]).mul_scalar(2.0))]
    }
}

#[test]
fn gradcheck_catches_a_wrong_backward_rule() {
    let x = t(&[0.4, -1.1, 1.7], &[3]);
    let r = gradcheck(|xs| Tensor::apply_custom(Rc::new(WrongCube), &[xs[0].clone()]), &[x.clone()], &GradcheckOptions::default());
    let rep = r.expect_err("wrong rule must fail");
    assert!(!rep.passed && rep.worst.is_some());
    // And fast mode catches it too.
    let fast = GradcheckOptions { fast_mode: true, ..Default::default() };
    assert!(gradcheck(|xs| Tensor::apply_custom(Rc::new(WrongCube), &[xs[0].clone()]), &[x.clone()], &fast).is_err());
    // JAX-style check too (fails on the adjoint identity or the forward-mode comparison).
    assert!(check_grads(|xs| Tensor::apply_custom(Rc::new(WrongCube), &[xs[0].clone()]), &[x], 1e-4, 1e-3, 1).is_err());
}

/// A cube whose backward rule returns NaN.
struct NanCube;
impl chi_autodiff::CustomOp<f64> for NanCube {
    fn name(&self) -> &str {
        "nan_cube"
    }
    fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> {
        x[0].mul(x[0]).mul(x[0])
    }
    fn backward(&self, x: &[&Tensor<f64>], _o: &Tensor<f64>, g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
        vec![Some(g.mul(x[0]).mul_scalar(f64::NAN))]
    }
}

/// A NaN gradient fails with an unbounded error in the report, not the largest finite one
/// (which was 0 when every element was NaN, and read as a pass beside the FAIL).
#[test]
fn a_nan_gradient_is_reported_as_an_unbounded_error() {
    let x = t(&[0.4, -1.1, 1.7], &[3]);
    let rep = gradcheck(|xs| Tensor::apply_custom(Rc::new(NanCube), &[xs[0].clone()]), &[x], &GradcheckOptions::default()).expect_err("a NaN gradient must fail");
    assert!(!rep.passed && rep.max_abs_err == f64::INFINITY && rep.max_rel_err == f64::INFINITY, "{rep:?}");
    assert!(rep.worst.as_ref().is_some_and(|w| w.analytic.is_nan()), "{rep:?}");
}

#[test]
fn gradcheck_compares_real_values() {
    let x = t(&[0.3, -0.7], &[2]);
    let r = gradcheck(|xs| xs[0].tanh(), &[x], &GradcheckOptions::default()).unwrap();
    assert_eq!(r.checked, 2);
    assert!(r.max_abs_err < 1e-8);
}

#[test]
fn cross_entropy_gradient_is_softmax_minus_onehot() {
    let logits = t(&[1.0, 2.0, 0.5, -1.0, 0.3, 3.0], &[2, 3]).requires_grad();
    let targets = [1usize, 2];
    let lp = logits.log_softmax(1);
    let picked = lp.take(Rc::new(vec![1, 3 + 2]), &[2]);
    let loss = picked.neg().sum();
    loss.backward();
    let sm = logits.detach().softmax(1);
    let mut expect = sm.to_vec();
    for (r, &c) in targets.iter().enumerate() {
        expect[r * 3 + c] -= 1.0;
    }
    close(logits.grad().unwrap().data(), &expect, 1e-12);
}

#[test]
fn logsumexp_gradient_is_softmax() {
    let x = t(&[1.0, 2.0, -3.0, 0.1], &[4]).requires_grad();
    x.logsumexp(0, false).backward();
    close(x.grad().unwrap().data(), x.detach().softmax(0).data(), 1e-12);
}

#[test]
fn hooks_observe_and_replace_and_retain_grad() {
    let x = t(&[1.0, 2.0], &[2]).requires_grad();
    let y = x.mul_scalar(3.0);
    let seen = Rc::new(RefCell::new(Vec::new()));
    let s2 = seen.clone();
    y.register_hook(move |g| {
        s2.borrow_mut().push(g.to_vec());
        None
    });
    y.retain_grad();
    let z = y.square().sum();
    z.backward();
    assert_eq!(seen.borrow()[0], vec![6.0, 12.0]);
    assert_eq!(y.grad().unwrap().to_vec(), vec![6.0, 12.0]);
    assert_eq!(x.grad().unwrap().to_vec(), vec![18.0, 36.0]);
}

#[test]
fn gradient_with_respect_to_an_intermediate() {
    let x = t(&[0.5, -0.5], &[2]).requires_grad();
    let h = x.tanh();
    let loss = h.mul(&h).sum();
    let g = grad(&[&loss], &[&h], None, GradOptions::default()).unwrap();
    close(g[0].data(), &h.detach().mul_scalar(2.0).to_vec(), 1e-12);
    assert!(x.grad().is_none(), "grad() must not touch .grad");
}

#[test]
fn detach_no_grad_and_freezing() {
    let w = t(&[2.0], &[1]).requires_grad();
    let v = t(&[3.0], &[1]).requires_grad();
    let y = w.mul(&v.detach());
    assert!(y.is_tracked());
    y.sum().backward();
    assert_eq!(w.grad().unwrap().to_vec(), vec![3.0]);
    assert!(v.grad().is_none());

    let z = no_grad(|| w.mul(&v));
    assert!(!z.is_tracked());

    w.zero_grad();
    w.set_requires_grad(false); // frozen group
    let y = w.mul(&v).sum();
    y.backward();
    assert!(w.grad().is_none());
    assert_eq!(v.grad().unwrap().to_vec(), vec![2.0]);
    w.set_requires_grad(true);
}

#[test]
fn clear_errors() {
    let x = t(&[1.0, 2.0], &[2]).requires_grad();
    let y = x.mul_scalar(2.0);
    let e = y.try_backward().unwrap_err();
    assert!(e.to_string().contains("shape [2]"), "{e}");
    let c = t(&[1.0], &[1]);
    assert!(matches!(c.try_backward(), Err(AutodiffError::NotTracked(_))));
    // Backward through a graph that an earlier backward released.
    let l = x.mul(&x).sum();
    let l2 = l.mul_scalar(1.0);
    l.backward();
    let e = l2.try_backward().unwrap_err();
    assert!(matches!(e, AutodiffError::GraphFreed { .. }), "{e}");
    assert!(e.to_string().contains("released by an earlier backward pass"), "{e}");
    assert!(e.to_string().contains("retain_graph"), "{e}");
    assert!(e.to_string().contains("engine.rs"), "names where the node was recorded: {e}");
}

/// `grad` with a different number of seeds than outputs is a clear error (not an index panic),
/// in both directions.
#[test]
fn grad_seed_count_mismatch_is_a_clear_error() {
    let x = t(&[1.0, 2.0], &[2]).requires_grad();
    let (a, b) = (x.mul_scalar(2.0), x.mul(&x));
    let one = [Tensor::ones(&[2])];
    let e = grad(&[&a, &b], &[&x], Some(&one), GradOptions::default()).unwrap_err();
    assert!(matches!(e, AutodiffError::SeedCount { outputs: 2, seeds: 1 }), "{e}");
    assert_eq!(e.to_string(), "grad: 1 seed(s) for 2 output(s); give one seed per output, or none");
    let three = [Tensor::ones(&[2]), Tensor::ones(&[2]), Tensor::ones(&[2])];
    let e = grad(&[&a, &b], &[&x], Some(&three), GradOptions::default()).unwrap_err();
    assert!(matches!(e, AutodiffError::SeedCount { outputs: 2, seeds: 3 }), "{e}");
    // With matching seeds the same call works: d(2x + x²)/dx = 2 + 2x.
    let two = [Tensor::ones(&[2]), Tensor::ones(&[2])];
    let g = grad(&[&a, &b], &[&x], Some(&two), GradOptions::default()).unwrap();
    assert_eq!(g[0].to_vec(), vec![4.0, 6.0]);
}

#[test]
#[should_panic(expected = "add: shapes [2, 3] and [4] cannot be broadcast together")]
fn shape_mismatch_names_op_and_shapes() {
    let a = Tensor::<f32>::zeros(&[2, 3]);
    let b = Tensor::<f32>::zeros(&[4]);
    let _ = a.add(&b);
}

#[test]
#[should_panic(expected = "matmul: inner dimensions differ: [2, 3] × [4, 5]")]
fn matmul_mismatch_names_shapes() {
    let _ = Tensor::<f64>::zeros(&[2, 3]).matmul(&Tensor::zeros(&[4, 5]));
}

/// Values and the gradients of `x, w, bias` of `f(x, w, bias)` against a random seed.
fn affine_run<T: Float>(f: fn(&Tensor<T>, &Tensor<T>, &Tensor<T>) -> Tensor<T>, xs: &[usize], k: usize, n: usize, seed: u64) -> Vec<Vec<T>> {
    let mut r = Rng::new(seed);
    let x = Tensor::<T>::rand_uniform(xs, -1.0, 1.0, &mut r).requires_grad();
    let w = Tensor::<T>::rand_uniform(&[k, n], -1.0, 1.0, &mut r).requires_grad();
    let b = Tensor::<T>::rand_uniform(&[n], -1.0, 1.0, &mut r).requires_grad();
    let y = f(&x, &w, &b);
    let g = Tensor::<T>::rand_uniform(y.shape(), -1.0, 1.0, &mut r);
    let gs = grad(&[&y], &[&x, &w, &b], Some(&[g]), GradOptions::default()).unwrap();
    std::iter::once(y.data().to_vec()).chain(gs.iter().map(|g| g.data().to_vec())).collect()
}

/// `affine` is `matmul` then `add`, bit for bit: values and all three gradients, both element
/// types, rank 1–3 inputs, empty and one-sized axes, sizes past the GEMM's tiles, and a
/// 2-thread pool (where the bias add splits by rows).
fn affine_equals_matmul_add<T: Float>() {
    let affine: fn(&Tensor<T>, &Tensor<T>, &Tensor<T>) -> Tensor<T> = |x, w, b| x.affine(w, b);
    let composed: fn(&Tensor<T>, &Tensor<T>, &Tensor<T>) -> Tensor<T> = |x, w, b| x.matmul(w).add(b);
    let shapes: &[(&[usize], usize, usize)] = &[
        (&[3], 3, 4),
        (&[2, 3], 3, 4),
        (&[1, 1], 1, 1),
        (&[0, 5], 5, 3),
        (&[4, 0], 0, 3),
        (&[4, 5], 5, 0),
        (&[2, 3, 7], 7, 5),
        (&[37, 300], 300, 19),
        (&[3, 200, 64], 64, 300),
    ];
    for threads in [1, 2] {
        for (i, &(xs, k, n)) in shapes.iter().enumerate() {
            let (a, c) = chi_kernels::threads::with_threads(threads, || (affine_run(affine, xs, k, n, i as u64), affine_run(composed, xs, k, n, i as u64))).unwrap();
            for (part, (u, v)) in ["value", "dx", "dw", "dbias"].iter().zip(a.iter().zip(&c)) {
                assert_eq!(u.len(), v.len(), "{} {xs:?}·[{k}, {n}] {part}: lengths", T::NAME);
                for (j, (p, q)) in u.iter().zip(v).enumerate() {
                    assert!(p.to_f64().to_bits() == q.to_f64().to_bits(), "{} {xs:?}·[{k}, {n}], {threads} threads, {part}[{j}]: {p} vs {q}", T::NAME);
                }
            }
        }
    }
}

#[test]
fn affine_equals_matmul_then_add_bit_for_bit() {
    affine_equals_matmul_add::<f32>();
    affine_equals_matmul_add::<f64>();
}

#[test]
#[should_panic(expected = "affine: input [2, 3] and weight [4, 5] do not multiply")]
fn affine_weight_mismatch_names_shapes() {
    let _ = Tensor::<f64>::zeros(&[2, 3]).affine(&Tensor::zeros(&[4, 5]), &Tensor::zeros(&[5]));
}

#[test]
#[should_panic(expected = "affine: bias has shape [4], expected [5] for weight [3, 5]")]
fn affine_bias_mismatch_names_shapes() {
    let _ = Tensor::<f64>::zeros(&[2, 3]).affine(&Tensor::zeros(&[3, 5]), &Tensor::zeros(&[4]));
}

#[test]
fn higher_order_hvp_and_jvp() {
    // f(x) = Σ x_i³ x_j ... use f = (Σ x²)² : H = 4(x xᵀ·2 + (Σx²) I)
    let x = t(&[0.5, -1.0, 2.0], &[3]);
    let v = t(&[1.0, 0.5, -0.25], &[3]);
    let (y, hv) = hvp(|x| x.square().sum().square(), &x, &v).unwrap();
    assert!((y.item() - x.data().iter().map(|a| a * a).sum::<f64>().powi(2)).abs() < 1e-12);
    let s: f64 = x.data().iter().map(|a| a * a).sum();
    let xv: f64 = x.data().iter().zip(v.data()).map(|(a, b)| a * b).sum();
    let expect: Vec<f64> = x.data().iter().zip(v.data()).map(|(xi, vi)| 8.0 * xi * xv + 4.0 * s * vi).collect();
    close(hv.data(), &expect, 1e-10);

    // J·t of elementwise tanh = (1 − tanh²) ⊙ t
    let (y, jt) = jvp(|x| x.tanh(), &x, &v).unwrap();
    close(y.data(), &x.data().iter().map(|a| a.tanh()).collect::<Vec<_>>(), 1e-15);
    let expect: Vec<f64> = x.data().iter().zip(v.data()).map(|(a, b)| (1.0 - a.tanh().powi(2)) * b).collect();
    close(jt.data(), &expect, 1e-12);

    // Third derivative of x⁴ at 1.5 = 24x = 36.
    let x = Tensor::<f64>::scalar(1.5).requires_grad();
    let y = x.pow_scalar(4.0);
    let d1 = grad(&[&y], &[&x], None, GradOptions::create_graph()).unwrap();
    let d2 = grad(&[&d1[0]], &[&x], None, GradOptions::create_graph()).unwrap();
    let d3 = grad(&[&d2[0]], &[&x], None, GradOptions::default()).unwrap();
    assert!((d3[0].item() - 36.0).abs() < 1e-9);
}

#[test]
fn jax_style_check_works_in_f32() {
    let x = Tensor::<f32>::from_vec(vec![0.3, -0.8, 1.1, 0.2, 0.9, -0.4], &[2, 3]);
    let w = Tensor::<f32>::from_vec(vec![0.5, -0.2, 0.1, 0.7, -0.3, 0.4], &[3, 2]);
    check_grads(|xs| xs[0].matmul(&xs[1]).tanh().softmax(1), &[x, w], 1e-2, 2e-2, 7).unwrap();
}

#[test]
fn anomaly_names_the_forward_op_and_call_site() {
    let x = t(&[1.0, 0.0], &[2]).requires_grad();
    let a = detect_anomaly(|| x.ln().sum().backward()).unwrap_err();
    assert_eq!(a.op, "ln");
    assert_eq!(a.phase, anomaly::Phase::Forward);
    assert!(a.location.contains("engine.rs"), "{}", a.location);
    // Backward anomaly: sqrt(0) = 0 is finite, but its gradient 1/(2·0) is not.
    let x = t(&[4.0, 0.0], &[2]).requires_grad();
    let a = detect_anomaly(|| x.sqrt().sum().backward()).unwrap_err();
    assert_eq!((a.op.as_str(), a.phase), ("sqrt", anomaly::Phase::Backward));
}

#[test]
fn sparse_embedding_gradient_equals_dense() {
    let table = Tensor::<f64>::from_vec((0..12).map(|i| i as f64 * 0.1).collect(), &[4, 3]);
    let ids = [3usize, 1, 3, 0];
    let dense = table.clone().requires_grad();
    dense.embedding(&ids).square().sum().backward();
    let sparse = table.requires_grad().sparse_grad();
    sparse.embedding(&ids).square().sum().backward();
    let rows = sparse.sparse_grad_rows().unwrap();
    assert_eq!(rows.ids, ids.to_vec());
    assert_eq!(rows.to_dense().to_vec(), dense.grad().unwrap().to_vec());
}

/// A sparse-gradient table that a dense op uses too (weight tying, a penalty): `grad()` is the
/// dense part plus the rows (it returned the dense part alone).
#[test]
fn a_sparse_table_used_densely_too_has_both_parts_in_its_gradient() {
    let w = t(&[1., 2., 3., 4.], &[2, 2]).requires_grad().sparse_grad();
    w.embedding(&[0]).sum().add(&w.sum()).backward();
    assert_eq!(w.grad().unwrap().to_vec(), vec![2., 2., 1., 1.]);
    assert_eq!(w.dense_grad_part().unwrap().to_vec(), vec![1., 1., 1., 1.]);
    assert_eq!(w.sparse_grad_rows().unwrap().ids, vec![0]);
    let plain = t(&[1., 2., 3., 4.], &[2, 2]).requires_grad();
    plain.embedding(&[0]).sum().add(&plain.sum()).backward();
    assert_eq!(w.grad().unwrap().to_vec(), plain.grad().unwrap().to_vec());
}

/// x⁰ has derivative 0 everywhere, also at x = 0, for a scalar and a tensor exponent; so the
/// second derivative of x¹ at 0 is 0 (all were NaN: 0·0⁻¹).
#[test]
fn exponent_zero_has_zero_derivative_at_zero() {
    let x = t(&[0.0, 2.0], &[2]).requires_grad();
    x.pow_scalar(0.0).sum().backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![0.0, 0.0]);
    let x = t(&[0.0, 2.0, 0.0], &[3]).requires_grad();
    let e = t(&[0.0, 0.0, 2.0], &[3]).requires_grad();
    x.pow(&e).sum().backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![0.0, 0.0, 0.0]);
    let x = Tensor::<f64>::scalar(0.0).requires_grad();
    for y in [x.pow_scalar(1.0), x.pow(&Tensor::scalar(1.0))] {
        let g = grad(&[&y], &[&x], None, GradOptions::create_graph()).unwrap();
        assert_eq!(g[0].item(), 1.0);
        let h = grad(&[&g[0]], &[&x], None, GradOptions::default()).unwrap();
        assert_eq!(h[0].item(), 0.0);
    }
}

/// Grad-mode guards dropped out of order leave the mode of the newest live guard (a restored
/// snapshot switched recording on while an inner guard lived, then off for good).
#[test]
fn no_grad_guards_dropped_in_any_order_leave_the_right_mode() {
    assert!(is_grad_enabled());
    let outer = no_grad_guard();
    let inner = no_grad_guard();
    drop(outer);
    assert!(!is_grad_enabled(), "the inner guard still lives");
    drop(inner);
    assert!(is_grad_enabled(), "no guard lives");
    let w = t(&[1.0, 2.0], &[2]).requires_grad();
    w.square().sum().backward();
    assert_eq!(w.grad().unwrap().to_vec(), vec![2.0, 4.0]);
    // Nested with no_grad and a backward inside (which holds its own guard).
    let g = no_grad_guard();
    let r = no_grad(|| w.mul_scalar(2.0));
    assert!(!r.is_tracked());
    drop(g);
    assert!(is_grad_enabled());
}

/// Anomaly reports name the right place: an infinite gradient made inside a backward rule is
/// the rule's (Backward, at the user's call), not a forward op inside chi; a NaN that comes in
/// with the data is an Input finding at the first op that reads it, not the backward rule of a
/// later op; a −∞ mask before a softmax is not a finding.
#[test]
fn anomaly_reports_blame_the_rule_or_the_input_not_chi_internals() {
    let x = t(&[0.0], &[1]).requires_grad();
    let (line, r) = (line!(), detect_anomaly(|| x.pow_scalar(0.5).sum().backward()));
    let a = r.unwrap_err();
    assert_eq!((a.op.as_str(), a.phase), ("pow_scalar", anomaly::Phase::Backward), "{a}");
    assert!(a.location.contains(&format!("engine.rs:{line}")), "{a}");
    let x = t(&[1.0, f64::NAN, 2.0], &[3]).requires_grad();
    let (line, r) = (line!(), detect_anomaly(|| x.mul_scalar(2.0).exp().sum().backward()));
    let a = r.unwrap_err();
    assert_eq!((a.op.as_str(), a.phase), ("mul_scalar", anomaly::Phase::Input), "{a}");
    assert!(a.detail.contains("1 NaN") && a.location.contains(&format!("engine.rs:{line}")), "{a}");
    let scores = t(&[1.0, 2.0, 3.0], &[3]).requires_grad();
    let mask = t(&[0.0, f64::NEG_INFINITY, 0.0], &[3]);
    assert!(detect_anomaly(|| scores.add(&mask).softmax(0).sum().backward()).is_ok());
}

/// `backward` inside a gradient hook says why there is no graph (ops are not recorded during
/// a backward pass) instead of the false "does not require grad".
#[test]
fn backward_inside_a_hook_says_the_pass_records_nothing() {
    let x = t(&[1.0], &[1]).requires_grad();
    let other = t(&[3.0], &[1]).requires_grad();
    let seen = Rc::new(RefCell::new(None));
    let s2 = seen.clone();
    let _h = x.register_hook(move |_| {
        *s2.borrow_mut() = Some(other.square().sum().try_backward().unwrap_err().to_string());
        None
    });
    x.sum().backward();
    let e = seen.borrow().clone().unwrap();
    assert!(e.contains("inside a backward pass") && e.contains("create_graph"), "{e}");
    assert_eq!(x.grad().unwrap().to_vec(), vec![1.0]);
    // Outside a pass the plain message stays.
    let c = t(&[1.0], &[1]);
    assert!(matches!(c.try_backward(), Err(AutodiffError::NotTracked(_))));
}

/// `grad` with respect to an intermediate whose own op was released by an earlier backward
/// needs nothing below it: it succeeds (as in PyTorch); asking for a tensor below the released
/// op too is still the released-graph error.
#[test]
fn grad_of_an_intermediate_above_a_released_op_succeeds() {
    let x = t(&[1.0, 2.0], &[2]).requires_grad();
    let y = x.sin();
    y.sum().backward();
    let g = grad(&[&y.square().sum()], &[&y], None, GradOptions::default()).unwrap();
    let want: Vec<f64> = [1.0f64, 2.0].iter().map(|v| 2.0 * v.sin()).collect();
    assert_eq!(g[0].to_vec(), want);
    let z = y.square();
    assert!(matches!(grad(&[&z.sum()], &[&y, &x], None, GradOptions::default()), Err(AutodiffError::GraphFreed { .. })));
}

/// Misuse that used to give a wrong value, a message naming an internal op, or a message of
/// the standard library panics with a message naming the op called and the shapes or values.
#[test]
fn misuse_panics_name_the_op_called_and_its_arguments() {
    fn panic_of(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
        let e = std::panic::catch_unwind(f).expect_err("should panic");
        e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
    }
    let t3 = || t(&[1.0, 2.0, 3.0], &[3]);
    let cases: Vec<(Box<dyn FnOnce() + std::panic::UnwindSafe>, &str)> = vec![
        // A wrapped element count described another, smaller tensor (broadcast to 2³²×2³² summed to 0).
        (Box::new(|| drop(t(&[1.0], &[1]).broadcast_to(&[1 << 32, 1 << 32]))), "more elements than a usize can count"),
        (Box::new(|| drop(Tensor::<f64>::zeros(&[1 << 33, 1 << 31]))), "more elements than a usize can count"),
        (Box::new(move || drop(t3().narrow(0, usize::MAX, 2))), "narrow: range 18446744073709551615..18446744073709551615+2 (overflows) is out of bounds"),
        (Box::new(move || drop(t3().split(&[usize::MAX, 4], 0))), "split: sizes"),
        (Box::new(move || drop(t3().pad_axis(0, usize::MAX, 1))), "pad_axis: padding axis 0"),
        (Box::new(|| drop(Tensor::<f64>::zeros(&[0, 3]).argmax_axis(0))), "argmax_axis: axis 0 of shape [0, 3] is empty"),
        (Box::new(|| t(&[1.0, 2.0], &[2]).requires_grad().set_grad(Some(Tensor::zeros(&[2, 1])))), "set_grad: a gradient of shape [2, 1] for a tensor of shape [2]"),
        (Box::new(|| drop(Tensor::<f64>::zeros(&[3, 2]).embedding(&[0, 3]))), "embedding: id 3 (position 1) is out of range for a table of 3 rows"),
        (Box::new(|| drop(Tensor::<f64>::zeros(&[2, 2]).scatter_rows(Rc::new(vec![0, 5]), 3))), "scatter_rows: id 5 (position 1) is out of range for 3 rows"),
        (Box::new(move || drop(Tensor::where_(&[true, false], &[2], &t3(), &t3()))), "where_: a of shape [3] cannot be broadcast to the mask's shape [2]"),
        (Box::new(|| drop(Tensor::<f64>::zeros(&[0, 3]).cross_entropy(&[]))), "cross_entropy: no samples"),
        (Box::new(move || drop(t3().matmul(&Tensor::zeros(&[2, 3, 2])))), "matmul: batch dimensions differ: [3] × [2, 3, 2]"),
        (Box::new(move || drop(t3().clamp(Some(f64::NAN), None))), "clamp: a bound is NaN"),
        (Box::new(move || drop(t3().leaky_relu(f64::NAN))), "leaky_relu: the negative slope NaN is not finite"),
        (Box::new(move || drop(t3().var(&[0], f64::NAN, false))), "var: correction NaN is not finite"),
        (Box::new(|| drop(Tensor::<f64>::rand_uniform(&[3], f64::NAN, 0.0, &mut Rng::new(1)))), "rand_uniform: the range [NaN, 0) is not a finite interval"),
    ];
    for (f, want) in cases {
        let m = panic_of(f);
        assert!(m.contains(want), "wanted {want:?} in {m:?}");
    }
}

#[test]
fn leaf_gradients_accumulate_across_backward_calls() {
    let x = t(&[1.0], &[1]).requires_grad();
    x.mul_scalar(2.0).sum().backward();
    x.mul_scalar(3.0).sum().backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![5.0]);
}

#[test]
fn retain_graph_allows_a_second_backward() {
    let x = t(&[2.0], &[1]).requires_grad();
    let y = x.square().sum();
    y.backward_with(None, GradOptions::retain_graph()).unwrap();
    y.backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![8.0]);
    assert_eq!(tape_len::<f64>(), 0);
}

// ---------------------------------------------------------------- graph lifetime

/// Two graphs built interleaved on one thread, differentiated in either order: each backward
/// frees only its own graph.
#[test]
fn interleaved_graphs_in_either_order() {
    for first_a in [true, false] {
        let x = t(&[0.5, -1.0], &[2]).requires_grad();
        let w = t(&[2.0, 3.0], &[2]).requires_grad();
        let mut a = x.tanh();
        let mut b = w.square();
        a = a.mul(&x);
        b = b.mul_scalar(0.5).exp();
        let (la, lb) = (a.sum(), b.sum());
        let (ea, eb): (Vec<f64>, Vec<f64>) = (
            x.data().iter().map(|v| v.tanh() + v * (1.0 - v.tanh().powi(2))).collect(),
            w.data().iter().map(|v| v * (0.5 * v * v).exp()).collect(),
        );
        if first_a {
            la.backward();
            lb.backward();
        } else {
            lb.backward();
            la.backward();
        }
        close(x.grad().unwrap().data(), &ea, 1e-12);
        close(w.grad().unwrap().data(), &eb, 1e-12);
    }
}

/// A Hessian–vector product computed in the middle of building a loss leaves the loss usable.
#[test]
fn hvp_in_the_middle_of_a_loss() {
    let w = t(&[0.3, -0.7], &[2]).requires_grad();
    let h = w.tanh();
    let (_, hv) = hvp(|x| x.square().sum().square(), &t(&[1.0, 2.0], &[2]), &t(&[1.0, 0.0], &[2])).unwrap();
    let (_, jt) = jvp(|x| x.exp(), &t(&[0.0], &[1]), &t(&[1.0], &[1])).unwrap();
    let g = gradcheck(|xs| xs[0].sin_like_test(), &[t(&[0.1], &[1])], &GradcheckOptions::default());
    assert!(g.is_ok());
    let loss = h.mul(&w).sum();
    loss.backward();
    let expect: Vec<f64> = w.data().iter().map(|v| v.tanh() + v * (1.0 - v.tanh().powi(2))).collect();
    close(w.grad().unwrap().data(), &expect, 1e-12);
    // (Σx²)² at (1, 2): H·e₀ = 8x₀(x·e₀) + 4(Σx²) = 8 + 20
    assert!((hv.data()[0] - 28.0).abs() < 1e-10);
    assert!((jt.item() - 1.0).abs() < 1e-12);
}

trait SinLike {
    fn sin_like_test(&self) -> Tensor<f64>;
}
impl SinLike for Tensor<f64> {
    fn sin_like_test(&self) -> Tensor<f64> {
        self.tanh().mul(self)
    }
}

/// Graphs (and parts of graphs) dropped in any order free their nodes; what is still held stays
/// differentiable.
#[test]
fn graphs_dropped_in_any_order() {
    let base = tape_len::<f64>();
    let x = t(&[0.2, 0.4], &[2]).requires_grad();
    let h1 = x.tanh(); // saves its output
    let h2 = h1.exp();
    let h3 = h2.mul(&x);
    let other = x.sigmoid().sum();
    assert_eq!(tape_len::<f64>(), base + 5);
    drop(h1); // still reachable from h3
    drop(h2);
    assert_eq!(tape_len::<f64>(), base + 5);
    let l = h3.sum();
    drop(h3);
    l.backward_with(None, GradOptions::retain_graph()).unwrap();
    let expect: Vec<f64> = x.data().iter().map(|v| v.tanh().exp() * (1.0 + v * (1.0 - v.tanh().powi(2)))).collect();
    close(x.grad().unwrap().data(), &expect, 1e-12);
    drop(l);
    assert_eq!(tape_len::<f64>(), base + 2, "only `other`'s graph is left");
    x.zero_grad();
    other.backward();
    close(x.grad().unwrap().data(), &x.data().iter().map(|v| 1.0 / (1.0 + (-v).exp()) * (1.0 - 1.0 / (1.0 + (-v).exp()))).collect::<Vec<_>>(), 1e-12);
    assert_eq!(tape_len::<f64>(), base);
    // Drop the root first, then a middle tensor, then the start of a chain.
    let a = x.exp();
    let b = a.tanh();
    let c = b.square();
    drop(c);
    drop(a);
    assert_eq!(tape_len::<f64>(), base + 2);
    drop(b);
    assert_eq!(tape_len::<f64>(), base);
}

/// Dropping the last tensor of a chain of a million recorded ops does not overflow the stack.
#[test]
fn dropping_a_million_op_chain_is_iterative() {
    let x = Tensor::<f64>::scalar(0.5).requires_grad();
    let mut y = x.clone();
    for _ in 0..1_000_000 {
        y = y.tanh();
    }
    assert_eq!(tape_len::<f64>(), 1_000_000);
    drop(y);
    assert_eq!(tape_len::<f64>(), 0);
    // And a backward through a long chain releases it iteratively too.
    let mut y = x.clone();
    for _ in 0..200_000 {
        y = y.mul_scalar(1.0);
    }
    y.backward();
    assert_eq!(x.grad().unwrap().item(), 1.0);
    assert_eq!(tape_len::<f64>(), 0);
}

/// `create_graph` over two levels: third derivative through a graph built by a second-order
/// pass, with the first-level graph still alive.
#[test]
fn create_graph_over_two_levels() {
    let x = Tensor::<f64>::scalar(0.7).requires_grad();
    let y = x.tanh().mul(&x); // x·tanh x
    let d1 = grad(&[&y], &[&x], None, GradOptions::create_graph()).unwrap();
    let d2 = grad(&[&d1[0]], &[&x], None, GradOptions::create_graph()).unwrap();
    drop(y); // the gradient graphs keep what they need
    let d3 = grad(&[&d2[0]], &[&x], None, GradOptions::default()).unwrap();
    let (t_, s) = (0.7f64.tanh(), 1.0 - 0.7f64.tanh().powi(2)); // s = sech²
    let x0 = 0.7;
    // f = x t; f' = t + x s; f'' = 2s − 2x t s; f''' = −6 t s + x(−2s² + 4t² s)
    assert!((d1[0].item() - (t_ + x0 * s)).abs() < 1e-12);
    assert!((d2[0].item() - (2.0 * s - 2.0 * x0 * t_ * s)).abs() < 1e-12);
    let f3 = -6.0 * t_ * s + x0 * (-2.0 * s * s + 4.0 * t_ * t_ * s);
    assert!((d3[0].item() - f3).abs() < 1e-12, "{} vs {f3}", d3[0].item());
    // A second non-retained pass through d2's graph is a clear error.
    let e = grad(&[&d2[0]], &[&x], None, GradOptions::default()).unwrap_err();
    assert!(matches!(e, AutodiffError::GraphFreed { .. }), "{e}");
}

// ---------------------------------------------------------------- hooks

#[test]
fn hook_handles_remove_hooks_and_order_is_documented() {
    let x = t(&[1.0, 2.0], &[2]).requires_grad();
    let log = Rc::new(RefCell::new(Vec::<String>::new()));
    let (l1, l2, l3) = (log.clone(), log.clone(), log.clone());
    let y = x.mul_scalar(3.0);
    let hy1 = y.register_hook(move |g| {
        l1.borrow_mut().push(format!("y1 {:?}", g.to_vec()));
        Some(g.mul_scalar(2.0))
    });
    let _hy2 = y.register_hook(move |g| {
        l2.borrow_mut().push(format!("y2 {:?}", g.to_vec())); // sees y1's replacement
        None
    });
    let hx = x.register_hook(move |g| {
        l3.borrow_mut().push(format!("x {:?}", g.to_vec()));
        None
    });
    y.sum().backward_with(None, GradOptions::retain_graph()).unwrap(); // y is differentiated again below
    assert_eq!(*log.borrow(), vec!["y1 [1.0, 1.0]", "y2 [2.0, 2.0]", "x [6.0, 6.0]"]);
    assert_eq!(x.grad().unwrap().to_vec(), vec![6.0, 6.0]);
    assert!(hy1.remove());
    assert!(!hy1.remove(), "second remove reports nothing removed");
    assert!(hx.remove());
    log.borrow_mut().clear();
    x.zero_grad();
    y.sum().backward();
    assert_eq!(*log.borrow(), vec!["y2 [1.0, 1.0]"]);
    assert_eq!(x.grad().unwrap().to_vec(), vec![3.0, 3.0]);
    // A handle outliving its tensor is harmless.
    let z = x.exp();
    let hz = z.register_hook(|_| None);
    drop(z);
    assert!(!hz.remove());
}

#[test]
fn hook_returning_a_wrong_shape_is_an_error() {
    let x = t(&[1.0, 2.0], &[2]).requires_grad();
    let y = x.mul_scalar(3.0);
    y.register_hook(|_| Some(Tensor::zeros(&[3])));
    let e = y.sum().try_backward().unwrap_err();
    assert!(matches!(&e, AutodiffError::HookShape { expected, actual } if expected == &[2] && actual == &[3]), "{e}");
}

// ---------------------------------------------------------------- errors

struct Wrong {
    shape: bool,
}
impl CustomOp<f64> for Wrong {
    fn name(&self) -> &str {
        "soft_clamp"
    }
    fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> {
        x[0].tanh()
    }
    fn backward(&self, _x: &[&Tensor<f64>], _o: &Tensor<f64>, g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
        if self.shape {
            vec![Some(g.sum())]
        } else {
            vec![Some(g.clone()), None]
        }
    }
}

#[test]
fn custom_op_mistakes_are_errors_naming_the_op() {
    let x = t(&[0.5, 1.0, 2.0], &[3]).requires_grad();
    let y = Tensor::apply_custom(Rc::new(Wrong { shape: true }), &[x.clone()]).sum();
    let e = y.try_backward().unwrap_err();
    assert!(
        matches!(&e, AutodiffError::CustomGradientShape { op, input: 0, expected, actual } if op == "soft_clamp" && expected == &[3] && actual.is_empty()),
        "{e}"
    );
    assert!(e.to_string().contains("custom op `soft_clamp`") && e.to_string().contains("[3]"), "{e}");
    let y = Tensor::apply_custom(Rc::new(Wrong { shape: false }), &[x.clone()]).sum();
    let e = grad(&[&y], &[&x], None, GradOptions::default()).unwrap_err();
    assert!(matches!(&e, AutodiffError::CustomGradientCount { op, expected: 1, actual: 2 } if op == "soft_clamp"), "{e}");
    let _: &dyn std::error::Error = &e;
    let a: Box<dyn std::error::Error> = Box::new(detect_anomaly(|| x.ln().sub(&x).sqrt().sum()).unwrap_err());
    assert!(a.to_string().contains("sqrt"), "{a}");
}

/// `detect_anomaly` returns its finding without a panic: run in a child process (this test
/// binary filtered to one helper test) and check its stderr has no panic message.
#[test]
fn detect_anomaly_prints_nothing() {
    if std::env::var_os("CHI_ANOMALY_CHILD").is_some() {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    // The test's name as the harness lists it: its module path inside the test binary, without
    // the crate's name.
    let name = module_path!().split_once("::").map_or("anomaly_child".to_string(), |(_, m)| format!("{m}::anomaly_child"));
    let out = std::process::Command::new(exe)
        .args(["--exact", name.as_str(), "--nocapture", "--test-threads=1"])
        .env("CHI_ANOMALY_CHILD", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed: {stdout}\n{stderr}");
    assert!(stdout.contains("child found sqrt"), "{stdout}");
    assert!(!stderr.contains("panicked") && !stdout.contains("panicked"), "{stderr}{stdout}");
}

#[test]
fn anomaly_child() {
    if std::env::var_os("CHI_ANOMALY_CHILD").is_none() {
        return;
    }
    let x = t(&[4.0, -1.0], &[2]).requires_grad();
    let a = detect_anomaly(|| x.sqrt().sum().backward()).unwrap_err();
    let x = t(&[4.0, 0.0], &[2]).requires_grad();
    let b = detect_anomaly(|| x.sqrt().sum().backward()).unwrap_err();
    assert_eq!(b.phase, anomaly::Phase::Backward);
    println!("child found {} and {}", a.op, b.op);
}

/// With the anomaly flag on (outside `detect_anomaly`), a backward finding is an `Err`.
#[test]
fn anomaly_flag_makes_backward_return_the_finding() {
    let x = t(&[4.0, 0.0], &[2]).requires_grad();
    set_anomaly_enabled(true);
    let e = x.sqrt().sum().try_backward();
    set_anomaly_enabled(false);
    assert!(matches!(e, Err(AutodiffError::Anomaly(ref a)) if a.op == "sqrt"), "{e:?}");
}

/// A leaf's post-accumulate hook runs as soon as its last consumer's rule has run — before the
/// rules of nodes recorded earlier in the forward pass — with the complete gradient in `.grad()`.
#[test]
fn post_accumulate_hooks_run_when_the_leaf_gradient_is_complete() {
    use std::cell::RefCell;
    use std::rc::Rc;
    let events: Rc<RefCell<Vec<String>>> = Rc::default();
    let x = Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2]);
    let w0 = Tensor::<f64>::from_vec(vec![0.5, -1.0], &[2]).requires_grad();
    let w1 = Tensor::<f64>::from_vec(vec![3.0, 4.0], &[2]).requires_grad();
    let mut handles = Vec::new();
    for (name, w) in [("w0", &w0), ("w1", &w1)] {
        let e = events.clone();
        handles.push(w.register_post_accumulate_grad_hook(move |t| e.borrow_mut().push(format!("{name} {:?}", t.grad().unwrap().to_vec()))));
    }
    // w1 is used twice: its gradient is complete only after both uses' rules have run.
    let h = x.mul(&w0);
    let e = events.clone();
    h.register_hook(move |_| {
        e.borrow_mut().push("h".into());
        None
    });
    let y = h.mul(&w1).add(&w1.mul_scalar(10.0));
    y.sum().backward();
    assert_eq!(*events.borrow(), vec!["w1 [10.5, 8.0]".to_string(), "h".into(), "w0 [3.0, 8.0]".into()]);
    // A second pass accumulates; the hook sees the sum.
    events.borrow_mut().clear();
    x.mul(&w0).mul(&w1).sum().backward();
    assert_eq!(*events.borrow(), vec!["w1 [11.0, 6.0]".to_string(), "w0 [6.0, 16.0]".into()]);
    for h in &handles {
        assert!(h.remove());
        assert!(!h.remove());
    }
    events.borrow_mut().clear();
    x.mul(&w0).sum().backward();
    assert!(events.borrow().is_empty());
    // A leaf no gradient reaches is not called.
    let e = events.clone();
    let unused = Tensor::<f64>::from_vec(vec![1.0], &[1]).requires_grad();
    let _h = unused.register_post_accumulate_grad_hook(move |_| e.borrow_mut().push("unused".into()));
    x.mul(&w0).sum().backward();
    assert!(events.borrow().is_empty());
    // Gradients are unchanged by the early delivery.
    assert_eq!(w0.grad().unwrap().to_vec(), vec![8.0, 20.0]);
}

/// Slices of one tensor taken step by step (a sequence's time steps, overlapping and repeated
/// slices, on a middle axis) accumulate into the slice in place on a plain backward; the result
/// equals the padded rule that runs under `create_graph`, on the leaf and on an intermediate.
#[test]
fn narrow_gradients_accumulated_in_place_equal_the_padded_rule() {
    let run = |create: bool| {
        let x = Tensor::from_vec((0..2 * 7 * 3).map(|i| (i as f64 * 0.37 + 0.1).sin()).collect(), &[2, 7, 3]).requires_grad();
        let y = x.mul_scalar(1.5).tanh();
        let mut loss = Tensor::scalar(0.0);
        for (k, (start, len)) in [(0, 1), (1, 1), (2, 3), (2, 4), (6, 1), (2, 3)].into_iter().enumerate() {
            let s = y.narrow(1, start, len);
            loss = loss.add(&s.mul_scalar(k as f64 + 1.0).square().sum());
        }
        let g = grad(&[&loss], &[&x, &y], None, GradOptions { create_graph: create, ..Default::default() }).unwrap();
        (g[0].to_vec(), g[1].to_vec())
    };
    let (fast_x, fast_y) = run(false);
    let (padded_x, padded_y) = run(true);
    close(&fast_x, &padded_x, 1e-14);
    close(&fast_y, &padded_y, 1e-14);
    assert!(fast_y.iter().all(|v| *v != 0.0), "every step of y is used");
    // And through `backward` into `.grad()`.
    let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]).requires_grad();
    let loss = x.narrow(0, 0, 2).sum().add(&x.narrow(0, 1, 2).mul_scalar(10.0).sum());
    loss.backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![1.0, 1.0, 11.0, 11.0, 10.0, 10.0]);
}

/// The gradient of a chain of every one-input elementwise op and every scalar op, for each
/// length (tiny, above the tiny-tensor path, above a vector width), as bit patterns.
fn elementwise_chain_grad<T: Float>(n: usize) -> Vec<u64> {
    let x = Tensor::<T>::from_vec((0..n).map(|i| T::from_f64(0.3 + 0.05 * i as f64)).collect(), &[n]).requires_grad();
    let mut y = x.clone();
    for op in chi_kernels::elementwise::Unary::ALL {
        y = y.unary(op).mul_scalar(0.9).add_scalar(0.2).sub_scalar(0.1).div_scalar(1.1);
        // Back into a range where every op (ln, sqrt, log1p) is defined and smooth.
        y = y.tanh().mul_scalar(0.5).add_scalar(0.6);
    }
    y.sum().backward();
    x.grad().unwrap().to_vec().iter().map(|v| v.to_f64().to_bits()).collect()
}

#[test]
fn in_place_backward_rules_equal_the_general_rules_bit_for_bit() {
    // Anomaly detection turns the in-place rules off (it checks each rule's output against its
    // incoming gradient), so it gives the general rules' results for the same graph.
    for n in [1, 3, 4, 5, 9, 70] {
        let fast = elementwise_chain_grad::<f64>(n);
        let general = detect_anomaly(|| elementwise_chain_grad::<f64>(n)).unwrap();
        assert_eq!(fast, general, "f64, n = {n}");
        let fast = elementwise_chain_grad::<f32>(n);
        let general = detect_anomaly(|| elementwise_chain_grad::<f32>(n)).unwrap();
        assert_eq!(fast, general, "f32, n = {n}");
    }
}

#[test]
fn in_place_backward_rules_leave_shared_gradients_alone() {
    // `y`'s incoming gradient is also its retained `.grad` and a hook's observation: the tanh
    // rule must not write into that buffer.
    let x = t(&[0.2, -0.4, 0.9], &[3]).requires_grad();
    let y = x.mul_scalar(2.0);
    y.retain_grad();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let s2 = seen.clone();
    let _h = y.register_hook(move |g| {
        s2.borrow_mut().push(g.clone());
        None
    });
    let z = y.tanh().mul_scalar(3.0);
    z.sum().backward();
    let want: Vec<f64> = y.to_vec().iter().map(|v| 3.0 * (1.0 - v.tanh() * v.tanh())).collect();
    close(&y.grad().unwrap().to_vec(), &want, 1e-15);
    close(&seen.borrow()[0].to_vec(), &want, 1e-15);
    let wx: Vec<f64> = want.iter().map(|g| 2.0 * g).collect();
    close(&x.grad().unwrap().to_vec(), &wx, 1e-15);
}

#[test]
fn in_place_backward_rules_skip_a_leaf_frozen_after_recording_and_serve_grad() {
    // Frozen between forward and backward: no gradient may reach it through a one-input rule.
    let x = t(&[0.5, -0.25], &[2]).requires_grad();
    let w = t(&[2.0, 3.0], &[2]).requires_grad();
    let y = x.tanh().mul_scalar(2.0).add(&w.sigmoid()).sum();
    x.set_requires_grad(false);
    y.backward();
    assert!(x.grad().is_none(), "a frozen leaf received {:?}", x.grad().map(|g| g.to_vec()));
    assert!(w.grad().is_some());
    // `grad` toward an intermediate and a leaf of a chain: the same values as anomaly mode's
    // general rules.
    let run = || {
        let x = t(&[0.3, 0.7, -1.1], &[3]).requires_grad();
        let h = x.mul_scalar(1.5).tanh();
        let out = h.exp().add_scalar(1.0).ln().mul_scalar(0.5).sum();
        grad(&[&out], &[&h, &x], None, GradOptions::default()).unwrap().iter().map(|g| g.to_vec()).collect::<Vec<_>>()
    };
    let fast = run();
    let general = detect_anomaly(run).unwrap();
    assert_eq!(fast, general);
}

/// Scalar ops on tiny tensors skip the kernel (`+ − × ÷` are computed inline, with a loop-free
/// path for one element); the values must be the kernel's bit for bit, special values included.
#[test]
fn tiny_scalar_ops_equal_the_kernel_bit_for_bit() {
    use chi_kernels::elementwise::{binary_scalar, Binary};
    let vals = [0.3, -1.7, 0.0, -0.0, 1e-310, -3e300, f64::INFINITY, f64::NAN, 7.0];
    for n in 1..=5 {
        for start in 0..vals.len() {
            let xs: Vec<f64> = (0..n).map(|i| vals[(start + i) % vals.len()]).collect();
            let x = Tensor::from_vec(xs.clone(), &[n]).requires_grad();
            for s in [2.5, -0.0, 1e-300, f64::NAN] {
                for (op, y) in [
                    (Binary::Add, x.add_scalar(s)),
                    (Binary::Sub, x.sub_scalar(s)),
                    (Binary::Mul, x.mul_scalar(s)),
                    (Binary::Div, x.div_scalar(s)),
                ] {
                    let mut want = vec![0.0; n];
                    binary_scalar(op, &xs, s, &mut want);
                    let got: Vec<u64> = y.to_vec().iter().map(|v| v.to_bits()).collect();
                    let want: Vec<u64> = want.iter().map(|v| v.to_bits()).collect();
                    // NaN payloads may differ between scalar and vector code; compare them as NaN.
                    for (g, w) in got.iter().zip(&want) {
                        let (gf, wf) = (f64::from_bits(*g), f64::from_bits(*w));
                        assert!(g == w || (gf.is_nan() && wf.is_nan()), "{op:?} {xs:?} {s}: {gf} vs {wf}");
                    }
                }
            }
        }
    }
}
