//! Losses, each with every reduction.

use super::*;
use crate::ops::loss::Reduction;

fn reduction(r: &mut Rng) -> Reduction {
    [Reduction::Mean, Reduction::Sum, Reduction::None][r.below(3)]
}

pub(super) fn cases() -> Vec<OpCase> {
    vec![
        OpCase {
            name: "cross_entropy",
            order2: true,
            make: |r| {
                let (n, c) = (1 + r.below(4), 1 + r.below(5));
                let targets: Vec<usize> = (0..n).map(|_| r.below(c)).collect();
                let red = reduction(r);
                case(vec![normal(r, &[n, c]).mul_scalar(2.0)], move |x| x[0].cross_entropy_with(&targets, red))
            },
        },
        OpCase {
            name: "cross_entropy_soft",
            order2: true,
            make: |r| {
                let (n, c) = (1 + r.below(4), 1 + r.below(5));
                let probs = normal(r, &[n, c]).softmax(1);
                let red = reduction(r);
                case(vec![normal(r, &[n, c]).mul_scalar(2.0), probs], move |x| x[0].cross_entropy_soft_with(&x[1], red))
            },
        },
        OpCase {
            name: "bce_with_logits",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                // Large logits too (×10), to show the loss and its derivatives stay finite and exact.
                let scale = [1.0, 10.0][r.below(2)];
                let red = reduction(r);
                case(vec![normal(r, &s).mul_scalar(scale), uniform(r, &s, 0.0, 1.0)], move |x| {
                    x[0].binary_cross_entropy_with_logits_with(&x[1], red)
                })
            },
        },
        OpCase {
            name: "mse_loss",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 0, 3);
                let red = reduction(r);
                case(vec![normal(r, &s), normal(r, &s)], move |x| x[0].mse_loss_with(&x[1], red))
            },
        },
        OpCase {
            name: "l1_loss",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 0, 3);
                let a = normal(r, &s);
                // b = a + d with |d| ≥ 0.1: away from the kink at a == b.
                let d = normal(r, &s).mul_scalar(0.5);
                let d = Tensor::from_vec(d.data().iter().map(|&v| if v.abs() < 0.1 { v.signum() * 0.1 + v } else { v }).collect(), d.shape());
                let b = a.add(&d);
                let red = reduction(r);
                case(vec![a, b], move |x| x[0].l1_loss_with(&x[1], red))
            },
        },
    ]
}
