//! The elementwise, reduction, softmax and recurrent-cell pointwise kernels on each SIMD level this
//! CPU runs, forced explicitly (`force_simd_level`), against float64 references; the kernels that
//! run 512-bit vectors on AVX-512 giving the AVX2 level's bits; and the evidence that a build
//! without any `-C target-feature` flag dispatches to the CPU's best level.
//!
//! The level is process-wide, so the tests of this file take a lock while they force it.

use chi_kernels::elementwise::{axpby, binary, mul_acc, scale, unary, unary_backward, unary_backward_inplace, Binary, Unary};
use chi_kernels::reduce::{dot, log_softmax, softmax, softmax_backward, sum_all, sum_axis};
use chi_kernels::rnn::{
    ca_rnn_backward_cell, ca_rnn_backward_output, ca_rnn_forward_cell, ca_rnn_forward_output, ca_rnn_width, gru_backward,
    gru_backward_reset, gru_forward, gru_reset, lstm_backward, lstm_forward, Rows,
};
use chi_kernels::Real;
use chi_kernels::simd::{cpu_simd_level, force_simd_level, simd_level, SimdLevel};
use std::sync::Mutex;

static LOCK: Mutex<()> = Mutex::new(());

fn levels() -> Vec<SimdLevel> {
    let mut v = vec![SimdLevel::Portable];
    if cpu_simd_level() >= SimdLevel::Avx2Fma {
        v.push(SimdLevel::Avx2Fma);
    }
    if cpu_simd_level() >= SimdLevel::Avx512 {
        v.push(SimdLevel::Avx512);
    }
    v
}

/// Runs `f` once per level, with that level forced.
fn on_each_level(mut f: impl FnMut(SimdLevel)) {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    for l in levels() {
        force_simd_level(Some(l));
        assert_eq!(simd_level(), l, "forcing {l:?} did not take effect");
        f(l);
    }
    force_simd_level(None);
}

