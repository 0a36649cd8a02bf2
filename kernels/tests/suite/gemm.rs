//! GEMM, batched GEMM and GEMV against a naive float64 reference, over sizes (including tile and
//! block edges), layouts (row/column-major, transposed views, padded and non-unit strides), α/β
//! (including 0, 1, and β = 0 over NaN), both dtypes, thread counts, and the forced portable kernel.
//!
//! Every threaded case (`Par::Split(2)`, `Par::Auto`) runs inside an explicit 2-thread rayon
//! pool ([`common::in_pool`]): `Par::Split(2)` is capped at the current pool's size, so in the
//! global pool of a one-core runner the split would silently not happen.

use crate::common;

use common::{in_pool, XorShift};
use chi_kernels::gemm::{
    gemm, gemm_batched, gemm_packed, gemm_packed_par, gemm_par, gemm_threads, gemm_with_kernel, gemv, gemv_with_kernel, BatchRef, KernelChoice,
    MatMut, MatRef, PackedB, Par,
};
use chi_kernels::Real;
use proptest::prelude::*;

/// How a logical `rows × cols` matrix is stored.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    /// Row-major with `pad` extra elements per row (leading dimension `cols + pad`).
    Row(usize),
    /// Column-major with `pad` extra elements per column.
    Col(usize),
    /// Neither stride is 1: row-major with column stride 2.
    Strided,
    /// Stored as the transpose (a `cols × rows` row-major buffer) and viewed through `.t()`.
    TransposedRow,
}

/// Threads of the pool a case with `par` runs in: 2 for every setting that may split, so that
/// the split is exercised on any host; 1 for the sequential settings.
fn pool_threads(par: Par) -> usize {
    match par {
        Par::Seq | Par::Threads(0 | 1) | Par::Split(0 | 1) => 1,
        _ => 2,
    }
}

const LAYOUTS: [Layout; 5] = [Layout::Row(0), Layout::Col(0), Layout::Row(3), Layout::Strided, Layout::TransposedRow];

/// Deterministic pseudo-random values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut r = XorShift::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    (0..n).map(|_| r.uniform(-1.0, 1.0)).collect()
}

/// Storage for a logical row-major `vals` (`rows × cols`) in `layout`; returns (buffer, rs, cs, transposed).
/// Unused slots hold `fill` (so reading a padding slot shows up as a wrong answer or a NaN).
fn store<T: Real>(vals: &[f64], rows: usize, cols: usize, layout: Layout, fill: T) -> (Vec<T>, usize, usize, bool) {
    let (len, rs, cs, tr) = match layout {
        Layout::Row(p) => (rows * (cols + p), cols + p, 1, false),
        Layout::Col(p) => (cols * (rows + p), 1, rows + p, false),
        Layout::Strided => (rows * (2 * cols + 1), 2 * cols + 1, 2, false),
        Layout::TransposedRow => (rows * cols, 1, rows, true),
    };
    let mut buf = vec![fill; len.max(1)];
    for i in 0..rows {
        for j in 0..cols {
            buf[i * rs + j * cs] = T::from_f64(vals[i * cols + j]);
        }
    }
    (buf, rs, cs, tr)
}

fn view<T>(buf: &[T], rows: usize, cols: usize, rs: usize, cs: usize, tr: bool) -> MatRef<'_, T> {
    if tr {
        // The buffer is the transpose stored row-major: (cols × rows) with strides (cs, rs).
        MatRef { data: buf, rows: cols, cols: rows, rs: cs, cs: rs }.t()
    } else {
        MatRef { data: buf, rows, cols, rs, cs }
    }
}

fn view_mut<T>(buf: &mut [T], rows: usize, cols: usize, rs: usize, cs: usize, tr: bool) -> MatMut<'_, T> {
    if tr {
        MatMut { data: buf, rows: cols, cols: rows, rs: cs, cs: rs }.t()
    } else {
        MatMut { data: buf, rows, cols, rs, cs }
    }
}

/// Reference `α·A·B + β·C` in f64 plus a per-element error scale `|α|·Σ|a||b| + |β||c|`.
#[allow(clippy::too_many_arguments)]
fn reference(m: usize, n: usize, k: usize, alpha: f64, a: &[f64], b: &[f64], beta: f64, c: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut out = vec![0.0; m * n];
    let mut mag = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let (mut s, mut sa) = (0.0, 0.0);
            for p in 0..k {
                let t = a[i * k + p] * b[p * n + j];
                s += t;
                sa += t.abs();
            }
            let old = if beta == 0.0 { 0.0 } else { beta * c[i * n + j] };
            out[i * n + j] = alpha * s + old;
            mag[i * n + j] = alpha.abs() * sa + old.abs();
        }
    }
    (out, mag)
}

