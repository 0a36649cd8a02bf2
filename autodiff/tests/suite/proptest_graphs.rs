//! Property tests: every registered op on proptest-chosen random instances (shapes, broadcasts,
//! axes, values), and random small graphs of ops gradchecked end to end at first and second order.

use chi_autodiff::gradcheck_cases::{all as registry, check_case};
use chi_autodiff::{gradcheck, gradgradcheck, GradcheckOptions, Tensor};
use proptest::prelude::*;

/// A node of a random graph: an op applied to earlier values (indices into the value pool).
#[derive(Clone, Debug)]
enum Step {
    Unary(u8, usize),
    Binary(u8, usize, usize),
    Reduce(u8, usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u8..8, 0usize..64).prop_map(|(o, a)| Step::Unary(o, a)),
        (0u8..6, 0usize..64, 0usize..64).prop_map(|(o, a, b)| Step::Binary(o, a, b)),
        (0u8..4, 0usize..64).prop_map(|(o, a)| Step::Reduce(o, a)),
    ]
}

/// Applies the steps to the inputs. Domains are kept safe (log of softplus + ½, division by
/// 1 + x²) so every graph is smooth where it is evaluated.
fn run_graph(steps: &[Step], xs: &[Tensor<f64>]) -> Tensor<f64> {
    let mut pool: Vec<Tensor<f64>> = xs.to_vec();
    for s in steps {
        let pick = |i: usize| pool[i % pool.len()].clone();
        let v = match *s {
            Step::Unary(o, a) => {
                let x = pick(a);
                match o {
                    0 => x.tanh(),
                    1 => x.sigmoid(),
                    2 => x.tanh().exp(),
                    3 => x.softplus().add_scalar(0.5).ln(),
                    4 => x.square().add_scalar(1.0).sqrt(),
                    5 => x.mul_scalar(-0.7).log_sigmoid(),
                    6 => x.softmax(-1),
                    _ => x.log_softmax(0),
                }
            }
            Step::Binary(o, a, b) => {
                let (x, y) = (pick(a), pick(b));
                match o {
                    0 => x.add(&y),
                    1 => x.sub(&y),
                    2 => x.mul(&y),
                    3 => x.div(&y.square().add_scalar(1.0)),
                    4 => x.matmul(&y.t()).tanh().sum_axis(1, false).unsqueeze(1).broadcast_to(x.shape()).add(&x),
                    _ => Tensor::concat(&[x.clone(), y], 0).narrow(0, 1, x.dim(0)),
                }
            }
            Step::Reduce(o, a) => {
                let x = pick(a);
                match o {
                    0 => x.sum_axis(0, true).broadcast_to(x.shape()),
                    1 => x.logsumexp(1, true).sub(&x),
                    2 => x.mean_axis(-1, true).mul(&x),
                    _ => x.transpose(0, 1).flip(0).transpose(0, 1),
                }
            }
        };
        pool.push(v);
    }
    // Combine the last values so every branch can matter.
    let k = pool.len().min(3);
    let mut out = pool[pool.len() - 1].clone();
    for t in &pool[pool.len() - k..pool.len() - 1] {
        out = out.add(&t.mul_scalar(0.5));
    }
    out
}

fn mat(vals: Vec<f64>) -> Tensor<f64> {
    Tensor::from_vec(vals, &[3, 4])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_graphs_pass_gradcheck(
        steps in prop::collection::vec(step(), 1..7),
        a in prop::collection::vec(-1.5f64..1.5, 12),
        b in prop::collection::vec(-1.5f64..1.5, 12),
    ) {
        let xs = [mat(a), mat(b)];
        let r = gradcheck(|x| run_graph(&steps, x), &xs, &GradcheckOptions::default());
        prop_assert!(r.is_ok(), "graph {:?}: {}", steps, r.unwrap_err());
    }

    #[test]
    fn every_op_on_random_instances(op_index in 0usize..1000, seed in any::<u64>()) {
        let ops = registry();
        let op = &ops[op_index % ops.len()];
        let (case, r) = check_case(op, 1, seed, &GradcheckOptions::default());
        prop_assert!(r.is_ok(), "{} shapes {}: {}", op.name, case.shapes(), r.unwrap_err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn random_graphs_pass_gradgradcheck(
        steps in prop::collection::vec(step(), 1..5),
        a in prop::collection::vec(-1.5f64..1.5, 12),
        b in prop::collection::vec(-1.5f64..1.5, 12),
    ) {
        let xs = [mat(a), mat(b)];
        let r = gradgradcheck(|x| run_graph(&steps, x), &xs, &GradcheckOptions::default());
        prop_assert!(r.is_ok(), "graph {:?}: {}", steps, r.unwrap_err());
    }

    #[test]
    fn every_op_second_order_on_random_instances(op_index in 0usize..1000, seed in any::<u64>()) {
        let ops: Vec<_> = registry().into_iter().filter(|o| o.order2).collect();
        let op = &ops[op_index % ops.len()];
        let (case, r) = check_case(op, 2, seed, &GradcheckOptions::default());
        prop_assert!(r.is_ok(), "{} shapes {}: {}", op.name, case.shapes(), r.unwrap_err());
    }
}
