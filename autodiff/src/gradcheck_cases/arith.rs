//! Broadcasting arithmetic, its scalar forms, `where`, and `clamp`.

use super::*;

pub(super) fn cases() -> Vec<OpCase> {
    vec![
        OpCase { name: "add", order2: true, make: |r| binary(r, |a, b| a.add(b)) },
        OpCase { name: "sub", order2: true, make: |r| binary(r, |a, b| a.sub(b)) },
        OpCase { name: "mul", order2: true, make: |r| binary(r, |a, b| a.mul(b)) },
        OpCase {
            name: "div",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let b = broadcastable(r, &s);
                case(vec![normal(r, &s), uniform(r, &b, 0.5, 2.0)], |x| x[0].div(&x[1]))
            },
        },
        OpCase {
            name: "maximum",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let b = broadcastable(r, &s);
                case(vec![normal(r, &s), normal(r, &b).add_scalar(0.013)], |x| x[0].maximum(&x[1]))
            },
        },
        OpCase {
            name: "minimum",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let b = broadcastable(r, &s);
                case(vec![normal(r, &s), normal(r, &b).add_scalar(0.013)], |x| x[0].minimum(&x[1]))
            },
        },
        OpCase {
            name: "pow",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let b = broadcastable(r, &s);
                case(vec![uniform(r, &s, 0.5, 2.0), uniform(r, &b, -1.5, 2.5)], |x| x[0].pow(&x[1]))
            },
        },
        OpCase { name: "add_scalar", order2: true, make: |r| unary(r, |a| a.add_scalar(0.7)) },
        OpCase { name: "sub_scalar", order2: true, make: |r| unary(r, |a| a.sub_scalar(0.7)) },
        OpCase { name: "mul_scalar", order2: true, make: |r| unary(r, |a| a.mul_scalar(-1.3)) },
        OpCase { name: "div_scalar", order2: true, make: |r| unary(r, |a| a.div_scalar(2.5)) },
        OpCase { name: "pow_scalar", order2: true, make: |r| unary_pos(r, |a| a.pow_scalar(2.7)) },
        OpCase { name: "max_scalar", order2: true, make: |r| unary(r, |a| a.max_scalar(0.11)) },
        OpCase { name: "min_scalar", order2: true, make: |r| unary(r, |a| a.min_scalar(0.11)) },
        OpCase {
            name: "where",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let m: Vec<bool> = (0..s.iter().product::<usize>()).map(|_| r.below(2) == 0).collect();
                let b = broadcastable(r, &s);
                let s2 = s.clone();
                case(vec![normal(r, &s), normal(r, &b)], move |x| Tensor::where_(&m, &s2, &x[0], &x[1]).mul(&x[0]))
            },
        },
        OpCase {
            name: "clamp",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 0, 3);
                // Both bounds, one of them, or min > max (every output is then max).
                let (lo, hi) = [(Some(-0.4), Some(0.6)), (Some(-0.4), None), (None, Some(0.6)), (Some(0.6), Some(-0.4))][r.below(4)];
                // Values at least 0.02 from either bound: finite differences must not straddle a kink.
                let x = normal(r, &s);
                let x = Tensor::from_vec(
                    x.data().iter().map(|&v| if (v + 0.4).abs() < 0.02 || (v - 0.6).abs() < 0.02 { v + 0.05 } else { v }).collect(),
                    &s,
                );
                case(vec![x], move |x| x[0].clamp(lo, hi).square())
            },
        },
        OpCase {
            name: "clamp_tensor",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let (bl, bh) = (broadcastable(r, &s), broadcastable(r, &s));
                // Values on three interleaved lattices (x ≡ 0.03, min ≡ 0, max ≡ 0.06 mod 0.1), so
                // any two of them differ by ≥ 0.03: no kink within reach of finite differences,
                // and min > max happens at random.
                let mut lattice = |shape: &[usize], off: f64| {
                    let n: usize = shape.iter().product();
                    Tensor::from_vec((0..n).map(|_| (r.below(21) as f64 - 10.0) * 0.1 + off).collect(), shape)
                };
                let (x, lo, hi) = (lattice(&s, 0.03), lattice(&bl, 0.0), lattice(&bh, 0.06));
                match r.below(3) {
                    0 => case(vec![x, lo, hi], |x| x[0].clamp_tensor(Some(&x[1]), Some(&x[2])).square()),
                    1 => case(vec![x, lo], |x| x[0].clamp_tensor(Some(&x[1]), None).square()),
                    _ => case(vec![x, hi], |x| x[0].clamp_tensor(None, Some(&x[1])).square()),
                }
            },
        },
    ]
}
