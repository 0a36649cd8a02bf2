//! Elementwise functions computed in this crate rather than by a SIMD kernel of
//! `chi_kernels::elementwise`: `sin`, `cos`, `erf`, `gelu` (exact and tanh forms), `silu`, and the
//! small arithmetic helpers `square`, `recip` and `rsub_scalar`, each recorded as one node under
//! its method's name.
//!
//! Forward and first-order backward are plain loops over slices. The transcendental ones go
//! through `f64` (exact for `f64`, correctly rounded back for `f32`); `square`, `recip` and
//! `rsub_scalar` stay in the element type so LLVM can vectorise them. When a graph is being
//! recorded (`create_graph`), each backward rule is written with differentiable ops instead, so it
//! can be differentiated again (to any order).

use crate::ops::Op;
use crate::tape::record;
use crate::tensor::Tensor;
use crate::Float;
use std::f64::consts::{FRAC_1_SQRT_2, FRAC_2_SQRT_PI, PI};
use std::panic::Location;

/// `√(2/π)`, the scale inside the tanh approximation of GELU.
const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;
/// The cubic coefficient of the tanh approximation of GELU.
const GELU_TANH_C: f64 = 0.044_715;
/// `1/√(2π)`, the normal density's constant.
const INV_SQRT_2PI: f64 = 0.398_942_280_401_432_7;

/// An elementwise function computed by [`crate::ops::pointwise`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pointwise {
    /// `sin x`
    Sin,
    /// `cos x`
    Cos,
    /// The error function `erf x = 2/√π ∫₀ˣ e^{−t²} dt`.
    Erf,
    /// Exact GELU `x·Φ(x)`, `Φ` the standard normal CDF.
    Gelu,
    /// GELU's tanh approximation `½x(1 + tanh(√(2/π)(x + 0.044715x³)))`.
    GeluTanh,
    /// SiLU (swish) `x·σ(x)`.
    Silu,
    /// `x²`
    Square,
    /// `1/x`
    Recip,
    /// `s − x` for a constant `s`.
    Rsub(f64),
}

impl Pointwise {
    /// The name of the method that records it.
    pub fn name(&self) -> &'static str {
        match self {
            Pointwise::Sin => "sin",
            Pointwise::Cos => "cos",
            Pointwise::Erf => "erf",
            Pointwise::Gelu => "gelu",
            Pointwise::GeluTanh => "gelu_tanh",
            Pointwise::Silu => "silu",
            Pointwise::Square => "square",
            Pointwise::Recip => "recip",
            Pointwise::Rsub(_) => "rsub_scalar",
        }
    }

    /// The function at one point, in `f64`.
    pub fn apply(self, x: f64) -> f64 {
        match self {
            Pointwise::Sin => x.sin(),
            Pointwise::Cos => x.cos(),
            Pointwise::Erf => erf(x),
            Pointwise::Gelu => 0.5 * x * erfc(-x * FRAC_1_SQRT_2),
            Pointwise::GeluTanh => 0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + GELU_TANH_C * x * x * x)).tanh()),
            Pointwise::Silu => x * sigmoid(x),
            Pointwise::Square => x * x,
            Pointwise::Recip => 1.0 / x,
            Pointwise::Rsub(s) => s - x,
        }
    }

    /// The derivative at one point, in `f64`, given the input `x` and the output `y`.
    pub fn derivative(self, x: f64, y: f64) -> f64 {
        match self {
            Pointwise::Sin => x.cos(),
            Pointwise::Cos => -x.sin(),
            Pointwise::Erf => FRAC_2_SQRT_PI * (-x * x).exp(),
            Pointwise::Gelu => 0.5 * erfc(-x * FRAC_1_SQRT_2) + x * INV_SQRT_2PI * (-0.5 * x * x).exp(),
            Pointwise::GeluTanh => {
                let t = (SQRT_2_OVER_PI * (x + GELU_TANH_C * x * x * x)).tanh();
                0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * SQRT_2_OVER_PI * (1.0 + 3.0 * GELU_TANH_C * x * x)
            }
            Pointwise::Silu => {
                let s = sigmoid(x);
                s * (1.0 + x * (1.0 - s))
            }
            Pointwise::Square => 2.0 * x,
            Pointwise::Recip => -y * y,
            Pointwise::Rsub(_) => -1.0,
        }
    }
}

/// Logistic sigmoid, stable for large |x|.
fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// Where the error function switches from its power series to the continued fraction of erfc.
const ERF_SPLIT: f64 = 2.5;

