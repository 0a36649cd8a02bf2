//! Elementwise kernels vs naive float64 references, both dtypes, random lengths (including 0,
//! 1 and non-multiples of the vector width), large lengths (threaded path), special values and
//! bad arguments.
//!
//! The threaded cases run inside an explicit 2-thread rayon pool ([`common::in_pool`]): the
//! kernels only split when the current pool has more than one thread, which the global pool of a
//! one-core runner does not.

use crate::common;

use chi_kernels::elementwise::*;
use common::{in_pool, XorShift};
use chi_kernels::Real;
use proptest::prelude::*;

/// `a·b + y` as the kernels' vector multiply-add computes it on the current SIMD level: one
/// rounding where it is fused (AVX2+FMA), two on the portable level of plain x86-64.
fn madd<T: Real>(a: T, b: T, y: T) -> T {
    if !chi_kernels::simd::fused_multiply_add() {
        return a * b + y;
    }
    let any = |v: &T| -> Box<dyn std::any::Any> { Box::new(*v) };
    match (any(&a).downcast::<f32>(), any(&b).downcast::<f32>(), any(&y).downcast::<f32>()) {
        (Ok(a), Ok(b), Ok(y)) => T::from_f64(a.mul_add(*b, *y) as f64),
        _ => T::from_f64(a.to_f64().mul_add(b.to_f64(), y.to_f64())),
    }
}

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
    for op in Unary::ALL {
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
    // 1M + 3 elements: in the 2-thread pool this goes through the rayon split; the results must
    // equal, bit for bit, those of a 1-thread pool and the per-element SIMD result computed on a
    // short slice (position- and thread-independent), and be close to the f64 reference.
    let n = (1 << 20) + 3;
    let x: Vec<f32> = (0..n).map(|i| ((i as f32) * 0.001).sin() * 20.0).collect();
    for op in [Unary::Exp, Unary::Tanh, Unary::Sigmoid, Unary::Relu, Unary::Softplus] {
        let mut y = vec![0f32; n];
        in_pool(2, || unary(op, &x, &mut y));
        let mut y1 = vec![0f32; n];
        in_pool(1, || unary(op, &x, &mut y1));
        assert!(y.iter().zip(&y1).all(|(a, b)| a.to_bits() == b.to_bits()), "{}: 2 threads differ from 1", op.name());
        for i in (0..n).step_by(9973).chain([n - 1, n - 2]) {
            let mut one = [0f32];
            unary(op, &x[i..i + 1], &mut one);
            assert_eq!(y[i].to_bits(), one[0].to_bits(), "{} at {i}", op.name());
            let want = op.apply(x[i] as f64);
            assert!(close(y[i] as f64, want, tol::<f32>()), "{} at {i}: x={} got {} want {want}", op.name(), x[i], y[i]);
        }
    }
    let b: Vec<f32> = x.iter().map(|v| v * 0.5).collect();
    let mut out = vec![0f32; n];
    in_pool(2, || binary(Binary::Add, &x, &b, &mut out));
    assert!(out.iter().zip(&x).all(|(o, v)| *o == v + v * 0.5));
    let mut y = b.clone();
    in_pool(2, || axpy(2.0, &x, &mut y));
    assert!(y.iter().zip(&x).zip(&b).all(|((y, x), b)| *y == x.mul_add(2.0, *b)));
    // mul_acc through the split: every element is one vector multiply-add (lanes and tails).
    let mut y = b.clone();
    in_pool(2, || mul_acc(&x, &b, &mut y));
    for i in 0..n {
        assert_eq!(y[i].to_bits(), madd(x[i], b[i], b[i]).to_bits(), "mul_acc at {i}");
        let (p, bi) = (x[i] as f64 * b[i] as f64, b[i] as f64);
        assert!((y[i] as f64 - (p + bi)).abs() <= f32::EPSILON as f64 * (p.abs() + bi.abs()) + 1e-30, "mul_acc at {i} vs f64");
    }
}