struct Problem {
    m: usize,
    n: usize,
    k: usize,
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl Problem {
    fn new(m: usize, n: usize, k: usize, seed: u64) -> Self {
        Problem { m, n, k, a: values(m * k, seed), b: values(k * n, seed + 1), c: values(m * n, seed + 2) }
    }
}

#[derive(Clone, Copy, Debug)]
struct Config {
    la: Layout,
    lb: Layout,
    lc: Layout,
    alpha: f64,
    beta: f64,
    par: Par,
    kernel: KernelChoice,
}

fn run_case<T: Real>(p: &Problem, cfg: Config, expect: &(Vec<f64>, Vec<f64>)) -> Result<(), String> {
    run_case_with::<T>(p, cfg, expect, false)
}

/// `run_case`, optionally with B packed first ([`PackedB`], same forced kernel) and multiplied by
/// [`gemm_packed_par`].
fn run_case_with<T: Real>(p: &Problem, cfg: Config, expect: &(Vec<f64>, Vec<f64>), packed: bool) -> Result<(), String> {
    let (m, n, k) = (p.m, p.n, p.k);
    let (ab, ars, acs, atr) = store::<T>(&p.a, m, k, cfg.la, T::from_f64(f64::NAN));
    let (bb, brs, bcs, btr) = store::<T>(&p.b, k, n, cfg.lb, T::from_f64(f64::NAN));
    let c_init = if cfg.beta == 0.0 { vec![f64::NAN; m * n] } else { p.c.clone() };
    let (mut cb, crs, ccs, ctr) = store::<T>(&c_init, m, n, cfg.lc, T::from_f64(1234.5));
    let untouched = cb.clone();
    {
        let a = view(&ab, m, k, ars, acs, atr);
        let b = view(&bb, k, n, brs, bcs, btr);
        let c = view_mut(&mut cb, m, n, crs, ccs, ctr);
        let (alpha, beta) = (T::from_f64(cfg.alpha), T::from_f64(cfg.beta));
        if packed {
            let pb = PackedB::with_kernel(cfg.kernel, b);
            in_pool(pool_threads(cfg.par), || gemm_packed_par(cfg.par, alpha, a, &pb, beta, c));
        } else {
            in_pool(pool_threads(cfg.par), || gemm_with_kernel(cfg.kernel, cfg.par, alpha, a, b, beta, c));
        }
    }
    let eps = T::EPSILON.to_f64();
    let (want, mag) = expect;
    let mut written = vec![false; cb.len()];
    for i in 0..m {
        for j in 0..n {
            // (a transposed view addresses the same elements: `store` laid them out accordingly)
            let idx = i * crs + j * ccs;
            written[idx] = true;
            let got = cb[idx].to_f64();
            let tol = 4.0 * eps * (k as f64 + 2.0) * mag[i * n + j] + f64::MIN_POSITIVE;
            let err = (got - want[i * n + j]).abs();
            if err.is_nan() || err > tol {
                return Err(format!(
                    "{} m={m} n={n} k={k} {cfg:?}: C[{i},{j}] = {got}, want {} (err {err:e}, tol {tol:e})",
                    T::NAME,
                    want[i * n + j]
                ));
            }
        }
    }
    for (idx, w) in written.iter().enumerate() {
        if !w && cb[idx].to_f64() != untouched[idx].to_f64() {
            return Err(format!("{} m={m} n={n} k={k} {cfg:?}: padding element {idx} of C was written", T::NAME));
        }
    }
    Ok(())
}

fn check<T: Real>(p: &Problem, cfg: Config) {
    let c_init = if cfg.beta == 0.0 { vec![0.0; p.m * p.n] } else { p.c.clone() };
    let expect = reference(p.m, p.n, p.k, cfg.alpha, &p.a, &p.b, cfg.beta, &c_init);
    run_case::<T>(p, cfg, &expect).unwrap();
}

const AUTO: KernelChoice = KernelChoice::Auto;
const PORTABLE: KernelChoice = KernelChoice::Portable;
/// AVX2 even where AVX-512 exists (so that both x86 kernels are tested on AVX-512 machines).
const AVX2: KernelChoice = KernelChoice::Avx2;

/// Tile multiples ± 1 (AVX-512: MR = 12, NR = 32 f32 / 16 f64; AVX2: MR = 6, NR = 16 f32 / 8 f64;
/// portable: 4 × 8; MC = 96/128/144, KC = 256), primes, 1, and narrow outputs.
#[test]
fn fixed_sizes_all_layouts() {
    let triples = [
        (1, 1, 1),
        (1, 17, 5),
        (9, 1, 13),
        (2, 3, 1),
        (5, 7, 11),
        (6, 16, 8),
        (7, 17, 9),
        (12, 32, 3),
        (11, 33, 7),
        (24, 64, 17),
        (25, 95, 40),
        (13, 31, 29),
        (17, 15, 257),
        (47, 48, 49),
        (95, 97, 64),
        (143, 33, 255),
        (145, 65, 31),
        (97, 129, 100),
        (289, 40, 20),
        (64, 33, 513),
        // Narrow outputs, computed as Cᵀ = Bᵀ·Aᵀ when A's rows are not contiguous.
        (200, 5, 70),
        (97, 13, 300),
    ];
    for (t, &(m, n, k)) in triples.iter().enumerate() {
        let p = Problem::new(m, n, k, t as u64 * 10);
        for (alpha, beta) in [(1.0, 0.0), (0.75, -1.5), (-1.0, 1.0)] {
            let e = reference(m, n, k, alpha, &p.a, &p.b, beta, &if beta == 0.0 { vec![0.0; m * n] } else { p.c.clone() });
            for la in LAYOUTS {
                for lb in LAYOUTS {
                    for lc in [Layout::Row(0), Layout::Col(2), Layout::Strided, Layout::TransposedRow] {
                        for (par, kernel) in [(Par::Seq, AUTO), (Par::Split(2), AUTO), (Par::Seq, AVX2), (Par::Seq, PORTABLE)] {
                            let cfg = Config { la, lb, lc, alpha, beta, par, kernel };
                            run_case::<f32>(&p, cfg, &e).unwrap();
                            run_case::<f64>(&p, cfg, &e).unwrap();
                        }
                    }
                }
            }
        }
    }
}

/// Pre-packed B ([`PackedB`]) against the float64 reference: sizes 0, 1, primes and tile/block
/// edges (k across several KC slices), every layout of A, B (including a transposed view, which
/// takes the transposing pack) and C, both dtypes, each microkernel family, 1 and 2 threads.
#[test]
fn packed_b_fixed_sizes_all_layouts() {
    let triples = [
        (1, 1, 1),
        (1, 17, 5),
        (9, 1, 13),
        (0, 5, 3),
        (4, 0, 3),
        (3, 4, 0),
        (7, 17, 9),
        (16, 33, 37),
        (11, 67, 257),
        (64, 97, 513),
        (13, 31, 29),
        (145, 65, 31),
    ];
    for (t, &(m, n, k)) in triples.iter().enumerate() {
        let p = Problem::new(m, n, k, 500 + t as u64);
        for (alpha, beta) in [(1.0, 0.0), (0.75, -1.5)] {
            let e = reference(m, n, k, alpha, &p.a, &p.b, beta, &if beta == 0.0 { vec![0.0; m * n] } else { p.c.clone() });
            for la in LAYOUTS {
                for lb in LAYOUTS {
                    for lc in [Layout::Row(0), Layout::Col(2), Layout::TransposedRow] {
                        for (par, kernel) in [(Par::Seq, AUTO), (Par::Split(2), AUTO), (Par::Seq, AVX2), (Par::Split(2), AVX2), (Par::Seq, PORTABLE)] {
                            let cfg = Config { la, lb, lc, alpha, beta, par, kernel };
                            run_case_with::<f32>(&p, cfg, &e, true).unwrap();
                            run_case_with::<f64>(&p, cfg, &e, true).unwrap();
                        }
                    }
                }
            }
        }
    }
}

/// Random shapes (0 to 80 per side, so primes and non-multiples of every tile) and layouts, with
/// B pre-packed, for each kernel family.
#[test]
fn packed_b_random_shapes() {
    let mut r = XorShift::new(0x51ab_1e5e_ed00_0001);
    let mut pick = |n: usize| (r.uniform(0.0, n as f64) as usize).min(n - 1);
    for case in 0..150 {
        let (m, n, k) = (pick(81), pick(81), pick(300));
        let (la, lb, lc) = (LAYOUTS[pick(5)], LAYOUTS[pick(5)], LAYOUTS[pick(5)]);
        let kernel = [AUTO, AVX2, PORTABLE][pick(3)];
        let par = [Par::Seq, Par::Split(2)][pick(2)];
        let p = Problem::new(m, n, k, 9000 + case);
        let cfg = Config { la, lb, lc, alpha: 1.25, beta: 0.5, par, kernel };
        let e = reference(m, n, k, cfg.alpha, &p.a, &p.b, cfg.beta, &p.c);
        run_case_with::<f32>(&p, cfg, &e, true).unwrap();
        run_case_with::<f64>(&p, cfg, &e, true).unwrap();
    }
}

/// One packing reused by many products (as a recurrent weight by every time step), of B and of
/// its transpose, gives the same bits as the unpacked GEMM on the same kernel each time.
#[test]
fn packed_b_reused_matches_unpacked_bitwise() {
    let (k, n) = (67, 45);
    let w = values(n * k, 3); // W: n × k row-major
    for kernel in [AUTO, AVX2, PORTABLE] {
        let w32: Vec<f32> = w.iter().map(|&v| v as f32).collect();
        let wt = MatRef::row_major(&w32, n, k).t(); // k × n view of Wᵀ
        let packed_t = PackedB::with_kernel(kernel, wt);
        let packed = PackedB::with_kernel(kernel, MatRef::row_major(&w32, n, k)); // n × k
        assert_eq!((packed_t.rows(), packed_t.cols(), packed.rows(), packed.cols()), (k, n, n, k));
        for step in 0..5u64 {
            let m = 16;
            let x: Vec<f32> = values(m * k, 100 + step).iter().map(|&v| v as f32).collect();
            let mut y1 = vec![0f32; m * n];
            let mut y2 = vec![0f32; m * n];
            gemm_packed(1.0, MatRef::row_major(&x, m, k), &packed_t, 0.0, MatMut::row_major(&mut y1, m, n));
            gemm_with_kernel(kernel, Par::Auto, 1.0, MatRef::row_major(&x, m, k), wt, 0.0, MatMut::row_major(&mut y2, m, n));
            assert!(y1.iter().zip(&y2).all(|(a, b)| a.to_bits() == b.to_bits()), "{kernel:?} step {step}: x·Wᵀ");
            let g: Vec<f32> = values(m * n, 200 + step).iter().map(|&v| v as f32).collect();
            let mut d1 = vec![1f32; m * k];
            let mut d2 = vec![1f32; m * k];
            gemm_packed(1.0, MatRef::row_major(&g, m, n), &packed, 1.0, MatMut::row_major(&mut d1, m, k));
            gemm_with_kernel(kernel, Par::Auto, 1.0, MatRef::row_major(&g, m, n), MatRef::row_major(&w32, n, k), 1.0, MatMut::row_major(&mut d2, m, k));
            assert!(d1.iter().zip(&d2).all(|(a, b)| a.to_bits() == b.to_bits()), "{kernel:?} step {step}: g·W");
        }
    }
}

#[test]
#[should_panic(expected = "gemm_packed: shape mismatch: A is 2x3, packed B is 4x5, C is 2x5")]
fn packed_b_shape_mismatch_panics() {
    let b = PackedB::new(MatRef::row_major(&[0f32; 20], 4, 5));
    let mut c = [0f32; 10];
    gemm_packed(1.0, MatRef::row_major(&[0f32; 6], 2, 3), &b, 0.0, MatMut::row_major(&mut c, 2, 5));
}

/// Shapes on which the AVX2 and AVX-512 tiles read a row-major A in place instead of packing it
/// (at most 8 B̃ micro-panels per packed block: n ≤ 8·NR, or m ≤ MC with its narrowed panels),
/// next to the layouts that still pack A (column-major, transposed, strided): sizes 0, 1 and 2,
/// row counts around both MRs (6, 12) and MCs, column counts around every NR (8, 16, 32), k around the unroll of 4 and KC, primes, and a
/// padded row-major A whose padding is NaN (a read past a row's k elements or past the tile's
/// rows would show).
#[test]
fn direct_a_shapes() {
    let triples = [
        (0, 5, 3),
        (5, 0, 3),
        (4, 5, 0),
        (2, 2, 1),
        (5, 3, 2),
        (6, 16, 4),
        (7, 17, 5),
        (12, 32, 8),
        (25, 33, 6),
        (24, 96, 17),
        (64, 64, 64),
        (13, 31, 7),
        (11, 9, 9),
        (97, 64, 31),
        (150, 16, 257),
        (301, 17, 100),
        (97, 129, 255),
        (37, 200, 513),
        (144, 128, 256),
        (145, 127, 3),
        (289, 128, 61),
        (6, 2049, 13),
        // Too wide for the direct path of either kernel: a row-major A packed by the 6-row
        // transposes (into 6-row panels, or as the halves of 12-row panels).
        (157, 300, 37),
        (150, 257, 9),
    ];
    for (t, &(m, n, k)) in triples.iter().enumerate() {
        let p = Problem::new(m, n, k, 500 + t as u64);
        for (alpha, beta) in [(1.0, 0.0), (0.75, -1.5)] {
            let e = reference(m, n, k, alpha, &p.a, &p.b, beta, &if beta == 0.0 { vec![0.0; m * n] } else { p.c.clone() });
            for la in [Layout::Row(0), Layout::Row(3), Layout::Col(1), Layout::TransposedRow, Layout::Strided] {
                for lb in [Layout::Row(0), Layout::Col(0)] {
                    for lc in [Layout::Row(0), Layout::Row(2), Layout::Col(2)] {
                        for (par, kernel) in [(Par::Seq, AUTO), (Par::Split(2), AUTO), (Par::Seq, AVX2), (Par::Split(2), AVX2)] {
                            let cfg = Config { la, lb, lc, alpha, beta, par, kernel };
                            run_case::<f32>(&p, cfg, &e).unwrap();
                            run_case::<f64>(&p, cfg, &e).unwrap();
                        }
                    }
                }
            }
        }
    }
}

/// Wider than one packed B̃ panel (NC = 4096 f32, 2048 f64) and deeper than one KC slice.
#[test]
fn more_than_one_nc_panel() {
    for (m, n, k) in [(7, 4100, 3), (13, 2049, 260)] {
        let p = Problem::new(m, n, k, 77);
        for par in [Par::Seq, Par::Split(2)] {
            let cfg = Config { la: Layout::Row(0), lb: Layout::Row(0), lc: Layout::Row(0), alpha: 1.0, beta: 0.5, par, kernel: AUTO };
            check::<f32>(&p, cfg);
            check::<f64>(&p, cfg);
        }
    }
}

#[test]
fn alpha_zero_and_k_zero_scale_c() {
    for k in [0, 5] {
        let (m, n) = (4, 3);
        let a = vec![f32::NAN; m * k.max(1)];
        let b = vec![f32::NAN; k.max(1) * n];
        let mut c = vec![2.0f32; m * n];
        let alpha = if k == 0 { 1.0 } else { 0.0 };
        let (a, b) = (MatRef { data: &a, rows: m, cols: k, rs: k, cs: 1 }, MatRef { data: &b, rows: k, cols: n, rs: n, cs: 1 });
        if k == 0 {
            gemm(alpha, a, b, 3.0, MatMut::row_major(&mut c, m, n));
            assert!(c.iter().all(|&v| v == 6.0), "{c:?}");
        } else {
            // α = 0: A and B are not read (BLAS), so their NaNs don't propagate.
            gemm(alpha, a, b, 0.0, MatMut::row_major(&mut c, m, n));
            assert!(c.iter().all(|&v| v == 0.0), "{c:?}");
        }
    }
}

fn layout() -> impl Strategy<Value = Layout> {
    prop_oneof![
        Just(Layout::Row(0)),
        Just(Layout::Col(0)),
        (1usize..5).prop_map(Layout::Row),
        (1usize..5).prop_map(Layout::Col),
        Just(Layout::Strided),
        Just(Layout::TransposedRow),
    ]
}

fn dim() -> impl Strategy<Value = usize> {
    prop_oneof![1usize..24, 1usize..120, 1usize..300]
}

fn scalar() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), Just(1.0), Just(-1.0), -2.0f64..2.0]
}

