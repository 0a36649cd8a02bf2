//! Shape ops: reshape and its aliases, broadcast, concat/stack/split, narrow, pad, flip, index_select.

use super::*;

pub(super) fn cases() -> Vec<OpCase> {
    vec![
        OpCase {
            name: "reshape",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let n: usize = s.iter().product();
                case(vec![normal(r, &s)], move |x| x[0].reshape(&[n]).reshape(&[1, n]))
            },
        },
        OpCase {
            name: "broadcast_to",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let b = broadcastable(r, &s);
                case(vec![normal(r, &b)], move |x| x[0].broadcast_to(&s))
            },
        },
        OpCase {
            name: "sum_to",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let b = broadcastable(r, &s);
                case(vec![normal(r, &s)], move |x| x[0].sum_to(&b))
            },
        },
        OpCase {
            name: "concat",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = r.below(s.len());
                let mut s2 = s.clone();
                s2[ax] = 1 + r.below(3);
                case(vec![normal(r, &s), normal(r, &s2), normal(r, &s)], move |x| Tensor::concat(x, ax as isize))
            },
        },
        OpCase {
            name: "stack",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 0, 2);
                let ax = r.below(s.len() + 1);
                case(vec![normal(r, &s), normal(r, &s)], move |x| Tensor::stack(x, ax))
            },
        },
        OpCase {
            name: "split",
            order2: true,
            make: |r| {
                let mut s = rand_shape(r, 1, 3);
                let ax = r.below(s.len());
                s[ax] += 2;
                let first = 1 + r.below(s[ax] - 1);
                let sizes = vec![first, s[ax] - first];
                // Weight the pieces differently so a mixed-up split would be caught.
                case(vec![normal(r, &s)], move |x| {
                    let p = x[0].split(&sizes, ax as isize);
                    Tensor::concat(&[p[1].mul_scalar(2.0), p[0].clone()], ax as isize)
                })
            },
        },
        OpCase {
            name: "narrow",
            order2: true,
            make: |r| {
                let mut s = rand_shape(r, 1, 3);
                let ax = r.below(s.len());
                s[ax] += 2;
                let start = r.below(s[ax] - 1);
                let len = 1 + r.below(s[ax] - start);
                case(vec![normal(r, &s)], move |x| x[0].narrow(ax as isize, start, len))
            },
        },
        OpCase {
            name: "pad_axis",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = axis_of(r, &s);
                let (b, a) = (r.below(3), r.below(3));
                case(vec![normal(r, &s)], move |x| x[0].pad_axis(ax, b, a))
            },
        },
        OpCase {
            name: "flip",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = axis_of(r, &s);
                case(vec![normal(r, &s)], move |x| x[0].flip(ax))
            },
        },
        OpCase {
            name: "index_select",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = r.below(s.len());
                let idx: Vec<usize> = (0..1 + r.below(5)).map(|_| r.below(s[ax])).collect();
                case(vec![normal(r, &s)], move |x| x[0].index_select(ax as isize, &idx))
            },
        },
        OpCase {
            name: "unsqueeze",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 0, 3);
                let ax = r.below(s.len() + 1);
                case(vec![normal(r, &s)], move |x| x[0].unsqueeze(ax))
            },
        },
        OpCase {
            name: "squeeze",
            order2: true,
            make: |r| {
                let mut s = rand_shape(r, 0, 2);
                let ax = r.below(s.len() + 1);
                s.insert(ax, 1);
                case(vec![normal(r, &s)], move |x| x[0].squeeze(ax as isize))
            },
        },
        OpCase {
            name: "flatten",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 2, 3);
                case(vec![normal(r, &s)], |x| x[0].flatten())
            },
        },
    ]
}