/// The error function, to a few ulp in `f64`.
///
/// For `|x| < 2.5` the power series `erf x = 2/√π·e^{−x²}·Σₙ 2ⁿx^{2n+1}/(1·3·…·(2n+1))`, whose
/// terms all have the sign of `x` (no cancellation; at most ~40 terms); beyond, `1 − erfc|x|` with
/// erfc from its continued fraction.
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    if a < ERF_SPLIT {
        let x2 = x * x;
        let (mut term, mut sum) = (x, x);
        for n in 1..100 {
            term *= 2.0 * x2 / (2 * n + 1) as f64;
            sum += term;
            if term.abs() <= sum.abs() * 1e-17 {
                break;
            }
        }
        sum * FRAC_2_SQRT_PI * (-x2).exp()
    } else {
        (1.0 - erfc_tail(a)).copysign(x)
    }
}

/// The complementary error function `1 − erf x`, accurate in relative terms in the right tail
/// (where `1 − erf x` would cancel).
pub fn erfc(x: f64) -> f64 {
    if x >= ERF_SPLIT {
        erfc_tail(x)
    } else {
        1.0 - erf(x)
    }
}

/// `erfc x` for `x ≥ 2.5` from Laplace's continued fraction
/// `erfc x = e^{−x²}/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …))))`, evaluated bottom-up at a
/// depth that reaches `f64` precision at `x = 2.5` (and more than enough beyond).
fn erfc_tail(x: f64) -> f64 {
    if x == f64::INFINITY {
        return 0.0;
    }
    let mut t = x;
    for k in (1..=48).rev() {
        t = x + (k as f64 * 0.5) / t;
    }
    (-x * x).exp() / (PI.sqrt() * t)
}

/// `out[i] = f(x[i])` over slices (a loop LLVM vectorises when `f` is plain arithmetic).
#[inline(always)]
fn map<T: Float>(x: &[T], f: impl Fn(T) -> T) -> crate::pool::Buf<T> {
    let mut out = crate::pool::zeros(x.len());
    out.iter_mut().zip(x).for_each(|(o, &v)| *o = f(v));
    out
}

fn forward<T: Float>(f: Pointwise, x: &[T]) -> crate::pool::Buf<T> {
    match f {
        Pointwise::Square => map(x, |v| v * v),
        Pointwise::Recip => map(x, |v| T::ONE / v),
        Pointwise::Rsub(s) => {
            let s = T::from_f64(s);
            map(x, |v| s - v)
        }
        _ => map(x, |v| T::from_f64(f.apply(v.to_f64()))),
    }
}

impl<T: Float> Tensor<T> {
    #[track_caller]
    pub(crate) fn pointwise(&self, f: Pointwise) -> Tensor<T> {
        let loc = Location::caller();
        let out = forward(f, &self.data);
        record(out, self.shape, &[self], loc, |o| Op::Pointwise { f, x: self.clone(), out: o.clone() })
    }
    /// `sin x` (radians).
    #[track_caller]
    pub fn sin(&self) -> Tensor<T> {
        self.pointwise(Pointwise::Sin)
    }
    /// `cos x` (radians).
    #[track_caller]
    pub fn cos(&self) -> Tensor<T> {
        self.pointwise(Pointwise::Cos)
    }
    /// The error function `erf x = 2/√π ∫₀ˣ e^{−t²} dt`; derivative `2/√π·e^{−x²}`.
    #[track_caller]
    pub fn erf(&self) -> Tensor<T> {
        self.pointwise(Pointwise::Erf)
    }
    /// GELU, exact form (PyTorch's `gelu(x, approximate="none")`): `x·Φ(x)` with `Φ` the standard
    /// normal CDF, computed as `½x·erfc(−x/√2)` so the left tail keeps its relative precision.
    /// Smooth everywhere; derivative `Φ(x) + x·φ(x)`.
    ///
    /// ```
    /// use chi_autodiff::Tensor;
    /// let y = Tensor::<f64>::from_vec(vec![0.0, 1.0], &[2]).gelu();
    /// assert!((y.data()[1] - 0.841_344_746_068_542_9).abs() < 1e-15); // Φ(1)
    /// ```
    #[track_caller]
    pub fn gelu(&self) -> Tensor<T> {
        self.pointwise(Pointwise::Gelu)
    }
    /// GELU, tanh approximation (PyTorch's `gelu(x, approximate="tanh")`):
    /// `½x(1 + tanh(√(2/π)(x + 0.044715x³)))`. Smooth everywhere.
    #[track_caller]
    pub fn gelu_tanh(&self) -> Tensor<T> {
        self.pointwise(Pointwise::GeluTanh)
    }
    /// SiLU / swish, `x·σ(x)`. Smooth everywhere; derivative `σ(x)(1 + x(1 − σ(x)))`.
    #[track_caller]
    pub fn silu(&self) -> Tensor<T> {
        self.pointwise(Pointwise::Silu)
    }
    /// `self²`.
    #[track_caller]
    pub fn square(&self) -> Tensor<T> {
        self.pointwise(Pointwise::Square)
    }
    /// `1 / self` (`±inf` at 0, as IEEE division).
    #[track_caller]
    pub fn recip(&self) -> Tensor<T> {
        self.pointwise(Pointwise::Recip)
    }
    /// `s − self`.
    #[track_caller]
    pub fn rsub_scalar(&self, s: impl Into<f64>) -> Tensor<T> {
        self.pointwise(Pointwise::Rsub(s.into()))
    }
}

