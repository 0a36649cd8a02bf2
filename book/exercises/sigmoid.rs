//! Exercise 1.1 (chapter 1): the backward rule of σ(x) = 1 / (1 + e^−x).
//!
//! Hint: write it with the saved output y = σ(x).

use chi_autodiff::{CustomOp, Tensor};

/// A wrong solution: forgets the `(1 − y)` factor.
pub struct Wrong;
/// The right solution: `∂x = g ⊙ y ⊙ (1 − y)`.
pub struct Right;
/// Yours: replace the body of `backward`.
pub struct Yours;

fn forward(x: &[&Tensor<f64>]) -> Tensor<f64> {
    x[0].sigmoid()
}

impl CustomOp<f64> for Wrong {
    fn name(&self) -> &str {
        "sigmoid (wrong)"
    }
    fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> {
        forward(x)
    }
    fn backward(&self, _x: &[&Tensor<f64>], y: &Tensor<f64>, g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
        vec![Some(g.mul(y))]
    }
}

impl CustomOp<f64> for Right {
    fn name(&self) -> &str {
        "sigmoid"
    }
    fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> {
        forward(x)
    }
    fn backward(&self, _x: &[&Tensor<f64>], y: &Tensor<f64>, g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
        vec![Some(g.mul(y).mul(&y.rsub_scalar(1.0)))]
    }
}

impl CustomOp<f64> for Yours {
    fn name(&self) -> &str {
        "sigmoid (yours)"
    }
    fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> {
        forward(x)
    }
    fn backward(&self, _x: &[&Tensor<f64>], _y: &Tensor<f64>, _g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
        vec![None] // your rule here
    }
}

/// The point the checker tests at.
pub fn inputs() -> Vec<Tensor<f64>> {
    vec![Tensor::from_vec(vec![-1.5, -0.2, 0.0, 0.7, 2.0], &[5])]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exercises::{check, ExerciseError};
    use std::rc::Rc;

    #[test]
    fn exercise_sigmoid_wrong_is_caught() {
        let e = check(Rc::new(Wrong), &inputs()).unwrap_err();
        assert!(matches!(e, ExerciseError::Value { input: 0, .. }), "{e}");
        assert!(e.to_string().starts_with("input 0, element "), "{e}");
    }
    #[test]
    fn exercise_sigmoid_right_passes() {
        let r = check(Rc::new(Right), &inputs()).unwrap();
        assert!(r.passed && r.max_abs_err < 1e-8, "{r}");
    }
    #[test]
    #[ignore = "your solution: cargo test -p chi-book exercise_ -- --ignored"]
    fn exercise_sigmoid_yours() {
        if let Err(e) = check(Rc::new(Yours), &inputs()) {
            panic!("sigmoid: {e}");
        }
    }
}