fn same_bits(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn close(got: f64, want: f64, tol: f64) -> bool {
    (got.is_nan() && want.is_nan()) || got == want || (got - want).abs() <= tol * (1.0 + want.abs())
}

fn data(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}


/// Lengths around the vector widths (16 and 8 × f32, 8 and 4 × f64), and one above the threading
/// threshold.
const LENS: [usize; 13] = [0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 33, 67, (1 << 17) + 5];

#[test]
fn unary_and_backward_on_each_level() {
    on_each_level(|l| {
        for &n in &LENS {
            let x = data(n, n as u64 + 1, -30.0, 30.0);
            for op in Unary::ALL {
                let dom: Vec<f64> = match op {
                    Unary::Log | Unary::Sqrt => x.iter().map(|v| v.abs() + 1e-3).collect(),
                    Unary::Log1p => x.iter().map(|v| v.abs() - 0.5).collect(),
                    _ => x.clone(),
                };
                let xf: Vec<f32> = dom.iter().map(|&v| v as f32).collect();
                let mut y32 = vec![0f32; n];
                unary(op, &xf, &mut y32);
                let mut y64 = vec![0f64; n];
                unary(op, &dom, &mut y64);
                let g = data(n, 7, -1.0, 1.0);
                let mut dx = vec![0f64; n];
                unary_backward(op, &dom, &y64, &g, &mut dx);
                // In place into the gradient's buffer: the same bits, in both precisions.
                let mut g_in = g.clone();
                unary_backward_inplace(op, &dom, &y64, &mut g_in);
                assert!((0..n).all(|i| same_bits(g_in[i], dx[i])), "{l:?} f64 d{} in place", op.name());
                let g32: Vec<f32> = g.iter().map(|&v| v as f32).collect();
                let mut dx32 = vec![0f32; n];
                unary_backward(op, &xf, &y32, &g32, &mut dx32);
                let mut g32_in = g32.clone();
                unary_backward_inplace(op, &xf, &y32, &mut g32_in);
                assert!((0..n).all(|i| same_bits(g32_in[i] as f64, dx32[i] as f64)), "{l:?} f32 d{} in place", op.name());
                for i in 0..n {
                    let want32 = op.apply(xf[i] as f64);
                    assert!(close(y32[i] as f64, want32, 3e-7), "{l:?} f32 {} at {i}: x={} got {} want {want32}", op.name(), xf[i], y32[i]);
                    let want = op.apply(dom[i]);
                    assert!(close(y64[i], want, 1e-15), "{l:?} f64 {} at {i}: x={} got {} want {want}", op.name(), dom[i], y64[i]);
                    let dwant = g[i] * op.derivative(dom[i], want);
                    assert!(close(dx[i], dwant, 1e-14), "{l:?} f64 d{} at {i}: got {} want {dwant}", op.name(), dx[i]);
                }
            }
        }
    });
}

#[test]
fn binary_and_fused_updates_on_each_level() {
    on_each_level(|l| {
        for &n in &LENS {
            let a = data(n, 3, -4.0, 4.0);
            let b = data(n, 4, 0.5, 4.0);
            for op in [Binary::Add, Binary::Sub, Binary::Mul, Binary::Div, Binary::Max, Binary::Min] {
                let mut out = vec![0f64; n];
                binary(op, &a, &b, &mut out);
                assert!((0..n).all(|i| out[i] == op.apply(a[i], b[i])), "{l:?} {} (exact in f64)", op.name());
            }
            let mut y = b.clone();
            axpby(0.5, &a, 2.0, &mut y);
            assert!((0..n).all(|i| close(y[i], 0.5 * a[i] + 2.0 * b[i], 1e-15)), "{l:?} axpby");
            let mut y = b.clone();
            mul_acc(&a, &b, &mut y);
            assert!((0..n).all(|i| close(y[i], a[i] * b[i] + b[i], 1e-15)), "{l:?} mul_acc");
            let mut y = a.clone();
            scale(3.0, &mut y);
            assert!((0..n).all(|i| y[i] == 3.0 * a[i]), "{l:?} scale");
        }
    });
}

#[test]
fn reductions_and_softmax_on_each_level() {
    on_each_level(|l| {
        for &(outer, n, inner) in &[(1, 1, 1), (3, 7, 1), (2, 9, 5), (4, 33, 1), (1, 1000, 3), (5, 17, 8)] {
            let x = data(outer * n * inner, (outer * n + inner) as u64, -8.0, 8.0);
            let mut out = vec![0f64; outer * inner];
            sum_axis(&x, outer, n, inner, &mut out);
            let mut y = vec![0f64; x.len()];
            softmax(&x, outer, n, inner, &mut y);
            let mut ly = vec![0f64; x.len()];
            log_softmax(&x, outer, n, inner, &mut ly);
            let g = data(x.len(), 9, -1.0, 1.0);
            let mut dx = vec![0f64; x.len()];
            softmax_backward(&y, &g, outer, n, inner, &mut dx);
            let at = |o: usize, j: usize, i: usize| (o * n + j) * inner + i;
            for o in 0..outer {
                for i in 0..inner {
                    let s: f64 = (0..n).map(|j| x[at(o, j, i)]).sum();
                    assert!(close(out[o * inner + i], s, 1e-13), "{l:?} sum_axis");
                    let m = (0..n).map(|j| x[at(o, j, i)]).fold(f64::NEG_INFINITY, f64::max);
                    let z: f64 = (0..n).map(|j| (x[at(o, j, i)] - m).exp()).sum();
                    let gy: f64 = (0..n).map(|j| g[at(o, j, i)] * (x[at(o, j, i)] - m).exp() / z).sum();
                    for j in 0..n {
                        let p = (x[at(o, j, i)] - m).exp() / z;
                        assert!(close(y[at(o, j, i)], p, 1e-14), "{l:?} softmax");
                        assert!(close(ly[at(o, j, i)], x[at(o, j, i)] - m - z.ln(), 1e-14), "{l:?} log_softmax");
                        assert!(close(dx[at(o, j, i)], p * (g[at(o, j, i)] - gy), 1e-13), "{l:?} softmax_backward");
                    }
                }
            }
        }
        for &n in &LENS {
            let a = data(n, 5, -1.0, 1.0);
            let b = data(n, 6, -1.0, 1.0);
            let s: f64 = a.iter().sum();
            let d: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!(close(sum_all(&a), s, 1e-12), "{l:?} sum_all n={n}");
            assert!(close(dot(&a, &b), d, 1e-12), "{l:?} dot n={n}");
            let af: Vec<f32> = a.iter().map(|&v| v as f32).collect();
            let sf: f64 = af.iter().map(|&v| v as f64).sum();
            assert!((sum_all(&af) as f64 - sf).abs() <= 1e-5 * (1.0 + n as f64).sqrt(), "{l:?} f32 sum_all n={n}");
        }
    });
}

/// The levels compute the same functions: ops without a multiply-add agree bit for bit, the
/// transcendental ones within a few ULPs (the AVX2 and AVX-512 levels fuse their multiply-adds,
/// the portable one may not).
#[test]
fn levels_agree() {
    if levels().len() < 2 {
        eprintln!("note: this CPU runs only the portable level; nothing to compare");
        return;
    }
    let x: Vec<f32> = data(1003, 11, -20.0, 20.0).iter().map(|&v| v as f32).collect();
    let run = |op: Unary| {
        let mut per = Vec::new();
        on_each_level(|_| {
            let mut y = vec![0f32; x.len()];
            unary(op, &x, &mut y);
            per.push(y);
        });
        per
    };
    for op in [Unary::Neg, Unary::Abs, Unary::Relu, Unary::LeakyRelu(0.1)] {
        let p = run(op);
        for q in &p[1..] {
            assert!(p[0].iter().zip(q).all(|(a, b)| a.to_bits() == b.to_bits()), "{} differs between levels", op.name());
        }
    }
    for op in [Unary::Exp, Unary::Tanh, Unary::Sigmoid, Unary::Softplus] {
        let p = run(op);
        for q in &p[1..] {
            for (a, b) in p[0].iter().zip(q) {
                assert!((a - b).abs() <= 4.0 * f32::EPSILON * a.abs().max(f32::MIN_POSITIVE), "{}: {a} vs {b}", op.name());
            }
        }
    }
}

/// Every output of the kernels that run 512-bit vectors on the AVX-512 level (the unary maps and
/// their derivatives; the LSTM, GRU and CA-RNN forward passes and the LSTM and GRU backward
/// passes), in f32 and f64, for widths around both vector sizes: one vector's lane computes its
/// element alone, so the AVX-512 level must give the AVX2 level's bits exactly.
fn wide_lanes_give_the_avx2_bits<T: Real>() {
    let t = |v: Vec<f64>| -> Vec<T> { v.into_iter().map(T::from_f64).collect() };
    // All outputs of one run, concatenated as bits.
    let run = || -> Vec<u64> {
        let mut out: Vec<T> = Vec::new();
        // Special values among ordinary ones, so NaN propagation, infinities, signed zeros,
        // subnormals and the clamps of exp/tanh are compared too.
        let special = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0, 1e-40, -1e-310, 100.0, -100.0, 800.0, -800.0];
        for n in [0usize, 1, 7, 8, 9, 15, 16, 17, 33, 67] {
            let mut x = data(n, n as u64 + 3, -12.0, 12.0);
            for (i, v) in x.iter_mut().enumerate().filter(|(i, _)| i % 3 == 1) {
                *v = special[(i / 3) % special.len()];
            }
            let x = t(x);
            let g = t(data(n, n as u64 + 4, -1.0, 1.0));
            for op in Unary::ALL {
                let dom: Vec<T> = match op {
                    Unary::Log | Unary::Sqrt => x.iter().map(|v| T::from_f64(v.to_f64().abs() + 1e-3)).collect(),
                    Unary::Log1p => x.iter().map(|v| T::from_f64(v.to_f64().abs() - 0.5)).collect(),
                    _ => x.clone(),
                };
                let mut y = vec![T::ZERO; n];
                unary(op, &dom, &mut y);
                let mut dx = vec![T::ZERO; n];
                unary_backward(op, &dom, &y, &g, &mut dx);
                out.extend(y.into_iter().chain(dx));
            }
        }
        for (batch, h) in [(3usize, 1usize), (2, 7), (3, 8), (1, 15), (2, 16), (3, 17), (2, 33)] {
            let bh = batch * h;
            let seed = (batch * 100 + h) as u64;
            let c = t(data(bh, seed, -1.5, 1.5));
            let gh = t(data(2 * bh, seed + 1, -1.0, 1.0));
            let pre = t(data(4 * bh, seed + 2, -4.0, 4.0));
            let peeps = [t(data(h, seed + 3, -0.5, 0.5)), t(data(h, seed + 4, -0.5, 0.5)), t(data(h, seed + 5, -0.5, 0.5))];
            for with_peep in [false, true] {
                let peep = with_peep.then(|| [&peeps[0][..], &peeps[1][..], &peeps[2][..]]);
                // With peepholes the inputs are also read as rows of their own (in place).
                let mut gates = pre.clone();
                let xp_rows = t(data(batch * (4 * h + 3), seed + 10, -1.0, 1.0));
                let xp = with_peep.then(|| Rows { data: &xp_rows[..], stride: 4 * h + 3 });
                let (mut hc, mut tc) = (vec![T::ZERO; 2 * bh], vec![T::ZERO; bh]);
                lstm_forward(batch, h, &mut gates, xp, &c, peep, &mut hc, &mut tc);
                let (mut da, mut dc) = (vec![T::ZERO; 4 * bh], vec![T::ZERO; bh]);
                let mut dp = [vec![T::ZERO; h], vec![T::ZERO; h], vec![T::ZERO; h]];
                let dpeep = with_peep.then(|| {
                    let [a, b, c] = &mut dp;
                    [&mut a[..], &mut b[..], &mut c[..]]
                });
                lstm_backward(batch, h, &gates, &c, &hc, &tc, peep, &gh, &mut da, &mut dc, dpeep);
                out.extend(gates.into_iter().chain(hc).chain(tc).chain(da).chain(dc).chain(dp.into_iter().flatten()));
            }
            // The projected inputs as rows with a stride (a sequence's step read in place).
            let xp_rows = t(data(batch * (3 * h + 5), seed + 6, -3.0, 3.0));
            let xp = Rows { data: &xp_rows[..], stride: 3 * h + 5 };
            let hn = t(data(bh, seed + 7, -2.0, 2.0));
            let g1 = &gh[..bh];
            for reset_after in [true, false] {
                let mut rz = t(data(2 * bh, seed + 8, -2.0, 2.0));
                if !reset_after {
                    let mut u = vec![T::ZERO; bh];
                    gru_reset(batch, h, xp, &mut rz, &c, &mut u);
                    out.extend(u);
                }
                let (mut n, mut h_new) = (vec![T::ZERO; bh], vec![T::ZERO; bh]);
                gru_forward(batch, h, reset_after, xp, &mut rz, &hn, &c, &mut n, &mut h_new);
                let (mut da, mut dhn, mut dh) = (vec![T::ZERO; 3 * bh], vec![T::ZERO; bh], vec![T::ZERO; bh]);
                gru_backward(batch, h, reset_after, &rz, &n, &c, &hn, g1, &mut da, &mut dhn, &mut dh);
                if !reset_after {
                    gru_backward_reset(batch, h, &rz, &c, &gh[bh..], &mut da, &mut dh);
                }
                out.extend(rz.into_iter().chain(n).chain(h_new).chain(da).chain(dhn).chain(dh));
            }
            let w = ca_rnn_width(h);
            let mut a = t(data(batch * w, seed + 9, -2.0, 2.0));
            let (mut c_new, mut y) = (vec![T::ZERO; bh], vec![T::ZERO; bh]);
            ca_rnn_forward_cell(batch, h, &mut a, &c, &peeps[0], &mut c_new);
            ca_rnn_forward_output(batch, h, &mut a, &mut y);
            out.extend(a.into_iter().chain(c_new).chain(y));
        }
        out.iter().map(|v| v.to_f64().to_bits()).collect()
    };
    let per: Vec<(SimdLevel, Vec<u64>)> = {
        let mut per = Vec::new();
        on_each_level(|l| {
            if l >= SimdLevel::Avx2Fma {
                per.push((l, run()));
            }
        });
        per
    };
    if per.len() < 2 {
        eprintln!("note: this CPU has no AVX-512 level; the 512-bit copies were not run");
        return;
    }
    let (a, b) = (&per[0].1, &per[1].1);
    assert_eq!(a.len(), b.len());
    let differ = a.iter().zip(b).filter(|(x, y)| x != y).count();
    assert!(differ == 0, "{} of {} outputs differ between {:?} and {:?} in {}", differ, a.len(), per[0].0, per[1].0, std::any::type_name::<T>());
}

