//! PyTorch-compatible state dicts: every parameter of a [`Parameterized`] model under its
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
//! `{"format": "pt"}` that `safetensors.torch` writes. Loading accepts either dtype.
//!
//! [`load_state_dict`] checks every name and shape before it changes any parameter; an error
//! names the missing or unexpected keys, or the key whose shape differs and both shapes.

use crate::checkpoint::atomic_write;
use crate::error::NnError;
use crate::module::{Layout, Parameterized};
use chi_autodiff::Float;
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use std::collections::HashMap;
use std::path::Path;

/// Named tensors in PyTorch's layout, in the model's parameter order.
#[derive(Clone, Debug, PartialEq)]
pub struct StateDict<T> {
    entries: Vec<(String, Vec<usize>, Vec<T>)>,
}

impl<T: Float> Default for StateDict<T> {
    fn default() -> Self {
        StateDict { entries: Vec::new() }
    }
}

/// `[r, c]` row-major → its transpose `[c, r]` row-major.
fn transpose<T: Copy>(v: &[T], r: usize, c: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len());
    for j in 0..c {
        for i in 0..r {
            out.push(v[i * c + j]);
        }
    }
    out
}

/// The shape of a parameter of shape `shape` in the state dict.
fn exported_shape(shape: &[usize], layout: Layout) -> Vec<usize> {
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
        let bytes = std::fs::read(path).map_err(|e| NnError::Io { path: path.to_path_buf(), action: "cannot read", source: e })?;
        Self::from_safetensors(path, &bytes)
    }
}

/// The state dict of `model`: each parameter under its path, in PyTorch's layout.
pub fn state_dict<T: Float, M: Parameterized<T> + ?Sized>(model: &M) -> StateDict<T> {
    let mut sd = StateDict::new();
    model.visit_parameters(&mut |name, p, layout| {
        let shape = p.shape();
        let v = p.to_vec();
        let v = match (layout, shape.as_slice()) {
            (Layout::Transposed, [r, c]) => transpose(&v, *r, *c),
            _ => v,
        };
        sd.entries.push((name.to_string(), exported_shape(&shape, layout), v));
    });
    sd
}

