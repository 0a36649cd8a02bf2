//! General matrix multiply: `C ← α·A·B + β·C` for strided matrices.
//!
//! Transposes are expressed by strides ([`MatRef::t`] swaps them), so callers never copy a
//! matrix to transpose it. When `β = 0`, `C` is overwritten and its old contents (even NaN) are
//! ignored, as in BLAS.
//!
//! # Implementation
//!
//! A BLIS-style GEMM (source files under `kernels/src/gemm/`):
//!
//! * `pack.rs`: A and B are packed into contiguous MR-row / NR-column micro-panels, in
//!   thread-local, 64-byte-aligned scratch that is reused (no allocation per call in steady state),
//!   with AVX2 copies and in-register transposes where the CPU has AVX2. The AVX2 tiles read a
//!   row-major A in place instead when a packed block would feed at most 8 B̃ micro-panels (small
//!   `n`, or small `m`), where packing it costs more than it saves;
//! * `blocking.rs`: the cache-blocking constants MC/KC/NC, the five-loop nest, and, for each
//!   microkernel, its L1/L2/L3 footprint on Zen 3 (32 KiB / 512 KiB / 32 MiB) and Zen 5
//!   (48 KiB / 1 MiB / 32 MiB), including where a block does not fit and why that is tolerable;
//! * `microkernel/`: register-blocked tiles, hand-written AVX-512F 12×32 (f32) / 12×16 (f64) and
//!   AVX2+FMA 6×16 (f32) / 6×8 (f64) with broadcast loads and no shuffles, chosen at run time with
//!   `is_x86_feature_detected!` (widest first), or a portable 4×8 tile; edge tiles run a kernel
//!   instantiated for exactly their rows;
//! * `driver.rs`: the loops and the thread split; `gemv.rs`: the matrix–vector path;
//! * `anatomy.rs`: the selected microkernel alone, in L1 and over one packed block, for
//!   `chi bench gemm --anatomy` (where a product's time goes beside the FMA ceiling).
//!
//! Above [`par_min_flops`] (measured per microkernel), [`Par::Auto`] splits the larger output dimension across the
//! threads of the current rayon pool. `n == 1` and `m == 1` take the GEMV path ([`gemv`]), and
//! [`gemm_batched`] runs small products in parallel across the batch.

mod anatomy;
mod blocking;
mod driver;
#[path = "gemv.rs"]
mod gemv_impl;
pub(crate) mod microkernel;
mod pack;

#[doc(hidden)]
pub use anatomy::MicroBench;
#[doc(hidden)]
pub use microkernel::KernelChoice;

use crate::Real;

/// A read-only strided matrix view: element `(i, j)` is `data[i*rs + j*cs]`.
#[derive(Clone, Copy, Debug)]
pub struct MatRef<'a, T> {
    /// Backing storage; must contain every addressed element.
    pub data: &'a [T],
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
    /// Row stride (elements).
    pub rs: usize,
    /// Column stride (elements).
    pub cs: usize,
}

/// A mutable strided matrix view: element `(i, j)` is `data[i*rs + j*cs]`.
#[derive(Debug)]
pub struct MatMut<'a, T> {
    /// Backing storage; must contain every addressed element.
    pub data: &'a mut [T],
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
    /// Row stride (elements).
    pub rs: usize,
    /// Column stride (elements).
    pub cs: usize,
}

/// Smallest buffer length that holds every element of a `rows × cols` view with these strides,
/// or `None` if that length does not fit in `usize`.
///
/// Checked arithmetic matters here: release builds do not check overflow, and a wrapped length
/// would let absurd strides (say `rs = 2^61`) pass the bounds check and reach the unchecked reads
/// of the packing code and the stores of the microkernels.
pub(crate) fn required_len(rows: usize, cols: usize, rs: usize, cs: usize) -> Option<usize> {
    if rows == 0 || cols == 0 {
        Some(0)
    } else {
        (rows - 1).checked_mul(rs)?.checked_add((cols - 1).checked_mul(cs)?)?.checked_add(1)
    }
}

