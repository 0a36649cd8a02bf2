//! AVX2 + FMA kernels written with `std::arch` intrinsics: the GEMM tiles and the GEMV dot/axpy.
//!
//! Every function here is `#[target_feature(enable = "avx2,fma")]` and is only called after
//! [`super::has_avx2_fma`] returned true.

use std::arch::x86_64::*;

/// `C[mr × nr] ← α·Ã·B̃ + β·C` in f32 for any `mr ≤ 6`, `nr ≤ 16`: dispatches to the
/// register-blocked kernel for exactly `mr` rows and `⌈nr/8⌉` vectors, so partial edge tiles
/// do no wasted FMAs on missing rows or vectors.
///
/// # Safety
/// The CPU supports AVX2 and FMA; `a` points to an Ã micro-panel (`6·k` readable f32s), `b` to a
/// B̃ micro-panel (`16·k` readable f32s, 32-byte aligned), and `c + i·rsc + j·csc` is valid
/// for reads and writes for `i < mr`, `j < nr`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn sgemm_tile(
    mr: usize,
    nr: usize,
    k: usize,
    alpha: f32,
    a: *const f32,
    b: *const f32,
    beta: f32,
    c: *mut f32,
    rsc: usize,
    csc: usize,
) {
    // SAFETY: forwarded contract (a packed Ã micro-panel is A with strides (1, 6)).
    unsafe { sgemm_tile_a::<false>(mr, nr, k, alpha, a, 1, 6, b, beta, c, rsc, csc) }
}

/// [`sgemm_tile`] reading A in place instead of from a packed Ã micro-panel: element `(i, kk)` of
/// the tile's A rows is `a[i·rsa + kk·csa]`, where `csa` must be 1 (rows of A contiguous). Used
/// for products too small for packing A to pay.
///
/// # Safety
/// As for [`sgemm_tile`], except that `csa == 1` and `a + i·rsa + kk` must be readable for
/// `i < mr`, `kk < k` (instead of a padded micro-panel).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn sgemm_tile_direct(
    mr: usize,
    nr: usize,
    k: usize,
    alpha: f32,
    a: *const f32,
    rsa: usize,
    csa: usize,
    b: *const f32,
    beta: f32,
    c: *mut f32,
    rsc: usize,
    csc: usize,
) {
    // SAFETY: forwarded contract.
    unsafe { sgemm_tile_a::<true>(mr, nr, k, alpha, a, rsa, csa, b, beta, c, rsc, csc) }
}

/// The row/vector dispatch behind [`sgemm_tile`] (`DIRECT = false`: packed Ã, strides (1, 6)) and
/// [`sgemm_tile_direct`].
///
/// # Safety
/// As for [`sgemm_tile_direct`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_tile_a<const DIRECT: bool>(
    mr: usize,
    nr: usize,
    k: usize,
    alpha: f32,
    a: *const f32,
    rsa: usize,
    csa: usize,
    b: *const f32,
    beta: f32,
    c: *mut f32,
    rsc: usize,
    csc: usize,
) {
    macro_rules! go {
        ($m:literal, $v:literal) => {
            // SAFETY: forwarded contract; `$m` = mr ≤ 6 and `$v`·8 ≥ nr.
            unsafe { sgemm_tile_mv::<$m, $v, DIRECT>(nr, k, alpha, a, rsa, csa, b, beta, c, rsc, csc) }
        };
    }
    match (mr, nr > 8) {
        (6, true) => go!(6, 2),
        (5, true) => go!(5, 2),
        (4, true) => go!(4, 2),
        (3, true) => go!(3, 2),
        (2, true) => go!(2, 2),
        (1, true) => go!(1, 2),
        (6, false) => go!(6, 1),
        (5, false) => go!(5, 1),
        (4, false) => go!(4, 1),
        (3, false) => go!(3, 1),
        (2, false) => go!(2, 1),
        (1, false) => go!(1, 1),
        _ => unreachable!("tile {mr}×{nr} exceeds 6×16"),
    }
}

