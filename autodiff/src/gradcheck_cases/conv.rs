//! Convolution (im2col, col2im, conv1d, conv2d, a text CNN), max pooling and dropout.

use super::*;
use crate::ops::conv::{Conv2dGeom, Window};

/// Random small 2-D conv geometry: `(n, c, h, w, cout, kh, kw, stride, pad)`.
fn conv2d_dims(r: &mut Rng) -> (usize, usize, usize, usize, usize, usize, usize, usize, usize) {
    let (n, c, co) = (1 + r.below(2), 1 + r.below(3), 1 + r.below(3));
    let (kh, kw) = (1 + r.below(3), 1 + r.below(3));
    let stride = 1 + r.below(2);
    let pad = r.below(2);
    let h = (kh + r.below(3)).saturating_sub(2 * pad).max(1);
    let w = (kw + r.below(3)).saturating_sub(2 * pad).max(1);
    (n, c, h, w, co, kh, kw, stride, pad)
}

pub(super) fn cases() -> Vec<OpCase> {
    vec![
        OpCase {
            name: "im2col",
            order2: true,
            make: |r| {
                let (n, c, h, w, _, kh, kw, stride, pad) = conv2d_dims(r);
                let win = Window::D2(Conv2dGeom { c, h, w, kh, kw, stride, pad });
                case(vec![normal(r, &[n, c, h, w])], move |x| x[0].im2col(win))
            },
        },
        OpCase {
            name: "col2im",
            order2: true,
            make: |r| {
                let (n, c, l) = (1 + r.below(2), 1 + r.below(2), 2 + r.below(4));
                let (k, stride, pad) = (1 + r.below(3), 1 + r.below(2), r.below(2));
                let k = k.min(l);
                let win = Window::D1 { c, l, k, stride, pad };
                case(vec![normal(r, &[n, win.positions(), win.patch_len()])], move |x| x[0].col2im(win))
            },
        },
        OpCase {
            name: "conv2d",
            order2: true,
            make: |r| {
                let (n, c, h, w, co, kh, kw, stride, pad) = conv2d_dims(r);
                let mut inputs = vec![normal(r, &[n, c, h, w]), normal(r, &[co, c, kh, kw])];
                if r.below(2) == 0 {
                    inputs.push(normal(r, &[co]));
                }
                case(inputs, move |x| x[0].conv2d(&x[1], x.get(2), stride, pad))
            },
        },
        OpCase {
            name: "conv1d",
            order2: true,
            make: |r| {
                let (n, c, co, k) = (1 + r.below(2), 1 + r.below(3), 1 + r.below(3), 1 + r.below(3));
                let (stride, pad) = (1 + r.below(2), r.below(2));
                let l = k + r.below(4);
                let mut inputs = vec![normal(r, &[n, c, l]), normal(r, &[co, c, k])];
                if r.below(2) == 0 {
                    inputs.push(normal(r, &[co]));
                }
                case(inputs, move |x| x[0].conv1d(&x[1], x.get(2), stride, pad))
            },
        },
        OpCase {
            name: "text_cnn_max_over_time",
            order2: true,
            make: |r| {
                let (n, e, t) = (1 + r.below(2), 1 + r.below(3), 3 + r.below(3));
                let (k1, k2) = (1 + r.below(2), 2 + r.below(2));
                // Distinct inputs keep the max over time away from ties.
                let inputs = vec![distinct(r, &[n, e, t]).mul_scalar(0.3), normal(r, &[2, e, k1]), normal(r, &[2, e, k2])];
                case(inputs, |x| {
                    let a = x[0].conv1d(&x[1], None, 1, 0).tanh().max_axis(-1, false);
                    let b = x[0].conv1d(&x[2], None, 1, 1).tanh().max_axis(-1, false);
                    Tensor::concat(&[a, b], 1)
                })
            },
        },
        OpCase {
            name: "max_pool2d",
            order2: true,
            make: |r| {
                let (n, c) = (1 + r.below(2), 1 + r.below(2));
                let (k, stride) = (1 + r.below(3), 1 + r.below(2));
                let (h, w) = (k + r.below(3), k + r.below(3));
                case(vec![distinct(r, &[n, c, h, w])], move |x| x[0].max_pool2d(k, stride))
            },
        },
        OpCase {
            name: "max_pool1d",
            order2: true,
            make: |r| {
                let (n, c) = (1 + r.below(2), 1 + r.below(3));
                let (k, stride) = (1 + r.below(3), 1 + r.below(3));
                let l = k + r.below(5);
                case(vec![distinct(r, &[n, c, l])], move |x| x[0].max_pool1d(k, stride))
            },
        },
        OpCase {
            name: "dropout",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let seed = r.next_u64();
                let p = [0.0, 0.25, 0.5][r.below(3)];
                // A fixed seed inside the closure: every evaluation draws the same mask. The
                // square makes the second derivative non-trivial.
                case(vec![normal(r, &s)], move |x| x[0].dropout(p, true, &mut Rng::new(seed)).square())
            },
        },
    ]
}