/// Whether two distinct elements `(i, j)` of a `rows × cols` view with strides `(rs, cs)` can share
/// an address (or interleave). An output matrix must not: GEMM's threads write disjoint row or
/// column ranges of C, which is only a data-race-free split if distinct elements are distinct
/// memory. The test is the usual sufficient one: with the strides sorted, the smaller one is
/// non-zero and the larger one steps over a whole run of the smaller. It rejects a few exotic
/// injective layouts (e.g. 2×2 with strides (2, 3)), which no caller needs.
pub(crate) fn may_alias(rows: usize, cols: usize, rs: usize, cs: usize) -> bool {
    if rows == 0 || cols == 0 {
        return false; // no elements, nothing to overlap
    }
    match (rows > 1, cols > 1) {
        (false, false) => false,
        (true, false) => rs == 0,
        (false, true) => cs == 0,
        (true, true) => {
            let ((s1, d1), s2) = if rs <= cs { ((rs, rows), cs) } else { ((cs, cols), rs) };
            match s1.checked_mul(d1) {
                Some(run) => s1 == 0 || s2 < run,
                None => true, // the larger stride cannot step over a run that long
            }
        }
    }
}

impl<'a, T> MatRef<'a, T> {
    /// A row-major `rows × cols` view of contiguous data.
    pub fn row_major(data: &'a [T], rows: usize, cols: usize) -> Self {
        MatRef { data, rows, cols, rs: cols, cs: 1 }
    }
    /// A column-major `rows × cols` view of contiguous data.
    pub fn col_major(data: &'a [T], rows: usize, cols: usize) -> Self {
        MatRef { data, rows, cols, rs: 1, cs: rows }
    }
    /// The transpose, as a view (no copy).
    pub fn t(self) -> Self {
        MatRef { data: self.data, rows: self.cols, cols: self.rows, rs: self.cs, cs: self.rs }
    }
    /// Panics with a message naming `kernel` if the view addresses memory outside `data`.
    pub fn check(&self, kernel: &str, name: &str) {
        let Some(need) = required_len(self.rows, self.cols, self.rs, self.cs) else {
            panic!("{kernel}: matrix {name} is {}x{} with strides ({}, {}), whose extent overflows usize", self.rows, self.cols, self.rs, self.cs)
        };
        assert!(
            need <= self.data.len(),
            "{kernel}: matrix {name} is {}x{} with strides ({}, {}) and needs {need} elements, but its buffer has {}",
            self.rows,
            self.cols,
            self.rs,
            self.cs,
            self.data.len()
        );
    }
    /// Element `(i, j)`.
    #[inline(always)]
    pub fn at(&self, i: usize, j: usize) -> T
    where
        T: Copy,
    {
        self.data[i * self.rs + j * self.cs]
    }
}

impl<'a, T> MatMut<'a, T> {
    /// A row-major `rows × cols` view of contiguous data.
    pub fn row_major(data: &'a mut [T], rows: usize, cols: usize) -> Self {
        MatMut { data, rows, cols, rs: cols, cs: 1 }
    }
    /// A column-major `rows × cols` view of contiguous data.
    pub fn col_major(data: &'a mut [T], rows: usize, cols: usize) -> Self {
        MatMut { data, rows, cols, rs: 1, cs: rows }
    }
    /// The transpose, as a view (no copy).
    pub fn t(self) -> Self {
        MatMut { data: self.data, rows: self.cols, cols: self.rows, rs: self.cs, cs: self.rs }
    }
    /// Panics with a message naming `kernel` if the view addresses memory outside `data`.
    pub fn check(&self, kernel: &str, name: &str) {
        self.as_ref().check(kernel, name)
    }
    /// Reborrow as a read-only view.
    pub fn as_ref(&self) -> MatRef<'_, T> {
        MatRef { data: self.data, rows: self.rows, cols: self.cols, rs: self.rs, cs: self.cs }
    }
}

/// How a kernel may use threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Par {
    /// Single-threaded, on the calling thread.
    Seq,
    /// Up to this many threads of the current rayon pool, but one thread for products below the
    /// size threshold of [`Par::Auto`] ([`par_min_flops`]), where waking a second worker costs
    /// more than it saves.
    Threads(usize),
    /// Exactly this many threads (capped at the current pool's size) whatever the size: for
    /// tests of the split and for measuring the threshold itself (`benches/benches/par_crossover.rs`).
    Split(usize),
    /// The kernel decides: single-threaded below its measured size threshold, otherwise all
    /// threads of the current rayon pool.
    Auto,
}

