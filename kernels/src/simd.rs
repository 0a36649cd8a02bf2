//! Run-time choice of the instruction set for the elementwise, reduction, softmax and
//! recurrent-cell kernels.
//!
//! The SIMD code of those kernels is written once, generically over a vector type, and
//! instantiated per level: with 256-bit AVX2+FMA vectors inside functions compiled with
//! `#[target_feature(enable = "avx2,fma")]`, with 512-bit AVX-512F vectors inside functions
//! compiled for AVX-512F (only the kernels whose lanes are independent, see below), and with
//! portable vectors (the `wide` crate compiled for the crate's baseline target, SSE2 on x86-64).
//! Which copy runs is decided at run time, from the CPU's features detected once, so:
//!
//! * no `-C target-feature` flag is needed for full speed, and a crate that depends on chi gets
//!   the same speed as the workspace;
//! * a binary built for plain x86-64 runs on a CPU without AVX2 (the AVX2 and AVX-512 copies are
//!   never entered there).
//!
//! The environment variable `CHI_SIMD` (`portable`, `avx2` or `avx512`), read once at the first
//! kernel call, caps the level (for example to measure or debug the portable path); a level the
//! CPU cannot run is never selected, whatever the variable says.
//!
//! The portable and AVX2 levels use the same lane counts (8 × f32, 4 × f64) and the same
//! algorithms; they can differ in the last bits where the AVX2 path fuses a multiply-add that the
//! portable path (on a CPU without FMA) rounds twice. The AVX-512 level runs 16 × f32 / 8 × f64
//! lanes, but only in kernels where each lane computes its own element (elementwise maps, the
//! pointwise passes of recurrent cells): there a lane gives the same bits at either width, so
//! the AVX2 and AVX-512 levels agree bit for bit. Reductions and softmax keep the AVX2 width on
//! an AVX-512 CPU, so that sums associate the same way on every x86-64 machine with AVX2.
//!
//! The GEMM chooses its microkernels the same way, separately (see [`crate::gemm`]).

use std::sync::atomic::{AtomicU8, Ordering};

/// An instruction-set level of the elementwise / reduction kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SimdLevel {
    /// Plain Rust vectors (`wide`) for the compilation target's baseline (SSE2 on x86-64).
    Portable,
    /// 256-bit AVX2 with fused multiply-add.
    Avx2Fma,
    /// AVX-512F (the CPU also has AVX2+FMA): 512-bit vectors for the kernels whose lanes are
    /// independent, the AVX2 ones for reductions and softmax (module docs).
    Avx512,
}

const UNKNOWN: u8 = 0;
const PORTABLE: u8 = 1;
const AVX2: u8 = 2;
const AVX512: u8 = 3;

/// The detected level (capped by `CHI_SIMD`), computed once.
static DETECTED: AtomicU8 = AtomicU8::new(UNKNOWN);
/// A level forced by [`force_simd_level`] (`UNKNOWN` = none).
static FORCED: AtomicU8 = AtomicU8::new(UNKNOWN);

fn encode(l: SimdLevel) -> u8 {
    match l {
        SimdLevel::Portable => PORTABLE,
        SimdLevel::Avx2Fma => AVX2,
        SimdLevel::Avx512 => AVX512,
    }
}

fn decode(v: u8) -> SimdLevel {
    match v {
        AVX512 => SimdLevel::Avx512,
        AVX2 => SimdLevel::Avx2Fma,
        _ => SimdLevel::Portable,
    }
}

/// The best level this CPU supports, ignoring `CHI_SIMD` and any forced level.
pub fn cpu_simd_level() -> SimdLevel {
    use crate::gemm::microkernel::{has_avx2_fma, has_avx512};
    if has_avx2_fma() && has_avx512() {
        SimdLevel::Avx512
    } else if has_avx2_fma() {
        SimdLevel::Avx2Fma
    } else {
        SimdLevel::Portable
    }
}

/// Values `CHI_SIMD` may take, each capping the level at the one it names (the CPU's best level
/// when that is lower).
pub const SIMD_ENV_VALUES: [&str; 3] = ["portable", "avx2", "avx512"];

