//! The scan against its exact oracles: brute-force n-gram sums (values and gradients), the
//! ordinary CNN at λ = 0, the string kernel (Theorem 1), the composed reference, finite differences.

use crate::common;
use chi_autodiff::{grad, gradcheck, gradgradcheck, GradOptions, GradcheckOptions, Rng, Tensor};
use chi_rcnn::brute::{closed_form, string_kernel, string_kernel_features, table21_normalized};
use chi_rcnn::{scan_composed, scan_fused, Aggregation, FeatureMap, ScanSpec};
use common::max_abs_diff;

const MAPS: [FeatureMap; 2] = [FeatureMap::Additive, FeatureMap::Multiplicative];
const AGGS: [Aggregation; 2] = [Aggregation::Unnormalized, Aggregation::Normalized];

fn specs() -> Vec<ScanSpec> {
    let mut v = Vec::new();
    for order in 1..=3 {
        for map in MAPS {
            for aggregation in AGGS {
                v.push(ScanSpec { order, hidden: 3, map, aggregation });
            }
        }
    }
    v
}

/// `(c_n, z_n)` of a one-sequence scan output `[1, L, (n+1)h]`, each `[L, h]`.
fn split_cz(spec: &ScanSpec, y: &Tensor<f64>) -> (Tensor<f64>, Tensor<f64>) {
    let (n, h) = (spec.order, spec.hidden);
    let l = y.dim(1);
    let y = y.reshape(&[l, (n + 1) * h]);
    (y.narrow(1, (n - 1) * h, h), y.narrow(1, n * h, h))
}

/// For every variant, n = 1…3, scalar and per-unit λ: the fused scan, the composed scan and the
/// brute-force closed form agree in value, and in the gradients of a random read-out with respect
/// to the input words, the filters W and λ.
#[test]
fn dp_equals_brute_force_values_and_gradients() {
    let mut rng = Rng::new(11);
    for spec in specs() {
        for per_unit in [false, true] {
            let (l, d, n, h) = (6, 2, spec.order, spec.hidden);
            let x = Tensor::<f64>::randn(&[l, d], &mut rng).requires_grad();
            let w = Tensor::<f64>::randn(&[d, n * h], &mut rng).mul_scalar(0.7).requires_grad();
            let lam = if per_unit { Tensor::rand_uniform(&[h], 0.2, 0.9, &mut rng) } else { Tensor::full(&[1], 0.6) }.requires_grad();
            let rc = Tensor::<f64>::randn(&[l, h], &mut rng);
            let rz = Tensor::<f64>::randn(&[l, h], &mut rng);
            let p = x.matmul(&w);
            let (bc, bz) = closed_form(&spec, &p, &lam).unwrap();
            let brute_obj = bc.mul(&rc).sum().add(&bz.mul(&rz).sum());
            let g_brute = grad(&[&brute_obj], &[&x, &w, &lam], None, GradOptions::default()).unwrap();
            for fused in [false, true] {
                let p = x.matmul(&w).reshape(&[1, l, n * h]);
                let y = if fused { scan_fused(&spec, &p, &lam, None) } else { scan_composed(&spec, &p, &lam, None) }.unwrap();
                let (c, z) = split_cz(&spec, &y);
                let what = format!("{spec:?} per_unit={per_unit} fused={fused}");
                assert!(max_abs_diff(c.data(), bc.data()) < 1e-12, "c_n differs: {what}");
                assert!(max_abs_diff(z.data(), bz.data()) < 1e-12, "z_n differs: {what}");
                let obj = c.mul(&rc).sum().add(&z.mul(&rz).sum());
                let g = grad(&[&obj], &[&x, &w, &lam], None, GradOptions::default()).unwrap();
                for (i, (a, b)) in g.iter().zip(&g_brute).enumerate() {
                    let err = max_abs_diff(a.data(), b.data());
                    assert!(err < 1e-11, "gradient {i} differs by {err}: {what}");
                }
            }
        }
    }
}

