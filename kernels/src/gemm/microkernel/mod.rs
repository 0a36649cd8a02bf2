//! Register-blocked microkernels: `C[MR × NR] ← α·Ã·B̃ + β·C` over packed micro-panels.
//!
//! * [`avx2`]: hand-written AVX2 + FMA kernels (`std::arch`), 6×16 for f32 and 6×8 for f64. Each
//!   row of the tile is two ymm vectors of B̃ times a broadcast element of Ã, so the inner loop has
//!   12 independent FMA chains (enough to cover Zen 3's 2 pipes × 4-cycle latency) and needs no
//!   cross-lane shuffles: only 2 vector loads and 6 broadcast loads per 12 FMAs.
//!   Edge tiles run a kernel instantiated for exactly their row count and vector count (so an
//!   m = 16 problem does 6 + 6 + 4 rows of work, not 18), storing partial columns through a buffer.
//!   Each also exists reading A in place through a row stride ([`TileDirectFn`]), for the
//!   driver's small products.
//! * [`avx512`]: hand-written AVX-512F kernels, 12×32 for f32 and 12×16 for f64, the same
//!   broadcast-load design with 24 zmm accumulators; chosen over AVX2 when the CPU has AVX-512F
//!   (512-bit FMA units double the flops per instruction; measured on Zen 5 and an Intel Xeon in
//!   `blocking.rs`). Partial columns are stored with lane masks instead of a buffer. These too
//!   exist reading A in place: on the Xeon that took sgemm at n = 64 from 0.7× to 1.3×
//!   matrixmultiply (`blocking.rs`).
//! * [`portable`]: a 4×8 kernel in plain Rust for machines without AVX2/FMA (and for tests); its
//!   edge tiles compute the full tile and store the valid part.
//!
//! Which one runs is decided at run time ([`Kernel::select`]), never at compile time.

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2;
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512;
pub(crate) mod portable;

use super::blocking::{self, Blocking};
use crate::Real;
use std::any::TypeId;

/// Which microkernel family to use. [`KernelChoice::Auto`] is what [`super::gemm`] uses.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelChoice {
    /// The fastest kernel this CPU runs for `f32`/`f64` (AVX-512F, else AVX2+FMA), else portable.
    Auto,
    /// AVX2+FMA even if the CPU has AVX-512 (to test and benchmark that path); portable if the
    /// CPU lacks AVX2+FMA.
    Avx2,
    /// Force the portable kernel (for testing the fallback).
    Portable,
}

/// True if this CPU can run the AVX2+FMA kernels (checked once, then cached by `std`).
pub(crate) fn has_avx2_fma() -> bool {
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    {
        is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "x86")))]
    {
        false
    }
}

/// True if this CPU can run the AVX-512F kernels (checked once, then cached by `std`).
pub(crate) fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

pub(crate) fn is_f32<T: 'static>() -> bool {
    TypeId::of::<T>() == TypeId::of::<f32>()
}
pub(crate) fn is_f64<T: 'static>() -> bool {
    TypeId::of::<T>() == TypeId::of::<f64>()
}

/// The microkernel signature: `(mr, nr, k, α, Ã, B̃, β, C, rsc, csc)` computes the `mr × nr` tile
/// `C ← α·Ã·B̃ + β·C` (`mr ≤ MR`, `nr ≤ NR`; smaller values are edge tiles).
///
/// # Safety
/// `a` points to `k·MR` readable elements (an Ã micro-panel), `b` to `k·NR` readable elements
/// aligned to 32 bytes (a B̃ micro-panel), and `c + i·rsc + j·csc` is valid for reads and writes
/// for every `i < mr`, `j < nr`, with no other thread accessing those elements.
pub(crate) type TileFn<T> = unsafe fn(usize, usize, usize, T, *const T, *const T, T, *mut T, usize, usize);

/// [`TileFn`] reading A in place: `(mr, nr, k, α, A, rsa, csa, B̃, β, C, rsc, csc)`, where element
/// `(i, kk)` of the tile's rows of A is `A[i·rsa + kk·csa]`.
///
/// # Safety
/// As for [`TileFn`], except that `A + i·rsa + kk·csa` must be readable for `i < mr`, `kk < k`.
pub(crate) type TileDirectFn<T> = unsafe fn(usize, usize, usize, T, *const T, usize, usize, *const T, T, *mut T, usize, usize);

