//! Shape ops: reshape, broadcast_to, sum_to, concat, stack, split, narrow, pad, flip,
//! index_select, squeeze/unsqueeze. Each backward is the adjoint data movement
//! (narrow ↔ pad, broadcast ↔ sum_to, concat → narrows, flip → flip).

use crate::ops::Op;
use crate::tape::record;
use crate::tensor::Tensor;
use crate::{Float, Shape};
use std::panic::Location;
use std::rc::Rc;

impl<T: Float> Tensor<T> {
    /// Same values, new shape (no copy). Panics if the element counts differ.
    #[track_caller]
    pub fn reshape(&self, shape: &[usize]) -> Tensor<T> {
        self.reshape_named(shape, "reshape")
    }
    #[track_caller]
    fn reshape_named(&self, shape: &[usize], name: &'static str) -> Tensor<T> {
        let loc = Location::caller();
        let s = Shape::new(shape);
        assert!(s.numel() == self.numel(), "reshape: cannot reshape {:?} ({} elements) to {s:?} ({} elements)", self.shape, self.numel(), s.numel());
        if s == self.shape {
            return self.clone();
        }
        record(Rc::clone(&self.data), s, &[self], loc, |_| Op::Reshape { x: self.clone(), name })
    }
    /// Inserts an axis of size 1 at `axis`.
    #[track_caller]
    pub fn unsqueeze(&self, axis: usize) -> Tensor<T> {
        assert!(axis <= self.rank(), "unsqueeze: axis {axis} out of range for shape {:?}", self.shape);
        let mut s = self.shape().to_vec();
        s.insert(axis, 1);
        self.reshape_named(&s, "unsqueeze")
    }
    /// Removes an axis of size 1.
    #[track_caller]
    pub fn squeeze(&self, axis: isize) -> Tensor<T> {
        let a = self.shape.axis("squeeze", axis);
        assert!(self.shape()[a] == 1, "squeeze: axis {axis} of shape {:?} has size {}, not 1", self.shape, self.shape()[a]);
        self.reshape_named(self.shape.without(a).dims(), "squeeze")
    }
    /// Flattens to rank 1.
    #[track_caller]
    pub fn flatten(&self) -> Tensor<T> {
        self.reshape_named(&[self.numel()], "flatten")
    }

    /// NumPy broadcast to `shape` (copies).
    #[track_caller]
    pub fn broadcast_to(&self, shape: &[usize]) -> Tensor<T> {
        let loc = Location::caller();
        let target = Shape::new(shape);
        if target == self.shape {
            return self.clone();
        }
        let st = self.shape.broadcast_strides(&target).unwrap_or_else(|| panic!("broadcast_to: shape {:?} cannot be broadcast to {target:?}", self.shape));
        let mut out = crate::pool::zeros(target.numel());
        // out = 0 + x (broadcast): reuses the broadcasting kernel with a zero-stride zero.
        chi_kernels::elementwise::binary_broadcast(
            chi_kernels::elementwise::Binary::Add,
            &self.data,
            &st,
            &[T::ZERO],
            &vec![0; target.rank()],
            &mut out,
            target.dims(),
        );
        record(out, target, &[self], loc, |_| Op::BroadcastTo { x: self.clone() })
    }
    /// Sums a tensor down to `shape`, the adjoint of broadcasting `shape` up to `self`'s shape.
    #[track_caller]
    pub fn sum_to(&self, shape: &[usize]) -> Tensor<T> {
        let loc = Location::caller();
        let target = Shape::new(shape);
        if target == self.shape {
            return self.clone();
        }
        let st = target.broadcast_strides(&self.shape).unwrap_or_else(|| panic!("sum_to: shape {target:?} does not broadcast to {:?}", self.shape));
        let mut out = crate::pool::zeros(target.numel());
        chi_kernels::reduce::reduce_broadcast(&self.data, self.shape(), &st, &mut out);
        record(out, target, &[self], loc, |_| Op::SumTo { x: self.clone() })
    }

