//! AVX-512F kernels written with `std::arch` intrinsics: 12×32 (f32) and 12×16 (f64) GEMM tiles.
//!
//! Why a second x86 kernel: on CPUs with 512-bit FMA units (e.g. AMD Zen 5, where these were
//! measured), a ymm kernel can reach at most half of the machine's FMA throughput, and
//! `matrixmultiply` already dispatches to an AVX-512 kernel there. The shape follows the same
//! rule as the AVX2 kernel: each row of the tile is two zmm vectors of B̃ times one broadcast
//! element of Ã, so there are no cross-lane shuffles. 12 rows × 2 vectors = 24 zmm accumulators
//! (of 32 registers), 2 for B̃ and one for the broadcast: 24 independent FMA chains cover two
//! 512-bit FMA pipes × 4-cycle latency three times over, and each k step needs 2 vector loads and
//! 12 broadcast loads per 24 FMAs.
//!
//! Every function here is `#[target_feature(enable = "avx512f")]` and is only called after
//! [`super::has_avx512`] returned true.

use std::arch::x86_64::*;

/// Tile rows (both types).
pub(crate) const MR: usize = 12;
/// Tile columns for f32 (two zmm of 16 lanes).
pub(crate) const NR_F32: usize = 32;
/// Tile columns for f64 (two zmm of 8 lanes).
pub(crate) const NR_F64: usize = 16;

/// Generates the exact-row-count dispatch of one tile function (so edge tiles with `mr < 12`
/// rows do no FMAs on missing rows).
macro_rules! dispatch_rows {
    ($mr:expr, $v:expr, $d:literal, $f:ident, $args:tt) => {
        match ($mr, $v) {
            (12, 2) => $f::<12, 2, $d> $args,
            (11, 2) => $f::<11, 2, $d> $args,
            (10, 2) => $f::<10, 2, $d> $args,
            (9, 2) => $f::<9, 2, $d> $args,
            (8, 2) => $f::<8, 2, $d> $args,
            (7, 2) => $f::<7, 2, $d> $args,
            (6, 2) => $f::<6, 2, $d> $args,
            (5, 2) => $f::<5, 2, $d> $args,
            (4, 2) => $f::<4, 2, $d> $args,
            (3, 2) => $f::<3, 2, $d> $args,
            (2, 2) => $f::<2, 2, $d> $args,
            (1, 2) => $f::<1, 2, $d> $args,
            (12, 1) => $f::<12, 1, $d> $args,
            (11, 1) => $f::<11, 1, $d> $args,
            (10, 1) => $f::<10, 1, $d> $args,
            (9, 1) => $f::<9, 1, $d> $args,
            (8, 1) => $f::<8, 1, $d> $args,
            (7, 1) => $f::<7, 1, $d> $args,
            (6, 1) => $f::<6, 1, $d> $args,
            (5, 1) => $f::<5, 1, $d> $args,
            (4, 1) => $f::<4, 1, $d> $args,
            (3, 1) => $f::<3, 1, $d> $args,
            (2, 1) => $f::<2, 1, $d> $args,
            (1, 1) => $f::<1, 1, $d> $args,
            _ => unreachable!("tile with {} rows and {} vectors exceeds the 12-row, 2-vector kernel", $mr, $v),
        }
    };
}

/// `C[mr × nr] ← α·Ã·B̃ + β·C` in f32 for any `mr ≤ 12`, `nr ≤ 32`.
///
/// # Safety
/// The CPU supports AVX-512F; `a` points to an Ã micro-panel (`12·k` readable f32s), `b` to a
/// B̃ micro-panel (`32·k` readable f32s, 64-byte aligned), and `c + i·rsc + j·csc` is valid
/// for reads and writes for `i < mr`, `j < nr`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn sgemm_tile(mr: usize, nr: usize, k: usize, alpha: f32, a: *const f32, b: *const f32, beta: f32, c: *mut f32, rsc: usize, csc: usize) {
    let v = if nr > 16 { 2 } else { 1 };
    // SAFETY: forwarded contract (a packed Ã micro-panel is A with strides (1, 12)); the dispatch
    // picks M = mr ≤ 12 and V·16 ≥ nr.
    unsafe { dispatch_rows!(mr, v, false, sgemm_tile_mv, (nr, k, alpha, a, 1, b, beta, c, rsc, csc)) }
}

