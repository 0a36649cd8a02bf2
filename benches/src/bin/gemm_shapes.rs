//! chi's GEMM against `matrixmultiply` over random shapes and layouts, to find the shapes where
//! chi is slow (the square sizes of `chi bench gemm` hide skinny and narrow products).
//!
//! ```text
//! cargo run --release -p chi-benches --bin gemm_shapes -- [--threads T] [--count N] [--seed S]
//!     [--dtype f32|f64] [--shapes m,k,n;m,k,n…]
//! ```
//!
//! Each shape `m × k × n` is drawn log-uniformly from 2…2500 per dimension (products above
//! 4·10⁸ multiply-adds are skipped), with A and B each row-major or transposed and C row-major
//! or (one time in four) column-major; `--shapes` instead runs every given shape in all eight
//! layouts. Both libraries run with `T` threads (`matrixmultiply` through `MATMUL_NUM_THREADS`,
//! which this program sets). A sample repeats a product for at least 2 ms; seven samples per
//! library alternate, and the medians are printed with their ratio (below 1: chi is faster) and
//! the largest difference between the two results relative to the largest result. The summary
//! gives the median ratio and the shapes where chi took more than 1.1× matrixmultiply's time.

use chi_benches::rand_vec;
use chi_kernels::gemm::{self, MatMut, MatRef, Par};
use chi_kernels::Real;
use std::time::Instant;

struct Args {
    threads: usize,
    count: usize,
    seed: u64,
    f64: bool,
    shapes: Option<Vec<[usize; 3]>>,
}

fn parse() -> Result<Args, String> {
    let mut a = Args { threads: 1, count: 80, seed: 7, f64: false, shapes: None };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        let num = |v: String| v.parse::<usize>().map_err(|e| format!("{flag}: {v:?}: {e}"));
        match flag.as_str() {
            "--threads" => a.threads = num(value()?)?.clamp(1, 64),
            "--count" => a.count = num(value()?)?,
            "--seed" => a.seed = num(value()?)? as u64,
            "--dtype" => {
                a.f64 = match value()?.as_str() {
                    "f32" => false,
                    "f64" => true,
                    other => return Err(format!("--dtype: {other:?} is not f32 or f64")),
                }
            }
            "--shapes" => {
                let mut list = Vec::new();
                for s in value()?.split(';').filter(|s| !s.is_empty()) {
                    let d: Vec<usize> = s.split(',').map(|x| x.trim().parse::<usize>()).collect::<Result<_, _>>().map_err(|e| format!("--shapes: {s:?}: {e}"))?;
                    let [m, k, n] = d[..] else { return Err(format!("--shapes: {s:?} is not m,k,n")) };
                    if m * k * n == 0 || m.max(k).max(n) > 10_000 {
                        return Err(format!("--shapes: {s:?}: each size must be 1 to 10000"));
                    }
                    list.push([m, k, n]);
                }
                a.shapes = Some(list);
            }
            "-h" | "--help" => return Err("usage: gemm_shapes [--threads T] [--count N] [--seed S] [--dtype f32|f64] [--shapes m,k,n;…]".into()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(a)
}

/// xorshift64 drawing the shapes: the shapes of a `--seed` are those of the runs quoted in
/// BENCHMARKS.md.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Log-uniform in `lo ..= hi`.
    fn dim(&mut self, lo: f64, hi: f64) -> usize {
        let u = (self.next() % 1_000_000) as f64 / 1e6;
        (lo.ln() + u * (hi.ln() - lo.ln())).exp().round() as usize
    }
}

/// Medians (seconds per call) of seven alternating samples of `f` and `g`.
fn time_pair(mut f: impl FnMut(), mut g: impl FnMut()) -> (f64, f64) {
    f();
    g();
    let t = Instant::now();
    f();
    let reps = (2e-3 / t.elapsed().as_secs_f64().max(1e-7)).ceil().clamp(1.0, 1e5) as usize;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        let t = Instant::now();
        (0..reps).for_each(|_| f());
        a.push(t.elapsed().as_secs_f64() / reps as f64);
        let t = Instant::now();
        (0..reps).for_each(|_| g());
        b.push(t.elapsed().as_secs_f64() / reps as f64);
    }
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    (a[3], b[3])
}

