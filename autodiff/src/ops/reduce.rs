//! Reductions and normalisers: sum, mean, max/min (gradient routed to the arg-max), softmax,
//! log-softmax and log-sum-exp, along an axis, with or without keeping the reduced axis.

use crate::ops::Op;
use crate::tape::record;
use crate::tensor::Tensor;
use crate::{Float, Shape};
use chi_kernels::reduce as kr;
use std::panic::Location;
use std::rc::Rc;

fn reduced_shape(s: &Shape, axis: usize, keepdim: bool) -> Shape {
    if keepdim {
        s.with_dim(axis, 1)
    } else {
        s.without(axis)
    }
}

impl<T: Float> Tensor<T> {
    /// Sum of all elements (a scalar).
    #[track_caller]
    pub fn sum(&self) -> Tensor<T> {
        if self.rank() == 1 {
            self.sum_axis(0, false)
        } else {
            self.reshape(&[self.numel()]).sum_axis(0, false)
        }
    }
    /// Mean of all elements (a scalar).
    #[track_caller]
    pub fn mean(&self) -> Tensor<T> {
        assert!(self.numel() > 0, "mean: tensor of shape {:?} is empty", self.shape);
        self.sum().div_scalar(self.numel() as f64)
    }
    /// Sum along `axis` (negative counts from the end).
    #[track_caller]
    pub fn sum_axis(&self, axis: isize, keepdim: bool) -> Tensor<T> {
        let loc = Location::caller();
        let ax = self.shape.axis("sum", axis);
        let (outer, n, inner) = self.shape.split_at_axis(ax);
        let mut out = vec![T::ZERO; outer * inner];
        if outer == 1 && inner == 1 {
            out[0] = kr::sum_all(&self.data);
        } else {
            kr::sum_axis(&self.data, outer, n, inner, &mut out);
        }
        record(out, reduced_shape(&self.shape, ax, keepdim), &[self], loc, |_| Op::SumAxis { x: self.clone(), axis: ax, keepdim })
    }
    /// Sum over several axes.
    #[track_caller]
    pub fn sum_axes(&self, axes: &[isize], keepdim: bool) -> Tensor<T> {
        let mut ax: Vec<usize> = axes.iter().map(|&a| self.shape.axis("sum_axes", a)).collect();
        ax.sort_unstable();
        ax.dedup();
        let mut t = self.clone();
        // Reduce from the last axis so earlier axis numbers stay valid without keepdim.
        for &a in ax.iter().rev() {
            t = t.sum_axis(a as isize, keepdim);
        }
        t
    }
    /// Mean along `axis`.
    #[track_caller]
    pub fn mean_axis(&self, axis: isize, keepdim: bool) -> Tensor<T> {
        let n = self.dim(axis);
        self.sum_axis(axis, keepdim).div_scalar(n as f64)
    }
    /// Maximum along `axis`; the gradient goes to the first position attaining it.
    #[track_caller]
    pub fn max_axis(&self, axis: isize, keepdim: bool) -> Tensor<T> {
        let loc = Location::caller();
        let ax = self.shape.axis("max", axis);
        let (outer, n, inner) = self.shape.split_at_axis(ax);
        assert!(n > 0, "max: axis {ax} of shape {:?} is empty", self.shape);
        let mut out = vec![T::ZERO; outer * inner];
        let mut arg = vec![0usize; outer * inner];
        kr::max_axis(&self.data, outer, n, inner, &mut out, &mut arg);
        let flat: Vec<usize> = (0..outer * inner).map(|k| ((k / inner) * n + arg[k]) * inner + k % inner).collect();
        let flat = Rc::new(flat);
        record(out, reduced_shape(&self.shape, ax, keepdim), &[self], loc, |_| Op::MaxAxis { x: self.clone(), axis: ax, keepdim, flat })
    }
    /// Index of the maximum along `axis` (not differentiable; a plain vector).
    pub fn argmax_axis(&self, axis: isize) -> Vec<usize> {
        let ax = self.shape.axis("argmax", axis);
        let (outer, n, inner) = self.shape.split_at_axis(ax);
        let mut out = vec![T::ZERO; outer * inner];
        let mut arg = vec![0usize; outer * inner];
        kr::max_axis(&self.data, outer, n, inner, &mut out, &mut arg);
        arg
    }
    /// Minimum along `axis` (`−max(−x)`).
    #[track_caller]
    pub fn min_axis(&self, axis: isize, keepdim: bool) -> Tensor<T> {
        self.neg().max_axis(axis, keepdim).neg()
    }
    /// Maximum of all elements (a scalar).
    #[track_caller]
    pub fn max_all(&self) -> Tensor<T> {
        self.reshape(&[self.numel()]).max_axis(0, false)
    }
    /// Softmax along `axis`.
    #[track_caller]
    pub fn softmax(&self, axis: isize) -> Tensor<T> {
        let loc = Location::caller();
        let ax = self.shape.axis("softmax", axis);
        let (outer, n, inner) = self.shape.split_at_axis(ax);
        let mut out = vec![T::ZERO; self.numel()];
        kr::softmax(&self.data, outer, n, inner, &mut out);
        record(out, self.shape, &[self], loc, |o| Op::Softmax { x: self.clone(), axis: ax, out: o.clone() })
    }
    /// Log-softmax along `axis` (stable: `x − logsumexp(x)`).
    #[track_caller]
    pub fn log_softmax(&self, axis: isize) -> Tensor<T> {
        let loc = Location::caller();
        let ax = self.shape.axis("log_softmax", axis);
        let (outer, n, inner) = self.shape.split_at_axis(ax);
        let mut out = vec![T::ZERO; self.numel()];
        kr::log_softmax(&self.data, outer, n, inner, &mut out);
        record(out, self.shape, &[self], loc, |o| Op::LogSoftmax { x: self.clone(), axis: ax, out: o.clone() })
    }
    /// `log Σ exp(x)` along `axis` (stable for large inputs).
    #[track_caller]
    pub fn logsumexp(&self, axis: isize, keepdim: bool) -> Tensor<T> {
        let loc = Location::caller();
        let ax = self.shape.axis("logsumexp", axis);
        let (outer, n, inner) = self.shape.split_at_axis(ax);
        let mut out = vec![T::ZERO; outer * inner];
        kr::logsumexp(&self.data, outer, n, inner, &mut out);
        record(out, reduced_shape(&self.shape, ax, keepdim), &[self], loc, |o| Op::LogSumExp { x: self.clone(), axis: ax, keepdim, out: o.clone() })
    }
}