/// The `M`-row, `V`-vector kernel behind [`sgemm_tile`]: `M·V` ymm accumulators (12 for the full
/// 6×16 tile), each k step doing `V` aligned loads of B̃, `M` broadcasts of Ã and `M·V` FMAs.
///
/// # Safety
/// As for [`sgemm_tile`] with `mr = M` and `nr ≤ V·8`.
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn sgemm_tile_mv<const M: usize, const V: usize, const DIRECT: bool>(
    nr: usize,
    k: usize,
    alpha: f32,
    a: *const f32,
    rsa: usize,
    csa: usize,
    b: *const f32,
    beta: f32,
    c: *mut f32,
    rsc: usize,
    csc: usize,
) {
    let mut ab = [[_mm256_setzero_ps(); V]; M];
    // A packed Ã micro-panel has compile-time strides, and a direct A unit column stride (the
    // callers' contract), so the step offsets fold to constants.
    debug_assert!(!DIRECT || csa == 1);
    let (rsa, csa) = if DIRECT { (rsa, 1) } else { (1, 6) };
    let (mut a, mut b) = (a, b);
    if csc == 1 {
        for i in 0..M {
            // Prefetch hint only (never faults): the C rows this tile will update.
            _mm_prefetch::<_MM_HINT_T0>(c.wrapping_add(i * rsc) as *const i8);
        }
    }
    // One rank-1 update of the tile (step `u` of the current group of steps).
    macro_rules! step {
        ($u:expr) => {{
            let mut bv = [_mm256_setzero_ps(); V];
            for (v, bv) in bv.iter_mut().enumerate() {
                // SAFETY: B̃ holds 16·k elements, 32-byte aligned, and step $u is < the steps left.
                *bv = unsafe { _mm256_load_ps(b.add(16 * $u + 8 * v)) };
            }
            for (i, abi) in ab.iter_mut().enumerate() {
                // SAFETY: row i < M = mr and step $u < the steps left are inside A (packed: Ã
                // holds 6·k elements; direct: the caller's strided rows).
                let x = unsafe { _mm256_broadcast_ss(&*a.add(i * rsa + $u * csa)) };
                for v in 0..V {
                    abi[v] = _mm256_fmadd_ps(x, bv[v], abi[v]);
                }
            }
        }};
    }
    let mut left = k;
    while left >= 4 {
        if !DIRECT {
            // Prefetch hint (never faults): the Ã panel ahead of the one in use.
            _mm_prefetch::<_MM_HINT_T0>(a.wrapping_add(6 * 4 * 16) as *const i8);
        }
        step!(0);
        step!(1);
        step!(2);
        step!(3);
        // SAFETY: 4 steps consumed of at least 4 left: B̃'s pointer stays in (or one past) its panel.
        unsafe {
            // Wrapping: a direct A's pointer can step past its buffer after the last step.
            a = a.wrapping_add(4 * csa);
            b = b.add(4 * 16);
        }
        left -= 4;
    }
    while left > 0 {
        step!(0);
        // SAFETY: one step consumed of at least one left.
        unsafe {
            a = a.wrapping_add(csa);
            b = b.add(16);
        }
        left -= 1;
    }
    let va = _mm256_set1_ps(alpha);
    if csc == 1 && nr == V * 8 {
        let vb = _mm256_set1_ps(beta);
        for (i, abi) in ab.iter().enumerate() {
            for (v, &acc) in abi.iter().enumerate() {
                // SAFETY: row i < M = mr and columns v·8 .. v·8 + 8 ≤ nr of C are valid
                // (contract) and contiguous (csc == 1).
                unsafe {
                    let cp = c.add(i * rsc + v * 8);
                    let r = _mm256_mul_ps(va, acc);
                    if beta == 0.0 {
                        _mm256_storeu_ps(cp, r);
                    } else {
                        _mm256_storeu_ps(cp, _mm256_fmadd_ps(vb, _mm256_loadu_ps(cp), r));
                    }
                }
            }
        }
    } else {
        // Partial columns or non-unit column stride: through a buffer, element by element.
        let mut buf = [0.0f32; 16];
        for (i, abi) in ab.iter().enumerate() {
            for (v, &acc) in abi.iter().enumerate() {
                // SAFETY: buf has 16 ≥ V·8 elements; vector v covers v·8 .. v·8 + 8.
                unsafe { _mm256_storeu_ps(buf.as_mut_ptr().add(v * 8), _mm256_mul_ps(va, acc)) };
            }
            for (j, &x) in buf[..nr].iter().enumerate() {
                // SAFETY: i < mr and j < nr: inside the tile the caller guarantees.
                let cij = unsafe { &mut *c.add(i * rsc + j * csc) };
                *cij = if beta == 0.0 { x } else { x + beta * *cij };
            }
        }
    }
}