/// [`sgemm_tile`] reading A in place instead of from a packed Ã micro-panel: element `(i, kk)` of
/// the tile's A rows is `a[i·rsa + kk·csa]`, where `csa` must be 1 (rows of A contiguous). Used
/// for products too small for packing A to pay (the driver's `DIRECT_A_MAX_PANELS`).
///
/// # Safety
/// As for [`sgemm_tile`], except that `csa == 1` and `a + i·rsa + kk` must be readable for
/// `i < mr`, `kk < k` (instead of a padded micro-panel).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn sgemm_tile_direct(mr: usize, nr: usize, k: usize, alpha: f32, a: *const f32, rsa: usize, csa: usize, b: *const f32, beta: f32, c: *mut f32, rsc: usize, csc: usize) {
    debug_assert_eq!(csa, 1, "a direct A has contiguous rows");
    let v = if nr > 16 { 2 } else { 1 };
    // SAFETY: forwarded contract; the dispatch picks M = mr ≤ 12 and V·16 ≥ nr.
    unsafe { dispatch_rows!(mr, v, true, sgemm_tile_mv, (nr, k, alpha, a, rsa, b, beta, c, rsc, csc)) }
}

/// The `M`-row, `V`-vector f32 kernel behind [`sgemm_tile`].
///
/// # Safety
/// As for [`sgemm_tile`] (`DIRECT = false`, `rsa` ignored) or [`sgemm_tile_direct`] (`DIRECT = true`)
/// with `mr = M` and `nr ≤ V·16`.
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn sgemm_tile_mv<const M: usize, const V: usize, const DIRECT: bool>(nr: usize, k: usize, alpha: f32, a: *const f32, rsa: usize, b: *const f32, beta: f32, c: *mut f32, rsc: usize, csc: usize) {
    let mut ab = [[_mm512_setzero_ps(); V]; M];
    // Element (i, kk) of A is a[i·rsa + kk·csa]: a packed Ã micro-panel has the compile-time
    // strides (1, MR), a direct A unit column stride, so the step offsets fold to constants.
    let (rsa, csa) = if DIRECT { (rsa, 1) } else { (1, MR) };
    let (mut a, mut b) = (a, b);
    if csc == 1 {
        for i in 0..M {
            // Prefetch hints only (never fault): the C rows this tile will update (128 bytes each).
            _mm_prefetch::<_MM_HINT_T0>(c.wrapping_add(i * rsc) as *const i8);
            _mm_prefetch::<_MM_HINT_T0>(c.wrapping_add(i * rsc + 16) as *const i8);
        }
    }
    macro_rules! step {
        ($u:expr) => {{
            let mut bv = [_mm512_setzero_ps(); V];
            for (v, bv) in bv.iter_mut().enumerate() {
                // SAFETY: B̃ holds 32·k elements, 64-byte aligned (32·4 bytes per step), and step
                // $u is < the steps left.
                *bv = unsafe { _mm512_load_ps(b.add(NR_F32 * $u + 16 * v)) };
            }
            for (i, abi) in ab.iter_mut().enumerate() {
                // SAFETY: row i < M = mr and step $u < the steps left are inside A (packed: Ã
                // holds 12·k elements, panels padded to 12 rows; direct: the caller's rows).
                let x = _mm512_set1_ps(unsafe { *a.add(i * rsa + $u * csa) });
                for v in 0..V {
                    abi[v] = _mm512_fmadd_ps(x, bv[v], abi[v]);
                }
            }
        }};
    }
    let mut left = k;
    while left >= 4 {
        if !DIRECT {
            // Prefetch hint (never faults): the Ã panel ahead of the one in use.
            _mm_prefetch::<_MM_HINT_T0>(a.wrapping_add(MR * 8) as *const i8);
        }
        step!(0);
        step!(1);
        step!(2);
        step!(3);
        // SAFETY: 4 steps consumed of at least 4 left: B̃'s pointer stays in (or one past) its
        // panel. Wrapping for A: a direct A's pointer can step past its buffer after the last step.
        a = a.wrapping_add(4 * csa);
        b = unsafe { b.add(4 * NR_F32) };
        left -= 4;
    }
    while left > 0 {
        step!(0);
        // SAFETY: one step consumed of at least one left.
        a = a.wrapping_add(csa);
        b = unsafe { b.add(NR_F32) };
        left -= 1;
    }
    let va = _mm512_set1_ps(alpha);
    if csc == 1 {
        let vb = _mm512_set1_ps(beta);
        for (i, abi) in ab.iter().enumerate() {
            for (v, &acc) in abi.iter().enumerate() {
                let cols = nr.saturating_sub(16 * v).min(16);
                // Lanes past `nr` are masked off: neither read nor written.
                let mask: __mmask16 = if cols == 16 { 0xFFFF } else { ((1u32 << cols) - 1) as u16 };
                // SAFETY: row i < M = mr; the unmasked lanes are columns 16·v .. 16·v + cols ≤ nr,
                // valid (contract) and contiguous (csc == 1). Masked lanes are never accessed.
                unsafe {
                    let cp = c.add(i * rsc + 16 * v);
                    let r = _mm512_mul_ps(va, acc);
                    let r = if beta == 0.0 { r } else { _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mask, cp), r) };
                    _mm512_mask_storeu_ps(cp, mask, r);
                }
            }
        }
    } else {
        // Non-unit column stride (C is column-major or strided): through a buffer.
        let mut buf = [0.0f32; 32];
        for (i, abi) in ab.iter().enumerate() {
            for (v, &acc) in abi.iter().enumerate() {
                // SAFETY: buf has 32 ≥ V·16 elements; vector v covers 16·v .. 16·v + 16.
                unsafe { _mm512_storeu_ps(buf.as_mut_ptr().add(16 * v), _mm512_mul_ps(va, acc)) };
            }
            for (j, &x) in buf[..nr].iter().enumerate() {
                // SAFETY: i < mr and j < nr: inside the tile the caller guarantees.
                let cij = unsafe { &mut *c.add(i * rsc + j * csc) };
                *cij = if beta == 0.0 { x } else { x + beta * *cij };
            }
        }
    }
}