fn check_gemm_shapes<T>(kernel: &str, a: &MatRef<T>, b: &MatRef<T>, c: &MatMut<T>) {
    assert!(
        a.cols == b.rows && a.rows == c.rows && b.cols == c.cols,
        "{kernel}: shape mismatch: A is {}x{}, B is {}x{}, C is {}x{} (need A: m×k, B: k×n, C: m×n)",
        a.rows,
        a.cols,
        b.rows,
        b.cols,
        c.rows,
        c.cols
    );
    a.check(kernel, "A");
    b.check(kernel, "B");
    c.check(kernel, "C");
    assert!(
        !may_alias(c.rows, c.cols, c.rs, c.cs),
        "{kernel}: output C is {}x{} with strides ({}, {}), so distinct elements overlap or interleave; C must be a non-overlapping view",
        c.rows,
        c.cols,
        c.rs,
        c.cs
    );
}

/// Products with fewer flops (`2·m·n·k`) than this run on one thread under [`Par::Auto`] and
/// [`Par::Threads`] when the AVX2 or portable microkernel is in use.
///
/// Measured on the 2-core Zen 3 machine (AVX2) with `cargo bench -p chi-benches --bench
/// par_crossover` (one thread vs two forced, 2026-11-23, while other jobs kept the load average
/// at 5–10): medians n = 64: 47 vs 174 µs; n = 96: 127 vs 277; n = 128: 267 vs 519; n = 160:
/// 503 vs 350; n = 192: 860 vs 570. One LSTM step's `16×128 · 128×512` (2.1 MFLOP): 170 vs
/// 180 µs. Waking and joining the second worker costs tens of µs on this VM, and more when the
/// other core is busy, so the split pays from n ≈ 160 (8.2 MFLOP). An earlier run on a quieter
/// machine had two threads ahead from n ≈ 96; the higher value keeps small products (the LSTM
/// steps of `chi`'s workloads) on one thread, where a lost split costs 2–4×, while a missed one
/// costs at most 2×.
///
/// Remeasured on the same machine (2026-11-26, load average 1.3, after the AVX2 packing and the
/// in-place A path made one thread faster; a scratch harness timing `gemm_par` with `Par::Seq` vs
/// `Par::Split(2)`, medians of 5 alternating runs, GFLOPS): n = 96: 76.0 vs 64.7; n = 112: 71.9
/// vs 71.9; n = 128: 70.9 vs 86.7; n = 144: 79.6 vs 107.4; n = 160: 77.3 vs 115.6. The split
/// pays from n ≈ 120 (3.5 MFLOP), which still keeps an LSTM step's 2.1 MFLOP on one thread.
pub const PAR_MIN_FLOPS: usize = 2 * 120 * 120 * 120;

/// [`PAR_MIN_FLOPS`] for the AVX-512 f32 kernel (12×32 tile).
///
/// Measured on the 2-core Zen 5 machine (`chi bench gemm --threads 1` vs `--threads 2`, 21
/// samples, medians, 2026-11-23): one thread runs n = 128 at 163–178 GFLOPS (~25 µs), two
/// threads at 91–99; n = 160: 173 vs 143; n = 192: 178 vs 192; n = 224: 178 vs 217. The AVX-512
/// kernel is twice as fast per core as AVX2, so the fixed cost of waking and joining the second
/// worker (~30 µs on this VM) is amortised only from n ≈ 185 (12.6 MFLOP, ~70 µs on one core).
pub const PAR_MIN_FLOPS_AVX512_F32: usize = 2 * 184 * 184 * 184;

/// [`PAR_MIN_FLOPS`] for the AVX-512 f64 kernel (12×16 tile). Measured as for
/// [`PAR_MIN_FLOPS_AVX512_F32`]: n = 96 runs at 83 GFLOPS on one thread and 45 on two, n = 128 at
/// 89 vs 94, n = 160 at 89 vs 96, n = 192 at 92 vs 119: the split pays from n ≈ 128 (~48 µs on one
/// core; f64 does half the flops per cycle, so the crossover in flops is lower than for f32).
pub const PAR_MIN_FLOPS_AVX512_F64: usize = 2 * 128 * 128 * 128;

