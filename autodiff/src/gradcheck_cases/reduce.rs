//! Reductions and normalisers: sum/mean (all, one axis, several axes), max/min, softmax,
//! log-softmax, log-sum-exp, var/std, cumsum.

use super::*;

/// A random set of axes of `s` (possibly empty, which means every axis), some negative.
fn axis_subset(r: &mut Rng, s: &[usize]) -> Vec<isize> {
    let mut axes = Vec::new();
    for a in 0..s.len() {
        if r.below(2) == 0 {
            axes.push(if r.below(2) == 0 { a as isize - s.len() as isize } else { a as isize });
        }
    }
    axes
}

/// Shape, axes, correction and keepdim for var/std, with at least one degree of freedom.
fn moment_args(r: &mut Rng) -> (Vec<usize>, Vec<isize>, f64, bool) {
    let s = rand_shape(r, 1, 3);
    let axes = axis_subset(r, &s);
    let n: usize = if axes.is_empty() {
        s.iter().product()
    } else {
        axes.iter().map(|&a| s[a.rem_euclid(s.len() as isize) as usize]).product()
    };
    let correction = r.below(3).min(n - 1) as f64;
    (s, axes, correction, r.below(2) == 0)
}

pub(super) fn cases() -> Vec<OpCase> {
    vec![
        OpCase { name: "sum", order2: true, make: |r| unary(r, |a| a.sum()) },
        OpCase {
            name: "sum_axis",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = axis_of(r, &s);
                let keep = r.below(2) == 0;
                case(vec![normal(r, &s)], move |x| x[0].sum_axis(ax, keep))
            },
        },
        OpCase { name: "mean", order2: true, make: |r| unary(r, |a| a.mean()) },
        OpCase {
            name: "mean_axis",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = axis_of(r, &s);
                case(vec![normal(r, &s)], move |x| x[0].mean_axis(ax, true))
            },
        },
        OpCase {
            name: "max_axis",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = axis_of(r, &s);
                let keep = r.below(2) == 0;
                case(vec![distinct(r, &s)], move |x| x[0].max_axis(ax, keep))
            },
        },
        OpCase {
            name: "min_axis",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = axis_of(r, &s);
                case(vec![distinct(r, &s)], move |x| x[0].min_axis(ax, false))
            },
        },
        OpCase {
            name: "softmax",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = axis_of(r, &s);
                case(vec![normal(r, &s)], move |x| x[0].softmax(ax))
            },
        },
        OpCase {
            name: "log_softmax",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = axis_of(r, &s);
                case(vec![normal(r, &s)], move |x| x[0].log_softmax(ax))
            },
        },
        OpCase {
            name: "logsumexp",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = axis_of(r, &s);
                let keep = r.below(2) == 0;
                case(vec![normal(r, &s)], move |x| x[0].logsumexp(ax, keep))
            },
        },
        OpCase {
            name: "sum_axes",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 4);
                let axes = axis_subset(r, &s);
                let keep = r.below(2) == 0;
                case(vec![normal(r, &s)], move |x| x[0].sum_axes(&axes, keep))
            },
        },
        OpCase {
            name: "mean_axes",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 4);
                let axes = axis_subset(r, &s);
                let keep = r.below(2) == 0;
                case(vec![normal(r, &s)], move |x| x[0].mean_axes(&axes, keep))
            },
        },
        OpCase { name: "max_all", order2: true, make: |r| {
            let s = rand_shape(r, 0, 3);
            case(vec![distinct(r, &s)], |x| x[0].max_all())
        } },
        OpCase {
            name: "var",
            order2: true,
            make: |r| {
                let (s, axes, correction, keep) = moment_args(r);
                case(vec![normal(r, &s)], move |x| x[0].var(&axes, correction, keep))
            },
        },
        OpCase {
            name: "std",
            order2: true,
            make: |r| {
                let (s, axes, correction, keep) = moment_args(r);
                case(vec![normal(r, &s)], move |x| x[0].std(&axes, correction, keep))
            },
        },
        OpCase {
            name: "cumsum",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = axis_of(r, &s);
                // The square makes the second derivative non-trivial (cumsum is linear).
                case(vec![normal(r, &s)], move |x| x[0].cumsum(ax).square())
            },
        },
    ]
}
