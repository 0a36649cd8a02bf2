//! SIMD elementary functions on `wide` vectors (`f32x8`, `f64x4`), written once, generically,
//! over the small [`SimdVec`] trait, with per-type polynomial coefficients.
//!
//! Algorithms (Cephes / fdlibm / SLEEF style):
//!
//! * `exp`: `n = round(x·log₂e)`, `r = x − n·ln2` (Cody–Waite split with FMA), `eʳ − 1` by a
//!   Taylor polynomial (degree 8 for f32, 13 for f64; |r| ≤ ln2/2), then `2ⁿ·(1+p)` applied as
//!   two exact power-of-two multiplies so subnormal results are rounded once and large
//!   arguments overflow to `+∞`. `x` is clamped first so out-of-range inputs give `0`/`+∞`.
//! * `expm1` (internal, for `tanh`): same reduction, `2ⁿ·p + (2ⁿ − 1)`, no cancellation.
//! * `ln`: fdlibm: `x = 2ᵏ·m`, `m ∈ [√½, √2)`, `s = f/(2+f)`, `R(s²)` polynomial
//!   (4 terms for f32, 7 for f64); subnormal inputs are pre-scaled.
//! * `log1p`: Goldberg's trick `u = 1+x; x·ln(u)/(u−1)` (exactly `x` when `u == 1`).
//! * `tanh`: `e = expm1(2|x|)`, `tanh|x| = e/(e+2)`, sign restored, `|x|` clamped to 20.
//! * `sigmoid`: `e = exp(−|x|)`, `σ = 1/(1+e)` or `e/(1+e)`: never overflows, never NaN for
//!   non-NaN input, subnormal outputs for very negative `x` are produced correctly.
//! * `softplus(x) = max(x,0) + log1p(exp(−|x|))`, `log_sigmoid(x) = min(x,0) − log1p(exp(−|x|))`.
//!
//! NaN inputs propagate. The measured maximum errors (tests in `kernels/tests/suite/simd_math.rs`)
//! are listed on [`crate::elementwise::Unary`]: for the f32 functions, relative error and ULPs
//! against an f64 reference over the whole finite range (worst relative error 2.05e-7, in
//! softplus/log-sigmoid; exp and ln stay under 8.1e-8); for the f64 functions, ULPs against std's
//! f64 functions, a same-precision reference (≤ 3 ULP, including std's own error), since no
//! higher-precision reference is used.

use crate::Real;
use std::ops::{Add, BitAnd, BitOr, BitXor, Div, Mul, Neg, Sub};
use wide::{f32x8, f64x4, u32x8, u64x4};