/// Checks the `CHI_GEMM_BLOCKING` environment variable (`MC,KC,NC`, documented in the blocking
/// module) against the f32 and f64 kernels this CPU selects, so that a program can report a bad
/// value as an error before any product runs (a product would panic on it); `Ok` when the
/// variable is not set.
pub fn check_blocking_env() -> Result<(), String> {
    let Ok(raw) = std::env::var(blocking::BLOCKING_ENV) else { return Ok(()) };
    for (mr, nr) in [microkernel::Kernel::<f32>::tile(KernelChoice::Auto), microkernel::Kernel::<f64>::tile(KernelChoice::Auto)] {
        blocking::parse_blocking(&raw, mr, nr).map_err(|e| format!("{}={raw:?}: {e}", blocking::BLOCKING_ENV))?;
    }
    Ok(())
}

/// The flop count from which [`Par::Auto`] uses threads, for the microkernel `choice` selects for
/// `T` on this CPU (see the constants above for the measurements behind each value).
pub fn par_min_flops<T: Real>(choice: KernelChoice) -> usize {
    microkernel::Kernel::<T>::select(choice).par_min_flops
}

/// How many threads [`gemm_par`] (and [`gemm_packed_par`]) use for an `m × k` by `k × n` product
/// with parallelism `par` in the current rayon pool, on the microkernel this CPU runs for `T`.
pub fn gemm_threads<T: Real>(par: Par, m: usize, n: usize, k: usize) -> usize {
    if m == 0 || n == 0 || k == 0 {
        return 1;
    }
    let kern = microkernel::Kernel::<T>::select(KernelChoice::Auto);
    threads_for(par, 2 * m * n * k >= kern.par_min_flops)
}

/// How many threads a product of this size gets. The rayon pool is only consulted when more than
/// one thread could be used, so sequential calls never initialise rayon's global pool (which
/// would make a later `ThreadPoolBuilder::build_global` fail).
/// `big`: whether the product is above the size threshold at which [`Par::Auto`] uses threads.
/// Inside a share of another split ([`crate::team::in_share`]) products run single-threaded.
fn threads_for(par: Par, big: bool) -> usize {
    if crate::team::in_share() {
        return 1;
    }
    match par {
        Par::Seq | Par::Threads(0 | 1) | Par::Split(0 | 1) => 1,
        Par::Split(t) => t.min(rayon::current_num_threads().max(1)),
        Par::Threads(t) if big => t.min(rayon::current_num_threads().max(1)),
        Par::Auto if big => rayon::current_num_threads().max(1),
        Par::Threads(_) | Par::Auto => 1,
    }
}

/// `C ← α·A·B + β·C`, threads chosen automatically ([`Par::Auto`]).
///
/// `A` is `m × k`, `B` is `k × n`, `C` is `m × n`, each with arbitrary strides; pass
/// [`MatRef::t`] for a transposed operand. If `β = 0`, `C`'s old contents (even NaN) are ignored.
///
/// ```
/// use chi_kernels::gemm::{gemm, MatRef, MatMut};
/// let a = [1.0f32, 2.0, 3.0, 4.0]; // [[1,2],[3,4]]
/// let b = [5.0f32, 6.0, 7.0, 8.0];
/// let mut c = [0.0f32; 4];
/// gemm(1.0, MatRef::row_major(&a, 2, 2), MatRef::row_major(&b, 2, 2), 0.0, MatMut::row_major(&mut c, 2, 2));
/// assert_eq!(c, [19.0, 22.0, 43.0, 50.0]);
///
/// // Aᵀ·B, accumulating into C (β = 1): transposes are stride swaps, never copies.
/// gemm(1.0, MatRef::row_major(&a, 2, 2).t(), MatRef::row_major(&b, 2, 2), 1.0, MatMut::row_major(&mut c, 2, 2));
/// assert_eq!(c, [19.0 + 26.0, 22.0 + 30.0, 43.0 + 38.0, 50.0 + 44.0]);
/// ```
///
/// # Panics
/// If the shapes disagree or a buffer is too short for its view (the message names `gemm` and the
/// sizes).
pub fn gemm<T: Real>(alpha: T, a: MatRef<T>, b: MatRef<T>, beta: T, c: MatMut<T>) {
    gemm_par(Par::Auto, alpha, a, b, beta, c)
}

