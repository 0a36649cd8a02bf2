//! Cache-blocking constants of the BLIS-style GEMM, which loop each one controls, and how much of
//! each cache level the resulting blocks occupy on the two machines this code has run on.
//!
//! The driver ([`super::driver`]) runs the five BLIS loops around a register-blocked microkernel:
//!
//! ```text
//! for jc in 0..n step NC          // loop 5: a column panel of B and C
//!   for pc in 0..k step KC        // loop 4: a KC-deep slice; pack B[pc.., jc..] → B̃ (KC × NC, meant for L3)
//!     for ic in 0..m step MC      // loop 3: a row block;      pack A[ic.., pc..] → Ã (MC × KC, meant for L2)
//!       for jr in 0..NC step NR   // loop 2: one KC × NR micro-panel of B̃ (meant for L1)
//!         for ir in 0..MC step MR // loop 1: one MR × KC micro-panel of Ã (streamed from L2)
//!           microkernel: C[MR × NR] += Ã_ir · B̃_jr   (rank-KC update in registers)
//! ```
//!
//! # What each constant controls
//!
//! * **KC** (loop 4) is the depth of every packed panel, so it sets the *L1* footprint of the two
//!   innermost loops: the B̃ micro-panel (KC × NR) is reused by all MC/MR calls of loop 1, so it is
//!   the block that must *stay* in L1; each Ã micro-panel (MR × KC) is read once per call, in
//!   address order (and prefetched by the microkernel), so it only streams through L1 from L2. A
//!   larger KC also amortises each tile's C load/store over more FMAs.
//! * **MC** (loop 3, a multiple of MR) sets the *L2* footprint: the packed Ã block (MC × KC) is
//!   reused by every one of the NC/NR micro-panels of B̃ and must stay in L2.
//! * **NC** (loop 5, a multiple of NR) sets the *L3* footprint: the packed B̃ panel (KC × NC) is
//!   reused by every MC row block. When threaded, each thread packs its own B̃ (see `gemm` in
//!   `driver.rs`), so two threads need twice this much of the shared L3. In practice
//!   NC is so large that square problems up to n = 4096 (f32) / 2048 (f64) use one panel. When
//!   `m ≤ MC` the driver narrows NC to 8 micro-panels (`SMALL_M_PANELS`), so B̃ is then 8·KC·NR
//!   and lives in L2 next to Ã instead of in L3.
//!
//! # The two machines
//!
//! Cache sizes per core, from `lscpu` / `lscpu -C` on each:
//!
//! * **Zen 3** (AMD EPYC, AVX2 + FMA, no AVX-512): L1d 32 KiB, L2 512 KiB, L3 32 MiB
//!   shared. The AVX2 kernels run there; the AVX-512 ones cannot.
//! * **Zen 5** (AMD EPYC family 26, AVX-512F/DQ/BW/VL): L1d 48 KiB (12-way, 64 sets of 64-byte
//!   lines, so 4 KiB per way), L2 1 MiB, L3 32 MiB shared. `Kernel::select` picks the AVX-512
//!   kernels there; the AVX2 ones run only when forced (`KernelChoice::Avx2`, tests).
//!
//! # Footprints (KC = 256 for every kernel; KiB = 1024 bytes)
//!
//! L1 = one B̃ micro-panel (KC × NR) + one Ã micro-panel (MR × KC); L2 = the Ã block (MC × KC);
//! L3 = the B̃ panel (KC × NC). Percentages are of one core's L1/L2 and of the whole L3.
//!
//! | kernel | MR × NR | MC, NC | L1: B̃ + Ã | vs 32 KiB / 48 KiB | L2: Ã | vs 512 KiB / 1 MiB | L3: B̃ (2 threads) | vs 32 MiB |
//! |---|---|---|---|---|---|---|---|---|
//! | AVX-512 f32 | 12 × 32 | 144, 4096 | 32 + 12 = 44 KiB | 138 % / 92 % | 144 KiB | 28 % / 14 % | 4 MiB (8 MiB) | 12.5 % (25 %) |
//! | AVX-512 f64 | 12 × 16 | 96, 2048 | 32 + 24 = 56 KiB | 175 % / **117 %** | 192 KiB | 38 % / 19 % | 4 MiB (8 MiB) | 12.5 % (25 %) |
//! | AVX2 f32 | 6 × 16 | 144, 4096 | 16 + 6 = 22 KiB | 69 % / 46 % | 144 KiB | 28 % / 14 % | 4 MiB (8 MiB) | 12.5 % (25 %) |
//! | AVX2 f64 | 6 × 8 | 96, 2048 | 16 + 12 = 28 KiB | 88 % / 58 % | 192 KiB | 38 % / 19 % | 4 MiB (8 MiB) | 12.5 % (25 %) |
//! | portable f32 | 4 × 8 | 128, 2048 | 8 + 4 = 12 KiB | 38 % / 25 % | 128 KiB | 25 % / 13 % | 2 MiB (4 MiB) | 6 % (12.5 %) |
//! | portable f64 | 4 × 8 | 128, 2048 | 16 + 8 = 24 KiB | 75 % / 50 % | 256 KiB | 50 % / 25 % | 4 MiB (8 MiB) | 12.5 % (25 %) |
//!
//! With `m ≤ MC` the narrowed B̃ (8 micro-panels) is 256 KiB for both AVX-512 kernels, 128 KiB
//! for both AVX2 kernels and portable f64, 64 KiB for portable f32; it then shares L2 with Ã
//! (AVX-512: 144 + 256 = 400 KiB f32, 192 + 256 = 448 KiB f64, under half of Zen 5's 1 MiB;
//! AVX2: 144 + 128 = 272 KiB f32, 192 + 128 = 320 KiB f64, 53 % and 63 % of Zen 3's 512 KiB).
//!
//! Where a footprint exceeds a cache:
//!
//! * **AVX-512 kernels vs a 32 KiB L1** (138 %, 175 %): does not arise. Those kernels need
//!   AVX-512F, which the 32 KiB-L1 Zen 3 machine lacks; on such a CPU the AVX2 kernel runs.
//!   A future AVX-512 CPU with a 32 KiB L1 (e.g. Intel Skylake-SP) would want KC = 128 for them;
//!   that was not measured.
//! * **AVX-512 f64 vs Zen 5's 48 KiB L1** (56 KiB, 117 %): B̃ + Ã do not both fit. In terms of
//!   ways: the 32 KiB B̃ micro-panel is 8 lines per set and the 24 KiB Ã micro-panel 6, i.e. 14
//!   lines per set for 12 ways, so while one call streams its Ã micro-panel some B̃ lines can be
//!   evicted and re-read from L2 by the next call. Why it still performs, as arithmetic (misses
//!   were not measured: this VM exposes no cache-miss counters to `perf`; timings are under
//!   Measurements): only B̃ has to *stay* in L1 (32 KiB, 8 of 12 ways), Ã comes from L2 on every
//!   call by design, and one k step of the 12 × 16 tile is 192 f64 FMA lanes, i.e. 12 cycles on
//!   two 8-lane FMA pipes (fewer or narrower pipes only lower the bytes needed per cycle), while
//!   it loads 12 + 16 f64 = 224 bytes: under 19 bytes per cycle even if *every* load were served
//!   by L2, well below the L2 → L1 bandwidth of a current core (≥ 32 bytes per cycle). The same
//!   argument covers the f32 kernel (12 cycles, 176 bytes per k step), which fits with 4 KiB, one
//!   way, to spare for the C tile (1.5 KiB) and the stack.
//!
//! Everything else is within its cache on both machines, with at least 12 % of L1 and half of L2
//! left for the C tiles, the next Ã micro-panel and the B̃ micro-panels passing through L2.
//!
//! # Measurements
//!
//! All with `chi bench gemm` (square row-major `C ← A·B`, medians of alternating runs against
//! `matrixmultiply`, percent of an FMA-only ceiling loop measured in the same process):
//!
//! * AVX2 f32 (sgemm, n = 256 and 1024, one thread, on the Zen 3 machine): MC ∈ {96, 144, 192}
//!   × KC ∈ {192, 256, 320, 384} all within ±3 % of each other (the timing noise of that shared
//!   machine); MC = 72 and KC = 512 were not better. The values sit in the middle of that flat
//!   region, where the cache arithmetic also has the most slack. AVX2 f64 reused the same KC and
//!   a smaller MC by the footprint arithmetic above; it was not swept separately.
//! * Zen 5, AVX-512 f32 (commit bf6fa12, `chi --threads 1 bench gemm --sizes 128,…,2048`):
//!   (MC, KC) ∈ {(144, 192), (144, 256), (288, 256), (96, 384), (240, 320)} all give 1.11–1.17×
//!   matrixmultiply and 87–94 % of the AVX-512 FMA ceiling, differences within run-to-run noise,
//!   so the AVX2 values were kept.
//! * Zen 5, AVX-512 f64, the one block that exceeds its cache, next to f32 (2026-11-23, commit
//!   b53c95e, whose ceiling is the highest FMA-loop sample; `chi --threads 1 bench gemm --dtype
//!   f64|f32 --sizes 256,512,1024,2048 --reps 11`, two alternating runs each, load average ~4 on
//!   the 2 cores from other jobs). dgemm: 76–84 % of the f64 ceiling for n ≤ 1024 and 65–72 % at
//!   n = 2048; 1.04–1.15× matrixmultiply for n ≤ 1024, 0.92–0.98× at 2048. sgemm in the same
//!   runs: 78–88 % of its ceiling, 1.06–1.13×. So dgemm runs within 1–7 points of sgemm up to
//!   n = 1024 and trails it by 7–14 points at 2048, which fits some cost from the overflow at
//!   large sizes but does not isolate it: no KC sweep was run for f64 (KC = 128 would make
//!   B̃ + Ã = 28 KiB fit) and cache misses could not be counted.
//! * The AVX2 kernels on Zen 5 and the portable kernel were not timed against these constants.

