//! PyTorch-compatible state dicts: every parameter of a [`crate::Parameterized`] model under its
//! dotted path (`"0.weight"`, `"0.bias"`), in PyTorch's layout, saved and loaded as
//! safetensors.
//!
//! Layouts: chi's [`crate::layers::Linear`] holds its weight `[in, out]` (its forward pass is
//! `x·W`); `torch.nn.Linear` holds `[out, in]`. Parameters visited with
//! [`Layout::Transposed`] are therefore transposed on export and on import, so a file written
//! here loads into the PyTorch module of the same structure without a transpose
//! (`model.load_state_dict(safetensors.torch.load_file(path))`), and a file saved from PyTorch
//! loads here. Parameters whose chi names differ from PyTorch's (the recurrent cells' `w_ih`,
//! `w_hh`, `bias`) keep chi's layout; their names say so.
//!
//! Files hold `F32` tensors for `f32` models and `F64` for `f64` models, with the metadata
//! `{"format": "pt"}` that `safetensors.torch` writes, and nothing of chi's own: a file that
//! PyTorch loads, changes and saves again with its metadata is still a plain state dict (a
//! checksum carried over would no longer match it). Loading accepts either dtype, and every
//! value must be finite in the model's type (an `F64` 1e300 does not fit an `f32` model; a
//! damaged byte that makes a weight NaN or infinite is refused, naming the file).
//!
//! [`crate::module::load_state_dict`] checks every name and shape before it changes any parameter; an error
//! names the missing or unexpected keys, or the key whose shape differs and both shapes.

use crate::checkpoint::atomic_write;
use crate::error::NnError;
use chi_autodiff::Float;
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use std::collections::HashMap;
use std::path::Path;

/// How a parameter is laid out in a state dict relative to chi's own storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Stored as chi holds it.
    Native,
    /// A 2-D weight that chi holds `[in, out]` (so a forward pass is `x·W`) and PyTorch holds
    /// `[out, in]`: the state dict stores the transpose, so it loads into `torch.nn.Linear`
    /// as it is.
    Transposed,
}

/// Named tensors in PyTorch's layout, in the model's parameter order.
#[derive(Clone, Debug, PartialEq)]
pub struct StateDict<T> {
    pub(crate) entries: Vec<(String, Vec<usize>, Vec<T>)>,
}

impl<T: Float> Default for StateDict<T> {
    fn default() -> Self {
        StateDict { entries: Vec::new() }
    }
}

/// `[r, c]` row-major → its transpose `[c, r]` row-major.
pub(crate) fn transpose<T: Copy>(v: &[T], r: usize, c: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len());
    for j in 0..c {
        for i in 0..r {
            out.push(v[i * c + j]);
        }
    }
    out
}

/// The shape of a parameter of shape `shape` in the state dict.
pub(crate) fn exported_shape(shape: &[usize], layout: Layout) -> Vec<usize> {
    match (layout, shape) {
        (Layout::Transposed, [r, c]) => vec![*c, *r],
        _ => shape.to_vec(),
    }
}

