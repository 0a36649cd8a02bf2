//! Recording: how an op's output remembers the op that made it, and how long that memory lives.
//!
//! ## Design
//! chi records a *graph owned by its tensors*, the scheme PyTorch uses. When an op runs and at
//! least one of its inputs requires grad, `record` gives the output a `Var` (its autodiff
//! identity, behind an `Rc` shared by the tensor's clones) holding a `Node`: the [`Op`] value (which op it was, plus the
//! input tensors and values its backward rule needs), the source location of the call, and a
//! *sequence number*. Leaves (parameters, inputs marked `requires_grad`) have a `Var` without a
//! node.
//!
//! Sequence numbers come from one per-thread counter that also numbers leaves, so a node's number
//! is larger than the numbers of every tensor it was computed from. Backward
//! ([`crate::backward`]) collects the nodes reachable from its outputs and runs their rules in
//! *decreasing* sequence number: every consumer of a tensor runs before the tensor's own rule,
//! so a node's gradient is complete when its rule runs. This is the order of a Wengert list
//! walked backwards, without a shared list: two graphs built on one thread are independent.
//!
//! ## Invariants
//! 1. **Ownership points backwards only.** A tensor owns its node; a node owns its inputs. A
//!    node is freed exactly when no live tensor (held by the user or by a later node) can reach
//!    it, so forward passes whose outputs are dropped leave nothing behind, with or without
//!    `no_grad`.
//! 2. **Saved outputs do not keep their own node alive.** Rules such as `tanh` or `softmax` save
//!    their output inside their own op, a reference cycle (`Var → Node → Op → out → Var`). The
//!    node counts these self-references when it is recorded (`Node::self_refs`); when a
//!    tensor is dropped and only the self-references remain, its op is released, which breaks
//!    the cycle. This is why every strong reference to a `Var` inside chi is held by a
//!    [`Tensor`] (whose `Drop` makes the check), never by a bare `Rc<Var>` (the one exception is
//!    a short-lived second handle that backward takes while a tensor of its own holds the same
//!    `Var`, so it is never the reference whose drop would need the check).
//! 3. **Dropping is iterative.** Dropping the last tensor of a chain of a million ops must not
//!    recurse a million frames deep: a node's op is moved to a per-thread queue and the
//!    outermost drop empties the queue in a loop.
//! 4. **Backward consumes only its own graph.** A backward pass without `retain_graph` releases
//!    the ops of the nodes it ran (their saved tensors are freed as soon as each rule has run).
//!    Nothing else on the thread is touched. A later backward that reaches a released node
//!    fails with [`crate::AutodiffError::GraphFreed`], naming where the node was recorded.
//! 5. [`tape_len`] counts the nodes of this thread that still hold their op: recorded and
//!    neither released by a backward pass nor dropped. It is the probe of the memory tests.

use crate::ops::Op;
use crate::tensor::Tensor;
use chi_kernels::Real;
use std::cell::{Cell, OnceCell, RefCell};
use std::panic::Location;
use std::rc::Rc;
use std::thread::LocalKey;

/// An element type chi can differentiate: `f32` or `f64`. Each has its own per-thread state.
pub trait Float: Real {
    /// Per-thread bookkeeping of recorded nodes of this element type. Internal: the nodes
    /// themselves are reached through tensors; this only counts them and queues their drops.
    #[doc(hidden)]
    fn graph_state() -> &'static LocalKey<GraphState<Self>>;

    /// The backward walk for this element type ([`crate::backward::run_backward`]). Internal.
    /// The two implementations are not generic, so the walk, every op's backward rule and the
    /// kernels they call are compiled once, in this crate; a generic call would compile all of
    /// them again in every crate and program that calls `backward` (about 5,000 functions).
    #[doc(hidden)]
    fn backward_walk(
        roots: &[(Tensor<Self>, Tensor<Self>)],
        targets: Option<&[&Tensor<Self>]>,
        opts: crate::GradOptions,
    ) -> Result<Vec<Tensor<Self>>, crate::AutodiffError>;
}