/// `Σ a[i]·x[i]` over `n` f32s with 4 independent ymm accumulators.
///
/// # Safety
/// The CPU supports AVX2 and FMA; `a` and `x` point to `n` readable f32s.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn sdot(n: usize, a: *const f32, x: *const f32) -> f32 {
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut i = 0;
    while i + 4 * 8 <= n {
        for (u, acc) in acc.iter_mut().enumerate() {
            // SAFETY: i + 4·8 ≤ n, so these 8 elements are inside both vectors.
            unsafe { *acc = _mm256_fmadd_ps(_mm256_loadu_ps(a.add(i + u * 8)), _mm256_loadu_ps(x.add(i + u * 8)), *acc) };
        }
        i += 4 * 8;
    }
    while i + 8 <= n {
        // SAFETY: i + 8 ≤ n.
        unsafe { acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(a.add(i)), _mm256_loadu_ps(x.add(i)), acc[0]) };
        i += 8;
    }
    let s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    let mut lanes = [0.0f32; 8];
    // SAFETY: `lanes` holds exactly 8 elements.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), s) };
    let mut total: f32 = lanes.iter().sum();
    while i < n {
        // SAFETY: i < n.
        unsafe { total += *a.add(i) * *x.add(i) };
        i += 1;
    }
    total
}

/// `y[i] += Σ_q s[q]·cols[q][i]` for `i < n` (4 columns at once: one load/store of `y` per 4 FMAs).
///
/// # Safety
/// The CPU supports AVX2 and FMA; `y` points to `n` writable f32s not aliased by any `cols[q]`, and
/// each `cols[q]` to `n` readable f32s.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn saxpy4(n: usize, y: *mut f32, s: [f32; 4], cols: [*const f32; 4]) {
    let vs = s.map(|v| _mm256_set1_ps(v));
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 ≤ n for y and for every column.
        unsafe {
            let mut acc = _mm256_loadu_ps(y.add(i));
            for q in 0..4 {
                acc = _mm256_fmadd_ps(vs[q], _mm256_loadu_ps(cols[q].add(i)), acc);
            }
            _mm256_storeu_ps(y.add(i), acc);
        }
        i += 8;
    }
    while i < n {
        // SAFETY: i < n.
        unsafe {
            for q in 0..4 {
                *y.add(i) += s[q] * *cols[q].add(i);
            }
        }
        i += 1;
    }
}

/// `C[mr × nr] ← α·Ã·B̃ + β·C` in f64 for any `mr ≤ 6`, `nr ≤ 8`: dispatches to the
/// register-blocked kernel for exactly `mr` rows and `⌈nr/4⌉` vectors, so partial edge tiles
/// do no wasted FMAs on missing rows or vectors.
///
/// # Safety
/// The CPU supports AVX2 and FMA; `a` points to an Ã micro-panel (`6·k` readable f64s), `b` to a
/// B̃ micro-panel (`8·k` readable f64s, 32-byte aligned), and `c + i·rsc + j·csc` is valid
/// for reads and writes for `i < mr`, `j < nr`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn dgemm_tile(
    mr: usize,
    nr: usize,
    k: usize,
    alpha: f64,
    a: *const f64,
    b: *const f64,
    beta: f64,
    c: *mut f64,
    rsc: usize,
    csc: usize,
) {
    // SAFETY: forwarded contract (a packed Ã micro-panel is A with strides (1, 6)).
    unsafe { dgemm_tile_a::<false>(mr, nr, k, alpha, a, 1, 6, b, beta, c, rsc, csc) }
}

/// [`dgemm_tile`] reading A in place instead of from a packed Ã micro-panel: element `(i, kk)` of
/// the tile's A rows is `a[i·rsa + kk·csa]`, where `csa` must be 1 (rows of A contiguous). Used
/// for products too small for packing A to pay.
///
/// # Safety
/// As for [`dgemm_tile`], except that `csa == 1` and `a + i·rsa + kk` must be readable for
/// `i < mr`, `kk < k` (instead of a padded micro-panel).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn dgemm_tile_direct(
    mr: usize,
    nr: usize,
    k: usize,
    alpha: f64,
    a: *const f64,
    rsa: usize,
    csa: usize,
    b: *const f64,
    beta: f64,
    c: *mut f64,
    rsc: usize,
    csc: usize,
) {
    // SAFETY: forwarded contract.
    unsafe { dgemm_tile_a::<true>(mr, nr, k, alpha, a, rsa, csa, b, beta, c, rsc, csc) }
}