/// λ = 0 is an ordinary convolution over consecutive n-grams: un-normalised,
/// `c_n[t] = z_n[t] = W⁽¹⁾x_{t−n+1} ∘ … ∘ W⁽ⁿ⁾x_t` (words before the start are zero vectors;
/// `∘` = `+` or `⊙`). The additive case is checked against chi's `conv1d` with left padding.
#[test]
fn lambda_zero_is_an_ordinary_cnn() {
    let mut rng = Rng::new(5);
    for n in 1..=3 {
        for map in MAPS {
            let spec = ScanSpec { order: n, hidden: 4, map, aggregation: Aggregation::Unnormalized };
            let (l, d, h) = (7, 3, 4);
            let x = Tensor::<f64>::randn(&[l, d], &mut rng);
            let w = Tensor::<f64>::randn(&[d, n * h], &mut rng);
            let p = x.matmul(&w);
            let y = scan_fused(&spec, &p.reshape(&[1, l, n * h]), &Tensor::zeros(&[1]), None).unwrap();
            let (c, z) = split_cz(&spec, &y);
            assert!(max_abs_diff(c.data(), z.data()) < 1e-14, "c_n = z_n at λ = 0");
            let expect: Vec<f64> = match map {
                FeatureMap::Additive => {
                    // conv1d weight [h, d, n]: tap k (0 = oldest word) is W⁽ᵏ⁺¹⁾ᵀ.
                    let mut wc = vec![0.0; h * d * n];
                    for o in 0..h {
                        for i in 0..d {
                            for k in 0..n {
                                wc[(o * d + i) * n + k] = w.data()[i * n * h + k * h + o];
                            }
                        }
                    }
                    let xin = x.t().reshape(&[1, d, l]).pad_axis(2, n - 1, 0);
                    let conv = xin.conv1d(&Tensor::from_vec(wc, &[h, d, n]), None, 1, 0);
                    conv.reshape(&[h, l]).t().to_vec()
                }
                FeatureMap::Multiplicative => (0..l)
                    .flat_map(|t| {
                        let p = p.data().to_vec();
                        (0..h).map(move |j| {
                            if t + 1 < n {
                                return 0.0;
                            }
                            (0..n).map(|k| p[(t + 1 - n + k) * n * h + k * h + j]).product::<f64>()
                        })
                    })
                    .collect(),
            };
            assert!(max_abs_diff(c.data(), &expect) < 1e-12, "n={n} {map:?}: λ = 0 is not the consecutive n-gram CNN");
        }
    }
}

/// Theorem 1: for the multiplicative un-normalised scan, `c_j[t][i] = K_j(x_{1:t}, w_{i,j})`, the
/// n-gram string kernel between the prefix and the "fuzzy string" of row i of `W⁽¹⁾ … W⁽ʲ⁾`
/// (computed here with explicit `d^j` tensor products).
#[test]
fn theorem1_states_are_string_kernels() {
    let mut rng = Rng::new(21);
    let (l, d, h, n, lam) = (6, 3, 2, 3, 0.7);
    let spec = ScanSpec { order: n, hidden: h, map: FeatureMap::Multiplicative, aggregation: Aggregation::Unnormalized };
    let x = Tensor::<f64>::randn(&[l, d], &mut rng);
    let w = Tensor::<f64>::randn(&[d, n * h], &mut rng);
    let y = scan_fused(&spec, &x.matmul(&w).reshape(&[1, l, n * h]), &Tensor::full(&[1], lam), None).unwrap();
    let yd = y.data();
    let xd = x.data();
    for t in 0..l {
        for j in 1..=n {
            for i in 0..h {
                // w_{i,j}: the sequence of j vectors w_i⁽¹⁾ … w_i⁽ʲ⁾ (columns of W).
                let fuzzy: Vec<f64> = (0..j).flat_map(|k| (0..d).map(move |r| (k, r))).map(|(k, r)| w.data()[r * n * h + k * h + i]).collect();
                let kern = string_kernel(&xd[..(t + 1) * d], &fuzzy, d, j, lam);
                let c = yd[t * (n + 1) * h + (j - 1) * h + i];
                assert!((kern - c).abs() < 1e-12 * (1.0 + kern.abs()), "t={t} j={j} i={i}: kernel {kern} vs state {c}");
            }
        }
    }
    // φ_j of the fuzzy string is the plain tensor product (one tuple, λ⁰).
    let phi = string_kernel_features(&[1.0, 2.0, 3.0, 4.0], 2, 2, lam);
    assert_eq!(phi, vec![3.0, 4.0, 6.0, 8.0]);
}

