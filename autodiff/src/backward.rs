//! Reverse mode: the backward walk over the tape, `Tensor::backward`, and the functional
//! [`grad`] (a vector–Jacobian product for any outputs and any inputs, leaves or intermediates).
//!
//! A pass runs in three steps: *discovery* collects every node reachable from the outputs
//! (each visited tensor gets a slot, found again through its record's `mark`); the nodes are
//! sorted by decreasing sequence number (see [`crate::tape`]); then each node's rule turns its
//! complete gradient into its inputs' gradients. Passes that record nothing (no
//! `create_graph`, no anomaly detection) first try `Op::backward_in_place`: a one-input
//! elementwise rule whose incoming gradient has no other owner writes the input's gradient into
//! that same buffer, with the bits the general rule would give. A gradient that is also kept
//! elsewhere (a retained `.grad`, a hook's copy, a target of [`grad`]) has another owner, so
//! it is never written.

use crate::anomaly;
use crate::ops::{Grads, Op};
use crate::tape::{set_grad_enabled, Float, SparseRows, Var};
use crate::tensor::Tensor;
use std::fmt;
use std::rc::Rc;

/// Options of a backward pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct GradOptions {
    /// Record the backward computation on the tape, so the gradients can be differentiated again
    /// (grad of grad, Hessian–vector products). Implies `retain_graph` unless that is set.
    pub create_graph: bool,
    /// Keep the tape after this pass (default: `create_graph`). Without it the tape is freed.
    pub retain_graph: Option<bool>,
}

impl GradOptions {
    /// `create_graph = true` (and so the tape is retained).
    pub fn create_graph() -> Self {
        GradOptions { create_graph: true, retain_graph: None }
    }
    /// `retain_graph = true`.
    pub fn retain_graph() -> Self {
        GradOptions { create_graph: false, retain_graph: Some(true) }
    }
}

/// What can go wrong in a backward pass.
#[derive(Debug, Clone)]
pub enum AutodiffError {
    /// The output does not depend on anything that requires grad.
    NotTracked(String),
    /// `backward` or `grad` on an unrecorded tensor inside a backward pass (a gradient hook),
    /// where ops are not recorded unless the outer pass has `create_graph`.
    InsideBackward(String),
    /// `backward()` without a seed needs a one-element output.
    NonScalar(Vec<usize>),
    /// A seed's shape differs from its output's.
    SeedShape {
        /// output shape
        output: Vec<usize>,
        /// seed shape
        seed: Vec<usize>,
    },
    /// [`grad`] was given a different number of seeds than outputs.
    SeedCount {
        /// number of outputs
        outputs: usize,
        /// number of seeds
        seeds: usize,
    },
    /// Part of this graph was released by an earlier backward pass without `retain_graph`.
    GraphFreed {
        /// The op whose saved values are gone, as `shape … recorded at file:line:col`.
        node: String,
    },
    /// A [`crate::CustomOp`]'s backward returned a different number of gradients than the op
    /// has inputs.
    CustomGradientCount {
        /// The custom op's name.
        op: String,
        /// Number of inputs (gradients expected).
        expected: usize,
        /// Number of gradients returned.
        actual: usize,
    },
    /// A [`crate::CustomOp`]'s backward returned a gradient whose shape differs from its input's.
    CustomGradientShape {
        /// The custom op's name.
        op: String,
        /// Which input.
        input: usize,
        /// The input's shape.
        expected: Vec<usize>,
        /// The shape of the returned gradient.
        actual: Vec<usize>,
    },
    /// A gradient hook returned a replacement of another shape than the gradient it was given.
    HookShape {
        /// The gradient's shape.
        expected: Vec<usize>,
        /// The replacement's shape.
        actual: Vec<usize>,
    },
    /// A tensor given to a transform has the wrong shape.
    Shape {
        /// Which argument (`"jvp: tangent"`, …).
        what: String,
        /// The shape it must have.
        expected: Vec<usize>,
        /// The shape it has.
        actual: Vec<usize>,
    },
    /// A DOT export or listing was asked for a graph that needs something it does not have.
    Graph(String),
    /// Anomaly mode found a NaN or Inf.
    Anomaly(anomaly::Anomaly),
}

