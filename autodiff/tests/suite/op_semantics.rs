//! Forward values and PyTorch's conventions at the non-smooth points of sin/cos, erf, gelu,
//! silu, clamp, var/std and cumsum. (Their gradients at smooth points, first and second order,
//! are checked by the gradcheck cases.)

use chi_autodiff::{grad, GradOptions, Tensor};

fn t(v: &[f64], s: &[usize]) -> Tensor<f64> {
    Tensor::from_vec(v.to_vec(), s)
}

fn close(a: &[f64], b: &[f64], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{what}[{i}]: {x} vs {y}");
    }
}

#[test]
fn activation_values_match_closed_forms() {
    // Reference values computed independently (CPython `math`): gelu(x) = ½x(1 + erf(x/√2)),
    // the tanh form with √(2/π) and 0.044715, silu(1) = σ(1).
    let x = t(&[1.0, -3.0], &[2]);
    close(x.gelu().data(), &[0.841_344_746_068_542_9, -0.004_049_694_094_890_31], 1e-15, "gelu");
    close(x.gelu_tanh().data(), &[0.841_191_990_608_276_8, -0.003_637_392_081_772_994_3], 1e-15, "gelu_tanh");
    close(t(&[1.0], &[1]).silu().data(), &[0.731_058_578_630_004_9], 1e-15, "silu");
    // sin/cos are std's.
    let v = [-2.5, 0.0, 0.3, 7.0];
    close(t(&v, &[4]).sin().data(), &v.map(f64::sin), 0.0, "sin");
    close(t(&v, &[4]).cos().data(), &v.map(f64::cos), 0.0, "cos");
    // Far tails: the exact GELU keeps relative precision on the left (x·Φ(x), Φ tiny).
    let left = t(&[-10.0], &[1]).gelu().item();
    assert!(left < 0.0 && (left / -7.619_853_024_160_593e-23 - 1.0).abs() < 1e-12, "gelu(-10) = {left}");
    assert_eq!(t(&[40.0], &[1]).gelu().item(), 40.0);
    // f32 agrees with f64 to f32 precision.
    let xs: Vec<f64> = (0..41).map(|i| i as f64 * 0.2 - 4.0).collect();
    let x64 = t(&xs, &[41]);
    let x32 = x64.to_f32();
    type Pair = (fn(&Tensor<f64>) -> Tensor<f64>, fn(&Tensor<f32>) -> Tensor<f32>);
    let fs: [(&str, Pair); 6] = [
        ("sin", (|x| x.sin(), |x| x.sin())),
        ("cos", (|x| x.cos(), |x| x.cos())),
        ("erf", (|x| x.erf(), |x| x.erf())),
        ("gelu", (|x| x.gelu(), |x| x.gelu())),
        ("gelu_tanh", (|x| x.gelu_tanh(), |x| x.gelu_tanh())),
        ("silu", (|x| x.silu(), |x| x.silu())),
    ];
    for (name, (f64f, f32f)) in fs {
        let a = f64f(&x64);
        let b = f32f(&x32).to_f64();
        close(b.data(), a.data(), 1e-6, name);
    }
}

#[test]
fn clamp_scalar_passes_gradient_on_the_boundary() {
    let x = t(&[-1.0, 1.0, 0.0, -2.0, 2.0], &[5]).requires_grad();
    let y = x.clamp(Some(-1.0), Some(1.0));
    assert_eq!(y.to_vec(), vec![-1.0, 1.0, 0.0, -1.0, 1.0]);
    y.sum().backward();
    // PyTorch: gradient where min ≤ x ≤ max, so both boundaries count as inside.
    assert_eq!(x.grad().unwrap().to_vec(), vec![1.0, 1.0, 1.0, 0.0, 0.0]);

    // One bound only.
    let x = t(&[-1.0, 3.0, -5.0], &[3]).requires_grad();
    x.clamp(Some(-1.0), None).sum().backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![1.0, 1.0, 0.0]);
    let x = t(&[2.0, 3.0, -5.0], &[3]).requires_grad();
    x.clamp(None, Some(2.0)).sum().backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![1.0, 0.0, 1.0]);

    // min > max: every output is max, and no gradient reaches x.
    let x = t(&[-3.0, 0.0, 3.0], &[3]).requires_grad();
    let y = x.clamp(Some(1.0), Some(-1.0));
    assert_eq!(y.to_vec(), vec![-1.0; 3]);
    y.sum().backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![0.0; 3]);

    // NaN propagates.
    assert!(t(&[f64::NAN], &[1]).clamp(Some(0.0), Some(1.0)).item().is_nan());
}

