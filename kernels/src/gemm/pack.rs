//! Packing of A and B into the contiguous micro-panel layouts the microkernels stream, and the
//! thread-local, 64-byte-aligned scratch those packed panels live in.
//!
//! * Ã (an `mc × kc` block of A) is stored as ⌈mc/MR⌉ micro-panels; micro-panel `p` holds, for
//!   each `kk < kc`, the `MR` elements `A[p·MR + i, kk]` contiguously (rows past `mc` are zero).
//! * B̃ (a `kc × nc` block of B) is stored as ⌈nc/NR⌉ micro-panels; micro-panel `q` holds, for each
//!   `kk < kc`, the `NR` elements `B[kk, q·NR + j]` contiguously (columns past `nc` are zero).
//!
//! So the microkernel reads both operands with unit stride, whatever the strides of A and B
//! (transposes are handled here, once per block, instead of in the O(mnk) loop).

use super::microkernel::{is_f32, is_f64};
use super::MatRef;
use crate::Real;
use std::cell::RefCell;

/// One cache line; the scratch is a vector of these so every buffer starts 64-byte aligned.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub(crate) struct Line([u8; 64]);

/// A 64-byte-aligned, zero-initialised buffer of `n` elements of `T` (f32 or f64), owned.
pub(crate) struct AlignedBuf<T> {
    lines: Vec<Line>,
    len: usize,
    _t: std::marker::PhantomData<T>,
}