/// `C ← α·A·B + β·C` with explicit parallelism (see [`gemm`]).
pub fn gemm_par<T: Real>(par: Par, alpha: T, a: MatRef<T>, b: MatRef<T>, beta: T, c: MatMut<T>) {
    gemm_with_kernel(KernelChoice::Auto, par, alpha, a, b, beta, c)
}

/// [`gemm_par`] with a forced microkernel family (for testing the portable fallback).
#[doc(hidden)]
pub fn gemm_with_kernel<T: Real>(choice: KernelChoice, par: Par, alpha: T, a: MatRef<T>, b: MatRef<T>, beta: T, mut c: MatMut<T>) {
    check_gemm_shapes("gemm", &a, &b, &c);
    let (m, n, k) = (c.rows, c.cols, a.cols);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 || alpha == T::ZERO {
        scale(beta, &mut c);
        return;
    }
    // Column-major C: compute Cᵀ = Bᵀ·Aᵀ instead, so the kernel writes C's contiguous dimension
    // with vector stores.
    let (a, b, c) = if c.rs == 1 && c.cs != 1 { (b.t(), a.t(), c.t()) } else { (a, b, c) };
    let kern = microkernel::Kernel::<T>::select(choice);
    // A narrow C (a classifier head's few logits, its weight gradient): the tile's vectors run
    // along n, so with n below a vector's width most lanes idle. Cᵀ = Bᵀ·Aᵀ puts the long side
    // along the vectors, at the price of storing C through the kernel's strided path.
    let (a, b, mut c) = if a.cs != 1 && narrow_output_pays(&kern, c.rows, c.cols, k) { (b.t(), a.t(), c.t()) } else { (a, b, c) };
    let (m, n) = (c.rows, c.cols);
    let threads = threads_for(par, 2 * m * n * k >= kern.par_min_flops);
    if n == 1 {
        let (rs, data) = (c.rs, &mut *c.data);
        let x = gemv_impl::Strided { data: b.data, stride: b.rs };
        gemv_impl::gemv_strided(choice, threads, alpha, a, x, beta, data, rs);
    } else if m == 1 {
        // c (1 × n) = a (1 × k) · B  ⇔  cᵀ = Bᵀ · aᵀ.
        let (cs, data) = (c.cs, &mut *c.data);
        let x = gemv_impl::Strided { data: a.data, stride: a.cs };
        gemv_impl::gemv_strided(choice, threads, alpha, b.t(), x, beta, data, cs);
    } else {
        driver::gemm(&kern, threads, alpha, a, driver::BSrc::Mat(b), beta, driver::CView::new(&mut c));
    }
}

/// The depth below which [`narrow_output_pays`] keeps the orientation: the swapped tiles store
/// C element by element once per KC slice, which shallow products cannot repay (at 500 × 64 × 20
/// with a transposed A the two orientations were within the noise, 19–24 µs against 21–26).
const NARROW_SWAP_MIN_K: usize = 64;

/// Whether an `m × n` product of depth `k` runs on fewer vector FMAs as `Cᵀ = Bᵀ·Aᵀ`: a tile
/// row of `nr` columns is two vectors, so a k step costs `m · ⌈n / (nr/2)⌉` vector FMAs one way
/// and `n · ⌈m / (nr/2)⌉` the other. The swap must save a quarter of them, and `k` must be deep
/// enough that the swapped tiles' element-by-element stores of C (once per KC slice) stay small
/// beside their FMAs. The caller swaps only when A's rows are not contiguous: a row-major A is
/// read in place by the narrow tiles, while swapped it would need a transposing pack (measured on
/// the Intel Xeon of `blocking.rs`, sgemm, 1 thread, three alternating runs: with a transposed A,
/// 96 × 1386 × 11 took 75–80 µs unswapped and 39–43 µs swapped, 1024 × 128 × 10 64–67 and 39–49;
/// with a row-major A swapping was slower, 1024 × 128 × 10 30–41 µs against 44–52).
fn narrow_output_pays<T>(kern: &microkernel::Kernel<T>, m: usize, n: usize, k: usize) -> bool {
    let w = (kern.nr / 2).max(1);
    let vectors = |rows: usize, cols: usize| rows * cols.div_ceil(w);
    m >= 2 && n >= 2 && k >= NARROW_SWAP_MIN_K && 4 * vectors(n, m) <= 3 * vectors(m, n)
}