/// `C[mr × nr] ← α·Ã·B̃ + β·C` in f64 for any `mr ≤ 12`, `nr ≤ 16`.
///
/// # Safety
/// The CPU supports AVX-512F; `a` points to an Ã micro-panel (`12·k` readable f64s), `b` to a
/// B̃ micro-panel (`16·k` readable f64s, 64-byte aligned), and `c + i·rsc + j·csc` is valid
/// for reads and writes for `i < mr`, `j < nr`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn dgemm_tile(mr: usize, nr: usize, k: usize, alpha: f64, a: *const f64, b: *const f64, beta: f64, c: *mut f64, rsc: usize, csc: usize) {
    let v = if nr > 8 { 2 } else { 1 };
    // SAFETY: forwarded contract (a packed Ã micro-panel is A with strides (1, 12)); the dispatch
    // picks M = mr ≤ 12 and V·8 ≥ nr.
    unsafe { dispatch_rows!(mr, v, false, dgemm_tile_mv, (nr, k, alpha, a, 1, b, beta, c, rsc, csc)) }
}

/// [`dgemm_tile`] reading A in place instead of from a packed Ã micro-panel: element `(i, kk)` of
/// the tile's A rows is `a[i·rsa + kk·csa]`, where `csa` must be 1 (rows of A contiguous). Used
/// for products too small for packing A to pay (the driver's `DIRECT_A_MAX_PANELS`).
///
/// # Safety
/// As for [`dgemm_tile`], except that `csa == 1` and `a + i·rsa + kk` must be readable for
/// `i < mr`, `kk < k` (instead of a padded micro-panel).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn dgemm_tile_direct(mr: usize, nr: usize, k: usize, alpha: f64, a: *const f64, rsa: usize, csa: usize, b: *const f64, beta: f64, c: *mut f64, rsc: usize, csc: usize) {
    debug_assert_eq!(csa, 1, "a direct A has contiguous rows");
    let v = if nr > 8 { 2 } else { 1 };
    // SAFETY: forwarded contract; the dispatch picks M = mr ≤ 12 and V·8 ≥ nr.
    unsafe { dispatch_rows!(mr, v, true, dgemm_tile_mv, (nr, k, alpha, a, rsa, b, beta, c, rsc, csc)) }
}

