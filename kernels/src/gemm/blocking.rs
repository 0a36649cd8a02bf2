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
//!   `driver.rs`), so two threads need twice this much of the shared L3. The AVX-512 and portable
//!   kernels use NC so large that square problems up to n = 4096 (f32) / 2048 (f64) use one panel;
//!   the AVX2 kernels use a 1 MiB B̃ (NC = 1024 f32, 512 f64), measured faster on Zen 3 at
//!   n = 1024 and 2048 (Measurements). When `m ≤ MC` the driver narrows NC to 8 micro-panels
//!   (`SMALL_M_PANELS`), so B̃ is then 8·KC·NR and lives in L2 next to Ã instead of in L3.
//!
//! The AVX2 kernels skip packing A when a packed Ã block would feed at most 8 B̃ micro-panels
//! (small n, or the narrowed panels of a small m) and A's rows are contiguous: the tiles then read
//! A in place (`DIRECT_A_MAX_PANELS` in `driver.rs`), and the L2 column below does not apply.
//!
//! # The machines
//!
//! Cache sizes per core, from `lscpu` / `lscpu -C` on each:
//!
//! * **Zen 3** (AMD EPYC, AVX2 + FMA, no AVX-512): L1d 32 KiB, L2 512 KiB, L3 32 MiB
//!   shared. The AVX2 kernels run there; the AVX-512 ones cannot.
//! * **Zen 5** (AMD EPYC family 26, AVX-512F/DQ/BW/VL): L1d 48 KiB (12-way, 64 sets of 64-byte
//!   lines, so 4 KiB per way), L2 1 MiB, L3 32 MiB shared. `Kernel::select` picks the AVX-512
//!   kernels there; the AVX2 ones run only when forced (`KernelChoice::Avx2`, tests).
//! * **Intel Xeon** (family 6 model 207, KVM guest, AVX-512F/DQ/BW/VL and more): L1d 48 KiB, L2
//!   2 MiB, L3 260 MiB shared. The AVX-512 kernels run there, with the same footprints in L1 as
//!   on Zen 5 and half the share of L2.
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
//! | AVX2 f32 | 6 × 16 | 144, 1024 | 16 + 6 = 22 KiB | 69 % / 46 % | 144 KiB | 28 % / 14 % | 1 MiB (2 MiB) | 3 % (6 %) |
//! | AVX2 f64 | 6 × 8 | 96, 512 | 16 + 12 = 28 KiB | 88 % / 58 % | 192 KiB | 38 % / 19 % | 1 MiB (2 MiB) | 3 % (6 %) |
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
//! * **Zen 3, AVX2 f32 6 × 16 and f64 6 × 8, 2026-11-26** (AMD EPYC `cpu family 25 model 1`,
//!   L1d 32 KiB 8-way, L2 512 KiB per core, L3 32 MiB; 2 vCPUs shared with another engineer's
//!   builds, load average 1.8–3.4 throughout, so single timings moved by ±10 %). Three passes:
//!
//!   1. *Cache simulation* (deterministic, whatever the load): one `gemm_par(Par::Seq, …)` call on
//!      512 × 512 row-major operands in a scratch harness under `CHI_GEMM_BLOCKING=MC,KC,NC
//!      valgrind --tool=callgrind --cache-sim=yes --D1=32768,8,64 --LL=524288,8,64
//!      --toggle-collect='chi_kernels::gemm::driver::gemm_seq'` (LL set to this L2). Thousands of
//!      L1 read misses / L2 read misses (the simulator has no hardware prefetcher, so these are
//!      upper bounds on what reaches the core), NC = 4096 / 2048:
//!
//!      | f32 | KC 128 | 192 | 256 | 384 | 512 |
//!      |---|---|---|---|---|---|
//!      | MC 72 | 731 / 107 | 716 / 158 | 733 / 180 | 1172 / 154 | 2009 / 164 |
//!      | MC 96 | 692 / 110 | 690 / 143 | 704 / 148 | 1147 / 130 | 2009 / 131 |
//!      | MC 144 | 677 / 140 | 662 / 129 | **672 / 115** | 1129 / 115 | 2009 / 111 |
//!      | MC 192 | 660 / 130 | 645 / 116 | 656 / 102 | 1117 / 110 | 2009 / 110 |
//!      | MC 240 | 642 / 128 | 641 / 121 | 656 / 114 | 1113 / 120 | 2009 / 369 |
//!
//!      | f64 | KC 128 | 192 | 256 | 384 | 512 |
//!      |---|---|---|---|---|---|
//!      | MC 72 | 2539 / 427 | 2531 / 394 | 2608 / 362 | 4468 / 366 | 5075 / 357 |
//!      | MC 96 | 2522 / 362 | 2488 / 333 | **2545 / 305** | 4464 / 323 | 5075 / 328 |
//!      | MC 144 | 2457 / 315 | 2423 / 289 | 2482 / 272 | 4448 / 290 | 5075 / 1975 |
//!      | MC 192 | 2424 / 298 | 2390 / 274 | 2451 / 258 | 4440 / 1399 | 5075 / 2277 |
//!      | MC 240 | 2424 / 312 | 2390 / 287 | 2451 / 533 | 4440 / 1684 | 5075 / 2130 |
//!
//!      KC ≥ 384 overflows L1 (B̃ micro-panel 24–32 KiB next to Ã): L1 misses ×1.7–3. An Ã block
//!      above ~400 KiB (f64 MC ≥ 192 with KC ≥ 384, MC = 240 with KC = 256, MC = 144 with KC =
//!      512; f32 MC = 240, KC = 512) overflows L2: L2 misses ×2–8. Inside those limits a larger
//!      Ã means fewer B̃ reloads, so MC = 144–192 miss least.
//!   2. *Timing, the full grid* MC ∈ {72, 96, 144, 192, 240} × KC ∈ {128, 192, 256, 384, 512},
//!      n = 256, 512, 1024, 2048, chi alone in the same harness, 3 rounds in random order: every
//!      cell within the ±10 % run-to-run noise of the others (medians 54–84 GFLOPS f32, 28–43
//!      f64; a different cell is best at each size except f64 (240, 384) at 1024 and 2048).
//!   3. *Timing against matrixmultiply*, the candidates the first two passes left, 5 rounds
//!      alternating candidates: `CHI_GEMM_BLOCKING=MC,KC,NC target/release/chi --threads 1 bench
//!      gemm --dtype f32|f64 --sizes 256,512,1024,2048 --reps 5 --json`. Median ratio chi /
//!      matrixmultiply (the ratio cancels most of the load) at n = 256 / 512 / 1024 / 2048:
//!
//!      | MC, KC (NC 4096 f32, 2048 f64) | sgemm | dgemm |
//!      |---|---|---|
//!      | 96, 256 | 1.09 / 1.09 / 1.11 / 1.13 | **1.19 / 1.27 / 1.21 / 1.16** |
//!      | 144, 256 | **1.09 / 1.09 / 1.12 / 1.06** | 1.13 / 1.21 / 1.15 / 1.12 |
//!      | 192, 256 | 1.07 / 1.10 / 1.12 / 1.06 | 1.18 / 1.21 / 1.18 / 1.16 |
//!      | 192, 192 | 1.04 / 1.06 / 1.07 / 1.05 | 1.11 / 1.13 / 1.15 / 1.12 |
//!      | 144, 384 (f32) / 144, 192 (f64) | 1.08 / 1.07 / 1.10 / 1.06 | 1.09 / 1.18 / 1.14 / 1.08 |
//!
//!      KC = 192 loses 3–5 % (a third more C-tile loads and stores per FMA than KC = 256) and
//!      KC = 384 (f32, L1 overflow) 1–2 %; among the MC values with KC = 256 the
//!      differences are inside the noise, so MC stays 144 (f32) and 96 (f64). Then NC with those,
//!      same command, `--sizes 1024,2048`, 5 rounds: sgemm NC = 512 / 1024 / 2048 / 4096:
//!      1.11 / 1.13 / 1.06 / 1.11 at n = 1024 and 1.10 / 1.10 / 1.01 / 1.06 at n = 2048; dgemm
//!      NC = 256 / 512 / 1024 / 2048: 1.16 / 1.21 / 1.19 / 1.14 and 1.11 / 1.17 / 1.15 / 1.11. So
//!      NC = 1024 (f32) and 512 (f64): a 1 MiB B̃ for both, ~5 % over one n-wide panel at
//!      n = 2048 (A is packed once per panel, i.e. twice or four times there, which costs less).
//!
//!   Earlier (on the same machine, before the packing was vectorised): MC ∈ {96, 144, 192} × KC ∈
//!   {192, 256, 320, 384} within ±3 % of each other for sgemm at n = 256 and 1024.
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
//! * **Intel Xeon, AVX-512 f32 and f64, 2026-11-27** (the machine above; 2 vCPUs, nothing else
//!   running, but the speed of both libraries moved by ±15 % from minute to minute: the FMA ceiling
//!   stayed at 171–173 GFLOPS f32 while one blocking's sgemm at n = 512 ran at 108–145). A sweep
//!   of 8 blockings per type, 3 rounds in shuffled order, `CHI_GEMM_BLOCKING=MC,KC,NC
//!   target/release/chi --threads 1 bench gemm --dtype f32|f64 --sizes 256,512,1024,2048 --reps 5
//!   --json`). Median ratio chi / matrixmultiply over the 12 (size, round) cells, with its range:
//!
//!   | sgemm MC, KC (NC 4096) | ratio | | dgemm MC, KC (NC 2048) | ratio |
//!   |---|---|---|---|---|
//!   | **144, 256** | 1.08 (0.92–1.40) | | **96, 256** | 1.25 (0.89–1.40) |
//!   | 144, 128 | 1.02 (0.85–1.19) | | 96, 128 | 1.33 (1.14–1.54) |
//!   | 144, 192 | 1.10 (0.85–1.40) | | 96, 192 | 1.28 (1.07–1.44) |
//!   | 144, 320 | 1.14 (0.92–1.42) | | 48, 128 | 1.36 (1.06–1.50) |
//!   | 96, 256 | 1.09 (0.89–1.42) | | 144, 128 | 1.28 (1.10–1.69) |
//!   | 288, 192 | 1.15 (0.94–1.34) | | 192, 128 | 1.18 (1.05–1.41) |
//!   | 288, 256 | 1.13 (0.89–1.40) | | 192, 192 | 1.19 (1.09–1.51) |
//!   | 576, 256 | 1.12 (0.90–1.27) | | 384, 128 | 1.28 (1.02–1.60) |
//!
//!   Every range overlaps every other: no blocking is distinguishable from the current one at
//!   this noise, so the constants stay. (KC = 128 would make the f64 B̃ + Ã fit in 48 KiB; the
//!   `--anatomy` tile-in-L1 figure for KC = 256 read 76–82 % in one minute and 94–95 % in the
//!   next, KC = 128 90–96 %, so no overflow cost was isolated here either.)
//!
//!   What did show at this noise was not blocking but the memory-side code. Two changes, each
//!   timed against the binary before it in alternating runs (`--threads 1 bench gemm`, medians):
//!   (1) the AVX-512 tiles read a small row-major A in place, as the AVX2 ones did (driver's
//!   `DIRECT_A_MAX_PANELS`): sgemm at n = 32…256 from 0.58–1.14× to 1.12–1.39× matrixmultiply
//!   (5 runs); (2) a row-major A is packed into 12-row panels by the AVX2 6-row transposes
//!   (twice per panel) instead of element by element: sgemm at n = 288 / 320 / 384 / 512 from
//!   105 / 103 / 111 / 108 to 117 / 121 / 121 / 117 GFLOPS, 64–66 % to 69–73 % of the ceiling
//!   (6 runs; dgemm 53–56 to 54–60 GFLOPS).
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
/// 32 KiB, 46 % of 48 KiB); L2: Ã 144 KiB (28 % of 512 KiB, 14 % of 1 MiB); L3: B̃ 1 MiB. Swept
/// on Zen 3 (module docs).
pub(crate) const AVX2_F32: Blocking = Blocking { mc: 144, kc: 256, nc: 1024 };
/// AVX2 f64 6×8 kernel. L1: 16 + 12 = 28 KiB (88 % of 32 KiB, 58 % of 48 KiB); L2: Ã 192 KiB
/// (38 % of 512 KiB, 19 % of 1 MiB); L3: B̃ 1 MiB. Swept on Zen 3 (module docs).
pub(crate) const AVX2_F64: Blocking = Blocking { mc: 96, kc: 256, nc: 512 };
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

