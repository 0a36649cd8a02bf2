//! Elementwise kernels vs naive float64 references, both dtypes, random lengths (including 0,
//! 1 and non-multiples of the vector width), large lengths (threaded path), special values and
//! bad arguments.

use chi_kernels::elementwise::*;
use chi_kernels::Real;
use proptest::prelude::*;

const UNARY: [Unary; 12] = [
    Unary::Neg,
    Unary::Abs,
    Unary::Exp,
    Unary::Log,
    Unary::Log1p,
    Unary::Sqrt,
    Unary::Tanh,
    Unary::Sigmoid,
    Unary::Relu,
    Unary::LeakyRelu(0.01),
    Unary::Softplus,
    Unary::LogSigmoid,
];
const BINARY: [Binary; 7] = [Binary::Add, Binary::Sub, Binary::Mul, Binary::Div, Binary::Max, Binary::Min, Binary::Pow];

/// Relative closeness with an absolute floor, NaN == NaN, equal infinities.
fn close(got: f64, want: f64, rel: f64) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    if want.is_infinite() || got.is_infinite() {
        return got == want;
    }
    (got - want).abs() <= rel * want.abs().max(1e-30) + 1e-300
}

fn tol<T: Real>() -> f64 {
    if T::NAME == "f32" {
        4e-6
    } else {
        1e-14
    }
}

/// Input suitable for op (positive for log/sqrt, > -1 for log1p).
fn domain(op: Unary, x: f64) -> f64 {
    match op {
        Unary::Log | Unary::Sqrt => x.abs() + 1e-3,
        Unary::Log1p => x.abs() - 0.999,
        _ => x,
    }
}

fn check_unary<T: Real>(xs: &[f64]) {
    for op in UNARY {
        let x: Vec<T> = xs.iter().map(|&v| T::from_f64(domain(op, v))).collect();
        let mut y = vec![T::ZERO; x.len()];
        unary(op, &x, &mut y);
        let mut z = x.clone();
        unary_inplace(op, &mut z);
        for i in 0..x.len() {
            let want = op.apply(x[i].to_f64());
            assert!(close(y[i].to_f64(), want, tol::<T>()), "{} {}: x={} got {} want {want}", T::NAME, op.name(), x[i], y[i]);
            assert!(y[i].to_f64().to_bits() == z[i].to_f64().to_bits() || (y[i].is_nan() && z[i].is_nan()), "inplace differs");
        }
        // backward: dx = g·f'(x)
        let g: Vec<T> = (0..x.len()).map(|i| T::from_f64(0.5 + (i % 7) as f64 * 0.25)).collect();
        let mut dx = vec![T::ZERO; x.len()];
        unary_backward(op, &x, &y, &g, &mut dx);
        for i in 0..x.len() {
            let xf = x[i].to_f64();
            let want = g[i].to_f64() * op.derivative(xf, op.apply(xf));
            // derivative from the rounded y: allow a few ULPs of y's precision relative to scale
            let slack = if T::NAME == "f32" { 1e-5 } else { 1e-12 };
            assert!(
                close(dx[i].to_f64(), want, slack) || (dx[i].to_f64() - want).abs() < slack * g[i].to_f64(),
                "{} {} backward: x={xf} got {} want {want}",
                T::NAME,
                op.name(),
                dx[i]
            );
        }
    }
}