/// Checks `CHI_SIMD` when it is set (empty counts as unset): any other value than
/// [`SIMD_ENV_VALUES`] would be ignored by the kernels, so a program reports it as an error
/// instead.
pub fn check_simd_env() -> Result<(), String> {
    match std::env::var_os("CHI_SIMD") {
        None => Ok(()),
        Some(v) if v.is_empty() => Ok(()),
        Some(v) if v.to_str().is_some_and(|s| SIMD_ENV_VALUES.contains(&s)) => Ok(()),
        Some(v) => Err(format!("CHI_SIMD={} is not one of {}", v.to_string_lossy(), SIMD_ENV_VALUES.join(", "))),
    }
}

#[cold]
fn detect() -> u8 {
    let cpu = cpu_simd_level();
    let capped = match std::env::var("CHI_SIMD").as_deref() {
        Ok("portable") => cpu.min(SimdLevel::Portable),
        Ok("avx2") => cpu.min(SimdLevel::Avx2Fma),
        _ => cpu,
    };
    let v = encode(capped);
    DETECTED.store(v, Ordering::Relaxed);
    v
}

/// The level the elementwise, reduction and softmax kernels use on this machine now: the best
/// one the CPU supports (detected once), capped by the `CHI_SIMD` environment variable and by
/// [`force_simd_level`].
#[inline]
pub fn simd_level() -> SimdLevel {
    let mut d = DETECTED.load(Ordering::Relaxed);
    if d == UNKNOWN {
        d = detect();
    }
    let f = FORCED.load(Ordering::Relaxed);
    if f != UNKNOWN && f < d {
        decode(f)
    } else {
        decode(d)
    }
}

/// Whether the vector multiply-add of the current level ([`simd_level`]) rounds once (a fused
/// multiply-add), as it does on AVX2+FMA and AVX-512. On the portable level it is fused only where the
/// compilation target guarantees an FMA instruction (AArch64, or x86-64 built with the `fma`
/// target feature); elsewhere (plain x86-64) it is a multiply then an add, rounded twice. Kernels
/// documented as "one FMA per element" (e.g. [`crate::elementwise::mul_acc`]) follow this.
pub fn fused_multiply_add() -> bool {
    match simd_level() {
        SimdLevel::Avx2Fma | SimdLevel::Avx512 => true,
        SimdLevel::Portable => cfg!(any(target_feature = "fma", target_arch = "aarch64")),
    }
}

/// Forces the kernels of this process down to `level` (`None`: back to the detected level), so
/// that tests and benchmarks can exercise the portable path on a machine with AVX2. A level above
/// what the CPU supports is ignored (never unsafe). Process-wide: kernels running concurrently on
/// other threads switch too (each still computes a correct result).
#[doc(hidden)]
pub fn force_simd_level(level: Option<SimdLevel>) {
    FORCED.store(level.map_or(UNKNOWN, encode), Ordering::Relaxed);
}

/// Runs `f` compiled for the vector instructions of the current level ([`simd_level`]): inside a
/// function with AVX2 and FMA enabled when the level is [`SimdLevel::Avx2Fma`] or above, directly
/// otherwise. For loops outside this crate that the compiler vectorises by itself (an
/// optimiser's update over a parameter), which a plain x86-64 build compiles for SSE2's two f64
/// lanes. Mark `f` (and what it calls in the loop) `#[inline(always)]` so that its body is
/// compiled inside the wider function.
///
/// Results do not depend on the level: Rust never contracts `a * b + c` into a fused
/// multiply-add on its own, and every other IEEE operation (and conversion) rounds each lane
/// exactly as the scalar code does.
///
/// ```
/// let x = vec![1.5f32; 1000];
/// let s: f64 = chi_kernels::simd::vectorized(#[inline(always)] || x.iter().map(|&v| v as f64).sum());
/// assert_eq!(s, 1500.0);
/// ```
#[inline]
pub fn vectorized<R>(f: impl FnOnce() -> R) -> R {
    match simd_level() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `simd_level` only reports these levels when the CPU has AVX2 and FMA.
        SimdLevel::Avx2Fma | SimdLevel::Avx512 => unsafe { run_avx2(f) },
        _ => f(),
    }
}

/// Runs `f` in a function compiled with AVX2 and FMA enabled, so that `f`'s body (inlined into it,
/// together with the `#[inline(always)]` vector code it calls) is compiled to AVX2+FMA
/// instructions.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn run_avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Runs `f` in a function compiled with AVX-512F (and AVX2+FMA) enabled, as [`run_avx2`] does for
/// AVX2.
///
/// # Safety
/// The CPU must support AVX-512F, AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) unsafe fn run_avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}
