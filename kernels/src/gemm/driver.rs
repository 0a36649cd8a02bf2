//! The BLIS five-loop driver (see [`super::blocking`] for the loop nest and constants) and its
//! multi-threaded split. When `m` fits one MC block, B̃ panels are narrowed to
//! [`SMALL_M_PANELS`] micro-panels so they are packed into, and consumed from, L2.

use super::blocking::Blocking;
use super::microkernel::Kernel;
use super::pack::{pack_a, pack_b, with_scratch};
use super::{MatMut, MatRef};
use crate::Real;
use std::marker::PhantomData;

/// A raw view of (a sub-block of) the output matrix, so that threads can write disjoint tiles of
/// one strided `C` (which cannot be split into disjoint `&mut` slices when, say, column blocks of
/// a row-major matrix interleave in memory).
///
/// Invariant: every element `(i, j)` with `i < rows`, `j < cols` lies inside the `&mut` slice this
/// view was made from (checked by [`MatMut::check`] before construction), and while views exist,
/// that borrow is held and different views cover disjoint element sets.
pub(crate) struct CView<'a, T> {
    ptr: *mut T,
    pub rows: usize,
    pub cols: usize,
    pub rs: usize,
    pub cs: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: a CView is a (disjoint, see the invariant) region of a `&mut [T]`, which is Send/Sync for
// `T: Send`/`Sync`; tasks sharing a `&CView` only ever write disjoint tiles through it.
unsafe impl<T: Send> Send for CView<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for CView<'_, T> {}

impl<'a, T> CView<'a, T> {
    /// A view of all of `c` (whose bounds the caller has checked).
    pub(crate) fn new(c: &'a mut MatMut<'_, T>) -> Self {
        CView { ptr: c.data.as_mut_ptr(), rows: c.rows, cols: c.cols, rs: c.rs, cs: c.cs, _borrow: PhantomData }
    }
    /// The sub-block `[i0, i0+rows) × [j0, j0+cols)` (must lie inside this view).
    fn sub(&self, i0: usize, rows: usize, j0: usize, cols: usize) -> CView<'a, T> {
        debug_assert!(i0 + rows <= self.rows && j0 + cols <= self.cols);
        CView {
            ptr: self.ptr.wrapping_add(i0 * self.rs + j0 * self.cs),
            rows,
            cols,
            rs: self.rs,
            cs: self.cs,
            _borrow: PhantomData,
        }
    }
}

fn rows_of<'a, T>(a: &MatRef<'a, T>, i0: usize, rows: usize) -> MatRef<'a, T> {
    MatRef { data: &a.data[i0 * a.rs..], rows, ..*a }
}

