//! AVX-512F vector types (`__m512` / `__m512d`) implementing [`SimdVec`], for the AVX-512 copies
//! of the kernels whose lanes are independent (see [`crate::simd`]).
//!
//! Every method is `#[inline(always)]` and calls `core::arch` intrinsics, which can only be
//! inlined into code compiled with AVX-512F enabled: these types must only be used inside
//! [`crate::simd::run_avx512`] (the dispatch macro does that), never on a CPU without AVX-512F.
//! The semantics match the AVX2 types method for method — ordered comparisons, unordered `!=`
//! for NaN tests, `max`/`min` returning the second operand when either is NaN, negation by
//! flipping the sign bit, the multiply-add always fused — so a lane computes the same bits at
//! either width. AVX-512 compares produce mask registers; the trait's masks are vectors (lanes
//! all ones or all zeros, as `blendv` reads them), so compares widen a mask into a vector and
//! `select` reads the lanes' sign bits back, as `blendv` does. Only AVX-512F instructions are
//! used (no DQ/BW/VL), so every AVX-512 CPU runs them.

#![allow(clippy::undocumented_unsafe_blocks)]

use crate::simd_math::SimdVec;
use std::arch::x86_64::*;
use std::ops::{Add, BitAnd, BitOr, BitXor, Div, Mul, Neg, Sub};

/// Sixteen f32 lanes in a ZMM register.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct F32x16(__m512);

/// Eight f64 lanes in a ZMM register.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct F64x8(__m512d);

// SAFETY (for every `unsafe` block in this file): the intrinsics need AVX-512F, which the CPU has
// because these types are only instantiated inside `run_avx512` after detection (module docs);
// full loads and stores go through slices whose length is checked first, and the masked ones
// (tails) touch only the lanes the mask selects, which lie inside the slice.

macro_rules! arith {
    ($ty:ident, $tr:ident, $f:ident, $intr:ident) => {
        impl $tr for $ty {
            type Output = $ty;
            #[inline(always)]
            fn $f(self, o: $ty) -> $ty {
                $ty(unsafe { $intr(self.0, o.0) })
            }
        }
    };
}

/// Bitwise operations go through the integer view (the float forms need AVX-512DQ).
macro_rules! bits {
    ($ty:ident, $tr:ident, $f:ident, $intr:ident, $to:ident, $from:ident) => {
        impl $tr for $ty {
            type Output = $ty;
            #[inline(always)]
            fn $f(self, o: $ty) -> $ty {
                $ty(unsafe { $from($intr($to(self.0), $to(o.0))) })
            }
        }
    };
}

