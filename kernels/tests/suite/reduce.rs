//! Reductions and normalisers vs naive float64 references over random [outer, n, inner]
//! layouts (inner = 1 is the SIMD row path, inner > 1 the column path), both dtypes, huge
//! logits, infinities, ties, and bad arguments.
//!
//! Large inputs run in explicit 1- and 2-thread rayon pools ([`common::in_pool`]) and are
//! compared with each other: the kernels only split when the current pool has more than one
//! thread, which the global pool of a one-core runner does not.

use crate::common;

use chi_kernels::reduce::*;
use common::{in_pool, XorShift};
use chi_kernels::Real;
use proptest::prelude::*;

fn at(o: usize, j: usize, i: usize, n: usize, inner: usize) -> usize {
    (o * n + j) * inner + i
}

fn close(got: f64, want: f64, tol: f64) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    if want.is_infinite() {
        return got == want;
    }
    (got - want).abs() <= tol * (1.0 + want.abs())
}

fn ref_lse(x: &[f64]) -> f64 {
    let m = x.iter().fold(f64::NEG_INFINITY, |a, &b| if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) });
    if m.is_infinite() {
        return m;
    }
    m + x.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
}

/// (softmax, log-softmax) of one slice, via the max.
fn ref_softmax(x: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let m = x.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let s: f64 = x.iter().map(|v| (v - m).exp()).sum();
    (x.iter().map(|v| (v - m).exp() / s).collect(), x.iter().map(|v| (v - m) - s.ln()).collect())
}

fn column(x: &[f64], o: usize, i: usize, n: usize, inner: usize) -> Vec<f64> {
    (0..n).map(|j| x[at(o, j, i, n, inner)]).collect()
}

