//! Elementwise functions: the SIMD-kernel ones (neg … log_sigmoid) and the ones computed in
//! `ops::pointwise` (sin, cos, erf, gelu, silu, square, recip, rsub_scalar).

use super::*;

/// A unary case with values uniform in `[−4, 4)`.
fn wide(rng: &mut Rng, f: fn(&Tensor<f64>) -> Tensor<f64>) -> Case {
    let s = rand_shape(rng, 0, 3);
    case(vec![uniform(rng, &s, -4.0, 4.0)], move |x| f(&x[0]))
}

pub(super) fn cases() -> Vec<OpCase> {
    vec![
        OpCase { name: "neg", order2: true, make: |r| unary(r, |a| a.neg()) },
        OpCase { name: "abs", order2: true, make: |r| unary(r, |a| a.abs()) },
        OpCase { name: "exp", order2: true, make: |r| unary(r, |a| a.exp()) },
        OpCase { name: "ln", order2: true, make: |r| unary_pos(r, |a| a.ln()) },
        OpCase { name: "log1p", order2: true, make: |r| unary_pos(r, |a| a.sub_scalar(0.25).log1p()) },
        OpCase { name: "sqrt", order2: true, make: |r| unary_pos(r, |a| a.sqrt()) },
        OpCase { name: "tanh", order2: true, make: |r| unary(r, |a| a.tanh()) },
        OpCase { name: "sigmoid", order2: true, make: |r| unary(r, |a| a.sigmoid()) },
        OpCase { name: "relu", order2: true, make: |r| unary(r, |a| a.relu()) },
        OpCase { name: "leaky_relu", order2: true, make: |r| unary(r, |a| a.leaky_relu(0.1)) },
        OpCase { name: "softplus", order2: true, make: |r| unary(r, |a| a.mul_scalar(3.0).softplus()) },
        OpCase { name: "log_sigmoid", order2: true, make: |r| unary(r, |a| a.mul_scalar(3.0).log_sigmoid()) },
        OpCase { name: "sin", order2: true, make: |r| wide(r, |a| a.sin()) },
        OpCase { name: "cos", order2: true, make: |r| wide(r, |a| a.cos()) },
        // [−4, 4) reaches both of erf's evaluation branches (the split is at |x| = 2.5).
        OpCase { name: "erf", order2: true, make: |r| wide(r, |a| a.erf()) },
        OpCase { name: "gelu", order2: true, make: |r| wide(r, |a| a.gelu()) },
        OpCase { name: "gelu_tanh", order2: true, make: |r| wide(r, |a| a.gelu_tanh()) },
        OpCase { name: "silu", order2: true, make: |r| wide(r, |a| a.silu()) },
        OpCase { name: "square", order2: true, make: |r| unary(r, |a| a.square()) },
        OpCase { name: "recip", order2: true, make: |r| unary_pos(r, |a| a.recip()) },
        OpCase { name: "rsub_scalar", order2: true, make: |r| unary(r, |a| a.rsub_scalar(0.7).square()) },
    ]
}
