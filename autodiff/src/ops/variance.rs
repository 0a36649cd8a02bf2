//! Variance and standard deviation over a set of axes, with a `correction` to the degrees of
//! freedom (Bessel's correction is 1), as `torch.var` / `torch.std`.
//!
//! Forward is the two-pass algorithm (mean first, then the sum of squared deviations), which
//! does not cancel catastrophically as `E[x²] − E[x]²` does. Each call records one node.

use crate::ops::reduce::{sum_over, Axes};
use crate::ops::Op;
use crate::tape::record;
use crate::tensor::Tensor;
use crate::Float;
use chi_kernels::elementwise::{self as ew, Binary};
use std::panic::Location;

/// `x − mean` (the mean laid out in the reduced-with-keepdim shape, broadcast back), or
/// `x ⊙ c` for `op = Mul`: one broadcasting pass.
fn with_reduced<T: Float>(op: Binary, x: &Tensor<T>, r: &[T], axes: Axes) -> crate::pool::Buf<T> {
    let keep = axes.reduced_shape(&x.shape, true);
    let sr = keep.broadcast_strides(&x.shape).expect("a reduced shape broadcasts back to its source");
    let mut out = crate::pool::zeros(x.numel());
    ew::binary_broadcast(op, &x.data, &x.shape.strides(), r, &sr, &mut out, x.shape());
    out
}

/// The mean over `axes`, laid out in the keepdim shape.
fn mean_over<T: Float>(x: &Tensor<T>, axes: Axes) -> crate::pool::Buf<T> {
    let inv = T::ONE / T::from_usize(axes.count(&x.shape));
    let mut m = sum_over(&x.data, &x.shape, axes);
    m.iter_mut().for_each(|v| *v *= inv);
    m
}

/// Degrees of freedom `max(N − correction, 0)`, as PyTorch (a non-positive count divides by 0).
fn dof(n: usize, correction: f64) -> f64 {
    (n as f64 - correction).max(0.0)
}

impl<T: Float> Tensor<T> {
    #[track_caller]
    fn variance(&self, axes: &[isize], correction: f64, keepdim: bool, std: bool) -> Tensor<T> {
        let loc = Location::caller();
        let name = if std { "std" } else { "var" };
        assert!(correction.is_finite(), "{name}: correction {correction} is not finite (input {:?})", self.shape);
        let axes = Axes::resolve(name, &self.shape, axes);
        let mean = mean_over(self, axes);
        let mut sq = with_reduced(Binary::Sub, self, &mean, axes);
        sq.iter_mut().for_each(|v| *v = *v * *v);
        let mut out = sum_over(&sq, &self.shape, axes);
        let inv = T::ONE / T::from_f64(dof(axes.count(&self.shape), correction));
        out.iter_mut().for_each(|v| *v *= inv);
        if std {
            out.iter_mut().for_each(|v| *v = v.sqrt());
        }
        record(out, axes.reduced_shape(&self.shape, keepdim), &[self], loc, |o| Op::Variance {
            x: self.clone(),
            axes,
            correction,
            keepdim,
            std,
            out: o.clone(),
        })
    }

    /// Variance over `axes` (an empty list means every axis, as `dim=None` in PyTorch):
    /// `Σ (x − mean)² / max(N − correction, 0)`, `N` the number of elements reduced.
    /// `correction = 1` is Bessel's correction (PyTorch's default), `0` the population variance.
    ///
    /// As in PyTorch, `N − correction ≤ 0` divides by zero (`inf`, or NaN for a zero sum)
    /// instead of panicking. Gradient `2(x − mean)/(N − correction)` times the incoming
    /// gradient; smooth everywhere.
    ///
    /// ```
    /// use chi_autodiff::Tensor;
    /// let x = Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// assert!((x.var(&[], 1, false).item() - 5.0 / 3.0).abs() < 1e-15);
    /// assert_eq!(x.var(&[1], 0, true).to_vec(), vec![0.25, 0.25]);
    /// ```
    #[track_caller]
    pub fn var(&self, axes: &[isize], correction: impl Into<f64>, keepdim: bool) -> Tensor<T> {
        self.variance(axes, correction.into(), keepdim, false)
    }

    /// Standard deviation over `axes`: `√var` with the same `axes`, `correction` and `keepdim`
    /// rules as [`Tensor::var`].
    ///
    /// Where the standard deviation is 0 (all reduced elements equal) it has no derivative; as
    /// PyTorch does, chi returns a zero gradient there (not NaN). Elsewhere the gradient is
    /// `(x − mean)/((N − correction)·std)` times the incoming gradient.
    #[track_caller]
    pub fn std(&self, axes: &[isize], correction: impl Into<f64>, keepdim: bool) -> Tensor<T> {
        self.variance(axes, correction.into(), keepdim, true)
    }
}

pub(crate) fn variance_backward<T: Float>(x: &Tensor<T>, axes: Axes, correction: f64, std: bool, out: &Tensor<T>, g: &Tensor<T>, fast: bool) -> Tensor<T> {
    let scale = 2.0 / dof(axes.count(&x.shape), correction);
    if fast {
        // coef = ∂loss/∂var · 2/dof, with ∂loss/∂var = g/(2·std) (0 where std = 0) for std.
        let coef: Vec<T> = g
            .data
            .iter()
            .zip(out.data.iter())
            .map(|(&gi, &o)| {
                let gv = if !std {
                    gi
                } else if o == T::ZERO {
                    T::ZERO
                } else {
                    gi / (o + o)
                };
                gv * T::from_f64(scale)
            })
            .collect();
        let dev = Tensor::from_buf(with_reduced(Binary::Sub, x, &mean_over(x, axes), axes), x.shape);
        return Tensor::from_buf(with_reduced(Binary::Mul, &dev, &coef, axes), x.shape);
    }
    let keep = axes.reduced_shape(&x.shape, true);
    let dev = x.sub(&x.sum_impl(axes, true, true, "mean_axes"));
    let gk = g.reshape(keep.dims());
    let gv = if std {
        // g / (2·std), with std replaced by 1 where it is 0 so that no 0/0 enters the graph,
        // then the zero-variance entries masked to 0.
        let zero: Vec<bool> = out.data.iter().map(|&o| o == T::ZERO).collect();
        let ok = out.reshape(keep.dims());
        let safe = Tensor::where_(&zero, keep.dims(), &Tensor::ones(keep.dims()), &ok);
        let q = gk.div(&safe.mul_scalar(2.0));
        Tensor::where_(&zero, keep.dims(), &Tensor::zeros(keep.dims()), &q)
    } else {
        gk
    };
    gv.mul(&dev).mul_scalar(scale)
}