fn config() -> impl Strategy<Value = Config> {
    (
        layout(),
        layout(),
        layout(),
        scalar(),
        scalar(),
        prop_oneof![Just(Par::Seq), Just(Par::Threads(1)), Just(Par::Split(2)), Just(Par::Auto)],
        prop_oneof![3 => Just(AUTO), 1 => Just(AVX2), 1 => Just(PORTABLE)],
    )
        .prop_map(|(la, lb, lc, alpha, beta, par, kernel)| Config { la, lb, lc, alpha, beta, par, kernel })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn gemm_matches_reference(m in dim(), n in dim(), k in dim(), cfg in config(), seed in 0u64..1000) {
        let p = Problem::new(m, n, k, seed);
        let c_init = if cfg.beta == 0.0 { vec![0.0; m * n] } else { p.c.clone() };
        let e = reference(m, n, k, cfg.alpha, &p.a, &p.b, cfg.beta, &c_init);
        run_case::<f32>(&p, cfg, &e).map_err(TestCaseError::fail)?;
        run_case::<f64>(&p, cfg, &e).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn gemv_matches_reference(m in dim(), k in dim(), la in layout(), alpha in scalar(), beta in scalar(),
                              par in prop_oneof![Just(Par::Seq), Just(Par::Split(2))],
                              kernel in prop_oneof![Just(AUTO), Just(AVX2), Just(PORTABLE)], seed in 0u64..1000) {
        check_gemv::<f32>(m, k, la, alpha, beta, par, kernel, seed).map_err(TestCaseError::fail)?;
        check_gemv::<f64>(m, k, la, alpha, beta, par, kernel, seed).map_err(TestCaseError::fail)?;
    }
}

#[allow(clippy::too_many_arguments)]
fn check_gemv<T: Real>(m: usize, k: usize, la: Layout, alpha: f64, beta: f64, par: Par, kernel: KernelChoice, seed: u64) -> Result<(), String> {
    let (av, xv, yv) = (values(m * k, seed), values(k, seed + 1), values(m, seed + 2));
    let y0 = if beta == 0.0 { vec![0.0; m] } else { yv.clone() };
    let (want, mag) = reference(m, 1, k, alpha, &av, &xv, beta, &y0);
    let (ab, rs, cs, tr) = store::<T>(&av, m, k, la, T::from_f64(f64::NAN));
    let x: Vec<T> = xv.iter().map(|&v| T::from_f64(v)).collect();
    let mut y: Vec<T> = if beta == 0.0 { vec![T::from_f64(f64::NAN); m] } else { yv.iter().map(|&v| T::from_f64(v)).collect() };
    in_pool(pool_threads(par), || gemv_with_kernel(kernel, par, T::from_f64(alpha), view(&ab, m, k, rs, cs, tr), &x, T::from_f64(beta), &mut y));
    for i in 0..m {
        let tol = 4.0 * T::EPSILON.to_f64() * (k as f64 + 2.0) * mag[i] + f64::MIN_POSITIVE;
        let err = (y[i].to_f64() - want[i]).abs();
        if err.is_nan() || err > tol {
            return Err(format!("gemv {} m={m} k={k} {la:?} α={alpha} β={beta} {par:?} {kernel:?}: y[{i}] = {}, want {}", T::NAME, y[i], want[i]));
        }
    }
    Ok(())
}

#[test]
fn gemv_large_threaded_and_public_entry() {
    for la in LAYOUTS {
        check_gemv::<f32>(517, 300, la, 1.0, 0.0, Par::Split(2), AUTO, 3).unwrap();
        check_gemv::<f64>(300, 517, la, -0.5, 2.0, Par::Auto, AUTO, 4).unwrap();
    }
    // Above the threading threshold (2^20 elements of A): rows split across threads.
    for la in [Layout::Row(0), Layout::Col(1)] {
        check_gemv::<f32>(1100, 1000, la, 1.0, 0.5, Par::Split(2), AUTO, 5).unwrap();
        check_gemv::<f64>(1030, 1021, la, 2.0, 0.0, Par::Auto, AUTO, 6).unwrap();
    }
    let a = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0];
    let mut y = [f64::NAN; 2];
    gemv(1.0, MatRef::row_major(&a, 2, 3), &[1.0, 0.0, -1.0], 0.0, &mut y);
    assert_eq!(y, [-2.0, -2.0]);
}