/// The row/vector dispatch behind [`dgemm_tile`] (`DIRECT = false`: packed Ã, strides (1, 6)) and
/// [`dgemm_tile_direct`].
///
/// # Safety
/// As for [`dgemm_tile_direct`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn dgemm_tile_a<const DIRECT: bool>(
    mr: usize,
    nr: usize,
    k: usize,
    alpha: f64,
    a: *const f64,
    rsa: usize,
    csa: usize,
    b: *const f64,
    beta: f64,
    c: *mut f64,
    rsc: usize,
    csc: usize,
) {
    macro_rules! go {
        ($m:literal, $v:literal) => {
            // SAFETY: forwarded contract; `$m` = mr ≤ 6 and `$v`·4 ≥ nr.
            unsafe { dgemm_tile_mv::<$m, $v, DIRECT>(nr, k, alpha, a, rsa, csa, b, beta, c, rsc, csc) }
        };
    }
    match (mr, nr > 4) {
        (6, true) => go!(6, 2),
        (5, true) => go!(5, 2),
        (4, true) => go!(4, 2),
        (3, true) => go!(3, 2),
        (2, true) => go!(2, 2),
        (1, true) => go!(1, 2),
        (6, false) => go!(6, 1),
        (5, false) => go!(5, 1),
        (4, false) => go!(4, 1),
        (3, false) => go!(3, 1),
        (2, false) => go!(2, 1),
        (1, false) => go!(1, 1),
        _ => unreachable!("tile {mr}×{nr} exceeds 6×8"),
    }
}

/// The `M`-row, `V`-vector kernel behind [`dgemm_tile`]: `M·V` ymm accumulators (12 for the full
/// 6×8 tile), each k step doing `V` aligned loads of B̃, `M` broadcasts of Ã and `M·V` FMAs.
///
/// # Safety
/// As for [`dgemm_tile`] with `mr = M` and `nr ≤ V·4`.
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn dgemm_tile_mv<const M: usize, const V: usize, const DIRECT: bool>(
    nr: usize,
    k: usize,
    alpha: f64,
    a: *const f64,
    rsa: usize,
    csa: usize,
    b: *const f64,
    beta: f64,
    c: *mut f64,
    rsc: usize,
    csc: usize,
) {
    let mut ab = [[_mm256_setzero_pd(); V]; M];
    // A packed Ã micro-panel has compile-time strides, and a direct A unit column stride (the
    // callers' contract), so the step offsets fold to constants.
    debug_assert!(!DIRECT || csa == 1);
    let (rsa, csa) = if DIRECT { (rsa, 1) } else { (1, 6) };
    let (mut a, mut b) = (a, b);
    if csc == 1 {
        for i in 0..M {
            // Prefetch hint only (never faults): the C rows this tile will update.
            _mm_prefetch::<_MM_HINT_T0>(c.wrapping_add(i * rsc) as *const i8);
        }
    }
    // One rank-1 update of the tile (step `u` of the current group of steps).
    macro_rules! step {
        ($u:expr) => {{
            let mut bv = [_mm256_setzero_pd(); V];
            for (v, bv) in bv.iter_mut().enumerate() {
                // SAFETY: B̃ holds 8·k elements, 32-byte aligned, and step $u is < the steps left.
                *bv = unsafe { _mm256_load_pd(b.add(8 * $u + 4 * v)) };
            }
            for (i, abi) in ab.iter_mut().enumerate() {
                // SAFETY: row i < M = mr and step $u < the steps left are inside A (packed: Ã
                // holds 6·k elements; direct: the caller's strided rows).
                let x = unsafe { _mm256_broadcast_sd(&*a.add(i * rsa + $u * csa)) };
                for v in 0..V {
                    abi[v] = _mm256_fmadd_pd(x, bv[v], abi[v]);
                }
            }
        }};
    }
    let mut left = k;
    while left >= 4 {
        if !DIRECT {
            // Prefetch hint (never faults): the Ã panel ahead of the one in use.
            _mm_prefetch::<_MM_HINT_T0>(a.wrapping_add(6 * 4 * 8) as *const i8);
        }
        step!(0);
        step!(1);
        step!(2);
        step!(3);
        // SAFETY: 4 steps consumed of at least 4 left: B̃'s pointer stays in (or one past) its panel.
        unsafe {
            // Wrapping: a direct A's pointer can step past its buffer after the last step.
            a = a.wrapping_add(4 * csa);
            b = b.add(4 * 8);
        }
        left -= 4;
    }
    while left > 0 {
        step!(0);
        // SAFETY: one step consumed of at least one left.
        unsafe {
            a = a.wrapping_add(csa);
            b = b.add(8);
        }
        left -= 1;
    }
    let va = _mm256_set1_pd(alpha);
    if csc == 1 && nr == V * 4 {
        let vb = _mm256_set1_pd(beta);
        for (i, abi) in ab.iter().enumerate() {
            for (v, &acc) in abi.iter().enumerate() {
                // SAFETY: row i < M = mr and columns v·4 .. v·4 + 4 ≤ nr of C are valid
                // (contract) and contiguous (csc == 1).
                unsafe {
                    let cp = c.add(i * rsc + v * 4);
                    let r = _mm256_mul_pd(va, acc);
                    if beta == 0.0 {
                        _mm256_storeu_pd(cp, r);
                    } else {
                        _mm256_storeu_pd(cp, _mm256_fmadd_pd(vb, _mm256_loadu_pd(cp), r));
                    }
                }
            }
        }
    } else {
        // Partial columns or non-unit column stride: through a buffer, element by element.
        let mut buf = [0.0f64; 8];
        for (i, abi) in ab.iter().enumerate() {
            for (v, &acc) in abi.iter().enumerate() {
                // SAFETY: buf has 8 ≥ V·4 elements; vector v covers v·4 .. v·4 + 4.
                unsafe { _mm256_storeu_pd(buf.as_mut_ptr().add(v * 4), _mm256_mul_pd(va, acc)) };
            }
            for (j, &x) in buf[..nr].iter().enumerate() {
                // SAFETY: i < mr and j < nr: inside the tile the caller guarantees.
                let cij = unsafe { &mut *c.add(i * rsc + j * csc) };
                *cij = if beta == 0.0 { x } else { x + beta * *cij };
            }
        }
    }
}

