//! The fused row kernels of the training hot loops.
//!
//! Every word2vec and GloVe update touches a handful of `d`-long rows: one dot product, then
//! one fused pass that both accumulates the input-side error (`e += g·row`) and updates the row
//! (`row += g·x`). These two primitives are all the hot loop needs, so they are written here
//! twice: a portable version (eight independent accumulators, which LLVM vectorises on any
//! target) and an AVX2+FMA version with explicit 256-bit intrinsics.
//!
//! The choice is made once, outside the loop: the training loops are generic over a [`Kernel`]
//! and the AVX2 instantiation is entered through a `#[target_feature(enable = "avx2,fma")]`
//! function after `is_x86_feature_detected!`, so the intrinsics inline into it and the build
//! does not depend on compile-time target features.

use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub};

/// The float types the trainers run in: `f32` for training, `f64` for checking against the tape.
pub trait Scalar:
    Copy + Send + Sync + 'static + Default + PartialOrd + std::fmt::Debug + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self> + Neg<Output = Self> + AddAssign
{
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// Conversion from `f64` (rounding for `f32`).
    fn from_f64(x: f64) -> Self;
    /// Conversion to `f64`.
    fn to_f64(self) -> f64;
    /// Exact logistic sigmoid `1 / (1 + e^{−x})` (no lookup table, so the fused update is the
    /// gradient of the stated loss, not of a tabulated approximation of it).
    fn sigmoid(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// Portable `Σ a[i]·b[i]`.
    fn dot_portable(a: &[Self], b: &[Self]) -> Self;
    /// Portable fused update: `e += g·row; row += g·x` (element by element, reading `row` first).
    fn update_portable(g: Self, x: &[Self], row: &mut [Self], e: &mut [Self]);
    /// Portable `y += a·x`.
    fn axpy_portable(a: Self, x: &[Self], y: &mut [Self]);
    /// AVX2+FMA `Σ a[i]·b[i]`.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    unsafe fn dot_avx2(a: &[Self], b: &[Self]) -> Self;
    /// AVX2+FMA fused update (see [`Scalar::update_portable`]).
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    unsafe fn update_avx2(g: Self, x: &[Self], row: &mut [Self], e: &mut [Self]);
    /// AVX2+FMA `y += a·x`.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    unsafe fn axpy_avx2(a: Self, x: &[Self], y: &mut [Self]);
}

macro_rules! portable {
    ($t:ty) => {
        fn dot_portable(a: &[$t], b: &[$t]) -> $t {
            let n = a.len().min(b.len());
            let (a, b) = (&a[..n], &b[..n]);
            let mut acc = [0.0 as $t; 8];
            let mut ca = a.chunks_exact(8);
            let mut cb = b.chunks_exact(8);
            for (x, y) in (&mut ca).zip(&mut cb) {
                for k in 0..8 {
                    acc[k] += x[k] * y[k];
                }
            }
            let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
            for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
                s += x * y;
            }
            s
        }
        fn update_portable(g: $t, x: &[$t], row: &mut [$t], e: &mut [$t]) {
            for ((r, &xi), ei) in row.iter_mut().zip(x).zip(e.iter_mut()) {
                *ei += g * *r;
                *r += g * xi;
            }
        }
        fn axpy_portable(a: $t, x: &[$t], y: &mut [$t]) {
            for (yi, &xi) in y.iter_mut().zip(x) {
                *yi += a * xi;
            }
        }
    };
}

