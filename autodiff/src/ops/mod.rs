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
//! nothing is recorded; one-input elementwise rules may then also write into the incoming
//! gradient's buffer (`Op::backward_in_place`), with the same results.

pub mod arith;
pub mod clamp;
pub mod conv;
pub mod custom;
pub mod cumsum;
pub mod dropout;
pub mod fused_rnn;
pub mod index;
pub mod linalg;
pub mod loss;
pub mod pointwise;
pub mod pool;
pub mod reduce;
pub mod shape_ops;
pub mod unary;
pub mod variance;

use crate::tensor::Tensor;
use crate::Float;
use chi_kernels::elementwise::{Binary, Unary};
use pointwise::Pointwise;
use reduce::Axes;
use std::rc::Rc;

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
    #[inline]
    fn deref(&self) -> &Self::Target {
        match self {
            Inputs::Inline(a, n) => &a[..*n],
            Inputs::Heap(v) => v,
        }
    }
}

/// The gradients a backward rule returns, one per input in the order of [`Op::inputs`]
/// (`None` where the input's gradient is not needed or is zero). One- and two-input rules
/// return them inline ([`Grads::one`], [`Grads::two`]), so the backward walk allocates no list
/// per node; rules with more inputs return a `Vec` (`vec.into()`).
pub enum Grads<T: Float> {
    /// The first `n` of the two entries are the gradients.
    Inline([Option<Tensor<T>>; 2], usize),
    /// Any number of gradients (concat, custom ops, three-input clamp).
    Heap(Vec<Option<Tensor<T>>>),
}

impl<T: Float> Grads<T> {
    /// The gradient of a one-input op.
    #[inline]
    pub fn one(g: Tensor<T>) -> Self {
        Grads::Inline([Some(g), None], 1)
    }
    /// The gradients of a two-input op.
    #[inline]
    pub fn two(ga: Option<Tensor<T>>, gb: Option<Tensor<T>>) -> Self {
        Grads::Inline([ga, gb], 2)
    }
}

impl<T: Float> From<Vec<Option<Tensor<T>>>> for Grads<T> {
    fn from(v: Vec<Option<Tensor<T>>>) -> Self {
        Grads::Heap(v)
    }
}

impl<T: Float> std::ops::Deref for Grads<T> {
    type Target = [Option<Tensor<T>>];
    fn deref(&self) -> &Self::Target {
        match self {
            Grads::Inline(a, n) => &a[..*n],
            Grads::Heap(v) => v,
        }
    }
}

impl<T: Float> std::ops::DerefMut for Grads<T> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            Grads::Inline(a, n) => &mut a[..*n],
            Grads::Heap(v) => v,
        }
    }
}