/// A SIMD vector of `LANES` elements of the scalar type `S`.
pub(crate) trait SimdVec:
    Copy
    + Send
    + Sync
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + BitAnd<Output = Self>
    + BitOr<Output = Self>
    + BitXor<Output = Self>
{
    type S: Real;
    const LANES: usize;
    // ---- per-type constants for the maths ----
    /// Clamp range for `exp` (outside it the result is exactly 0 or +∞).
    const EXP_LO: f64;
    const EXP_HI: f64;
    /// Below this `expm1` is −1 to working precision.
    const EXPM1_LO: f64;
    /// `ln 2 = LN2_HI + LN2_LO`, `LN2_HI` with trailing zero bits.
    const LN2_HI: f64;
    const LN2_LO: f64;
    /// Coefficients of `q` in `expm1(r) ≈ r + r²·q(r)` (Horner order: constant first).
    const EXPM1_POLY: &'static [f64];
    /// fdlibm `Lg1..` coefficients: `R(z) = z·poly(z)`.
    const LOG_POLY: &'static [f64];
    /// Subnormal inputs to `ln` are multiplied by `2^SUBNORMAL_SHIFT`.
    const SUBNORMAL_SHIFT: f64;
    const MIN_POSITIVE: f64;

    fn splat(x: Self::S) -> Self;
    #[inline(always)]
    fn c(x: f64) -> Self {
        Self::splat(Self::S::from_f64(x))
    }
    /// Load the first `LANES` elements of `s`.
    fn load(s: &[Self::S]) -> Self;
    /// Store into the first `LANES` elements of `s`.
    fn store(self, s: &mut [Self::S]);
    /// Load the `s.len()` elements of `s` (fewer than `LANES`: the tail of an elementwise map)
    /// into the first lanes, the other lanes 0.
    #[inline(always)]
    fn load_partial(s: &[Self::S]) -> Self {
        let mut buf = [<Self::S as Real>::ZERO; 8];
        copy_tail(&mut buf[..s.len()], s);
        Self::load(&buf)
    }
    /// Store the first `s.len()` lanes (fewer than `LANES`) into `s`.
    #[inline(always)]
    fn store_partial(self, s: &mut [Self::S]) {
        let mut buf = [<Self::S as Real>::ZERO; 8];
        self.store(&mut buf);
        let n = s.len();
        copy_tail(s, &buf[..n]);
    }
    /// `self·a + b` with one rounding.
    fn fma(self, a: Self, b: Self) -> Self;
    fn lt(self, o: Self) -> Self;
    fn le(self, o: Self) -> Self;
    fn gt(self, o: Self) -> Self;
    fn ge(self, o: Self) -> Self;
    fn eq(self, o: Self) -> Self;
    fn is_nan(self) -> Self;
    /// `mask ? t : f` lane-wise (`mask` lanes all-ones or all-zeros).
    fn select(mask: Self, t: Self, f: Self) -> Self;
    /// `max` / `min` without NaN care (return `o` if either is NaN, like `maxps`).
    fn fmax(self, o: Self) -> Self;
    fn fmin(self, o: Self) -> Self;
    fn round(self) -> Self;
    fn floor(self) -> Self;
    fn abs(self) -> Self;
    fn sqrt(self) -> Self;
    /// `2ⁿ` for integer-valued `n` with a normal result.
    fn pow2i(self) -> Self;
    /// For positive normal `x`: `(m, e)` with `x = m·2ᵉ`, `m ∈ [1, 2)`, `e` as a float.
    fn frexp1(self) -> (Self, Self);
    #[allow(dead_code)]
    fn any(self) -> bool;
    fn hsum(self) -> Self::S;
    /// The largest lane, NaN if any lane is (lanes folded in order with [`Real::max_nan`]).
    #[inline(always)]
    fn hmax(self) -> Self::S {
        let mut a = [<Self::S as Real>::ZERO; 16];
        self.store(&mut a);
        a[1..Self::LANES].iter().fold(a[0], |m, &v| m.max_nan(v))
    }
    /// The smallest lane, as [`SimdVec::hmax`].
    #[allow(dead_code)]
    #[inline(always)]
    fn hmin(self) -> Self::S {
        let mut a = [<Self::S as Real>::ZERO; 16];
        self.store(&mut a);
        a[1..Self::LANES].iter().fold(a[0], |m, &v| m.min_nan(v))
    }
}

/// The per-type constants of the maths of a SIMD type, taken from the portable type with the same
/// element type (`wide::f32x8` or `wide::f64x4`), for the AVX2 and AVX-512 types.
macro_rules! consts_of {
    ($wide:ty) => {
        const EXP_LO: f64 = <$wide as SimdVec>::EXP_LO;
        const EXP_HI: f64 = <$wide as SimdVec>::EXP_HI;
        const EXPM1_LO: f64 = <$wide as SimdVec>::EXPM1_LO;
        const LN2_HI: f64 = <$wide as SimdVec>::LN2_HI;
        const LN2_LO: f64 = <$wide as SimdVec>::LN2_LO;
        const EXPM1_POLY: &'static [f64] = <$wide as SimdVec>::EXPM1_POLY;
        const LOG_POLY: &'static [f64] = <$wide as SimdVec>::LOG_POLY;
        const SUBNORMAL_SHIFT: f64 = <$wide as SimdVec>::SUBNORMAL_SHIFT;
        const MIN_POSITIVE: f64 = <$wide as SimdVec>::MIN_POSITIVE;
    };
}
#[cfg(target_arch = "x86_64")]
pub(crate) use consts_of;