#[test]
fn clamp_tensor_follows_pytorch_gradient_rules() {
    // x on min, x on max, min > max with x below both, min > max with x between.
    let x = t(&[0.0, 1.0, 2.0, -1.0], &[4]).requires_grad();
    let lo = t(&[0.0, 0.0, 3.0, -2.0], &[4]).requires_grad();
    let hi = t(&[1.0, 1.0, 2.5, -3.0], &[4]).requires_grad();
    let y = x.clamp_tensor(Some(&lo), Some(&hi));
    assert_eq!(y.to_vec(), vec![0.0, 1.0, 2.5, -3.0]);
    y.sum().backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![1.0, 1.0, 0.0, 0.0], "x: min ≤ x ≤ max");
    assert_eq!(lo.grad().unwrap().to_vec(), vec![0.0, 0.0, 0.0, 0.0], "min: x < min and min < max");
    assert_eq!(hi.grad().unwrap().to_vec(), vec![0.0, 0.0, 1.0, 1.0], "max: x > max or max < min");

    // Broadcast bounds: a scalar min and a per-column max; their gradients are summed back.
    let x = t(&[-2.0, 0.5, 4.0, 0.0, 3.0, -1.0], &[2, 3]).requires_grad();
    let lo = t(&[-0.5], &[]).requires_grad();
    let hi = t(&[1.0, 2.0, 3.0], &[3]).requires_grad();
    let y = x.clamp_tensor(Some(&lo), Some(&hi));
    assert_eq!(y.shape(), &[2, 3]);
    assert_eq!(y.to_vec(), vec![-0.5, 0.5, 3.0, 0.0, 2.0, -0.5]);
    y.sum().backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![0.0, 1.0, 0.0, 1.0, 0.0, 0.0]);
    assert_eq!(lo.grad().unwrap().to_vec(), vec![2.0]); // x = −2 and x = −1 are below −0.5
    assert_eq!(hi.grad().unwrap().to_vec(), vec![0.0, 1.0, 1.0]); // 3 > 2, 4 > 3

    // Only a min: x where x ≥ min, min where x < min.
    let x = t(&[1.0, -1.0], &[2]).requires_grad();
    let lo = t(&[1.0, 0.0], &[2]).requires_grad();
    x.clamp_tensor(Some(&lo), None).sum().backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![1.0, 0.0]);
    assert_eq!(lo.grad().unwrap().to_vec(), vec![0.0, 1.0]);
}

#[test]
#[should_panic(expected = "clamp_tensor: shapes [2, 3] and [2] cannot be broadcast together")]
fn clamp_tensor_shape_error_names_op_and_shapes() {
    let _ = Tensor::<f64>::zeros(&[2, 3]).clamp_tensor(Some(&Tensor::zeros(&[2])), None);
}

/// Naive two-pass variance over the axes of a `[a, b, c]` tensor given as a mask.
fn naive_var(x: &[f64], dims: [usize; 3], reduce: [bool; 3], correction: f64) -> Vec<f64> {
    let [a, b, c] = dims;
    let od = [if reduce[0] { 1 } else { a }, if reduce[1] { 1 } else { b }, if reduce[2] { 1 } else { c }];
    let mut out = Vec::new();
    for i in 0..od[0] {
        for j in 0..od[1] {
            for k in 0..od[2] {
                let mut vals = Vec::new();
                for p in 0..a {
                    for q in 0..b {
                        for r in 0..c {
                            if (reduce[0] || p == i) && (reduce[1] || q == j) && (reduce[2] || r == k) {
                                vals.push(x[(p * b + q) * c + r]);
                            }
                        }
                    }
                }
                let n = vals.len() as f64;
                let m = vals.iter().sum::<f64>() / n;
                out.push(vals.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - correction));
            }
        }
    }
    out
}

