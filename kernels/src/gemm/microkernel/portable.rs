//! Portable microkernel in plain Rust: a 4×8 tile for any [`Real`] type. The compiler vectorises it
//! for the baseline target (SSE2 on x86_64); it exists for CPUs without AVX2/FMA and is tested
//! explicitly through [`crate::gemm::gemm_with_kernel`].

use crate::Real;

/// Tile rows.
pub(crate) const MR: usize = 4;
/// Tile columns.
pub(crate) const NR: usize = 8;

/// `C[mr × nr] ← α·Ã·B̃ + β·C` for `mr ≤ 4`, `nr ≤ 8` (the full 4×8 product is computed).
///
/// # Safety
/// `a` points to `4·k` readable elements, `b` to `8·k` readable elements, and `c + i·rsc + j·csc`
/// is valid for reads and writes for `i < mr`, `j < nr`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn tile<T: Real>(
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
    // SAFETY: the caller guarantees 4·k elements at `a` and 8·k at `b`.
    let (a, b) = unsafe { (std::slice::from_raw_parts(a, MR * k), std::slice::from_raw_parts(b, NR * k)) };
    let mut ab = [[T::ZERO; NR]; MR];
    for (ap, bp) in a.chunks_exact(MR).zip(b.chunks_exact(NR)) {
        for i in 0..MR {
            for j in 0..NR {
                ab[i][j] += ap[i] * bp[j];
            }
        }
    }
    for (i, abi) in ab.iter().enumerate().take(mr) {
        for (j, &v) in abi.iter().enumerate().take(nr) {
            // SAFETY: i < mr, j < nr: inside the tile the caller guarantees.
            let cij = unsafe { &mut *c.add(i * rsc + j * csc) };
            *cij = if beta == T::ZERO { alpha * v } else { alpha * v + beta * *cij };
        }
    }
}

/// `Σ a[i]·x[i]` with 8 independent partial sums (so it vectorises without reassociation).
pub(crate) fn dot<T: Real>(a: &[T], x: &[T]) -> T {
    let mut acc = [T::ZERO; 8];
    let mut ac = a.chunks_exact(8);
    let mut xc = x.chunks_exact(8);
    for (ap, xp) in (&mut ac).zip(&mut xc) {
        for l in 0..8 {
            acc[l] += ap[l] * xp[l];
        }
    }
    let mut s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (&ai, &xi) in ac.remainder().iter().zip(xc.remainder()) {
        s += ai * xi;
    }
    s
}

/// `y += s·col`.
pub(crate) fn axpy<T: Real>(y: &mut [T], s: T, col: &[T]) {
    for (yi, &ci) in y.iter_mut().zip(col) {
        *yi += s * ci;
    }
}
