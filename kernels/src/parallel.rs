//! When and how kernels split work across rayon threads, plus the `T → f32/f64` dispatch used
//! to reach the SIMD paths from generic code.
//!
//! Splitting is deterministic: chunk boundaries depend only on the problem size (never on the
//! number of threads), and every elementwise SIMD function is lane-independent, so results are
//! bitwise identical with 1 or many threads.

use std::any::TypeId;

/// Elementwise work (in "cheap element-ops", see [`Cost`]) below which kernels stay on the
/// calling thread. Measured on the 2-core Zen 3 box (`benches/benches/elementwise.rs`): a rayon
/// fork-join costs a few µs, so a cheap op (add, ~0.1 ns/element in cache) only wins from
/// ~128K elements up, while `exp`/`tanh` (~0.5–1 ns/element) win from ~16K.
pub(crate) const PAR_WORK: usize = 1 << 17;

/// Chunk length for parallel elementwise work (a multiple of every vector width).
pub(crate) const PAR_CHUNK: usize = 1 << 15;

/// Relative per-element cost of an operation (1 = one load/store-bound arithmetic op).
#[derive(Clone, Copy)]
pub(crate) struct Cost(pub usize);

/// Whether `n` elements at `cost` are worth splitting across threads (never inside a share of
/// another split, see [`crate::team::in_share`]).
#[inline]
pub(crate) fn should_split(n: usize, cost: Cost) -> bool {
    n.saturating_mul(cost.0) >= PAR_WORK && n > PAR_CHUNK && !crate::team::in_share() && rayon::current_num_threads() > 1
}

/// Runs `f` on every job across the threads of the current pool ([`crate::team::for_each`]):
/// for chunked elementwise work after [`should_split`] said yes.
#[inline]
pub(crate) fn split_each<I, F>(jobs: I, f: F)
where
    I: Iterator + Send,
    I::Item: Send,
    F: Fn(I::Item) + Sync,
{
    crate::team::for_each(rayon::current_num_threads(), jobs, f)
}

/// Chunk length for `n` elements at `cost`: about `PAR_CHUNK / cost`, rounded to 64.
#[inline]
pub(crate) fn chunk_len(cost: Cost) -> usize {
    ((PAR_CHUNK / cost.0.max(1)) & !63).max(1024)
}

/// `true` iff `T` and `U` are the same type.
#[inline(always)]
pub(crate) fn same<T: 'static, U: 'static>() -> bool {
    TypeId::of::<T>() == TypeId::of::<U>()
}

/// Reinterpret `&[T]` as `&[U]` when they are the same type.
#[inline(always)]
pub(crate) fn cast<T: 'static, U: 'static>(x: &[T]) -> &[U] {
    assert!(same::<T, U>(), "internal error: cast between different element types");
    // SAFETY: T and U are the same type (checked above), so layout, alignment and validity agree.
    unsafe { std::slice::from_raw_parts(x.as_ptr() as *const U, x.len()) }
}

/// Reinterpret `&mut [T]` as `&mut [U]` when they are the same type.
#[inline(always)]
pub(crate) fn cast_mut<T: 'static, U: 'static>(x: &mut [T]) -> &mut [U] {
    assert!(same::<T, U>(), "internal error: cast between different element types");
    // SAFETY: as in `cast`; the unique borrow of `x` is transferred to the result.
    unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr() as *mut U, x.len()) }
}

/// Convert a scalar between two equal types.
#[inline(always)]
pub(crate) fn cast_scalar<T: crate::Real, U: crate::Real>(x: T) -> U {
    U::from_f64(x.to_f64())
}

/// Run `$body` with `$V` bound to the SIMD vector type of `$T` (8 × f32 or 4 × f64) for the
/// level [`crate::simd::simd_level`] selects: the AVX2 type inside a function compiled with
/// AVX2+FMA (the body is expanded once per level and type), else the portable `wide` type;
/// `$else` for any other `Real` implementation. `$body` is run inside a closure on the AVX2 path,
/// so it must not `return`.
macro_rules! dispatch {
    ($T:ty, $V:ident => $body:expr, else => $fallback:expr) => {{
        #[cfg(target_arch = "x86_64")]
        let avx2 = $crate::simd::simd_level() >= $crate::simd::SimdLevel::Avx2Fma;
        #[cfg(not(target_arch = "x86_64"))]
        let avx2 = false;
        if $crate::parallel::same::<$T, f32>() {
            if avx2 {
                $crate::parallel::dispatch!(@avx2 $V = F32x8 => $body)
            } else {
                #[allow(dead_code)]
                type $V = wide::f32x8;
                $body
            }
        } else if $crate::parallel::same::<$T, f64>() {
            if avx2 {
                $crate::parallel::dispatch!(@avx2 $V = F64x4 => $body)
            } else {
                #[allow(dead_code)]
                type $V = wide::f64x4;
                $body
            }
        } else {
            $fallback
        }
    }};
    (@avx2 $V:ident = $W:ident => $body:expr) => {{
        #[cfg(target_arch = "x86_64")]
        {
            #[allow(dead_code)]
            type $V = $crate::simd_avx2::$W;
            // SAFETY: `simd_level` only reports AVX2+FMA when the CPU has both.
            unsafe { $crate::simd::run_avx2(#[inline(always)] || $body) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            unreachable!("AVX2 level on a non-x86_64 target")
        }
    }};
}
pub(crate) use dispatch;

/// [`dispatch!`] for kernels whose lanes are independent (each lane computes its own element, no
/// sum across lanes): on the AVX-512 level `$V` is the 512-bit type (16 × f32 or 8 × f64) inside
/// a function compiled for AVX-512F; on the others, as [`dispatch!`]. A lane computes the same
/// bits at either width, so the result does not depend on which ran.
macro_rules! dispatch_lanes {
    ($T:ty, $V:ident => $body:expr, else => $fallback:expr) => {{
        #[cfg(target_arch = "x86_64")]
        let avx512 = $crate::simd::simd_level() == $crate::simd::SimdLevel::Avx512;
        #[cfg(not(target_arch = "x86_64"))]
        let avx512 = false;
        if avx512 && $crate::parallel::same::<$T, f32>() {
            $crate::parallel::dispatch_lanes!(@avx512 $V = F32x16 => $body)
        } else if avx512 && $crate::parallel::same::<$T, f64>() {
            $crate::parallel::dispatch_lanes!(@avx512 $V = F64x8 => $body)
        } else {
            $crate::parallel::dispatch!($T, $V => $body, else => $fallback)
        }
    }};
    (@avx512 $V:ident = $W:ident => $body:expr) => {{
        #[cfg(target_arch = "x86_64")]
        {
            #[allow(dead_code)]
            type $V = $crate::simd_avx512::$W;
            // SAFETY: `simd_level` only reports AVX-512 when the CPU has AVX-512F, AVX2 and FMA.
            unsafe { $crate::simd::run_avx512(#[inline(always)] || $body) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            unreachable!("AVX-512 level on a non-x86_64 target")
        }
    }};
}
pub(crate) use dispatch_lanes;
