//! Exercise 4.1 (chapter 4): the backward rule of `C = A·B`.
//!
//! Hint: check the shapes first: `∂A` must be `[m, k]` like `A`; the only product of `G: [m, n]`
//! and `B: [k, n]` with that shape is `G·Bᵀ`.

use chi_autodiff::{CustomOp, Tensor};

/// A wrong solution: `∂A = G·B` (forgets the transpose). With square matrices the shape is
/// right, so only the values give it away.
pub struct Wrong;
/// The right solution: `∂A = G·Bᵀ`, `∂B = Aᵀ·G`.
pub struct Right;
/// Yours.
pub struct Yours;

fn forward(x: &[&Tensor<f64>]) -> Tensor<f64> {
    x[0].matmul(x[1])
}

impl CustomOp<f64> for Wrong {
    fn name(&self) -> &str {
        "matmul (wrong)"
    }
    fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> {
        forward(x)
    }
    fn backward(&self, x: &[&Tensor<f64>], _y: &Tensor<f64>, g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
        vec![Some(g.matmul(x[1])), Some(x[0].t().matmul(g))]
    }
}

impl CustomOp<f64> for Right {
    fn name(&self) -> &str {
        "matmul"
    }
    fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> {
        forward(x)
    }
    fn backward(&self, x: &[&Tensor<f64>], _y: &Tensor<f64>, g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
        vec![Some(g.matmul(&x[1].t())), Some(x[0].t().matmul(g))]
    }
}

impl CustomOp<f64> for Yours {
    fn name(&self) -> &str {
        "matmul (yours)"
    }
    fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> {
        forward(x)
    }
    fn backward(&self, _x: &[&Tensor<f64>], _y: &Tensor<f64>, _g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
        vec![None, None] // your rule here
    }
}

/// The point the checker tests at (square, so the wrong rule has the right shape).
pub fn inputs() -> Vec<Tensor<f64>> {
    vec![Tensor::from_vec(vec![0.5, -1.0, 2.0, 0.3], &[2, 2]), Tensor::from_vec(vec![1.5, 0.2, -0.7, 0.9], &[2, 2])]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exercises::{check, ExerciseError};
    use std::rc::Rc;

    #[test]
    fn exercise_matmul_wrong_is_caught() {
        let e = check(Rc::new(Wrong), &inputs()).unwrap_err();
        assert!(matches!(e, ExerciseError::Value { input: 0, .. }), "{e}");
    }
    #[test]
    fn exercise_matmul_right_passes() {
        check(Rc::new(Right), &inputs()).unwrap();
        // And on non-square shapes.
        let a = Tensor::from_vec(vec![0.1, 0.2, 0.3, 0.4, 0.5, 0.6], &[2, 3]);
        let b = Tensor::from_vec(vec![1.0, -1.0, 0.5, 2.0, -0.3, 0.7], &[3, 2]);
        check(Rc::new(Right), &[a, b]).unwrap();
    }
    #[test]
    #[ignore = "your solution: cargo test -p chi-book exercise_ -- --ignored"]
    fn exercise_matmul_yours() {
        if let Err(e) = check(Rc::new(Yours), &inputs()) {
            panic!("matmul: {e}");
        }
    }
}