/// One layout of one shape: `(chi seconds, matrixmultiply seconds, relative difference)`.
fn run<T: Real>(m: usize, k: usize, n: usize, [ta, tb, tc]: [bool; 3], mm: MmFn<T>) -> (f64, f64, f64) {
    let (a, b) = (rand_vec::<T>(m * k, 1, 1.0), rand_vec::<T>(k * n, 2, 1.0));
    let (mut c, mut c2) = (vec![T::ZERO; m * n], vec![T::ZERO; m * n]);
    let am = if ta { MatRef::row_major(&a, k, m).t() } else { MatRef::row_major(&a, m, k) };
    let bm = if tb { MatRef::row_major(&b, n, k).t() } else { MatRef::row_major(&b, k, n) };
    let (rsc, csc) = if tc { (1, m) } else { (n, 1) };
    let ptr = c2.as_mut_ptr();
    let (t_chi, t_mm) = time_pair(
        || {
            let cm = if tc { MatMut::row_major(&mut c, n, m).t() } else { MatMut::row_major(&mut c, m, n) };
            gemm::gemm_par(Par::Auto, T::ONE, am, bm, T::ZERO, cm)
        },
        // SAFETY: A (m × k), B (k × n) and C (m × n) with these strides lie inside `a`, `b` and
        // `c2`, which outlive the call; C does not overlap A or B.
        || unsafe { mm(m, k, n, T::ONE, a.as_ptr(), am.rs as isize, am.cs as isize, b.as_ptr(), bm.rs as isize, bm.cs as isize, T::ZERO, ptr, rsc as isize, csc as isize) },
    );
    let scale = c2.iter().fold(0.0f64, |s, v| s.max(v.to_f64().abs())).max(1e-30);
    let diff = c.iter().zip(&c2).fold(0.0f64, |d, (x, y)| d.max((x.to_f64() - y.to_f64()).abs()));
    (t_chi, t_mm, diff / scale)
}

type MmFn<T> = unsafe fn(usize, usize, usize, T, *const T, isize, isize, *const T, isize, isize, T, *mut T, isize, isize);

fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("gemm_shapes: {e}");
            std::process::exit(2);
        }
    };
    // matrixmultiply reads its thread count once, on its first threaded call.
    std::env::set_var("MATMUL_NUM_THREADS", args.threads.to_string());
    if let Err(e) = rayon::ThreadPoolBuilder::new().num_threads(args.threads).build_global() {
        eprintln!("gemm_shapes: thread pool: {e}");
        std::process::exit(1);
    }
    let mut cases = Vec::new();
    match &args.shapes {
        Some(list) => {
            for &[m, k, n] in list {
                for l in 0..8 {
                    cases.push((m, k, n, [l & 1 == 1, l & 2 == 2, l & 4 == 4]));
                }
            }
        }
        None => {
            let mut r = Rng(args.seed.wrapping_mul(2_654_435_761).wrapping_add(1));
            while cases.len() < args.count {
                let (m, k, n) = (r.dim(2.0, 2500.0), r.dim(2.0, 2500.0), r.dim(2.0, 2500.0));
                let layout = [r.next() % 2 == 1, r.next() % 2 == 1, r.next() % 4 == 1];
                if m * k * n <= 400_000_000 {
                    cases.push((m, k, n, layout));
                }
            }
        }
    }
    let dtype = if args.f64 { "f64" } else { "f32" };
    println!("# chi vs matrixmultiply, {dtype}, {} thread(s); layouts: t = transposed (A, B) / column-major (C)", args.threads);
    println!("{:>5} {:>5} {:>5}  {:<5} {:>11} {:>11} {:>7} {:>9}", "m", "k", "n", "A B C", "chi µs", "mm µs", "ratio", "rel diff");
    let mut ratios = Vec::new();
    let mut slow = Vec::new();
    for (m, k, n, layout) in cases {
        let (tc, tm, diff) = if args.f64 { run::<f64>(m, k, n, layout, matrixmultiply::dgemm) } else { run::<f32>(m, k, n, layout, matrixmultiply::sgemm) };
        let tag = layout.map(|t| if t { "t" } else { "-" }).join(" ");
        let ratio = tc / tm;
        println!("{m:>5} {k:>5} {n:>5}  {tag:<5} {:>11.1} {:>11.1} {ratio:>7.3} {diff:>9.1e}", tc * 1e6, tm * 1e6);
        ratios.push(ratio);
        if ratio > 1.1 {
            slow.push(format!("{m}×{k}×{n} [{tag}] {ratio:.2}"));
        }
    }
    ratios.sort_by(f64::total_cmp);
    if let (Some(lo), Some(hi)) = (ratios.first(), ratios.last()) {
        println!("# {} shapes: median ratio {:.3}, range {lo:.3}–{hi:.3}; slower than 1.1× matrixmultiply: {}", ratios.len(), ratios[ratios.len() / 2], if slow.is_empty() { "none".to_string() } else { slow.join(", ") });
    }
}
