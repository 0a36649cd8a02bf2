//! The error type of `chi-text`.

use std::fmt;

/// What can go wrong in a text model, a loader or an experiment.
#[derive(Debug)]
pub enum TextError {
    /// Two shapes that must agree do not.
    Shape {
        /// The operation that checked them.
        op: &'static str,
        /// What was expected (e.g. the emission scores' shape).
        expected: Vec<usize>,
        /// What was given.
        got: Vec<usize>,
    },
    /// A sequence length is zero or exceeds the padded length.
    Length {
        /// The operation.
        op: &'static str,
        /// Batch row.
        row: usize,
        /// The offending length.
        length: usize,
        /// The padded length.
        max: usize,
    },
    /// An id (word, tag, class) is out of range.
    Id {
        /// The operation.
        op: &'static str,
        /// The id.
        id: usize,
        /// The number of valid ids.
        count: usize,
    },
    /// An argument is invalid for another reason.
    Invalid {
        /// The operation.
        op: &'static str,
        /// Why.
        msg: String,
    },
    /// A text file could not be parsed.
    Parse {
        /// 1-based line number.
        line: usize,
        /// Why.
        msg: String,
    },
    /// A file could not be read or written.
    Io(std::io::Error),
    /// A backward pass failed (boxed: the engine's error carries an anomaly report).
    Autodiff(Box<chi_autodiff::AutodiffError>),
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TextError::Shape { op, expected, got } => write!(f, "{op}: expected shape {expected:?}, got {got:?}"),
            TextError::Length { op, row, length, max } => {
                write!(f, "{op}: length {length} of row {row} is not in 1..={max}")
            }
            TextError::Id { op, id, count } => write!(f, "{op}: id {id} is out of range (there are {count})"),
            TextError::Invalid { op, msg } => write!(f, "{op}: {msg}"),
            TextError::Parse { line, msg } => write!(f, "line {line}: {msg}"),
            TextError::Io(e) => write!(f, "I/O error: {e}"),
            TextError::Autodiff(e) => write!(f, "backward pass failed: {e}"),
        }
    }
}

impl std::error::Error for TextError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TextError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for TextError {
    fn from(e: std::io::Error) -> Self {
        TextError::Io(e)
    }
}

impl From<chi_autodiff::AutodiffError> for TextError {
    fn from(e: chi_autodiff::AutodiffError) -> Self {
        TextError::Autodiff(Box::new(e))
    }
}

/// Result with [`TextError`].
pub type Result<T> = std::result::Result<T, TextError>;
