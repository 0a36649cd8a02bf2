//! Matrix products and axis permutations.

use super::*;

pub(super) fn cases() -> Vec<OpCase> {
    vec![
        OpCase {
            name: "matmul",
            order2: true,
            make: |r| {
                let (m, k, n) = (1 + r.below(5), 1 + r.below(5), 1 + r.below(5));
                case(vec![normal(r, &[m, k]), normal(r, &[k, n])], |x| x[0].matmul(&x[1]))
            },
        },
        OpCase {
            name: "matmul_batched",
            order2: true,
            make: |r| {
                let (b, m, k, n) = (1 + r.below(3), 1 + r.below(4), 1 + r.below(4), 1 + r.below(4));
                case(vec![normal(r, &[b, m, k]), normal(r, &[b, k, n])], |x| x[0].matmul(&x[1]))
            },
        },
        OpCase {
            name: "matmul_shared_weight",
            order2: true,
            make: |r| {
                let (b, m, k, n) = (1 + r.below(3), 1 + r.below(4), 1 + r.below(4), 1 + r.below(4));
                case(vec![normal(r, &[b, m, k]), normal(r, &[k, n])], |x| x[0].matmul(&x[1]))
            },
        },
        OpCase {
            name: "matvec",
            order2: true,
            make: |r| {
                let (m, k) = (1 + r.below(5), 1 + r.below(5));
                case(vec![normal(r, &[m, k]), normal(r, &[k])], |x| x[0].matmul(&x[1]))
            },
        },
        OpCase {
            name: "affine",
            order2: true,
            make: |r| {
                let (m, k, n) = (1 + r.below(5), 1 + r.below(5), 1 + r.below(5));
                case(vec![normal(r, &[m, k]), normal(r, &[k, n]), normal(r, &[n])], |x| x[0].affine(&x[1], &x[2]))
            },
        },
        OpCase {
            name: "affine_leading_axes",
            order2: true,
            make: |r| {
                let (b, m, k, n) = (1 + r.below(3), 1 + r.below(4), 1 + r.below(4), 1 + r.below(4));
                case(vec![normal(r, &[b, m, k]), normal(r, &[k, n]), normal(r, &[n])], |x| x[0].affine(&x[1], &x[2]))
            },
        },
        OpCase {
            name: "affine_vector",
            order2: true,
            make: |r| {
                let (k, n) = (1 + r.below(5), 1 + r.below(5));
                case(vec![normal(r, &[k]), normal(r, &[k, n]), normal(r, &[n])], |x| x[0].affine(&x[1], &x[2]))
            },
        },
        OpCase {
            name: "permute",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 2, 4);
                let mut p: Vec<usize> = (0..s.len()).collect();
                r.shuffle(&mut p);
                case(vec![normal(r, &s)], move |x| x[0].permute(&p))
            },
        },
        OpCase {
            name: "transpose",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 2, 3);
                case(vec![normal(r, &s)], |x| x[0].t())
            },
        },
        OpCase {
            name: "transpose_axes",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 2, 4);
                let a = r.below(s.len());
                let b = (a + 1 + r.below(s.len() - 1)) % s.len();
                case(vec![normal(r, &s)], move |x| x[0].transpose(a as isize, b as isize))
            },
        },
    ]
}
