//! Linear-chain CRF against brute-force enumeration, the explicit forward–backward marginals,
//! finite differences, and the composed reference.

#![allow(clippy::needless_range_loop)] // index loops mirror the brute-force definitions

use chi_autodiff::{grad, gradcheck, gradgradcheck, GradOptions, GradcheckOptions, Rng, Tensor};
use chi_text::crf::{log_partition, log_partition_composed, marginals, neg_log_likelihood, sequence_score, viterbi, CrfScores};
use chi_text::TextError;

const LENGTHS: [usize; 3] = [4, 2, 3];

fn scores(seed: u64, b: usize, t: usize, k: usize) -> CrfScores<f64> {
    let mut rng = Rng::new(seed);
    CrfScores {
        emissions: Tensor::randn(&[b, t, k], &mut rng),
        transitions: Tensor::randn(&[k, k], &mut rng),
        start: Tensor::randn(&[k], &mut rng),
        end: Tensor::randn(&[k], &mut rng),
    }
}

/// Every tag sequence of length `l` over `k` tags.
fn all_paths(l: usize, k: usize) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    for _ in 0..l {
        out = out.into_iter().flat_map(|p| (0..k).map(move |j| [p.clone(), vec![j]].concat())).collect();
    }
    out
}

/// `s(y)` of one row computed directly from the definition.
fn path_score(s: &CrfScores<f64>, row: usize, y: &[usize]) -> f64 {
    let (t, k) = (s.emissions.dim(1), s.emissions.dim(2));
    let e = s.emissions.data();
    let a = s.transitions.data();
    let mut v = s.start.data()[y[0]] + s.end.data()[*y.last().unwrap()];
    for (i, &yi) in y.iter().enumerate() {
        v += e[(row * t + i) * k + yi];
        if i > 0 {
            v += a[y[i - 1] * k + yi];
        }
    }
    v
}

