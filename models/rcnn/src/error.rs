//! The error type of this crate.

use std::fmt;

/// Errors from building or running recurrent-convolution and rationale models.
#[derive(Clone, Debug, PartialEq)]
pub enum RcnnError {
    /// A tensor had the wrong shape for an operation: the op, what it expected, what it got.
    Shape {
        /// The operation that refused the input.
        op: &'static str,
        /// The expected shape (as text, since it may contain symbolic sizes).
        expected: String,
        /// The shape actually received.
        got: Vec<usize>,
    },
    /// A configuration that cannot be built (the field and the reason).
    Config {
        /// The offending option.
        field: &'static str,
        /// Why it is invalid.
        reason: String,
    },
    /// Sequence lengths that do not fit the batch (zero, longer than the time axis, wrong count).
    Lengths {
        /// The operation.
        op: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// Exact enumeration was asked for a support that is too large.
    TooLarge {
        /// The operation.
        op: &'static str,
        /// The size asked for.
        size: usize,
        /// The largest supported size.
        max: usize,
    },
    /// Gradient computation failed inside the engine.
    Autodiff(String),
}

impl fmt::Display for RcnnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RcnnError::Shape { op, expected, got } => write!(f, "{op}: expected shape {expected}, got {got:?}"),
            RcnnError::Config { field, reason } => write!(f, "invalid configuration: {field}: {reason}"),
            RcnnError::Lengths { op, reason } => write!(f, "{op}: bad sequence lengths: {reason}"),
            RcnnError::TooLarge { op, size, max } => write!(f, "{op}: size {size} exceeds the supported maximum {max}"),
            RcnnError::Autodiff(e) => write!(f, "autodiff: {e}"),
        }
    }
}

impl std::error::Error for RcnnError {}

impl From<chi_autodiff::AutodiffError> for RcnnError {
    fn from(e: chi_autodiff::AutodiffError) -> Self {
        RcnnError::Autodiff(e.to_string())
    }
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, RcnnError>;

pub(crate) fn shape_err(op: &'static str, expected: impl Into<String>, got: &[usize]) -> RcnnError {
    RcnnError::Shape { op, expected: expected.into(), got: got.to_vec() }
}
