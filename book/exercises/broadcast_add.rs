//! Exercise 3.1 (chapter 3): the backward rule of a bias add, `y = a + b` with `a: [n, m]` and
//! `b: [m]` broadcast over the rows.
//!
//! Hint: every row of `y` used the same `b`, so `b` receives the sum of all rows of `g`.

use chi_autodiff::{CustomOp, Tensor};

/// A wrong solution: gives `b` the first row of `g` only (the right shape, the wrong values).
pub struct Wrong;
/// The right solution: `∂a = g`, `∂b = Σ_rows g`.
pub struct Right;
/// Yours.
pub struct Yours;

fn forward(x: &[&Tensor<f64>]) -> Tensor<f64> {
    x[0].add(x[1])
}

impl CustomOp<f64> for Wrong {
    fn name(&self) -> &str {
        "bias add (wrong)"
    }
    fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> {
        forward(x)
    }
    fn backward(&self, x: &[&Tensor<f64>], _y: &Tensor<f64>, g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
        let m = x[1].shape()[0];
        vec![Some(g.clone()), Some(g.narrow(0, 0, 1).reshape(&[m]))]
    }
}

impl CustomOp<f64> for Right {
    fn name(&self) -> &str {
        "bias add"
    }
    fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> {
        forward(x)
    }
    fn backward(&self, _x: &[&Tensor<f64>], _y: &Tensor<f64>, g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
        vec![Some(g.clone()), Some(g.sum_axis(0, false))]
    }
}

impl CustomOp<f64> for Yours {
    fn name(&self) -> &str {
        "bias add (yours)"
    }
    fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> {
        forward(x)
    }
    fn backward(&self, _x: &[&Tensor<f64>], _y: &Tensor<f64>, _g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
        vec![None, None] // your rule here
    }
}

/// The point the checker tests at.
pub fn inputs() -> Vec<Tensor<f64>> {
    vec![Tensor::from_vec(vec![0.1, -0.4, 0.9, 1.2, 0.3, -0.8], &[2, 3]), Tensor::from_vec(vec![0.5, -1.0, 0.25], &[3])]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exercises::{check, ExerciseError};
    use std::rc::Rc;

    #[test]
    fn exercise_broadcast_add_wrong_is_caught() {
        // Input 0 is right; the checker must point at input 1 (the bias).
        let e = check(Rc::new(Wrong), &inputs()).unwrap_err();
        assert!(matches!(e, ExerciseError::Value { input: 1, .. }), "{e}");
    }
    #[test]
    fn exercise_broadcast_add_wrong_shape_is_named() {
        struct NoSum;
        impl CustomOp<f64> for NoSum {
            fn name(&self) -> &str {
                "bias add (no sum)"
            }
            fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> {
                forward(x)
            }
            fn backward(&self, _x: &[&Tensor<f64>], _y: &Tensor<f64>, g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
                vec![Some(g.clone()), Some(g.clone())]
            }
        }
        let e = check(Rc::new(NoSum), &inputs()).unwrap_err();
        assert_eq!(e, ExerciseError::Shape { input: 1, expected: vec![3], actual: vec![2, 3] });
        assert_eq!(e.to_string(), "input 1: your gradient has shape [2, 3], the input has shape [3]");
    }
    #[test]
    fn exercise_broadcast_add_right_passes() {
        check(Rc::new(Right), &inputs()).unwrap();
    }
    #[test]
    #[ignore = "your solution: cargo test -p chi-book exercise_ -- --ignored"]
    fn exercise_broadcast_add_yours() {
        if let Err(e) = check(Rc::new(Yours), &inputs()) {
            panic!("bias add: {e}");
        }
    }
}
