//! The rationale model's gradients against exact oracles: REINFORCE against the gradient of the
//! expectation over all 2^L masks, the encoder's pathwise gradient against finite differences.

use crate::common;
use chi_autodiff::{Rng, Tensor};
use chi_rcnn::deps::ParamStore;
use chi_rcnn::oracle::normal_upper_quantile;
use chi_rcnn::{
    check_estimator, exact_expectation, reinforce_variance, Decay, EnumerableDistribution, EstimatorCheckOptions, FeatureMap, GeneratorKind, MovingAverage,
    RationaleConfig, RationaleDistribution, RationaleModel, RcnnConfig,
};

fn model(kind: GeneratorKind, seed: u64) -> (ParamStore<f64>, RationaleModel<f64>) {
    let mut rng = Rng::new(seed);
    let mut rcnn = RcnnConfig::new(3, 3);
    rcnn.map = FeatureMap::Additive;
    rcnn.decay = Decay::AdaptiveX;
    let cfg = RationaleConfig { rcnn, outputs: 2, generator: kind, lambda1: 0.05, lambda2: 0.1, encoder_depth: 1 };
    let mut store = ParamStore::new();
    let m = RationaleModel::new(&mut store, cfg, &mut rng).unwrap();
    // Spread the generator's selection probabilities away from 1/2 and make the cost vary.
    for p in store.params() {
        p.update(|v| v.iter_mut().for_each(|x| *x *= 2.0));
    }
    (store, m)
}

fn gen_params(store: &ParamStore<f64>) -> Vec<Tensor<f64>> {
    store.params().iter().filter(|p| p.group() == "generator").map(|p| p.get()).collect()
}

/// The support is complete: probabilities of all 2^L masks sum to one, for both generators.
#[test]
fn enumerated_probabilities_sum_to_one() {
    for kind in [GeneratorKind::Independent, GeneratorKind::Dependent { state: 2 }] {
        let (_s, m) = model(kind, 1);
        let x = Tensor::randn(&[1, 5, 3], &mut Rng::new(2));
        let d = RationaleDistribution::new(&m, &x).unwrap();
        let total: f64 = d.log_prob(&d.support().unwrap()).unwrap().exp().sum().item();
        assert!((total - 1.0).abs() < 1e-12, "{kind:?}: Σ p = {total}");
    }
    let (_s, m) = model(GeneratorKind::Independent, 1);
    assert!(RationaleDistribution::new(&m, &Tensor::zeros(&[1, 13, 3])).is_err());
}

/// REINFORCE is unbiased: for L = 6 (64 masks), the mean of 3000 seeded REINFORCE estimates of
/// ∇_gen E[cost] agrees with the exact gradient by enumeration, coordinate by coordinate.
///
/// Test: z = (mean − exact)/(s/√N) per coordinate, rejected when |z| > Φ⁻¹(1 − α/(2P)) with
/// α = 10⁻³ (Bonferroni over the P coordinates; about 4.4 for P ≈ 60). A correct estimator fails
/// with probability ≤ 0.1 % (up to the normal approximation of a 3000-draw mean); the seeds are
/// fixed, so the outcome is deterministic. A wrong estimator (the score without the cost) is
/// rejected by the same test.
#[test]
fn reinforce_matches_exact_gradient_z_test() {
    for kind in [GeneratorKind::Independent, GeneratorKind::Dependent { state: 2 }] {
        let (store, m) = model(kind, 3);
        let mut rng = Rng::new(4);
        let x = Tensor::randn(&[1, 6, 3], &mut rng);
        let y = Tensor::from_vec(vec![0.9, 0.1], &[1, 2]);
        let d = RationaleDistribution::new(&m, &x).unwrap();
        let params = gen_params(&store);
        let cost = |zs: &[Vec<bool>]| d.costs(&y, zs);
        let opts = EstimatorCheckOptions { samples: 3000, seed: 77, alpha: 1e-3 };
        let mut reinforce = |_: &Vec<bool>, f: f64, lp: &Tensor<f64>| lp.mul_scalar(f);
        let r = check_estimator(&d, &params, &cost, &mut reinforce, &opts).unwrap();
        let p = r.exact.len();
        assert!((r.threshold - normal_upper_quantile(1e-3 / (2.0 * p as f64))).abs() < 1e-12);
        assert!(r.exact.iter().any(|g| g.abs() > 1e-3), "the exact gradient should not vanish");
        assert!(r.passed, "{kind:?}: max |z| = {:.2} > {:.2}", r.max_abs_z, r.threshold);
        // Power: dropping the cost from the estimator (E[∇log p] = 0) must be caught.
        let mut wrong = |_: &Vec<bool>, _f: f64, lp: &Tensor<f64>| lp.mul_scalar(1.0);
        let w = check_estimator(&d, &params, &cost, &mut wrong, &opts).unwrap();
        assert!(!w.passed, "{kind:?}: a biased estimator passed (max |z| = {:.2})", w.max_abs_z);
        // A moving-average baseline keeps it unbiased.
        let mut ma = MovingAverage::new(0.9);
        let mut based = |_: &Vec<bool>, f: f64, lp: &Tensor<f64>| {
            let s = lp.mul_scalar(f - ma.get());
            ma.update(f);
            s
        };
        let b = check_estimator(&d, &params, &cost, &mut based, &opts).unwrap();
        assert!(b.passed, "{kind:?} with baseline: max |z| = {:.2}", b.max_abs_z);
    }
}

