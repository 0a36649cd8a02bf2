//! `clamp`: limit values to `[min, max]`, with scalar bounds ([`Tensor::clamp`]) or tensor bounds
//! that broadcast ([`Tensor::clamp_tensor`]).
//!
//! Forward is PyTorch's `min(max(x, min), max)`: when `min > max` every output is `max`, and a
//! NaN input stays NaN. The gradient is a 0/1 mask (its own derivative is zero), with PyTorch's
//! conventions at the kinks, where the function has no derivative: the boundary counts as
//! *inside*, so `x` receives the gradient wherever `min ≤ x ≤ max`.

use crate::ops::Op;
use crate::tape::record;
use crate::tensor::Tensor;
use crate::{Float, Shape};
use std::panic::Location;

/// PyTorch's clamp of one value: `min(max(x, lo), hi)`, NaN-propagating.
#[inline(always)]
fn clamp1<T: Float>(x: T, lo: Option<T>, hi: Option<T>) -> T {
    let mut v = x;
    if let Some(l) = lo {
        if v < l {
            v = l;
        }
    }
    if let Some(h) = hi {
        if v > h {
            v = h;
        }
    }
    v
}

impl<T: Float> Tensor<T> {
    /// Clamps every element to `[min, max]` (either bound may be `None`), as PyTorch's
    /// `torch.clamp(x, min, max)`.
    ///
    /// If `min > max`, every element becomes `max`. Gradient: `x` gets the incoming gradient
    /// where `min ≤ x ≤ max` (the boundary counts as inside, as in PyTorch) and 0 elsewhere.
    ///
    /// ```
    /// use chi_autodiff::Tensor;
    /// let x = Tensor::<f64>::from_vec(vec![-2.0, -1.0, 0.5, 3.0], &[4]).requires_grad();
    /// let y = x.clamp(Some(-1.0), Some(1.0));
    /// assert_eq!(y.to_vec(), vec![-1.0, -1.0, 0.5, 1.0]);
    /// y.sum().backward();
    /// assert_eq!(x.grad().unwrap().to_vec(), vec![0.0, 1.0, 1.0, 0.0]); // −1 is on the boundary
    /// ```
    #[track_caller]
    pub fn clamp(&self, min: Option<f64>, max: Option<f64>) -> Tensor<T> {
        let loc = Location::caller();
        assert!(!min.is_some_and(f64::is_nan) && !max.is_some_and(f64::is_nan), "clamp: a bound is NaN (min {min:?}, max {max:?}); give None for no bound");
        let (lo, hi) = (min.map(T::from_f64), max.map(T::from_f64));
        let out: Vec<T> = self.data.iter().map(|&v| clamp1(v, lo, hi)).collect();
        record(out, self.shape, &[self], loc, |_| Op::Clamp { x: self.clone(), min: lo, max: hi })
    }

    /// Clamps elementwise to tensor bounds `min`, `max` (either may be `None`), broadcasting
    /// `self` and the bounds together, as PyTorch's `torch.clamp(x, min=Tensor, max=Tensor)`.
    /// The output has the broadcast shape. Panics if the shapes do not broadcast.
    ///
    /// Gradients follow PyTorch's rules (each summed back to its input's shape):
    /// * `x`: where `min ≤ x ≤ max` (boundary inside);
    /// * `min`: where `x < min` and `min < max`;
    /// * `max`: where `x > max`, or where `max < min` (then the output is `max`).
    ///
    /// At `x == min` the gradient goes to `x`, not to `min`; with only one bound the rules keep
    /// just that bound's condition.
    #[track_caller]
    pub fn clamp_tensor(&self, min: Option<&Tensor<T>>, max: Option<&Tensor<T>>) -> Tensor<T> {
        let loc = Location::caller();
        let mut shape = self.shape;
        for b in [min, max].into_iter().flatten() {
            shape = Shape::broadcast(&shape, &b.shape).unwrap_or_else(|| {
                panic!("clamp_tensor: shapes {:?} and {:?} cannot be broadcast together", self.shape, b.shape)
            });
        }
        let x = self.detach().broadcast_to(shape.dims());
        let lo = min.map(|t| t.detach().broadcast_to(shape.dims()));
        let hi = max.map(|t| t.detach().broadcast_to(shape.dims()));
        let out: Vec<T> = (0..shape.numel())
            .map(|i| clamp1(x.data[i], lo.as_ref().map(|t| t.data[i]), hi.as_ref().map(|t| t.data[i])))
            .collect();
        let mut inputs = vec![self];
        inputs.extend([min, max].into_iter().flatten());
        record(out, shape, &inputs, loc, |_| Op::ClampTensor {
            x: self.clone(),
            bounds: Box::new([min.cloned(), max.cloned()]),
        })
    }
}

/// A constant 0/1 tensor of `shape` from a predicate on the flat index.
fn mask<T: Float>(shape: &[usize], n: usize, pred: impl Fn(usize) -> bool) -> Tensor<T> {
    Tensor::from_vec((0..n).map(|i| if pred(i) { T::ONE } else { T::ZERO }).collect(), shape)
}

pub(crate) fn clamp_backward<T: Float>(x: &Tensor<T>, lo: Option<T>, hi: Option<T>, g: &Tensor<T>) -> Tensor<T> {
    let inside = mask(x.shape(), x.numel(), |i| {
        let v = x.data[i];
        lo.is_none_or(|l| v >= l) && hi.is_none_or(|h| v <= h)
    });
    g.mul(&inside)
}

pub(crate) fn clamp_tensor_backward<T: Float>(x: &Tensor<T>, bounds: &[Option<Tensor<T>>; 2], g: &Tensor<T>, need: &[bool]) -> Vec<Option<Tensor<T>>> {
    let shape = g.shape();
    let n = g.numel();
    let xb = x.detach().broadcast_to(shape);
    let lo = bounds[0].as_ref().map(|t| t.detach().broadcast_to(shape));
    let hi = bounds[1].as_ref().map(|t| t.detach().broadcast_to(shape));
    let (xv, lv, hv) = (&xb.data, lo.as_ref().map(|t| &t.data), hi.as_ref().map(|t| &t.data));
    let mut grads = Vec::with_capacity(3);
    let mut k = 0;
    // x
    grads.push(need[k].then(|| {
        let m = mask(shape, n, |i| lv.is_none_or(|l| xv[i] >= l[i]) && hv.is_none_or(|h| xv[i] <= h[i]));
        g.mul(&m).sum_to(x.shape())
    }));
    k += 1;
    if let (Some(b), Some(l)) = (&bounds[0], lv) {
        grads.push(need[k].then(|| {
            let m = mask(shape, n, |i| xv[i] < l[i] && hv.is_none_or(|h| l[i] < h[i]));
            g.mul(&m).sum_to(b.shape())
        }));
        k += 1;
    }
    if let (Some(b), Some(h)) = (&bounds[1], hv) {
        grads.push(need[k].then(|| {
            let m = mask(shape, n, |i| xv[i] > h[i] || lv.is_some_and(|l| h[i] < l[i]));
            g.mul(&m).sum_to(b.shape())
        }));
    }
    grads
}