macro_rules! common {
    ($ty:ident, $s:ident, $n:expr, $mask:ty, $set1:ident, $loadu:ident, $storeu:ident, $maskz_loadu:ident, $mask_storeu:ident,
     $fmadd:ident, $cmp:ident, $blend:ident, $max:ident, $min:ident, $roundscale:ident, $sqrt:ident, $to:ident, $from:ident,
     $maskz_set1:ident, $ones:expr, $cmplt_int:ident, $wide:ty, $narrow:ty) => {
        bits!($ty, BitAnd, bitand, _mm512_and_si512, $to, $from);
        bits!($ty, BitOr, bitor, _mm512_or_si512, $to, $from);
        bits!($ty, BitXor, bitxor, _mm512_xor_si512, $to, $from);
        impl Neg for $ty {
            type Output = $ty;
            #[inline(always)]
            fn neg(self) -> $ty {
                self ^ $ty(unsafe { $set1(-0.0) })
            }
        }
        impl $ty {
            /// A compare's mask register as a vector mask (all-ones lanes where set).
            #[inline(always)]
            fn from_mask(k: $mask) -> $ty {
                $ty(unsafe { $from($maskz_set1(k, $ones)) })
            }
            /// The lanes whose sign bit is set (how `blendv` and `movemask` read a mask).
            #[inline(always)]
            fn sign_mask(self) -> $mask {
                unsafe { $cmplt_int($to(self.0), _mm512_setzero_si512()) }
            }
            #[inline(always)]
            fn to_array(self) -> [$s; $n] {
                let mut a = [0.0 as $s; $n];
                unsafe { $storeu(a.as_mut_ptr(), self.0) };
                a
            }
            /// The mask of the first `n < LANES` lanes.
            #[inline(always)]
            fn tail(n: usize) -> $mask {
                assert!(n < $n);
                ((1u32 << n) - 1) as $mask
            }
        }
        impl SimdVec for $ty {
            type S = $s;
            const LANES: usize = $n;
            crate::simd_math::consts_of!($wide);
            #[inline(always)]
            fn hsum(self) -> $s {
                // Halves added, then the 256-bit type's association.
                let a = self.to_array();
                let lo = <$narrow as SimdVec>::load(&a[..$n / 2]);
                let hi = <$narrow as SimdVec>::load(&a[$n / 2..]);
                (lo + hi).hsum()
            }
            #[inline(always)]
            fn pow2i(self) -> Self {
                self.pow2i_()
            }
            #[inline(always)]
            fn frexp1(self) -> (Self, Self) {
                self.frexp1_()
            }
            #[inline(always)]
            fn splat(x: $s) -> Self {
                $ty(unsafe { $set1(x) })
            }
            #[inline(always)]
            fn load(s: &[$s]) -> Self {
                let s = &s[..$n];
                $ty(unsafe { $loadu(s.as_ptr()) })
            }
            #[inline(always)]
            fn store(self, s: &mut [$s]) {
                let s = &mut s[..$n];
                unsafe { $storeu(s.as_mut_ptr(), self.0) }
            }
            #[inline(always)]
            fn load_partial(s: &[$s]) -> Self {
                let k = Self::tail(s.len());
                $ty(unsafe { $maskz_loadu(k, s.as_ptr()) })
            }
            #[inline(always)]
            fn store_partial(self, s: &mut [$s]) {
                let k = Self::tail(s.len());
                unsafe { $mask_storeu(s.as_mut_ptr(), k, self.0) }
            }
            #[inline(always)]
            fn fma(self, a: Self, b: Self) -> Self {
                $ty(unsafe { $fmadd(self.0, a.0, b.0) })
            }
            #[inline(always)]
            fn lt(self, o: Self) -> Self {
                Self::from_mask(unsafe { $cmp::<_CMP_LT_OQ>(self.0, o.0) })
            }
            #[inline(always)]
            fn le(self, o: Self) -> Self {
                Self::from_mask(unsafe { $cmp::<_CMP_LE_OQ>(self.0, o.0) })
            }
            #[inline(always)]
            fn gt(self, o: Self) -> Self {
                Self::from_mask(unsafe { $cmp::<_CMP_GT_OQ>(self.0, o.0) })
            }
            #[inline(always)]
            fn ge(self, o: Self) -> Self {
                Self::from_mask(unsafe { $cmp::<_CMP_GE_OQ>(self.0, o.0) })
            }
            #[inline(always)]
            fn eq(self, o: Self) -> Self {
                Self::from_mask(unsafe { $cmp::<_CMP_EQ_OQ>(self.0, o.0) })
            }
            #[inline(always)]
            fn is_nan(self) -> Self {
                Self::from_mask(unsafe { $cmp::<_CMP_UNORD_Q>(self.0, self.0) })
            }
            #[inline(always)]
            fn select(mask: Self, t: Self, f: Self) -> Self {
                $ty(unsafe { $blend(mask.sign_mask(), f.0, t.0) })
            }
            #[inline(always)]
            fn fmax(self, o: Self) -> Self {
                $ty(unsafe { $max(self.0, o.0) })
            }
            #[inline(always)]
            fn fmin(self, o: Self) -> Self {
                $ty(unsafe { $min(self.0, o.0) })
            }
            #[inline(always)]
            fn round(self) -> Self {
                $ty(unsafe { $roundscale::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(self.0) })
            }
            #[inline(always)]
            fn floor(self) -> Self {
                $ty(unsafe { $roundscale::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(self.0) })
            }
            #[inline(always)]
            fn abs(self) -> Self {
                $ty(unsafe { $from(_mm512_andnot_si512($to($set1(-0.0)), $to(self.0))) })
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                $ty(unsafe { $sqrt(self.0) })
            }
            #[inline(always)]
            fn any(self) -> bool {
                self.sign_mask() != 0
            }
        }
    };
}

