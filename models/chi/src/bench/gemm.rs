//! `chi bench gemm`: chi's GEMM side by side with `matrixmultiply`, in GFLOPS and as a percentage
//! of this machine's FMA ceiling measured in the same process.
//!
//! Method (the machine is shared and noisy, so everything is a median of alternating runs):
//! * **Ceiling**: a register-only FMA loop of the widest vectors the GEMM kernel uses (AVX-512: 24
//!   independent zmm chains; AVX2: 12 ymm chains; enough to cover 2 FMA pipes × 4-cycle latency)
//!   runs simultaneously on every thread of the rayon pool
//!   ([`rayon::broadcast`]). It is sampled 7 times at the start and once more after every
//!   chi/matrixmultiply pair, and the reported ceiling is the **highest** rate seen so far in the
//!   run. A ceiling is a capability, and load from other processes can only lower a sample (a
//!   descheduled thread stalls a whole 2-thread broadcast), so the maximum estimates it and a
//!   median would not: with medians a loaded moment once put a 2-thread ceiling at half its value
//!   and chi at "124 % of the ceiling". The f64 ceiling is measured with f64 FMAs (half the f32
//!   lanes).
//! * **GEMM**: square `n × n` row-major products `C ← A·B` (β = 0). chi runs with [`Par::Auto`] on
//!   the rayon pool (`--threads N` builds it); `matrixmultiply` runs with its own thread pool,
//!   whose size it reads **once**, at its first call, from the environment variable
//!   `MATMUL_NUM_THREADS` — this command sets that variable to the rayon pool size before any
//!   matrixmultiply call, so both libraries get the same number of threads. Each sample times
//!   enough back-to-back calls to last ≥ 10 ms; samples of chi and matrixmultiply alternate, each
//!   GFLOPS figure is `2n³ / median(time)`, and the ratio is the median over adjacent
//!   (chi, matrixmultiply) pairs of their speed ratio (robust to load bursts from other processes).
//!
//! * **Anatomy** (`--anatomy`, one thread): two more alternating samples per pair, of the
//!   microkernel alone ([`chi_kernels::gemm::MicroBench`]): its register tile on operands already in
//!   L1, and the driver's two innermost loops over one packed Ã block (MC × KC) and one packed B̃
//!   panel (KC × NC, at most 64 micro-panels) of its own blocking. Reported as % of the same ceiling:
//!   ceiling → tile in L1 is the tile's own cost (its C update, loop and load overheads); tile in
//!   L1 → tile over the block is the caches behind it; tile over the block → whole GEMM is packing,
//!   the outer loops and C beyond the block.
//!
//! `--json` prints one object per size and line:
//! `{"kernel":"sgemm","n":512,"threads":1,"chi_gflops":…,"matrixmultiply_gflops":…,"ratio":…,"ceiling_gflops":…,"pct_of_ceiling":…}`.

use chi_kernels::gemm::{gemm_par, MatMut, MatRef, MicroBench, Par};
use chi_kernels::Real;
use clap::Args;
use serde::Serialize;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Options of `chi bench gemm`.
#[derive(Args, Debug, Clone)]
pub struct GemmBenchArgs {
    /// Square sizes to run.
    #[arg(long, value_delimiter = ',', default_value = "64,128,256,512,1024")]
    pub sizes: Vec<usize>,
    /// Element type: f32 or f64.
    #[arg(long, default_value = "f32")]
    pub dtype: String,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Timed samples per library and size (each sample lasts at least 10 ms); medians are
    /// reported. 1 to 10000.
    #[arg(long, default_value_t = 15, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10_000))]
    pub reps: usize,
    /// Also time the microkernel alone (in L1, and over one packed block) to show where the
    /// GEMM's time goes beside the ceiling; needs --threads 1.
    #[arg(long)]
    pub anatomy: bool,
}