impl fmt::Display for AutodiffError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AutodiffError::NotTracked(w) => write!(f, "{w}: tensor does not require grad (nothing it was computed from requires grad)"),
            AutodiffError::InsideBackward(w) => write!(
                f,
                "{w}: called inside a backward pass (a gradient hook), where ops are not recorded unless the outer pass has create_graph, so this tensor has no graph; run it after the outer backward returns, or give that one create_graph"
            ),
            AutodiffError::NonScalar(s) => write!(
                f,
                "backward: output has shape {s:?}; backward() without a seed needs a one-element output (pass a seed of the output's shape to backward_with or grad)"
            ),
            AutodiffError::SeedShape { output, seed } => write!(f, "backward: seed shape {seed:?} differs from output shape {output:?}"),
            AutodiffError::SeedCount { outputs, seeds } => {
                write!(f, "grad: {seeds} seed(s) for {outputs} output(s); give one seed per output, or none")
            }
            AutodiffError::GraphFreed { node } => write!(
                f,
                "backward: the saved values of the op of {node} were released by an earlier backward pass through this graph; pass GradOptions::retain_graph() to the first pass to differentiate twice, or detach() values carried across steps"
            ),
            AutodiffError::CustomGradientCount { op, expected, actual } => {
                write!(f, "custom op `{op}`: its backward returned {actual} gradient(s) for {expected} input(s)")
            }
            AutodiffError::CustomGradientShape { op, input, expected, actual } => write!(
                f,
                "custom op `{op}`: its backward returned a gradient of shape {actual:?} for input {input} of shape {expected:?}"
            ),
            AutodiffError::HookShape { expected, actual } => {
                write!(f, "gradient hook returned shape {actual:?} for a gradient of shape {expected:?}")
            }
            AutodiffError::Shape { what, expected, actual } => write!(f, "{what} has shape {actual:?}, expected {expected:?}"),
            AutodiffError::Graph(m) => write!(f, "{m}"),
            AutodiffError::Anomaly(a) => write!(f, "{a}"),
        }
    }
}
impl std::error::Error for AutodiffError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AutodiffError::Anomaly(a) => Some(a),
            _ => None,
        }
    }
}
impl From<anomaly::Anomaly> for AutodiffError {
    fn from(a: anomaly::Anomaly) -> Self {
        AutodiffError::Anomaly(a)
    }
}

/// Adds `g` to the gradient in `slot`. Inlined for the usual case of a first contribution.
#[inline]
fn accumulate<T: Float>(slot: &mut Option<Tensor<T>>, g: Tensor<T>, create: bool) {
    if slot.is_none() {
        *slot = Some(g);
    } else {
        accumulate_sum(slot, g, create);
    }
}

#[inline(never)]
fn accumulate_sum<T: Float>(slot: &mut Option<Tensor<T>>, g: Tensor<T>, create: bool) {
    match slot.take() {
        None => *slot = Some(g),
        Some(mut acc) => {
            if !create && acc.shape == g.shape {
                if let Some(v) = acc.values_mut_if_unique() {
                    // Sole owner of an untracked buffer: add in place, no allocation.
                    chi_kernels::elementwise::axpy(T::ONE, &g.data, v);
                    *slot = Some(acc);
                    return;
                }
            }
            *slot = Some(acc.add(&g));
        }
    }
}

/// Adds the gradient `g` of `x.narrow(axis, start, ·)` to `x`'s gradient in `slot`. When the
/// gradient accumulated so far is an untracked buffer of its own, `g` is added into its slice in
/// place, so a sequence model that takes one step at a time from a projection of the whole
/// sequence pays O(step) per step instead of zero-padding a whole-sequence gradient for every
/// step (O(T²) over the sequence). Otherwise `g` is padded, as the rule of `Op::Narrow` does.
fn accumulate_narrow<T: Float>(slot: &mut Option<Tensor<T>>, x: &Tensor<T>, axis: usize, start: usize, g: Tensor<T>) {
    if let Some(acc) = slot.as_mut() {
        if acc.shape == x.shape {
            if let Some(v) = acc.values_mut_if_unique() {
                let (outer, len, inner) = g.shape.split_at_axis(axis);
                let n = x.shape()[axis];
                for o in 0..outer {
                    let dst = (o * n + start) * inner;
                    chi_kernels::elementwise::axpy(T::ONE, &g.data[o * len * inner..(o + 1) * len * inner], &mut v[dst..dst + len * inner]);
                }
                return;
            }
        }
    }
    accumulate(slot, crate::ops::shape_ops::narrow_backward(x, axis, start, &g), false);
}