/// One recorded operation and the values its backward rule needs.
///
/// Fields are the op's inputs (named as in the forward function) and whatever the backward
/// rule needs saved (`out` = the forward output, `axis`, index lists). Variants that several
/// methods record (a reshape made by `unsqueeze`, a gather made by `max_pool2d`) carry the
/// calling method's `name`, so tape listings, graph exports and anomaly reports show the
/// method the user called.
#[derive(Clone)]
#[allow(missing_docs)]
pub enum Op<T: Float> {
    /// Broadcasting binary op `a ∘ b` ([`arith`]).
    Binary { op: Binary, a: Tensor<T>, b: Tensor<T> },
    /// `a ∘ s` with a constant scalar `s` ([`arith`]).
    BinaryScalar { op: Binary, a: Tensor<T>, s: T },
    /// `where(mask, a, b)` ([`arith`]).
    Where { mask: Rc<Vec<bool>>, a: Tensor<T>, b: Tensor<T> },
    /// Elementwise function with a SIMD kernel; `out` saved for rules that use it ([`unary`]).
    Unary { op: Unary, x: Tensor<T>, out: Tensor<T> },
    /// Elementwise function computed in this crate (sin, gelu, square, …) ([`pointwise`]).
    Pointwise { f: Pointwise, x: Tensor<T>, out: Tensor<T> },
    /// `clamp(x, min, max)` with constant scalar bounds ([`clamp`]).
    Clamp { x: Tensor<T>, min: Option<T>, max: Option<T> },
    /// `clamp(x, min, max)` with tensor bounds, broadcast together ([`clamp`]). Boxed so this
    /// rare variant does not grow every tape node.
    ClampTensor { x: Tensor<T>, bounds: Box<[Option<Tensor<T>>; 2]> },
    /// Matrix product, 2-D or batched ([`linalg`]).
    Matmul { a: Tensor<T>, b: Tensor<T> },
    /// Matrix product plus a bias row, `x·w + bias` ([`linalg`]); boxed so that its three
    /// inputs do not grow every tape node.
    Affine(Box<[Tensor<T>; 3]>),
    /// Axis permutation: `permute`, `transpose`, `t` ([`linalg`]).
    Permute { x: Tensor<T>, perm: Vec<usize>, name: &'static str },
    /// Same values, new shape: `reshape`, `unsqueeze`, `squeeze`, `flatten` ([`shape_ops`]).
    Reshape { x: Tensor<T>, name: &'static str },
    /// NumPy broadcast to a larger shape ([`shape_ops`]).
    BroadcastTo { x: Tensor<T> },
    /// Sum a broadcast tensor back down to `x`'s shape's target ([`shape_ops`]); adjoint of `BroadcastTo`.
    SumTo { x: Tensor<T> },
    /// Concatenation along an axis: `concat`, `stack` ([`shape_ops`]).
    Concat { xs: Vec<Tensor<T>>, axis: usize, name: &'static str },
    /// A contiguous range `start..start+len` of an axis ([`shape_ops`]).
    Narrow { x: Tensor<T>, axis: usize, start: usize },
    /// Zero padding of an axis ([`shape_ops`]); adjoint of `Narrow`.
    PadAxis { x: Tensor<T>, axis: usize, before: usize },
    /// Reversal of an axis ([`shape_ops`]).
    Flip { x: Tensor<T>, axis: usize },
    /// Sum or mean over a set of axes: `sum`, `sum_axis`, `sum_axes`, `mean`, `mean_axis` ([`reduce`]).
    Sum { x: Tensor<T>, axes: Axes, keepdim: bool, mean: bool, name: &'static str },
    /// Maximum (or minimum) along an axis or over everything; `flat` holds the flat input index
    /// of each winner: `max_axis`, `min_axis`, `max_all` ([`reduce`]).
    MaxAxis { x: Tensor<T>, flat: Rc<Vec<usize>>, name: &'static str },
    /// Softmax along an axis ([`reduce`]).
    Softmax { x: Tensor<T>, axis: usize, out: Tensor<T> },
    /// Log-softmax along an axis ([`reduce`]).
    LogSoftmax { x: Tensor<T>, axis: usize, out: Tensor<T> },
    /// Log-sum-exp along an axis ([`reduce`]).
    LogSumExp { x: Tensor<T>, axis: usize, keepdim: bool, out: Tensor<T> },
    /// Variance (`std == false`) or standard deviation over a set of axes ([`variance`]).
    Variance { x: Tensor<T>, axes: Axes, correction: f64, keepdim: bool, std: bool, out: Tensor<T> },
    /// Cumulative sum along an axis ([`cumsum`]).
    Cumsum { x: Tensor<T>, axis: usize },
    /// Flat gather `out[i] = x[idx[i]]`: `take`, `index_select`, `max_pool1d`, `max_pool2d` ([`index`]).
    Take { x: Tensor<T>, idx: Rc<Vec<usize>>, name: &'static str },
    /// Flat scatter-add into zeros of `x`'s target shape: `out[idx[i]] += x[i]` ([`index`]).
    ScatterAdd { x: Tensor<T>, idx: Rc<Vec<usize>> },
    /// Row gather `out[r] = table[ids[r]]` (embedding lookup) ([`index`]).
    GatherRows { table: Tensor<T>, ids: Rc<Vec<usize>> },
    /// Row scatter-add into a `[rows, dim]` zero table ([`index`]); adjoint of `GatherRows`.
    ScatterRows { x: Tensor<T>, ids: Rc<Vec<usize>> },
    /// Sliding-window patches `[N, C, …] → [N, P, C·K]` ([`conv`]); adjoint of `Col2Im`.
    Im2Col { x: Tensor<T>, win: conv::Window },
    /// Overlap-add of patches `[N, P, C·K] → [N, C, …]` ([`conv`]); adjoint of `Im2Col`.
    Col2Im { x: Tensor<T>, win: conv::Window },
    /// One fused LSTM time step ([`fused_rnn`]); boxed so it does not grow every tape node.
    LstmCell(Box<fused_rnn::LstmSaved<T>>),
    /// One fused GRU time step ([`fused_rnn`]).
    GruCell(Box<fused_rnn::GruSaved<T>>),
    /// A whole LSTM sequence as one node ([`fused_rnn`]).
    LstmSequence(Box<fused_rnn::LstmSeqSaved<T>>),
    /// A whole GRU sequence as one node ([`fused_rnn`]).
    GruSequence(Box<fused_rnn::GruSeqSaved<T>>),
    /// A whole CA-RNN sequence as one node ([`fused_rnn`]).
    CaRnnSequence(Box<fused_rnn::CaRnnSeqSaved<T>>),
    /// A user-defined op ([`custom`]).
    Custom { f: Rc<dyn custom::CustomOp<T>>, inputs: Vec<Tensor<T>> },
}

impl<T: Float> Op<T> {
    /// Short op name, as shown in tape listings, graph exports and error messages: the name of
    /// the method that recorded the node.
    pub fn name(&self) -> String {
        match self {
            Op::Binary { op, .. } => op.name().to_string(),
            Op::BinaryScalar { op, .. } => match op {
                Binary::Max => "max_scalar".into(),
                Binary::Min => "min_scalar".into(),
                _ => format!("{}_scalar", op.name()),
            },
            Op::Where { .. } => "where".into(),
            Op::Unary { op: Unary::Log, .. } => "ln".into(),
            Op::Unary { op, .. } => op.name().to_string(),
            Op::Pointwise { f, .. } => f.name().to_string(),
            Op::Clamp { .. } => "clamp".into(),
            Op::ClampTensor { .. } => "clamp_tensor".into(),
            Op::Matmul { .. } => "matmul".into(),
            Op::Affine(_) => "affine".into(),
            Op::Permute { name, .. }
            | Op::Reshape { name, .. }
            | Op::Concat { name, .. }
            | Op::Sum { name, .. }
            | Op::MaxAxis { name, .. }
            | Op::Take { name, .. } => name.to_string(),
            Op::BroadcastTo { .. } => "broadcast_to".into(),
            Op::SumTo { .. } => "sum_to".into(),
            Op::Narrow { .. } => "narrow".into(),
            Op::PadAxis { .. } => "pad_axis".into(),
            Op::Flip { .. } => "flip".into(),
            Op::Softmax { .. } => "softmax".into(),
            Op::LogSoftmax { .. } => "log_softmax".into(),
            Op::LogSumExp { .. } => "logsumexp".into(),
            Op::Variance { std: false, .. } => "var".into(),
            Op::Variance { std: true, .. } => "std".into(),
            Op::Cumsum { .. } => "cumsum".into(),
            Op::ScatterAdd { .. } => "scatter_add".into(),
            Op::GatherRows { .. } => "gather_rows".into(),
            Op::ScatterRows { .. } => "scatter_rows".into(),
            Op::Im2Col { .. } => "im2col".into(),
            Op::Col2Im { .. } => "col2im".into(),
            Op::LstmCell(_) => "lstm_cell".into(),
            Op::GruCell(_) => "gru_cell".into(),
            Op::LstmSequence(_) => "lstm_sequence".into(),
            Op::GruSequence(_) => "gru_sequence".into(),
            Op::CaRnnSequence(_) => "ca_rnn_sequence".into(),
            Op::Custom { f, .. } => f.name().to_string(),
        }
    }

    /// The differentiable inputs, in the order `backward` returns their gradients.
    #[inline(always)]
    pub fn inputs(&self) -> Inputs<'_, T> {
        match self {
            Op::Binary { a, b, .. } | Op::Where { a, b, .. } | Op::Matmul { a, b } => Inputs::Inline([a, b], 2),
            Op::BinaryScalar { a: x, .. }
            | Op::Unary { x, .. }
            | Op::Pointwise { x, .. }
            | Op::Clamp { x, .. }
            | Op::Permute { x, .. }
            | Op::Reshape { x, .. }
            | Op::BroadcastTo { x }
            | Op::SumTo { x }
            | Op::Narrow { x, .. }
            | Op::PadAxis { x, .. }
            | Op::Flip { x, .. }
            | Op::Sum { x, .. }
            | Op::MaxAxis { x, .. }
            | Op::Softmax { x, .. }
            | Op::LogSoftmax { x, .. }
            | Op::LogSumExp { x, .. }
            | Op::Variance { x, .. }
            | Op::Cumsum { x, .. }
            | Op::Take { x, .. }
            | Op::ScatterAdd { x, .. }
            | Op::ScatterRows { x, .. }
            | Op::Im2Col { x, .. }
            | Op::Col2Im { x, .. }
            | Op::GatherRows { table: x, .. } => Inputs::Inline([x, x], 1),
            Op::ClampTensor { x, bounds } => match &**bounds {
                [None, None] => Inputs::Inline([x, x], 1),
                [Some(b), None] | [None, Some(b)] => Inputs::Inline([x, b], 2),
                [Some(lo), Some(hi)] => Inputs::Heap(vec![x, lo, hi]),
            },
            Op::Concat { xs, .. } | Op::Custom { inputs: xs, .. } => Inputs::Heap(xs.iter().collect()),
            Op::Affine(xs) => Inputs::Heap(xs.iter().collect()),
            Op::LstmCell(s) => Inputs::Heap(s.inputs.iter().collect()),
            Op::GruCell(s) => Inputs::Heap(s.inputs.iter().collect()),
            Op::LstmSequence(s) => Inputs::Heap(s.inputs.iter().collect()),
            Op::GruSequence(s) => Inputs::Heap(s.inputs.iter().collect()),
            Op::CaRnnSequence(s) => Inputs::Heap(s.inputs.iter().collect()),
        }
    }

    /// The rules of one-input elementwise ops computed in the incoming gradient's own buffer,
    /// for passes that record nothing: turns `g` into the input's gradient, equal bit for bit
    /// to [`Op::backward`]'s, and returns the input; `None`, with `g` untouched, when the op
    /// has no such rule or `g`'s buffer is shared. Saves a buffer and a kernel call per node in
    /// chains of small ops.
    #[inline]
    pub(crate) fn backward_in_place(&self, g: &mut Tensor<T>) -> Option<&Tensor<T>> {
        match self {
            Op::BinaryScalar { op, a, s } => arith::binary_scalar_backward_in_place(*op, *s, g).then_some(a),
            Op::Unary { op, x, out } => unary::unary_backward_in_place(*op, x, out, g).then_some(x),
            _ => None,
        }
    }

    /// The backward rule: given the output `out` and the gradient `g` flowing into it, the
    /// gradient for each input (`None` where `need[i]` is false or the gradient is zero).
    ///
    /// `fast` is true when no graph is being recorded; rules may then use fused kernels.
    pub fn backward(&self, out: &Tensor<T>, g: &Tensor<T>, need: &[bool], fast: bool) -> Grads<T> {
        match self {
            Op::Binary { op, a, b } => arith::binary_backward(*op, a, b, out, g, need),
            Op::BinaryScalar { op, a, s } => Grads::one(arith::binary_scalar_backward(*op, a, *s, out, g)),
            Op::Where { mask, a, b } => arith::where_backward(mask, a, b, g, need).into(),
            Op::Unary { op, x, out } => Grads::one(unary::unary_backward(*op, x, out, g, fast)),
            Op::Pointwise { f, x, out } => Grads::one(pointwise::pointwise_backward(*f, x, out, g, fast)),
            Op::Clamp { x, min, max } => Grads::one(clamp::clamp_backward(x, *min, *max, g)),
            Op::ClampTensor { x, bounds } => clamp::clamp_tensor_backward(x, bounds, g, need).into(),
            Op::Matmul { a, b } => linalg::matmul_backward(a, b, g, need, fast),
            Op::Affine(xs) => linalg::affine_backward(&xs[0], &xs[1], &xs[2], g, need, fast).into(),
            Op::Permute { perm, .. } => Grads::one(linalg::permute_backward(perm, g)),
            Op::Reshape { x, .. } => Grads::one(g.reshape(x.shape())),
            Op::BroadcastTo { x } => Grads::one(g.sum_to(x.shape())),
            Op::SumTo { x } => Grads::one(g.broadcast_to(x.shape())),
            Op::Concat { xs, axis, .. } => shape_ops::concat_backward(xs, *axis, g, need).into(),
            Op::Narrow { x, axis, start } => Grads::one(shape_ops::narrow_backward(x, *axis, *start, g)),
            Op::PadAxis { x, axis, before } => Grads::one(g.narrow(*axis as isize, *before, x.shape()[*axis])),
            Op::Flip { axis, .. } => Grads::one(g.flip(*axis as isize)),
            Op::Sum { x, axes, mean, .. } => Grads::one(reduce::sum_backward(x, *axes, *mean, g, fast)),
            Op::MaxAxis { x, flat, .. } => Grads::one(g.reshape(&[g.numel()]).scatter_add(flat.clone(), x.shape())),
            Op::Softmax { axis, out, .. } => Grads::one(reduce::softmax_backward(out, *axis, g, fast)),
            Op::LogSoftmax { axis, out, .. } => Grads::one(reduce::log_softmax_backward(out, *axis, g, fast)),
            Op::LogSumExp { x, axis, keepdim, out } => Grads::one(reduce::logsumexp_backward(x, *axis, *keepdim, out, g)),
            Op::Variance { x, axes, correction, std, out, .. } => Grads::one(variance::variance_backward(x, *axes, *correction, *std, out, g, fast)),
            Op::Cumsum { axis, .. } => Grads::one(cumsum::cumsum_backward(*axis, g, fast)),
            Op::Take { x, idx, .. } => Grads::one(g.reshape(&[g.numel()]).scatter_add(idx.clone(), x.shape())),
            Op::ScatterAdd { x, idx } => Grads::one(g.take(idx.clone(), x.shape())),
            Op::GatherRows { table, ids } => Grads::one(g.scatter_rows(ids.clone(), table.shape()[0])),
            Op::ScatterRows { x, ids } => Grads::one(g.gather_rows(ids.clone(), x.shape())),
            Op::Im2Col { win, .. } => Grads::one(g.col2im(*win)),
            Op::Col2Im { win, .. } => Grads::one(g.im2col(*win)),
            Op::LstmCell(s) => fused_rnn::lstm_cell_backward(s, out, g, need, fast).into(),
            Op::GruCell(s) => fused_rnn::gru_cell_backward(s, g, need, fast).into(),
            Op::LstmSequence(s) => fused_rnn::lstm_sequence_backward(s, out, g, need, fast).into(),
            Op::GruSequence(s) => fused_rnn::gru_sequence_backward(s, out, g, need, fast).into(),
            Op::CaRnnSequence(s) => fused_rnn::ca_rnn_sequence_backward(s, out, g, need, fast).into(),
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
                grads.into()
            }
        }
    }
}