/// Per-thread bookkeeping of recorded nodes for one element type. Internal (public only because
/// [`Float`] names it; hidden from the docs).
#[doc(hidden)]
pub struct GraphState<T: Float> {
    /// Nodes that still hold their op.
    live: Cell<usize>,
    /// Ops waiting to be dropped (see invariant 3).
    queue: RefCell<Vec<Op<T>>>,
    draining: Cell<bool>,
    /// Idle value buffers and autodiff records for reuse ([`crate::pool`]).
    pub(crate) pool: crate::pool::Pool<T>,
    /// The lists of the last backward pass, for the next one.
    pub(crate) scratch: RefCell<crate::backward::Scratch<T>>,
}

impl<T: Float> GraphState<T> {
    const fn new() -> Self {
        GraphState { live: Cell::new(0), queue: RefCell::new(Vec::new()), draining: Cell::new(false), pool: crate::pool::Pool::new(), scratch: RefCell::new(crate::backward::Scratch::new()) }
    }
}

thread_local! {
    static STATE_F32: GraphState<f32> = const { GraphState::new() };
    static STATE_F64: GraphState<f64> = const { GraphState::new() };
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
    /// The live grad-mode guards of this thread, oldest first (id, mode): the mode is the
    /// newest guard's, or on when none is live. `GRAD_ENABLED` caches it for the op path.
    static GRAD_MODES: RefCell<Vec<(u64, bool)>> = const { RefCell::new(Vec::new()) };
    static NEXT_GUARD: Cell<u64> = const { Cell::new(1) };
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
}

/// `Float` for one element type, with its own thread-local state. The methods are concrete (not
/// generic), so they are compiled here once per type (see [`Float::backward_walk`]).
macro_rules! impl_float {
    ($t:ty, $state:ident) => {
        impl Float for $t {
            fn graph_state() -> &'static LocalKey<GraphState<$t>> {
                &$state
            }
            #[inline(never)]
            fn backward_walk(
                roots: &[(Tensor<$t>, Tensor<$t>)],
                targets: Option<&[&Tensor<$t>]>,
                opts: crate::GradOptions,
            ) -> Result<Vec<Tensor<$t>>, crate::AutodiffError> {
                crate::backward::run_backward(roots, targets, opts)
            }
        }
    };
}
impl_float!(f32, STATE_F32);
impl_float!(f64, STATE_F64);

/// Counts an op as released and drops it iteratively (invariant 3), with one access to the
/// thread's state (this runs once per node of every backward pass and every recycled record).
/// `op(queue)` gives access to the op's slot: if a drop is already running on this thread it is
/// called with `true` and returns the op taken out, which is queued for that drop; otherwise it
/// is called with `false` and drops the op where it lies, and the queue is emptied afterwards.
/// When the thread's state is gone (thread exit) the op is dropped plainly.
#[inline(always)]
fn dispose<T: Float>(op: impl FnOnce(bool) -> Option<Op<T>>) {
    let mut op = Some(op);
    let ran = T::graph_state().try_with(|s| {
        s.live.set(s.live.get() - 1);
        let f = op.take().expect("called once");
        if s.draining.replace(true) {
            let taken = f(true);
            s.queue.borrow_mut().extend(taken);
        } else {
            f(false);
            if s.queue.borrow().is_empty() {
                s.draining.set(false);
            } else {
                drain_queue_slow(s);
            }
        }
    });
    if ran.is_err() {
        if let Some(f) = op {
            f(false);
        }
    }
}

/// The slot side of [`dispose`]: with `queue`, takes the op out; otherwise drops it in place.
/// Dropped in place rather than moved out first: an op is ~200 bytes, and each move of it
/// (`take`, passing it on) was a `memcpy` call on the per-op paths of backward and of record
/// recycling.
#[inline(always)]
fn take_or_drop<T: Float>(slot: &mut Option<Op<T>>, queue: bool) -> Option<Op<T>> {
    if queue {
        slot.take()
    } else {
        *slot = None;
        None
    }
}

/// Drops the op in `slot`, if any, iteratively (see [`dispose`]). Returns whether there was an
/// op.
#[inline]
pub(crate) fn dispose_op<T: Float>(slot: &mut Option<Op<T>>) -> bool {
    if slot.is_none() {
        return false;
    }
    dispose::<T>(|queue| take_or_drop(slot, queue));
    true
}

#[inline(never)]
fn drain_queue_slow<T: Float>(s: &GraphState<T>) {
    loop {
        let next = s.queue.borrow_mut().pop();
        match next {
            Some(op) => drop(op),
            None => break,
        }
    }
    s.draining.set(false);
}

