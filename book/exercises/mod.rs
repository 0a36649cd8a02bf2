//! The book's exercises: each is a [`CustomOp`] whose backward rule the student writes, and
//! [`check`] grades it with float64 central differences, naming the input and the element that
//! is wrong the way `gradcheck` does.
//!
//! Every exercise has a wrong and a right reference solution (the tests show the checker failing
//! the first, naming where, and passing the second) and a `Yours` op for the student to fill in.
//! Run the reference tests with `cargo test -p chi-book exercise_`; run your own solutions with
//! `cargo test -p chi-book exercise_ -- --ignored` (they are ignored until you write them: the
//! stubs return no gradient, which the checker rejects).

use chi_autodiff::{gradcheck, CustomOp, GradcheckOptions, GradcheckReport, Rng, Tensor};
use std::fmt;
use std::rc::Rc;

pub mod broadcast_add;
pub mod matmul;
pub mod sigmoid;
pub mod softmax_ce;

/// Why a backward rule failed its check.
#[derive(Debug, Clone, PartialEq)]
pub enum ExerciseError {
    /// The backward returned a different number of gradients than the op has inputs.
    Count {
        /// Inputs of the op.
        expected: usize,
        /// Gradients returned.
        actual: usize,
    },
    /// A gradient has another shape than its input.
    Shape {
        /// Which input (0-based).
        input: usize,
        /// The input's shape.
        expected: Vec<usize>,
        /// The gradient's shape.
        actual: Vec<usize>,
    },
    /// A gradient element disagrees with central differences.
    Value {
        /// Which input (0-based).
        input: usize,
        /// Flat (row-major) index within it.
        index: usize,
        /// What the backward rule gives (with the checker's random output weights).
        yours: f64,
        /// The central-difference estimate.
        numeric: f64,
    },
    /// The checker could not compare (a problem gradcheck reported before comparing).
    Other(String),
}

impl fmt::Display for ExerciseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExerciseError::Count { expected, actual } => write!(f, "your backward returns {actual} gradient(s); the op has {expected} input(s)"),
            ExerciseError::Shape { input, expected, actual } => {
                write!(f, "input {input}: your gradient has shape {actual:?}, the input has shape {expected:?}")
            }
            ExerciseError::Value { input, index, yours, numeric } => write!(
                f,
                "input {input}, element {index}: your backward gives {yours:.6}, central differences give {numeric:.6}"
            ),
            ExerciseError::Other(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for ExerciseError {}

/// Grades `op`'s backward at `inputs`: first the number and shapes of the gradients it returns,
/// then every element against float64 central differences (ε = 1e-6, atol 1e-5, rtol 1e-3).
pub fn check(op: Rc<dyn CustomOp<f64>>, inputs: &[Tensor<f64>]) -> Result<GradcheckReport, ExerciseError> {
    let refs: Vec<&Tensor<f64>> = inputs.iter().collect();
    let out = op.forward(&refs);
    let g = Tensor::randn(out.shape(), &mut Rng::new(11));
    let gs = op.backward(&refs, &out, &g);
    if gs.len() != inputs.len() {
        return Err(ExerciseError::Count { expected: inputs.len(), actual: gs.len() });
    }
    for (k, (x, gi)) in inputs.iter().zip(&gs).enumerate() {
        if let Some(gi) = gi {
            if gi.shape() != x.shape() {
                return Err(ExerciseError::Shape { input: k, expected: x.shape().to_vec(), actual: gi.shape().to_vec() });
            }
        }
    }
    let f = |xs: &[Tensor<f64>]| Tensor::apply_custom(op.clone(), xs);
    match gradcheck(f, inputs, &GradcheckOptions::default()) {
        Ok(r) => Ok(r),
        Err(r) => match (&r.worst, &r.problem) {
            (Some(w), _) => Err(ExerciseError::Value { input: w.input, index: w.index, yours: w.analytic, numeric: w.numeric }),
            (None, Some(p)) => Err(ExerciseError::Other(p.clone())),
            (None, None) => Err(ExerciseError::Other(r.to_string())),
        },
    }
}
