//! Reductions and normalisers: sum and mean (over everything, one axis or a set of axes),
//! max/min (gradient routed to the arg-max), softmax, log-softmax and log-sum-exp, with or without
//! keeping the reduced axes. Each method records one node under its own name.

use crate::ops::Op;
use crate::tape::record;
use crate::tensor::Tensor;
use crate::{Float, Shape};
use chi_kernels::reduce as kr;
use std::panic::Location;
use std::rc::Rc;

/// A set of axes of one tensor (rank ≤ [`MAX_RANK`](crate::MAX_RANK)), as a bit mask: which axes a reduction
/// reduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Axes(u16);

impl Axes {
    /// Every axis of a rank-`rank` tensor.
    pub fn all(rank: usize) -> Axes {
        Axes(((1u32 << rank) - 1) as u16)
    }
    /// One axis.
    pub fn one(axis: usize) -> Axes {
        Axes(1 << axis)
    }
    /// Axes given by the caller (negative counts from the end; repeats are ignored), resolved
    /// against `shape`, naming `op` if one is out of range. An empty list means every axis (as
    /// PyTorch's `dim=None`).
    #[track_caller]
    pub fn resolve(op: &str, shape: &Shape, axes: &[isize]) -> Axes {
        if axes.is_empty() {
            return Axes::all(shape.rank());
        }
        Axes(axes.iter().fold(0u16, |m, &a| m | 1 << shape.axis(op, a)))
    }
    /// Whether `axis` is in the set.
    pub fn contains(self, axis: usize) -> bool {
        self.0 >> axis & 1 == 1
    }
    /// The shape `shape` reduces to: reduced axes become 1 (`keepdim`) or are dropped.
    pub fn reduced_shape(self, shape: &Shape, keepdim: bool) -> Shape {
        let d: Vec<usize> = (0..shape.rank())
            .filter_map(|a| match (self.contains(a), keepdim) {
                (false, _) => Some(shape.dims()[a]),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect();
        Shape::new(&d)
    }
    /// Number of elements each output element is reduced from.
    pub fn count(self, shape: &Shape) -> usize {
        (0..shape.rank()).filter(|&a| self.contains(a)).map(|a| shape.dims()[a]).product()
    }
    /// The single axis, if the set has exactly one.
    fn single(self) -> Option<usize> {
        (self.0.count_ones() == 1).then(|| self.0.trailing_zeros() as usize)
    }
}

/// Sums `x` (of shape `shape`) over `axes` into a buffer laid out as the reduced shape.
pub(crate) fn sum_over<T: Float>(x: &[T], shape: &Shape, axes: Axes) -> crate::pool::Buf<T> {
    let keep = axes.reduced_shape(shape, true);
    let mut out = crate::pool::zeros(keep.numel());
    if keep.numel() == 1 {
        out[0] = kr::sum_all(x);
    } else if let Some(ax) = axes.single() {
        let (outer, n, inner) = shape.split_at_axis(ax);
        kr::sum_axis(x, outer, n, inner, &mut out);
    } else if axes.0 != 0 {
        let st = keep.broadcast_strides(shape).expect("a reduced shape broadcasts back to its source");
        kr::reduce_broadcast(x, shape.dims(), &st, &mut out);
    } else {
        out.copy_from_slice(x);
    }
    out
}

impl<T: Float> Tensor<T> {
    #[track_caller]
    pub(crate) fn sum_impl(&self, axes: Axes, keepdim: bool, mean: bool, name: &'static str) -> Tensor<T> {
        let loc = Location::caller();
        let mut out = sum_over(&self.data, &self.shape, axes);
        if mean {
            let n = axes.count(&self.shape);
            assert!(n > 0, "{name}: tensor of shape {:?} is empty", self.shape);
            let inv = T::ONE / T::from_usize(n);
            out.iter_mut().for_each(|v| *v *= inv);
        }
        let shape = axes.reduced_shape(&self.shape, keepdim);
        record(out, shape, &[self], loc, |_| Op::Sum { x: self.clone(), axes, keepdim, mean, name })
    }
    /// Sum of all elements (a scalar).
    #[track_caller]
    pub fn sum(&self) -> Tensor<T> {
        self.sum_impl(Axes::all(self.rank()), false, false, "sum")
    }
    /// Mean of all elements (a scalar). Panics on an empty tensor.
    #[track_caller]
    pub fn mean(&self) -> Tensor<T> {
        self.sum_impl(Axes::all(self.rank()), false, true, "mean")
    }
    /// Sum along `axis` (negative counts from the end).
    #[track_caller]
    pub fn sum_axis(&self, axis: isize, keepdim: bool) -> Tensor<T> {
        let ax = self.shape.axis("sum_axis", axis);
        self.sum_impl(Axes::one(ax), keepdim, false, "sum_axis")
    }
    /// Sum over several axes (one node; an empty list sums everything).
    #[track_caller]
    pub fn sum_axes(&self, axes: &[isize], keepdim: bool) -> Tensor<T> {
        self.sum_impl(Axes::resolve("sum_axes", &self.shape, axes), keepdim, false, "sum_axes")
    }
    /// Mean along `axis`.
    #[track_caller]
    pub fn mean_axis(&self, axis: isize, keepdim: bool) -> Tensor<T> {
        let ax = self.shape.axis("mean_axis", axis);
        self.sum_impl(Axes::one(ax), keepdim, true, "mean_axis")
    }
    /// Mean over several axes (one node; an empty list averages everything).
    #[track_caller]
    pub fn mean_axes(&self, axes: &[isize], keepdim: bool) -> Tensor<T> {
        self.sum_impl(Axes::resolve("mean_axes", &self.shape, axes), keepdim, true, "mean_axes")
    }
    /// Maximum (`min == false`) or minimum along an axis: output values and the flat input
    /// index of each winner (the first, on ties).
    fn extreme_axis(&self, ax: usize, min: bool) -> (crate::pool::Buf<T>, Vec<usize>) {
        let (outer, n, inner) = self.shape.split_at_axis(ax);
        let mut out = crate::pool::zeros(outer * inner);
        let mut arg = vec![0usize; outer * inner];
        if min {
            let neg: Vec<T> = self.data.iter().map(|&v| -v).collect();
            kr::max_axis(&neg, outer, n, inner, &mut out, &mut arg);
            out.iter_mut().for_each(|v| *v = -*v);
        } else {
            kr::max_axis(&self.data, outer, n, inner, &mut out, &mut arg);
        }
        let flat = (0..outer * inner).map(|k| ((k / inner) * n + arg[k]) * inner + k % inner).collect();
        (out, flat)
    }
    #[track_caller]
    fn extreme(&self, axis: Option<isize>, keepdim: bool, min: bool, name: &'static str) -> Tensor<T> {
        let loc = Location::caller();
        let (src, ax) = match axis {
            Some(a) => (self.clone(), self.shape.axis(name, a)),
            // Over everything: the flat indices of the 1-D view are the input's own.
            None => (self.detach().reshape(&[self.numel()]), 0),
        };
        assert!(src.shape()[ax] > 0, "{name}: axis {ax} of shape {:?} is empty", self.shape);
        let (out, flat) = src.extreme_axis(ax, min);
        let shape = match axis {
            Some(_) => Axes::one(ax).reduced_shape(&self.shape, keepdim),
            None => Shape::scalar(),
        };
        let flat = Rc::new(flat);
        record(out, shape, &[self], loc, |_| Op::MaxAxis { x: self.clone(), flat, name })
    }
    /// Maximum along `axis`; the gradient goes to the first position attaining it.
    #[track_caller]
    pub fn max_axis(&self, axis: isize, keepdim: bool) -> Tensor<T> {
        self.extreme(Some(axis), keepdim, false, "max_axis")
    }
    /// Index of the maximum along `axis` (not differentiable; a plain vector). Panics if the
    /// axis is empty (there is no index to return), as [`Tensor::max_axis`] does.
    #[track_caller]
    pub fn argmax_axis(&self, axis: isize) -> Vec<usize> {
        let ax = self.shape.axis("argmax_axis", axis);
        let (outer, n, inner) = self.shape.split_at_axis(ax);
        assert!(n > 0 || outer * inner == 0, "argmax_axis: axis {ax} of shape {:?} is empty", self.shape);
        let mut out = crate::pool::zeros(outer * inner);
        let mut arg = vec![0usize; outer * inner];
        kr::max_axis(&self.data, outer, n, inner, &mut out, &mut arg);
        arg
    }
    /// Minimum along `axis`; the gradient goes to the first position attaining it.
    #[track_caller]
    pub fn min_axis(&self, axis: isize, keepdim: bool) -> Tensor<T> {
        self.extreme(Some(axis), keepdim, true, "min_axis")
    }
    /// Maximum of all elements (a scalar); the gradient goes to the first maximum.
    #[track_caller]
    pub fn max_all(&self) -> Tensor<T> {
        self.extreme(None, false, false, "max_all")
    }
    /// Softmax along `axis`.
    #[track_caller]
    pub fn softmax(&self, axis: isize) -> Tensor<T> {
        let loc = Location::caller();
        let ax = self.shape.axis("softmax", axis);
        let (outer, n, inner) = self.shape.split_at_axis(ax);
        let mut out = crate::pool::zeros(self.numel());
        kr::softmax(&self.data, outer, n, inner, &mut out);
        record(out, self.shape, &[self], loc, |o| Op::Softmax { x: self.clone(), axis: ax, out: o.clone() })
    }
    /// Log-softmax along `axis` (stable: `x − logsumexp(x)`).
    #[track_caller]
    pub fn log_softmax(&self, axis: isize) -> Tensor<T> {
        let loc = Location::caller();
        let ax = self.shape.axis("log_softmax", axis);
        let (outer, n, inner) = self.shape.split_at_axis(ax);
        let mut out = crate::pool::zeros(self.numel());
        kr::log_softmax(&self.data, outer, n, inner, &mut out);
        record(out, self.shape, &[self], loc, |o| Op::LogSoftmax { x: self.clone(), axis: ax, out: o.clone() })
    }
    /// `log Σ exp(x)` along `axis` (stable for large inputs).
    #[track_caller]
    pub fn logsumexp(&self, axis: isize, keepdim: bool) -> Tensor<T> {
        let loc = Location::caller();
        let ax = self.shape.axis("logsumexp", axis);
        let (outer, n, inner) = self.shape.split_at_axis(ax);
        let mut out = crate::pool::zeros(outer * inner);
        kr::logsumexp(&self.data, outer, n, inner, &mut out);
        record(out, Axes::one(ax).reduced_shape(&self.shape, keepdim), &[self], loc, |o| Op::LogSumExp { x: self.clone(), axis: ax, keepdim, out: o.clone() })
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

pub(crate) fn sum_backward<T: Float>(x: &Tensor<T>, axes: Axes, mean: bool, g: &Tensor<T>, fast: bool) -> Tensor<T> {
    let scale = if mean { 1.0 / axes.count(&x.shape) as f64 } else { 1.0 };
    if fast && g.numel() == 1 {
        // A full reduction (the usual loss): fill directly.
        return Tensor::full(x.shape(), g.data[0] * T::from_f64(scale));
    }
    let keep = axes.reduced_shape(&x.shape, true);
    let gb = g.reshape(keep.dims()).broadcast_to(x.shape());
    if mean {
        gb.mul_scalar(scale)
    } else {
        gb
    }
}

pub(crate) fn softmax_backward<T: Float>(y: &Tensor<T>, axis: usize, g: &Tensor<T>, fast: bool) -> Tensor<T> {
    if fast {
        let (outer, n, inner) = y.shape.split_at_axis(axis);
        let mut dx = crate::pool::zeros(y.numel());
        kr::softmax_backward(&y.data, &g.data, outer, n, inner, &mut dx);
        return Tensor::from_buf(dx, y.shape);
    }
    // dx = y ⊙ (g − Σ g⊙y)
    let dot = g.mul(y).sum_axis(axis as isize, true);
    y.mul(&g.sub(&dot))
}

pub(crate) fn log_softmax_backward<T: Float>(y: &Tensor<T>, axis: usize, g: &Tensor<T>, fast: bool) -> Tensor<T> {
    if fast {
        let (outer, n, inner) = y.shape.split_at_axis(axis);
        let mut dx = crate::pool::zeros(y.numel());
        kr::log_softmax_backward(&y.data, &g.data, outer, n, inner, &mut dx);
        return Tensor::from_buf(dx, y.shape);
    }
    // dx = g − softmax(x)·Σ g, with softmax(x) = exp(y)
    g.sub(&y.exp().mul(&g.sum_axis(axis as isize, true)))
}

pub(crate) fn logsumexp_backward<T: Float>(x: &Tensor<T>, axis: usize, keepdim: bool, out: &Tensor<T>, g: &Tensor<T>) -> Tensor<T> {
    // ∂ lse / ∂x = softmax(x) = exp(x − lse)
    let lse = keep(out, axis, keepdim);
    keep(g, axis, keepdim).mul(&x.sub(&lse).exp())
}
