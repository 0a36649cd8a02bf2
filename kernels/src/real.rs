//! The [`Real`] trait: what a kernel needs to know about its element type (`f32` or `f64`).

use std::fmt::{Debug, Display};
use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

/// A floating-point element type the kernels support: `f32` or `f64`.
///
/// Scalar methods mirror `std`'s so naive reference code reads like the maths. The SIMD paths
/// live in the kernel modules; this trait only carries what every path needs.
pub trait Real:
    Copy
    + Send
    + Sync
    + 'static
    + Default
    + Debug
    + Display
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
{
    /// `"f32"` or `"f64"`, for messages and benchmark labels.
    const NAME: &'static str;
    /// Additive identity.
    const ZERO: Self;
    /// Multiplicative identity.
    const ONE: Self;
    /// Machine epsilon.
    const EPSILON: Self;
    /// Positive infinity.
    const INFINITY: Self;
    /// Negative infinity.
    const NEG_INFINITY: Self;
    /// Lossy conversion from `f64` (rounds to nearest for `f32`).
    fn from_f64(x: f64) -> Self;
    /// Exact conversion to `f64`.
    fn to_f64(self) -> f64;
    /// Conversion from a count.
    fn from_usize(n: usize) -> Self {
        Self::from_f64(n as f64)
    }
    /// `eˣ`
    fn exp(self) -> Self;
    /// natural log
    fn ln(self) -> Self;
    /// `ln(1+x)`
    fn ln_1p(self) -> Self;
    /// `eˣ − 1`
    fn exp_m1(self) -> Self;
    /// square root
    fn sqrt(self) -> Self;
    /// hyperbolic tangent
    fn tanh(self) -> Self;
    /// absolute value
    fn abs(self) -> Self;
    /// power
    fn powf(self, e: Self) -> Self;
    /// neither infinite nor NaN
    fn is_finite(self) -> bool;
    /// NaN test
    fn is_nan(self) -> bool;
    /// `max` that propagates NaN from either side (unlike `f32::max`, which drops it).
    fn max_nan(self, other: Self) -> Self {
        if self.is_nan() || other.is_nan() {
            Self::from_f64(f64::NAN)
        } else if self >= other {
            self
        } else {
            other
        }
    }
    /// `min` that propagates NaN from either side.
    fn min_nan(self, other: Self) -> Self {
        if self.is_nan() || other.is_nan() {
            Self::from_f64(f64::NAN)
        } else if self <= other {
            self
        } else {
            other
        }
    }
}

macro_rules! impl_real {
    ($t:ident) => {
        impl Real for $t {
            const NAME: &'static str = stringify!($t);
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const EPSILON: Self = $t::EPSILON;
            const INFINITY: Self = $t::INFINITY;
            const NEG_INFINITY: Self = $t::NEG_INFINITY;
            #[inline(always)]
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn exp(self) -> Self {
                $t::exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                $t::ln(self)
            }
            #[inline(always)]
            fn ln_1p(self) -> Self {
                $t::ln_1p(self)
            }
            #[inline(always)]
            fn exp_m1(self) -> Self {
                $t::exp_m1(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                $t::sqrt(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                $t::tanh(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                $t::abs(self)
            }
            #[inline(always)]
            fn powf(self, e: Self) -> Self {
                $t::powf(self, e)
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                $t::is_finite(self)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                $t::is_nan(self)
            }
        }
    };
}
impl_real!(f32);
impl_real!(f64);
