//! The user-defined-op path ([`crate::CustomOp`]).

use super::*;
use std::rc::Rc;
use crate::ops::custom::CustomOp;

/// `f(a, b) = a³ + a·b` as a custom op, to exercise the custom-op path.
struct CubicCustom;
impl CustomOp<f64> for CubicCustom {
    fn name(&self) -> &str {
        "custom_cubic"
    }
    fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> {
        x[0].mul(x[0]).mul(x[0]).add(&x[0].mul(x[1]))
    }
    fn backward(&self, x: &[&Tensor<f64>], _out: &Tensor<f64>, g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
        // ∂/∂a (a³ + a·b) = 3a² + b ; ∂/∂b = a
        vec![Some(g.mul(&x[0].square().mul_scalar(3.0).add(x[1]))), Some(g.mul(x[0]))]
    }
}

pub(super) fn cases() -> Vec<OpCase> {
    vec![
        OpCase {
            name: "custom",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 2);
                case(vec![normal(r, &s), normal(r, &s)], |x| Tensor::apply_custom(Rc::new(CubicCustom), x))
            },
        },
    ]
}
