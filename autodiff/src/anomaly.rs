//! Anomaly mode: find the op where NaN or Inf first appears.
//!
//! PyTorch's anomaly mode reports the backward node that noticed a NaN, which is often far from
//! its cause. chi checks every op's output as it is produced (forward) and every gradient a
//! backward rule produces, and names the *forward* op responsible, with its input shapes and
//! the source line that called it (ops are `#[track_caller]`).
//!
//! Two ways to use it. [`detect_anomaly`] runs a closure with checking on and returns the first
//! finding as an `Err`; nothing panics and nothing is printed (the closure runs to its end, the
//! non-finite values flowing on; only the first finding is kept, later ops see non-finite inputs
//! and stay quiet). [`set_anomaly_enabled`] turns checking on for the thread outside such a
//! closure: a backward pass then returns the finding as [`crate::AutodiffError::Anomaly`]
//! (`try_backward`, `grad`), and a forward op, which has no `Result` to return it in, panics
//! with the report.

use crate::ops::Op;
use crate::tape::Float;
use crate::tensor::Tensor;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::panic::Location;

/// Where the anomaly was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The op's output contained NaN/Inf although its inputs were finite.
    Forward,
    /// The op's backward rule produced a NaN/Inf gradient from a finite incoming gradient.
    Backward,
    /// An input of the op already held NaN, from outside the checked code (data, a parameter,
    /// a value computed before anomaly mode was on), and the op's output is not finite.
    Input,
}

/// A report of the first non-finite value.
#[derive(Clone, Debug)]
pub struct Anomaly {
    /// Forward or backward.
    pub phase: Phase,
    /// The forward op's name.
    pub op: String,
    /// Shapes of the op's inputs.
    pub input_shapes: Vec<Vec<usize>>,
    /// Shape of the op's output.
    pub output_shape: Vec<usize>,
    /// `file:line:column` where user code called the op.
    pub location: String,
    /// What was found (e.g. "3 NaN, 1 Inf of 12 values").
    pub detail: String,
}

impl fmt::Display for Anomaly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let phase = match self.phase {
            Phase::Forward => "forward output",
            Phase::Backward => "gradient computed by the backward rule",
            Phase::Input => "input (NaN from outside the checked code) of",
        };
        write!(
            f,
            "anomaly: non-finite {phase} of op `{}` (inputs {:?} → output {:?}) called at {}: {}",
            self.op, self.input_shapes, self.output_shape, self.location, self.detail
        )
    }
}

impl std::error::Error for Anomaly {}

thread_local! {
    static ANOMALY: Cell<bool> = const { Cell::new(false) };
    /// Depth of nested [`detect_anomaly`] calls: when positive, findings are noted, not raised.
    static CAPTURE: Cell<u32> = const { Cell::new(0) };
    static LAST: RefCell<Option<Anomaly>> = const { RefCell::new(None) };
    /// Depth of backward rules running: the ops inside a rule are not checked as forward ops
    /// (the rule's result is checked as a whole, and an infinite intermediate that the rule
    /// multiplies away is not an anomaly).
    static IN_RULE: Cell<u32> = const { Cell::new(0) };
}

/// Marks a backward rule as running until dropped (see `IN_RULE`).
pub(crate) struct RuleGuard(());

impl RuleGuard {
    pub(crate) fn enter() -> RuleGuard {
        IN_RULE.with(|r| r.set(r.get() + 1));
        RuleGuard(())
    }
}

impl Drop for RuleGuard {
    fn drop(&mut self) {
        IN_RULE.with(|r| r.set(r.get() - 1));
    }
}

/// Whether anomaly detection is on for this thread.
#[inline]
pub fn is_anomaly_enabled() -> bool {
    ANOMALY.with(|a| a.get())
}

/// Turns anomaly detection on or off for this thread. When on, every op checks its output and
/// every backward rule checks the gradients it produces for NaN/Inf. The first non-finite value
/// produced from finite inputs is reported: by backward passes as
/// [`crate::AutodiffError::Anomaly`], by a forward op as a panic carrying the report. Use
/// [`detect_anomaly`] to get any finding as a `Result` without a panic.
pub fn set_anomaly_enabled(on: bool) {
    ANOMALY.with(|a| a.set(on));
}

pub(crate) fn is_capturing() -> bool {
    CAPTURE.with(|c| c.get() > 0)
}

