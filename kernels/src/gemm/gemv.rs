//! Matrix–vector products: `y ← α·A·x + β·y`, used by [`super::gemv`] and by [`super::gemm`] when
//! `n == 1` or `m == 1` (where packing B into 16-wide micro-panels would waste 15/16 of the work).
//!
//! Row-major `A` (unit column stride): one SIMD dot product per row. Column-major `A` (unit row
//! stride): `y` accumulates four scaled columns per pass (4 FMAs per load/store of `y`). Otherwise
//! scalar. Large products split the rows of `y` across threads (GEMV is memory-bound, and two
//! cores stream ~1.6× the bandwidth of one).

use super::microkernel::{self, KernelChoice};
use super::pack::with_scratch;
use super::MatRef;
use crate::Real;

/// Below this many elements of `A` (4 MiB of f32), a GEMV runs on one thread: smaller matrices
/// stream from L2/L3 at 30+ GB/s on one core, so a second thread only adds its wake-up cost
/// (measured: 512×512 took 32 µs on one thread, 52 µs on two). Only DRAM-resident matrices gain
/// from the second core's bandwidth.
pub(crate) const GEMV_PAR_MIN: usize = 1 << 20;

/// A strided vector: element `i` is `data[i * stride]`.
pub(crate) struct Strided<'a, T> {
    pub data: &'a [T],
    pub stride: usize,
}

/// `y ← α·A·x + β·y` where `x` and `y` may be strided (gathered/scattered through scratch).
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemv_strided<T: Real>(
    choice: KernelChoice,
    threads: usize,
    alpha: T,
    a: MatRef<T>,
    x: Strided<T>,
    beta: T,
    y: &mut [T],
    ys: usize,
) {
    let (m, k) = (a.rows, a.cols);
    let xn = if x.stride == 1 { 0 } else { k };
    let yn = if ys == 1 { 0 } else { m };
    with_scratch::<T, _>(xn, yn, |xb, yb| {
        let xv: &[T] = if x.stride == 1 {
            &x.data[..k]
        } else {
            for (p, v) in xb.iter_mut().enumerate() {
                *v = x.data[p * x.stride];
            }
            xb
        };
        if ys == 1 {
            gemv_contig(choice, threads, alpha, a, xv, beta, &mut y[..m]);
        } else {
            if beta != T::ZERO {
                for (i, v) in yb.iter_mut().enumerate() {
                    *v = y[i * ys];
                }
            }
            gemv_contig(choice, threads, alpha, a, xv, beta, yb);
            for (i, &v) in yb.iter().enumerate() {
                y[i * ys] = v;
            }
        }
    });
}

/// `y ← α·A·x + β·y` with contiguous `x` (len k) and `y` (len m).
pub(crate) fn gemv_contig<T: Real>(choice: KernelChoice, threads: usize, alpha: T, a: MatRef<T>, x: &[T], beta: T, y: &mut [T]) {
    let m = y.len();
    if threads > 1 && m >= 2 * 8 && a.rows * a.cols >= GEMV_PAR_MIN {
        let chunk = m.div_ceil(threads).next_multiple_of(8);
        crate::team::for_each(threads, y.chunks_mut(chunk).enumerate(), |(t, yc)| {
            let i0 = t * chunk;
            let at = MatRef { data: &a.data[i0 * a.rs..], rows: yc.len(), ..a };
            gemv_seq(choice, alpha, at, x, beta, yc);
        });
    } else {
        gemv_seq(choice, alpha, a, x, beta, y);
    }
}

fn gemv_seq<T: Real>(choice: KernelChoice, alpha: T, a: MatRef<T>, x: &[T], beta: T, y: &mut [T]) {
    let (m, k) = (a.rows, a.cols);
    let simd = choice != KernelChoice::Portable
        && microkernel::has_avx2_fma()
        && (microkernel::is_f32::<T>() || microkernel::is_f64::<T>());
    if a.cs == 1 || (k == 1 && a.rs != 1) {
        for (i, yi) in y.iter_mut().enumerate() {
            let row = &a.data[i * a.rs..i * a.rs + k];
            let d = if simd { dot_avx2(row, x) } else { microkernel::portable::dot(row, x) };
            *yi = if beta == T::ZERO { alpha * d } else { alpha * d + beta * *yi };
        }
    } else if a.rs == 1 {
        if beta == T::ZERO {
            y.fill(T::ZERO);
        } else if beta != T::ONE {
            y.iter_mut().for_each(|v| *v *= beta);
        }
        let col = |p: usize| &a.data[p * a.cs..p * a.cs + m];
        let mut p = 0;
        if simd {
            while p + 4 <= k {
                let s = [alpha * x[p], alpha * x[p + 1], alpha * x[p + 2], alpha * x[p + 3]];
                axpy4_avx2(y, s, [col(p), col(p + 1), col(p + 2), col(p + 3)]);
                p += 4;
            }
        }
        while p < k {
            microkernel::portable::axpy(y, alpha * x[p], col(p));
            p += 1;
        }
    } else {
        for (i, yi) in y.iter_mut().enumerate() {
            let mut d = T::ZERO;
            for (p, &xp) in x.iter().enumerate() {
                d += a.data[i * a.rs + p * a.cs] * xp;
            }
            *yi = if beta == T::ZERO { alpha * d } else { alpha * d + beta * *yi };
        }
    }
}

/// SIMD dot product; only called when the CPU has AVX2+FMA and `T` is f32 or f64.
fn dot_avx2<T: Real>(a: &[T], x: &[T]) -> T {
    let n = a.len().min(x.len());
    #[cfg(target_arch = "x86_64")]
    {
        if microkernel::is_f32::<T>() {
            // SAFETY: T is f32 (TypeId), both slices hold ≥ n elements, and the caller checked AVX2+FMA.
            return T::from_f64(unsafe { microkernel::avx2::sdot(n, a.as_ptr().cast(), x.as_ptr().cast()) } as f64);
        }
        if microkernel::is_f64::<T>() {
            // SAFETY: as above with T = f64.
            return T::from_f64(unsafe { microkernel::avx2::ddot(n, a.as_ptr().cast(), x.as_ptr().cast()) });
        }
    }
    microkernel::portable::dot(&a[..n], &x[..n])
}

/// `y += Σ_q s[q]·cols[q]`; only called when the CPU has AVX2+FMA and `T` is f32 or f64.
fn axpy4_avx2<T: Real>(y: &mut [T], s: [T; 4], cols: [&[T]; 4]) {
    let n = cols.iter().fold(y.len(), |n, c| n.min(c.len()));
    #[cfg(target_arch = "x86_64")]
    {
        let ptrs = cols.map(|c| c.as_ptr());
        if microkernel::is_f32::<T>() {
            // SAFETY: T is f32 (TypeId); `y` (a `&mut`, so unaliased) and every column hold ≥ n
            // elements; the caller checked AVX2+FMA.
            unsafe {
                microkernel::avx2::saxpy4(n, y.as_mut_ptr().cast(), s.map(|v| v.to_f64() as f32), ptrs.map(|p| p.cast()))
            };
            return;
        }
        if microkernel::is_f64::<T>() {
            // SAFETY: as above with T = f64.
            unsafe { microkernel::avx2::daxpy4(n, y.as_mut_ptr().cast(), s.map(|v| v.to_f64()), ptrs.map(|p| p.cast())) };
            return;
        }
    }
    for (q, c) in cols.iter().enumerate() {
        microkernel::portable::axpy(&mut y[..n], s[q], &c[..n]);
    }
}
