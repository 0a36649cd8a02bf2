//! The tape: a Wengert list of the operations executed on tracked tensors.
//!
//! ## How it works
//! Every thread has one tape per element type (`f32`, `f64`). When an op runs and at least one of
//! its inputs *requires grad*, the op appends a [`Node`] to the tape: which op it was (an
//! [`Op`] value holding the inputs it needs for its backward rule), the output tensor, and the
//! source location that called it. The output gets a [`Var`] that remembers its position on
//! the tape. Leaves (parameters, inputs marked `requires_grad`) have a `Var` but no position.
//!
//! `backward` walks the tape from the output's position down to 0. Because a node is always
//! appended after its inputs, walking in reverse order visits every node after all the nodes
//! that consume it: by the time we reach a node its gradient is complete.
//!
//! After a backward pass the tape is freed (unless `retain_graph` is asked for): its nodes are
//! dropped and its *generation* counter moves on, so a tensor from an old generation used in a
//! backward pass is reported as "tape already freed" instead of silently reading a stale node.

use crate::ops::Op;
use crate::tensor::Tensor;
use chi_kernels::Real;
use std::cell::{Cell, RefCell};
use std::panic::Location;
use std::rc::Rc;
use std::thread::LocalKey;

/// An element type chi can differentiate: `f32` or `f64`. Each has its own tape per thread.
pub trait Float: Real {
    #[doc(hidden)]
    fn tape() -> &'static LocalKey<RefCell<Tape<Self>>>;
}

thread_local! {
    static TAPE_F32: RefCell<Tape<f32>> = RefCell::new(Tape::new());
    static TAPE_F64: RefCell<Tape<f64>> = RefCell::new(Tape::new());
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
    static ANOMALY: Cell<bool> = const { Cell::new(false) };
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
}

impl Float for f32 {
    fn tape() -> &'static LocalKey<RefCell<Tape<f32>>> {
        &TAPE_F32
    }
}
impl Float for f64 {
    fn tape() -> &'static LocalKey<RefCell<Tape<f64>>> {
        &TAPE_F64
    }
}

/// A gradient hook: observes a gradient and may replace it (return `Some`).
pub type Hook<T> = Rc<dyn Fn(&Tensor<T>) -> Option<Tensor<T>>>;

/// Gradient rows of a sparse embedding table: row `ids[r]` receives `values[r, :]`.
#[derive(Clone, Debug)]
pub struct SparseRows<T: Float> {
    /// Row indices (may repeat; repeated rows add).
    pub ids: Vec<usize>,
    /// `[ids.len(), dim]` gradient rows.
    pub values: Vec<T>,
    /// Row length.
    pub dim: usize,
    /// Rows in the full table.
    pub rows: usize,
}

impl<T: Float> SparseRows<T> {
    /// The dense `[rows, dim]` gradient this sparse one stands for.
    pub fn to_dense(&self) -> Tensor<T> {
        let mut d = vec![T::ZERO; self.rows * self.dim];
        chi_kernels::gather::scatter_add_rows(&self.values, self.dim, &self.ids, &mut d);
        Tensor::from_vec(d, &[self.rows, self.dim])
    }
}

/// Autodiff identity of a tracked tensor: leaf or tape node, its gradient slot and its hooks.
/// Shared (`Rc`) by every clone of the tensor.
pub struct Var<T: Float> {
    pub(crate) id: u64,
    /// `(generation, index)` on the tape for op outputs; `None` for leaves.
    pub(crate) node: Option<(u64, u32)>,
    pub(crate) requires_grad: Cell<bool>,
    /// Accumulated gradient: always for leaves, for intermediates only when retained.
    pub(crate) grad: RefCell<Option<Tensor<T>>>,
    pub(crate) retain: Cell<bool>,
    pub(crate) hooks: RefCell<Vec<Hook<T>>>,
    pub(crate) name: RefCell<Option<Rc<str>>>,
    /// Leaves only: gather ops deliver row-sparse gradients into `sparse_grad` instead of `grad`.
    pub(crate) sparse: Cell<bool>,
    pub(crate) sparse_grad: RefCell<Option<SparseRows<T>>>,
}

impl<T: Float> Var<T> {
    pub(crate) fn new(node: Option<(u64, u32)>) -> Var<T> {
        let id = NEXT_ID.with(|c| {
            let v = c.get();
            c.set(v + 1);
            v
        });
        Var {
            id,
            node,
            requires_grad: Cell::new(true),
            grad: RefCell::new(None),
            retain: Cell::new(false),
            hooks: RefCell::new(Vec::new()),
            name: RefCell::new(None),
            sparse: Cell::new(false),
            sparse_grad: RefCell::new(None),
        }
    }
    pub(crate) fn is_leaf(&self) -> bool {
        self.node.is_none()
    }
}

