//! Cache-blocking constants of the BLIS-style GEMM, and why they fit this machine.
//!
//! The driver ([`super::driver`]) runs the five BLIS loops around a register-blocked microkernel:
//!
//! ```text
//! for jc in 0..n step NC          // loop 5: a column panel of B and C          (B panel lives in L3)
//!   for pc in 0..k step KC        // loop 4: a KC-deep slice; pack B[pc.., jc..] → B̃ (KC × NC)
//!     for ic in 0..m step MC      // loop 3: a row block;      pack A[ic.., pc..] → Ã (MC × KC, lives in L2)
//!       for jr in 0..NC step NR   // loop 2: one KC × NR micro-panel of B̃ (lives in L1)
//!         for ir in 0..MC step MR // loop 1: one MR × KC micro-panel of Ã (streamed from L2)
//!           microkernel: C[MR × NR] += Ã_ir · B̃_jr   (rank-KC update in registers)
//! ```
//!
//! Target machine (see `ANCHORS.md`): AMD Zen 3, L1d 32 KiB, L2 512 KiB per core, L3 32 MiB shared.
//!
//! * **KC** (loop 4, the depth of every packed panel) sets the L1 footprint of the innermost loop:
//!   one B̃ micro-panel (KC × NR) is reused by all MC/MR micro-panels of Ã, so it must stay in L1 along
//!   with the Ã micro-panel being streamed (MR × KC) and the C tile. f32, 6×16 tile, KC = 256:
//!   B̃ micro-panel 16 KiB + Ã micro-panel 6 KiB = 22 KiB of the 32 KiB L1. f64, 6×8 tile, KC = 256:
//!   16 KiB + 12 KiB = 28 KiB. A larger KC also amortises the C load/store of each tile over more FMAs.
//! * **MC** (loop 3, rows of the packed Ã block) sets the L2 footprint: Ã (MC × KC) is reused across all
//!   NC/NR micro-panels of B̃ and must stay in the 512 KiB L2 next to the B̃ micro-panels passing
//!   through. f32: 144 × 256 × 4 B = 144 KiB; f64: 96 × 256 × 8 B = 192 KiB — well under half of L2,
//!   leaving room for B̃ and C traffic. MC is a multiple of MR.
//! * **NC** (loop 5, columns of the packed B̃ panel) sets the L3 footprint: B̃ (KC × NC) is reused by
//!   every MC row block. f32: 256 × 4096 × 4 B = 4 MiB; f64: 256 × 2048 × 8 B = 4 MiB, an eighth
//!   of the 32 MiB L3 (shared by both cores, which each pack their own B̃ when threaded). NC is a
//!   multiple of NR, and in practice so large that square problems up to n = 4096 use one panel.
//!
//! **AVX-512 kernels (12×32 f32, 12×16 f64), e.g. AMD Zen 5 (L1d 48 KiB, L2 1 MiB per core):**
//! KC = 256 gives a B̃ micro-panel of 256 × 32 × 4 B = 32 KiB (f32; f64: 256 × 16 × 8 B = 32 KiB)
//! plus an Ã micro-panel of 12 KiB (f64: 24 KiB, which spills to L2 but is streamed in order) in the
//! 48 KiB L1; MC = 144 (f32) keeps Ã at 144 KiB of the 1 MiB L2. Measured on a Zen 5 machine
//! (2026-11-23, `chi --threads 1 bench gemm --sizes 128,…,2048`, sgemm): (MC, KC) ∈ {(144, 192),
//! (144, 256), (288, 256), (96, 384), (240, 320)} all give 1.11–1.17× matrixmultiply and 87–94 % of
//! the AVX-512 FMA ceiling, differences within run-to-run noise; we keep the AVX2 values.
//!
//! Measured with `chi bench gemm` (sgemm, n = 256 and 1024, one thread, medians of alternating
//! runs): MC ∈ {96, 144, 192} × KC ∈ {192, 256, 320, 384} all land within ±3 % of each other
//! (the timing noise of this shared machine); MC = 72 and KC = 512 were not better. The values
//! above sit in the middle of that flat region, where the cache arithmetic also has the most slack.

/// Blocking parameters of one microkernel (in elements).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Blocking {
    /// Rows of a packed Ã block (loop 3); a multiple of `MR`.
    pub mc: usize,
    /// Depth of packed panels (loop 4).
    pub kc: usize,
    /// Columns of a packed B̃ panel (loop 5); a multiple of `NR`.
    pub nc: usize,
}

/// AVX2 f32 6×16 kernel.
pub(crate) const AVX2_F32: Blocking = Blocking { mc: 144, kc: 256, nc: 4096 };
/// AVX2 f64 6×8 kernel.
pub(crate) const AVX2_F64: Blocking = Blocking { mc: 96, kc: 256, nc: 2048 };
/// AVX-512 f32 12×32 kernel (see the module docs for the Zen 5 footprints).
pub(crate) const AVX512_F32: Blocking = Blocking { mc: 144, kc: 256, nc: 4096 };
/// AVX-512 f64 12×16 kernel.
pub(crate) const AVX512_F64: Blocking = Blocking { mc: 96, kc: 256, nc: 2048 };
/// Portable 4×8 kernel (either type): the same footprints, rounded to its tile.
pub(crate) const PORTABLE: Blocking = Blocking { mc: 128, kc: 256, nc: 2048 };