#[test]
fn var_and_std_match_naive_over_axis_sets() {
    let dims = [2, 3, 4];
    let x: Vec<f64> = (0..24).map(|i| ((i * 7) % 11) as f64 * 0.3 - 1.0 + (i as f64 * 0.01)).collect();
    let xt = t(&x, &dims);
    for reduce in [[true, false, false], [false, true, true], [true, false, true], [true, true, true]] {
        let axes: Vec<isize> = (0..3).filter(|&d| reduce[d]).map(|d| d as isize).collect();
        for correction in [0.0, 1.0] {
            let want = naive_var(&x, dims, reduce, correction);
            let v = xt.var(&axes, correction, true);
            let keep: Vec<usize> = (0..3).map(|d| if reduce[d] { 1 } else { dims[d] }).collect();
            assert_eq!(v.shape(), &keep[..]);
            close(v.data(), &want, 1e-13, &format!("var {axes:?} c={correction}"));
            let s = xt.std(&axes, correction, false);
            let drop: Vec<usize> = (0..3).filter(|&d| !reduce[d]).map(|d| dims[d]).collect();
            assert_eq!(s.shape(), &drop[..]);
            close(s.data(), &want.iter().map(|v| v.sqrt()).collect::<Vec<_>>(), 1e-13, "std");
        }
    }
    // An empty axis list reduces everything (PyTorch's dim=None).
    assert_eq!(xt.var(&[], 1, false).shape(), &[] as &[usize]);
    close(&[xt.var(&[], 1, false).item()], &naive_var(&x, dims, [true; 3], 1.0), 1e-13, "var all");
}

#[test]
fn std_at_zero_variance_has_zero_gradient_as_in_pytorch() {
    let x = t(&[2.0, 2.0, 2.0, 1.0, 3.0, 5.0], &[2, 3]).requires_grad();
    let s = x.std(&[1], 1, false);
    assert_eq!(s.to_vec(), vec![0.0, 2.0]);
    let g = grad(&[&s.sum()], &[&x], None, GradOptions::create_graph()).unwrap();
    // Row 0 has zero spread: gradient 0 (not NaN). Row 1: (x − mean)/((N − 1)·std) = (x − 3)/4.
    close(g[0].data(), &[0.0, 0.0, 0.0, -0.5, 0.0, 0.5], 1e-15, "dstd");
    // The recorded gradient is itself differentiable and finite at the zero-spread row.
    let h = grad(&[&g[0].square().sum()], &[&x], None, GradOptions::default()).unwrap();
    assert!(h[0].all_finite(), "{:?}", h[0]);
}

#[test]
fn var_with_no_degrees_of_freedom_divides_by_zero_as_pytorch() {
    // N − correction ≤ 0: the divisor is max(N − correction, 0) = 0.
    assert!(t(&[1.0, 2.0], &[2]).var(&[], 2, false).item().is_infinite());
    assert!(t(&[3.0], &[1]).var(&[], 1, false).item().is_nan());
    // Population variance of one element is 0.
    assert_eq!(t(&[3.0], &[1]).var(&[], 0, false).item(), 0.0);
}

#[test]
fn cumsum_gradient_is_the_reversed_cumsum() {
    let x = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).requires_grad();
    let w = t(&[1.0, 10.0, 100.0, 1.0, 10.0, 100.0], &[2, 3]);
    x.cumsum(-1).mul(&w).sum().backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![111.0, 110.0, 100.0, 111.0, 110.0, 100.0]);
    let x = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]).requires_grad();
    x.cumsum(0).sum().backward();
    assert_eq!(x.grad().unwrap().to_vec(), vec![3.0, 3.0, 2.0, 2.0, 1.0, 1.0]);
}