/// `Σ a[i]·x[i]` over `n` f64s with 4 independent ymm accumulators.
///
/// # Safety
/// The CPU supports AVX2 and FMA; `a` and `x` point to `n` readable f64s.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn ddot(n: usize, a: *const f64, x: *const f64) -> f64 {
    let mut acc = [_mm256_setzero_pd(); 4];
    let mut i = 0;
    while i + 4 * 4 <= n {
        for (u, acc) in acc.iter_mut().enumerate() {
            // SAFETY: i + 4·4 ≤ n, so these 4 elements are inside both vectors.
            unsafe { *acc = _mm256_fmadd_pd(_mm256_loadu_pd(a.add(i + u * 4)), _mm256_loadu_pd(x.add(i + u * 4)), *acc) };
        }
        i += 4 * 4;
    }
    while i + 4 <= n {
        // SAFETY: i + 4 ≤ n.
        unsafe { acc[0] = _mm256_fmadd_pd(_mm256_loadu_pd(a.add(i)), _mm256_loadu_pd(x.add(i)), acc[0]) };
        i += 4;
    }
    let s = _mm256_add_pd(_mm256_add_pd(acc[0], acc[1]), _mm256_add_pd(acc[2], acc[3]));
    let mut lanes = [0.0f64; 4];
    // SAFETY: `lanes` holds exactly 4 elements.
    unsafe { _mm256_storeu_pd(lanes.as_mut_ptr(), s) };
    let mut total: f64 = lanes.iter().sum();
    while i < n {
        // SAFETY: i < n.
        unsafe { total += *a.add(i) * *x.add(i) };
        i += 1;
    }
    total
}

/// `y[i] += Σ_q s[q]·cols[q][i]` for `i < n` (4 columns at once: one load/store of `y` per 4 FMAs).
///
/// # Safety
/// The CPU supports AVX2 and FMA; `y` points to `n` writable f64s not aliased by any `cols[q]`, and
/// each `cols[q]` to `n` readable f64s.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn daxpy4(n: usize, y: *mut f64, s: [f64; 4], cols: [*const f64; 4]) {
    let vs = s.map(|v| _mm256_set1_pd(v));
    let mut i = 0;
    while i + 4 <= n {
        // SAFETY: i + 4 ≤ n for y and for every column.
        unsafe {
            let mut acc = _mm256_loadu_pd(y.add(i));
            for q in 0..4 {
                acc = _mm256_fmadd_pd(vs[q], _mm256_loadu_pd(cols[q].add(i)), acc);
            }
            _mm256_storeu_pd(y.add(i), acc);
        }
        i += 4;
    }
    while i < n {
        // SAFETY: i < n.
        unsafe {
            for q in 0..4 {
                *y.add(i) += s[q] * *cols[q].add(i);
            }
        }
        i += 1;
    }
}