/// `mul_acc`'s vector lanes use the level's multiply-add (an f32 / f64 FMA on AVX2: one rounding of
/// `a·b + y`). Its tail must round the same way, or an element's value would depend on whether it
/// falls in a full vector or in the tail (i.e. on the slice length and the thread split). `expect`
/// of a trap is the fused result, asserted where the multiply-add is fused.
fn check_mul_acc_position_independent<T: Real>(n: usize, traps: &[(usize, f64, f64, f64, f64)]) {
    let mut r = XorShift::new(0x2545_f491_4f6c_dd1d);
    let mut rnd = || r.uniform(-2.0, 2.0);
    let mut a: Vec<T> = (0..n).map(|_| T::from_f64(rnd())).collect();
    let mut b: Vec<T> = (0..n).map(|_| T::from_f64(rnd())).collect();
    let mut y0: Vec<T> = (0..n).map(|_| T::from_f64(rnd())).collect();
    for &(i, ai, bi, yi, _) in traps {
        (a[i], b[i], y0[i]) = (T::from_f64(ai), T::from_f64(bi), T::from_f64(yi));
    }
    let mut full = y0.clone();
    mul_acc(&a, &b, &mut full);
    for i in 0..n {
        // Element i is the last of a length-(i+1) call, so it lies in the scalar tail unless
        // i + 1 is a multiple of the vector width; in the length-n call it is mostly in a vector.
        let mut short = y0[..=i].to_vec();
        mul_acc(&a[..=i], &b[..=i], &mut short);
        assert_eq!(short[i].to_f64().to_bits(), full[i].to_f64().to_bits(), "{} mul_acc element {i}: length {} vs {n}", T::NAME, i + 1);
        let (p, yi) = (a[i].to_f64() * b[i].to_f64(), y0[i].to_f64());
        let want = p + yi;
        // One rounding of T, plus the f64 reference's own (tiny next to T::EPSILON for f32; for
        // f64 the product and the sum each round once, hence the scale |a·b| + |y|).
        let tol = T::EPSILON.to_f64() * (p.abs() + yi.abs()) + 1e-300;
        assert!((full[i].to_f64() - want).abs() <= tol, "{} mul_acc element {i}: {} vs f64 {want}", T::NAME, full[i]);
    }
    for &(i, ai, bi, yi, expect) in traps {
        let want = madd(T::from_f64(ai), T::from_f64(bi), T::from_f64(yi)).to_f64();
        assert_eq!(full[i].to_f64(), want, "{} mul_acc trap at {i}", T::NAME);
        if chi_kernels::simd::fused_multiply_add() {
            assert_eq!(full[i].to_f64(), expect, "{} mul_acc trap at {i} (fused)", T::NAME);
        } else {
            assert_ne!(want, expect, "{} mul_acc trap at {i}: the unfused result should differ", T::NAME);
        }
    }
}