impl<T: Real> AlignedBuf<T> {
    pub(crate) fn zeroed(len: usize) -> Self {
        assert!(is_f32::<T>() || is_f64::<T>(), "gemm: only f32 and f64 are supported");
        AlignedBuf { lines: vec![Line([0; 64]); lines_for::<T>(len)], len, _t: std::marker::PhantomData }
    }
    pub(crate) fn as_slice(&self) -> &[T] {
        // SAFETY: T is f32 or f64 (checked in `zeroed`): every bit pattern is valid, alignment ≤ 64,
        // and the lines hold at least len · size_of::<T>() bytes.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr().cast::<T>(), self.len) }
    }
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`, with the unique borrow of `self`.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr().cast::<T>(), self.len) }
    }
}

thread_local! {
    /// Per-thread packing scratch. It only grows, so steady-state calls never allocate.
    static SCRATCH: RefCell<Vec<Line>> = const { RefCell::new(Vec::new()) };
}

fn lines_for<T>(n: usize) -> usize {
    (n * std::mem::size_of::<T>()).div_ceil(64)
}

/// Runs `f` with two zero-or-garbage-initialised, 64-byte-aligned buffers of `na` and `nb`
/// elements taken from this thread's scratch (freshly allocated, still 64-byte aligned, if the
/// scratch is too small, or if it is already in use further up this thread's stack, which happens
/// when a rayon worker holding it picks up another GEMM task while it waits).
///
/// The alignment is a safety requirement, not only a speed one: the microkernels read packed B
/// with aligned vector loads (`_mm256_load_ps`, `_mm512_load_ps`, ...).
pub(crate) fn with_scratch<T: Real, R>(na: usize, nb: usize, f: impl FnOnce(&mut [T], &mut [T]) -> R) -> R {
    assert!(is_f32::<T>() || is_f64::<T>(), "gemm scratch: only f32 and f64 are supported");
    let (la, lb) = (lines_for::<T>(na), lines_for::<T>(nb));
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut lines) => {
            if lines.len() < la + lb {
                lines.clear();
                lines.resize(la + lb, Line([0; 64]));
            }
            let (a, b) = carve::<T>(&mut lines, na, nb);
            f(a, b)
        }
        Err(_) => {
            let mut lines = vec![Line([0; 64]); la + lb];
            let (a, b) = carve::<T>(&mut lines, na, nb);
            f(a, b)
        }
    })
}

/// Splits `lines` into two disjoint, 64-byte-aligned element buffers of `na` and `nb` elements.
fn carve<T: Real>(lines: &mut [Line], na: usize, nb: usize) -> (&mut [T], &mut [T]) {
    let (la, lb) = (lines_for::<T>(na), lines_for::<T>(nb));
    assert!(lines.len() >= la + lb, "gemm scratch: {} lines for {la} + {lb}", lines.len());
    let (pa, pb) = lines.split_at_mut(la);
    // SAFETY: T is f32 or f64 (asserted by the caller): size 4 or 8, alignment ≤ 64, and every bit
    // pattern is a valid value. `pa` spans la·64 ≥ na·size_of::<T>() bytes starting 64-byte
    // aligned, `pb` (≥ lb lines) likewise for nb; the two regions are disjoint, and both borrow
    // `lines` mutably for the lifetime of the result, so they are exclusive to the caller.
    unsafe {
        (
            std::slice::from_raw_parts_mut(pa.as_mut_ptr().cast::<T>(), na),
            std::slice::from_raw_parts_mut(pb.as_mut_ptr().cast::<T>(), nb),
        )
    }
}

/// Packs `A[i0 .. i0+mc, p0 .. p0+kc]` into `dst` as `MR`-row micro-panels.
pub(crate) fn pack_a<T: Real>(mr: usize, a: &MatRef<T>, i0: usize, mc: usize, p0: usize, kc: usize, dst: &mut [T]) {
    let pack = match mr {
        12 => pack_panels_dispatch::<T, 12>,
        6 => pack_panels_dispatch::<T, 6>,
        4 => pack_panels_dispatch::<T, 4>,
        _ => unreachable!("no microkernel has MR = {mr}"),
    };
    pack(a.data, a.rs, a.cs, i0, mc, p0, kc, dst)
}

/// Packs `B[p0 .. p0+kc, j0 .. j0+nc]` into `dst` as `NR`-column micro-panels (the same layout as
/// packing the rows of Bᵀ).
pub(crate) fn pack_b<T: Real>(nr: usize, b: &MatRef<T>, p0: usize, kc: usize, j0: usize, nc: usize, dst: &mut [T]) {
    let pack = match nr {
        32 => pack_panels_dispatch::<T, 32>,
        16 => pack_panels_dispatch::<T, 16>,
        8 => pack_panels_dispatch::<T, 8>,
        _ => unreachable!("no microkernel has NR = {nr}"),
    };
    pack(b.data, b.cs, b.rs, j0, nc, p0, kc, dst)
}

/// [`pack_panels`] compiled for AVX2 when the CPU has it (the copies then move whole ymm vectors,
/// and the row-major-A transposes use the shuffles of [`x86`]), else the baseline build.
#[allow(clippy::too_many_arguments)]
fn pack_panels_dispatch<T: Real, const R: usize>(
    data: &[T],
    sr: usize,
    sk: usize,
    r0: usize,
    rlen: usize,
    k0: usize,
    klen: usize,
    dst: &mut [T],
) {
    #[cfg(target_arch = "x86_64")]
    if super::microkernel::has_avx2_fma() {
        // SAFETY: AVX2 (and FMA) were detected on this CPU.
        return unsafe { pack_panels_avx2::<T, R>(data, sr, sk, r0, rlen, k0, klen, dst) };
    }
    pack_panels::<T, R>(data, sr, sk, r0, rlen, k0, klen, dst, false)
}

/// # Safety
/// The CPU supports AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn pack_panels_avx2<T: Real, const R: usize>(
    data: &[T],
    sr: usize,
    sk: usize,
    r0: usize,
    rlen: usize,
    k0: usize,
    klen: usize,
    dst: &mut [T],
) {
    pack_panels::<T, R>(data, sr, sk, r0, rlen, k0, klen, dst, true)
}

/// Packs the `rlen × klen` block starting at `(r0, k0)` of the strided matrix `data[r·sr + k·sk]`
/// into `⌈rlen/R⌉` panels; panel `q` holds, for each `kk`, elements `(q·R + i, k0 + kk)` for `i < R`
/// contiguously, zero-padded past `rlen`.
/// `avx2`: the caller checked that the CPU has AVX2 (so the shuffle transposes may run).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn pack_panels<T: Real, const R: usize>(
    data: &[T],
    sr: usize,
    sk: usize,
    r0: usize,
    rlen: usize,
    k0: usize,
    klen: usize,
    dst: &mut [T],
    avx2: bool,
) {
    if rlen == 0 || klen == 0 {
        return;
    }
    // Every element read below has index ≤ `last` (the block's far corner); check it once, with
    // checked arithmetic so that no stride can wrap the bound in a release build.
    let last = (r0 + rlen - 1)
        .checked_mul(sr)
        .and_then(|r| r.checked_add((k0 + klen - 1).checked_mul(sk)?))
        .expect("gemm: packing: operand extent overflows usize");
    assert!(last < data.len(), "gemm: packing past the end of an operand ({last} ≥ {})", data.len());
    let src = data.as_ptr();
    let dst = &mut dst[..rlen.div_ceil(R) * R * klen];
    let full = rlen / R;
    if sr == 1 && full > 1 {
        // The panel direction is contiguous (e.g. row-major B): walk each source row across a
        // group of panels (GROUP·R contiguous elements) so reads stream through whole cache lines
        // and pages, instead of touching one short run per row and page per panel.
        const GROUP: usize = 8;
        for g0 in (0..full).step_by(GROUP) {
            let g1 = (g0 + GROUP).min(full);
            for kk in 0..klen {
                for q in g0..g1 {
                    let s = (r0 + q * R) + (k0 + kk) * sk;
                    // SAFETY: panel q < full is complete, so its R elements s .. s+R−1 have
                    // row ≤ r0 + rlen − 1 and column k0 + kk ≤ k0 + klen − 1: index ≤ `last`.
                    let v = unsafe { &*(src.add(s) as *const [T; R]) };
                    dst[q * R * klen + kk * R..][..R].copy_from_slice(v);
                }
            }
        }
        if full * R < rlen {
            pack_panels::<T, R>(data, sr, sk, r0 + full * R, rlen - full * R, k0, klen, &mut dst[full * R * klen..], avx2);
        }
        return;
    }
    for (panel, out) in dst.chunks_exact_mut(R * klen).enumerate() {
        let rb = r0 + panel * R;
        let rows = R.min(r0 + rlen - rb);
        let base = rb * sr + k0 * sk;
        if rows == R && sr == 1 {
            // The panel direction is contiguous: copy R elements per kk.
            for (kk, o) in out.chunks_exact_mut(R).enumerate() {
                // SAFETY: the R elements base + kk·sk + i (i < R) have index ≤ `last` (rows == R, so
                // rb + R − 1 ≤ r0 + rlen − 1, and kk < klen), which is < data.len() (asserted).
                let s = unsafe { &*(src.add(base + kk * sk) as *const [T; R]) };
                o.copy_from_slice(s);
            }
        } else if rows == R && sk == 1 && avx2 && (R == 6 || R == 12) && (is_f32::<T>() || is_f64::<T>()) {
            // Row-major A into 6-row panels (AVX2 kernels) or 12-row panels (AVX-512 kernels, as
            // two groups of 6 rows): 8 (f32) or 4 (f64) columns of 6 rows per step, transposed in
            // registers. (The 12-row panels packed element by element cost the AVX-512 sgemm ~10 %
            // at n = 288–512: measurements in `blocking.rs`.)
            #[cfg(target_arch = "x86_64")]
            for h in 0..R / 6 {
                // SAFETY: the 6 source rows rb + 6h .. rb + 6h + 5 ≤ r0 + rlen − 1 (rows == R) each
                // have klen elements from column k0 (sk = 1), all with index ≤ `last` < data.len()
                // (asserted); rows 6h .. 6h + 5 of every R-element group of `out` (R·klen
                // elements) are inside it; AVX2 is available (the caller's `avx2`).
                unsafe {
                    let (src, out) = (src.add(base + 6 * h * sr), out.as_mut_ptr().add(6 * h));
                    if is_f32::<T>() {
                        x86::pack6_rows_f32::<R>(src.cast(), sr, klen, out.cast())
                    } else {
                        x86::pack6_rows_f64::<R>(src.cast(), sr, klen, out.cast())
                    }
                }
            }
        } else if sk == 1 && avx2 && ((is_f32::<T>() && R >= 8) || (is_f64::<T>() && R >= 4)) {
            // Each of the panel's source rows is contiguous along k (B = Wᵀ for a row-major W,
            // the input gradient `dY·Wᵀ` of every linear layer; a row-major A's last, partial
            // panel): 8 × 8 (f32) or 4 × 4 (f64) blocks of rows × k transposed in registers, one
            // vector load per row and one vector store per k, instead of one scalar store per
            // element (below). Rows past the last whole group (a partial panel's) are copied one
            // element at a time, and a partial panel's padding is zeroed first.
            if rows < R {
                out.fill(T::ZERO);
            }
            let g = if is_f32::<T>() { 8 } else { 4 };
            let grouped = rows / g * g;
            // SAFETY: the source rows rb .. rb + rows − 1 ≤ r0 + rlen − 1 each have klen elements
            // from column k0 (sk = 1), all with index ≤ `last` < data.len() (asserted); `out`
            // holds R·klen elements; AVX2 is available (the caller's `avx2`).
            #[cfg(target_arch = "x86_64")]
            unsafe {
                transpose_row_groups::<T, R>(src.add(base), sr, rows, klen, out.as_mut_ptr())
            };
            for i in grouped..rows {
                // SAFETY: row rb + i < rb + rows ≤ r0 + rlen and columns k0 .. k0 + klen − 1 (sk =
                // 1): every index is ≤ `last` < data.len() (asserted).
                let row = unsafe { std::slice::from_raw_parts(src.add(base + i * sr), klen) };
                for (t, &v) in row.iter().enumerate() {
                    out[t * R + i] = v;
                }
            }
        } else if rows == R && sk == 1 {
            // Each of the panel's R source rows is contiguous along k (e.g. B = Wᵀ for a row-major
            // W): transpose in KB × R tiles, reading KB contiguous elements of every row (one
            // cache line for f64, half of one for f32) and writing them down one column of an
            // L1-resident KB·R output tile, instead of gathering R elements R strides apart for
            // every k.
            const KB: usize = 8;
            for kk0 in (0..klen).step_by(KB) {
                let kb = KB.min(klen - kk0);
                let tile = &mut out[kk0 * R..(kk0 + kb) * R];
                for i in 0..R {
                    // SAFETY: row rb + i ≤ r0 + rlen − 1 and columns k0 + kk0 .. k0 + kk0 + kb − 1
                    // ≤ k0 + klen − 1 (sk = 1), so every index is ≤ `last` < data.len() (asserted).
                    let row = unsafe { std::slice::from_raw_parts(src.add(base + i * sr + kk0), kb) };
                    for (t, &v) in row.iter().enumerate() {
                        tile[t * R + i] = v;
                    }
                }
            }
        } else if rows == R {
            for (kk, o) in out.chunks_exact_mut(R).enumerate() {
                for (i, oi) in o.iter_mut().enumerate() {
                    // SAFETY: row rb + i ≤ r0 + rlen − 1 and column k0 + kk ≤ k0 + klen − 1, so the
                    // index is ≤ `last` < data.len() (asserted).
                    *oi = unsafe { *src.add(base + i * sr + kk * sk) };
                }
            }
        } else if sr == 1 && avx2 {
            // The last, partial panel with the panel direction contiguous (row-major B with n not a
            // multiple of NR, a transposed A): `rows` contiguous elements per kk, zero-padded to
            // R, by masked vector loads and stores. (Element by element, this path was 83 % of a
            // 9 × 973 × 14 product.)
            #[cfg(target_arch = "x86_64")]
            // SAFETY: for kk < klen the `rows` elements base + kk·sk + i (i < rows) are rows
            // rb + i ≤ r0 + rlen − 1 of column k0 + kk ≤ k0 + klen − 1 (sr = 1): index ≤ `last`
            // < data.len() (asserted); `out` holds R·klen elements; AVX2 is available (the
            // caller's `avx2`). In 32-bit lanes (T is f32 or f64) every count doubles for f64,
            // so R·w ≤ 64.
            unsafe {
                // 32-bit lanes per element: 1 (f32) or 2 (f64).
                let w = std::mem::size_of::<T>() / 4;
                x86::pack_partial_lanes(src.add(base).cast(), w * sk, w * rows, w * R, klen, out.as_mut_ptr().cast())
            }
        } else {
            for (kk, o) in out.chunks_exact_mut(R).enumerate() {
                for (i, oi) in o.iter_mut().enumerate() {
                    *oi = if i < rows { data[base + i * sr + kk * sk] } else { T::ZERO };
                }
            }
        }
    }
}

/// `out[t·R + i] = src[i·sr + t]` for the first `rows / g · g` rows `i` (g = 8 for f32, 4 for
/// f64) and `t < klen`: g rows at a time transposed in registers (the rows past the last whole
/// group are left to the caller).
///
/// # Safety
/// The CPU supports AVX2; `T` is f32 or f64; `src + i·sr + t` is readable for `i < rows`,
/// `t < klen`; `out` holds `R·klen` writable elements; `rows ≤ R`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn transpose_row_groups<T: Real, const R: usize>(src: *const T, sr: usize, rows: usize, klen: usize, out: *mut T) {
    let g = if is_f32::<T>() { 8 } else { 4 };
    for h in 0..rows / g {
        // SAFETY: rows g·h .. g·h + g − 1 < rows of the source and of every R-element group of
        // `out` are inside the contract's ranges.
        unsafe {
            let (src, out) = (src.add(g * h * sr), out.add(g * h));
            if is_f32::<T>() {
                x86::pack8_rows_f32::<R>(src.cast(), sr, klen, out.cast())
            } else {
                x86::pack4_rows_f64::<R>(src.cast(), sr, klen, out.cast())
            }
        }
    }
}

/// AVX2 transposes for packing a row-major A into micro-panels (6 rows at a time) and a
/// transposed B (Wᵀ of a row-major W) into B̃ micro-panels (8 f32 or 4 f64 rows at a time), and
/// the masked copies of a partial panel whose panel direction is contiguous.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// `out[t·r + i] = src[t·sk + i]` for `i < rows`, `0` for `rows ≤ i < r`, `t < klen`, in
    /// 32-bit lanes: one masked load per 8 lanes (lanes at or past `rows` are neither read nor
    /// faulted on) and one store (masked past `r`). Moves bits only, so an f64 panel is the same
    /// copy with every count and stride doubled.
    ///
    /// # Safety
    /// The CPU supports AVX2; `rows ≤ r ≤ 64`; `src + t·sk + i` is readable for `t < klen`,
    /// `i < rows`; `out + t·r + i` is writable for `t < klen`, `i < r`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn pack_partial_lanes(src: *const f32, sk: usize, rows: usize, r: usize, klen: usize, out: *mut f32) {
        debug_assert!(rows <= r && r <= 64);
        let chunks = r.div_ceil(8);
        let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        // Chunk c covers lanes 8c .. 8c + 8: load lanes below `rows`, store lanes below r.
        let below = |limit: usize, c: usize| _mm256_cmpgt_epi32(_mm256_set1_epi32(limit.saturating_sub(8 * c).min(8) as i32), lanes);
        let load: [__m256i; 8] = std::array::from_fn(|c| below(rows, c));
        let store: [__m256i; 8] = std::array::from_fn(|c| below(r, c));
        for t in 0..klen {
            let (s, o) = (src.wrapping_add(t * sk), out.wrapping_add(t * r));
            for c in 0..chunks {
                // SAFETY: the loaded lanes are 8c + j < rows of step t, readable (contract);
                // masked-off lanes are not accessed. The stored lanes are 8c + j < r of step t,
                // writable (contract).
                unsafe {
                    let v = _mm256_maskload_ps(s.wrapping_add(8 * c), load[c]);
                    if 8 * c + 8 <= r {
                        _mm256_storeu_ps(o.add(8 * c), v);
                    } else {
                        _mm256_maskstore_ps(o.add(8 * c), store[c], v);
                    }
                }
            }
        }
    }

    /// The columns `t0 .. klen` the vector loop of a transposing pack left over (fewer than one
    /// vector), one element at a time: `out[t·OS + i] = rows[i][t]`.
    ///
    /// # Safety
    /// `rows[i] + t` is readable and `out + t·OS + i` writable for every row `i`, `t0 ≤ t < klen`.
    #[inline(always)]
    unsafe fn tail<T: Copy, const OS: usize>(rows: &[*const T], t0: usize, klen: usize, out: *mut T) {
        for t in t0..klen {
            for (i, ri) in rows.iter().enumerate() {
                // SAFETY: i and t are in the ranges of the contract.
                unsafe { *out.add(OS * t + i) = *ri.add(t) };
            }
        }
    }

    /// `out[t·OS + i] = src[i·sr + t]` for `i < 6`, `t < klen` (`OS` = 6 fills a 6-row panel,
    /// 12 one half of a 12-row panel).
    ///
    /// # Safety
    /// The CPU supports AVX2; `src + i·sr + t` is readable for `i < 6`, `t < klen`; `out + t·OS + i`
    /// is writable for `i < 6`, `t < klen`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn pack6_rows_f32<const OS: usize>(src: *const f32, sr: usize, klen: usize, out: *mut f32) {
        // SAFETY (whole body): every read is src + i·sr + t with i < 6, t < klen, and every
        // write is out + t·OS + i with i < 6, t < klen (contract).
        unsafe {
            let r: [*const f32; 6] = std::array::from_fn(|i| src.add(i * sr));
            let mut t = 0;
            while t + 8 <= klen {
                let x: [__m256; 6] = std::array::from_fn(|i| _mm256_loadu_ps(r[i].add(t)));
                // Pairs of rows interleaved: t01 = a0 b0 a1 b1 | a4 b4 a5 b5 (columns 0, 1, 4, 5).
                let lo01 = _mm256_unpacklo_ps(x[0], x[1]);
                let hi01 = _mm256_unpackhi_ps(x[0], x[1]);
                let lo23 = _mm256_unpacklo_ps(x[2], x[3]);
                let hi23 = _mm256_unpackhi_ps(x[2], x[3]);
                let lo45 = _mm256_castps_si256(_mm256_unpacklo_ps(x[4], x[5]));
                let hi45 = _mm256_castps_si256(_mm256_unpackhi_ps(x[4], x[5]));
                // Rows 0..4 of columns (c, c + 4) in the two lanes of q[c].
                let q = [
                    _mm256_shuffle_ps::<0x44>(lo01, lo23),
                    _mm256_shuffle_ps::<0xEE>(lo01, lo23),
                    _mm256_shuffle_ps::<0x44>(hi01, hi23),
                    _mm256_shuffle_ps::<0xEE>(hi01, hi23),
                ];
                // Rows 4, 5 of column c: 64-bit half (c & 1) of lane (c / 4) of lo45 (c mod 4 < 2)
                // or hi45.
                let p45 = [
                    _mm256_castsi256_si128(lo45),
                    _mm256_castsi256_si128(hi45),
                    _mm256_extracti128_si256::<1>(lo45),
                    _mm256_extracti128_si256::<1>(hi45),
                ];
                let o = out.add(OS * t);
                for c in 0..8 {
                    let rows03 = if c < 4 { _mm256_castps256_ps128(q[c]) } else { _mm256_extractf128_ps::<1>(q[c - 4]) };
                    _mm_storeu_ps(o.add(OS * c), rows03);
                    let pair = p45[(c / 4) * 2 + (c % 4) / 2];
                    let pair = if c % 2 == 0 { pair } else { _mm_unpackhi_epi64(pair, pair) };
                    _mm_storel_epi64(o.add(OS * c + 4).cast(), pair);
                }
                t += 8;
            }
            tail::<_, OS>(&r, t, klen, out);
        }
    }

    /// `out[t·OS + i] = src[i·sr + t]` for `i < 8`, `t < klen` (8 rows of a B̃ micro-panel of
    /// `OS` columns packed from Wᵀ).
    ///
    /// # Safety
    /// The CPU supports AVX2; `src + i·sr + t` is readable for `i < 8`, `t < klen`; `out + t·OS + i`
    /// is writable for `i < 8`, `t < klen`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn pack8_rows_f32<const OS: usize>(src: *const f32, sr: usize, klen: usize, out: *mut f32) {
        // SAFETY (whole body): every read is src + i·sr + t with i < 8, t < klen, and every
        // write is out + t·OS + i with i < 8, t < klen (contract).
        unsafe {
            let r: [*const f32; 8] = std::array::from_fn(|i| src.add(i * sr));
            let mut t = 0;
            while t + 8 <= klen {
                let x: [__m256; 8] = std::array::from_fn(|i| _mm256_loadu_ps(r[i].add(t)));
                // u[2p] = rows 2p, 2p+1 interleaved over columns 0, 1 | 4, 5; u[2p+1] over 2, 3 | 6, 7.
                let u: [__m256; 8] = std::array::from_fn(|j| if j % 2 == 0 { _mm256_unpacklo_ps(x[j], x[j + 1]) } else { _mm256_unpackhi_ps(x[j - 1], x[j]) });
                // v[c] (c < 4) = rows 0..4 of columns (c, c + 4) in its two lanes; v[4 + c] rows 4..8.
                let v: [__m256; 8] = std::array::from_fn(|j| {
                    let (lo, hi) = (u[4 * (j / 4) + (j % 4) / 2], u[4 * (j / 4) + 2 + (j % 4) / 2]);
                    if j % 2 == 0 { _mm256_shuffle_ps::<0x44>(lo, hi) } else { _mm256_shuffle_ps::<0xEE>(lo, hi) }
                });
                let o = out.add(OS * t);
                for c in 0..4 {
                    // Column c: the low lanes of v[c] (rows 0..4) and v[4 + c] (rows 4..8); column
                    // c + 4: their high lanes.
                    _mm256_storeu_ps(o.add(OS * c), _mm256_permute2f128_ps::<0x20>(v[c], v[4 + c]));
                    _mm256_storeu_ps(o.add(OS * (c + 4)), _mm256_permute2f128_ps::<0x31>(v[c], v[4 + c]));
                }
                t += 8;
            }
            tail::<_, OS>(&r, t, klen, out);
        }
    }

    /// `out[t·OS + i] = src[i·sr + t]` for `i < 4`, `t < klen`.
    ///
    /// # Safety
    /// As for [`pack8_rows_f32`] with 4 rows.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn pack4_rows_f64<const OS: usize>(src: *const f64, sr: usize, klen: usize, out: *mut f64) {
        // SAFETY (whole body): every read is src + i·sr + t with i < 4, t < klen, and every
        // write is out + t·OS + i with i < 4, t < klen (contract).
        unsafe {
            let r: [*const f64; 4] = std::array::from_fn(|i| src.add(i * sr));
            let mut t = 0;
            while t + 4 <= klen {
                let x: [__m256d; 4] = std::array::from_fn(|i| _mm256_loadu_pd(r[i].add(t)));
                let lo01 = _mm256_unpacklo_pd(x[0], x[1]); // a0 b0 | a2 b2
                let hi01 = _mm256_unpackhi_pd(x[0], x[1]); // a1 b1 | a3 b3
                let lo23 = _mm256_unpacklo_pd(x[2], x[3]);
                let hi23 = _mm256_unpackhi_pd(x[2], x[3]);
                let o = out.add(OS * t);
                _mm256_storeu_pd(o, _mm256_permute2f128_pd::<0x20>(lo01, lo23));
                _mm256_storeu_pd(o.add(OS), _mm256_permute2f128_pd::<0x20>(hi01, hi23));
                _mm256_storeu_pd(o.add(2 * OS), _mm256_permute2f128_pd::<0x31>(lo01, lo23));
                _mm256_storeu_pd(o.add(3 * OS), _mm256_permute2f128_pd::<0x31>(hi01, hi23));
                t += 4;
            }
            tail::<_, OS>(&r, t, klen, out);
        }
    }

    /// `out[t·OS + i] = src[i·sr + t]` for `i < 6`, `t < klen`.
    ///
    /// # Safety
    /// As for [`pack6_rows_f32`].
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn pack6_rows_f64<const OS: usize>(src: *const f64, sr: usize, klen: usize, out: *mut f64) {
        // SAFETY (whole body): as in `pack6_rows_f32`.
        unsafe {
            let r: [*const f64; 6] = std::array::from_fn(|i| src.add(i * sr));
            let mut t = 0;
            while t + 4 <= klen {
                let x: [__m256d; 6] = std::array::from_fn(|i| _mm256_loadu_pd(r[i].add(t)));
                let lo01 = _mm256_unpacklo_pd(x[0], x[1]); // a0 b0 | a2 b2
                let hi01 = _mm256_unpackhi_pd(x[0], x[1]); // a1 b1 | a3 b3
                let lo23 = _mm256_unpacklo_pd(x[2], x[3]);
                let hi23 = _mm256_unpackhi_pd(x[2], x[3]);
                let lo45 = _mm256_unpacklo_pd(x[4], x[5]);
                let hi45 = _mm256_unpackhi_pd(x[4], x[5]);
                let cols = [
                    _mm256_permute2f128_pd::<0x20>(lo01, lo23),
                    _mm256_permute2f128_pd::<0x20>(hi01, hi23),
                    _mm256_permute2f128_pd::<0x31>(lo01, lo23),
                    _mm256_permute2f128_pd::<0x31>(hi01, hi23),
                ];
                let rest = [
                    _mm256_castpd256_pd128(lo45),
                    _mm256_castpd256_pd128(hi45),
                    _mm256_extractf128_pd::<1>(lo45),
                    _mm256_extractf128_pd::<1>(hi45),
                ];
                let o = out.add(OS * t);
                for c in 0..4 {
                    _mm256_storeu_pd(o.add(OS * c), cols[c]);
                    _mm_storeu_pd(o.add(OS * c + 4), rest[c]);
                }
                t += 4;
            }
            tail::<_, OS>(&r, t, klen, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{pack_panels_dispatch, with_scratch};
    use crate::Real;

    /// Packs an `rlen × klen` block (from `(r0, k0)`) of a matrix with strides `(sr, sk)` whose
    /// unused slots hold NaN, and compares every element of the panels, padding included, with
    /// the layout the microkernels read: the padding must be zero (a finite value that cannot be
    /// subnormal), even though the kernels never store the padded rows or columns.
    fn check_layout<T: Real, const R: usize>(sr: usize, sk: usize, r0: usize, rlen: usize, k0: usize, klen: usize) {
        let len = (r0 + rlen - 1) * sr + (k0 + klen - 1) * sk + 1;
        let mut data = vec![T::from_f64(f64::NAN); len];
        for r in 0..r0 + rlen {
            for k in 0..k0 + klen {
                data[r * sr + k * sk] = T::from_f64((1 + r * 1000 + k) as f64);
            }
        }
        let panels = rlen.div_ceil(R);
        let mut dst = vec![T::from_f64(f64::NAN); panels * R * klen];
        pack_panels_dispatch::<T, R>(&data, sr, sk, r0, rlen, k0, klen, &mut dst);
        for q in 0..panels {
            for kk in 0..klen {
                for i in 0..R {
                    let r = q * R + i;
                    let want = if r < rlen { data[(r0 + r) * sr + (k0 + kk) * sk] } else { T::ZERO };
                    let got = dst[q * R * klen + kk * R + i];
                    assert!(got == want, "R = {R}, strides ({sr}, {sk}), block {rlen} × {klen} at ({r0}, {k0}): panel {q}, k {kk}, row {i}: {got:?} ≠ {want:?}");
                }
            }
        }
    }

    fn check_all<T: Real, const R: usize>() {
        for rlen in [1, 3, 5, 8, 9, 12, 13, 16, 31, 33, 45, 70] {
            for klen in [1, 7, 8, 19] {
                // The panel direction contiguous (row-major B, a transposed A), then each row
                // contiguous along k (a row-major A, B = Wᵀ), then neither.
                check_layout::<T, R>(1, rlen + 5, 2, rlen, 1, klen);
                check_layout::<T, R>(klen + 4, 1, 1, rlen, 3, klen);
                check_layout::<T, R>(2, 2 * (rlen + 3), 1, rlen, 2, klen);
            }
        }
    }

    /// Every panel width of the microkernels (B: NR = 32, 16, 8; A: MR = 12, 6, 4), full and
    /// partial panels, both element types.
    #[test]
    fn packed_panels_have_the_microkernel_layout_with_zero_padding() {
        check_all::<f32, 32>();
        check_all::<f32, 16>();
        check_all::<f32, 12>();
        check_all::<f32, 8>();
        check_all::<f32, 6>();
        check_all::<f32, 4>();
        check_all::<f64, 16>();
        check_all::<f64, 12>();
        check_all::<f64, 8>();
        check_all::<f64, 6>();
        check_all::<f64, 4>();
    }

    /// The microkernels read packed panels with aligned loads, so every scratch buffer must be
    /// 64-byte aligned, including the freshly allocated one used when the thread's scratch is
    /// already borrowed further up the stack (a rayon worker running a nested GEMM task).
    #[test]
    fn scratch_is_aligned_when_nested() {
        fn aligned<T>(s: &[T]) -> bool {
            s.as_ptr() as usize % 64 == 0
        }
        with_scratch::<f32, _>(37, 101, |a, b| {
            assert!(aligned(a) && aligned(b));
            a.fill(1.0);
            b.fill(2.0);
            with_scratch::<f32, _>(53, 7, |c, d| {
                assert!(aligned(c) && aligned(d), "nested (fresh) scratch is not 64-byte aligned");
                assert_eq!((c.len(), d.len()), (53, 7));
                c.fill(3.0);
                d.fill(4.0);
            });
            with_scratch::<f64, _>(9, 1, |c, d| assert!(aligned(c) && aligned(d)));
            // The outer buffers are untouched by the nested calls.
            assert!(a.iter().all(|&v| v == 1.0) && b.iter().all(|&v| v == 2.0));
        });
    }
}