impl Scalar for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn sigmoid(self) -> f32 {
        1.0 / (1.0 + (-self).exp())
    }
    #[inline(always)]
    fn sqrt(self) -> f32 {
        f32::sqrt(self)
    }
    portable!(f32);
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
        use std::arch::x86_64::*;
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let (mut s0, mut s1) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        let mut i = 0;
        while i + 16 <= n {
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), s0);
            s1 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i + 8)), _mm256_loadu_ps(pb.add(i + 8)), s1);
            i += 16;
        }
        if i + 8 <= n {
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), s0);
            i += 8;
        }
        let s = _mm256_add_ps(s0, s1);
        let h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
        let h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        let h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
        let mut r = _mm_cvtss_f32(h);
        while i < n {
            r += *pa.add(i) * *pb.add(i);
            i += 1;
        }
        r
    }
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn update_avx2(g: f32, x: &[f32], row: &mut [f32], e: &mut [f32]) {
        use std::arch::x86_64::*;
        let n = x.len().min(row.len()).min(e.len());
        let (px, pr, pe) = (x.as_ptr(), row.as_mut_ptr(), e.as_mut_ptr());
        let gv = _mm256_set1_ps(g);
        let mut i = 0;
        while i + 8 <= n {
            let r = _mm256_loadu_ps(pr.add(i));
            _mm256_storeu_ps(pe.add(i), _mm256_fmadd_ps(gv, r, _mm256_loadu_ps(pe.add(i))));
            _mm256_storeu_ps(pr.add(i), _mm256_fmadd_ps(gv, _mm256_loadu_ps(px.add(i)), r));
            i += 8;
        }
        while i < n {
            let r = *pr.add(i);
            *pe.add(i) += g * r;
            *pr.add(i) = r + g * *px.add(i);
            i += 1;
        }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn axpy_avx2(a: f32, x: &[f32], y: &mut [f32]) {
        use std::arch::x86_64::*;
        let n = x.len().min(y.len());
        let (px, py) = (x.as_ptr(), y.as_mut_ptr());
        let av = _mm256_set1_ps(a);
        let mut i = 0;
        while i + 8 <= n {
            _mm256_storeu_ps(py.add(i), _mm256_fmadd_ps(av, _mm256_loadu_ps(px.add(i)), _mm256_loadu_ps(py.add(i))));
            i += 8;
        }
        while i < n {
            *py.add(i) += a * *px.add(i);
            i += 1;
        }
    }
}

impl Scalar for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    fn from_f64(x: f64) -> f64 {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn sigmoid(self) -> f64 {
        1.0 / (1.0 + (-self).exp())
    }
    #[inline(always)]
    fn sqrt(self) -> f64 {
        f64::sqrt(self)
    }
    portable!(f64);
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn dot_avx2(a: &[f64], b: &[f64]) -> f64 {
        use std::arch::x86_64::*;
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut s = _mm256_setzero_pd();
        let mut i = 0;
        while i + 4 <= n {
            s = _mm256_fmadd_pd(_mm256_loadu_pd(pa.add(i)), _mm256_loadu_pd(pb.add(i)), s);
            i += 4;
        }
        let h = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
        let mut r = _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
        while i < n {
            r += *pa.add(i) * *pb.add(i);
            i += 1;
        }
        r
    }
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn update_avx2(g: f64, x: &[f64], row: &mut [f64], e: &mut [f64]) {
        use std::arch::x86_64::*;
        let n = x.len().min(row.len()).min(e.len());
        let (px, pr, pe) = (x.as_ptr(), row.as_mut_ptr(), e.as_mut_ptr());
        let gv = _mm256_set1_pd(g);
        let mut i = 0;
        while i + 4 <= n {
            let r = _mm256_loadu_pd(pr.add(i));
            _mm256_storeu_pd(pe.add(i), _mm256_fmadd_pd(gv, r, _mm256_loadu_pd(pe.add(i))));
            _mm256_storeu_pd(pr.add(i), _mm256_fmadd_pd(gv, _mm256_loadu_pd(px.add(i)), r));
            i += 4;
        }
        while i < n {
            let r = *pr.add(i);
            *pe.add(i) += g * r;
            *pr.add(i) = r + g * *px.add(i);
            i += 1;
        }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn axpy_avx2(a: f64, x: &[f64], y: &mut [f64]) {
        use std::arch::x86_64::*;
        let n = x.len().min(y.len());
        let (px, py) = (x.as_ptr(), y.as_mut_ptr());
        let av = _mm256_set1_pd(a);
        let mut i = 0;
        while i + 4 <= n {
            _mm256_storeu_pd(py.add(i), _mm256_fmadd_pd(av, _mm256_loadu_pd(px.add(i)), _mm256_loadu_pd(py.add(i))));
            i += 4;
        }
        while i < n {
            *py.add(i) += a * *px.add(i);
            i += 1;
        }
    }
}

/// A choice of row kernels. The training loops are generic over it so that the choice is made
/// once per thread, not once per row.
pub trait Kernel: Copy + Send + Sync + 'static {
    /// `Σ a[i]·b[i]`.
    fn dot<T: Scalar>(a: &[T], b: &[T]) -> T;
    /// Fused `e += g·row; row += g·x`.
    fn update<T: Scalar>(g: T, x: &[T], row: &mut [T], e: &mut [T]);
    /// `y += a·x`.
    fn axpy<T: Scalar>(a: T, x: &[T], y: &mut [T]);
}

