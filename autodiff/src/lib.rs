//! # chi-autodiff
//!
//! A tape-based reverse-mode automatic differentiation engine, small enough to read in a sitting.
//!
//! * [`Tensor`]: immutable n-d arrays of `f32`/`f64`; ops are methods (`a.matmul(&b)`, `x.tanh()`).
//! * [`tape`]: how ops on tensors that require grad are recorded, and how long a graph lives
//!   (as long as its tensors).
//! * [`backward`]: the reverse walk; [`Tensor::backward`] and the functional [`grad`];
//!   [`GradOptions::create_graph`] for higher order; gradient hooks ([`Tensor::register_hook`]).
//! * [`transforms`]: [`value_and_grad`], [`jacobian`], [`hessian`], [`hvp`], [`jvp`], and
//!   per-example gradients over a batch ([`vmap_grad`]).
//! * [`ops`]: every differentiable op, forward and backward side by side, and the one `match`
//!   that dispatches backward rules.
//! * [`gradcheck`](mod@gradcheck): finite-difference checking as a product feature;
//!   [`gradcheck_cases`]: the random cases it runs for every op (`chi gradcheck`).
//! * [`anomaly`]: find the forward op where NaN/Inf first appears.
//! * [`dot`]: list a graph, or export it (forward and backward) to Graphviz DOT.
//!
//! ```
//! use chi_autodiff::Tensor;
//! let w = Tensor::<f64>::from_vec(vec![0.5, -0.3], &[2, 1]).requires_grad();
//! let x = Tensor::from_vec(vec![1.0, 2.0], &[1, 2]);
//! let loss = x.matmul(&w).tanh().sum();
//! loss.backward();
//! let g = w.grad().unwrap(); // ∂loss/∂w = xᵀ·(1 − tanh²)
//! assert!((g.data()[0] - (1.0 - (-0.1f64).tanh().powi(2))).abs() < 1e-12);
//! ```

#![warn(missing_docs)]

pub mod anomaly;
pub mod backward;
pub mod dot;
pub mod gradcheck;
pub mod gradcheck_cases;
pub mod malloc;
pub mod ops;
pub mod pool;
mod rng;
mod shape;
pub mod tape;
mod tensor;
pub mod transforms;
mod vmap;

pub use anomaly::{detect_anomaly, is_anomaly_enabled, set_anomaly_enabled, Anomaly};
pub use backward::{grad, AutodiffError, GradOptions};
pub use gradcheck::{check_grads, gradcheck, gradgradcheck, GradcheckOptions, GradcheckReport};
pub use ops::conv::{Conv2dGeom, Window};
pub use ops::custom::CustomOp;
pub use ops::loss::Reduction;
pub use ops::pointwise::Pointwise;
pub use ops::reduce::Axes;
pub use rng::Rng;
pub use shape::{Shape, MAX_RANK};
#[allow(deprecated)]
pub use tape::clear_tape;
pub use tape::{is_grad_enabled, no_grad, no_grad_guard, tape_len, Float, PostAccumulateHook, SparseRows};
pub use tensor::{HookHandle, Tensor};
pub use transforms::{hessian, hvp, jacobian, jvp, value_and_grad, vmap_grad, JacobianMode, PerExample};
pub use chi_kernels::elementwise::{Binary, Unary};