/// Loads `sd` into `model`. Every key of the model must be in `sd` with the model's shape
/// (in the state-dict layout) and `sd` must hold no other key; all of this is checked before
/// any parameter changes. Errors: [`NnError::StateDictKeys`] (missing / unexpected names),
/// [`NnError::Shape`] (the key and both shapes).
pub fn load_state_dict<T: Float, M: Parameterized<T> + ?Sized>(model: &M, sd: &StateDict<T>) -> Result<(), NnError> {
    let mut plan = Vec::new();
    let mut missing = Vec::new();
    let mut first_error: Option<NnError> = None;
    model.visit_parameters(&mut |name, p, layout| {
        let shape = p.shape();
        let want = exported_shape(&shape, layout);
        match sd.get(name) {
            None => missing.push(name.to_string()),
            Some((found, values)) => {
                if found != want.as_slice() {
                    first_error.get_or_insert_with(|| NnError::Shape {
                        what: format!("state-dict tensor {name:?}"),
                        expected: want.clone(),
                        found: found.to_vec(),
                    });
                } else {
                    let v = match (layout, want.as_slice()) {
                        (Layout::Transposed, [r, c]) => transpose(values, *r, *c),
                        _ => values.to_vec(),
                    };
                    plan.push((name.to_string(), p.clone(), v));
                }
            }
        }
    });
    let known: Vec<&str> = plan.iter().map(|(n, _, _)| n.as_str()).collect();
    let unexpected: Vec<String> =
        sd.names().into_iter().filter(|n| !known.contains(n) && !missing.iter().any(|m| m == n)).filter(|n| !shape_mismatch(model, n)).map(String::from).collect();
    if !missing.is_empty() || !unexpected.is_empty() {
        return Err(NnError::StateDictKeys { missing, unexpected });
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    for (_, p, v) in plan {
        p.set_values(v);
    }
    Ok(())
}

/// Whether `name` is a parameter path of `model` (so a key that failed the shape check is not
/// also reported as unexpected).
fn shape_mismatch<T: Float, M: Parameterized<T> + ?Sized>(model: &M, name: &str) -> bool {
    let mut found = false;
    model.visit_parameters(&mut |n, _, _| found |= n == name);
    found
}

/// Loads a safetensors state dict from `path` into `model` (see [`load_state_dict`]); errors
/// name the file.
pub fn load_file<T: Float, M: Parameterized<T> + ?Sized>(model: &M, path: &Path) -> Result<(), NnError> {
    let sd = StateDict::<T>::load(path)?;
    load_state_dict(model, &sd).map_err(|e| NnError::InFile { path: path.to_path_buf(), source: Box::new(e) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::Linear;
    use crate::{Activation, Module, Sequential};
    use chi_autodiff::Tensor;

    fn mlp(seed: u64) -> Sequential<f32> {
        Sequential::new().add(Linear::new(3, 4).seed(seed)).add(Activation::Tanh).add(Linear::new(4, 2).seed(seed + 1))
    }

    #[test]
    fn round_trip_through_a_file_restores_every_value() {
        let a = mlp(1);
        let b = mlp(7);
        assert_ne!(a.parameters()[0].to_vec(), b.parameters()[0].to_vec());
        let dir = std::env::temp_dir().join(format!("chi-sd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mlp.safetensors");
        a.save(&path).unwrap();
        b.load(&path).unwrap();
        for (pa, pb) in a.parameters().iter().zip(b.parameters()) {
            assert_eq!(pa.to_vec(), pb.to_vec(), "{}", pa.name());
        }
        let x = Tensor::from_vec(vec![0.1f32, -0.2, 0.3, 0.5, 0.0, -1.0], &[2, 3]);
        assert_eq!(a.forward(&x).to_vec(), b.forward(&x).to_vec());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn linear_weights_are_exported_out_by_in() {
        let l = Linear::<f32>::new(3, 2);
        let sd = l.state_dict();
        assert_eq!(sd.names(), ["weight", "bias"]);
        let (shape, v) = sd.get("weight").unwrap();
        assert_eq!(shape, [2, 3]);
        let w = l.weight.to_vec(); // [in=3, out=2]
        for o in 0..2 {
            for i in 0..3 {
                assert_eq!(v[o * 3 + i], w[i * 2 + o]);
            }
        }
    }

    /// A file laid out as `torch.save_file(nn.Sequential(nn.Linear(3, 2)).state_dict())`
    /// writes it: `0.weight` is `[out, in]`. Values chosen by hand.
    #[test]
    fn a_pytorch_layout_file_loads_into_the_right_places() {
        let w_pt: [f32; 6] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]; // rows = outputs
        let b_pt: [f32; 2] = [0.5, -0.5];
        let wb: Vec<u8> = w_pt.iter().flat_map(|x| x.to_le_bytes()).collect();
        let bb: Vec<u8> = b_pt.iter().flat_map(|x| x.to_le_bytes()).collect();
        let views = vec![
            ("0.weight".to_string(), TensorView::new(Dtype::F32, vec![2, 3], &wb).unwrap()),
            ("0.bias".to_string(), TensorView::new(Dtype::F32, vec![2], &bb).unwrap()),
        ];
        let bytes = safetensors::serialize(views, None).unwrap();
        let model = Sequential::<f32>::new().add(Linear::new(3, 2));
        let sd = StateDict::from_safetensors(Path::new("torch.safetensors"), &bytes).unwrap();
        model.load_state_dict(&sd).unwrap();
        // y = x·Wᵀ + b with PyTorch's W: x = [1, 0, −1] → [1 − 3 + 0.5, 4 − 6 − 0.5].
        let y = model.forward(&Tensor::from_vec(vec![1.0f32, 0.0, -1.0], &[1, 3]));
        assert_eq!(y.to_vec(), vec![-1.5, -2.5]);
        // chi's own storage is [in, out].
        assert_eq!(model.parameters()[0].to_vec(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    }

    #[test]
    fn mismatches_name_the_key_and_both_shapes_and_change_nothing() {
        let model = mlp(3);
        let before: Vec<Vec<f32>> = model.parameters().iter().map(|p| p.to_vec()).collect();
        let mut sd = model.state_dict();
        sd.insert("2.weight", &[2, 5], vec![0.0; 10]).unwrap();
        sd.insert("0.bias", &[4], vec![9.0; 4]).unwrap();
        let e = model.load_state_dict(&sd).unwrap_err().to_string();
        assert!(e.contains("\"2.weight\"") && e.contains("[2, 5]") && e.contains("[2, 4]"), "{e}");
        let after: Vec<Vec<f32>> = model.parameters().iter().map(|p| p.to_vec()).collect();
        assert_eq!(before, after, "nothing loaded on error");

        let mut sd = model.state_dict();
        sd.insert("3.weight", &[1], vec![0.0]).unwrap();
        let e = model.load_state_dict(&sd).unwrap_err().to_string();
        assert!(e.contains("unexpected") && e.contains("3.weight"), "{e}");
        let small = Sequential::<f32>::new().add(Linear::new(3, 4));
        let e = model.load_state_dict(&small.state_dict()).unwrap_err().to_string();
        assert!(e.contains("missing") && e.contains("2.weight") && e.contains("2.bias"), "{e}");
    }
}