/// One recorded operation.
pub struct Node<T: Float> {
    /// The op and the inputs its backward rule needs.
    pub(crate) op: Op<T>,
    /// The output (its `Var` points back at this node's index).
    pub(crate) out: Tensor<T>,
    /// Where the user called the op (for anomaly reports and graph export).
    pub(crate) location: &'static Location<'static>,
}

/// The Wengert list of one thread and element type.
pub struct Tape<T: Float> {
    pub(crate) nodes: Vec<Node<T>>,
    pub(crate) generation: u64,
}

impl<T: Float> Tape<T> {
    fn new() -> Tape<T> {
        Tape { nodes: Vec::new(), generation: 0 }
    }
    /// Drops every node and starts a new generation.
    pub(crate) fn free(&mut self) {
        self.nodes.clear();
        self.generation += 1;
    }
}

/// Number of nodes currently on this thread's tape for `T` (a memory-boundedness probe).
pub fn tape_len<T: Float>() -> usize {
    T::tape().with(|t| t.borrow().nodes.len())
}

/// Drops this thread's tape for `T` (every recorded node). Tensors computed before can no
/// longer be differentiated through; their values stay valid.
pub fn clear_tape<T: Float>() {
    T::tape().with(|t| t.borrow_mut().free())
}

/// Whether ops currently record onto the tape.
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

/// Restores the previous grad mode when dropped. Made by [`no_grad_guard`].
pub struct GradModeGuard {
    prev: bool,
}
impl Drop for GradModeGuard {
    fn drop(&mut self) {
        GRAD_ENABLED.with(|g| g.set(self.prev));
    }
}
pub(crate) fn set_grad_enabled(on: bool) -> GradModeGuard {
    let prev = GRAD_ENABLED.with(|g| g.replace(on));
    GradModeGuard { prev }
}

/// Disables recording until the guard is dropped (like `torch.no_grad()`).
pub fn no_grad_guard() -> GradModeGuard {
    set_grad_enabled(false)
}

/// Runs `f` without recording any op (evaluation, parameter updates).
///
/// ```
/// use chi_autodiff::{Tensor, no_grad};
/// let w = Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2]).requires_grad();
/// let y = no_grad(|| w.mul_scalar(3.0));
/// assert!(!y.is_tracked());
/// ```
pub fn no_grad<R>(f: impl FnOnce() -> R) -> R {
    let _g = set_grad_enabled(false);
    f()
}

/// Whether anomaly detection is on for this thread.
pub fn is_anomaly_enabled() -> bool {
    ANOMALY.with(|a| a.get())
}

/// Turns anomaly detection on or off for this thread. When on, every op checks its output and
/// every backward rule checks the gradients it produces for NaN/Inf, and the first non-finite
/// value produced from finite inputs panics with an [`crate::Anomaly`] naming the forward op that
/// produced it. Use [`crate::detect_anomaly`] to get it as a `Result` instead.
pub fn set_anomaly_enabled(on: bool) {
    ANOMALY.with(|a| a.set(on));
}

/// Records a new op output: wraps `data` as a tensor and, if any input requires grad and grad
/// mode is on, appends a node to the tape. `make_op` receives the output so rules that need it
/// (exp, tanh, softmax, ...) can save it.
pub(crate) fn record<T: Float>(
    data: impl Into<Rc<Vec<T>>>,
    shape: crate::Shape,
    inputs: &[&Tensor<T>],
    location: &'static Location<'static>,
    make_op: impl FnOnce(&Tensor<T>) -> Op<T>,
) -> Tensor<T> {
    let data: Rc<Vec<T>> = data.into();
    debug_assert_eq!(data.len(), shape.numel(), "op produced {} values for shape {shape:?}", data.len());
    let tracked = is_grad_enabled() && inputs.iter().any(|t| t.requires_grad_flag());
    if !tracked {
        let out = Tensor::from_parts(data, shape, None);
        if is_anomaly_enabled() {
            // Build the op only for its name; cheap relative to anomaly-mode checking.
            let op = make_op(&out);
            crate::anomaly::check_forward(&op, &out, inputs, location);
        }
        return out;
    }
    T::tape().with(|tape| {
        let mut tape = tape.borrow_mut();
        let index = tape.nodes.len();
        assert!(index < u32::MAX as usize, "tape overflow: more than 2^32 nodes; call backward or clear_tape");
        let var = Rc::new(Var::new(Some((tape.generation, index as u32))));
        let out = Tensor::from_parts(data, shape, Some(var));
        let op = make_op(&out);
        if is_anomaly_enabled() {
            crate::anomaly::check_forward(&op, &out, inputs, location);
        }
        tape.nodes.push(Node { op, out: out.clone(), location });
        out
    })
}