/// The portable kernels (any CPU).
#[derive(Clone, Copy, Debug, Default)]
pub struct Portable;

impl Kernel for Portable {
    #[inline(always)]
    fn dot<T: Scalar>(a: &[T], b: &[T]) -> T {
        T::dot_portable(a, b)
    }
    #[inline(always)]
    fn update<T: Scalar>(g: T, x: &[T], row: &mut [T], e: &mut [T]) {
        T::update_portable(g, x, row, e)
    }
    #[inline(always)]
    fn axpy<T: Scalar>(a: T, x: &[T], y: &mut [T]) {
        T::axpy_portable(a, x, y)
    }
}

/// The AVX2+FMA kernels. A value of this type is proof that the CPU supports them: the only
/// constructor is [`Avx2::detect`].
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug)]
pub struct Avx2(());

#[cfg(target_arch = "x86_64")]
impl Avx2 {
    /// `Some` when the running CPU supports AVX2 and FMA.
    pub fn detect() -> Option<Avx2> {
        (is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")).then_some(Avx2(()))
    }
}

#[cfg(target_arch = "x86_64")]
impl Kernel for Avx2 {
    #[inline(always)]
    fn dot<T: Scalar>(a: &[T], b: &[T]) -> T {
        // SAFETY: an `Avx2` value exists only after a successful feature check.
        unsafe { T::dot_avx2(a, b) }
    }
    #[inline(always)]
    fn update<T: Scalar>(g: T, x: &[T], row: &mut [T], e: &mut [T]) {
        // SAFETY: as above.
        unsafe { T::update_avx2(g, x, row, e) }
    }
    #[inline(always)]
    fn axpy<T: Scalar>(a: T, x: &[T], y: &mut [T]) {
        // SAFETY: as above.
        unsafe { T::axpy_avx2(a, x, y) }
    }
}

/// Which kernels to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum KernelChoice {
    /// AVX2+FMA when the CPU has it, else portable.
    #[default]
    Auto,
    /// Always the portable kernels (for testing and comparison).
    Portable,
}

impl KernelChoice {
    /// Whether this choice runs the AVX2 kernels on this CPU.
    pub fn uses_avx2(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            self == KernelChoice::Auto && Avx2::detect().is_some()
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }
}

/// Runs `f` with the chosen kernel, inside a function compiled with AVX2+FMA enabled when that
/// kernel is AVX2 (so the generic loop inlines the intrinsics).
pub(crate) trait WithKernel {
    type Out;
    fn run<K: Kernel>(self, k: K) -> Self::Out;
}