fn check_batched<T: Real>(count: usize, m: usize, n: usize, k: usize, b_transposed: bool, alpha: f64, beta: f64) {
    let av = values(count * m * k, 1);
    let bv = values(count * k * n, 2);
    let cv = values(count * m * n, 3);
    let a: Vec<T> = av.iter().map(|&v| T::from_f64(v)).collect();
    // B_i is k×n; stored either row-major, or as the row-major n×k transpose viewed through .t().
    let mut b_store = vec![T::ZERO; count * k * n];
    for bi in 0..count {
        for p in 0..k {
            for j in 0..n {
                let v = T::from_f64(bv[bi * k * n + p * n + j]);
                if b_transposed {
                    b_store[bi * k * n + j * k + p] = v;
                } else {
                    b_store[bi * k * n + p * n + j] = v;
                }
            }
        }
    }
    let bref = if b_transposed { BatchRef::row_major(&b_store, count, n, k).t() } else { BatchRef::row_major(&b_store, count, k, n) };
    let mut c: Vec<T> = if beta == 0.0 { vec![T::from_f64(f64::NAN); count * m * n] } else { cv.iter().map(|&v| T::from_f64(v)).collect() };
    // In the 2-thread pool: large batches are split across its threads.
    in_pool(2, || gemm_batched(T::from_f64(alpha), BatchRef::row_major(&a, count, m, k), bref, T::from_f64(beta), &mut c));
    for bi in 0..count {
        let r = |v: &[f64], len: usize| v[bi * len..(bi + 1) * len].to_vec();
        let c0 = if beta == 0.0 { vec![0.0; m * n] } else { r(&cv, m * n) };
        let (want, mag) = reference(m, n, k, alpha, &r(&av, m * k), &r(&bv, k * n), beta, &c0);
        for idx in 0..m * n {
            let tol = 4.0 * T::EPSILON.to_f64() * (k as f64 + 2.0) * mag[idx] + f64::MIN_POSITIVE;
            let got = c[bi * m * n + idx].to_f64();
            assert!((got - want[idx]).abs() <= tol, "gemm_batched {} matrix {bi} element {idx}: {got} vs {}", T::NAME, want[idx]);
        }
    }
}