/// A selected microkernel: its tile shape, blocking and entry point.
#[derive(Clone, Copy)]
pub(crate) struct Kernel<T> {
    pub mr: usize,
    pub nr: usize,
    pub blocking: Blocking,
    pub tile: TileFn<T>,
    /// The same tile reading A unpacked, for kernels that have one (the driver uses it for small
    /// products, where packing A costs more than it saves).
    pub tile_direct: Option<TileDirectFn<T>>,
    /// Products with fewer flops than this stay on one thread under `Par::Auto` (measured per
    /// kernel: see `PAR_MIN_FLOPS` and its neighbours in `gemm/mod.rs`).
    pub par_min_flops: usize,
}

impl<T: Real> Kernel<T> {
    /// The kernel for this CPU and type (or the portable one if forced), with its blocking replaced
    /// by `CHI_GEMM_BLOCKING` if that is set (see [`blocking::env_override`]).
    pub(crate) fn select(choice: KernelChoice) -> Self {
        let mut kern = Self::select_builtin(choice);
        if let Some(b) = blocking::env_override(kern.mr, kern.nr) {
            kern.blocking = b;
        }
        kern
    }

    /// The register tile `(MR, NR)` of the kernel that `choice` selects on this CPU.
    pub(crate) fn tile(choice: KernelChoice) -> (usize, usize) {
        let k = Self::select_builtin(choice);
        (k.mr, k.nr)
    }

    fn select_builtin(choice: KernelChoice) -> Self {
        #[cfg(target_arch = "x86_64")]
        if choice == KernelChoice::Auto && has_avx512() {
            if is_f32::<T>() {
                return Kernel { mr: avx512::MR, nr: avx512::NR_F32, blocking: blocking::AVX512_F32, tile: avx512_tile::<T>, tile_direct: Some(avx512_tile_direct::<T>), par_min_flops: super::PAR_MIN_FLOPS_AVX512_F32 };
            }
            if is_f64::<T>() {
                return Kernel { mr: avx512::MR, nr: avx512::NR_F64, blocking: blocking::AVX512_F64, tile: avx512_tile::<T>, tile_direct: Some(avx512_tile_direct::<T>), par_min_flops: super::PAR_MIN_FLOPS_AVX512_F64 };
            }
        }
        if choice != KernelChoice::Portable && has_avx2_fma() {
            if is_f32::<T>() {
                return Kernel { mr: 6, nr: 16, blocking: blocking::AVX2_F32, tile: avx2_tile::<T>, tile_direct: Some(avx2_tile_direct::<T>), par_min_flops: super::PAR_MIN_FLOPS };
            }
            if is_f64::<T>() {
                return Kernel { mr: 6, nr: 8, blocking: blocking::AVX2_F64, tile: avx2_tile::<T>, tile_direct: Some(avx2_tile_direct::<T>), par_min_flops: super::PAR_MIN_FLOPS };
            }
        }
        Kernel {
            mr: portable::MR,
            nr: portable::NR,
            blocking: blocking::PORTABLE,
            tile: portable::tile::<T>,
            tile_direct: None,
            par_min_flops: super::PAR_MIN_FLOPS,
        }
    }
}

/// Generic entry to the AVX2 tile kernels; only ever selected when `T` is `f32` or `f64` and the CPU
/// has AVX2+FMA.
///
/// # Safety
/// As for [`TileFn`], plus: the CPU supports AVX2 and FMA.
#[allow(clippy::too_many_arguments)]
unsafe fn avx2_tile<T: Real>(
    mr: usize,
    nr: usize,
    k: usize,
    alpha: T,
    a: *const T,
    b: *const T,
    beta: T,
    c: *mut T,
    rsc: usize,
    csc: usize,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if is_f32::<T>() {
            // SAFETY: T is f32 (TypeId checked), so the pointer casts are identities and the f64
            // round trip of alpha/beta is exact; the caller upholds the kernel contract and
            // `Kernel::select` only chose this kernel after detecting AVX2+FMA.
            unsafe {
                avx2::sgemm_tile(mr, nr, k, alpha.to_f64() as f32, a.cast(), b.cast(), beta.to_f64() as f32, c.cast(), rsc, csc)
            }
        } else {
            debug_assert!(is_f64::<T>());
            // SAFETY: as above, with T = f64 (the only other type `select` picks this kernel for).
            unsafe { avx2::dgemm_tile(mr, nr, k, alpha.to_f64(), a.cast(), b.cast(), beta.to_f64(), c.cast(), rsc, csc) }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (mr, nr, k, alpha, a, b, beta, c, rsc, csc);
        unreachable!("AVX2 kernel selected on a non-x86_64 target");
    }
}