pub(crate) fn dispatch<W: WithKernel>(choice: KernelChoice, w: W) -> W::Out {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2<W: WithKernel>(w: W, k: Avx2) -> W::Out {
            w.run(k)
        }
        if choice == KernelChoice::Auto {
            if let Some(k) = Avx2::detect() {
                // SAFETY: the features were just detected.
                return unsafe { avx2(w, k) };
            }
        }
    }
    let _ = choice;
    w.run(Portable)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize, s: u64) -> Vec<f64> {
        let mut r = chi_autodiff::Rng::new(s);
        (0..n).map(|_| r.uniform(-1.0, 1.0)).collect()
    }

    #[test]
    fn avx2_equals_portable_for_all_lengths() {
        #[cfg(target_arch = "x86_64")]
        if let Some(_k) = Avx2::detect() {
            for n in 0..40 {
                let (a, b, c) = (data(n, 1), data(n, 2), data(n, 3));
                let d0 = f64::dot_portable(&a, &b);
                let d1 = <Avx2 as Kernel>::dot(&a, &b);
                assert!((d0 - d1).abs() < 1e-12, "n={n}: {d0} vs {d1}");
                let af: Vec<f32> = a.iter().map(|&x| x as f32).collect();
                let bf: Vec<f32> = b.iter().map(|&x| x as f32).collect();
                assert!((f32::dot_portable(&af, &bf) - <Avx2 as Kernel>::dot(&af, &bf)).abs() < 1e-4);
                let (mut r0, mut e0) = (b.clone(), c.clone());
                let (mut r1, mut e1) = (b.clone(), c.clone());
                f64::update_portable(0.3, &a, &mut r0, &mut e0);
                <Avx2 as Kernel>::update(0.3, &a, &mut r1, &mut e1);
                for i in 0..n {
                    assert!((r0[i] - r1[i]).abs() < 1e-14 && (e0[i] - e1[i]).abs() < 1e-14);
                    // The update reads the row before writing it.
                    assert!((e0[i] - (c[i] + 0.3 * b[i])).abs() < 1e-14);
                    assert!((r0[i] - (b[i] + 0.3 * a[i])).abs() < 1e-14);
                }
                let mut y0 = c.clone();
                let mut y1 = c.clone();
                f64::axpy_portable(-0.7, &a, &mut y0);
                <Avx2 as Kernel>::axpy(-0.7, &a, &mut y1);
                for i in 0..n {
                    assert!((y0[i] - y1[i]).abs() < 1e-14 && (y0[i] - (c[i] - 0.7 * a[i])).abs() < 1e-14);
                }
            }
        }
        let a = data(19, 4);
        let exact: f64 = a.iter().map(|x| x * x).sum();
        assert!((f64::dot_portable(&a, &a) - exact).abs() < 1e-12);
    }

    /// The f32 kernels' scalar tails touch exactly the row's elements: every length from 0 to
    /// 40 inside a longer buffer whose guard elements must stay as they were.
    #[test]
    fn f32_avx2_tails_equal_portable_and_leave_neighbours_alone() {
        #[cfg(target_arch = "x86_64")]
        if let Some(_k) = Avx2::detect() {
            let f = |v: Vec<f64>| -> Vec<f32> { v.iter().map(|&x| x as f32).collect() };
            for n in 0..40 {
                let (a, b, c) = (f(data(n + 8, 5)), f(data(n + 8, 6)), f(data(n + 8, 7)));
                let (mut r0, mut e0) = (b.clone(), c.clone());
                let (mut r1, mut e1) = (b.clone(), c.clone());
                f32::update_portable(0.3, &a[..n], &mut r0[..n], &mut e0[..n]);
                <Avx2 as Kernel>::update(0.3f32, &a[..n], &mut r1[..n], &mut e1[..n]);
                let mut y0 = c.clone();
                let mut y1 = c.clone();
                f32::axpy_portable(-0.7, &a[..n], &mut y0[..n]);
                <Avx2 as Kernel>::axpy(-0.7f32, &a[..n], &mut y1[..n]);
                for i in 0..n + 8 {
                    // One rounding per operation on both sides, fused or not: a few ulp apart.
                    assert!((r0[i] - r1[i]).abs() <= 1e-6 && (e0[i] - e1[i]).abs() <= 1e-6, "n={n} i={i}");
                    assert!((y0[i] - y1[i]).abs() <= 1e-6, "n={n} i={i}");
                    if i >= n {
                        assert_eq!((r1[i], e1[i], y1[i]), (b[i], c[i], c[i]), "n={n}: element {i} past the row changed");
                    }
                }
            }
        }
    }
}