#[test]
fn wide_lanes_give_the_avx2_bits_in_f32_and_f64() {
    wide_lanes_give_the_avx2_bits::<f32>();
    wide_lanes_give_the_avx2_bits::<f64>();
}

/// The step kernels that read the projected inputs as strided rows ([`Rows`]) give, on every
/// level, the bits of the same kernels on the inputs first gathered into dense rows (GRU) or
/// added into the gates (LSTM: one rounding either way). The fused sequences read each step's
/// rows out of the batch-major `[B, T, G]` inputs this way instead of copying them.
fn rows_in_place_equal_rows_gathered<T: Real>() {
    let t = |v: Vec<f64>| -> Vec<T> { v.into_iter().map(T::from_f64).collect() };
    on_each_level(|level| {
        for (batch, h) in [(0usize, 3usize), (1, 1), (3, 7), (2, 16), (3, 17), (2, 33)] {
            let bh = batch * h;
            let seed = (batch * 31 + h) as u64;
            let c = t(data(bh, seed, -1.5, 1.5));
            // LSTM: gates = h·W part, xp rows with stride 4H + 3.
            let stride = 4 * h + 3;
            let prod = t(data(4 * bh, seed + 1, -3.0, 3.0));
            let rows = t(data(batch * stride, seed + 2, -3.0, 3.0));
            let gathered: Vec<T> = (0..batch).flat_map(|b| rows[b * stride..b * stride + 4 * h].to_vec()).collect();
            let added: Vec<T> = prod.iter().zip(&gathered).map(|(&p, &x)| p + x).collect();
            let run = |gates: &mut Vec<T>, xp: Option<Rows<T>>| {
                let (mut hc, mut tc) = (vec![T::ZERO; 2 * bh], vec![T::ZERO; bh]);
                lstm_forward(batch, h, gates, xp, &c, None, &mut hc, &mut tc);
                (hc, tc)
            };
            let (mut g1, mut g2) = (prod.clone(), added.clone());
            let (a, b) = (run(&mut g1, Some(Rows { data: &rows, stride })), run(&mut g2, None));
            let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&g1), bits(&g2), "lstm_forward gates, {level:?}, batch {batch}, hidden {h}");
            assert_eq!((bits(&a.0), bits(&a.1)), (bits(&b.0), bits(&b.1)), "lstm_forward states, {level:?}, batch {batch}, hidden {h}");
            // GRU, both reset forms: rows with stride 3H + 5 against the same rows gathered.
            let stride = 3 * h + 5;
            let rows = t(data(batch * stride, seed + 3, -3.0, 3.0));
            let gathered: Vec<T> = (0..batch).flat_map(|b| rows[b * stride..b * stride + 3 * h].to_vec()).collect();
            let hn = t(data(bh, seed + 4, -2.0, 2.0));
            for reset_after in [true, false] {
                let run = |xp: Rows<T>| {
                    let mut rz = t(data(2 * bh, seed + 5, -2.0, 2.0));
                    let mut u = vec![T::ZERO; bh];
                    if !reset_after {
                        gru_reset(batch, h, xp, &mut rz, &c, &mut u);
                    }
                    let (mut n, mut h_new) = (vec![T::ZERO; bh], vec![T::ZERO; bh]);
                    gru_forward(batch, h, reset_after, xp, &mut rz, &hn, &c, &mut n, &mut h_new);
                    [rz, u, n, h_new].concat()
                };
                let (a, b) = (run(Rows { data: &rows, stride }), run(Rows::dense(&gathered, 3 * h)));
                assert_eq!(bits(&a), bits(&b), "gru_forward (reset_after {reset_after}), {level:?}, batch {batch}, hidden {h}");
            }
        }
    });
}