fn check_all<T: Real>(xf: &[f64], gf: &[f64], outer: usize, n: usize, inner: usize) {
    let tol = if T::NAME == "f32" { 2e-5 } else { 1e-13 };
    let x: Vec<T> = xf.iter().map(|&v| T::from_f64(v)).collect();
    let g: Vec<T> = gf.iter().map(|&v| T::from_f64(v)).collect();
    let xr: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
    let gr: Vec<f64> = g.iter().map(|v| v.to_f64()).collect();
    let m = outer * inner;
    let mut s = vec![T::ZERO; m];
    sum_axis(&x, outer, n, inner, &mut s);
    let mut mx = vec![T::ZERO; m];
    let mut am = vec![0usize; m];
    max_axis(&x, outer, n, inner, &mut mx, &mut am);
    let mut l = vec![T::ZERO; m];
    logsumexp(&x, outer, n, inner, &mut l);
    let mut sm = vec![T::ZERO; x.len()];
    softmax(&x, outer, n, inner, &mut sm);
    let mut lsm = vec![T::ZERO; x.len()];
    log_softmax(&x, outer, n, inner, &mut lsm);
    let mut dsm = vec![T::ZERO; x.len()];
    softmax_backward(&sm, &g, outer, n, inner, &mut dsm);
    let mut dlsm = vec![T::ZERO; x.len()];
    log_softmax_backward(&lsm, &g, outer, n, inner, &mut dlsm);
    for o in 0..outer {
        for i in 0..inner {
            let col = column(&xr, o, i, n, inner);
            let gc = column(&gr, o, i, n, inner);
            let k = o * inner + i;
            let sum: f64 = col.iter().sum();
            let abs: f64 = col.iter().map(|v| v.abs()).sum();
            assert!((s[k].to_f64() - sum).abs() <= tol * (1.0 + abs), "{} sum_axis", T::NAME);
            let (mut best, mut arg) = (f64::NEG_INFINITY, 0);
            for (j, &v) in col.iter().enumerate() {
                if v > best {
                    best = v;
                    arg = j;
                }
            }
            assert_eq!(mx[k].to_f64(), best, "{} max_axis", T::NAME);
            assert_eq!(am[k], arg, "{} argmax", T::NAME);
            let lse = ref_lse(&col);
            assert!(close(l[k].to_f64(), lse, tol), "{} logsumexp got {} want {lse}", T::NAME, l[k]);
            let (p, lp) = ref_softmax(&col);
            let dot: f64 = p.iter().zip(&gc).map(|(a, b)| a * b).sum();
            let gs: f64 = gc.iter().sum();
            for j in 0..n {
                let q = at(o, j, i, n, inner);
                assert!(close(sm[q].to_f64(), p[j], tol), "{} softmax got {} want {}", T::NAME, sm[q], p[j]);
                assert!(close(lsm[q].to_f64(), lp[j], tol), "{} log_softmax", T::NAME);
                let scale = 1.0 + gc.iter().map(|v| v.abs()).sum::<f64>();
                assert!((dsm[q].to_f64() - p[j] * (gc[j] - dot)).abs() <= tol * scale, "{} softmax_backward", T::NAME);
                assert!((dlsm[q].to_f64() - (gc[j] - p[j] * gs)).abs() <= tol * scale, "{} log_softmax_backward", T::NAME);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]
    #[test]
    fn reductions_match_reference(outer in 1usize..4, n in 1usize..40, inner in 1usize..12, seed in any::<u64>(), big in any::<bool>()) {
        let len = outer * n * inner;
        let mut r = XorShift::new(seed | 1);
        let mut rnd = || r.uniform(-1.0, 1.0);
        let scale = if big { 1e30 } else { 10.0 };
        let x: Vec<f64> = (0..len).map(|_| rnd() * scale).collect();
        let g: Vec<f64> = (0..len).map(|_| rnd()).collect();
        check_all::<f32>(&x, &g, outer, n, inner);
        check_all::<f64>(&x, &g, outer, n, inner);
    }
}

#[test]
fn edge_lengths_and_layouts() {
    for &(outer, n, inner) in &[(1, 1, 1), (2, 7, 1), (3, 9, 1), (1, 33, 1), (2, 3, 5), (1, 17, 9), (4, 1, 3), (1, 100, 1)] {
        let x: Vec<f64> = (0..outer * n * inner).map(|i| ((i * 37 % 11) as f64) - 5.0).collect();
        let g: Vec<f64> = (0..x.len()).map(|i| (i % 5) as f64 * 0.5 - 1.0).collect();
        check_all::<f32>(&x, &g, outer, n, inner);
        check_all::<f64>(&x, &g, outer, n, inner);
    }
}

#[test]
fn huge_and_infinite_logits() {
    let inf = f64::INFINITY;
    for inner in [1usize, 3] {
        // each row along n: [1e30, -1e30, 0, 1e30]
        let rows: [&[f64]; 4] = [&[1e30, -1e30, 0.0, 1e30], &[-inf, 2.0, -inf, 2.0], &[5.0, 5.0, 5.0, 5.0], &[-1e30, -1e30, -1e30, -1e30]];
        for row in rows {
            let n = row.len();
            let x: Vec<f64> = (0..n * inner).map(|k| row[k / inner]).collect();
            for dt in 0..2 {
                let (mut sm, mut lsm, mut l) = (vec![0.0; x.len()], vec![0.0; x.len()], vec![0.0; inner]);
                if dt == 0 {
                    softmax(&x, 1, n, inner, &mut sm);
                    log_softmax(&x, 1, n, inner, &mut lsm);
                    logsumexp(&x, 1, n, inner, &mut l);
                } else {
                    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
                    let (mut a, mut b, mut c) = (vec![0f32; x.len()], vec![0f32; x.len()], vec![0f32; inner]);
                    softmax(&x32, 1, n, inner, &mut a);
                    log_softmax(&x32, 1, n, inner, &mut b);
                    logsumexp(&x32, 1, n, inner, &mut c);
                    sm = a.iter().map(|&v| v as f64).collect();
                    lsm = b.iter().map(|&v| v as f64).collect();
                    l = c.iter().map(|&v| v as f64).collect();
                }
                let tot: f64 = (0..n).map(|j| sm[j * inner]).sum();
                assert!((tot - 1.0).abs() < 1e-6, "softmax sums to {tot} for {row:?}");
                assert!(sm.iter().all(|v| v.is_finite()) && lsm.iter().all(|v| !v.is_nan()));
                let lse = ref_lse(row);
                assert!(close(l[0], lse, 1e-6), "lse {} vs {lse} for {row:?}", l[0]);
                let (p, lp) = ref_softmax(row);
                for j in 0..n {
                    assert!((sm[j * inner] - p[j]).abs() < 1e-6, "softmax {row:?}");
                    assert!(close(lsm[j * inner], lp[j], 1e-6), "log_softmax {row:?}: {} vs {}", lsm[j * inner], lp[j]);
                }
            }
        }
        // all −∞: lse = −∞; +∞ present: lse = +∞
        let x = vec![-inf; 4 * inner];
        let mut l = vec![0.0; inner];
        logsumexp(&x, 1, 4, inner, &mut l);
        assert!(l.iter().all(|&v| v == -inf));
        let mut x = vec![1.0; 4 * inner];
        x[inner..2 * inner].fill(inf);
        logsumexp(&x, 1, 4, inner, &mut l);
        assert!(l.iter().all(|&v| v == inf));
    }
}

#[test]
fn argmax_ties_and_nan() {
    let x = [1.0f32, 3.0, 3.0, 2.0, f32::NAN, 5.0, f32::NAN];
    let (mut m, mut a) = ([0f32], [0usize]);
    max_axis(&x[..4], 1, 4, 1, &mut m, &mut a);
    assert_eq!((m[0], a[0]), (3.0, 1));
    max_axis(&x, 1, 7, 1, &mut m, &mut a);
    assert!(m[0].is_nan() && a[0] == 4);
    // long row: SIMD path, tie at first occurrence
    let mut long = vec![0.5f64; 1000];
    long[123] = 7.0;
    long[900] = 7.0;
    let (mut m, mut a) = ([0f64], [0usize]);
    max_axis(&long, 1, 1000, 1, &mut m, &mut a);
    assert_eq!((m[0], a[0]), (7.0, 123));
    // column path ties
    let x = [1.0f64, 2.0, 2.0, 2.0, 2.0, 1.0]; // [n=3, inner=2]
    let (mut m, mut a) = ([0f64; 2], [0usize; 2]);
    max_axis(&x, 1, 3, 2, &mut m, &mut a);
    assert_eq!((m, a), ([2.0, 2.0], [1, 0]));
    // n = 0
    let (mut m, mut a) = ([0f64; 2], [9usize; 2]);
    max_axis::<f64>(&[], 2, 0, 1, &mut m, &mut a);
    assert_eq!((m, a), ([f64::NEG_INFINITY; 2], [0, 0]));
}

/// Neumaier's compensated sum: error ≈ one rounding of the result plus O(n·ε²)·Σ|x|.
fn neumaier(xs: impl Iterator<Item = f64>) -> f64 {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    for x in xs {
        let t = s + x;
        c += if s.abs() >= x.abs() { (s - t) + x } else { (x - t) + s };
        s = t;
    }
    s + c
}

#[test]
fn sums_large_and_deterministic() {
    // 3M + 1 elements: blocks of 4096 summed on 2 threads (2-thread pool) or 1. The block
    // boundaries and the pairwise combination do not depend on the thread count, so the results
    // must be bitwise equal, and both within the log-n error bound of the f64 reference.
    let n = 3_000_001;
    let mut r = XorShift::new(0x9e37_79b9_7f4a_7c15);
    let mut rnd = || r.uniform(-1.0, 1.0);
    let xs: Vec<f64> = (0..n).map(|i| if i % 3 == 0 { ((i % 1000) as f64) * 1e-3 } else { rnd() }).collect();
    let x32: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
    let x64: Vec<f64> = x32.iter().map(|&v| v as f64).collect(); // same values in both dtypes
    // References accurate to ~1 f64 ULP (a plain f64 loop over 3M terms could be off by far more
    // than the f64 kernel's own bound): compensated sums, and exact products via FMA.
    let exact = neumaier(x64.iter().copied());
    let abs: f64 = x64.iter().map(|v| v.abs()).sum();
    let exact_sq = neumaier(x64.iter().flat_map(|&v| {
        let p = v * v;
        [p, v.mul_add(v, -p)] // p + its rounding error = v² exactly
    }));
    let run32 = || (sum_all(&x32), dot(&x32, &x32), sum_sq(&x32));
    let run64 = || (sum_all(&x64), dot(&x64, &x64), sum_sq(&x64));
    let (s1, d1, q1) = in_pool(1, run32);
    let (s2, d2, q2) = in_pool(2, run32);
    assert_eq!((s1.to_bits(), d1.to_bits(), q1.to_bits()), (s2.to_bits(), d2.to_bits(), q2.to_bits()), "f32: 1 vs 2 threads");
    let (e1, f1, g1) = in_pool(1, run64);
    let (e2, f2, g2) = in_pool(2, run64);
    assert_eq!((e1.to_bits(), f1.to_bits(), g1.to_bits()), (e2.to_bits(), f2.to_bits(), g2.to_bits()), "f64: 1 vs 2 threads");
    // Error bound: each lane sums ≤ 128 terms, then ~log2(733) pairwise levels: ≲ 140·ε·Σ|x|.
    let bound = |eps: f64, scale: f64| 140.0 * eps * scale;
    assert!((s1 as f64 - exact).abs() <= bound(f32::EPSILON as f64, abs), "f32 sum {s1} vs {exact}");
    assert!((d1 as f64 - exact_sq).abs() <= bound(f32::EPSILON as f64, exact_sq), "f32 dot {d1} vs {exact_sq}");
    assert_eq!(q1.to_bits(), d1.to_bits(), "sum_sq is dot(x, x)");
    assert!((e1 - exact).abs() <= bound(f64::EPSILON, abs), "f64 sum {e1} vs {exact}");
    assert!((f1 - exact_sq).abs() <= bound(f64::EPSILON, exact_sq), "f64 dot {f1} vs {exact_sq}");
    assert_eq!(sum_all::<f64>(&[]), 0.0);
    // large softmax rows (threaded path): 1 vs 2 threads bitwise, and against the f64 reference
    let (outer, len) = (512, 1000);
    let x: Vec<f32> = (0..outer * len).map(|i| ((i * 7919 % 1000) as f32) * 0.01).collect();
    let mut y2 = vec![0f32; x.len()];
    in_pool(2, || softmax(&x, outer, len, 1, &mut y2));
    let mut y1 = vec![0f32; x.len()];
    in_pool(1, || softmax(&x, outer, len, 1, &mut y1));
    assert!(y1.iter().zip(&y2).all(|(a, b)| a.to_bits() == b.to_bits()), "softmax: 1 vs 2 threads");
    for o in [0, 255, 511] {
        let row: Vec<f64> = x[o * len..(o + 1) * len].iter().map(|&v| v as f64).collect();
        let (p, _) = ref_softmax(&row);
        for j in 0..len {
            assert!(close(y2[o * len + j] as f64, p[j], 2e-5), "softmax row {o} col {j}: {} vs {}", y2[o * len + j], p[j]);
        }
    }
}

fn bcast_reduce_ref(g: &[f64], shape: &[usize], strides: &[usize], acc: &mut [f64]) {
    for (flat, &v) in g.iter().enumerate() {
        let mut rem = flat;
        let mut off = 0;
        for d in (0..shape.len()).rev() {
            off += (rem % shape[d]) * strides[d];
            rem /= shape[d];
        }
        acc[off] += v;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn reduce_broadcast_matches_reference(shape in prop::collection::vec(1usize..6, 1..5), mask in any::<u8>()) {
        let mut st = vec![0; shape.len()];
        let mut s = 1;
        for d in (0..shape.len()).rev() {
            if mask >> d & 1 == 0 { st[d] = s; s *= shape[d]; }
        }
        let n: usize = shape.iter().product();
        let g: Vec<f64> = (0..n).map(|i| i as f64 * 0.25 - 1.0).collect();
        let mut want = vec![1.0; s];
        bcast_reduce_ref(&g, &shape, &st, &mut want);
        let mut got = vec![1.0; s];
        reduce_broadcast(&g, &shape, &st, &mut got);
        for (a, b) in got.iter().zip(&want) { prop_assert!((a - b).abs() < 1e-12 * (1.0 + b.abs())); }
        let g32: Vec<f32> = g.iter().map(|&v| v as f32).collect();
        let mut got32 = vec![1f32; s];
        reduce_broadcast(&g32, &shape, &st, &mut got32);
        for (a, b) in got32.iter().zip(&want) { prop_assert!((*a as f64 - b).abs() < 1e-5 * (1.0 + b.abs())); }
    }
}

#[test]
#[should_panic(expected = "softmax: input has 10 elements but the layout [outer=2, n=3, inner=2] needs 12")]
fn softmax_bad_layout() {
    softmax(&[0f32; 10], 2, 3, 2, &mut [0f32; 10]);
}

#[test]
#[should_panic(expected = "sum_axis: output has 3 elements, expected 4")]
fn sum_axis_bad_out() {
    sum_axis(&[0f64; 12], 2, 3, 2, &mut [0f64; 3]);
}

#[test]
#[should_panic(expected = "dot: length mismatch: a has 3 elements, b has 2")]
fn dot_mismatch() {
    dot(&[0f32; 3], &[0f32; 2]);
}

#[test]
#[should_panic(expected = "reduce_broadcast: accumulator has 2 elements")]
fn reduce_broadcast_short() {
    reduce_broadcast(&[0f32; 6], &[2, 3], &[0, 1], &mut [0f32; 2]);
}