/// The exact expectation equals a plain sum of p(z)·cost(z), and its gradient matches central
/// differences of that sum.
#[test]
fn exact_expectation_matches_finite_differences() {
    let (store, m) = model(GeneratorKind::Dependent { state: 2 }, 5);
    let x = Tensor::randn(&[1, 4, 3], &mut Rng::new(6));
    let y = Tensor::from_vec(vec![0.3, 0.7], &[1, 2]);
    let params = gen_params(&store);
    let d = RationaleDistribution::new(&m, &x).unwrap();
    let (value, g) = exact_expectation(&d, &params, &|zs| d.costs(&y, zs)).unwrap();
    let expect = |d: &RationaleDistribution| -> f64 {
        let sup = d.support().unwrap();
        let c = d.costs(&y, &sup).unwrap();
        let p = d.log_prob(&sup).unwrap().exp().to_vec();
        p.iter().zip(&c).map(|(a, b)| a * b).sum()
    };
    assert!((value - expect(&d)).abs() < 1e-12);
    // Central differences on a few coordinates of the first generator parameter.
    let gp = store.params().iter().find(|p| p.group() == "generator").unwrap().clone();
    for idx in [0, 1, 4] {
        let eps = 1e-6;
        let orig = gp.to_vec();
        let mut v = orig.clone();
        v[idx] += eps;
        gp.set_values(v.clone());
        let up = expect(&RationaleDistribution::new(&m, &x).unwrap());
        v[idx] -= 2.0 * eps;
        gp.set_values(v);
        let down = expect(&RationaleDistribution::new(&m, &x).unwrap());
        gp.set_values(orig);
        let num = (up - down) / (2.0 * eps);
        assert!((num - g[idx]).abs() < 1e-5 + 1e-3 * num.abs(), "coordinate {idx}: exact {} vs numeric {num}", g[idx]);
    }
}

/// The encoder's gradient of the cost at a fixed mask (the pathwise half of the doubly
/// stochastic gradient) against finite differences, with ragged lengths.
#[test]
fn encoder_cost_gradcheck_with_fixed_mask() {
    let (store, m) = model(GeneratorKind::Independent, 7);
    for p in store.params() {
        p.set_frozen(p.group() != "encoder");
    }
    let x = Tensor::randn(&[2, 4, 3], &mut Rng::new(8));
    let y = Tensor::from_vec(vec![0.2, 0.9, 0.6, 0.4], &[2, 2]);
    let z = vec![true, false, true, true, false, true, true, false];
    common::check_store(&store, &[x], |xs| m.cost(&xs[0], Some(&[4, 3]), &y, &z).unwrap().0, 1).unwrap_or_else(|r| panic!("{r}"));
}