fn check_binary<T: Real>(a: &[f64], b: &[f64]) {
    for op in BINARY {
        let (a2, b2): (Vec<T>, Vec<T>) = a
            .iter()
            .zip(b)
            .map(|(&x, &y)| match op {
                Binary::Pow => (T::from_f64(x.abs() + 0.1), T::from_f64(y / 10.0)),
                Binary::Div => (T::from_f64(x), T::from_f64(if y.abs() < 1e-3 { 1.0 } else { y })),
                _ => (T::from_f64(x), T::from_f64(y)),
            })
            .unzip();
        let mut out = vec![T::ZERO; a2.len()];
        binary(op, &a2, &b2, &mut out);
        let mut inpl = a2.clone();
        binary_inplace(op, &mut inpl, &b2);
        let s = b2.first().copied().unwrap_or(T::ONE);
        let mut outs = vec![T::ZERO; a2.len()];
        binary_scalar(op, &a2, s, &mut outs);
        for i in 0..a2.len() {
            let want = op.apply(a2[i].to_f64(), b2[i].to_f64());
            assert!(close(out[i].to_f64(), want, tol::<T>()), "{} {}: got {} want {want}", T::NAME, op.name(), out[i]);
            assert_eq!(out[i].to_f64().to_bits(), inpl[i].to_f64().to_bits());
            let want_s = op.apply(a2[i].to_f64(), s.to_f64());
            assert!(close(outs[i].to_f64(), want_s, tol::<T>()), "{} {} scalar", T::NAME, op.name());
        }
    }
    // fused helpers
    let x: Vec<T> = a.iter().map(|&v| T::from_f64(v)).collect();
    let y0: Vec<T> = b.iter().map(|&v| T::from_f64(v)).collect();
    let mut y = y0.clone();
    axpy(T::from_f64(0.75), &x, &mut y);
    let mut z = y0.clone();
    axpby(T::from_f64(0.75), &x, T::from_f64(-2.0), &mut z);
    let mut w = y0.clone();
    mul_acc(&x, &x, &mut w);
    let mut sc = x.clone();
    scale(T::from_f64(3.0), &mut sc);
    for i in 0..x.len() {
        let (xf, yf) = (x[i].to_f64(), y0[i].to_f64());
        let t = tol::<T>() * (1.0 + xf.abs() + yf.abs());
        assert!((y[i].to_f64() - (yf + 0.75 * xf)).abs() <= t, "axpy");
        assert!((z[i].to_f64() - (0.75 * xf - 2.0 * yf)).abs() <= 3.0 * t, "axpby");
        assert!((w[i].to_f64() - (yf + xf * xf)).abs() <= t * (1.0 + xf.abs()), "mul_acc");
        assert!((sc[i].to_f64() - 3.0 * xf).abs() <= t, "scale");
    }
    let mut f = x.clone();
    fill(T::from_f64(2.5), &mut f);
    assert!(f.iter().all(|&v| v.to_f64() == 2.5));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn unary_matches_reference(xs in prop::collection::vec(-30.0f64..30.0, 0..70)) {
        check_unary::<f32>(&xs);
        check_unary::<f64>(&xs);
    }
    #[test]
    fn binary_matches_reference(ab in prop::collection::vec((-50.0f64..50.0, -50.0f64..50.0), 0..70)) {
        let (a, b): (Vec<f64>, Vec<f64>) = ab.into_iter().unzip();
        check_binary::<f32>(&a, &b);
        check_binary::<f64>(&a, &b);
    }
}

#[test]
fn small_lengths_exhaustive() {
    for n in 0..=17 {
        let xs: Vec<f64> = (0..n).map(|i| (i as f64 - 8.0) * 1.37).collect();
        check_unary::<f32>(&xs);
        check_unary::<f64>(&xs);
        check_binary::<f32>(&xs, &xs.iter().map(|v| v * 0.5 - 1.0).collect::<Vec<_>>());
        check_binary::<f64>(&xs, &xs.iter().map(|v| v * 0.5 - 1.0).collect::<Vec<_>>());
    }
}