arith!(F32x16, Add, add, _mm512_add_ps);
arith!(F32x16, Sub, sub, _mm512_sub_ps);
arith!(F32x16, Mul, mul, _mm512_mul_ps);
arith!(F32x16, Div, div, _mm512_div_ps);
common!(
    F32x16, f32, 16, __mmask16, _mm512_set1_ps, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_maskz_loadu_ps, _mm512_mask_storeu_ps,
    _mm512_fmadd_ps, _mm512_cmp_ps_mask, _mm512_mask_blend_ps, _mm512_max_ps, _mm512_min_ps, _mm512_roundscale_ps, _mm512_sqrt_ps,
    _mm512_castps_si512, _mm512_castsi512_ps, _mm512_maskz_set1_epi32, -1, _mm512_cmplt_epi32_mask, wide::f32x8,
    crate::simd_avx2::F32x8
);

arith!(F64x8, Add, add, _mm512_add_pd);
arith!(F64x8, Sub, sub, _mm512_sub_pd);
arith!(F64x8, Mul, mul, _mm512_mul_pd);
arith!(F64x8, Div, div, _mm512_div_pd);
common!(
    F64x8, f64, 8, __mmask8, _mm512_set1_pd, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_maskz_loadu_pd, _mm512_mask_storeu_pd,
    _mm512_fmadd_pd, _mm512_cmp_pd_mask, _mm512_mask_blend_pd, _mm512_max_pd, _mm512_min_pd, _mm512_roundscale_pd, _mm512_sqrt_pd,
    _mm512_castpd_si512, _mm512_castsi512_pd, _mm512_maskz_set1_epi64, -1, _mm512_cmplt_epi64_mask, wide::f64x4,
    crate::simd_avx2::F64x4
);

impl F32x16 {
    #[inline(always)]
    fn pow2i_(self) -> Self {
        unsafe {
            let a = _mm512_add_ps(self.0, _mm512_set1_ps(127.0 + 8388608.0));
            F32x16(_mm512_castsi512_ps(_mm512_slli_epi32::<23>(_mm512_castps_si512(a))))
        }
    }
    #[inline(always)]
    fn frexp1_(self) -> (Self, Self) {
        unsafe {
            let b = _mm512_castps_si512(self.0);
            let e = _mm512_or_si512(_mm512_srli_epi32::<23>(b), _mm512_set1_epi32(0x4B00_0000));
            let e = _mm512_sub_ps(_mm512_castsi512_ps(e), _mm512_set1_ps(8388608.0 + 127.0));
            let m = _mm512_or_si512(_mm512_and_si512(b, _mm512_set1_epi32(0x007F_FFFF)), _mm512_set1_epi32(0x3F80_0000));
            (F32x16(_mm512_castsi512_ps(m)), F32x16(e))
        }
    }
}

impl F64x8 {
    #[inline(always)]
    fn pow2i_(self) -> Self {
        unsafe {
            let a = _mm512_add_pd(self.0, _mm512_set1_pd(1023.0 + 4503599627370496.0));
            F64x8(_mm512_castsi512_pd(_mm512_slli_epi64::<52>(_mm512_castpd_si512(a))))
        }
    }
    #[inline(always)]
    fn frexp1_(self) -> (Self, Self) {
        unsafe {
            let b = _mm512_castpd_si512(self.0);
            let e = _mm512_or_si512(_mm512_srli_epi64::<52>(b), _mm512_set1_epi64(0x4330_0000_0000_0000));
            let e = _mm512_sub_pd(_mm512_castsi512_pd(e), _mm512_set1_pd(4503599627370496.0 + 1023.0));
            let m = _mm512_or_si512(
                _mm512_and_si512(b, _mm512_set1_epi64(0x000F_FFFF_FFFF_FFFF)),
                _mm512_set1_epi64(0x3FF0_0000_0000_0000),
            );
            (F64x8(_mm512_castsi512_pd(m)), F64x8(e))
        }
    }
}