#[test]
fn mul_acc_tail_rounds_like_the_lanes() {
    // A double-rounding trap for f32: a = b = 1 + 2⁻¹², y = 2⁻⁶⁰. Exactly, a·b + y =
    // 1 + 2⁻¹¹ + 2⁻²⁴ + 2⁻⁶⁰, just above the midpoint 1 + 2⁻¹¹ + 2⁻²⁴ between two f32 values, so
    // one rounding (FMA) gives 1 + 2⁻¹¹ + 2⁻²³. Rounding first to f64 lands exactly on the
    // midpoint (2⁻⁶⁰ is below half an f64 ULP), and ties-to-even then gives 1 + 2⁻¹¹.
    let t = 1.0 + 2f64.powi(-12);
    let fused = 1.0 + 2f64.powi(-11) + 2f64.powi(-23);
    let y = 2f64.powi(-60);
    // n = 37: vectors of 8 cover 0..32, the tail 32..37. Traps at positions that are in a vector
    // in the full call (3, 17) and in the tail of it (35); all are in the tail of a short call.
    check_mul_acc_position_independent::<f32>(37, &[(3, t, t, y, fused), (17, t, t, y, fused), (35, t, t, y, fused)]);
    // f64: vectors of 4; the tail was already one f64 rounding, checked all the same.
    check_mul_acc_position_independent::<f64>(23, &[]);
    for n in [1, 7, 8, 9, 16] {
        check_mul_acc_position_independent::<f32>(n, &[]);
        check_mul_acc_position_independent::<f64>(n, &[]);
    }
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
    fn broadcast_matches_reference(shape in prop::collection::vec(1usize..6, 1..5), mask_a in any::<u8>(), mask_b in any::<u8>(), op_i in 0usize..BINARY.len()) {
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
        // Pow (not commutative, like Sub and Div, so a swapped scalar side shows) gets positive
        // bases, where it is defined, and exponents in [-2, 2.5] so that no f32 result overflows.
        let (a, b): (Vec<f64>, Vec<f64>) = if op == Binary::Pow {
            ((0..na).map(|i| 0.25 + i as f64 * 0.7).collect(), (0..nb).map(|i| -2.0 + (i % 10) as f64 * 0.5).collect())
        } else {
            ((0..na).map(|i| i as f64 * 0.7 - 3.0).collect(), (0..nb).map(|i| 1.5 + i as f64 * 0.3).collect())
        };
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
    // 300K elements in the 2-thread pool: rows are split across the threads.
    in_pool(2, || binary_broadcast(Binary::Add, &a, &[c, 1], &b, &[0, 1], &mut out, &[r, c]));
    for i in 0..r {
        for j in 0..c {
            assert_eq!(out[i * c + j], (i * c + j) as f32 - j as f32);
        }
    }
}

/// `add_rows_inplace` against `binary_broadcast` (bit for bit) and the f64 sums, both element
/// types, row lengths 1…17 and 1000 (vector tails), 0–5 rows and a matrix large enough to split
/// across the 2-thread pool by whole rows.
#[test]
fn add_rows_inplace_equals_broadcast_add() {
    fn check<T: Real>(m: usize, n: usize, threads: usize) {
        let a: Vec<T> = (0..m * n).map(|i| T::from_f64(((i as f64) * 0.37).sin() * 7.0)).collect();
        let row: Vec<T> = (0..n).map(|j| T::from_f64(((j as f64) * 1.3).cos() * 3.0)).collect();
        let mut want = vec![T::ZERO; m * n];
        binary_broadcast(Binary::Add, &a, &[n, 1], &row, &[0, 1], &mut want, &[m, n]);
        let mut got = a.clone();
        in_pool(threads, || add_rows_inplace(&mut got, &row));
        for i in 0..m * n {
            assert_eq!(got[i].to_f64().to_bits(), want[i].to_f64().to_bits(), "{} {m}×{n}, {threads} threads, at {i}", T::NAME);
            assert!(close(got[i].to_f64(), a[i].to_f64() + row[i % n].to_f64(), tol::<T>()));
        }
    }
    for n in (1..=17).chain([1000]) {
        for m in 0..=5 {
            check::<f32>(m, n, 1);
            check::<f64>(m, n, 1);
        }
    }
    check::<f32>(701, 997, 2);
    check::<f64>(300, 1000, 2);
    check::<f32>(3, 1 << 19, 2);
    // No rows, and an empty row over an empty matrix.
    add_rows_inplace::<f32>(&mut [], &[1.0, 2.0]);
    add_rows_inplace::<f64>(&mut [], &[]);
}

#[test]
#[should_panic(expected = "add_rows_inplace: a matrix of 7 values does not split into rows of 3")]
fn add_rows_inplace_rejects_a_partial_row() {
    add_rows_inplace(&mut [0f32; 7], &[1.0; 3]);
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
#[should_panic(expected = "unary_backward_inplace: length mismatch: g has 3 elements, expected 2")]
fn backward_inplace_len_mismatch() {
    chi_kernels::elementwise::unary_backward_inplace(Unary::Tanh, &[1f32; 2], &[1f32; 2], &mut [1f32; 3]);
}

#[test]
#[should_panic(expected = "axpy: length mismatch: y has 5 elements, expected 4")]
fn axpy_len_mismatch() {
    axpy(1.0, &[1f32; 4], &mut [0f32; 5]);
}

#[test]
#[should_panic(expected = "axpby: length mismatch: y has 3 elements, expected 4")]
fn axpby_len_mismatch() {
    axpby(1.0, &[1f64; 4], 2.0, &mut [0f64; 3]);
}

#[test]
#[should_panic(expected = "mul_acc: length mismatch: y has 3 elements, expected 4")]
fn mul_acc_len_mismatch() {
    mul_acc(&[1f32; 4], &[1f32; 4], &mut [0f32; 3]);
}

#[test]
#[should_panic(expected = "binary_broadcast: input b has 2 elements")]
fn broadcast_short_input() {
    binary_broadcast(Binary::Add, &[1f32; 6], &[3, 1], &[1f32; 2], &[0, 1], &mut [0f32; 6], &[2, 3]);
}

/// `Unary::ALL` holds every kind exactly once: the match gives each kind an index, so a new kind
/// does not compile here until it has one, and the test fails until `ALL` lists it.
#[test]
fn unary_all_lists_every_kind_once() {
    let index = |u: &Unary| match u {
        Unary::Neg => 0,
        Unary::Abs => 1,
        Unary::Exp => 2,
        Unary::Log => 3,
        Unary::Log1p => 4,
        Unary::Sqrt => 5,
        Unary::Tanh => 6,
        Unary::Sigmoid => 7,
        Unary::Relu => 8,
        Unary::LeakyRelu(_) => 9,
        Unary::Softplus => 10,
        Unary::LogSigmoid => 11,
    };
    let mut seen: Vec<usize> = Unary::ALL.iter().map(index).collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..12).collect::<Vec<_>>());
}
