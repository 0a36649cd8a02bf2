//! Elementwise functions: neg, abs, exp, ln, log1p, sqrt, tanh, sigmoid, relu, leaky-relu,
//! softplus, log-sigmoid.
//!
//! Forward and first-order backward run the fused kernels of `chi_kernels::elementwise`. When a
//! graph is being recorded (`create_graph`) the backward rule is written with differentiable ops
//! instead, so that it can itself be differentiated.

use crate::ops::Op;
use crate::tape::record;
use crate::tensor::Tensor;
use crate::Float;
use chi_kernels::elementwise::{self as ew, Unary};
use std::panic::Location;

impl<T: Float> Tensor<T> {
    /// Applies an elementwise function.
    #[track_caller]
    pub fn unary(&self, op: Unary) -> Tensor<T> {
        let loc = Location::caller();
        let mut out = crate::pool::for_overwrite(self.numel());
        ew::unary(op, &self.data, &mut out);
        record(out, self.shape, &[self], loc, |o| Op::Unary { op, x: self.clone(), out: o.clone() })
    }
    /// `−x`
    #[track_caller]
    pub fn neg(&self) -> Tensor<T> {
        self.unary(Unary::Neg)
    }
    /// `|x|` (derivative 0 at 0).
    #[track_caller]
    pub fn abs(&self) -> Tensor<T> {
        self.unary(Unary::Abs)
    }
    /// `eˣ`
    #[track_caller]
    pub fn exp(&self) -> Tensor<T> {
        self.unary(Unary::Exp)
    }
    /// Natural logarithm.
    #[track_caller]
    pub fn ln(&self) -> Tensor<T> {
        self.unary(Unary::Log)
    }
    /// `ln(1 + x)`
    #[track_caller]
    pub fn log1p(&self) -> Tensor<T> {
        self.unary(Unary::Log1p)
    }
    /// `√x`
    #[track_caller]
    pub fn sqrt(&self) -> Tensor<T> {
        self.unary(Unary::Sqrt)
    }
    /// `tanh x`
    #[track_caller]
    pub fn tanh(&self) -> Tensor<T> {
        self.unary(Unary::Tanh)
    }
    /// Logistic sigmoid.
    #[track_caller]
    pub fn sigmoid(&self) -> Tensor<T> {
        self.unary(Unary::Sigmoid)
    }
    /// `max(x, 0)` (derivative 0 at 0).
    #[track_caller]
    pub fn relu(&self) -> Tensor<T> {
        self.unary(Unary::Relu)
    }
    /// Leaky ReLU with the given negative slope.
    #[track_caller]
    pub fn leaky_relu(&self, slope: f64) -> Tensor<T> {
        assert!(slope.is_finite(), "leaky_relu: the negative slope {slope} is not finite (input {:?})", self.shape);
        self.unary(Unary::LeakyRelu(slope))
    }
    /// `ln(1 + eˣ)`, stable for large |x|.
    #[track_caller]
    pub fn softplus(&self) -> Tensor<T> {
        self.unary(Unary::Softplus)
    }
    /// `ln σ(x)`, stable for large |x|.
    #[track_caller]
    pub fn log_sigmoid(&self) -> Tensor<T> {
        self.unary(Unary::LogSigmoid)
    }
}

/// `g ← g ⊙ f'(x)` in `g`'s own buffer when nothing else holds it (passes that record
/// nothing); `false`, with `g` untouched, otherwise. Same bits as the `fast` path below.
#[inline]
pub(crate) fn unary_backward_in_place<T: Float>(op: Unary, x: &Tensor<T>, out: &Tensor<T>, g: &mut Tensor<T>) -> bool {
    match g.values_mut_if_unique() {
        Some(v) => {
            ew::unary_backward_inplace(op, &x.data, &out.data, v);
            true
        }
        None => false,
    }
}

/// `dx = g ⊙ f'(x)`.
pub(crate) fn unary_backward<T: Float>(op: Unary, x: &Tensor<T>, out: &Tensor<T>, g: &Tensor<T>, fast: bool) -> Tensor<T> {
    if fast {
        let mut dx = crate::pool::for_overwrite(x.numel());
        ew::unary_backward(op, &x.data, &out.data, &g.data, &mut dx);
        return Tensor::from_buf(dx, x.shape);
    }
    // Differentiable forms. Piecewise-constant factors (sign, step) are constants: their
    // derivative is zero wherever it exists.
    let step = |f: &dyn Fn(T) -> T| Tensor::from_vec(x.data.iter().map(|&v| f(v)).collect(), x.shape());
    match op {
        Unary::Neg => g.neg(),
        Unary::Abs => g.mul(&step(&|v| if v > T::ZERO { T::ONE } else if v < T::ZERO { -T::ONE } else { T::ZERO })),
        Unary::Exp => g.mul(out),
        Unary::Log => g.div(x),
        Unary::Log1p => g.div(&x.add_scalar(1.0)),
        Unary::Sqrt => g.div(out).mul_scalar(0.5),
        Unary::Tanh => g.mul(&out.square().rsub_scalar(1.0)),
        Unary::Sigmoid => g.mul(&out.mul(&out.rsub_scalar(1.0))),
        Unary::Relu => g.mul(&step(&|v| if v > T::ZERO { T::ONE } else { T::ZERO })),
        Unary::LeakyRelu(s) => g.mul(&step(&|v| if v > T::ZERO { T::ONE } else { T::from_f64(s) })),
        Unary::Softplus => g.mul(&x.sigmoid()),
        Unary::LogSigmoid => g.mul(&x.neg().sigmoid()),
    }
}