/// The surrogate's generator gradient is the REINFORCE estimate for its own sample, its encoder
/// gradient the pathwise gradient; the selection statistics count real words only.
#[test]
fn surrogate_step_and_baseline() {
    let (store, m) = model(GeneratorKind::Dependent { state: 2 }, 9);
    let x = Tensor::randn(&[2, 5, 3], &mut Rng::new(10));
    let y = Tensor::from_vec(vec![0.2, 0.9, 0.6, 0.4], &[2, 2]);
    let mut base = MovingAverage::new(0.5);
    let mut rng = Rng::new(11);
    let s = m.surrogate(&x, Some(&[5, 3]), &y, 2, &mut rng, Some(&mut base)).unwrap();
    assert!(s.selection_rate >= 0.0 && s.selection_rate <= 1.0);
    assert!(!s.z[8] && !s.z[9], "padding is never selected");
    assert_eq!(base.value, Some(s.mean_cost));
    s.surrogate.backward();
    for p in store.params() {
        assert!(p.grad().is_some_and(|g| g.all_finite()), "{} has no gradient", p.name());
    }
}

/// Variance of the generator gradient estimate with and without a moving-average baseline
/// (measured against the exact gradient; both runs stay consistent with unbiasedness).
#[test]
fn baseline_variance_is_reported() {
    let (store, m) = model(GeneratorKind::Independent, 12);
    let x = Tensor::randn(&[1, 6, 3], &mut Rng::new(13));
    let y = Tensor::from_vec(vec![0.9, 0.8], &[1, 2]);
    let opts = EstimatorCheckOptions { samples: 2000, seed: 5, alpha: 1e-3 };
    let v = reinforce_variance(&m, &gen_params(&store), &x, &y, 0.9, &opts).unwrap();
    eprintln!("REINFORCE total variance: without baseline {:.4e}, with moving-average baseline {:.4e} (E[cost] = {:.4})", v.without_baseline, v.with_baseline, v.expected_cost);
    assert!(v.without_baseline.is_finite() && v.with_baseline.is_finite() && v.without_baseline > 0.0);
    let thr = normal_upper_quantile(1e-3 / (2.0 * gen_params(&store).iter().map(|t| t.numel()).sum::<usize>() as f64));
    assert!(v.max_abs_z.0 <= thr && v.max_abs_z.1 <= thr, "{:?} vs {thr}", v.max_abs_z);
}

#[test]
fn normal_quantiles() {
    assert!((normal_upper_quantile(0.025) - 1.959964).abs() < 1e-5);
    assert!((normal_upper_quantile(0.5)).abs() < 1e-6);
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let (_s, m) = model(GeneratorKind::Dependent { state: 2 }, 1);
    let mut rng = Rng::new(0);
    let x = Tensor::<f64>::zeros(&[1, 4, 5]);
    assert!(m.generator.sample(&x, None, &mut rng).is_err());
    assert!(m.encoder.forward(&x, None, None).is_err());
    let x = Tensor::<f64>::zeros(&[1, 4, 3]);
    assert!(m.generator.log_prob(&x, None, &[true]).is_err());
    assert!(m.encoder.forward(&x, Some(&[5]), None).is_err());
    let y = Tensor::<f64>::zeros(&[1, 3]);
    assert!(m.cost(&x, None, &y, &[true; 4]).is_err());
}