    /// Concatenates tensors along `axis`; all other dimensions must agree.
    #[track_caller]
    pub fn concat(xs: &[Tensor<T>], axis: isize) -> Tensor<T> {
        Tensor::concat_named(xs, axis, "concat")
    }
    #[track_caller]
    fn concat_named(xs: &[Tensor<T>], axis: isize, name: &'static str) -> Tensor<T> {
        let loc = Location::caller();
        assert!(!xs.is_empty(), "{name}: no tensors given");
        let first = &xs[0];
        let ax = first.shape.axis(name, axis);
        let mut total = 0;
        for x in xs {
            assert!(
                x.rank() == first.rank() && (0..first.rank()).all(|d| d == ax || x.shape()[d] == first.shape()[d]),
                "{name}: shapes {:?} and {:?} differ outside axis {ax}",
                first.shape,
                x.shape
            );
            total += x.shape()[ax];
        }
        let out_shape = first.shape.with_dim(ax, total);
        let (outer, _, inner) = out_shape.split_at_axis(ax);
        let mut out = Vec::with_capacity(out_shape.numel());
        for o in 0..outer {
            for x in xs {
                let chunk = x.shape()[ax] * inner;
                out.extend_from_slice(&x.data[o * chunk..(o + 1) * chunk]);
            }
        }
        let refs: Vec<&Tensor<T>> = xs.iter().collect();
        record(out, out_shape, &refs, loc, |_| Op::Concat { xs: xs.to_vec(), axis: ax, name })
    }
    /// Stacks equally shaped tensors along a new axis.
    #[track_caller]
    pub fn stack(xs: &[Tensor<T>], axis: usize) -> Tensor<T> {
        let loc = Location::caller();
        assert!(!xs.is_empty(), "stack: no tensors given");
        let first = &xs[0];
        assert!(axis <= first.rank(), "stack: axis {axis} out of range for shape {:?}", first.shape);
        for x in xs {
            assert!(x.shape == first.shape, "stack: shapes {:?} and {:?} differ", first.shape, x.shape);
        }
        let mut dims = first.shape().to_vec();
        dims.insert(axis, xs.len());
        let out_shape = Shape::new(&dims);
        // Each input is a block of `inner` values per step of the axes before `axis`.
        let inner: usize = first.shape()[axis..].iter().product();
        let outer: usize = first.shape()[..axis].iter().product();
        let mut out = Vec::with_capacity(out_shape.numel());
        for o in 0..outer {
            for x in xs {
                out.extend_from_slice(&x.data[o * inner..(o + 1) * inner]);
            }
        }
        let refs: Vec<&Tensor<T>> = xs.iter().collect();
        // Recorded as a concatenation of the inputs viewed with a size-1 axis at `axis`; its
        // backward reshapes each slice back to the input's shape.
        record(out, out_shape, &refs, loc, |_| Op::Concat { xs: xs.to_vec(), axis, name: "stack" })
    }
    /// Splits along `axis` into pieces of the given sizes (which must add up to the axis length).
    #[track_caller]
    pub fn split(&self, sizes: &[usize], axis: isize) -> Vec<Tensor<T>> {
        let ax = self.shape.axis("split", axis);
        let total = sizes.iter().try_fold(0usize, |a, &s| a.checked_add(s));
        assert!(total == Some(self.shape()[ax]), "split: sizes {sizes:?} do not add up to {} (axis {ax} of {:?})", self.shape()[ax], self.shape);
        let mut start = 0;
        sizes
            .iter()
            .map(|&s| {
                let t = self.narrow(ax as isize, start, s);
                start += s;
                t
            })
            .collect()
    }
    /// Splits along `axis` into `n` equal pieces.
    #[track_caller]
    pub fn chunk(&self, n: usize, axis: isize) -> Vec<Tensor<T>> {
        let ax = self.shape.axis("chunk", axis);
        let len = self.shape()[ax];
        assert!(n > 0 && len % n == 0, "chunk: axis {ax} of {:?} (length {len}) does not split into {n} equal pieces", self.shape);
        self.split(&vec![len / n; n], ax as isize)
    }
    /// The range `start..start+len` of axis `axis` (copies).
    #[track_caller]
    pub fn narrow(&self, axis: isize, start: usize, len: usize) -> Tensor<T> {
        let loc = Location::caller();
        let ax = self.shape.axis("narrow", axis);
        let n = self.shape()[ax];
        let end = start.checked_add(len);
        assert!(
            end.is_some_and(|end| end <= n),
            "narrow: range {start}..{} is out of bounds for axis {ax} of shape {:?}",
            end.map_or(format!("{start}+{len} (overflows)"), |e| e.to_string()),
            self.shape
        );
        if start == 0 && len == n {
            return self.clone();
        }
        let (outer, _, inner) = self.shape.split_at_axis(ax);
        let mut out = Vec::with_capacity(outer * len * inner);
        for o in 0..outer {
            let base = (o * n + start) * inner;
            out.extend_from_slice(&self.data[base..base + len * inner]);
        }
        record(out, self.shape.with_dim(ax, len), &[self], loc, |_| Op::Narrow { x: self.clone(), axis: ax, start })
    }
    /// Zero-pads axis `axis` with `before` zeros in front and `after` behind.
    #[track_caller]
    pub fn pad_axis(&self, axis: isize, before: usize, after: usize) -> Tensor<T> {
        let loc = Location::caller();
        let ax = self.shape.axis("pad_axis", axis);
        if before == 0 && after == 0 {
            return self.clone();
        }
        let (outer, n, inner) = self.shape.split_at_axis(ax);
        let total = n.checked_add(before).and_then(|t| t.checked_add(after));
        let Some(total) = total.filter(|&t| t.checked_mul(outer * inner).is_some()) else {
            panic!("pad_axis: padding axis {ax} of shape {:?} by {before} and {after} gives more elements than a usize can count", self.shape);
        };
        let mut out = crate::pool::zeros(outer * total * inner);
        for o in 0..outer {
            let dst = (o * total + before) * inner;
            out[dst..dst + n * inner].copy_from_slice(&self.data[o * n * inner..(o + 1) * n * inner]);
        }
        record(out, self.shape.with_dim(ax, total), &[self], loc, |_| Op::PadAxis { x: self.clone(), axis: ax, before })
    }
    /// Reverses axis `axis`.
    #[track_caller]
    pub fn flip(&self, axis: isize) -> Tensor<T> {
        let loc = Location::caller();
        let ax = self.shape.axis("flip", axis);
        let (outer, n, inner) = self.shape.split_at_axis(ax);
        let mut out = Vec::with_capacity(self.numel());
        for o in 0..outer {
            for j in (0..n).rev() {
                let base = (o * n + j) * inner;
                out.extend_from_slice(&self.data[base..base + inner]);
            }
        }
        record(out, self.shape, &[self], loc, |_| Op::Flip { x: self.clone(), axis: ax })
    }
    /// Selects entries `idx` along `axis` (repeats allowed; gradients of repeats accumulate).
    #[track_caller]
    pub fn index_select(&self, axis: isize, idx: &[usize]) -> Tensor<T> {
        let ax = self.shape.axis("index_select", axis);
        let (outer, n, inner) = self.shape.split_at_axis(ax);
        for &i in idx {
            assert!(i < n, "index_select: index {i} is out of range for axis {ax} of shape {:?}", self.shape);
        }
        let mut flat = Vec::with_capacity(outer * idx.len() * inner);
        for o in 0..outer {
            for &j in idx {
                flat.extend((0..inner).map(|i| (o * n + j) * inner + i));
            }
        }
        self.take_named(Rc::new(flat), self.shape.with_dim(ax, idx.len()).dims(), "index_select")
    }
}

pub(crate) fn concat_backward<T: Float>(xs: &[Tensor<T>], axis: usize, g: &Tensor<T>, need: &[bool]) -> Vec<Option<Tensor<T>>> {
    let mut start = 0;
    xs.iter()
        .zip(need)
        .map(|(x, &nd)| {
            // A stacked input lacks the axis (it was a size-1 slice): restore its own shape.
            let len = if x.rank() < g.rank() { 1 } else { x.shape()[axis] };
            let r = nd.then(|| g.narrow(axis as isize, start, len).reshape(x.shape()));
            start += len;
            r
        })
        .collect()
}

pub(crate) fn narrow_backward<T: Float>(x: &Tensor<T>, axis: usize, start: usize, g: &Tensor<T>) -> Tensor<T> {
    let n = x.shape()[axis];
    let len = g.shape()[axis];
    g.pad_axis(axis as isize, start, n - start - len)
}