/// Puts back a reduced axis (if it was dropped) so `g` broadcasts against the input.
fn keep<T: Float>(g: &Tensor<T>, axis: usize, keepdim: bool) -> Tensor<T> {
    if keepdim {
        g.clone()
    } else {
        g.unsqueeze(axis)
    }
}

pub(crate) fn sum_axis_backward<T: Float>(x: &Tensor<T>, axis: usize, keepdim: bool, g: &Tensor<T>) -> Tensor<T> {
    keep(g, axis, keepdim).broadcast_to(x.shape())
}

pub(crate) fn softmax_backward<T: Float>(y: &Tensor<T>, axis: usize, g: &Tensor<T>, fast: bool) -> Tensor<T> {
    if fast {
        let (outer, n, inner) = y.shape.split_at_axis(axis);
        let mut dx = vec![T::ZERO; y.numel()];
        kr::softmax_backward(&y.data, &g.data, outer, n, inner, &mut dx);
        return Tensor::from_vec(dx, y.shape());
    }
    // dx = y ⊙ (g − Σ g⊙y)
    let dot = g.mul(y).sum_axis(axis as isize, true);
    y.mul(&g.sub(&dot))
}

pub(crate) fn log_softmax_backward<T: Float>(y: &Tensor<T>, axis: usize, g: &Tensor<T>, fast: bool) -> Tensor<T> {
    if fast {
        let (outer, n, inner) = y.shape.split_at_axis(axis);
        let mut dx = vec![T::ZERO; y.numel()];
        kr::log_softmax_backward(&y.data, &g.data, outer, n, inner, &mut dx);
        return Tensor::from_vec(dx, y.shape());
    }
    // dx = g − softmax(x)·Σ g, with softmax(x) = exp(y)
    g.sub(&y.exp().mul(&g.sum_axis(axis as isize, true)))
}

pub(crate) fn logsumexp_backward<T: Float>(x: &Tensor<T>, axis: usize, keepdim: bool, out: &Tensor<T>, g: &Tensor<T>) -> Tensor<T> {
    // ∂ lse / ∂x = softmax(x) = exp(x − lse)
    let lse = keep(out, axis, keepdim);
    keep(g, axis, keepdim).mul(&x.sub(&lse).exp())
}
