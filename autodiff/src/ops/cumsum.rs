//! Cumulative sum along an axis. Linear, so smooth everywhere; its adjoint is the reversed
//! cumulative sum (`flip ∘ cumsum ∘ flip`).

use crate::ops::Op;
use crate::tape::record;
use crate::tensor::Tensor;
use crate::Float;
use std::panic::Location;

/// Inclusive scan along the middle axis of an `[outer, n, inner]` layout, forwards or (for the
/// adjoint) backwards. The inner loop runs over contiguous `inner`-long rows, so it vectorises.
fn scan<T: Float>(x: &[T], outer: usize, n: usize, inner: usize, reverse: bool) -> Vec<T> {
    let mut out = x.to_vec();
    for o in 0..outer {
        let base = o * n * inner;
        for step in 1..n {
            let (prev, cur) = if reverse { (n - step, n - step - 1) } else { (step - 1, step) };
            let (p, c) = (base + prev * inner, base + cur * inner);
            for i in 0..inner {
                let acc = out[p + i];
                out[c + i] += acc;
            }
        }
    }
    out
}

impl<T: Float> Tensor<T> {
    /// Cumulative sum along `axis` (negative counts from the end), as `torch.cumsum`:
    /// `out[…, j, …] = Σ_{k ≤ j} x[…, k, …]`.
    ///
    /// ```
    /// use chi_autodiff::Tensor;
    /// let x = Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    /// assert_eq!(x.cumsum(1).to_vec(), vec![1.0, 3.0, 6.0, 4.0, 9.0, 15.0]);
    /// assert_eq!(x.cumsum(0).to_vec(), vec![1.0, 2.0, 3.0, 5.0, 7.0, 9.0]);
    /// ```
    #[track_caller]
    pub fn cumsum(&self, axis: isize) -> Tensor<T> {
        let loc = Location::caller();
        let ax = self.shape.axis("cumsum", axis);
        let (outer, n, inner) = self.shape.split_at_axis(ax);
        let out = scan(&self.data, outer, n, inner, false);
        record(out, self.shape, &[self], loc, |_| Op::Cumsum { x: self.clone(), axis: ax })
    }
}

/// `dx[j] = Σ_{k ≥ j} g[k]` along the axis.
pub(crate) fn cumsum_backward<T: Float>(axis: usize, g: &Tensor<T>, fast: bool) -> Tensor<T> {
    if fast {
        let (outer, n, inner) = g.shape.split_at_axis(axis);
        return Tensor::from_vec(scan(&g.data, outer, n, inner, true), g.shape());
    }
    let a = axis as isize;
    g.flip(a).cumsum(a).flip(a)
}