/// A `k × n` matrix B packed once into the micro-panel layout of the GEMM's microkernel, to be
/// reused by many products `C ← α·A·B + β·C` ([`gemm_packed`]) without repacking it each time:
/// e.g. a recurrent weight used by every time step of a sequence, and its transpose for the
/// backward pass.
///
/// Packing from a transposed view ([`MatRef::t`] of a row-major matrix) reads each source row
/// contiguously and transposes small tiles in cache; it does not gather with strides.
///
/// ```
/// use chi_kernels::gemm::{gemm_packed, MatMut, MatRef, PackedB};
/// let w = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]; // W: 2 × 3, row-major
/// let wt = PackedB::new(MatRef::row_major(&w, 2, 3).t()); // packs Wᵀ (3 × 2) once
/// let x = [1.0f32, 0.0, 1.0]; // 1 × 3
/// let mut y = [0.0f32; 2];
/// gemm_packed(1.0, MatRef::row_major(&x, 1, 3), &wt, 0.0, MatMut::row_major(&mut y, 1, 2));
/// assert_eq!(y, [4.0, 10.0]); // x·Wᵀ
/// ```
pub struct PackedB<T> {
    buf: pack::AlignedBuf<T>,
    k: usize,
    n: usize,
    kern: microkernel::Kernel<T>,
}

impl<T: Real> std::fmt::Debug for PackedB<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PackedB {{ k: {}, n: {}, tile: {}x{}, kc: {} }}", self.k, self.n, self.kern.mr, self.kern.nr, self.kern.blocking.kc)
    }
}

impl<T: Real> PackedB<T> {
    /// Packs `b` (any strides) for the microkernel this CPU runs.
    ///
    /// # Panics
    /// If `b`'s buffer is too short for its view, or `T` is neither `f32` nor `f64`.
    pub fn new(b: MatRef<T>) -> Self {
        Self::with_kernel(KernelChoice::Auto, b)
    }

    /// [`PackedB::new`] for a forced microkernel family (for tests).
    #[doc(hidden)]
    pub fn with_kernel(choice: KernelChoice, b: MatRef<T>) -> Self {
        b.check("PackedB::new", "B");
        let kern = microkernel::Kernel::<T>::select(choice);
        let (k, n, nr, kc) = (b.rows, b.cols, kern.nr, kern.blocking.kc);
        let panels = n.div_ceil(nr);
        let mut buf = pack::AlignedBuf::zeroed(panels * nr * k);
        let dst = buf.as_mut_slice();
        for pc in (0..k).step_by(kc) {
            let kcb = kc.min(k - pc);
            pack::pack_b(nr, &b, pc, kcb, 0, n, &mut dst[pc * panels * nr..]);
        }
        PackedB { buf, k, n, kern }
    }

    /// Rows of B (the inner dimension of the products).
    pub fn rows(&self) -> usize {
        self.k
    }

    /// Columns of B.
    pub fn cols(&self) -> usize {
        self.n
    }
}

/// `C ← α·A·B + β·C` with B packed in advance ([`PackedB`]); threads chosen automatically
/// ([`Par::Auto`]). Same results as [`gemm`] with the unpacked B on the same microkernel.
///
/// # Panics
/// If the shapes disagree or a buffer is too short for its view (the message names
/// `gemm_packed` and the sizes).
pub fn gemm_packed<T: Real>(alpha: T, a: MatRef<T>, b: &PackedB<T>, beta: T, c: MatMut<T>) {
    gemm_packed_par(Par::Auto, alpha, a, b, beta, c)
}

