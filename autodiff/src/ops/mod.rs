//! Differentiable operations.
//!
//! Each family lives in its own module with the forward function (a method on [`Tensor`]) and
//! its backward rule side by side. This file holds the [`Op`] enum (what a tape node records)
//! and the one `match` that sends each node to its rule, so the whole set of backward rules can
//! be audited from here.
//!
//! Backward rules are written with the same differentiable ops. When backward runs with
//! `create_graph`, those ops are recorded on the tape in turn, which is how chi gets second and
//! higher derivatives. Without it, rules may take fused kernel shortcuts (`fast` paths), and
//! nothing is recorded.

pub mod arith;
pub mod custom;
pub mod index;
pub mod linalg;
pub mod loss;
pub mod nn;
pub mod reduce;
pub mod shape_ops;
pub mod unary;

use crate::tensor::Tensor;
use crate::Float;
use chi_kernels::elementwise::{Binary, Unary};
use std::rc::Rc;

/// Registry entries for ops defined in modules added after the core set (see
/// [`crate::registry`]); each op family appends its cases here.
pub(crate) fn registry_extra() -> Vec<crate::registry::OpCase> {
    let mut v = nn::registry();
    v.extend(loss::registry());
    v
}

/// The inputs of an op ([`Op::inputs`]), as a slice. One- and two-input ops (almost all of
/// them) keep the list inline, so the backward walk does not allocate a list per node.
pub enum Inputs<'a, T: Float> {
    /// The first `n` of the two references are the inputs.
    Inline([&'a Tensor<T>; 2], usize),
    /// Ops with any number of inputs (concat, custom ops).
    Heap(Vec<&'a Tensor<T>>),
}

impl<'a, T: Float> std::ops::Deref for Inputs<'a, T> {
    type Target = [&'a Tensor<T>];
    fn deref(&self) -> &Self::Target {
        match self {
            Inputs::Inline(a, n) => &a[..*n],
            Inputs::Heap(v) => v,
        }
    }
}

/// One recorded operation and the values its backward rule needs.
///
/// Fields are the op's inputs (named as in the forward function) and whatever the backward
/// rule needs saved (`out` = the forward output, `axis`, index lists).
#[derive(Clone)]
#[allow(missing_docs)]
pub enum Op<T: Float> {
    /// Broadcasting binary op `a ∘ b` ([`arith`]).
    Binary { op: Binary, a: Tensor<T>, b: Tensor<T> },
    /// `a ∘ s` with a constant scalar `s` ([`arith`]).
    BinaryScalar { op: Binary, a: Tensor<T>, s: T },
    /// `where(mask, a, b)` ([`arith`]).
    Where { mask: Rc<Vec<bool>>, a: Tensor<T>, b: Tensor<T> },
    /// Elementwise function; `out` saved for rules that use it ([`unary`]).
    Unary { op: Unary, x: Tensor<T>, out: Tensor<T> },
    /// Matrix product, 2-D or batched ([`linalg`]).
    Matmul { a: Tensor<T>, b: Tensor<T> },
    /// Axis permutation ([`linalg`]).
    Permute { x: Tensor<T>, perm: Vec<usize> },
    /// Same values, new shape ([`shape_ops`]).
    Reshape { x: Tensor<T> },
    /// NumPy broadcast to a larger shape ([`shape_ops`]).
    BroadcastTo { x: Tensor<T> },
    /// Sum a broadcast tensor back down to `x`'s shape's target ([`shape_ops`]); adjoint of `BroadcastTo`.
    SumTo { x: Tensor<T> },
    /// Concatenation along an axis ([`shape_ops`]).
    Concat { xs: Vec<Tensor<T>>, axis: usize },
    /// A contiguous range `start..start+len` of an axis ([`shape_ops`]).
    Narrow { x: Tensor<T>, axis: usize, start: usize },
    /// Zero padding of an axis ([`shape_ops`]); adjoint of `Narrow`.
    PadAxis { x: Tensor<T>, axis: usize, before: usize },
    /// Reversal of an axis ([`shape_ops`]).
    Flip { x: Tensor<T>, axis: usize },
    /// Sum along one axis ([`reduce`]).
    SumAxis { x: Tensor<T>, axis: usize, keepdim: bool },
    /// Maximum along one axis; `flat` holds the flat input index of each maximum ([`reduce`]).
    MaxAxis { x: Tensor<T>, axis: usize, keepdim: bool, flat: Rc<Vec<usize>> },
    /// Softmax along an axis ([`reduce`]).
    Softmax { x: Tensor<T>, axis: usize, out: Tensor<T> },
    /// Log-softmax along an axis ([`reduce`]).
    LogSoftmax { x: Tensor<T>, axis: usize, out: Tensor<T> },
    /// Log-sum-exp along an axis ([`reduce`]).
    LogSumExp { x: Tensor<T>, axis: usize, keepdim: bool, out: Tensor<T> },
    /// Flat gather `out[i] = x[idx[i]]` ([`index`]).
    Take { x: Tensor<T>, idx: Rc<Vec<usize>> },
    /// Flat scatter-add into zeros of `x`'s target shape: `out[idx[i]] += x[i]` ([`index`]).
    ScatterAdd { x: Tensor<T>, idx: Rc<Vec<usize>> },
    /// Row gather `out[r] = table[ids[r]]` (embedding lookup) ([`index`]).
    GatherRows { table: Tensor<T>, ids: Rc<Vec<usize>> },
    /// Row scatter-add into a `[rows, dim]` zero table ([`index`]); adjoint of `GatherRows`.
    ScatterRows { x: Tensor<T>, ids: Rc<Vec<usize>> },
    /// Sliding-window patches `[N, C, …] → [N, P, C·K]` ([`nn`]); adjoint of `Col2Im`.
    Im2Col { x: Tensor<T>, win: nn::Window },
    /// Overlap-add of patches `[N, P, C·K] → [N, C, …]` ([`nn`]); adjoint of `Im2Col`.
    Col2Im { x: Tensor<T>, win: nn::Window },
    /// A user-defined op ([`custom`]).
    Custom { f: Rc<dyn custom::CustomOp<T>>, inputs: Vec<Tensor<T>> },
}

impl<T: Float> Op<T> {
    /// Short op name, as shown in tape listings, graph exports and error messages.
    pub fn name(&self) -> String {
        match self {
            Op::Binary { op, .. } => op.name().to_string(),
            Op::BinaryScalar { op, .. } => format!("{}_scalar", op.name()),
            Op::Where { .. } => "where".into(),
            Op::Unary { op, .. } => op.name().to_string(),
            Op::Matmul { .. } => "matmul".into(),
            Op::Permute { .. } => "permute".into(),
            Op::Reshape { .. } => "reshape".into(),
            Op::BroadcastTo { .. } => "broadcast_to".into(),
            Op::SumTo { .. } => "sum_to".into(),
            Op::Concat { .. } => "concat".into(),
            Op::Narrow { .. } => "narrow".into(),
            Op::PadAxis { .. } => "pad_axis".into(),
            Op::Flip { .. } => "flip".into(),
            Op::SumAxis { .. } => "sum".into(),
            Op::MaxAxis { .. } => "max".into(),
            Op::Softmax { .. } => "softmax".into(),
            Op::LogSoftmax { .. } => "log_softmax".into(),
            Op::LogSumExp { .. } => "logsumexp".into(),
            Op::Take { .. } => "take".into(),
            Op::ScatterAdd { .. } => "scatter_add".into(),
            Op::GatherRows { .. } => "gather_rows".into(),
            Op::ScatterRows { .. } => "scatter_rows".into(),
            Op::Im2Col { .. } => "im2col".into(),
            Op::Col2Im { .. } => "col2im".into(),
            Op::Custom { f, .. } => f.name().to_string(),
        }
    }

    /// The differentiable inputs, in the order `backward` returns their gradients.
    pub fn inputs(&self) -> Inputs<'_, T> {
        match self {
            Op::Binary { a, b, .. } | Op::Where { a, b, .. } | Op::Matmul { a, b } => Inputs::Inline([a, b], 2),
            Op::BinaryScalar { a: x, .. }
            | Op::Unary { x, .. }
            | Op::Permute { x, .. }
            | Op::Reshape { x }
            | Op::BroadcastTo { x }
            | Op::SumTo { x }
            | Op::Narrow { x, .. }
            | Op::PadAxis { x, .. }
            | Op::Flip { x, .. }
            | Op::SumAxis { x, .. }
            | Op::MaxAxis { x, .. }
            | Op::Softmax { x, .. }
            | Op::LogSoftmax { x, .. }
            | Op::LogSumExp { x, .. }
            | Op::Take { x, .. }
            | Op::ScatterAdd { x, .. }
            | Op::ScatterRows { x, .. }
            | Op::Im2Col { x, .. }
            | Op::Col2Im { x, .. }
            | Op::GatherRows { table: x, .. } => Inputs::Inline([x, x], 1),
            Op::Concat { xs, .. } | Op::Custom { inputs: xs, .. } => Inputs::Heap(xs.iter().collect()),
        }
    }

    /// The backward rule: given the output `out` and the gradient `g` flowing into it, the
    /// gradient for each input (`None` where `need[i]` is false or the gradient is zero).
    ///
    /// `fast` is true when no graph is being recorded; rules may then use fused kernels.
    pub fn backward(&self, out: &Tensor<T>, g: &Tensor<T>, need: &[bool], fast: bool) -> Vec<Option<Tensor<T>>> {
        match self {
            Op::Binary { op, a, b } => arith::binary_backward(*op, a, b, out, g, need),
            Op::BinaryScalar { op, a, s } => vec![Some(arith::binary_scalar_backward(*op, a, *s, out, g))],
            Op::Where { mask, a, b } => arith::where_backward(mask, a, b, g, need),
            Op::Unary { op, x, out } => vec![Some(unary::unary_backward(*op, x, out, g, fast))],
            Op::Matmul { a, b } => linalg::matmul_backward(a, b, g, need, fast),
            Op::Permute { perm, .. } => vec![Some(linalg::permute_backward(perm, g))],
            Op::Reshape { x } => vec![Some(g.reshape(x.shape()))],
            Op::BroadcastTo { x } => vec![Some(g.sum_to(x.shape()))],
            Op::SumTo { x } => vec![Some(g.broadcast_to(x.shape()))],
            Op::Concat { xs, axis } => shape_ops::concat_backward(xs, *axis, g, need),
            Op::Narrow { x, axis, start } => vec![Some(shape_ops::narrow_backward(x, *axis, *start, g))],
            Op::PadAxis { x, axis, before } => vec![Some(g.narrow(*axis as isize, *before, x.shape()[*axis]))],
            Op::Flip { axis, .. } => vec![Some(g.flip(*axis as isize))],
            Op::SumAxis { x, axis, keepdim } => vec![Some(reduce::sum_axis_backward(x, *axis, *keepdim, g))],
            Op::MaxAxis { x, flat, .. } => vec![Some(g.reshape(&[g.numel()]).scatter_add(flat.clone(), x.shape()))],
            Op::Softmax { axis, out, .. } => vec![Some(reduce::softmax_backward(out, *axis, g, fast))],
            Op::LogSoftmax { axis, out, .. } => vec![Some(reduce::log_softmax_backward(out, *axis, g, fast))],
            Op::LogSumExp { x, axis, keepdim, out } => vec![Some(reduce::logsumexp_backward(x, *axis, *keepdim, out, g))],
            Op::Take { x, idx } => vec![Some(g.reshape(&[g.numel()]).scatter_add(idx.clone(), x.shape()))],
            Op::ScatterAdd { x, idx } => vec![Some(g.take(idx.clone(), x.shape()))],
            Op::GatherRows { table, ids } => vec![Some(g.scatter_rows(ids.clone(), table.shape()[0]))],
            Op::ScatterRows { x, ids } => vec![Some(g.gather_rows(ids.clone(), x.shape()))],
            Op::Im2Col { win, .. } => vec![Some(g.col2im(*win))],
            Op::Col2Im { win, .. } => vec![Some(g.im2col(*win))],
            Op::Custom { f, inputs } => {
                let refs: Vec<&Tensor<T>> = inputs.iter().collect();
                let grads = f.backward(&refs, out, g);
                assert!(
                    grads.len() == inputs.len(),
                    "custom op {}: backward returned {} gradients for {} inputs",
                    f.name(),
                    grads.len(),
                    inputs.len()
                );
                grads
            }
        }
    }
}