/// `dst = src` for the fewer than 8 elements of a vector tail. A plain `copy_from_slice` calls
/// `memcpy`, which for the one-element tensors of scalar graphs costs more than the arithmetic;
/// this loop has a constant trip count and is unrolled into a few conditional moves instead.
#[inline(always)]
pub(crate) fn copy_tail<S: Copy>(dst: &mut [S], src: &[S]) {
    let n = src.len();
    debug_assert!(dst.len() == n && n < 8);
    for i in 0..8 {
        if i < n {
            dst[i] = src[i];
        }
    }
}

macro_rules! impl_vec_common {
    ($v:ident, $s:ident, $n:expr) => {
        type S = $s;
        const LANES: usize = $n;
        #[inline(always)]
        fn splat(x: $s) -> Self {
            $v::splat(x)
        }
        #[inline(always)]
        fn load(s: &[$s]) -> Self {
            let a: [$s; $n] = s[..$n].try_into().unwrap();
            $v::new(a)
        }
        #[inline(always)]
        fn store(self, s: &mut [$s]) {
            s[..$n].copy_from_slice(&self.to_array());
        }
        #[inline(always)]
        fn fma(self, a: Self, b: Self) -> Self {
            self.mul_add(a, b)
        }
        #[inline(always)]
        fn lt(self, o: Self) -> Self {
            self.simd_lt(o)
        }
        #[inline(always)]
        fn le(self, o: Self) -> Self {
            self.simd_le(o)
        }
        #[inline(always)]
        fn gt(self, o: Self) -> Self {
            self.simd_gt(o)
        }
        #[inline(always)]
        fn ge(self, o: Self) -> Self {
            self.simd_ge(o)
        }
        #[inline(always)]
        fn eq(self, o: Self) -> Self {
            self.simd_eq(o)
        }
        #[inline(always)]
        fn is_nan(self) -> Self {
            self.simd_ne(self)
        }
        #[inline(always)]
        fn select(mask: Self, t: Self, f: Self) -> Self {
            mask.select(t, f)
        }
        #[inline(always)]
        fn fmax(self, o: Self) -> Self {
            self.fast_max(o)
        }
        #[inline(always)]
        fn fmin(self, o: Self) -> Self {
            self.fast_min(o)
        }
        #[inline(always)]
        fn round(self) -> Self {
            self.round_ties_even()
        }
        #[inline(always)]
        fn floor(self) -> Self {
            $v::floor(self)
        }
        #[inline(always)]
        fn abs(self) -> Self {
            $v::abs(self)
        }
        #[inline(always)]
        fn sqrt(self) -> Self {
            $v::sqrt(self)
        }
        #[inline(always)]
        fn any(self) -> bool {
            $v::any(self)
        }
        #[inline(always)]
        fn hsum(self) -> $s {
            self.reduce_add()
        }
    };
}

impl SimdVec for f32x8 {
    impl_vec_common!(f32x8, f32, 8);
    const EXP_LO: f64 = -104.0;
    const EXP_HI: f64 = 89.0;
    const EXPM1_LO: f64 = -18.0;
    const LN2_HI: f64 = 6.9313812256e-01; // musl logf split: 16 significant bits
    const LN2_LO: f64 = 9.0580006145e-06;
    const EXPM1_POLY: &'static [f64] = &[
        1.0 / 2.0,
        1.0 / 6.0,
        1.0 / 24.0,
        1.0 / 120.0,
        1.0 / 720.0,
        1.0 / 5040.0,
        1.0 / 40320.0,
    ];
    const LOG_POLY: &'static [f64] = &[0.66666662693, 0.40000972152, 0.28498786688, 0.24279078841];
    const SUBNORMAL_SHIFT: f64 = 25.0;
    const MIN_POSITIVE: f64 = f32::MIN_POSITIVE as f64;
    #[inline(always)]
    fn pow2i(self) -> Self {
        let a = self + f32x8::splat(127.0 + 8388608.0);
        f32x8::from_bits(a.to_bits() << 23)
    }
    #[inline(always)]
    fn frexp1(self) -> (Self, Self) {
        let b = self.to_bits();
        let e = f32x8::from_bits((b >> 23) | u32x8::splat(0x4B00_0000)) - f32x8::splat(8388608.0 + 127.0);
        let m = f32x8::from_bits((b & u32x8::splat(0x007F_FFFF)) | u32x8::splat(0x3F80_0000));
        (m, e)
    }
}