/// The environment variable that replaces the blocking of whichever kernel runs: `MC,KC,NC` in
/// elements, e.g. `CHI_GEMM_BLOCKING=192,256,4096`. It exists to rerun the sweep recorded in the
/// module docs on another CPU with the `chi bench gemm` binary. MC must be a multiple of the
/// kernel's MR and NC of its NR (the driver steps through them by whole micro-panels); every value
/// must be positive and at most [`ENV_MAX`]. It is read once per process; an invalid value makes
/// every GEMM call panic with the reason, rather than run with blocking nobody asked for.
pub(crate) const BLOCKING_ENV: &str = "CHI_GEMM_BLOCKING";

/// Upper bound on each value of [`BLOCKING_ENV`] (keeps the scratch buffers it implies bounded).
pub(crate) const ENV_MAX: usize = 1 << 16;

/// The blocking [`BLOCKING_ENV`] asks for, for a kernel with tile `mr × nr`, or `None` when it is
/// not set.
///
/// # Panics
/// If the variable is set but not valid for this kernel ([`parse_blocking`]).
pub(crate) fn env_override(mr: usize, nr: usize) -> Option<Blocking> {
    static RAW: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let raw = RAW.get_or_init(|| std::env::var(BLOCKING_ENV).ok()).as_deref()?;
    Some(parse_blocking(raw, mr, nr).unwrap_or_else(|e| panic!("gemm: {BLOCKING_ENV}={raw:?}: {e}")))
}

