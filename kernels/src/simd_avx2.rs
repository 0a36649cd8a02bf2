//! AVX2+FMA vector types (`__m256` / `__m256d`) implementing [`SimdVec`], for the kernels'
//! AVX2 copies (see [`crate::simd`]).
//!
//! Every method is `#[inline(always)]` and calls `core::arch` intrinsics, which can only be
//! inlined into code compiled with AVX2+FMA enabled: these types must only be used inside
//! [`crate::simd::run_avx2`] (the dispatch macro does that), never on a CPU without AVX2+FMA.
//! The semantics match the portable `wide` types method for method (ordered comparisons,
//! unordered `!=` for NaN tests, `max`/`min` returning the second operand when either is NaN,
//! negation by flipping the sign bit), with the multiply-add always fused.

#![allow(clippy::undocumented_unsafe_blocks)]

use crate::simd_math::SimdVec;
use std::arch::x86_64::*;
use std::ops::{Add, BitAnd, BitOr, BitXor, Div, Mul, Neg, Sub};

/// Eight f32 lanes in an AVX register.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct F32x8(__m256);

/// Four f64 lanes in an AVX register.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct F64x4(__m256d);

// SAFETY (for every `unsafe` block in this file): the intrinsics need AVX2/FMA, which the CPU has
// because these types are only instantiated inside `run_avx2` after detection (module docs); the
// loads and stores go through slices whose length is checked first.

macro_rules! binop {
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

macro_rules! common {
    ($ty:ident, $s:ident, $n:expr, $set1:ident, $loadu:ident, $storeu:ident, $fmadd:ident, $cmp:ident, $blendv:ident,
     $max:ident, $min:ident, $round:ident, $sqrt:ident, $and:ident, $andnot:ident, $movemask:ident, $xor:ident, $or:ident, $wide:ty) => {
        binop!($ty, BitAnd, bitand, $and);
        impl BitOr for $ty {
            type Output = $ty;
            #[inline(always)]
            fn bitor(self, o: $ty) -> $ty {
                $ty(unsafe { $or(self.0, o.0) })
            }
        }
        binop!($ty, BitXor, bitxor, $xor);
        impl Neg for $ty {
            type Output = $ty;
            #[inline(always)]
            fn neg(self) -> $ty {
                $ty(unsafe { $xor(self.0, $set1(-0.0)) })
            }
        }
        impl SimdVec for $ty {
            type S = $s;
            const LANES: usize = $n;
            crate::simd_math::consts_of!($wide);
            #[inline(always)]
            fn hsum(self) -> $s {
                self.hsum_()
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
                $ty::load_partial_(s)
            }
            #[inline(always)]
            fn store_partial(self, s: &mut [$s]) {
                self.store_partial_(s)
            }
            #[inline(always)]
            fn fma(self, a: Self, b: Self) -> Self {
                $ty(unsafe { $fmadd(self.0, a.0, b.0) })
            }
            #[inline(always)]
            fn lt(self, o: Self) -> Self {
                $ty(unsafe { $cmp::<_CMP_LT_OQ>(self.0, o.0) })
            }
            #[inline(always)]
            fn le(self, o: Self) -> Self {
                $ty(unsafe { $cmp::<_CMP_LE_OQ>(self.0, o.0) })
            }
            #[inline(always)]
            fn gt(self, o: Self) -> Self {
                $ty(unsafe { $cmp::<_CMP_GT_OQ>(self.0, o.0) })
            }
            #[inline(always)]
            fn ge(self, o: Self) -> Self {
                $ty(unsafe { $cmp::<_CMP_GE_OQ>(self.0, o.0) })
            }
            #[inline(always)]
            fn eq(self, o: Self) -> Self {
                $ty(unsafe { $cmp::<_CMP_EQ_OQ>(self.0, o.0) })
            }
            #[inline(always)]
            fn is_nan(self) -> Self {
                $ty(unsafe { $cmp::<_CMP_UNORD_Q>(self.0, self.0) })
            }
            #[inline(always)]
            fn select(mask: Self, t: Self, f: Self) -> Self {
                $ty(unsafe { $blendv(f.0, t.0, mask.0) })
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
                $ty(unsafe { $round::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(self.0) })
            }
            #[inline(always)]
            fn floor(self) -> Self {
                $ty(unsafe { $round::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(self.0) })
            }
            #[inline(always)]
            fn abs(self) -> Self {
                $ty(unsafe { $andnot($set1(-0.0), self.0) })
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                $ty(unsafe { $sqrt(self.0) })
            }
            #[inline(always)]
            fn any(self) -> bool {
                unsafe { $movemask(self.0) != 0 }
            }
        }
    };
}

binop!(F32x8, Add, add, _mm256_add_ps);
binop!(F32x8, Sub, sub, _mm256_sub_ps);
binop!(F32x8, Mul, mul, _mm256_mul_ps);
binop!(F32x8, Div, div, _mm256_div_ps);
common!(
    F32x8, f32, 8, _mm256_set1_ps, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_fmadd_ps, _mm256_cmp_ps, _mm256_blendv_ps,
    _mm256_max_ps, _mm256_min_ps, _mm256_round_ps, _mm256_sqrt_ps, _mm256_and_ps, _mm256_andnot_ps, _mm256_movemask_ps,
    _mm256_xor_ps, _mm256_or_ps, wide::f32x8
);

binop!(F64x4, Add, add, _mm256_add_pd);
binop!(F64x4, Sub, sub, _mm256_sub_pd);
binop!(F64x4, Mul, mul, _mm256_mul_pd);
binop!(F64x4, Div, div, _mm256_div_pd);
common!(
    F64x4, f64, 4, _mm256_set1_pd, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_fmadd_pd, _mm256_cmp_pd, _mm256_blendv_pd,
    _mm256_max_pd, _mm256_min_pd, _mm256_round_pd, _mm256_sqrt_pd, _mm256_and_pd, _mm256_andnot_pd, _mm256_movemask_pd,
    _mm256_xor_pd, _mm256_or_pd, wide::f64x4
);

/// Lane masks for the masked tail loads and stores: the 8 (f32) or 4 (f64) entries starting at
/// `LANES − n` select the first `n` lanes.
static TAIL_MASK_32: [i32; 16] = [-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0];
static TAIL_MASK_64: [i64; 8] = [-1, -1, -1, -1, 0, 0, 0, 0];

impl F32x8 {
    /// The first `n < 8` lanes from `s` (`n = s.len()`), the others 0, without a padded copy:
    /// a masked load reads only the selected lanes, so it never touches memory past the slice.
    #[inline(always)]
    fn load_partial_(s: &[f32]) -> Self {
        let n = s.len();
        assert!(n < 8);
        unsafe {
            let m = _mm256_loadu_si256(TAIL_MASK_32.as_ptr().add(8 - n) as *const __m256i);
            F32x8(_mm256_maskload_ps(s.as_ptr(), m))
        }
    }
    /// Stores the first `n = s.len() < 8` lanes into `s` (a masked store: nothing past it).
    #[inline(always)]
    fn store_partial_(self, s: &mut [f32]) {
        let n = s.len();
        assert!(n < 8);
        unsafe {
            let m = _mm256_loadu_si256(TAIL_MASK_32.as_ptr().add(8 - n) as *const __m256i);
            _mm256_maskstore_ps(s.as_mut_ptr(), m, self.0)
        }
    }
    #[inline(always)]
    fn hsum_(self) -> f32 {
        // The same association as `wide`'s AVX `reduce_add`: (lo + hi) quads, then pairs, then lanes.
        unsafe {
            let q = _mm_add_ps(_mm256_castps256_ps128(self.0), _mm256_extractf128_ps::<1>(self.0));
            let d = _mm_add_ps(q, _mm_movehl_ps(q, q));
            let s = _mm_add_ss(d, _mm_shuffle_ps::<0b01>(d, d));
            _mm_cvtss_f32(s)
        }
    }
    #[inline(always)]
    fn pow2i_(self) -> Self {
        unsafe {
            let a = _mm256_add_ps(self.0, _mm256_set1_ps(127.0 + 8388608.0));
            F32x8(_mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_castps_si256(a))))
        }
    }
    #[inline(always)]
    fn frexp1_(self) -> (Self, Self) {
        unsafe {
            let b = _mm256_castps_si256(self.0);
            let e = _mm256_or_si256(_mm256_srli_epi32::<23>(b), _mm256_set1_epi32(0x4B00_0000));
            let e = _mm256_sub_ps(_mm256_castsi256_ps(e), _mm256_set1_ps(8388608.0 + 127.0));
            let m = _mm256_or_si256(_mm256_and_si256(b, _mm256_set1_epi32(0x007F_FFFF)), _mm256_set1_epi32(0x3F80_0000));
            (F32x8(_mm256_castsi256_ps(m)), F32x8(e))
        }
    }
}

