//! Accuracy of the SIMD elementary functions behind `unary` (exp, log, log1p, tanh, sigmoid,
//! softplus, log-sigmoid), measured in ULPs of the result type over the whole finite range.
//!
//! * f32: every 997th f32 bit pattern (≈4.3M points, all signs and exponents, subnormal inputs
//!   and outputs), plus a dense linear sweep over the interesting range, against the f64 std
//!   functions (whose own error is ~1e-16, i.e. 1e-9 f32 ULP).
//! * f64: ≈3M bit patterns evenly spaced over all 2⁶⁴ plus dense sweeps, against std f64
//!   (glibc, < 1 ULP) or, for sigmoid/softplus/log-sigmoid, the overflow-free std formulas.
//!
//! ULP = spacing of the result format at the reference value (2⁻¹⁴⁹ / 2⁻¹⁰⁷⁴ for subnormals),
//! so subnormal outputs are judged in absolute terms as they must be. The bounds asserted here
//! are the ones documented on `chi_kernels::elementwise::Unary`; run with `--nocapture` to see
//! the measured maxima.
//!
//! For f32 the *relative* error `|y − r| / |r|` against the f64 reference is measured too
//! (`relative_error_f32_whole_range`), over a denser sweep: every 251st f32 bit pattern (≈17M
//! finite inputs, every sign and exponent up to ±f32::MAX) plus the dense linear sweeps. It is
//! taken over the results that are normal f32 numbers; a subnormal result has fewer than 24
//! significant bits, so its relative error is not meaningful (it is judged in absolute ULPs
//! above), and a reference of exactly 0 or beyond ±f32::MAX must be met exactly (0, ±∞).

use chi_kernels::elementwise::{unary, Unary};

fn ulp_f32(r: f64) -> f64 {
    let a = r.abs();
    let e = if a == 0.0 { -126 } else { (a.log2().floor() as i32).max(-126) };
    2f64.powi(e - 23)
}
fn ulp_f64(r: f64) -> f64 {
    let a = r.abs();
    if a < f64::MIN_POSITIVE {
        return 2f64.powi(-1074);
    }
    let b = a.to_bits() & 0x7FF0_0000_0000_0000;
    f64::from_bits(b) * f64::EPSILON
}

/// Error of `y` against the exact-ish `r`, in ULPs of f32.
fn err_f32(y: f32, r: f64) -> f64 {
    if r.is_nan() {
        return if y.is_nan() { 0.0 } else { f64::INFINITY };
    }
    if y.is_nan() {
        return f64::INFINITY;
    }
    if y == r as f32 {
        return 0.0;
    }
    if y.is_infinite() || r.is_infinite() {
        return f64::INFINITY;
    }
    (y as f64 - r).abs() / ulp_f32(r)
}

fn err_f64(y: f64, r: f64) -> f64 {
    if r.is_nan() {
        return if y.is_nan() { 0.0 } else { f64::INFINITY };
    }
    if y.is_nan() {
        return f64::INFINITY;
    }
    if y == r {
        return 0.0;
    }
    if y.is_infinite() || r.is_infinite() {
        return f64::INFINITY;
    }
    // (y − r) exactly enough: both are f64; the difference of two nearby f64 is exact.
    (y - r).abs() / ulp_f64(r)
}

fn sigmoid64(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}
fn softplus64(x: f64) -> f64 {
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}
fn log_sigmoid64(x: f64) -> f64 {
    x.min(0.0) - (-x.abs()).exp().ln_1p()
}

fn reference(op: Unary, x: f64) -> f64 {
    match op {
        Unary::Exp => x.exp(),
        Unary::Log => x.ln(),
        Unary::Log1p => x.ln_1p(),
        Unary::Tanh => x.tanh(),
        Unary::Sigmoid => sigmoid64(x),
        Unary::Softplus => softplus64(x),
        Unary::LogSigmoid => log_sigmoid64(x),
        _ => unreachable!(),
    }
}

fn f32_points() -> Vec<f32> {
    let mut xs: Vec<f32> = (0..=u32::MAX).step_by(997).map(f32::from_bits).filter(|x| !x.is_nan()).collect();
    xs.extend(f32_sweeps());
    xs
}