/// Parses `MC,KC,NC` and checks it against a kernel with tile `mr × nr` (see [`BLOCKING_ENV`]).
pub(crate) fn parse_blocking(s: &str, mr: usize, nr: usize) -> Result<Blocking, String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let [mc, kc, nc] = parts[..] else { return Err("expected three numbers MC,KC,NC".into()) };
    let num = |x: &str, name: &str, unit: usize| -> Result<usize, String> {
        let v: usize = x.parse().map_err(|_| format!("{name} = {x:?} is not a number"))?;
        if v == 0 || v > ENV_MAX || v % unit != 0 {
            return Err(format!("{name} = {v} must be a multiple of {unit} between 1 and {ENV_MAX}"));
        }
        Ok(v)
    };
    Ok(Blocking { mc: num(mc, "MC", mr)?, kc: num(kc, "KC", 1)?, nc: num(nc, "NC", nr)? })
}

#[cfg(test)]
mod tests {
    use super::{parse_blocking, Blocking};

    #[test]
    fn blocking_override_is_validated() {
        assert_eq!(parse_blocking("192,256,4096", 6, 16), Ok(Blocking { mc: 192, kc: 256, nc: 4096 }));
        assert_eq!(parse_blocking(" 96, 7 ,64", 6, 8), Ok(Blocking { mc: 96, kc: 7, nc: 64 }));
        for (bad, why) in [
            ("190,256,4096", "MC = 190 must be a multiple of 6"),
            ("192,0,4096", "KC = 0 must be a multiple of 1"),
            ("192,256,4100", "NC = 4100 must be a multiple of 16"),
            ("192,70000,4096", "KC = 70000 must be a multiple of 1 between 1 and 65536"),
            ("192,256", "expected three numbers"),
            ("192,x,4096", "KC = \"x\" is not a number"),
            ("", "expected three numbers"),
        ] {
            let e = parse_blocking(bad, 6, 16).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }
}