impl SimdVec for f64x4 {
    impl_vec_common!(f64x4, f64, 4);
    const EXP_LO: f64 = -746.0;
    const EXP_HI: f64 = 710.0;
    const EXPM1_LO: f64 = -40.0;
    const LN2_HI: f64 = 6.93147180369123816490e-01; // fdlibm split: 32 significant bits
    const LN2_LO: f64 = 1.90821492927058770002e-10;
    const EXPM1_POLY: &'static [f64] = &[
        1.0 / 2.0,
        1.0 / 6.0,
        1.0 / 24.0,
        1.0 / 120.0,
        1.0 / 720.0,
        1.0 / 5040.0,
        1.0 / 40320.0,
        1.0 / 362880.0,
        1.0 / 3628800.0,
        1.0 / 39916800.0,
        1.0 / 479001600.0,
        1.0 / 6227020800.0,
    ];
    const LOG_POLY: &'static [f64] = &[
        6.666666666666735130e-01,
        3.999999999940941908e-01,
        2.857142874366239149e-01,
        2.222219843214978396e-01,
        1.818357216161805012e-01,
        1.531383769920937332e-01,
        1.479819860511658591e-01,
    ];
    const SUBNORMAL_SHIFT: f64 = 54.0;
    const MIN_POSITIVE: f64 = f64::MIN_POSITIVE;
    #[inline(always)]
    fn pow2i(self) -> Self {
        let a = self + f64x4::splat(1023.0 + 4503599627370496.0);
        f64x4::from_bits(a.to_bits() << 52)
    }
    #[inline(always)]
    fn frexp1(self) -> (Self, Self) {
        let b = self.to_bits();
        let e = f64x4::from_bits((b >> 52) | u64x4::splat(0x4330_0000_0000_0000)) - f64x4::splat(4503599627370496.0 + 1023.0);
        let m = f64x4::from_bits((b & u64x4::splat(0x000F_FFFF_FFFF_FFFF)) | u64x4::splat(0x3FF0_0000_0000_0000));
        (m, e)
    }
}

/// Horner evaluation `c[0] + x·(c[1] + x·(…))` with FMAs.
#[inline(always)]
fn poly<V: SimdVec>(x: V, c: &[f64]) -> V {
    let mut acc = V::c(c[c.len() - 1]);
    for k in (0..c.len() - 1).rev() {
        acc = acc.fma(x, V::c(c[k]));
    }
    acc
}

/// Range reduction shared by exp and expm1: returns `(n, p)` with `x = n·ln2 + r`,
/// `p ≈ eʳ − 1`. `x` must already be clamped to a finite range.
#[inline(always)]
fn exp_reduce<V: SimdVec>(x: V) -> (V, V) {
    let n = (x * V::c(std::f64::consts::LOG2_E)).round();
    let r = (-n).fma(V::c(V::LN2_HI), x);
    let r = (-n).fma(V::c(V::LN2_LO), r);
    let p = (r * r).fma(poly(r, V::EXPM1_POLY), r);
    (n, p)
}

/// `eˣ`.
#[inline(always)]
pub(crate) fn exp<V: SimdVec>(x: V) -> V {
    let xc = x.fmax(V::c(V::EXP_LO)).fmin(V::c(V::EXP_HI));
    let (n, p) = exp_reduce(xc);
    // 2ⁿ = 2^n1 · 2^n2 with both factors normal, so subnormal results round once.
    let n1 = (n * V::c(0.5)).floor();
    let n2 = n - n1;
    let s1 = n1.pow2i();
    let s2 = n2.pow2i();
    let y = p.fma(s1, s1) * s2;
    V::select(x.is_nan(), x, y)
}

/// `eˣ − 1` for `x ≤ 64` (callers guarantee the bound; larger inputs are clamped to 64).
#[inline(always)]
pub(crate) fn expm1_bounded<V: SimdVec>(x: V) -> V {
    let xc = x.fmax(V::c(V::EXPM1_LO)).fmin(V::c(64.0));
    let (n, p) = exp_reduce(xc);
    let s = n.pow2i();
    let y = p.fma(s, s - V::c(1.0));
    V::select(x.is_nan(), x, y)
}