/// [`gemm_packed`] with explicit parallelism.
pub fn gemm_packed_par<T: Real>(par: Par, alpha: T, a: MatRef<T>, b: &PackedB<T>, beta: T, mut c: MatMut<T>) {
    let kernel = "gemm_packed";
    assert!(
        a.cols == b.k && a.rows == c.rows && b.n == c.cols,
        "{kernel}: shape mismatch: A is {}x{}, packed B is {}x{}, C is {}x{} (need A: m×k, B: k×n, C: m×n)",
        a.rows,
        a.cols,
        b.k,
        b.n,
        c.rows,
        c.cols
    );
    a.check(kernel, "A");
    c.check(kernel, "C");
    // An empty C has no elements that could overlap, whatever its strides.
    assert!(
        c.rows == 0 || c.cols == 0 || !may_alias(c.rows, c.cols, c.rs, c.cs),
        "{kernel}: output C is {}x{} with strides ({}, {}), so distinct elements overlap or interleave; C must be a non-overlapping view",
        c.rows,
        c.cols,
        c.rs,
        c.cs
    );
    let (m, n, k) = (c.rows, c.cols, a.cols);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 || alpha == T::ZERO {
        scale(beta, &mut c);
        return;
    }
    let threads = threads_for(par, 2 * m * n * k >= b.kern.par_min_flops);
    let src = driver::BSrc::Packed { data: b.buf.as_slice(), panels: n.div_ceil(b.kern.nr), j0: 0, n };
    driver::gemm(&b.kern, threads, alpha, a, src, beta, driver::CView::new(&mut c));
}

/// `C ← β·C` (`β = 0` writes zeros, ignoring NaN).
fn scale<T: Real>(beta: T, c: &mut MatMut<T>) {
    if beta == T::ONE {
        return;
    }
    for i in 0..c.rows {
        for j in 0..c.cols {
            let v = &mut c.data[i * c.rs + j * c.cs];
            *v = if beta == T::ZERO { T::ZERO } else { beta * *v };
        }
    }
}

/// A batch of equally shaped strided matrices: matrix `b` starts at `data[b * batch_stride]`.
#[derive(Clone, Copy, Debug)]
pub struct BatchRef<'a, T> {
    /// Backing storage.
    pub data: &'a [T],
    /// Number of matrices.
    pub count: usize,
    /// Offset between consecutive matrices (elements).
    pub batch_stride: usize,
    /// Rows of each matrix.
    pub rows: usize,
    /// Columns of each matrix.
    pub cols: usize,
    /// Row stride.
    pub rs: usize,
    /// Column stride.
    pub cs: usize,
}

impl<'a, T> BatchRef<'a, T> {
    /// `count` contiguous row-major `rows × cols` matrices.
    pub fn row_major(data: &'a [T], count: usize, rows: usize, cols: usize) -> Self {
        BatchRef { data, count, batch_stride: rows * cols, rows, cols, rs: cols, cs: 1 }
    }
    /// Transpose every matrix (no copy).
    pub fn t(self) -> Self {
        BatchRef { rows: self.cols, cols: self.rows, rs: self.cs, cs: self.rs, ..self }
    }
    /// Matrix `i` of the batch.
    pub fn mat(&self, i: usize) -> MatRef<'a, T> {
        let start = i * self.batch_stride;
        MatRef { data: &self.data[start..], rows: self.rows, cols: self.cols, rs: self.rs, cs: self.cs }
    }
    /// Panics with a message naming `kernel` if the last matrix runs past the end of `data`.
    fn check(&self, kernel: &str, name: &str) {
        if self.count == 0 {
            return;
        }
        let need = required_len(self.rows, self.cols, self.rs, self.cs)
            .and_then(|one| (self.count - 1).checked_mul(self.batch_stride)?.checked_add(one));
        let Some(need) = need else {
            panic!(
                "{kernel}: batch {name} of {} matrices of {}x{} (strides ({}, {}), batch stride {}) has an extent that overflows usize",
                self.count, self.rows, self.cols, self.rs, self.cs, self.batch_stride
            )
        };
        assert!(
            need <= self.data.len(),
            "{kernel}: batch {name} has {} matrices of {}x{} (strides ({}, {}), batch stride {}) and needs {need} elements, but its buffer has {}",
            self.count,
            self.rows,
            self.cols,
            self.rs,
            self.cs,
            self.batch_stride,
            self.data.len()
        );
    }
}