impl GemmBenchArgs {
    /// The arguments used when `chi` runs this benchmark as its default job.
    pub fn default_job() -> Self {
        GemmBenchArgs { sizes: vec![64, 128, 256, 512, 1024], dtype: "f32".into(), json: false, reps: 15, anatomy: false }
    }
}

/// One result line.
#[derive(Serialize, Debug, Clone)]
pub struct GemmBenchRow {
    /// `"sgemm"` or `"dgemm"`.
    pub kernel: &'static str,
    /// Matrix size (all of m, n, k).
    pub n: usize,
    /// Threads used by both libraries.
    pub threads: usize,
    /// chi, GFLOPS (median).
    pub chi_gflops: f64,
    /// matrixmultiply, GFLOPS (median).
    pub matrixmultiply_gflops: f64,
    /// chi / matrixmultiply speed: the median over adjacent (chi, matrixmultiply) sample pairs,
    /// which cancels most of the load changes on a shared machine.
    pub ratio: f64,
    /// Measured FMA ceiling for this dtype and thread count, GFLOPS.
    pub ceiling_gflops: f64,
    /// chi as a percentage of the ceiling.
    pub pct_of_ceiling: f64,
    /// Vector ISA of chi's microkernel and of the ceiling loop (`avx512`, `avx2`, `portable`).
    pub isa: &'static str,
    /// `--anatomy`: the microkernel on operands in L1, % of the ceiling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tile_l1_pct: Option<f64>,
    /// `--anatomy`: the microkernel over one packed Ã block and B̃ panel, % of the ceiling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tile_block_pct: Option<f64>,
}

/// Runs the benchmark and prints its report.
pub fn run(args: &GemmBenchArgs) -> Result<(), String> {
    if args.sizes.is_empty() || args.sizes.contains(&0) {
        return Err("bench gemm: --sizes needs positive sizes".into());
    }
    let bytes: u128 = match args.dtype.as_str() {
        "f32" => 4,
        "f64" => 8,
        other => return Err(format!("bench gemm: unknown --dtype {other:?} (expected f32 or f64)")),
    };
    for &n in &args.sizes {
        chi_nn::limits::check_elements("bench gemm --sizes (one n × n matrix)", &[n, n])?;
        // A, B and C at once (the packing buffers are a few MiB beside them).
        let total = 3 * bytes * (n as u128) * (n as u128);
        chi_nn::limits::check_total_bytes(&format!("bench gemm --sizes {n} --dtype {}", args.dtype), &format!("three {n} × {n} matrices"), total)
            .map_err(|e| e.to_string())?;
    }
    let threads = rayon::current_num_threads();
    if args.anatomy && threads != 1 {
        return Err(format!("bench gemm: --anatomy times one thread's microkernel; run it with --threads 1 (the pool has {threads})"));
    }
    // matrixmultiply reads MATMUL_NUM_THREADS once, on its first call: set it before that.
    std::env::set_var("MATMUL_NUM_THREADS", threads.to_string());
    let reps = args.reps.max(1);
    let rows = if bytes == 8 {
        bench_all::<f64>(&args.sizes, threads, reps, !args.json, args.anatomy)
    } else {
        bench_all::<f32>(&args.sizes, threads, reps, !args.json, args.anatomy)
    }?;
    if args.json {
        for r in &rows {
            println!("{}", serde_json::to_string(r).map_err(|e| e.to_string())?);
        }
    }
    Ok(())
}

fn round(x: f64, digits: i32) -> f64 {
    let s = 10f64.powi(digits);
    (x * s).round() / s
}