fn accumulate_into<T: Float>(cell: &std::cell::RefCell<Option<Tensor<T>>>, g: Tensor<T>, create: bool) {
    let mut slot = cell.borrow_mut();
    let mut s = slot.take();
    accumulate(&mut s, g, create);
    *slot = s;
}

/// Runs the tensor's gradient hooks on `g`, replacing it where a hook returns a new one.
/// Inlined for the usual case of a tensor without hooks (no name, no hook, no sparse
/// gradient: no `VarExtra` at all); `g` is updated in place so that case moves nothing.
#[inline]
fn run_hooks<T: Float>(var: &Var<T>, g: &mut Tensor<T>) -> Result<(), AutodiffError> {
    match var.extra() {
        None => Ok(()),
        Some(extra) => run_hooks_of(extra, g),
    }
}

#[inline(never)]
fn run_hooks_of<T: Float>(extra: &crate::tape::VarExtra<T>, g: &mut Tensor<T>) -> Result<(), AutodiffError> {
    if extra.hooks.borrow().is_empty() {
        return Ok(());
    }
    let hooks: Vec<_> = extra.hooks.borrow().iter().map(|(_, h)| h.clone()).collect();
    for h in hooks {
        if let Some(r) = h(g) {
            if r.shape != g.shape {
                return Err(AutodiffError::HookShape { expected: g.shape().to_vec(), actual: r.shape().to_vec() });
            }
            *g = r;
        }
    }
    Ok(())
}

/// The leaves of the pass that have post-accumulate hooks, each with the position in `order`
/// of the last node (in processing order) that consumes it, sorted by that position.
#[inline(never)]
fn leaves_with_post_hooks<T: Float>(pass: &Pass<T>, order: &[(u64, u32)]) -> Vec<(u32, u32)> {
    let mut last: Vec<u32> = vec![u32::MAX; pass.slots.len()];
    for (pos, &(_, s)) in order.iter().enumerate() {
        let node = var_of(&pass.tensors[s as usize]).node.as_ref().expect("node slot");
        let op = node.op.borrow();
        let Some(op) = op.as_ref() else { continue };
        for x in op.inputs().iter() {
            let Some(i) = existing(pass.id, x) else { continue };
            let v = var_of(x);
            if v.is_leaf() && v.extra().is_some_and(|e| !e.post_hooks.borrow().is_empty()) {
                last[i] = pos as u32;
            }
        }
    }
    let mut early: Vec<(u32, u32)> = last.iter().enumerate().filter(|(_, &p)| p != u32::MAX).map(|(i, &p)| (p, i as u32)).collect();
    early.sort_unstable();
    early
}

/// Hands a leaf its complete gradient of this pass: its gradient hooks, accumulation into
/// `.grad`, then its post-accumulate hooks. Nothing when no gradient reached it.
fn deliver_leaf<T: Float>(t: &Tensor<T>, slot: &mut Option<Tensor<T>>, create: bool) -> Result<(), AutodiffError> {
    let Some(mut g) = slot.take() else { return Ok(()) };
    let v = var_of(t);
    run_hooks(v, &mut g)?;
    accumulate_into(&v.grad, g, create);
    run_post_hooks(v, t);
    Ok(())
}

/// Calls a leaf's post-accumulate hooks with the leaf (a copy of the list, so a hook may remove
/// itself).
#[inline]
fn run_post_hooks<T: Float>(var: &Var<T>, t: &Tensor<T>) {
    let Some(extra) = var.extra() else { return };
    if extra.post_hooks.borrow().is_empty() {
        return;
    }
    let hooks: Vec<_> = extra.post_hooks.borrow().iter().map(|(_, h)| h.clone()).collect();
    for h in hooks {
        h(t);
    }
}