impl F64x4 {
    /// As [`F32x8::load_partial_`], for `n = s.len() < 4`.
    #[inline(always)]
    fn load_partial_(s: &[f64]) -> Self {
        let n = s.len();
        assert!(n < 4);
        unsafe {
            let m = _mm256_loadu_si256(TAIL_MASK_64.as_ptr().add(4 - n) as *const __m256i);
            F64x4(_mm256_maskload_pd(s.as_ptr(), m))
        }
    }
    /// As [`F32x8::store_partial_`], for `n = s.len() < 4`.
    #[inline(always)]
    fn store_partial_(self, s: &mut [f64]) {
        let n = s.len();
        assert!(n < 4);
        unsafe {
            let m = _mm256_loadu_si256(TAIL_MASK_64.as_ptr().add(4 - n) as *const __m256i);
            _mm256_maskstore_pd(s.as_mut_ptr(), m, self.0)
        }
    }
    #[inline(always)]
    fn hsum_(self) -> f64 {
        unsafe {
            let q = _mm_add_pd(_mm256_castpd256_pd128(self.0), _mm256_extractf128_pd::<1>(self.0));
            let s = _mm_add_sd(q, _mm_unpackhi_pd(q, q));
            _mm_cvtsd_f64(s)
        }
    }
    #[inline(always)]
    fn pow2i_(self) -> Self {
        unsafe {
            let a = _mm256_add_pd(self.0, _mm256_set1_pd(1023.0 + 4503599627370496.0));
            F64x4(_mm256_castsi256_pd(_mm256_slli_epi64::<52>(_mm256_castpd_si256(a))))
        }
    }
    #[inline(always)]
    fn frexp1_(self) -> (Self, Self) {
        unsafe {
            let b = _mm256_castpd_si256(self.0);
            let e = _mm256_or_si256(_mm256_srli_epi64::<52>(b), _mm256_set1_epi64x(0x4330_0000_0000_0000));
            let e = _mm256_sub_pd(_mm256_castsi256_pd(e), _mm256_set1_pd(4503599627370496.0 + 1023.0));
            let m = _mm256_or_si256(
                _mm256_and_si256(b, _mm256_set1_epi64x(0x000F_FFFF_FFFF_FFFF)),
                _mm256_set1_epi64x(0x3FF0_0000_0000_0000),
            );
            (F64x4(_mm256_castsi256_pd(m)), F64x4(e))
        }
    }
}