/// The (1 − λ) normalisation is asymptotically Table 2.1's division by `C_n[t]`: on a constant
/// input the gap shrinks geometrically with t (it is large at the first steps).
#[test]
fn normalisation_is_asymptotically_division_by_c() {
    let (l, n, h, lam) = (60, 2, 2, 0.6);
    for map in MAPS {
        let spec = ScanSpec { order: n, hidden: h, map, aggregation: Aggregation::Normalized };
        let p: Vec<f64> = (0..l).flat_map(|_| [0.8, -0.5, 1.2, 0.9]).collect();
        let y = scan_fused(&spec, &Tensor::from_vec(p.clone(), &[1, l, n * h]), &Tensor::full(&[1], lam), None).unwrap();
        let (c, _) = split_cz(&spec, &y);
        let tbl = table21_normalized(map, n, h, &p, lam);
        let gap = |t: usize| (0..h).map(|j| (c.data()[t * h + j] - tbl[t * h + j]).abs()).fold(0.0, f64::max);
        assert!(gap(1) > 1e-2, "{map:?}: the finite-t difference should be visible, got {}", gap(1));
        assert!(gap(l - 1) < 1e-9, "{map:?}: no convergence, gap {}", gap(l - 1));
        assert!(gap(20) < gap(5), "{map:?}: gap should shrink");
    }
}

/// Fused = composed, with per-step λ and ragged masks, in f64 (1e-12) and f32 (1e-5), for values
/// and gradients with respect to the projections and λ.
#[test]
fn fused_equals_composed_per_step_decay_and_masks() {
    let mut rng = Rng::new(3);
    for spec in specs() {
        let (b, t, n, h) = (3, 5, spec.order, spec.hidden);
        let p64 = Tensor::<f64>::randn(&[b, t, n * h], &mut rng);
        let lam64 = Tensor::<f64>::rand_uniform(&[b, t, h], 0.05, 0.95, &mut rng);
        let r64 = Tensor::<f64>::randn(&[b, t, (n + 1) * h], &mut rng);
        let mask: Vec<bool> = (0..b * t).map(|i| i % t < [5, 3, 4][i / t] && !(i == 6)).collect();
        let run64 = |fused: bool| {
            let (p, lam) = (p64.detach().requires_grad(), lam64.detach().requires_grad());
            let y = if fused { scan_fused(&spec, &p, &lam, Some(&mask)) } else { scan_composed(&spec, &p, &lam, Some(&mask)) }.unwrap();
            let g = grad(&[&y.mul(&r64).sum()], &[&p, &lam], None, GradOptions::default()).unwrap();
            (y.to_vec(), g[0].to_vec(), g[1].to_vec())
        };
        let (a, b64) = (run64(true), run64(false));
        assert!(max_abs_diff(&a.0, &b64.0) < 1e-12 && max_abs_diff(&a.1, &b64.1) < 1e-12 && max_abs_diff(&a.2, &b64.2) < 1e-12, "f64 {spec:?}");
        let (p32, lam32, r32) = (p64.to_f32(), lam64.to_f32(), r64.to_f32());
        let run32 = |fused: bool| {
            let (p, lam) = (p32.detach().requires_grad(), lam32.detach().requires_grad());
            let y = if fused { scan_fused(&spec, &p, &lam, Some(&mask)) } else { scan_composed(&spec, &p, &lam, Some(&mask)) }.unwrap();
            let g = grad(&[&y.mul(&r32).sum()], &[&p, &lam], None, GradOptions::default()).unwrap();
            let f = |v: &Tensor<f32>| v.to_f64().to_vec();
            (f(&y), f(&g[0]), f(&g[1]))
        };
        let (a, c) = (run32(true), run32(false));
        let rel = |u: &[f64], v: &[f64]| max_abs_diff(u, v) / (1.0 + v.iter().fold(0.0f64, |m, x| m.max(x.abs())));
        assert!(rel(&a.0, &c.0) < 1e-5 && rel(&a.1, &c.1) < 1e-5 && rel(&a.2, &c.2) < 1e-5, "f32 {spec:?}");
    }
}

