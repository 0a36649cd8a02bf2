//! The crate's error type.

use std::fmt;

/// What can go wrong building or running a sequence-to-sequence model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seq2SeqError {
    /// A configuration value or combination that cannot be built (names the value).
    Config(String),
    /// Inputs that do not fit the model (ids out of range, empty sequences, batch mismatch).
    Input(String),
    /// A data file that cannot be read or parsed (names the file and the position).
    Data(String),
}

impl fmt::Display for Seq2SeqError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Seq2SeqError::Config(m) => write!(f, "seq2seq configuration: {m}"),
            Seq2SeqError::Input(m) => write!(f, "seq2seq input: {m}"),
            Seq2SeqError::Data(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for Seq2SeqError {}