fn bench_all<T: Real + MmGemm>(sizes: &[usize], threads: usize, reps: usize, table: bool, anatomy: bool) -> Result<Vec<GemmBenchRow>, String> {
    let mut ceiling = fma_ceiling::<T>();
    let mut micro = anatomy.then(MicroBench::<T>::new);
    let kernel = if T::NAME == "f32" { "sgemm" } else { "dgemm" };
    if table {
        println!("machine: {} | {threads} thread(s) | GEMM kernels: {} | measured {} FMA ceiling: {:.1} GFLOPS (highest sample so far; re-sampled per size)",
            cpu_name(), gemm_isa(), T::NAME, ceiling);
        if let Some(m) = &micro {
            let (mr, nr, mc, kc, nc) = m.shape();
            println!("anatomy: microkernel {mr}×{nr}; block: Ã {mc}×{kc}, B̃ {kc}×{nc}");
            println!("{:>6} {:>7} {:>10} {:>16} {:>7} {:>11} {:>10} {:>13}", "n", "kernel", "chi GF/s", "matrixmult GF/s", "ratio", "% ceiling", "tile L1 %", "tile block %");
        } else {
            println!("{:>6} {:>7} {:>10} {:>16} {:>7} {:>11}", "n", "kernel", "chi GF/s", "matrixmult GF/s", "ratio", "% ceiling");
        }
    }
    let mut rows = Vec::new();
    for &n in sizes {
        let (chi, mm, ratio, size_ceiling, tiles) = bench_size::<T>(n, threads, reps, micro.as_mut());
        ceiling = ceiling.max(size_ceiling);
        let r = GemmBenchRow {
            kernel,
            n,
            threads,
            chi_gflops: round(chi, 2),
            matrixmultiply_gflops: round(mm, 2),
            ratio: round(ratio, 3),
            ceiling_gflops: round(ceiling, 2),
            pct_of_ceiling: round(100.0 * chi / ceiling, 1),
            isa: gemm_isa(),
            tile_l1_pct: tiles.map(|(l1, _)| round(100.0 * l1 / ceiling, 1)),
            tile_block_pct: tiles.map(|(_, block)| round(100.0 * block / ceiling, 1)),
        };
        if table {
            print!("{:>6} {:>7} {:>10.1} {:>16.1} {:>7.3} {:>10.1}%", r.n, r.kernel, r.chi_gflops, r.matrixmultiply_gflops, r.ratio, r.pct_of_ceiling);
            if let (Some(l1), Some(block)) = (r.tile_l1_pct, r.tile_block_pct) {
                print!(" {l1:>9.1}% {block:>12.1}%");
            }
            println!();
        }
        rows.push(r);
    }
    Ok(rows)
}

/// Median GFLOPS of chi and matrixmultiply for an `n³` product, and the median over alternating
/// (chi, matrixmultiply) sample pairs of their speed ratio, and the highest FMA ceiling sample
/// measured between those pairs; with `micro`, also the median GFLOPS of the microkernel in L1
/// and over one packed block, sampled between the same pairs.
fn bench_size<T: Real + MmGemm>(n: usize, threads: usize, reps: usize, mut micro: Option<&mut MicroBench<T>>) -> (f64, f64, f64, f64, Option<(f64, f64)>) {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ n as u64;
    let mut rand = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        T::from_f64((seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5)
    };
    let a: Vec<T> = (0..n * n).map(|_| rand()).collect();
    let b: Vec<T> = (0..n * n).map(|_| rand()).collect();
    let mut c = vec![T::ZERO; n * n];
    let par = if threads > 1 { Par::Auto } else { Par::Seq };
    let chi = |c: &mut [T]| {
        gemm_par(par, T::ONE, MatRef::row_major(&a, n, n), MatRef::row_major(&b, n, n), T::ZERO, MatMut::row_major(c, n, n))
    };
    let mm = |c: &mut [T]| T::mm_gemm(n, &a, &b, c);
    let flops = 2.0 * (n as f64).powi(3);
    // Calibrate: calls per sample so a sample lasts ≥ 10 ms (also warms caches and thread pools).
    let t0 = Instant::now();
    chi(&mut c);
    mm(&mut c);
    let one = t0.elapsed().as_secs_f64() / 2.0;
    let calls = ((0.01 / one.max(1e-9)).ceil() as usize).clamp(1, 100_000);
    let (mut tc, mut tm, mut ceil) = (Vec::new(), Vec::new(), Vec::new());
    let (mut g_l1, mut g_block) = (Vec::new(), Vec::new());
    // Calls of each microkernel measurement per sample, calibrated like the products (≥ 10 ms).
    let micro_calls = micro.as_deref_mut().map(|m| {
        let l1 = (0.01 / time(1, || { m.resident(1000); }).max(1e-9) * 1000.0).ceil() as usize;
        let block = (0.01 / time(1, || { m.block(1); }).max(1e-9)).ceil() as usize;
        (l1.clamp(1, 100_000_000), block.clamp(1, 100_000))
    });
    for _ in 0..reps {
        tc.push(time(calls, || chi(black_box(&mut c))));
        tm.push(time(calls, || mm(black_box(&mut c))));
        if let (Some(m), Some((l1, block))) = (micro.as_deref_mut(), micro_calls) {
            g_l1.push(gflops(|| m.resident(l1)));
            g_block.push(gflops(|| m.block(block)));
        }
        ceil.push(fma_ceiling_sample::<T>());
    }
    let pair_ratio = median(tm.iter().zip(&tc).map(|(m, c)| m / c).collect());
    let best_ceiling = ceil.iter().copied().fold(0.0, f64::max);
    let tiles = micro_calls.map(|_| (median(g_l1), median(g_block)));
    (flops / median(tc) / 1e9, flops / median(tm) / 1e9, pair_ratio, best_ceiling, tiles)
}