#[test]
fn large_threaded_matches_serial_bitwise() {
    // 1M + 3 elements: goes through the rayon split; results must equal the per-element SIMD
    // result computed on a short slice (position- and thread-independent).
    let n = (1 << 20) + 3;
    let x: Vec<f32> = (0..n).map(|i| ((i as f32) * 0.001).sin() * 20.0).collect();
    for op in [Unary::Exp, Unary::Tanh, Unary::Sigmoid, Unary::Relu, Unary::Softplus] {
        let mut y = vec![0f32; n];
        unary(op, &x, &mut y);
        for i in (0..n).step_by(9973).chain([n - 1, n - 2]) {
            let mut one = [0f32];
            unary(op, &x[i..i + 1], &mut one);
            assert_eq!(y[i].to_bits(), one[0].to_bits(), "{} at {i}", op.name());
        }
    }
    let b: Vec<f32> = x.iter().map(|v| v * 0.5).collect();
    let mut out = vec![0f32; n];
    binary(Binary::Add, &x, &b, &mut out);
    assert!(out.iter().zip(&x).all(|(o, v)| *o == v + v * 0.5));
    let mut y = b.clone();
    axpy(2.0, &x, &mut y);
    assert!(y.iter().zip(&x).zip(&b).all(|((y, x), b)| *y == x.mul_add(2.0, *b)));
}

#[test]
fn special_values() {
    let nan = f64::NAN;
    let inf = f64::INFINITY;
    let x = [nan, inf, -inf, 0.0, -0.0, 1e300, -1e300, 5e-324];
    let run = |op: Unary| {
        let mut y = [0.0; 8];
        unary(op, &x, &mut y);
        y
    };
    let e = run(Unary::Exp);
    assert!(e[0].is_nan() && e[1] == inf && e[2] == 0.0 && e[3] == 1.0 && e[5] == inf && e[6] == 0.0);
    let t = run(Unary::Tanh);
    assert!(t[0].is_nan() && t[1] == 1.0 && t[2] == -1.0 && t[3] == 0.0 && t[4].to_bits() == (-0.0f64).to_bits() && t[5] == 1.0 && t[6] == -1.0 && t[7] == 5e-324);
    let s = run(Unary::Sigmoid);
    assert!(s[0].is_nan() && s[1] == 1.0 && s[2] == 0.0 && s[3] == 0.5 && s[5] == 1.0 && s[6] == 0.0);
    let l = run(Unary::Log);
    assert!(l[0].is_nan() && l[1] == inf && l[2].is_nan() && l[3] == -inf && l[4] == -inf);
    let sp = run(Unary::Softplus);
    assert!(sp[0].is_nan() && sp[1] == inf && sp[2] == 0.0 && sp[5] == 1e300 && sp[6] == 0.0);
    let ls = run(Unary::LogSigmoid);
    assert!(ls[0].is_nan() && ls[1] == 0.0 && ls[2] == -inf && ls[6] == -1e300);
    let r = run(Unary::Relu);
    assert!(r[0].is_nan() && r[1] == inf && r[2] == 0.0);
    // f32 saturation, never NaN
    let xf = [100f32, -100.0, 1e30, -1e30, 89.0, -104.0];
    let mut yf = [0f32; 6];
    unary(Unary::Sigmoid, &xf, &mut yf);
    assert_eq!(yf, [1.0, 0.0 + (-100f64).exp() as f32, 1.0, 0.0, 1.0, (-104f64).exp() as f32]);
    unary(Unary::Exp, &xf, &mut yf);
    assert_eq!(&yf[..4], &[f32::INFINITY, (-100f64).exp() as f32, f32::INFINITY, 0.0]);
    // Max/Min propagate NaN from either side
    let a = [nan, 1.0, 2.0];
    let b = [1.0, nan, 1.0];
    let mut o = [0.0; 3];
    binary(Binary::Max, &a, &b, &mut o);
    assert!(o[0].is_nan() && o[1].is_nan() && o[2] == 2.0);
    binary(Binary::Min, &a, &b, &mut o);
    assert!(o[0].is_nan() && o[1].is_nan() && o[2] == 1.0);
}