thread_local! {
    static PASS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The state of one tensor visited by a backward pass (a node's output or a leaf). The tensor
/// itself is kept at the same index of `Pass::tensors`, apart from this mutable state, so the
/// main loop can read a node (its op, its output) while writing the gradients of its inputs
/// without cloning the output tensor.
struct Slot<T: Float> {
    grad: Option<Tensor<T>>,
    /// The `Var::mark` this pass overwrote (restored at the end, so passes can nest).
    prev: (u64, u32),
    /// Index among `grad`'s targets.
    target: Option<u32>,
    /// Targets mode: whether some input of this node leads to a target.
    propagate: bool,
    /// Discovery has looked at this node's inputs.
    explored: bool,
}

/// The identity of a tensor visited by a backward pass.
#[inline]
fn var_of<T: Float>(t: &Tensor<T>) -> &Rc<Var<T>> {
    t.var.as_ref().expect("backward visits tracked tensors only")
}

/// The slot of `t` in the pass numbered `pass`, if that pass has visited it.
#[inline]
fn existing<T: Float>(pass: u64, t: &Tensor<T>) -> Option<usize> {
    let (p, s) = t.var.as_ref()?.mark.get();
    (p == pass).then_some(s as usize)
}

/// The lists of a finished backward pass, kept per thread (in [`crate::tape::GraphState`]) so
/// the next pass does not grow them from nothing. A pass nested inside another (a hook that
/// runs backward) finds the cache empty and uses fresh lists.
#[doc(hidden)]
pub struct Scratch<T: Float> {
    /// Always empty between passes (only its capacity is kept).
    tensors: Vec<Tensor<T>>,
    slots: Vec<Slot<T>>,
    order: Vec<(u64, u32)>,
    stack: Vec<usize>,
    leaves: Vec<u32>,
}

/// Lists longer than this are returned to the allocator after a pass instead of being kept.
const MAX_KEPT_SLOTS: usize = 1 << 13;

impl<T: Float> Scratch<T> {
    pub(crate) const fn new() -> Self {
        Scratch { tensors: Vec::new(), slots: Vec::new(), order: Vec::new(), stack: Vec::new(), leaves: Vec::new() }
    }
}

/// The state of one backward pass (see the module docs of [`crate::tape`] for the order).
struct Pass<T: Float> {
    id: u64,
    /// The visited tensors (each holds its `Var`, so the nodes stay alive during the pass).
    tensors: Vec<Tensor<T>>,
    /// Their state, at the same indices.
    slots: Vec<Slot<T>>,
    /// Node slots with their sequence numbers, sorted into the order their rules run. The
    /// number is read during discovery, while the record is in cache, so sorting does not walk
    /// the records again.
    order: Vec<(u64, u32)>,
    /// Discovery stack.
    stack: Vec<usize>,
    /// Slots of leaves, in the order they were reached (for the final delivery loop, which
    /// then need not look at every visited record).
    leaves: Vec<u32>,
}

impl<T: Float> Pass<T> {
    fn new() -> Self {
        let id = PASS.with(|p| {
            let v = p.get() + 1;
            p.set(v);
            v
        });
        let sc = T::graph_state().try_with(|g| std::mem::replace(&mut *g.scratch.borrow_mut(), Scratch::new())).unwrap_or(Scratch::new());
        Pass { id, tensors: sc.tensors, slots: sc.slots, order: sc.order, stack: sc.stack, leaves: sc.leaves }
    }
    /// The slot of a tracked tensor, and whether it was created now.
    #[inline]
    fn slot_of(&mut self, t: &Tensor<T>) -> (usize, bool) {
        let v = t.var.as_ref().expect("tracked");
        let (p, s) = v.mark.get();
        if p == self.id {
            return (s as usize, false);
        }
        let idx = self.slots.len();
        v.mark.set((self.id, idx as u32));
        if v.is_leaf() {
            self.leaves.push(idx as u32);
        }
        self.tensors.push(t.clone());
        self.slots.push(Slot { grad: None, prev: (p, s), target: None, propagate: false, explored: false });
        (idx, true)
    }
}

impl<T: Float> Drop for Pass<T> {
    fn drop(&mut self) {
        for (t, s) in self.tensors.iter().zip(&self.slots).rev() {
            var_of(t).mark.set(s.prev);
        }
        // Dropping the tensors may free graphs (and recycle their records); no borrow is held.
        self.slots.clear();
        self.tensors.clear();
        if self.slots.capacity() > MAX_KEPT_SLOTS {
            return;
        }
        self.order.clear();
        self.stack.clear();
        self.leaves.clear();
        let sc = Scratch {
            tensors: std::mem::take(&mut self.tensors),
            slots: std::mem::take(&mut self.slots),
            order: std::mem::take(&mut self.order),
            stack: std::mem::take(&mut self.stack),
            leaves: std::mem::take(&mut self.leaves),
        };
        let _ = T::graph_state().try_with(move |g| {
            let mut cur = g.scratch.borrow_mut();
            // Keep the larger lists when passes nested.
            if cur.slots.capacity() < sc.slots.capacity() {
                *cur = sc;
            }
        });
    }
}

fn describe_node<T: Float>(t: &Tensor<T>) -> String {
    let loc = t.var.as_ref().and_then(|v| v.node.as_ref()).map(|n| n.location.to_string()).unwrap_or_default();
    format!("the tensor of shape {:?} recorded at {loc}", t.shape())
}

thread_local! {
    /// Backward passes running on this thread (hooks may start another).
    static PASS_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Counts a running backward pass until dropped.
struct PassDepth(());

impl PassDepth {
    fn enter() -> PassDepth {
        PASS_DEPTH.with(|d| d.set(d.get() + 1));
        PassDepth(())
    }
}

impl Drop for PassDepth {
    fn drop(&mut self) {
        PASS_DEPTH.with(|d| d.set(d.get() - 1));
    }
}

/// The backward walk. `roots` are `(output, seed)` pairs. With `targets`, returns the gradient
/// of each target (zeros if it does not influence the outputs) and leaves `.grad` untouched;
/// without, accumulates into the `.grad` of leaves (and of retained intermediates).
pub(crate) fn run_backward<T: Float>(
    roots: &[(Tensor<T>, Tensor<T>)],
    targets: Option<&[&Tensor<T>]>,
    opts: GradOptions,
) -> Result<Vec<Tensor<T>>, AutodiffError> {
    let create = opts.create_graph;
    let retain = opts.retain_graph.unwrap_or(create);
    for (r, seed) in roots {
        if !r.requires_grad_flag() {
            if PASS_DEPTH.with(|d| d.get() > 0) && !crate::tape::is_grad_enabled() {
                return Err(AutodiffError::InsideBackward("backward".into()));
            }
            return Err(AutodiffError::NotTracked("backward".into()));
        }
        if seed.shape != r.shape {
            return Err(AutodiffError::SeedShape { output: r.shape().to_vec(), seed: seed.shape().to_vec() });
        }
    }
    let mut pass = Pass::<T>::new();
    let n_targets = targets.map_or(0, |t| t.len());
    let mut results: Vec<Option<Tensor<T>>> = vec![None; n_targets];
    // A tensor given twice as a target gets its gradient in both places.
    let mut target_alias: Vec<usize> = (0..n_targets).collect();
    if let Some(ts) = targets {
        for (k, t) in ts.iter().enumerate() {
            let (s, _) = pass.slot_of(t);
            match pass.slots[s].target {
                Some(first) => target_alias[k] = first as usize,
                None => pass.slots[s].target = Some(k as u32),
            }
        }
    }
    let mut stack = std::mem::take(&mut pass.stack);
    for (r, seed) in roots {
        let (s, _) = pass.slot_of(r);
        accumulate(&mut pass.slots[s].grad, seed.clone(), create);
        stack.push(s);
    }
    // Discovery: every node reachable from the roots through tracked inputs.
    let mut order = std::mem::take(&mut pass.order);
    while let Some(s) = stack.pop() {
        if pass.slots[s].explored {
            continue;
        }
        pass.slots[s].explored = true;
        // A second handle on the identity, not a clone of the tensor (no value buffer or shape
        // to copy, no drop check), so the node can be read while `slot_of` appends to the
        // lists. `pass.tensors[s]` holds the tensor until the pass ends, so this handle is never
        // the last one and dropping it can neither free nor recycle the record.
        let var = Rc::clone(var_of(&pass.tensors[s]));
        let Some(node) = var.node.as_ref() else { continue };
        order.push((var.id, s as u32));
        let op = node.op.borrow();
        let Some(op) = op.as_ref() else { continue };
        for x in op.inputs().iter() {
            if x.requires_grad_flag() {
                let (i, _) = pass.slot_of(x);
                if !pass.slots[i].explored {
                    stack.push(i);
                }
            }
        }
    }
    // Decreasing sequence number: consumers before producers.
    order.sort_unstable_by_key(|&(id, _)| std::cmp::Reverse(id));
    if targets.is_some() {
        for &(_, s) in order.iter().rev() {
            let s = s as usize;
            let node = var_of(&pass.tensors[s]).node.as_ref().expect("node slot");
            let op = node.op.borrow();
            let Some(op) = op.as_ref() else {
                // Released: what it leads to is unknown; if a gradient reaches it, the pass must
                // report the released graph rather than return zeros. Unless it is itself a
                // target below which no other target can lie: tensors are numbered in creation
                // order and an op's inputs exist before its output, so only targets numbered
                // before it could be reached through it.
                let me = var_of(&pass.tensors[s]).id;
                let below = targets.expect("checked").iter().any(|t| t.id().is_some_and(|id| id < me));
                pass.slots[s].propagate = pass.slots[s].target.is_none() || below;
                continue;
            };
            let mut p = false;
            for x in op.inputs().iter() {
                if let Some(i) = existing(pass.id, x) {
                    p |= pass.slots[i].target.is_some() || pass.slots[i].propagate;
                }
            }
            pass.slots[s].propagate = p;
        }
    }

    // Leaves with post-accumulate hooks get their gradient as soon as their last consumer's
    // rule has run: `(position in order of that consumer, leaf slot)`, by position.
    let mut early: Vec<(u32, u32)> = Vec::new();
    if targets.is_none() && crate::tape::POST_HOOKS.with(|c| c.get()) > 0 {
        early = leaves_with_post_hooks(&pass, &order);
    }
    let mut next_early = 0;

    let capture = anomaly::is_capturing();
    let _mode = set_grad_enabled(create);
    let _depth = PassDepth::enter();
    for (pos, &(_, s)) in order.iter().enumerate() {
        while next_early < early.len() && (early[next_early].0 as usize) < pos {
            let i = early[next_early].1 as usize;
            deliver_leaf(&pass.tensors[i], &mut pass.slots[i].grad, create)?;
            next_early += 1;
        }
        let s = s as usize;
        let Some(mut g) = pass.slots[s].grad.take() else { continue };
        // Borrowed, not cloned: the rule only writes `pass.slots`, never `pass.tensors`.
        let out = &pass.tensors[s];
        let var = var_of(out);
        let node = var.node.as_ref().expect("node slot");
        run_hooks(var, &mut g)?;
        if var.retain.get() {
            accumulate_into(&var.grad, g.clone(), create);
        }
        if let Some(k) = pass.slots[s].target {
            accumulate(&mut results[k as usize], g.clone(), create);
        }
        if targets.is_some() && !pass.slots[s].propagate {
            continue;
        }
        // Without retain_graph the node's op is released when this iteration ends (`release`
        // is declared before the borrow, so it is dropped after it): its saved tensors are freed
        // as soon as its rule has run (lower peak memory), and a second pass gets a clear error.
        // Its saved outputs no longer count as self-references, so nothing dropped during the
        // rule can try to release the op while it is borrowed.
        if !retain {
            node.self_refs.set(0);
        }
        let _release = ReleaseOnDrop(if retain { None } else { Some(node) });
        let borrowed = node.op.borrow();
        let Some(op) = borrowed.as_ref() else {
            return Err(AutodiffError::GraphFreed { node: describe_node(out) });
        };
        // One-input elementwise rules, when the pass holds the only reference to `g`: the
        // input's gradient is computed in `g`'s buffer (same bits, no new buffer), before the
        // general bookkeeping below. Its input is needed: a one-input node's input required
        // grad when recorded (checked again, a leaf may have been frozen since), and in targets
        // mode a node whose input leads to no target was skipped above. Not under anomaly
        // detection, which checks the rule's output against `g`.
        if !create && !anomaly::is_anomaly_enabled() {
            if let Some(x) = op.backward_in_place(&mut g) {
                if x.requires_grad_flag() {
                    debug_assert!(g.shape == x.shape);
                    let i = existing(pass.id, x).expect("inputs of a visited node were discovered");
                    accumulate(&mut pass.slots[i].grad, g, create);
                }
                continue;
            }
        }
        let inputs = op.inputs();
        let need_of = |x: &Tensor<T>| {
            x.requires_grad_flag()
                && match targets {
                    None => true,
                    Some(_) => existing(pass.id, x).is_some_and(|i| pass.slots[i].target.is_some() || pass.slots[i].propagate),
                }
        };
        // Inline for one- and two-input ops: no allocation per node on the common path.
        let (mut need_inline, need_heap): ([bool; 2], Vec<bool>);
        let need: &[bool] = if inputs.len() <= 2 {
            need_inline = [false; 2];
            for (k, x) in inputs.iter().enumerate() {
                need_inline[k] = need_of(x);
            }
            &need_inline[..inputs.len()]
        } else {
            need_heap = inputs.iter().map(|x| need_of(x)).collect();
            &need_heap
        };
        if !need.iter().any(|&b| b) {
            continue;
        }
        // Sparse embedding gradients: deliver rows straight to the table instead of densifying.
        if let Op::GatherRows { table, ids } = op {
            let tv = table.var.as_ref().unwrap();
            if !create && targets.is_none() && tv.is_leaf() && tv.is_sparse() {
                let dim = table.shape()[1];
                let mut sg = tv.extra_or_init().sparse_grad.borrow_mut();
                let sr = sg.get_or_insert_with(|| SparseRows { ids: Vec::new(), values: Vec::new(), dim, rows: table.shape()[0] });
                sr.ids.extend_from_slice(ids);
                sr.values.extend_from_slice(&g.data);
                continue;
            }
        }
        // Slices of one tensor (a sequence's steps): add into the slice, not a padded copy. With
        // create_graph the padded rule runs, so the gradient stays differentiable; under anomaly
        // detection too, so the rule's output is checked.
        if let Op::Narrow { x, axis, start } = op {
            if !create && !anomaly::is_anomaly_enabled() {
                let i = existing(pass.id, x).expect("inputs of a visited node were discovered");
                accumulate_narrow(&mut pass.slots[i].grad, x, *axis, *start, g);
                continue;
            }
        }
        let rule = anomaly::is_anomaly_enabled().then(anomaly::RuleGuard::enter);
        let mut gis = match op {
            Op::Custom { f, inputs: xs } => {
                // The user's rule: its mistakes are reported as errors naming it.
                let refs: Vec<&Tensor<T>> = xs.iter().collect();
                let gis = f.backward(&refs, out, &g);
                if gis.len() != xs.len() {
                    return Err(AutodiffError::CustomGradientCount { op: f.name().to_string(), expected: xs.len(), actual: gis.len() });
                }
                for (k, (x, gi)) in xs.iter().zip(&gis).enumerate() {
                    if let Some(gi) = gi {
                        if gi.shape != x.shape {
                            return Err(AutodiffError::CustomGradientShape {
                                op: f.name().to_string(),
                                input: k,
                                expected: x.shape().to_vec(),
                                actual: gi.shape().to_vec(),
                            });
                        }
                    }
                }
                Grads::from(gis)
            }
            _ => op.backward(out, &g, need, !create),
        };
        drop(rule);
        if anomaly::is_anomaly_enabled() {
            if let Some(a) = anomaly::check_backward(op, &g, &gis, node.location) {
                if capture {
                    anomaly::note(a);
                } else {
                    return Err(AutodiffError::Anomaly(a));
                }
            }
        }
        for (k, (x, gi)) in inputs.iter().zip(gis.iter_mut()).enumerate() {
            let Some(gi) = gi.take() else { continue };
            if !need[k] {
                continue;
            }
            assert!(
                gi.shape == x.shape,
                "internal error: backward rule of `{}` produced a gradient of shape {:?} for input {k} of shape {:?}",
                op.name(),
                gi.shape,
                x.shape
            );
            let i = existing(pass.id, x).expect("inputs of a visited node were discovered");
            accumulate(&mut pass.slots[i].grad, gi, create);
        }
    }

    for &(_, i) in &early[next_early..] {
        let i = i as usize;
        deliver_leaf(&pass.tensors[i], &mut pass.slots[i].grad, create)?;
    }
    // Back into the pass, so its drop keeps them for the next pass.
    pass.order = order;
    pass.stack = stack;

    // Leaves, in the order they were reached.
    let leaves = std::mem::take(&mut pass.leaves);
    for &s in &leaves {
        let s = s as usize;
        let Some(mut g) = pass.slots[s].grad.take() else { continue };
        let v = var_of(&pass.tensors[s]);
        run_hooks(v, &mut g)?;
        match targets {
            Some(_) => {
                if let Some(k) = pass.slots[s].target {
                    accumulate(&mut results[k as usize], g, create);
                }
            }
            None => {
                accumulate_into(&v.grad, g, create);
                run_post_hooks(v, &pass.tensors[s]);
            }
        }
    }
    pass.leaves = leaves;
    drop(_mode);
    let out = match targets {
        Some(ts) => (0..ts.len())
            .map(|k| results[target_alias[k]].clone().unwrap_or_else(|| Tensor::zeros(ts[k].shape())))
            .collect(),
        None => Vec::new(),
    };
    Ok(out)
}

/// Releases a node's op (through [`crate::tape::dispose_op`], so its saved tensors are freed
/// iteratively) when dropped; `None` for passes that retain the graph.
struct ReleaseOnDrop<'a, T: Float>(Option<&'a crate::tape::Node<T>>);

impl<T: Float> Drop for ReleaseOnDrop<'_, T> {
    fn drop(&mut self) {
        if let Some(node) = self.0 {
            node.release();
        }
    }
}

impl<T: Float> Tensor<T> {
    /// Backpropagates from this one-element output, accumulating into the `.grad` of every leaf
    /// it depends on, then frees the tape. Panics with the error message on failure; see
    /// [`Tensor::try_backward`].
    #[track_caller]
    pub fn backward(&self) {
        if let Err(e) = self.try_backward() {
            panic!("{e}");
        }
    }
    /// [`Tensor::backward`] returning errors instead of panicking.
    pub fn try_backward(&self) -> Result<(), AutodiffError> {
        self.backward_with(None, GradOptions::default())
    }
    /// Backward with an explicit seed (`∂L/∂self`, required for outputs of more than one
    /// element) and options.
    pub fn backward_with(&self, seed: Option<&Tensor<T>>, opts: GradOptions) -> Result<(), AutodiffError> {
        let seed = match seed {
            Some(s) => s.clone(),
            None => {
                if self.numel() != 1 {
                    return Err(AutodiffError::NonScalar(self.shape().to_vec()));
                }
                Tensor::ones(self.shape())
            }
        };
        T::backward_walk(&[(self.clone(), seed)], None, opts).map(|_| ())
    }
}

/// Gradients of `outputs` with respect to `inputs` (leaves or intermediates), like
/// `torch.autograd.grad`: the vector–Jacobian product `Σₖ seedₖᵀ · ∂outputₖ/∂input`.
///
/// `seeds` defaults to ones (each output must then have one element). Leaves' `.grad` are not
/// touched. An input the outputs do not depend on gets a zero gradient. With
/// [`GradOptions::create_graph`], the returned gradients are themselves differentiable.
///
/// ```
/// use chi_autodiff::{grad, GradOptions, Tensor};
/// let x = Tensor::<f64>::scalar(3.0).requires_grad();
/// let y = x.mul(&x).mul(&x); // x³
/// let dy = grad(&[&y], &[&x], None, GradOptions::create_graph()).unwrap();
/// assert_eq!(dy[0].item(), 27.0); // 3x²
/// let d2y = grad(&[&dy[0]], &[&x], None, GradOptions::default()).unwrap();
/// assert_eq!(d2y[0].item(), 18.0); // 6x
/// ```
pub fn grad<T: Float>(
    outputs: &[&Tensor<T>],
    inputs: &[&Tensor<T>],
    seeds: Option<&[Tensor<T>]>,
    opts: GradOptions,
) -> Result<Vec<Tensor<T>>, AutodiffError> {
    if let Some(s) = seeds {
        if s.len() != outputs.len() {
            return Err(AutodiffError::SeedCount { outputs: outputs.len(), seeds: s.len() });
        }
    }
    let mut roots = Vec::with_capacity(outputs.len());
    for (k, o) in outputs.iter().enumerate() {
        let seed = match seeds {
            Some(s) => s[k].clone(),
            None => {
                if o.numel() != 1 {
                    return Err(AutodiffError::NonScalar(o.shape().to_vec()));
                }
                Tensor::ones(o.shape())
            }
        };
        roots.push(((*o).clone(), seed));
    }
    for x in inputs {
        if !x.requires_grad_flag() {
            return Err(AutodiffError::NotTracked("grad (an input)".into()));
        }
    }
    T::backward_walk(&roots, Some(inputs), opts)
}