/// Dense linear sweeps where the functions change fastest, and the special points.
fn f32_sweeps() -> Vec<f32> {
    let mut xs = vec![];
    // dense linear sweep over [-120, 120]
    xs.extend((0..2_000_000).map(|i| -120.0 + 240.0 * (i as f32) / 2e6));
    // dense around 0
    xs.extend((0..200_000).map(|i| -1.0 + 2.0 * (i as f32) / 2e5));
    xs.extend([0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::MAX, f32::MIN, f32::MIN_POSITIVE, 1e-45, -1e-45]);
    xs
}

fn f64_points() -> Vec<f64> {
    let step = (u64::MAX / 3_000_000) | 1;
    let mut xs: Vec<f64> = (0..=u64::MAX).step_by(step as usize).map(f64::from_bits).filter(|x| !x.is_nan()).collect();
    xs.extend((0..2_000_000).map(|i| -760.0 + 1520.0 * (i as f64) / 2e6));
    xs.extend((0..200_000).map(|i| -1.0 + 2.0 * (i as f64) / 2e5));
    xs.extend([0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::MAX, f64::MIN, f64::MIN_POSITIVE, 5e-324, -5e-324]);
    xs
}

fn max_err_f32(op: Unary, xs: &[f32]) -> (f64, f32) {
    let mut ys = vec![0f32; xs.len()];
    unary(op, xs, &mut ys);
    let mut worst = (0.0, 0.0);
    for (&x, &y) in xs.iter().zip(&ys) {
        let e = err_f32(y, reference(op, x as f64));
        if e > worst.0 || e.is_nan() {
            worst = (e, x);
        }
    }
    worst
}

fn max_err_f64(op: Unary, xs: &[f64]) -> (f64, f64) {
    let mut ys = vec![0f64; xs.len()];
    unary(op, xs, &mut ys);
    let mut worst = (0.0, 0.0);
    for (&x, &y) in xs.iter().zip(&ys) {
        let e = err_f64(y, reference(op, x));
        if e > worst.0 || e.is_nan() {
            worst = (e, x);
        }
    }
    worst
}

/// (op, max ULP for f32, max ULP for f64) — the documented bounds.
const BOUNDS: [(Unary, f64, f64); 7] = [
    (Unary::Exp, 1.0, 1.0),
    (Unary::Log, 1.0, 1.0),
    (Unary::Log1p, 2.5, 2.0),
    (Unary::Tanh, 2.5, 3.0),
    (Unary::Sigmoid, 2.5, 3.0),
    (Unary::Softplus, 2.5, 3.0),
    (Unary::LogSigmoid, 3.0, 3.0),
];

#[test]
fn accuracy_f32_whole_range() {
    let xs = f32_points();
    let mut fails = vec![];
    for (op, b32, _) in BOUNDS {
        let (e, at) = max_err_f32(op, &xs);
        println!("f32 {:<12} max error {e:.3} ULP (at x = {at:e})", op.name());
        if !(e <= b32) {
            fails.push(format!("{}: {e} ULP at {at:e} > {b32}", op.name()));
        }
    }
    assert!(fails.is_empty(), "{fails:#?}");
}

#[test]
fn accuracy_f64_whole_range() {
    let xs = f64_points();
    let mut fails = vec![];
    for (op, _, b64) in BOUNDS {
        let (e, at) = max_err_f64(op, &xs);
        println!("f64 {:<12} max error {e:.3} ULP (at x = {at:e})", op.name());
        if !(e <= b64) {
            fails.push(format!("{}: {e} ULP at {at:e} > {b64}", op.name()));
        }
    }
    assert!(fails.is_empty(), "{fails:#?}");
}