#[test]
fn rows_in_place_equal_rows_gathered_in_f32_and_f64() {
    rows_in_place_equal_rows_gathered::<f32>();
    rows_in_place_equal_rows_gathered::<f64>();
}

/// A stride shorter than a row, or too few elements for the rows, is refused by name.
#[test]
#[should_panic(expected = "gru_forward: length mismatch: xp has 20 elements, expected at least 21")]
fn rows_too_short_are_refused() {
    let (b, h) = (2usize, 3usize);
    let xp = vec![0.0f32; 20];
    let (mut rz, hn, hh, mut n, mut hnew) = (vec![0.0f32; 2 * b * h], vec![0.0f32; b * h], vec![0.0f32; b * h], vec![0.0f32; b * h], vec![0.0f32; b * h]);
    gru_forward(b, h, true, Rows { data: &xp, stride: 12 }, &mut rz, &hn, &hh, &mut n, &mut hnew);
}

/// Evidence that the SIMD speed does not depend on compile-time flags: this test binary is built
/// without any `-C target-feature` (the workspace sets none), yet on a CPU with AVX2+FMA the
/// kernels dispatch to the AVX2 level, and on one with AVX-512F to the AVX-512 level (unless
/// `CHI_SIMD` caps it).
#[test]
fn dispatches_to_the_cpu_level_without_target_feature_flags() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    force_simd_level(None);
    #[cfg(target_arch = "x86_64")]
    {
        let cpu_has = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
        assert_eq!(cpu_simd_level() >= SimdLevel::Avx2Fma, cpu_has);
        assert_eq!(cpu_simd_level() == SimdLevel::Avx512, cpu_has && is_x86_feature_detected!("avx512f"));
        if std::env::var_os("CHI_SIMD").is_none_or(|v| v.is_empty()) {
            assert_eq!(simd_level(), cpu_simd_level(), "the kernels do not use the CPU's best level");
        }
        // In the default build this binary is compiled for baseline x86-64 (no AVX2 at compile
        // time), so the level above was chosen at run time, not by a `cfg`.
        if cfg!(target_feature = "avx2") {
            eprintln!("note: built with target-feature=+avx2 (RUSTFLAGS); the no-flag case is not what ran");
        }
    }
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The CA-RNN step's four pointwise passes, in `T`, against the equations evaluated in float64
/// (`a` = pre-activations, blocks `f, v, c', o, vᵒ, cᵒ`).
fn ca_rnn_kernels_match_f64<T: Real>(batch: usize, n: usize, tol: f64, seed: u64) {
    let w = ca_rnn_width(n);
    let to = |v: &[f64]| -> Vec<T> { v.iter().map(|&x| T::from_f64(x)).collect() };
    let back = |v: &[T]| -> Vec<f64> { v.iter().map(|x| x.to_f64()).collect() };
    // Inputs rounded to T first, so both sides start from the same values.
    let round = |v: Vec<f64>| back(&to(&v));
    let (a, c, p) = (round(data(batch * w, seed, -2.0, 2.0)), round(data(batch * n, seed + 1, -1.0, 1.0)), round(data(n, seed + 2, -1.0, 1.0)));
    let (gy, gc) = (round(data(batch * n, seed + 3, -1.0, 1.0)), round(data(batch * n, seed + 4, -1.0, 1.0)));
    // Forward, in T.
    let mut act = to(&a);
    let (mut c_new, mut y) = (vec![T::ZERO; batch * n], vec![T::ZERO; batch * n]);
    ca_rnn_forward_cell(batch, n, &mut act, &to(&c), &to(&p), &mut c_new);
    ca_rnn_forward_output(batch, n, &mut act, &mut y);
    // Backward, in T; the blocks a pass does not own keep a sentinel.
    let sentinel = T::from_f64(7.0);
    let (mut da, mut dc, mut dp) = (vec![sentinel; batch * w], vec![T::ZERO; batch * n], vec![T::from_f64(0.5); n]);
    ca_rnn_backward_output(batch, n, &act, &to(&gy), &mut da);
    let owned_by_cell = |j: usize| j <= 2 * n;
    for b in 0..batch {
        assert!((0..w).filter(|&j| owned_by_cell(j)).all(|j| da[b * w + j] == sentinel), "ca_rnn_backward_output wrote the cell blocks");
    }
    ca_rnn_backward_cell(batch, n, &act, &to(&c), &to(&p), &to(&gc), &mut da, &mut dc, &mut dp);
    // The equations in float64.
    let (mut want_dp, mut errs) = (vec![0.5; n], Vec::new());
    for b in 0..batch {
        let (r, s) = (b * w, b * n);
        let f = sigmoid(a[r]);
        let v: Vec<f64> = (0..n).map(|j| (a[r + 1 + j] + p[j] * c[s + j]).tanh()).collect();
        let cp: Vec<f64> = (0..n).map(|j| a[r + 1 + n + j].tanh()).collect();
        let cn: Vec<f64> = (0..n).map(|j| f * v[j] + (1.0 - f) * cp[j]).collect();
        let o = sigmoid(a[r + 2 * n + 1]);
        let vo: Vec<f64> = (0..n).map(|j| a[r + 2 * n + 2 + j].tanh()).collect();
        let co: Vec<f64> = (0..n).map(|j| a[r + 3 * n + 2 + j].tanh()).collect();
        let do_ = (0..n).map(|j| gy[s + j] * (vo[j] - co[j])).sum::<f64>();
        let df = (0..n).map(|j| gc[s + j] * (v[j] - cp[j])).sum::<f64>();
        let mut want_act = vec![f];
        want_act.extend(&v);
        want_act.extend(&cp);
        want_act.push(o);
        want_act.extend(&vo);
        want_act.extend(&co);
        let mut want_da = vec![df * f * (1.0 - f)];
        want_da.extend((0..n).map(|j| gc[s + j] * f * (1.0 - v[j] * v[j])));
        want_da.extend((0..n).map(|j| gc[s + j] * (1.0 - f) * (1.0 - cp[j] * cp[j])));
        want_da.push(do_ * o * (1.0 - o));
        want_da.extend((0..n).map(|j| gy[s + j] * o * (1.0 - vo[j] * vo[j])));
        want_da.extend((0..n).map(|j| gy[s + j] * (1.0 - o) * (1.0 - co[j] * co[j])));
        for j in 0..n {
            let dav = want_da[1 + j];
            want_dp[j] += dav * c[s + j];
            errs.push(("c_new", c_new[s + j].to_f64(), cn[j]));
            errs.push(("y", y[s + j].to_f64(), o * vo[j] + (1.0 - o) * co[j]));
            errs.push(("dc", dc[s + j].to_f64(), dav * p[j]));
        }
        for j in 0..w {
            errs.push(("act", act[r + j].to_f64(), want_act[j]));
            errs.push(("da", da[r + j].to_f64(), want_da[j]));
        }
    }
    errs.extend((0..n).map(|j| ("dp_v", dp[j].to_f64(), want_dp[j])));
    for (what, got, want) in errs {
        assert!(close(got, want, tol), "{what}: {got} vs {want} (batch {batch}, hidden {n}, {})", std::any::type_name::<T>());
    }
}