fn brute_log_z(s: &CrfScores<f64>, row: usize, l: usize) -> f64 {
    let k = s.emissions.dim(2);
    let v: Vec<f64> = all_paths(l, k).iter().map(|y| path_score(s, row, y)).collect();
    let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    m + v.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

#[test]
fn log_partition_equals_brute_force_enumeration() {
    let s = scores(1, 3, 4, 3);
    let fused = log_partition(&s, &LENGTHS).unwrap();
    let composed = log_partition_composed(&s, &LENGTHS).unwrap();
    let fb = marginals(&s, &LENGTHS).unwrap();
    for (row, &l) in LENGTHS.iter().enumerate() {
        let want = brute_log_z(&s, row, l);
        assert!((fused.data()[row] - want).abs() < 1e-12, "fused row {row}: {} vs {want}", fused.data()[row]);
        assert!((composed.data()[row] - want).abs() < 1e-12, "composed row {row}");
        assert!((fb.log_z[row] - want).abs() < 1e-12, "forward-backward row {row}");
    }
}

#[test]
fn marginals_equal_brute_force_posteriors() {
    let s = scores(2, 3, 4, 3);
    let k = 3;
    let fb = marginals(&s, &LENGTHS).unwrap();
    for (row, &l) in LENGTHS.iter().enumerate() {
        let lz = brute_log_z(&s, row, l);
        let mut unary = vec![0.0; l * k];
        let mut pair = vec![0.0; l * k * k];
        for y in all_paths(l, k) {
            let p = (path_score(&s, row, &y) - lz).exp();
            for i in 0..l {
                unary[i * k + y[i]] += p;
                if i > 0 {
                    pair[(i * k + y[i - 1]) * k + y[i]] += p;
                }
            }
        }
        for i in 0..4 {
            for j in 0..k {
                let got = fb.unary[(row * 4 + i) * k + j];
                let want = if i < l { unary[i * k + j] } else { 0.0 };
                assert!((got - want).abs() < 1e-12, "unary row {row} t {i} tag {j}: {got} vs {want}");
                for q in 0..k {
                    let got = fb.pairwise[((row * 4 + i) * k + j) * k + q];
                    let want = if i < l && i > 0 { pair[(i * k + j) * k + q] } else { 0.0 };
                    assert!((got - want).abs() < 1e-12, "pairwise row {row} t {i}");
                }
            }
        }
    }
}

/// ∇ log Z = marginals, for both implementations, to 1e-10.
#[test]
fn gradient_of_log_partition_is_the_marginals() {
    let s = scores(3, 3, 4, 3);
    let (b, t, k) = (3, 4, 3);
    let fb = marginals(&s, &LENGTHS).unwrap();
    for fused in [true, false] {
        let leaves: Vec<Tensor<f64>> =
            [&s.emissions, &s.transitions, &s.start, &s.end].iter().map(|x| x.detach().requires_grad()).collect();
        let s2 = CrfScores { emissions: leaves[0].clone(), transitions: leaves[1].clone(), start: leaves[2].clone(), end: leaves[3].clone() };
        let lz = if fused { log_partition(&s2, &LENGTHS) } else { log_partition_composed(&s2, &LENGTHS) }.unwrap().sum();
        let refs: Vec<&Tensor<f64>> = leaves.iter().collect();
        let g = grad(&[&lz], &refs, None, GradOptions::default()).unwrap();
        for (a, m) in g[0].data().iter().zip(&fb.unary) {
            assert!((a - m).abs() < 1e-10, "fused={fused}: ∂logZ/∂E {a} vs marginal {m}");
        }
        let mut trans = vec![0.0; k * k];
        let mut start = vec![0.0; k];
        let mut end = vec![0.0; k];
        for (row, &l) in LENGTHS.iter().enumerate() {
            for i in 0..t {
                for p in 0..k * k {
                    trans[p] += fb.pairwise[(row * t + i) * k * k + p];
                }
            }
            for j in 0..k {
                start[j] += fb.unary[(row * t) * k + j];
                end[j] += fb.unary[(row * t + l - 1) * k + j];
            }
        }
        for (got, want) in [(&g[1], trans), (&g[2], start), (&g[3], end)] {
            for (a, m) in got.data().iter().zip(&want) {
                assert!((a - m).abs() < 1e-10, "fused={fused}: {a} vs {m}");
            }
        }
        assert_eq!(g[0].shape(), [b, t, k]);
    }
}

#[test]
fn viterbi_equals_brute_force_argmax() {
    for seed in 0..20 {
        let s = scores(100 + seed, 3, 4, 3);
        let v = viterbi(&s, &LENGTHS).unwrap();
        for (row, &l) in LENGTHS.iter().enumerate() {
            let best = all_paths(l, 3)
                .into_iter()
                .map(|y| (path_score(&s, row, &y), y))
                .fold((f64::NEG_INFINITY, vec![]), |a, b| if b.0 > a.0 { b } else { a });
            assert_eq!(v[row].0, best.1, "seed {seed} row {row}");
            assert!((v[row].1 - best.0).abs() < 1e-12);
        }
    }
}

fn tags() -> Vec<Vec<usize>> {
    vec![vec![0, 2, 1, 1], vec![2, 2, 0, 0], vec![1, 0, 2, 0]]
}

#[test]
fn fused_equals_composed_values_and_gradients() {
    let s = scores(4, 3, 4, 3);
    let run = |fused: bool| {
        let leaves: Vec<Tensor<f64>> =
            [&s.emissions, &s.transitions, &s.start, &s.end].iter().map(|x| x.detach().requires_grad()).collect();
        let s2 = CrfScores { emissions: leaves[0].clone(), transitions: leaves[1].clone(), start: leaves[2].clone(), end: leaves[3].clone() };
        let l = neg_log_likelihood(&s2, &tags(), &LENGTHS, fused).unwrap();
        let refs: Vec<&Tensor<f64>> = leaves.iter().collect();
        let g = grad(&[&l], &refs, None, GradOptions::default()).unwrap();
        (l.item(), g)
    };
    let (a, ga) = run(true);
    let (b, gb) = run(false);
    assert!((a - b).abs() < 1e-12);
    for (x, y) in ga.iter().zip(&gb) {
        for (p, q) in x.data().iter().zip(y.data()) {
            assert!((p - q).abs() < 1e-12, "fused {p} vs composed {q}");
        }
    }
    // f32 too (the training precision): fused and composed agree to float precision.
    let s32 = CrfScores {
        emissions: s.emissions.to_f32(),
        transitions: s.transitions.to_f32(),
        start: s.start.to_f32(),
        end: s.end.to_f32(),
    };
    let f = log_partition(&s32, &LENGTHS).unwrap();
    let c = log_partition_composed(&s32, &LENGTHS).unwrap();
    for (p, q) in f.data().iter().zip(c.data()) {
        assert!((p - q).abs() < 1e-5);
    }
}

fn nll_fn(fused: bool) -> impl Fn(&[Tensor<f64>]) -> Tensor<f64> {
    move |xs: &[Tensor<f64>]| {
        let s = CrfScores { emissions: xs[0].clone(), transitions: xs[1].clone(), start: xs[2].clone(), end: xs[3].clone() };
        neg_log_likelihood(&s, &tags(), &LENGTHS, fused).unwrap()
    }
}

#[test]
fn gradcheck_nll_first_and_second_order() {
    let s = scores(5, 3, 4, 3);
    let inputs = vec![s.emissions, s.transitions, s.start, s.end];
    let opts = GradcheckOptions { eps: 1e-6, atol: 1e-5, rtol: 1e-3, ..Default::default() };
    for fused in [true, false] {
        gradcheck(nll_fn(fused), &inputs, &opts).unwrap_or_else(|r| panic!("fused={fused} first order: {r:?}"));
        gradgradcheck(nll_fn(fused), &inputs, &opts).unwrap_or_else(|r| panic!("fused={fused} second order: {r:?}"));
    }
}

/// The fused op's create-graph backward (tensor ops) and its fast backward (loops) agree, and the
/// second derivatives of the fused and composed versions agree.
#[test]
fn second_derivatives_fused_equal_composed() {
    let s = scores(6, 3, 4, 3);
    let hessian_row = |fused: bool| {
        let e = s.emissions.detach().requires_grad();
        let a = s.transitions.detach().requires_grad();
        let s2 = CrfScores { emissions: e.clone(), transitions: a.clone(), start: s.start.clone(), end: s.end.clone() };
        let l = neg_log_likelihood(&s2, &tags(), &LENGTHS, fused).unwrap();
        let g = grad(&[&l], &[&e, &a], None, GradOptions::create_graph()).unwrap();
        let probe = g[0].mul(&Tensor::randn(e.shape(), &mut Rng::new(9))).sum().add(&g[1].mul(&Tensor::randn(a.shape(), &mut Rng::new(10))).sum());
        let h = grad(&[&probe], &[&e, &a], None, GradOptions::default()).unwrap();
        (g[0].to_vec(), h)
    };
    let (g1, h1) = hessian_row(true);
    let (g2, h2) = hessian_row(false);
    for (p, q) in g1.iter().zip(&g2) {
        assert!((p - q).abs() < 1e-12);
    }
    for (x, y) in h1.iter().zip(&h2) {
        for (p, q) in x.data().iter().zip(y.data()) {
            assert!((p - q).abs() < 1e-10, "Hessian-vector product: fused {p} vs composed {q}");
        }
    }
}

#[test]
fn masked_positions_get_exactly_zero_gradient() {
    let s = scores(7, 3, 4, 3);
    for fused in [true, false] {
        for create in [false, true] {
            let e = s.emissions.detach().requires_grad();
            let s2 = CrfScores { emissions: e.clone(), ..s.clone() };
            let l = neg_log_likelihood(&s2, &tags(), &LENGTHS, fused).unwrap();
            let opts = if create { GradOptions::create_graph() } else { GradOptions::default() };
            let g = grad(&[&l], &[&e], None, opts).unwrap();
            for (row, &len) in LENGTHS.iter().enumerate() {
                for i in 0..4 {
                    for j in 0..3 {
                        let v = g[0].data()[(row * 4 + i) * 3 + j];
                        if i >= len {
                            assert_eq!(v, 0.0, "fused={fused} create={create}: padded E[{row},{i},{j}] got {v}");
                        } else {
                            assert!(v != 0.0);
                        }
                    }
                }
            }
        }
    }
    // Values at padded positions do not change anything.
    let mut e2 = s.emissions.to_vec();
    e2[(4 + 3) * 3] += 100.0; // row 1 (length 2), position 3
    let s3 = CrfScores { emissions: Tensor::from_vec(e2, &[3, 4, 3]), ..s.clone() };
    let a = log_partition(&s, &LENGTHS).unwrap();
    let b = log_partition(&s3, &LENGTHS).unwrap();
    assert_eq!(a.to_vec(), b.to_vec());
    let sa = sequence_score(&s, &tags(), &LENGTHS).unwrap();
    let sb = sequence_score(&s3, &tags(), &LENGTHS).unwrap();
    assert_eq!(sa.to_vec(), sb.to_vec());
}

#[test]
fn bad_inputs_are_typed_errors() {
    let s = scores(8, 3, 4, 3);
    assert!(matches!(log_partition(&s, &[4, 0, 3]), Err(TextError::Length { row: 1, length: 0, .. })));
    assert!(matches!(log_partition(&s, &[4, 5, 3]), Err(TextError::Length { row: 1, length: 5, .. })));
    assert!(matches!(log_partition(&s, &[4, 2]), Err(TextError::Shape { .. })));
    let bad = CrfScores { transitions: Tensor::zeros(&[3, 2]), ..s.clone() };
    let err = viterbi(&bad, &LENGTHS).unwrap_err();
    assert!(err.to_string().contains("[3, 3]") && err.to_string().contains("[3, 2]"), "{err}");
    assert!(matches!(sequence_score(&s, &[vec![0, 1, 2, 3], vec![0, 0], vec![0, 0, 0]], &LENGTHS), Err(TextError::Id { id: 3, .. })));
}

/// Scores spanning thousands of nats take the log-space path of the fused op; it still equals
/// the composed reference (values and gradients) and brute force.
#[test]
fn huge_score_ranges_take_the_log_space_path() {
    let mut s = scores(12, 3, 4, 3);
    s.transitions = s.transitions.mul_scalar(400.0);
    s.emissions = s.emissions.mul_scalar(300.0);
    let fused = log_partition(&s, &LENGTHS).unwrap();
    for (row, &l) in LENGTHS.iter().enumerate() {
        let want = brute_log_z(&s, row, l);
        assert!((fused.data()[row] - want).abs() < 1e-9 * want.abs().max(1.0));
    }
    let run = |fused: bool| {
        let e = s.emissions.detach().requires_grad();
        let a = s.transitions.detach().requires_grad();
        let s2 = CrfScores { emissions: e.clone(), transitions: a.clone(), ..s.clone() };
        let l = neg_log_likelihood(&s2, &tags(), &LENGTHS, fused).unwrap();
        let g = grad(&[&l], &[&e, &a], None, GradOptions::default()).unwrap();
        g
    };
    for (x, y) in run(true).iter().zip(&run(false)) {
        for (p, q) in x.data().iter().zip(y.data()) {
            assert!((p - q).abs() < 1e-9 && p.is_finite());
        }
    }
}
