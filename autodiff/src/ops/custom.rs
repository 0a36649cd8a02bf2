//! User-defined ops with a custom backward, in the spirit of `torch.autograd.Function`.
//!
//! Implement [`CustomOp`] and call [`Tensor::apply_custom`]. The forward runs on values (nothing
//! inside it is recorded); the backward is written with chi's tensor ops, so when it runs under
//! `create_graph` it is recorded and the op supports higher derivatives. Check it with
//! [`crate::gradcheck()`] like any built-in op.
//!
//! ```
//! use chi_autodiff::{CustomOp, Tensor, gradcheck, GradcheckOptions};
//! use std::rc::Rc;
//!
//! /// `f(x) = x³` with a hand-written backward `3x²·g`.
//! struct Cube;
//! impl CustomOp<f64> for Cube {
//!     fn name(&self) -> &str { "cube" }
//!     fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> { x[0].mul(x[0]).mul(x[0]) }
//!     fn backward(&self, x: &[&Tensor<f64>], _out: &Tensor<f64>, g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
//!         vec![Some(g.mul(&x[0].square()).mul_scalar(3.0))]
//!     }
//! }
//! let x = Tensor::from_vec(vec![0.5, -1.5, 2.0], &[3]);
//! let f = |xs: &[Tensor<f64>]| Tensor::apply_custom(Rc::new(Cube), &[xs[0].clone()]);
//! gradcheck(f, &[x], &GradcheckOptions::default()).unwrap();
//! ```

use crate::ops::Op;
use crate::tape::{no_grad, record};
use crate::tensor::Tensor;
use crate::Float;
use std::panic::Location;
use std::rc::Rc;

/// A differentiable op defined outside chi.
pub trait CustomOp<T: Float> {
    /// Name shown in tapes, graphs and errors.
    fn name(&self) -> &str;
    /// Computes the output from the input values (runs with recording off).
    fn forward(&self, inputs: &[&Tensor<T>]) -> Tensor<T>;
    /// Gradients for each input given the incoming gradient `g` (same shape as `out`); written
    /// with tensor ops so it can be differentiated again. `None` means zero.
    fn backward(&self, inputs: &[&Tensor<T>], out: &Tensor<T>, g: &Tensor<T>) -> Vec<Option<Tensor<T>>>;
}

impl<T: Float> Tensor<T> {
    /// Applies a user-defined op, recording it on the tape like a built-in one.
    #[track_caller]
    pub fn apply_custom(f: Rc<dyn CustomOp<T>>, inputs: &[Tensor<T>]) -> Tensor<T> {
        let loc = Location::caller();
        let refs: Vec<&Tensor<T>> = inputs.iter().collect();
        let plain: Vec<Tensor<T>> = inputs.iter().map(|t| t.detach()).collect();
        let plain_refs: Vec<&Tensor<T>> = plain.iter().collect();
        let out = no_grad(|| f.forward(&plain_refs));
        record(Rc::clone(&out.data), out.shape, &refs, loc, |_| Op::Custom { f: f.clone(), inputs: inputs.to_vec() })
    }
}