/// Reference for binary_broadcast.
fn bcast_ref(op: Binary, a: &[f64], sa: &[usize], b: &[f64], sb: &[usize], shape: &[usize]) -> Vec<f64> {
    let n: usize = shape.iter().product();
    let mut out = vec![0.0; n];
    for (flat, o) in out.iter_mut().enumerate() {
        let mut rem = flat;
        let (mut oa, mut ob) = (0, 0);
        for d in (0..shape.len()).rev() {
            let i = rem % shape[d];
            rem /= shape[d];
            oa += i * sa[d];
            ob += i * sb[d];
        }
        *o = op.apply(a[oa], b[ob]);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn broadcast_matches_reference(shape in prop::collection::vec(1usize..6, 1..5), mask_a in any::<u8>(), mask_b in any::<u8>(), op_i in 0usize..6) {
        let op = BINARY[op_i];
        let strides = |mask: u8| -> (Vec<usize>, usize) {
            // stride-0 on axes whose bit is set, contiguous over the rest
            let mut st = vec![0; shape.len()];
            let mut s = 1;
            for d in (0..shape.len()).rev() {
                if mask >> d & 1 == 0 { st[d] = s; s *= shape[d]; }
            }
            (st, s)
        };
        let (sa, na) = strides(mask_a);
        let (sb, nb) = strides(mask_b);
        let a: Vec<f64> = (0..na).map(|i| i as f64 * 0.7 - 3.0).collect();
        let b: Vec<f64> = (0..nb).map(|i| 1.5 + i as f64 * 0.3).collect();
        let want = bcast_ref(op, &a, &sa, &b, &sb, &shape);
        let mut out = vec![0.0; want.len()];
        binary_broadcast(op, &a, &sa, &b, &sb, &mut out, &shape);
        for (g, w) in out.iter().zip(&want) { prop_assert!(close(*g, *w, 1e-15)); }
        let a32: Vec<f32> = a.iter().map(|&v| v as f32).collect();
        let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
        let mut out32 = vec![0f32; want.len()];
        binary_broadcast(op, &a32, &sa, &b32, &sb, &mut out32, &shape);
        let a32f: Vec<f64> = a32.iter().map(|&v| v as f64).collect();
        let b32f: Vec<f64> = b32.iter().map(|&v| v as f64).collect();
        let want32 = bcast_ref(op, &a32f, &sa, &b32f, &sb, &shape);
        for (g, w) in out32.iter().zip(&want32) { prop_assert!(close(*g as f64, *w, 1e-6)); }
    }
}

#[test]
fn broadcast_large_bias_add() {
    let (r, c) = (300, 1000);
    let a: Vec<f32> = (0..r * c).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..c).map(|i| -(i as f32)).collect();
    let mut out = vec![0f32; r * c];
    binary_broadcast(Binary::Add, &a, &[c, 1], &b, &[0, 1], &mut out, &[r, c]);
    for i in 0..r {
        for j in 0..c {
            assert_eq!(out[i * c + j], (i * c + j) as f32 - j as f32);
        }
    }
}

#[test]
#[should_panic(expected = "exp: length mismatch: output has 3 elements, expected 4")]
fn unary_len_mismatch() {
    unary(Unary::Exp, &[1f32; 4], &mut [0f32; 3]);
}

#[test]
#[should_panic(expected = "add: length mismatch: b has 2 elements, expected 3")]
fn binary_len_mismatch() {
    binary(Binary::Add, &[1f64; 3], &[1f64; 2], &mut [0f64; 3]);
}

#[test]
#[should_panic(expected = "unary_backward: length mismatch: g has 1 elements, expected 2")]
fn backward_len_mismatch() {
    unary_backward(Unary::Tanh, &[1f32; 2], &[1f32; 2], &[1f32; 1], &mut [0f32; 2]);
}

#[test]
#[should_panic(expected = "axpby: length mismatch: y has 5 elements, expected 4")]
fn axpy_len_mismatch() {
    axpy(1.0, &[1f32; 4], &mut [0f32; 5]);
}

#[test]
#[should_panic(expected = "binary_broadcast: input b has 2 elements")]
fn broadcast_short_input() {
    binary_broadcast(Binary::Add, &[1f32; 6], &[3, 1], &[1f32; 2], &[0, 1], &mut [0f32; 6], &[2, 3]);
}