/// Hidden sizes around the vector widths (16 and 8 × f32, 8 and 4 × f64) and primes; batch 0, 1
/// and 3.
#[test]
fn ca_rnn_kernels_on_each_level() {
    on_each_level(|_| {
        for batch in [0, 1, 3] {
            for n in [1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33] {
                let seed = (batch * 100 + n) as u64 + 1;
                ca_rnn_kernels_match_f64::<f32>(batch, n, 2e-5, seed);
                ca_rnn_kernels_match_f64::<f64>(batch, n, 1e-13, seed);
            }
        }
    });
}

/// Vector tails are loaded and stored with masks on AVX2 and AVX-512 (and through a padded buffer on the
/// portable level): a kernel run on a window of a larger buffer must leave every element outside
/// the window as it was, and each element's result must not depend on where in the slice (body
/// or tail) it sits. Windows of every length 0–35 at every offset 0–8, in f32 and f64.
fn tails_stay_in_their_window<T: Real>() {
    let guard = T::from_f64(-123.25);
    on_each_level(|l| {
        for n in 0..36 {
            for off in 0..9 {
                let x: Vec<T> = data(n, (n * 31 + off) as u64, -2.0, 2.0).iter().map(|&v| T::from_f64(v)).collect();
                let g: Vec<T> = data(n, (n * 17 + off + 5) as u64, -1.0, 1.0).iter().map(|&v| T::from_f64(v)).collect();
                let total = off + n + 9;
                let window = |buf: &Vec<T>, what: &str| {
                    for (i, v) in buf.iter().enumerate() {
                        if i < off || i >= off + n {
                            assert!(v.to_f64() == guard.to_f64(), "{what}: {l:?} n {n} offset {off}: element {i} outside the window changed");
                        }
                    }
                };
                // Out of place: y = tanh(x), into a window.
                let mut y = vec![guard; total];
                unary(Unary::Tanh, &x, &mut y[off..off + n]);
                window(&y, "unary");
                for i in 0..n {
                    let mut one = [T::ZERO];
                    unary(Unary::Tanh, &x[i..i + 1], &mut one);
                    assert!(same_bits(y[off + i].to_f64(), one[0].to_f64()), "unary: {l:?} n {n} element {i} depends on its position");
                }
                // Two inputs.
                let mut z = vec![guard; total];
                binary(Binary::Mul, &x, &g, &mut z[off..off + n]);
                window(&z, "binary");
                for i in 0..n {
                    assert!(same_bits(z[off + i].to_f64(), (x[i] * g[i]).to_f64()), "binary: {l:?} n {n} element {i}");
                }
                // Three inputs, in place: the gradient's window is overwritten, nothing else.
                let yv: Vec<T> = y[off..off + n].to_vec();
                let mut gi = vec![guard; total];
                gi[off..off + n].copy_from_slice(&g);
                unary_backward_inplace(Unary::Tanh, &x, &yv, &mut gi[off..off + n]);
                window(&gi, "unary_backward_inplace");
                let mut dx = vec![guard; total];
                unary_backward(Unary::Tanh, &x, &yv, &g, &mut dx[off..off + n]);
                window(&dx, "unary_backward");
                for i in 0..n {
                    assert!(same_bits(gi[off + i].to_f64(), dx[off + i].to_f64()), "backward in place vs out of place: {l:?} n {n} element {i}");
                }
            }
        }
    });
}

#[test]
fn tails_stay_in_their_window_on_each_level() {
    tails_stay_in_their_window::<f32>();
    tails_stay_in_their_window::<f64>();
}