/// Blocking parameters of one microkernel (in elements). See the module docs for the loops they
/// control and the cache footprints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Blocking {
    /// Rows of a packed Ã block (loop 3, L2); a multiple of `MR`.
    pub mc: usize,
    /// Depth of packed panels (loop 4, L1 via the KC × NR micro-panel of B̃).
    pub kc: usize,
    /// Columns of a packed B̃ panel (loop 5, L3); a multiple of `NR`.
    pub nc: usize,
}

/// AVX2 f32 6×16 kernel (runs on Zen 3; on Zen 5 only when forced). L1: 16 + 6 = 22 KiB (69 % of
/// 32 KiB, 46 % of 48 KiB); L2: Ã 144 KiB (28 % of 512 KiB, 14 % of 1 MiB); L3: B̃ 4 MiB.
pub(crate) const AVX2_F32: Blocking = Blocking { mc: 144, kc: 256, nc: 4096 };
/// AVX2 f64 6×8 kernel. L1: 16 + 12 = 28 KiB (88 % of 32 KiB, 58 % of 48 KiB); L2: Ã 192 KiB
/// (38 % of 512 KiB, 19 % of 1 MiB); L3: B̃ 4 MiB.
pub(crate) const AVX2_F64: Blocking = Blocking { mc: 96, kc: 256, nc: 2048 };
/// AVX-512 f32 12×32 kernel (Zen 5). L1: 32 + 12 = 44 KiB (92 % of 48 KiB; would not fit a 32 KiB
/// L1, which no AVX-512 machine here has); L2: Ã 144 KiB (14 % of 1 MiB); L3: B̃ 4 MiB.
pub(crate) const AVX512_F32: Blocking = Blocking { mc: 144, kc: 256, nc: 4096 };
/// AVX-512 f64 12×16 kernel (Zen 5). L1: 32 + 24 = 56 KiB, **more than the 48 KiB L1**: only the
/// 32 KiB B̃ micro-panel has to stay there, Ã streams from L2 (module docs). L2: Ã 192 KiB (19 %
/// of 1 MiB); L3: B̃ 4 MiB.
pub(crate) const AVX512_F64: Blocking = Blocking { mc: 96, kc: 256, nc: 2048 };
/// Portable 4×8 kernel (either type; runs where there is no AVX2+FMA, or when forced). L1: 12 KiB
/// (f32) / 24 KiB (f64); L2: Ã 128 / 256 KiB; L3: B̃ 2 / 4 MiB: within every cache of both machines.
pub(crate) const PORTABLE: Blocking = Blocking { mc: 128, kc: 256, nc: 2048 };