/// A gradient hook: observes a gradient and may replace it (return `Some`).
pub type Hook<T> = Rc<dyn Fn(&Tensor<T>) -> Option<Tensor<T>>>;

/// A post-accumulate hook of a leaf: called with the leaf once its gradient for the current
/// backward pass is complete and stored in `.grad()` (see
/// [`Tensor::register_post_accumulate_grad_hook`]).
pub type PostAccumulateHook<T> = Rc<dyn Fn(&Tensor<T>)>;

thread_local! {
    /// Post-accumulate hooks registered on this thread and not removed. A backward pass looks
    /// for the last consumer of each hooked leaf only when this is non-zero, so passes without
    /// such hooks pay one thread-local read. (Hooks dropped with their tensor are not subtracted:
    /// the count only ever overstates, which costs a scan, never a missed hook.)
    pub(crate) static POST_HOOKS: Cell<usize> = const { Cell::new(0) };
}

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

/// Autodiff identity of a tracked tensor: leaf or op output, its gradient slot and its hooks.
/// Shared (`Rc`) by every clone of the tensor. Internal to the crate.
///
/// Kept small (state that few tensors use lives in [`VarExtra`], allocated on first use) and
/// recycled through [`crate::pool`] when its last tensor is dropped.
pub(crate) struct Var<T: Float> {
    /// Per-thread sequence number (see the module docs): larger than the ids of its inputs.
    pub(crate) id: u64,
    /// The node that produced this tensor; `None` for leaves.
    pub(crate) node: Option<Node<T>>,
    pub(crate) requires_grad: Cell<bool>,
    /// Accumulated gradient: always for leaves, for intermediates only when retained.
    pub(crate) grad: RefCell<Option<Tensor<T>>>,
    pub(crate) retain: Cell<bool>,
    /// Backward bookkeeping: `(pass id, slot)` of the pass that currently visits this tensor.
    pub(crate) mark: Cell<(u64, u32)>,
    /// Hooks, name and sparse gradient: `None` until one of them is set.
    extra: OnceCell<Box<VarExtra<T>>>,
}

/// The rarely used part of a [`Var`].
pub(crate) struct VarExtra<T: Float> {
    /// Hooks with their registration ids (for [`crate::HookHandle::remove`]).
    pub(crate) hooks: RefCell<Vec<(u64, Hook<T>)>>,
    /// Leaves only: hooks called once the pass's gradient is accumulated.
    pub(crate) post_hooks: RefCell<Vec<(u64, PostAccumulateHook<T>)>>,
    pub(crate) name: RefCell<Option<Rc<str>>>,
    /// Leaves only: gather ops deliver row-sparse gradients into `sparse_grad` instead of `grad`.
    pub(crate) sparse: Cell<bool>,
    pub(crate) sparse_grad: RefCell<Option<SparseRows<T>>>,
}

#[inline]
pub(crate) fn next_id() -> u64 {
    NEXT_ID.with(|c| {
        let v = c.get();
        c.set(v + 1);
        v
    })
}