/// The expected regulariser of an independent generator that keeps every word with the same
/// probability p, by enumerating all 2^L masks: E[Ω] = λ₁pL + 2λ₂p(1−p)(L−1). It is concave in p
/// with its maximum at p* = 1/2 + λ₁/(4λ₂), so with the thesis's λ₂ = 2λ₁ (p* = 0.625) the
/// regulariser alone drives a generator that starts above p* towards keeping every word and one
/// that starts below it towards keeping none; for λ₂ < λ₁/2 it increases with p everywhere.
#[test]
fn expected_regulariser_is_concave_in_the_keep_probability() {
    let (_s, mut m) = model(GeneratorKind::Independent, 1);
    let l = 8usize;
    let expected = |m: &RationaleModel<f64>, p: f64| -> f64 {
        (0..1u32 << l)
            .map(|bits| {
                let z: Vec<bool> = (0..l).map(|t| bits >> t & 1 == 1).collect();
                let k = z.iter().filter(|&&v| v).count() as i32;
                p.powi(k) * (1.0 - p).powi(l as i32 - k) * m.regulariser(&z, l)
            })
            .sum()
    };
    let (l1, l2) = (m.cfg.lambda1, m.cfg.lambda2);
    assert!((l2 - 2.0 * l1).abs() < 1e-15, "the helper model has λ₂ = 2λ₁");
    for p in [0.1, 0.5, 0.625, 0.9] {
        let closed = l1 * p * l as f64 + 2.0 * l2 * p * (1.0 - p) * (l - 1) as f64;
        assert!((expected(&m, p) - closed).abs() < 1e-12, "p = {p}: {} vs {closed}", expected(&m, p));
    }
    assert!(expected(&m, 0.95) < expected(&m, 0.9), "above p* = 0.625 keeping more words lowers E[Ω]");
    assert!(expected(&m, 0.5) < expected(&m, 0.6), "below p* keeping more words raises E[Ω]");
    m.cfg.lambda2 = 0.4 * l1;
    let curve: Vec<f64> = (0..=20).map(|i| expected(&m, i as f64 / 20.0)).collect();
    assert!(curve.windows(2).all(|w| w[1] > w[0]), "λ₂ = 0.4λ₁: E[Ω] increases with p: {curve:?}");
}

/// The leave-one-out baseline (2 draws per row, each scored against the other's cost) keeps the
/// generator gradient unbiased — the mean of 3000 estimates agrees with the exact gradient by
/// enumeration under the same Bonferroni z-test as above — and has a smaller total variance than
/// the same two draws with no baseline. Fewer than 2 draws is an error.
#[test]
fn leave_one_out_baseline_is_unbiased_and_reduces_variance() {
    let (store, m) = model(GeneratorKind::Independent, 3);
    let x = Tensor::randn(&[1, 6, 3], &mut Rng::new(4));
    let y = Tensor::from_vec(vec![0.9, 0.1], &[1, 2]);
    let params = gen_params(&store);
    let d = RationaleDistribution::new(&m, &x).unwrap();
    let (_, exact) = exact_expectation(&d, &params, &|zs| d.costs(&y, zs)).unwrap();
    let p = exact.len();
    let n = 3000;
    let mut rng = Rng::new(21);
    let mut estimates = |loo: bool| -> (Vec<f64>, Vec<f64>) {
        let (mut sum, mut sq) = (vec![0.0; p], vec![0.0; p]);
        for _ in 0..n {
            store.zero_grad();
            let s = if loo { m.surrogate_leave_one_out(&x, None, &y, 2, &mut rng) } else { m.surrogate(&x, None, &y, 2, &mut rng, None) };
            s.unwrap().surrogate.backward();
            let g: Vec<f64> = store.params().iter().filter(|q| q.group() == "generator").flat_map(|q| q.grad().map_or(vec![0.0; q.numel()], |t| t.to_vec())).collect();
            assert_eq!(g.len(), p);
            for j in 0..p {
                sum[j] += g[j];
                sq[j] += g[j] * g[j];
            }
        }
        let mean: Vec<f64> = sum.iter().map(|s| s / n as f64).collect();
        let var: Vec<f64> = (0..p).map(|j| (sq[j] - n as f64 * mean[j] * mean[j]) / (n - 1) as f64).collect();
        (mean, var)
    };
    let (mean, var) = estimates(true);
    let thr = normal_upper_quantile(1e-3 / (2.0 * p as f64));
    let max_z = (0..p).map(|j| (mean[j] - exact[j]).abs() / (var[j] / n as f64).sqrt().max(1e-300)).fold(0.0, f64::max);
    assert!(exact.iter().any(|g| g.abs() > 1e-3), "the exact gradient should not vanish");
    assert!(max_z <= thr, "leave-one-out: max |z| = {max_z:.2} > {thr:.2}");
    let (_, var_plain) = estimates(false);
    let (v_loo, v_plain) = (var.iter().sum::<f64>(), var_plain.iter().sum::<f64>());
    assert!(v_loo < v_plain, "total variance with the leave-one-out baseline {v_loo:.4e} vs none {v_plain:.4e}");
    assert!(m.surrogate_leave_one_out(&x, None, &y, 1, &mut rng).is_err());
}