#[test]
fn batched_small_and_large() {
    for &(count, m, n, k) in &[(1, 3, 4, 5), (12, 7, 9, 11), (8, 64, 64, 16), (3, 100, 110, 90)] {
        for bt in [false, true] {
            check_batched::<f32>(count, m, n, k, bt, 1.0, 0.0);
            check_batched::<f64>(count, m, n, k, bt, 0.5, -1.0);
        }
    }
}

#[test]
fn par_variants_agree_bitwise_with_seq_for_square() {
    // Threads split whole tiles, so every element is computed by the same instruction sequence.
    // n = 200 in a 2-thread pool splits into 2 column blocks (see `driver::gemm`).
    let n = 200;
    let a = values(n * n, 5).iter().map(|&v| v as f32).collect::<Vec<_>>();
    let b = values(n * n, 6).iter().map(|&v| v as f32).collect::<Vec<_>>();
    let mut c1 = vec![0.0f32; n * n];
    let mut c2 = vec![0.0f32; n * n];
    in_pool(1, || gemm_par(Par::Seq, 1.0, MatRef::row_major(&a, n, n), MatRef::row_major(&b, n, n), 0.0, MatMut::row_major(&mut c1, n, n)));
    in_pool(2, || gemm_par(Par::Split(2), 1.0, MatRef::row_major(&a, n, n), MatRef::row_major(&b, n, n), 0.0, MatMut::row_major(&mut c2, n, n)));
    assert_eq!(c1, c2);
    // ... and both are right: against the f64 reference.
    let (av, bv): (Vec<f64>, Vec<f64>) = (a.iter().map(|&v| v as f64).collect(), b.iter().map(|&v| v as f64).collect());
    let (want, mag) = reference(n, n, n, 1.0, &av, &bv, 0.0, &[]);
    for i in 0..n * n {
        let tol = 4.0 * f32::EPSILON as f64 * (n as f64 + 2.0) * mag[i];
        assert!((c1[i] as f64 - want[i]).abs() <= tol, "C[{i}] = {}, want {}", c1[i], want[i]);
    }
}