/// Natural logarithm.
#[inline(always)]
pub(crate) fn ln<V: SimdVec>(x: V) -> V {
    let tiny = x.lt(V::c(V::MIN_POSITIVE));
    let xs = V::select(tiny, x * V::c(2f64.powf(V::SUBNORMAL_SHIFT)), x);
    let (m, e) = xs.frexp1();
    let e = V::select(tiny, e - V::c(V::SUBNORMAL_SHIFT), e);
    let big = m.gt(V::c(std::f64::consts::SQRT_2));
    let m = V::select(big, m * V::c(0.5), m);
    let e = V::select(big, e + V::c(1.0), e);
    let f = m - V::c(1.0);
    let s = f / (f + V::c(2.0));
    let z = s * s;
    let r = z * poly(z, V::LOG_POLY);
    let hfsq = V::c(0.5) * f * f;
    let y = e * V::c(V::LN2_HI) - ((hfsq - s.fma(hfsq + r, e * V::c(V::LN2_LO))) - f);
    // Special cases: 0 → −∞, negative → NaN, +∞ → +∞, NaN → NaN.
    let y = V::select(x.eq(V::c(0.0)), V::c(f64::NEG_INFINITY), y);
    let y = V::select(x.lt(V::c(0.0)), V::c(f64::NAN), y);
    let y = V::select(x.eq(V::c(f64::INFINITY)), x, y);
    V::select(x.is_nan(), x, y)
}

/// `ln(1 + x)`, accurate for small `|x|`.
#[inline(always)]
pub(crate) fn log1p<V: SimdVec>(x: V) -> V {
    let u = x + V::c(1.0);
    let d = u - V::c(1.0);
    let y = ln(u) * (x / d);
    let y = V::select(d.eq(V::c(0.0)), x, y);
    V::select(x.eq(V::c(f64::INFINITY)), x, y)
}

/// Copy the sign bit of `s` onto the non-negative `m`.
#[inline(always)]
fn with_sign_of<V: SimdVec>(m: V, s: V) -> V {
    m | (s & V::c(-0.0))
}

/// Hyperbolic tangent.
#[inline(always)]
pub(crate) fn tanh<V: SimdVec>(x: V) -> V {
    let a = x.abs().fmin(V::c(20.0));
    let e = expm1_bounded(a + a);
    let t = e / (e + V::c(2.0));
    let y = with_sign_of(t, x);
    V::select(x.is_nan(), x, y)
}

/// Logistic function `1/(1+e⁻ˣ)`.
#[inline(always)]
pub(crate) fn sigmoid<V: SimdVec>(x: V) -> V {
    let e = exp(-x.abs());
    let t = V::c(1.0) / (V::c(1.0) + e);
    V::select(x.ge(V::c(0.0)), t, e * t)
}

/// `ln(1 + eˣ)` without overflow.
#[inline(always)]
pub(crate) fn softplus<V: SimdVec>(x: V) -> V {
    let l = log1p(exp(-x.abs()));
    let y = x.fmax(V::c(0.0)) + l;
    V::select(x.is_nan(), x, y)
}

/// `ln σ(x) = −softplus(−x)`.
#[inline(always)]
pub(crate) fn log_sigmoid<V: SimdVec>(x: V) -> V {
    let l = log1p(exp(-x.abs()));
    let y = x.fmin(V::c(0.0)) - l;
    V::select(x.is_nan(), x, y)
}

/// `max` propagating NaN from either side; ties (including ±0) return `a`, like [`Real::max_nan`].
#[inline(always)]
pub(crate) fn max_nan<V: SimdVec>(a: V, b: V) -> V {
    let r = V::select(a.ge(b), a, b);
    V::select(a.is_nan(), a, r)
}

/// `min` propagating NaN from either side; ties return `a`.
#[inline(always)]
pub(crate) fn min_nan<V: SimdVec>(a: V, b: V) -> V {
    let r = V::select(a.le(b), a, b);
    V::select(a.is_nan(), a, r)
}