/// A masked batch row equals the same sequence run alone, truncated to its length.
#[test]
fn ragged_rows_match_unpadded_runs() {
    let mut rng = Rng::new(8);
    let spec = ScanSpec { order: 2, hidden: 3, map: FeatureMap::Multiplicative, aggregation: Aggregation::Normalized };
    let (b, t) = (2, 6);
    let p = Tensor::<f64>::randn(&[b, t, 6], &mut rng);
    let lens = [6, 4];
    let mask: Vec<bool> = (0..b * t).map(|i| i % t < lens[i / t]).collect();
    let lam = Tensor::full(&[1], 0.4);
    let y = scan_fused(&spec, &p, &lam, Some(&mask)).unwrap();
    let alone = scan_fused(&spec, &p.narrow(0, 1, 1).narrow(1, 0, 4), &lam, None).unwrap();
    let row = y.narrow(0, 1, 1).narrow(1, 0, 4);
    assert!(max_abs_diff(row.data(), alone.data()) < 1e-15);
    // After the end, the states c_k are carried unchanged.
    let w = 3 * 3;
    let yd = y.data();
    for s in 4..6 {
        for k in 0..6 {
            assert_eq!(yd[(t + s) * w + k], yd[(t + 3) * w + k]);
        }
    }
}

/// Finite differences: the fused scan to first and second order (its backward is recorded under
/// create_graph), the composed scan to second order, every variant, per-step λ, with a mask.
#[test]
fn scan_gradcheck_first_and_second_order() {
    let mut rng = Rng::new(17);
    for spec in specs() {
        let (b, t, n, h) = (2, 4, spec.order, spec.hidden);
        let p = Tensor::<f64>::randn(&[b, t, n * h], &mut rng).mul_scalar(0.8);
        let lam = Tensor::<f64>::rand_uniform(&[b, t, h], 0.1, 0.9, &mut rng);
        let lam1 = Tensor::<f64>::full(&[1], 0.55);
        let mask = vec![true, true, true, true, true, false, true, false];
        let opts = GradcheckOptions::default();
        let f = |xs: &[Tensor<f64>]| scan_fused(&spec, &xs[0], &xs[1], Some(&mask)).unwrap();
        gradcheck(f, &[p.clone(), lam.clone()], &opts).unwrap_or_else(|r| panic!("fused order 1 {spec:?}: {r}"));
        gradcheck(f, &[p.clone(), lam1.clone()], &opts).unwrap_or_else(|r| panic!("fused order 1 scalar λ {spec:?}: {r}"));
        gradgradcheck(f, &[p.clone(), lam.clone()], &opts).unwrap_or_else(|r| panic!("fused order 2 {spec:?}: {r}"));
        let g = |xs: &[Tensor<f64>]| scan_composed(&spec, &xs[0], &xs[1], Some(&mask)).unwrap();
        gradgradcheck(g, &[p.clone(), lam1.clone()], &opts).unwrap_or_else(|r| panic!("composed order 2 {spec:?}: {r}"));
    }
}

/// Bad shapes are reported as errors naming the op, never panics.
#[test]
fn shape_errors_are_typed() {
    let spec = ScanSpec { order: 2, hidden: 3, map: FeatureMap::Additive, aggregation: Aggregation::Normalized };
    let p = Tensor::<f64>::zeros(&[1, 4, 5]);
    let e = scan_fused(&spec, &p, &Tensor::full(&[1], 0.5), None).unwrap_err();
    assert!(e.to_string().contains("rcnn_scan"), "{e}");
    let p = Tensor::<f64>::zeros(&[1, 4, 6]);
    assert!(scan_fused(&spec, &p, &Tensor::zeros(&[2]), None).is_err());
    assert!(scan_composed(&spec, &p, &Tensor::full(&[1], 0.5), Some(&[true])).is_err());
}