/// The B operand of the driver: a strided matrix (packed block by block during the product) or
/// one packed in advance by [`super::PackedB`].
#[derive(Clone, Copy)]
pub(crate) enum BSrc<'a, T> {
    Mat(MatRef<'a, T>),
    /// Columns `j0 .. j0 + n` of a pre-packed `k × n_all` matrix: for each KC block starting at
    /// `pc`, `⌈n_all/NR⌉` micro-panels of `NR × kc` elements, starting at `pc · panels · NR`.
    Packed { data: &'a [T], panels: usize, j0: usize, n: usize },
}

impl<'a, T> BSrc<'a, T> {
    fn cols(&self) -> usize {
        match self {
            BSrc::Mat(b) => b.cols,
            BSrc::Packed { n, .. } => *n,
        }
    }
    /// Columns `j0 .. j0 + cols` (`j0` a multiple of NR for a packed B).
    fn cols_of(&self, j0: usize, cols: usize) -> Self {
        match *self {
            BSrc::Mat(ref b) => BSrc::Mat(MatRef { data: &b.data[j0 * b.cs..], cols, ..*b }),
            BSrc::Packed { data, panels, j0: base, .. } => BSrc::Packed { data, panels, j0: base + j0, n: cols },
        }
    }
}

/// `C ← α·A·B + β·C` on up to `threads` threads of the current rayon pool.
///
/// The larger of `m` and `n` is cut into contiguous blocks (aligned to the tile), and each block
/// runs the whole sequential algorithm with its own packed Ã and B̃: on this 2-core machine each
/// core has its own L2, so sharing B̃ would save only a little packing while adding a barrier per
/// KC step. The blocks are shared out by [`crate::team::for_each`] (with two threads: the caller
/// and the spinning partner, whichever is free takes the next block). When `threads` is the
/// whole pool, there are up to [`TASKS_PER_THREAD`] blocks per thread (each at least
/// [`MIN_TASK_FLOPS`]), so that the load rebalances when a core is busy with another process
/// (this machine is shared); otherwise exactly `threads` blocks. At most `threads` threads take
/// part either way.
pub(crate) fn gemm<T: Real>(kern: &Kernel<T>, threads: usize, alpha: T, a: MatRef<T>, b: BSrc<T>, beta: T, c: CView<T>) {
    debug_assert_eq!(b.cols(), c.cols);
    let (m, n, k) = (c.rows, c.cols, a.cols);
    let split_n = n >= m;
    let (len, unit) = if split_n { (n, kern.nr) } else { (m, kern.mr) };
    let units = len.div_ceil(unit);
    let wanted = if threads > 1 && threads >= rayon::current_num_threads() {
        let by_work = 2 * m * n * k / MIN_TASK_FLOPS;
        // Each block packs the whole of the other operand, so blocks narrower than MIN_TASK_SPAN
        // spend too much of their time packing (an NR = 32 block of a 256³ product: ~40 %).
        let by_span = len / MIN_TASK_SPAN;
        (threads * TASKS_PER_THREAD).min(by_work).min(by_span).max(threads)
    } else {
        threads
    };
    let tasks = wanted.min(units).max(1);
    if tasks == 1 {
        return gemm_seq(kern, alpha, a, b, beta, &c);
    }
    let per = units.div_ceil(tasks) * unit;
    let tasks = len.div_ceil(per);
    let c = &c;
    crate::team::for_each(threads, 0..tasks, |t| {
        let start = t * per;
        let size = per.min(len - start);
        if split_n {
            gemm_seq(kern, alpha, a, b.cols_of(start, size), beta, &c.sub(0, m, start, size));
        } else {
            gemm_seq(kern, alpha, rows_of(&a, start, size), b, beta, &c.sub(start, size, 0, n));
        }
    });
}

/// Upper bound on blocks per thread in [`gemm`] (more blocks: better balance, more packing of
/// the operand every block needs in full). Measured (Zen 5, 2 threads, sgemm n = 256…2048,
/// `chi --threads 2 bench gemm`): 4 → 1.06–1.19× matrixmultiply, 2 → 1.19–1.25×.
const TASKS_PER_THREAD: usize = 2;
/// Lower bound on a block's work in [`gemm`] (~50 µs on one core).
const MIN_TASK_FLOPS: usize = 2_000_000;
/// Lower bound on a block's width (rows or columns) in [`gemm`] when there are more blocks than
/// threads: packing the shared operand costs ~1/width of the block's FMAs. Measured (Zen 5, 2
/// threads, sgemm n = 256): without it, 8 blocks of 32 columns ran at 0.97× matrixmultiply.
const MIN_TASK_SPAN: usize = 128;

/// Micro-panels per B̃ panel when `m ≤ MC` (8 × KC × NR = 128 KiB for both AVX2 kernels).
const SMALL_M_PANELS: usize = 8;

/// Largest number of B̃ micro-panels per packed Ã block for which the tiles read a row-major A in
/// place (when the kernel can) instead of packing it. Measured with `chi bench gemm`-style
/// alternating runs on the Zen 3 machine, AVX2 sgemm, 1 thread (m × k × n): 2048 × 256 × 16 (1
/// panel) 61.5 vs 48.4 GFLOPS (direct vs packed, medians of 5), 512 × 512 × 64 (4) 80.3 vs 72.8,
/// 16 × 1024 × 2048 (8, narrowed) 38.5 vs 39.5; instructions (callgrind) per 64³ call 72.8k vs
/// 76.9k, per 128³ call equal. The AVX-512 kernels (NR = 32 / 16, so n ≤ 256 / 128 here) on the
/// Intel Xeon of `blocking.rs`, square sizes 32…256, 1 thread, medians of 5 alternating runs:
/// sgemm 0.58–1.14× matrixmultiply packed, 1.12–1.39× direct (n = 64: 58 → 103 GFLOPS); dgemm
/// 0.72–1.38× packed, 1.23–1.40× direct.
const DIRECT_A_MAX_PANELS: usize = SMALL_M_PANELS;

/// The sequential five-loop algorithm on the calling thread.
fn gemm_seq<T: Real>(kern: &Kernel<T>, alpha: T, a: MatRef<T>, b: BSrc<T>, beta: T, c: &CView<T>) {
    let (m, n, k) = (c.rows, c.cols, a.cols);
    let (mr, nr) = (kern.mr, kern.nr);
    let bl = kern.blocking;
    // With a single MC block (small m, e.g. an RNN step with batch 16), B̃ is used by one row
    // block only, so a KC × NC panel would be written to L3 and read back once. Use a narrow
    // panel (SMALL_M_PANELS micro-panels, 128 KiB) instead: it is packed into L2 and consumed there.
    // (A pre-packed B is read in place, so it needs neither the narrowing nor scratch.)
    let packed = matches!(b, BSrc::Packed { .. });
    let bl = if m <= bl.mc && !packed { Blocking { nc: bl.nc.min(SMALL_M_PANELS * nr), ..bl } } else { bl };
    // Packing A pays when each packed element feeds many B̃ micro-panels; with at most
    // DIRECT_A_MAX_PANELS of them per packing (small n, or the narrowed panels of a small m, where
    // A would be packed again for every B̃ panel), the tiles read row-major A in place instead.
    let direct = kern.tile_direct.filter(|_| a.cs == 1 && n.min(bl.nc).div_ceil(nr) <= DIRECT_A_MAX_PANELS);
    let a_len = if direct.is_some() { 0 } else { m.min(bl.mc).div_ceil(mr) * mr * k.min(bl.kc) };
    let b_len = if packed { 0 } else { n.min(bl.nc).div_ceil(nr) * nr * k.min(bl.kc) };
    with_scratch::<T, _>(a_len, b_len, |apack, bpack| {
        for jc in (0..n).step_by(bl.nc) {
            let nc = bl.nc.min(n - jc);
            for pc in (0..k).step_by(bl.kc) {
                let kc = bl.kc.min(k - pc);
                // Later KC slices accumulate into what the first one wrote.
                let beta = if pc == 0 { beta } else { T::ONE };
                let bpack: &[T] = match b {
                    BSrc::Mat(ref b) => {
                        pack_b(nr, b, pc, kc, jc, nc, bpack);
                        bpack
                    }
                    BSrc::Packed { data, panels, j0, .. } => {
                        debug_assert!((j0 + jc) % nr == 0);
                        let start = pc * panels * nr + (j0 + jc) / nr * nr * kc;
                        &data[start..start + nc.div_ceil(nr) * nr * kc]
                    }
                };
                for ic in (0..m).step_by(bl.mc) {
                    let mc = bl.mc.min(m - ic);
                    if direct.is_none() {
                        pack_a(mr, &a, ic, mc, pc, kc, apack);
                    }
                    for jr in (0..nc).step_by(nr) {
                        let nrr = nr.min(nc - jr);
                        let bp = &bpack[jr * kc..(jr + nr) * kc];
                        for ir in (0..mc).step_by(mr) {
                            let mrr = mr.min(mc - ir);
                            let ct = c.sub(ic + ir, mrr, jc + jr, nrr);
                            if let Some(tile) = direct {
                                // The tile's rows of A from column pc on, read in place.
                                let ap = &a.data[(ic + ir) * a.rs + pc * a.cs..];
                                // SAFETY: a.cs == 1 (checked when choosing `direct`) and elements
                                // (ic + ir + i, pc + kk) for i < mrr, kk < kc lie inside A, whose
                                // bounds the caller checked; `bp` and `ct` as for the packed call
                                // below.
                                unsafe { tile(mrr, nrr, kc, alpha, ap.as_ptr(), a.rs, a.cs, bp.as_ptr(), beta, ct.ptr, ct.rs, ct.cs) };
                                continue;
                            }
                            let ap = &apack[ir * kc..(ir + mr) * kc];
                            // SAFETY: `ap`/`bp` are whole packed micro-panels (MR·kc and NR·kc
                            // elements, length-checked by the slicing above); `bp` starts at a
                            // multiple of NR·kc elements from the 64-byte-aligned scratch, and
                            // NR·size_of::<T>() is 64 bytes for the AVX2 kernels (so it is 32-byte
                            // aligned) and 128 bytes for the AVX-512 ones (64-byte aligned). The mrr × nrr tile `ct` lies inside `c`, which this thread
                            // owns exclusively (CView invariant).
                            unsafe { (kern.tile)(mrr, nrr, kc, alpha, ap.as_ptr(), bp.as_ptr(), beta, ct.ptr, ct.rs, ct.cs) };
                        }
                    }
                }
            }
        }
    });
}