impl<T: Float> StateDict<T> {
    /// An empty state dict.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds (or replaces) a tensor. Errors if `values` does not fill `shape`.
    pub fn insert(&mut self, name: &str, shape: &[usize], values: Vec<T>) -> Result<(), NnError> {
        let n: usize = shape.iter().product();
        if n != values.len() {
            return Err(NnError::Shape { what: format!("state-dict tensor {name:?} (values)"), expected: vec![n], found: vec![values.len()] });
        }
        match self.entries.iter_mut().find(|e| e.0 == name) {
            Some(e) => *e = (name.to_string(), shape.to_vec(), values),
            None => self.entries.push((name.to_string(), shape.to_vec(), values)),
        }
        Ok(())
    }
    /// The shape and values of tensor `name`.
    pub fn get(&self, name: &str) -> Option<(&[usize], &[T])> {
        self.entries.iter().find(|e| e.0 == name).map(|e| (e.1.as_slice(), e.2.as_slice()))
    }
    /// The names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.0.as_str()).collect()
    }
    /// `(name, shape, values)` in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[usize], &[T])> {
        self.entries.iter().map(|e| (e.0.as_str(), e.1.as_slice(), e.2.as_slice()))
    }
    /// Number of tensors.
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    /// Whether there are no tensors.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Serialises to safetensors bytes (`F32` for `f32`, `F64` for `f64`; metadata
    /// `format = pt`).
    pub fn to_safetensors(&self) -> Result<Vec<u8>, NnError> {
        let f64s = T::NAME == "f64";
        let dtype = if f64s { Dtype::F64 } else { Dtype::F32 };
        let bytes: Vec<Vec<u8>> = self
            .entries
            .iter()
            .map(|(_, _, v)| {
                if f64s {
                    v.iter().flat_map(|x| x.to_f64().to_le_bytes()).collect()
                } else {
                    v.iter().flat_map(|x| (x.to_f64() as f32).to_le_bytes()).collect()
                }
            })
            .collect();
        let mut views = Vec::with_capacity(self.entries.len());
        for ((name, shape, _), b) in self.entries.iter().zip(&bytes) {
            let view = TensorView::new(dtype, shape.clone(), b)
                .map_err(|e| NnError::format("<state dict>", format!("tensor {name:?}: {e}")))?;
            views.push((name.clone(), view));
        }
        let meta: HashMap<String, String> = [("format".to_string(), "pt".to_string())].into_iter().collect();
        safetensors::serialize(views, Some(meta)).map_err(|e| NnError::format("<state dict>", format!("serialising: {e}")))
    }

    /// Parses safetensors bytes (`F32` or `F64` tensors; `name` labels errors).
    pub fn from_safetensors(name: &Path, bytes: &[u8]) -> Result<Self, NnError> {
        let st = SafeTensors::deserialize(bytes).map_err(|e| NnError::format(name, format!("not a valid safetensors file: {e}")))?;
        // safetensors keeps tensors by name; keep the file's order of offsets (the writer's order).
        let mut items: Vec<(String, TensorView<'_>)> = st.tensors();
        items.sort_by_key(|(_, v)| v.data().as_ptr() as usize);
        let mut sd = StateDict::new();
        for (n, view) in items {
            let data = view.data();
            let values: Vec<T> = match view.dtype() {
                Dtype::F32 => data.chunks_exact(4).map(|c| T::from_f64(f32::from_le_bytes(c.try_into().unwrap()) as f64)).collect(),
                Dtype::F64 => data.chunks_exact(8).map(|c| T::from_f64(f64::from_le_bytes(c.try_into().unwrap()))).collect(),
                d => return Err(NnError::format(name, format!("tensor {n:?} has dtype {d:?}; chi reads F32 and F64"))),
            };
            if let Some((i, v)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                let stored = match view.dtype() {
                    Dtype::F64 => f64::from_le_bytes(data[i * 8..i * 8 + 8].try_into().unwrap()),
                    _ => f32::from_le_bytes(data[i * 4..i * 4 + 4].try_into().unwrap()) as f64,
                };
                let why = if stored.is_finite() { format!("{stored:e} does not fit {}", T::NAME) } else { format!("{stored}") };
                return Err(NnError::format(name, format!("tensor {n:?} holds {v:?} at index {i} ({why}): weights must be finite")));
            }
            sd.insert(&n, view.shape(), values).map_err(|e| NnError::InFile { path: name.to_path_buf(), source: Box::new(e) })?;
        }
        Ok(sd)
    }

    /// Writes a safetensors file (atomically: a temporary file renamed into place).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), NnError> {
        atomic_write(path.as_ref(), &self.to_safetensors()?)
    }

    /// Reads a safetensors file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, NnError> {
        let path = path.as_ref();
        let bytes = crate::checkpoint::read_safetensors(path)?;
        Self::from_safetensors(path, &bytes)
    }
}
