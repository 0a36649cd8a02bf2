//! The crate's error type.

use std::fmt;
use std::path::PathBuf;

/// What can go wrong reading corpora or vectors, or configuring a trainer.
#[derive(Debug, Clone, PartialEq)]
pub enum WordsError {
    /// A file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's message.
        message: String,
    },
    /// A file is malformed.
    Format {
        /// The file (empty when parsing from memory).
        path: PathBuf,
        /// 1-based line number, when the problem is on one line.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// The corpus has no tokens.
    EmptyCorpus,
    /// No word reaches the minimum count.
    EmptyVocab {
        /// The cut-off used.
        min_count: u64,
    },
    /// A hyperparameter is out of range.
    Config {
        /// Which one.
        name: &'static str,
        /// Why it is rejected.
        message: String,
    },
}

impl fmt::Display for WordsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WordsError::Io { path, message } => write!(f, "{}: {message}", path.display()),
            WordsError::Format { path, line, message } => {
                let p = if path.as_os_str().is_empty() { "<memory>".to_string() } else { path.display().to_string() };
                match line {
                    Some(l) => write!(f, "{p}:{l}: {message}"),
                    None => write!(f, "{p}: {message}"),
                }
            }
            WordsError::EmptyCorpus => write!(f, "the corpus has no tokens"),
            WordsError::EmptyVocab { min_count } => write!(f, "no word occurs at least {min_count} times (min_count)"),
            WordsError::Config { name, message } => write!(f, "invalid {name}: {message}"),
        }
    }
}

impl std::error::Error for WordsError {}

pub(crate) fn config(name: &'static str, message: impl Into<String>) -> WordsError {
    WordsError::Config { name, message: message.into() }
}