#[test]
#[should_panic(expected = "gemm: shape mismatch: A is 2x3, B is 4x2, C is 2x2")]
fn gemm_shape_mismatch_panics() {
    let (a, b) = ([0.0f32; 6], [0.0f32; 8]);
    let mut c = [0.0f32; 4];
    gemm(1.0, MatRef::row_major(&a, 2, 3), MatRef::row_major(&b, 4, 2), 0.0, MatMut::row_major(&mut c, 2, 2));
}

#[test]
#[should_panic(expected = "gemm: matrix B is 3x2 with strides (2, 1) and needs 6 elements, but its buffer has 5")]
fn gemm_short_buffer_panics() {
    let (a, b) = ([0.0f64; 6], [0.0f64; 5]);
    let mut c = [0.0f64; 4];
    gemm(1.0, MatRef::row_major(&a, 2, 3), MatRef { data: &b, rows: 3, cols: 2, rs: 2, cs: 1 }, 0.0, MatMut::row_major(&mut c, 2, 2));
}

#[test]
#[should_panic(expected = "gemm: matrix C is 2x2 with strides (1, 3) and needs 5 elements, but its buffer has 4")]
fn gemm_short_c_panics() {
    let (a, b) = ([0.0f32; 4], [0.0f32; 4]);
    let mut c = [0.0f32; 4];
    gemm(1.0, MatRef::row_major(&a, 2, 2), MatRef::row_major(&b, 2, 2), 0.0, MatMut { data: &mut c, rows: 2, cols: 2, rs: 1, cs: 3 });
}