/// `dx = g ⊙ f'(x)`.
pub(crate) fn pointwise_backward<T: Float>(f: Pointwise, x: &Tensor<T>, out: &Tensor<T>, g: &Tensor<T>, fast: bool) -> Tensor<T> {
    if fast {
        let dx: Vec<T> = match f {
            Pointwise::Square => x.data.iter().zip(g.data.iter()).map(|(&v, &gi)| gi * (v + v)).collect(),
            Pointwise::Recip => out.data.iter().zip(g.data.iter()).map(|(&y, &gi)| -(gi * y * y)).collect(),
            Pointwise::Rsub(_) => g.data.iter().map(|&gi| -gi).collect(),
            _ => x
                .data
                .iter()
                .zip(out.data.iter())
                .zip(g.data.iter())
                .map(|((&v, &y), &gi)| gi * T::from_f64(f.derivative(v.to_f64(), y.to_f64())))
                .collect(),
        };
        return Tensor::from_vec(dx, x.shape());
    }
    // Differentiable forms, each the derivative above written with recorded ops.
    match f {
        Pointwise::Sin => g.mul(&x.cos()),
        Pointwise::Cos => g.mul(&x.sin()).neg(),
        Pointwise::Erf => g.mul(&x.square().neg().exp().mul_scalar(FRAC_2_SQRT_PI)),
        Pointwise::Gelu => {
            let cdf = x.mul_scalar(FRAC_1_SQRT_2).erf().add_scalar(1.0).mul_scalar(0.5);
            let pdf = x.square().mul_scalar(-0.5).exp().mul_scalar(INV_SQRT_2PI);
            g.mul(&cdf.add(&x.mul(&pdf)))
        }
        Pointwise::GeluTanh => {
            let x2 = x.square();
            let t = x.add(&x2.mul(x).mul_scalar(GELU_TANH_C)).mul_scalar(SQRT_2_OVER_PI).tanh();
            let outer = t.add_scalar(1.0).mul_scalar(0.5);
            let inner = x.mul(&t.square().rsub_scalar(1.0)).mul(&x2.mul_scalar(3.0 * GELU_TANH_C).add_scalar(1.0));
            g.mul(&outer.add(&inner.mul_scalar(0.5 * SQRT_2_OVER_PI)))
        }
        Pointwise::Silu => {
            let s = x.sigmoid();
            g.mul(&s.mul(&x.mul(&s.rsub_scalar(1.0)).add_scalar(1.0)))
        }
        Pointwise::Square => g.mul(x).mul_scalar(2.0),
        Pointwise::Recip => g.mul(&out.square()).neg(),
        Pointwise::Rsub(_) => g.neg(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values of erf and erfc from an independent implementation (CPython's `math.erf`).
    #[test]
    fn erf_matches_reference_values() {
        let cases = [
            (0.1, 0.112_462_916_018_284_9),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (2.4999, 0.999_592_830_099_666_6),
        ];
        for (x, want) in cases {
            assert!((erf(x) - want).abs() < 5e-16, "erf({x}) = {} vs {want}", erf(x));
            assert!((erf(-x) + want).abs() < 5e-16);
        }
        // The tail, relative: erfc(3) = 2.209049699858544e-5, erfc(5) = 1.5374597944280351e-12.
        assert!((erfc(3.0) / 2.209_049_699_858_544e-5 - 1.0).abs() < 1e-14);
        assert!((erfc(5.0) / 1.537_459_794_428_035_1e-12 - 1.0).abs() < 1e-13);
        assert_eq!(erf(0.0), 0.0);
        assert_eq!(erf(f64::INFINITY), 1.0);
        assert_eq!(erf(f64::NEG_INFINITY), -1.0);
        assert!(erf(f64::NAN).is_nan());
        assert_eq!(erfc(f64::INFINITY), 0.0);
        assert_eq!(erfc(f64::NEG_INFINITY), 2.0);
    }

    /// erf is continuous across the switch from series to continued fraction.
    #[test]
    fn erf_is_continuous_at_the_split() {
        let below = erf(ERF_SPLIT - 1e-12);
        let at = erf(ERF_SPLIT);
        assert!((at - below).abs() < 1e-14, "{below} vs {at}");
    }
}