impl<T: Float> Var<T> {
    fn new(node: Option<Node<T>>) -> Var<T> {
        Var {
            id: next_id(),
            node,
            requires_grad: Cell::new(true),
            grad: RefCell::new(None),
            retain: Cell::new(false),
            mark: Cell::new((0, 0)),
            extra: OnceCell::new(),
        }
    }
    /// A new leaf identity, on a recycled record when one is idle.
    #[inline]
    pub(crate) fn new_leaf_rc() -> Rc<Var<T>> {
        match crate::pool::take_var::<T>() {
            Some(mut rc) => {
                // Pooled records are blank (see `blank`) and unshared (pool invariant 1).
                let v = Rc::get_mut(&mut rc).expect("pooled records have one owner");
                v.id = next_id();
                v.node = None;
                rc
            }
            None => Rc::new(Var::new(None)),
        }
    }
    /// A new op-output identity with an empty node (its op is stored by `record`), on a
    /// recycled record when one is idle.
    #[inline]
    fn new_node_rc(location: &'static Location<'static>) -> Rc<Var<T>> {
        match crate::pool::take_var::<T>() {
            Some(mut rc) => {
                let v = Rc::get_mut(&mut rc).expect("pooled records have one owner");
                v.id = next_id();
                match &mut v.node {
                    // A blank record keeps its node with no op: reuse it in place.
                    Some(node) => {
                        debug_assert!(node.op.get_mut().is_none());
                        node.self_refs.set(0);
                        node.location = location;
                    }
                    None => v.node = Some(Node { op: RefCell::new(None), self_refs: Cell::new(0), location }),
                }
                rc
            }
            None => Rc::new(Var::new(Some(Node { op: RefCell::new(None), self_refs: Cell::new(0), location }))),
        }
    }
    /// Drops everything the record holds (its op through the iterative drop, gradient, hooks,
    /// name) and resets its flags to those of a new record; `new_leaf_rc`/`new_node_rc` give
    /// it a new id and node when it is reused.
    pub(crate) fn blank(&mut self) {
        // The node itself stays (without op) so that `new_node_rc` can reuse it in place.
        if let Some(node) = &mut self.node {
            dispose_op(node.op.get_mut());
        }
        // Most records (intermediates) have neither: test before dropping, which is cheaper
        // than an unconditional drop call per recycled record.
        if self.grad.get_mut().is_some() {
            *self.grad.get_mut() = None;
        }
        if self.extra.get().is_some() {
            self.extra = OnceCell::new();
        }
        self.requires_grad.set(true);
        self.retain.set(false);
        self.mark.set((0, 0));
    }
    pub(crate) fn is_leaf(&self) -> bool {
        self.node.is_none()
    }
    /// Hooks, name and sparse gradient, if any was ever set.
    #[inline]
    pub(crate) fn extra(&self) -> Option<&VarExtra<T>> {
        self.extra.get().map(|b| &**b)
    }
    /// Hooks, name and sparse gradient, allocated now if needed.
    pub(crate) fn extra_or_init(&self) -> &VarExtra<T> {
        self.extra.get_or_init(|| {
            Box::new(VarExtra {
                hooks: RefCell::new(Vec::new()),
                post_hooks: RefCell::new(Vec::new()),
                name: RefCell::new(None),
                sparse: Cell::new(false),
                sparse_grad: RefCell::new(None),
            })
        })
    }
    /// Whether gather ops deliver this leaf's gradient as rows.
    #[inline]
    pub(crate) fn is_sparse(&self) -> bool {
        self.extra().is_some_and(|e| e.sparse.get())
    }
}

/// One recorded operation, stored inside its output's [`Var`]. Internal to the crate.
pub(crate) struct Node<T: Float> {
    /// The op and the inputs its backward rule needs; `None` once released by a backward pass
    /// without `retain_graph` (or when the last outside reference to the output was dropped).
    pub(crate) op: RefCell<Option<Op<T>>>,
    /// How many references to the output's own `Var` the op holds (saved outputs).
    pub(crate) self_refs: Cell<u32>,
    /// Where the user called the op (for anomaly reports, errors and graph export).
    pub(crate) location: &'static Location<'static>,
}

impl<T: Float> Node<T> {
    /// Takes the op out (dropping its saved tensors iteratively). Returns whether there was one.
    #[inline]
    pub(crate) fn release(&self) -> bool {
        self.self_refs.set(0);
        if self.op.borrow().is_none() {
            return false;
        }
        // Dropped inside the cell (see `take_or_drop` for why not moved out). Nothing the op's
        // contents reach can borrow this cell meanwhile: ownership points backwards (invariant
        // 1), `self_refs` is 0 so dropping a saved output does not come back here, and any other
        // node's op freed by this drop is queued (invariant 3) and dropped after the borrow ends.
        dispose::<T>(|queue| take_or_drop(&mut self.op.borrow_mut(), queue));
        true
    }
}

impl<T: Float> Drop for Node<T> {
    fn drop(&mut self) {
        dispose_op(self.op.get_mut());
    }
}

/// Called by `Tensor::drop` with the dropped tensor's identity: breaks a saved-output cycle
/// (invariant 2), then recycles the record if this was its last reference.
#[inline]
pub(crate) fn drop_var<T: Float>(var: Rc<Var<T>>) {
    on_tensor_drop(&var);
    if Rc::strong_count(&var) == 1 && Rc::weak_count(&var) == 0 {
        crate::pool::recycle_var(var);
    }
}