/// GFLOPS of one run of `f`, which returns the flops it did.
fn gflops(f: impl FnOnce() -> f64) -> f64 {
    let t = Instant::now();
    let flops = f();
    flops / t.elapsed().as_secs_f64().max(1e-9) / 1e9
}

fn time(calls: usize, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..calls {
        f();
    }
    t.elapsed().as_secs_f64() / calls as f64 // seconds per call
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
    .max(1e-12)
}

/// matrixmultiply's entry point for this type.
pub trait MmGemm: Sized {
    /// `c ← a·b` for row-major `n × n` matrices.
    fn mm_gemm(n: usize, a: &[Self], b: &[Self], c: &mut [Self]);
    /// Runs `iters` rounds of independent vector FMAs of the widest ISA chi's GEMM uses here;
    /// returns the flops done (NaN without AVX2+FMA).
    fn fma_loop(iters: usize) -> f64;
}

impl MmGemm for f32 {
    fn mm_gemm(n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
        assert!(a.len() >= n * n && b.len() >= n * n && c.len() >= n * n);
        let n_ = n as isize;
        // SAFETY: all three buffers hold n·n elements (asserted), addressed row-major with strides (n, 1).
        unsafe { matrixmultiply::sgemm(n, n, n, 1.0, a.as_ptr(), n_, 1, b.as_ptr(), n_, 1, 0.0, c.as_mut_ptr(), n_, 1) }
    }
    fn fma_loop(iters: usize) -> f64 {
        #[cfg(target_arch = "x86_64")]
        if has_avx512() {
            // SAFETY: AVX-512F was detected on this CPU.
            let s = unsafe { fma::f32_loop512(iters / 2) };
            black_box(s);
            return ((iters / 2) * 24 * 16 * 2) as f64;
        }
        #[cfg(target_arch = "x86_64")]
        if has_avx2_fma() {
            // SAFETY: AVX2 and FMA were detected on this CPU.
            let s = unsafe { fma::f32_loop(iters) };
            black_box(s);
            return (iters * 12 * 8 * 2) as f64;
        }
        let _ = iters;
        f64::NAN
    }
}