/// The `M`-row, `V`-vector f64 kernel behind [`dgemm_tile`].
///
/// # Safety
/// As for [`dgemm_tile`] (`DIRECT = false`, `rsa` ignored) or [`dgemm_tile_direct`] (`DIRECT = true`)
/// with `mr = M` and `nr ≤ V·8`.
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn dgemm_tile_mv<const M: usize, const V: usize, const DIRECT: bool>(nr: usize, k: usize, alpha: f64, a: *const f64, rsa: usize, b: *const f64, beta: f64, c: *mut f64, rsc: usize, csc: usize) {
    let mut ab = [[_mm512_setzero_pd(); V]; M];
    // Element (i, kk) of A is a[i·rsa + kk·csa]: a packed Ã micro-panel has the compile-time
    // strides (1, MR), a direct A unit column stride, so the step offsets fold to constants.
    let (rsa, csa) = if DIRECT { (rsa, 1) } else { (1, MR) };
    let (mut a, mut b) = (a, b);
    if csc == 1 {
        for i in 0..M {
            // Prefetch hints only (never fault): the C rows this tile will update (128 bytes each).
            _mm_prefetch::<_MM_HINT_T0>(c.wrapping_add(i * rsc) as *const i8);
            _mm_prefetch::<_MM_HINT_T0>(c.wrapping_add(i * rsc + 8) as *const i8);
        }
    }
    macro_rules! step {
        ($u:expr) => {{
            let mut bv = [_mm512_setzero_pd(); V];
            for (v, bv) in bv.iter_mut().enumerate() {
                // SAFETY: B̃ holds 16·k elements, 64-byte aligned (16·8 bytes per step), and step
                // $u is < the steps left.
                *bv = unsafe { _mm512_load_pd(b.add(NR_F64 * $u + 8 * v)) };
            }
            for (i, abi) in ab.iter_mut().enumerate() {
                // SAFETY: row i < M = mr and step $u < the steps left are inside A (packed: Ã
                // holds 12·k elements, panels padded to 12 rows; direct: the caller's rows).
                let x = _mm512_set1_pd(unsafe { *a.add(i * rsa + $u * csa) });
                for v in 0..V {
                    abi[v] = _mm512_fmadd_pd(x, bv[v], abi[v]);
                }
            }
        }};
    }
    let mut left = k;
    while left >= 4 {
        if !DIRECT {
            // Prefetch hint (never faults): the Ã panel ahead of the one in use.
            _mm_prefetch::<_MM_HINT_T0>(a.wrapping_add(MR * 8) as *const i8);
        }
        step!(0);
        step!(1);
        step!(2);
        step!(3);
        // SAFETY: 4 steps consumed of at least 4 left: B̃'s pointer stays in (or one past) its
        // panel. Wrapping for A: a direct A's pointer can step past its buffer after the last step.
        a = a.wrapping_add(4 * csa);
        b = unsafe { b.add(4 * NR_F64) };
        left -= 4;
    }
    while left > 0 {
        step!(0);
        // SAFETY: one step consumed of at least one left.
        a = a.wrapping_add(csa);
        b = unsafe { b.add(NR_F64) };
        left -= 1;
    }
    let va = _mm512_set1_pd(alpha);
    if csc == 1 {
        let vb = _mm512_set1_pd(beta);
        for (i, abi) in ab.iter().enumerate() {
            for (v, &acc) in abi.iter().enumerate() {
                let cols = nr.saturating_sub(8 * v).min(8);
                // Lanes past `nr` are masked off: neither read nor written.
                let mask: __mmask8 = if cols == 8 { 0xFF } else { ((1u32 << cols) - 1) as u8 };
                // SAFETY: row i < M = mr; the unmasked lanes are columns 8·v .. 8·v + cols ≤ nr,
                // valid (contract) and contiguous (csc == 1). Masked lanes are never accessed.
                unsafe {
                    let cp = c.add(i * rsc + 8 * v);
                    let r = _mm512_mul_pd(va, acc);
                    let r = if beta == 0.0 { r } else { _mm512_fmadd_pd(vb, _mm512_maskz_loadu_pd(mask, cp), r) };
                    _mm512_mask_storeu_pd(cp, mask, r);
                }
            }
        }
    } else {
        // Non-unit column stride (C is column-major or strided): through a buffer.
        let mut buf = [0.0f64; 16];
        for (i, abi) in ab.iter().enumerate() {
            for (v, &acc) in abi.iter().enumerate() {
                // SAFETY: buf has 16 ≥ V·8 elements; vector v covers 8·v .. 8·v + 8.
                unsafe { _mm512_storeu_pd(buf.as_mut_ptr().add(8 * v), _mm512_mul_pd(va, acc)) };
            }
            for (j, &x) in buf[..nr].iter().enumerate() {
                // SAFETY: i < mr and j < nr: inside the tile the caller guarantees.
                let cij = unsafe { &mut *c.add(i * rsc + j * csc) };
                *cij = if beta == 0.0 { x } else { x + beta * *cij };
            }
        }
    }
}