/// Keeps the first finding of the innermost [`detect_anomaly`].
pub(crate) fn note(a: Anomaly) {
    LAST.with(|l| {
        let mut l = l.borrow_mut();
        if l.is_none() {
            *l = Some(a);
        }
    });
}

fn describe<T: Float>(values: &[T]) -> String {
    let nan = values.iter().filter(|v| v.is_nan()).count();
    let inf = values.iter().filter(|v| !v.is_nan() && !v.is_finite()).count();
    format!("{nan} NaN, {inf} Inf of {} values", values.len())
}

/// A forward finding: noted inside [`detect_anomaly`], a panic outside (an op has no `Result`).
fn raise(a: Anomaly) {
    if is_capturing() {
        note(a);
    } else {
        panic!("{a}");
    }
}

pub(crate) fn check_forward<T: Float>(op: &Op<T>, out: &Tensor<T>, inputs: &[&Tensor<T>], loc: &'static Location<'static>) {
    if out.all_finite() || IN_RULE.with(|r| r.get() > 0) {
        return;
    }
    let found = |phase, detail| Anomaly {
        phase,
        op: op.name(),
        input_shapes: inputs.iter().map(|t| t.shape().to_vec()).collect(),
        output_shape: out.shape().to_vec(),
        location: loc.to_string(),
        detail,
    };
    if inputs.iter().all(|t| t.all_finite()) {
        raise(found(Phase::Forward, describe(out.data())));
    } else if let Some(x) = inputs.iter().find(|t| t.data().iter().any(|v| v.is_nan())) {
        // A NaN input that no checked op reported came from outside (checked ops report the
        // NaN they make, and only the first finding is kept). Inf inputs are left alone: −∞
        // masks before a softmax are deliberate.
        raise(found(Phase::Input, format!("its input of shape {:?} holds {}", x.shape(), describe(x.data()))));
    }
}

/// The finding of a backward rule, if any (the caller decides whether to note or return it).
pub(crate) fn check_backward<T: Float>(
    op: &Op<T>,
    g: &Tensor<T>,
    grads: &[Option<Tensor<T>>],
    loc: &'static Location<'static>,
) -> Option<Anomaly> {
    if !g.all_finite() {
        return None;
    }
    for gi in grads.iter().flatten() {
        if !gi.all_finite() {
            return Some(Anomaly {
                phase: Phase::Backward,
                op: op.name(),
                input_shapes: op.inputs().iter().map(|t| t.shape().to_vec()).collect(),
                output_shape: g.shape().to_vec(),
                location: loc.to_string(),
                detail: describe(gi.data()),
            });
        }
    }
    None
}

/// Runs `f` with anomaly mode on and returns the first anomaly as an error. `f` runs to its
/// end; its result is discarded if anything was found. Nothing panics, nothing is printed.
///
/// ```
/// use chi_autodiff::{detect_anomaly, Tensor};
/// let x = Tensor::<f64>::from_vec(vec![1.0, -1.0], &[2]).requires_grad();
/// let r = detect_anomaly(|| x.sqrt().sum().backward());
/// let a = r.unwrap_err();
/// assert_eq!(a.op, "sqrt"); // sqrt(-1) = NaN, found where it was made
/// ```
pub fn detect_anomaly<R>(f: impl FnOnce() -> R) -> Result<R, Anomaly> {
    /// Restores the mode, the capture depth and the outer finding even if `f` panics.
    struct Restore {
        prev: bool,
        outer: Option<Anomaly>,
    }
    impl Drop for Restore {
        fn drop(&mut self) {
            set_anomaly_enabled(self.prev);
            CAPTURE.with(|c| c.set(c.get() - 1));
            let outer = self.outer.take();
            LAST.with(|l| {
                let mut l = l.borrow_mut();
                if outer.is_some() {
                    *l = outer;
                }
            });
        }
    }
    let guard = Restore { prev: is_anomaly_enabled(), outer: LAST.with(|l| l.borrow_mut().take()) };
    set_anomaly_enabled(true);
    CAPTURE.with(|c| c.set(c.get() + 1));
    let r = f();
    let found = LAST.with(|l| l.borrow_mut().take());
    drop(guard);
    match found {
        None => Ok(r),
        Some(a) => Err(a),
    }
}