#[test]
#[should_panic(expected = "gemv: shape mismatch: A is 2x3, x has 2, y has 2")]
fn gemv_shape_mismatch_panics() {
    let a = [0.0f32; 6];
    let mut y = [0.0f32; 2];
    gemv(1.0, MatRef::row_major(&a, 2, 3), &[0.0; 2], 0.0, &mut y);
}

#[test]
#[should_panic(expected = "gemm_batched: C buffer has 10 elements, need 12 (3 matrices of 2x2)")]
fn batched_short_c_panics() {
    let a = [0.0f32; 12];
    let mut c = [0.0f32; 10];
    gemm_batched(1.0, BatchRef::row_major(&a, 3, 2, 2), BatchRef::row_major(&a, 3, 2, 2), 0.0, &mut c);
}

#[test]
#[should_panic(expected = "gemm_batched: batch A has 3 matrices of 2x2 (strides (2, 1), batch stride 4) and needs 12 elements, but its buffer has 11")]
fn batched_short_a_panics() {
    let a = [0.0f32; 11];
    let b = [0.0f32; 12];
    let mut c = [0.0f32; 12];
    gemm_batched(1.0, BatchRef::row_major(&a, 3, 2, 2), BatchRef::row_major(&b, 3, 2, 2), 0.0, &mut c);
}

/// A stride so large that the view's extent overflows `usize` must be rejected, not wrap around
/// into a small length that passes the bounds check (release builds do not check overflow).
#[test]
#[should_panic(expected = "gemm: matrix A is 9x2 with strides (2305843009213693952, 1), whose extent overflows usize")]
fn gemm_overflowing_stride_panics() {
    let a = [0.0f32; 16];
    let b = [0.0f32; 4];
    let mut c = [0.0f32; 18];
    let huge = 1usize << 61; // 8 · 2^61 wraps to 0 in 64 bits
    gemm(1.0, MatRef { data: &a, rows: 9, cols: 2, rs: huge, cs: 1 }, MatRef::row_major(&b, 2, 2), 0.0, MatMut::row_major(&mut c, 9, 2));
}

#[test]
#[should_panic(expected = "gemm_batched: batch A of 3 matrices of 2x2 (strides (2, 1), batch stride 9223372036854775808) has an extent that overflows usize")]
fn batched_overflowing_batch_stride_panics() {
    let a = [0.0f32; 12];
    let mut c = [0.0f32; 12];
    let bad = BatchRef { batch_stride: 1usize << 63, ..BatchRef::row_major(&a, 3, 2, 2) };
    gemm_batched(1.0, bad, BatchRef::row_major(&a, 3, 2, 2), 0.0, &mut c);
}

