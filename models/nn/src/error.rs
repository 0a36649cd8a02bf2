//! [`NnError`], the error type of every fallible public function of chi-nn.
//!
//! Each variant carries what a user needs to fix the problem: the file, the tensor, the setting
//! and its value, both shapes. `Display` gives a one-line message; programs that report errors
//! as text can convert with `String::from(err)`.

use crate::data::error::DataError;
use std::fmt;
use std::path::PathBuf;

/// Result alias for chi-nn.
pub type Result<T, E = NnError> = std::result::Result<T, E>;

/// What went wrong in chi-nn.
#[derive(Debug)]
#[non_exhaustive]
pub enum NnError {
    /// A tensor, buffer or input has the wrong shape (or number of values, as a 1-D shape).
    Shape {
        /// The op or tensor concerned (e.g. `Linear.forward input`, `optimiser buffer "exp_avg" of "w"`).
        what: String,
        /// The shape that was expected.
        expected: Vec<usize>,
        /// The shape that was found.
        found: Vec<usize>,
    },
    /// A tensor stored in a file has a shape the model does not expect.
    TensorShape {
        /// The file.
        path: PathBuf,
        /// The tensor's name in the file.
        tensor: String,
        /// Its shape in the file.
        found: Vec<usize>,
        /// The shape the model expects.
        expected: Vec<usize>,
    },
    /// A file or directory could not be created, read or written.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was attempted: `"cannot read"`, `"write failed"`, `"cannot create directory"`.
        action: &'static str,
        /// The operating-system error.
        source: std::io::Error,
    },
    /// A file's contents are invalid (not safetensors, corrupt, a tensor missing or surplus, a
    /// wrong dtype, bad metadata).
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// An error about the contents of a file, found by a lower layer (e.g. an optimiser state
    /// that does not fit the model).
    InFile {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: Box<NnError>,
    },
    /// A setting or option has a value outside its range.
    InvalidValue {
        /// Where the setting belongs (e.g. `invalid optimiser setting`, `dataset first-token`).
        context: String,
        /// The setting's name.
        field: String,
        /// Its value.
        value: String,
        /// Why it is invalid (the allowed range).
        reason: String,
    },
    /// A name (optimiser, dataset, option, parameter group) that does not exist.
    Unknown {
        /// Where the name was used (e.g. `dataset first-token`), or empty.
        context: String,
        /// What kind of name (e.g. `optimiser`, `option`).
        kind: String,
        /// The name given.
        name: String,
        /// The names that exist.
        known: Vec<String>,
    },
    /// A text that does not parse (e.g. a learning-rate schedule).
    Parse {
        /// What was being parsed (e.g. `schedule`).
        what: &'static str,
        /// The text.
        input: String,
        /// The accepted syntax.
        expected: &'static str,
    },
    /// An optimiser state that does not fit the optimiser or the parameters.
    OptimState {
        /// The parameter concerned, if any.
        param: Option<String>,
        /// What does not fit.
        problem: String,
    },
    /// A dataset whose files are not in the data directory.
    MissingDataset {
        /// The dataset's name.
        dataset: String,
        /// The first missing file.
        file: PathBuf,
        /// The command that fetches it.
        fetch: String,
        /// The data directory searched.
        data_dir: PathBuf,
    },
    /// A data loader error (file, location and problem).
    Data(DataError),
    /// A state dict whose names do not match the model's parameters.
    StateDictKeys {
        /// Parameters of the model the state dict lacks.
        missing: Vec<String>,
        /// Names in the state dict that are no parameter of the model.
        unexpected: Vec<String>,
    },
}

impl fmt::Display for NnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NnError::Shape { what, expected, found } => write!(f, "{what} has shape {found:?}, expected {expected:?}"),
            NnError::TensorShape { path, tensor, found, expected } => {
                write!(f, "{}: tensor {tensor:?} has shape {found:?}, the model expects {expected:?}", path.display())
            }
            NnError::Io { path, action, source } => write!(f, "{}: {action}: {source}", path.display()),
            NnError::Format { path, problem } => write!(f, "{}: {problem}", path.display()),
            NnError::InFile { path, source } => write!(f, "{}: {source}", path.display()),
            NnError::InvalidValue { context, field, value, reason } => write!(f, "{context}: {field} = {value} ({reason})"),
            NnError::Unknown { context, kind, name, known } => {
                let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
                if !context.is_empty() {
                    write!(f, "{context}: ")?;
                }
                write!(f, "unknown {kind} {name:?} (known: {known})")
            }
            NnError::Parse { what, input, expected } => write!(f, "bad {what} {input:?}: expected {expected}"),
            NnError::OptimState { problem, .. } => write!(f, "{problem}"),
            NnError::MissingDataset { dataset, file, fetch, data_dir } => write!(
                f,
                "dataset '{dataset}' not found: {} is missing; fetch it with `{fetch}` (data directory: {}, set CHI_DATA to change it)",
                file.display(),
                data_dir.display()
            ),
            NnError::Data(e) => write!(f, "{e}"),
            NnError::StateDictKeys { missing, unexpected } => {
                write!(f, "state dict does not match the model:")?;
                if !missing.is_empty() {
                    write!(f, " missing keys {missing:?}")?;
                }
                if !unexpected.is_empty() {
                    write!(f, " unexpected keys {unexpected:?}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for NnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NnError::Io { source, .. } => Some(source),
            NnError::InFile { source, .. } => Some(source.as_ref()),
            NnError::Data(e) => Some(e),
            _ => None,
        }
    }
}

impl From<DataError> for NnError {
    fn from(e: DataError) -> Self {
        NnError::Data(e)
    }
}

/// For programs that report errors as text (`Result<_, String>` with `?`).
impl From<NnError> for String {
    fn from(e: NnError) -> Self {
        e.to_string()
    }
}

impl NnError {
    /// A [`NnError::Format`] error about `path`.
    pub fn format(path: impl Into<PathBuf>, problem: impl Into<String>) -> Self {
        NnError::Format { path: path.into(), problem: problem.into() }
    }
    /// An [`NnError::InvalidValue`] error.
    pub fn invalid(context: impl Into<String>, field: impl Into<String>, value: impl ToString, reason: impl Into<String>) -> Self {
        NnError::InvalidValue { context: context.into(), field: field.into(), value: value.to_string(), reason: reason.into() }
    }
    /// An [`NnError::OptimState`] error.
    pub fn optim_state(param: Option<&str>, problem: impl Into<String>) -> Self {
        NnError::OptimState { param: param.map(str::to_string), problem: problem.into() }
    }
    /// The same error, attributed to the file `path` (unless it already names a file).
    pub fn in_file(self, path: impl Into<PathBuf>) -> Self {
        match self {
            e @ (NnError::Format { .. } | NnError::TensorShape { .. } | NnError::Io { .. } | NnError::InFile { .. } | NnError::Data(_)) => e,
            e => NnError::InFile { path: path.into(), source: Box::new(e) },
        }
    }
}