/// Max relative error over normal-f32 results, documented on `Unary` (f32 column "relative").
/// A correctly rounded f32 result already has up to 2⁻²⁴ ≈ 5.96e-8.
const REL_BOUNDS_F32: [(Unary, f64); 7] = [
    (Unary::Exp, REL_EXP),
    (Unary::Log, REL_LOG),
    (Unary::Log1p, REL_LOG1P),
    (Unary::Tanh, REL_TANH),
    (Unary::Sigmoid, REL_SIGMOID),
    (Unary::Softplus, REL_SOFTPLUS),
    (Unary::LogSigmoid, REL_LOGSIGMOID),
];
// Measured maxima (2026-11-23, Zen 5): exp 8.07e-8, log 8.01e-8, log1p 1.75e-7, tanh 1.71e-7,
// sigmoid 1.82e-7, softplus 2.05e-7, log_sigmoid 2.05e-7; the bounds leave ~10 % headroom.
const REL_EXP: f64 = 9e-8;
const REL_LOG: f64 = 9e-8;
const REL_LOG1P: f64 = 2e-7;
const REL_TANH: f64 = 2e-7;
const REL_SIGMOID: f64 = 2e-7;
const REL_SOFTPLUS: f64 = 2.2e-7;
const REL_LOGSIGMOID: f64 = 2.2e-7;

/// Worst relative error of the f32 kernel for `op` over `xs`: (error, at x, results judged,
/// subnormal results skipped). Zero and overflowing references must be met exactly, and NaN
/// (outside the domain) with NaN; a miss counts as an infinite error. Out-of-domain inputs are
/// not counted as judged.
fn max_rel_f32(op: Unary, xs: &[f32], ys: &mut [f32]) -> (f64, f32, usize, usize) {
    unary(op, xs, ys);
    let (mut worst, mut at, mut judged, mut skipped) = (0.0f64, 0.0f32, 0, 0);
    for (&x, &y) in xs.iter().zip(ys.iter()) {
        let r = reference(op, x as f64);
        let e = if r.is_nan() {
            if y.is_nan() {
                continue;
            }
            f64::INFINITY
        } else if r == 0.0 || r.abs() > f32::MAX as f64 {
            // exact zero, or an f32 overflow (incl. ±∞): the result must be that value in f32
            // (r as f32 rounds a finite r just above f32::MAX back to f32::MAX, as IEEE does)
            if y == r as f32 { 0.0 } else { f64::INFINITY }
        } else if r.abs() < f32::MIN_POSITIVE as f64 {
            skipped += 1;
            continue;
        } else if y.is_nan() {
            f64::INFINITY
        } else {
            (y as f64 - r).abs() / r.abs()
        };
        judged += 1;
        if e > worst || e.is_nan() {
            (worst, at) = (e, x);
        }
    }
    (worst, at, judged, skipped)
}

#[test]
fn relative_error_f32_whole_range() {
    // Every 251st bit pattern (all finite values of both signs, so |x| up to f32::MAX), processed
    // in pieces to bound memory, then the dense linear sweeps of `f32_points`.
    let dense: Vec<f32> = f32_sweeps().into_iter().filter(|x| x.is_finite()).collect();
    let mut fails = vec![];
    let mut ys = vec![0f32; 1 << 20];
    for (op, bound) in REL_BOUNDS_F32 {
        let (mut worst, mut at, mut judged, mut skipped) = (0.0f64, 0.0f32, 0usize, 0usize);
        let mut piece = Vec::with_capacity(1 << 20);
        let mut bits = (0..=u32::MAX).step_by(251).map(f32::from_bits).filter(|x| x.is_finite()).chain(dense.iter().copied());
        loop {
            piece.clear();
            piece.extend((&mut bits).take(1 << 20));
            if piece.is_empty() {
                break;
            }
            let (e, x, j, s) = max_rel_f32(op, &piece, &mut ys[..piece.len()]);
            judged += j;
            skipped += s;
            if e > worst || e.is_nan() {
                (worst, at) = (e, x);
            }
        }
        println!(
            "f32 {:<12} max relative error {worst:.3e} = {:.3}·2⁻²⁴ (at x = {at:e}; {judged} results judged, {skipped} subnormal skipped)",
            op.name(),
            worst / 2f64.powi(-24)
        );
        assert!(judged > 5_000_000, "{}: only {judged} points judged", op.name());
        if !(worst <= bound) {
            fails.push(format!("{}: relative error {worst:e} at {at:e} > {bound:e}", op.name()));
        }
    }
    assert!(fails.is_empty(), "{fails:#?}");
}
