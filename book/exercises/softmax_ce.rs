//! Exercise 5.1 (chapter 5): the fused backward of softmax + cross-entropy,
//! `L = −(1/N) Σₙ log softmax(zₙ)[tₙ]`, for logits `z: [N, C]` and fixed targets.
//!
//! Hint: `∂L/∂z = (softmax(z) − onehot(t)) / N`, times the incoming scalar `g`.

use chi_autodiff::{CustomOp, Tensor};

/// Targets of the exercise's batch.
pub const TARGETS: [usize; 3] = [2, 0, 1];

fn onehot(n: usize, c: usize) -> Tensor<f64> {
    let mut v = vec![0.0; n * c];
    for (r, &t) in TARGETS.iter().take(n).enumerate() {
        v[r * c + t] = 1.0;
    }
    Tensor::from_vec(v, &[n, c])
}

fn forward(x: &[&Tensor<f64>]) -> Tensor<f64> {
    x[0].cross_entropy(&TARGETS[..x[0].shape()[0]])
}

/// A wrong solution: forgets the mean's `1/N`.
pub struct Wrong;
/// The right solution.
pub struct Right;
/// Yours.
pub struct Yours;

impl CustomOp<f64> for Wrong {
    fn name(&self) -> &str {
        "softmax cross-entropy (wrong)"
    }
    fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> {
        forward(x)
    }
    fn backward(&self, x: &[&Tensor<f64>], _y: &Tensor<f64>, g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
        let (n, c) = (x[0].shape()[0], x[0].shape()[1]);
        vec![Some(x[0].softmax(1).sub(&onehot(n, c)).mul(g))]
    }
}

impl CustomOp<f64> for Right {
    fn name(&self) -> &str {
        "softmax cross-entropy"
    }
    fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> {
        forward(x)
    }
    fn backward(&self, x: &[&Tensor<f64>], _y: &Tensor<f64>, g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
        let (n, c) = (x[0].shape()[0], x[0].shape()[1]);
        vec![Some(x[0].softmax(1).sub(&onehot(n, c)).div_scalar(n as f64).mul(g))]
    }
}

impl CustomOp<f64> for Yours {
    fn name(&self) -> &str {
        "softmax cross-entropy (yours)"
    }
    fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> {
        forward(x)
    }
    fn backward(&self, _x: &[&Tensor<f64>], _y: &Tensor<f64>, _g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
        vec![None] // your rule here
    }
}

/// The point the checker tests at: 3 samples, 4 classes.
pub fn inputs() -> Vec<Tensor<f64>> {
    vec![Tensor::from_vec(vec![0.2, -1.0, 1.5, 0.3, 2.0, 0.1, -0.5, 0.0, -0.3, 0.8, 0.4, 1.1], &[3, 4])]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exercises::{check, ExerciseError};
    use std::rc::Rc;

    #[test]
    fn exercise_softmax_ce_wrong_is_caught() {
        let e = check(Rc::new(Wrong), &inputs()).unwrap_err();
        match e {
            // Off by the batch size: N = 3 times too large.
            ExerciseError::Value { input: 0, yours, numeric, .. } => assert!((yours / numeric - 3.0).abs() < 1e-4, "{yours} vs {numeric}"),
            e => panic!("{e}"),
        }
    }
    #[test]
    fn exercise_softmax_ce_right_passes() {
        check(Rc::new(Right), &inputs()).unwrap();
    }
    #[test]
    #[ignore = "your solution: cargo test -p chi-book exercise_ -- --ignored"]
    fn exercise_softmax_ce_yours() {
        if let Err(e) = check(Rc::new(Yours), &inputs()) {
            panic!("softmax cross-entropy: {e}");
        }
    }
}