/// Batched GEMM over `count` independent products: `C_i ← α·A_i·B_i + β·C_i`.
///
/// `c` holds `count` contiguous row-major `m × n` matrices. Small products (as in attention,
/// below [`par_min_flops`] each) are spread over the threads of the current rayon pool one
/// product per task; large ones run one after another, each with the threaded GEMM.
///
/// ```
/// use chi_kernels::gemm::{gemm_batched, BatchRef};
/// // Two 1×2 · 2×1 products.
/// let a = [1.0f64, 2.0, 3.0, 4.0];
/// let b = [5.0f64, 6.0, 7.0, 8.0];
/// let mut c = [0.0f64; 2];
/// gemm_batched(1.0, BatchRef::row_major(&a, 2, 1, 2), BatchRef::row_major(&b, 2, 2, 1), 0.0, &mut c);
/// assert_eq!(c, [17.0, 53.0]);
/// ```
pub fn gemm_batched<T: Real>(alpha: T, a: BatchRef<T>, b: BatchRef<T>, beta: T, c: &mut [T]) {
    assert!(
        a.count == b.count,
        "gemm_batched: batch sizes differ: A has {} matrices, B has {}",
        a.count,
        b.count
    );
    assert!(
        a.cols == b.rows,
        "gemm_batched: shape mismatch: A is {}x{}, B is {}x{} (need A: m×k, B: k×n)",
        a.rows,
        a.cols,
        b.rows,
        b.cols
    );
    let (m, n, k) = (a.rows, b.cols, a.cols);
    assert!(
        c.len() >= a.count * m * n,
        "gemm_batched: C buffer has {} elements, need {} ({} matrices of {}x{})",
        c.len(),
        a.count * m * n,
        a.count,
        m,
        n
    );
    a.check("gemm_batched", "A");
    b.check("gemm_batched", "B");
    if m * n == 0 || a.count == 0 {
        return;
    }
    let c = &mut c[..a.count * m * n];
    let par_min = par_min_flops::<T>(KernelChoice::Auto);
    let small = 2 * m * n * k < par_min;
    if small && a.count > 1 && 2 * a.count * m * n * k >= par_min && !crate::team::in_share() && rayon::current_num_threads() > 1 {
        let grain = batch_grain(m, n, k);
        crate::parallel::split_each(c.chunks_mut(grain * m * n).enumerate(), |(g, cg)| {
            for (j, ci) in cg.chunks_mut(m * n).enumerate() {
                let i = g * grain + j;
                gemm_par(Par::Seq, alpha, a.mat(i), b.mat(i), beta, MatMut::row_major(ci, m, n));
            }
        });
    } else {
        let par = if small { Par::Seq } else { Par::Auto };
        for (i, ci) in c.chunks_mut(m * n).enumerate() {
            gemm_par(par, alpha, a.mat(i), b.mat(i), beta, MatMut::row_major(ci, m, n));
        }
    }
}

/// Products per task in a batch, so each task does at least ~50 kflop (a few µs).
fn batch_grain(m: usize, n: usize, k: usize) -> usize {
    (50_000 / (2 * m * n * k.max(1)).max(1)).max(1)
}

/// Matrix–vector product `y ← α·A·x + β·y` (`x`, `y` contiguous), threads chosen automatically.
///
/// ```
/// use chi_kernels::gemm::{gemv, MatRef};
/// let a = [1.0f32, 2.0, 3.0, 4.0]; // [[1,2],[3,4]]
/// let mut y = [1.0f32, 1.0];
/// gemv(2.0, MatRef::row_major(&a, 2, 2), &[1.0, 1.0], 1.0, &mut y);
/// assert_eq!(y, [7.0, 15.0]);
/// ```
pub fn gemv<T: Real>(alpha: T, a: MatRef<T>, x: &[T], beta: T, y: &mut [T]) {
    gemv_with_kernel(KernelChoice::Auto, Par::Auto, alpha, a, x, beta, y)
}

/// [`gemv`] with explicit parallelism and a forced kernel family (for tests).
#[doc(hidden)]
pub fn gemv_with_kernel<T: Real>(choice: KernelChoice, par: Par, alpha: T, a: MatRef<T>, x: &[T], beta: T, y: &mut [T]) {
    assert!(
        a.cols == x.len() && a.rows == y.len(),
        "gemv: shape mismatch: A is {}x{}, x has {}, y has {}",
        a.rows,
        a.cols,
        x.len(),
        y.len()
    );
    a.check("gemv", "A");
    if y.is_empty() {
        return;
    }
    if x.is_empty() || alpha == T::ZERO {
        y.iter_mut().for_each(|v| *v = if beta == T::ZERO { T::ZERO } else { beta * *v });
        return;
    }
    let threads = threads_for(par, a.rows * a.cols >= gemv_impl::GEMV_PAR_MIN);
    gemv_impl::gemv_contig(choice, threads, alpha, a, x, beta, y);
}
