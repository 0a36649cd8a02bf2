//! Anomaly mode: find the op where NaN or Inf first appears.
//!
//! PyTorch's anomaly mode reports the backward node that noticed a NaN, which is often far from
//! its cause. chi checks every op's output as it is produced (forward) and every gradient a
//! backward rule produces, and names the *forward* op responsible, with its input shapes and
//! the source line that called it (ops are `#[track_caller]`).

use crate::ops::Op;
use crate::tape::{is_anomaly_enabled, set_anomaly_enabled, Float};
use crate::tensor::Tensor;
use std::cell::RefCell;
use std::fmt;
use std::panic::Location;

/// Where the anomaly was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The op's output contained NaN/Inf although its inputs were finite.
    Forward,
    /// The op's backward rule produced a NaN/Inf gradient from a finite incoming gradient.
    Backward,
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
        };
        write!(
            f,
            "anomaly: non-finite {phase} of op `{}` (inputs {:?} → output {:?}) called at {}: {}",
            self.op, self.input_shapes, self.output_shape, self.location, self.detail
        )
    }
}

thread_local! {
    static LAST: RefCell<Option<Anomaly>> = const { RefCell::new(None) };
}

fn describe<T: Float>(values: &[T]) -> String {
    let nan = values.iter().filter(|v| v.is_nan()).count();
    let inf = values.iter().filter(|v| !v.is_nan() && !v.is_finite()).count();
    format!("{nan} NaN, {inf} Inf of {} values", values.len())
}

fn raise(a: Anomaly) -> ! {
    let msg = a.to_string();
    LAST.with(|l| *l.borrow_mut() = Some(a));
    panic!("{msg}");
}

pub(crate) fn check_forward<T: Float>(op: &Op<T>, out: &Tensor<T>, inputs: &[&Tensor<T>], loc: &'static Location<'static>) {
    if out.all_finite() || !inputs.iter().all(|t| t.all_finite()) {
        return;
    }
    raise(Anomaly {
        phase: Phase::Forward,
        op: op.name(),
        input_shapes: inputs.iter().map(|t| t.shape().to_vec()).collect(),
        output_shape: out.shape().to_vec(),
        location: loc.to_string(),
        detail: describe(out.data()),
    })
}

pub(crate) fn check_backward<T: Float>(op: &Op<T>, g: &Tensor<T>, grads: &[Option<Tensor<T>>], loc: &'static Location<'static>) {
    if !g.all_finite() {
        return;
    }
    for gi in grads.iter().flatten() {
        if !gi.all_finite() {
            raise(Anomaly {
                phase: Phase::Backward,
                op: op.name(),
                input_shapes: op.inputs().iter().map(|t| t.shape().to_vec()).collect(),
                output_shape: g.shape().to_vec(),
                location: loc.to_string(),
                detail: describe(gi.data()),
            });
        }
    }
}

/// Runs `f` with anomaly mode on and returns the first anomaly as an error.
///
/// ```
/// use chi_autodiff::{detect_anomaly, Tensor};
/// let x = Tensor::<f64>::from_vec(vec![1.0, -1.0], &[2]).requires_grad();
/// let r = detect_anomaly(|| x.sqrt().sum().backward());
/// let a = r.unwrap_err();
/// assert_eq!(a.op, "sqrt"); // sqrt(-1) = NaN, found where it was made
/// ```
pub fn detect_anomaly<R>(f: impl FnOnce() -> R) -> Result<R, Anomaly> {
    let prev = is_anomaly_enabled();
    set_anomaly_enabled(true);
    LAST.with(|l| *l.borrow_mut() = None);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    set_anomaly_enabled(prev);
    match r {
        Ok(v) => Ok(v),
        Err(payload) => match LAST.with(|l| l.borrow_mut().take()) {
            Some(a) => Err(a),
            None => std::panic::resume_unwind(payload),
        },
    }
}