/// If the only other references to `var` are the ones its own node saved (invariant 2),
/// release the node's op so the cycle is freed.
#[inline]
fn on_tensor_drop<T: Float>(var: &Rc<Var<T>>) {
    if let Some(node) = &var.node {
        let k = node.self_refs.get();
        if k > 0 && Rc::strong_count(var) == 1 + k as usize {
            node.self_refs.set(0);
            node.release();
        }
    }
}

/// Number of recorded nodes on this thread for `T` that still hold their saved op: neither
/// released by a backward pass nor dropped with their tensors. A memory-boundedness probe: it
/// returns to its previous value when the tensors of a graph are dropped or the graph has been
/// back-propagated without `retain_graph`.
pub fn tape_len<T: Float>() -> usize {
    T::graph_state().with(|s| s.live.get())
}

/// Does nothing: there is no shared tape any more. A graph is freed when its tensors are dropped
/// or when a backward pass without `retain_graph` has run through it.
#[deprecated(note = "graphs are freed with their tensors; drop them or use detach()/no_grad")]
pub fn clear_tape<T: Float>() {}

/// Whether ops currently record onto the tape.
#[inline]
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

/// Holds a grad mode while alive; made by [`no_grad_guard`]. Guards may be dropped in any
/// order: the mode is always that of the newest live guard (or on when none is), so dropping
/// an outer guard while an inner one lives does not switch recording back on, and dropping the
/// inner one last does not leave it off. A guard belongs to its thread (it is not `Send`): the
/// mode is per thread.
///
/// ```compile_fail
/// fn send<T: Send>(_: T) {}
/// send(chi_autodiff::no_grad_guard());
/// ```
pub struct GradModeGuard {
    id: u64,
    _not_send: std::marker::PhantomData<*const ()>,
}
impl Drop for GradModeGuard {
    fn drop(&mut self) {
        GRAD_MODES.with(|m| {
            let mut m = m.borrow_mut();
            if let Some(i) = m.iter().rposition(|&(id, _)| id == self.id) {
                m.remove(i);
            }
            GRAD_ENABLED.with(|g| g.set(m.last().is_none_or(|&(_, on)| on)));
        });
    }
}
pub(crate) fn set_grad_enabled(on: bool) -> GradModeGuard {
    let id = NEXT_GUARD.with(|n| n.replace(n.get() + 1));
    GRAD_MODES.with(|m| m.borrow_mut().push((id, on)));
    GRAD_ENABLED.with(|g| g.set(on));
    GradModeGuard { id, _not_send: std::marker::PhantomData }
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

/// Records a new op output: wraps `data` as a tensor and, if any input requires grad and grad
/// mode is on, gives it a node holding `make_op`'s op. `make_op` receives the output so rules
/// that need it (exp, tanh, softmax, ...) can save it.
///
/// Always inlined: the op is then built straight into its node instead of on the stack and
/// copied in (200 bytes), and for the one-element tensors of scalar graphs that copy and the
/// call are a measurable part of the op's cost.
#[inline(always)]
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
        if crate::anomaly::is_anomaly_enabled() {
            // Build the op only for its name; cheap relative to anomaly-mode checking.
            let op = make_op(&out);
            crate::anomaly::check_forward(&op, &out, inputs, location);
        }
        return out;
    }
    // The node lives inside the output's Var: one (recycled) allocation per recorded op.
    let out = Tensor::from_parts(data, shape, Some(Var::new_node_rc(location)));
    let var = out.var.as_ref().expect("just set");
    let node = var.node.as_ref().expect("just set");
    // Built straight into the node (`make_op` only clones tensors; it cannot reach this cell).
    // `get_or_insert_with` on the known-empty cell lets the op be built in place instead of
    // on the stack and then copied in.
    node.op.borrow_mut().get_or_insert_with(|| make_op(&out));
    // `out` holds one reference; anything above one was saved by the op itself.
    node.self_refs.set((Rc::strong_count(var) - 1) as u32);
    // Counted before the anomaly check, which may panic: the node is then dropped (and
    // uncounted) with `out` during unwinding.
    T::graph_state().with(|s| s.live.set(s.live.get() + 1));
    if crate::anomaly::is_anomaly_enabled() {
        let op = node.op.borrow();
        crate::anomaly::check_forward(op.as_ref().expect("just set"), &out, inputs, location);
    }
    out
}