impl MmGemm for f64 {
    fn mm_gemm(n: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
        assert!(a.len() >= n * n && b.len() >= n * n && c.len() >= n * n);
        let n_ = n as isize;
        // SAFETY: all three buffers hold n·n elements (asserted), addressed row-major with strides (n, 1).
        unsafe { matrixmultiply::dgemm(n, n, n, 1.0, a.as_ptr(), n_, 1, b.as_ptr(), n_, 1, 0.0, c.as_mut_ptr(), n_, 1) }
    }
    fn fma_loop(iters: usize) -> f64 {
        #[cfg(target_arch = "x86_64")]
        if has_avx512() {
            // SAFETY: AVX-512F was detected on this CPU.
            let s = unsafe { fma::f64_loop512(iters / 2) };
            black_box(s);
            return ((iters / 2) * 24 * 8 * 2) as f64;
        }
        #[cfg(target_arch = "x86_64")]
        if has_avx2_fma() {
            // SAFETY: AVX2 and FMA were detected on this CPU.
            let s = unsafe { fma::f64_loop(iters) };
            black_box(s);
            return (iters * 12 * 4 * 2) as f64;
        }
        let _ = iters;
        f64::NAN
    }
}

/// True on CPUs where chi's GEMM uses its AVX-512 kernels.
pub fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The vector ISA chi's GEMM microkernels use on this CPU.
pub fn gemm_isa() -> &'static str {
    if has_avx512() {
        "avx512"
    } else if has_avx2_fma() {
        "avx2"
    } else {
        "portable"
    }
}

fn has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Register-only FMA loops: 12 independent accumulator chains, no memory traffic.
#[cfg(target_arch = "x86_64")]
mod fma {
    use std::arch::x86_64::*;
    use std::hint::black_box;

    macro_rules! fma_loop {
        ($name:ident, $feat:literal, $chains:literal, $t:ty, $set1:ident, $fmadd:ident, $add:ident, $store:ident, $lanes:expr) => {
            /// Runs `iters` × `$chains` vector FMAs; returns a value depending on all of them.
            ///
            /// # Safety
            /// The CPU supports the target features this function enables.
            #[target_feature(enable = $feat)]
            pub(super) unsafe fn $name(iters: usize) -> $t {
                let x = $set1(black_box(0.999_999 as $t));
                let y = $set1(black_box(1e-7 as $t));
                let mut acc = [$set1(black_box(0.5 as $t)); $chains];
                for _ in 0..iters {
                    for a in acc.iter_mut() {
                        *a = $fmadd(*a, x, y);
                    }
                }
                let mut s = acc[0];
                for a in &acc[1..] {
                    s = $add(s, *a);
                }
                let mut out = [0 as $t; $lanes];
                // SAFETY: `out` holds exactly one vector.
                unsafe { $store(out.as_mut_ptr(), s) };
                out.iter().sum()
            }
        };
    }
    fma_loop!(f32_loop, "avx2,fma", 12, f32, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_storeu_ps, 8);
    fma_loop!(f64_loop, "avx2,fma", 12, f64, _mm256_set1_pd, _mm256_fmadd_pd, _mm256_add_pd, _mm256_storeu_pd, 4);
    fma_loop!(f32_loop512, "avx512f", 24, f32, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_storeu_ps, 16);
    fma_loop!(f64_loop512, "avx512f", 24, f64, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_add_pd, _mm512_storeu_pd, 8);
}

/// One FMA-ceiling sample in GFLOPS for `T`: the loop runs on every rayon thread at once.
fn fma_ceiling_sample<T: MmGemm>() -> f64 {
    let iters = 3_000_000; // ~10 ms per thread
    let t = Instant::now();
    let flops: f64 = rayon::broadcast(|_| T::fma_loop(iters)).into_iter().sum();
    let dt = t.elapsed().max(Duration::from_nanos(1)).as_secs_f64();
    flops / dt / 1e9
}

/// FMA ceiling in GFLOPS for `T` (the highest of 7 samples; see the module docs for why).
fn fma_ceiling<T: MmGemm>() -> f64 {
    (0..7).map(|_| fma_ceiling_sample::<T>()).fold(0.0, f64::max)
}

fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split(':').nth(1)).map(|s| s.trim().to_string()))
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}