/// [`avx2_tile`] reading A in place ([`TileDirectFn`]).
///
/// # Safety
/// As for [`TileDirectFn`], plus: the CPU supports AVX2 and FMA.
#[allow(clippy::too_many_arguments)]
unsafe fn avx2_tile_direct<T: Real>(
    mr: usize,
    nr: usize,
    k: usize,
    alpha: T,
    a: *const T,
    rsa: usize,
    csa: usize,
    b: *const T,
    beta: T,
    c: *mut T,
    rsc: usize,
    csc: usize,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if is_f32::<T>() {
            // SAFETY: as in `avx2_tile`.
            unsafe {
                avx2::sgemm_tile_direct(mr, nr, k, alpha.to_f64() as f32, a.cast(), rsa, csa, b.cast(), beta.to_f64() as f32, c.cast(), rsc, csc)
            }
        } else {
            debug_assert!(is_f64::<T>());
            // SAFETY: as in `avx2_tile`.
            unsafe { avx2::dgemm_tile_direct(mr, nr, k, alpha.to_f64(), a.cast(), rsa, csa, b.cast(), beta.to_f64(), c.cast(), rsc, csc) }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (mr, nr, k, alpha, a, rsa, csa, b, beta, c, rsc, csc);
        unreachable!("AVX2 kernel selected on a non-x86_64 target");
    }
}

/// Generic entry to the AVX-512 tile kernels; only ever selected when `T` is `f32` or `f64` and the
/// CPU has AVX-512F.
///
/// # Safety
/// As for [`TileFn`] (with B̃ 64-byte aligned), plus: the CPU supports AVX-512F.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
unsafe fn avx512_tile<T: Real>(
    mr: usize,
    nr: usize,
    k: usize,
    alpha: T,
    a: *const T,
    b: *const T,
    beta: T,
    c: *mut T,
    rsc: usize,
    csc: usize,
) {
    if is_f32::<T>() {
        // SAFETY: T is f32 (TypeId checked), so the pointer casts are identities and the f64 round
        // trip of alpha/beta is exact; the caller upholds the kernel contract and `Kernel::select`
        // only chose this kernel after detecting AVX-512F.
        unsafe { avx512::sgemm_tile(mr, nr, k, alpha.to_f64() as f32, a.cast(), b.cast(), beta.to_f64() as f32, c.cast(), rsc, csc) }
    } else {
        debug_assert!(is_f64::<T>());
        // SAFETY: as above, with T = f64 (the only other type `select` picks this kernel for).
        unsafe { avx512::dgemm_tile(mr, nr, k, alpha.to_f64(), a.cast(), b.cast(), beta.to_f64(), c.cast(), rsc, csc) }
    }
}

/// [`avx512_tile`] reading A in place ([`TileDirectFn`]).
///
/// # Safety
/// As for [`TileDirectFn`] (with B̃ 64-byte aligned), plus: the CPU supports AVX-512F.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
unsafe fn avx512_tile_direct<T: Real>(
    mr: usize,
    nr: usize,
    k: usize,
    alpha: T,
    a: *const T,
    rsa: usize,
    csa: usize,
    b: *const T,
    beta: T,
    c: *mut T,
    rsc: usize,
    csc: usize,
) {
    if is_f32::<T>() {
        // SAFETY: as in `avx512_tile`.
        unsafe {
            avx512::sgemm_tile_direct(mr, nr, k, alpha.to_f64() as f32, a.cast(), rsa, csa, b.cast(), beta.to_f64() as f32, c.cast(), rsc, csc)
        }
    } else {
        debug_assert!(is_f64::<T>());
        // SAFETY: as in `avx512_tile`.
        unsafe { avx512::dgemm_tile_direct(mr, nr, k, alpha.to_f64(), a.cast(), rsa, csa, b.cast(), beta.to_f64(), c.cast(), rsc, csc) }
    }
}