/// An output view whose distinct elements share memory (row stride 0) would let the two threads
/// of a split GEMM write the same addresses: a data race. It is rejected before any work starts,
/// for every size and thread setting.
#[test]
fn gemm_aliasing_output_is_rejected() {
    for (rows, cols, rs, cs) in [(400, 100, 0, 1), (4, 3, 1, 1), (5, 1, 0, 1), (1, 5, 7, 0), (3, 3, 2, 3)] {
        let a = vec![1.0f32; rows * 7];
        let b = vec![1.0f32; 7 * cols];
        let mut c = vec![0.0f32; rows * cols + rs * rows + cs * cols];
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            in_pool(2, || {
                gemm_par(
                    Par::Split(2),
                    1.0,
                    MatRef::row_major(&a, rows, 7),
                    MatRef::row_major(&b, 7, cols),
                    0.0,
                    MatMut { data: &mut c, rows, cols, rs, cs },
                )
            })
        }));
        let msg = r.expect_err("aliasing C accepted");
        let msg = msg.downcast_ref::<String>().expect("panic message");
        assert!(msg.contains("distinct elements overlap or interleave"), "{rows}x{cols} ({rs}, {cs}): {msg}");
    }
    // A legal exotic-but-disjoint layout (padded column-major) is still accepted.
    let (a, b) = ([1.0f64; 6], [1.0f64; 6]);
    let mut c = [0.0f64; 12];
    gemm(1.0, MatRef::row_major(&a, 2, 3), MatRef::row_major(&b, 3, 2), 0.0, MatMut { data: &mut c, rows: 2, cols: 2, rs: 1, cs: 5 });
    assert_eq!([c[0], c[1], c[5], c[6]], [3.0; 4]);
}

#[test]
fn small_products_stay_on_one_thread_unless_the_split_is_forced() {
    fn check<T: Real>() {
        let min = chi_kernels::gemm::par_min_flops::<T>(KernelChoice::Auto);
        // The LSTM-step shape 16 × 128 · 128 × 512 and a square 64: below every kernel's threshold
        // or not, the answer follows the flop count.
        for (m, n, k) in [(64, 64, 64), (16, 512, 128), (16, 2048, 512), (512, 512, 512), (1, 1, 1)] {
            let big = 2 * m * n * k >= min;
            in_pool(2, || {
                assert_eq!(gemm_threads::<T>(Par::Threads(2), m, n, k), if big { 2 } else { 1 }, "{m}x{n}x{k} Threads(2)");
                assert_eq!(gemm_threads::<T>(Par::Auto, m, n, k), if big { 2 } else { 1 }, "{m}x{n}x{k} Auto");
                assert_eq!(gemm_threads::<T>(Par::Split(2), m, n, k), 2, "{m}x{n}x{k} Split(2)");
                assert_eq!(gemm_threads::<T>(Par::Seq, m, n, k), 1);
            });
            // Capped at the pool: one thread in a one-thread pool.
            in_pool(1, || assert_eq!(gemm_threads::<T>(Par::Split(2), m, n, k), 1));
        }
        // A square 64 (the size where two threads measured 4× slower) never splits by default.
        assert!(2 * 64 * 64 * 64 < min, "{}: threshold {min} flops admits n = 64", T::NAME);
    }
    check::<f32>();
    check::<f64>();
}

/// The microkernel benchmark of `chi bench gemm --anatomy` computes what it times: one pass of
/// `block` adds Ã·B̃ of its packed block to C (checked element by element in f64 against the packed
/// layouts: Ã in MR-row micro-panels, B̃ in NR-column micro-panels, each KC deep), and `resident`
/// adds the first tile's product once per call.
#[test]
fn microbench_block_and_resident_compute_the_packed_product() {
    fn check<T: Real>() {
        let mut m = chi_kernels::gemm::MicroBench::<T>::new();
        let (mr, nr, mc, kc, nc) = m.shape();
        assert!(mc % mr == 0 && nc % nr == 0 && mc >= mr && nc >= nr, "{:?}", m.shape());
        let a = |i: usize, p: usize| ((((i / mr) * mr * kc + p * mr + i % mr) % 7) as f64) / 100.0;
        let b = |p: usize, j: usize| ((((j / nr) * nr * kc + p * nr + j % nr) % 5) as f64) / 100.0;
        let want = |i: usize, j: usize| (0..kc).map(|p| a(i, p) * b(p, j)).sum::<f64>();
        let tol = if T::NAME == "f32" { 1e-4 } else { 1e-12 };
        assert_eq!(m.block(1), (2 * mc * nc * kc) as f64);
        for i in 0..mc {
            for j in 0..nc {
                let got = m.c()[i * nc + j].to_f64();
                assert!((got - want(i, j)).abs() <= tol, "{} block: C[{i}][{j}] = {got}, want {}", T::NAME, want(i, j));
            }
        }
        assert_eq!(m.resident(3), (3 * 2 * mr * nr * kc) as f64);
        for i in 0..mc {
            for j in 0..nc {
                let times = if i < mr && j < nr { 4.0 } else { 1.0 };
                let got = m.c()[i * nc + j].to_f64();
                assert!((got - times * want(i, j)).abs() <= 4.0 * tol, "{} resident: C[{i}][{j}] = {got}, want {}", T::NAME, times * want(i, j));
            }
        }
    }
    check::<f32>();
    check::<f64>();
}
