//! The [`Module`] API: what every layer and model offers, as in PyTorch.
//!
//! Two traits, because not every layer maps one tensor to one tensor:
//!
//! * [`Parameterized`] — anything that owns parameters: named parameters with dotted
//!   PyTorch-style paths (`"0.weight"`, `"encoder.fwd.w_ih"`), parameter counts, `zero_grad`,
//!   the train/eval mode (propagated to children), and PyTorch-layout state dicts saved as
//!   safetensors ([`crate::state_dict`]). Recurrent cells, attention scores and embedding bags
//!   implement only this trait: their forward passes take states, masks or bags.
//! * [`Module`] — a [`Parameterized`] with `forward(&Tensor) -> Tensor`: linear, embedding
//!   (ids given as a float tensor of whole numbers), normalisation, convolutions, pooling,
//!   dropout, activations and [`Sequential`].
//!
//! A type implements one required method, [`Parameterized::visit_parameters`], which calls a
//! visitor with each parameter's path relative to the type, the parameter, and its
//! [`Layout`] (how the state dict stores it). Containers visit their children with
//! [`visit_child`], which prefixes the child's paths. Everything else has a default.
//!
//! ```
//! use chi_nn::{Activation, Linear, Module, Parameterized, Sequential};
//! use chi_autodiff::Tensor;
//!
//! let model = Sequential::<f32>::new().add(Linear::new(4, 8)).add(Activation::Relu).add(Linear::new(8, 2));
//! let names: Vec<String> = model.named_parameters().into_iter().map(|(n, _)| n).collect();
//! assert_eq!(names, ["0.weight", "0.bias", "2.weight", "2.bias"]);
//! assert_eq!(model.num_parameters(), 4 * 8 + 8 + 8 * 2 + 2);
//! let y = model.forward(&Tensor::zeros(&[3, 4]));
//! assert_eq!(y.shape(), [3, 2]);
//! ```

use crate::error::NnError;
use crate::params::Param;
use crate::state_dict::{exported_shape, transpose, StateDict};
use chi_autodiff::{Float, Tensor};
use std::cell::Cell;
use std::path::Path;

pub use crate::state_dict::Layout;

/// Something that owns parameters: the part of the [`Module`] API every layer has.
///
/// Only [`Parameterized::visit_parameters`] is required; a type with a train/eval
/// distinction (dropout, or a container of such layers) also overrides
/// [`Parameterized::train`] and [`Parameterized::is_training`].
pub trait Parameterized<T: Float> {
    /// Calls `f(path, parameter, layout)` for every parameter, in a fixed order (the order of
    /// [`Parameterized::parameters`] and of the state dict). Paths are relative to `self`
    /// (`"weight"`, `"0.bias"`).
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout));

    /// Sets training (`true`) or evaluation (`false`) mode, here and in every child.
    /// Only dropout behaves differently; the default does nothing.
    fn train(&self, _training: bool) {}

    /// Evaluation mode: `train(false)`.
    fn eval(&self) {
        self.train(false)
    }

    /// Whether the module is in training mode (default `true`: a module without a mode
    /// behaves the same either way).
    fn is_training(&self) -> bool {
        true
    }

    /// `(path, parameter)` pairs, as `torch.nn.Module.named_parameters`.
    fn named_parameters(&self) -> Vec<(String, Param<T>)> {
        let mut out = Vec::new();
        self.visit_parameters(&mut |n, p, _| out.push((n.to_string(), p.clone())));
        out
    }

    /// The parameters (handles; give them to an optimiser).
    fn parameters(&self) -> Vec<Param<T>> {
        let mut out = Vec::new();
        self.visit_parameters(&mut |_, p, _| out.push(p.clone()));
        out
    }

    /// The number of trainable scalars.
    fn num_parameters(&self) -> usize {
        let mut n = 0;
        self.visit_parameters(&mut |_, p, _| n += p.numel());
        n
    }

    /// Clears every parameter's gradient.
    fn zero_grad(&self) {
        self.visit_parameters(&mut |_, p, _| p.zero_grad());
    }

    /// Renames every free-standing parameter (one made by a builder constructor, not by a
    /// [`crate::ParamStore`]) to its path, so an optimiser and a checkpoint, which key their
    /// state by [`Param::name`], see distinct names. [`Sequential`] does this when a module is
    /// added; call it once on a model struct of your own. Returns `self` for chaining.
    fn assign_parameter_names(&self) -> &Self
    where
        Self: Sized,
    {
        self.visit_parameters(&mut |n, p, _| {
            p.rename(n);
        });
        self
    }

    /// The parameters in PyTorch's names and layouts (see [`crate::state_dict`]).
    fn state_dict(&self) -> StateDict<T> {
        state_dict(self)
    }

    /// Loads a state dict: checks every name and shape first and changes nothing on an error
    /// (which names the key and both shapes).
    fn load_state_dict(&self, sd: &StateDict<T>) -> Result<(), NnError> {
        load_state_dict(self, sd)
    }

    /// Saves the state dict as a safetensors file (loadable by `safetensors.torch.load_file`
    /// and then `torch_module.load_state_dict`).
    fn save(&self, path: impl AsRef<Path>) -> Result<(), NnError>
    where
        Self: Sized,
    {
        self.state_dict().save(path)
    }

    /// Loads a safetensors state dict written by [`Parameterized::save`] or by PyTorch.
    fn load(&self, path: impl AsRef<Path>) -> Result<(), NnError>
    where
        Self: Sized,
    {
        load_file(self, path.as_ref())
    }
}

/// A layer or model mapping one tensor to one tensor: `torch.nn.Module` with `forward(x)`.
///
/// `forward` panics on a shape mismatch, naming the layer and both shapes (a programming error,
/// as a wrong shape is in PyTorch).
pub trait Module<T: Float>: Parameterized<T> {
    /// The forward pass.
    fn forward(&self, x: &Tensor<T>) -> Tensor<T>;
}

/// Visits `child`'s parameters with `prefix.` in front of their paths (for containers and
/// models made of named parts: `visit_child("encoder", &self.encoder, f)`).
pub fn visit_child<T: Float, M: Parameterized<T> + ?Sized>(prefix: &str, child: &M, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
    child.visit_parameters(&mut |n, p, l| f(&format!("{prefix}.{n}"), p, l));
}

impl<T: Float, M: Parameterized<T> + ?Sized> Parameterized<T> for Box<M> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
        (**self).visit_parameters(f)
    }
    fn train(&self, training: bool) {
        (**self).train(training)
    }
    fn is_training(&self) -> bool {
        (**self).is_training()
    }
}

impl<T: Float, M: Module<T> + ?Sized> Module<T> for Box<M> {
    fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        (**self).forward(x)
    }
}

/// A list of parts (PyTorch's `ModuleList`): part `i`'s parameters are `"{i}.{path}"`.
impl<T: Float, M: Parameterized<T>> Parameterized<T> for Vec<M> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
        for (i, m) in self.iter().enumerate() {
            visit_child(&i.to_string(), m, f);
        }
    }
    fn train(&self, training: bool) {
        self.iter().for_each(|m| m.train(training))
    }
    fn is_training(&self) -> bool {
        self.iter().all(|m| m.is_training())
    }
}

/// Modules applied one after the other (`torch.nn.Sequential`).
///
/// Part `i`'s parameters are named `"{i}.{path}"` (`"0.weight"`), and free-standing
/// parameters are renamed so when the part is added (see
/// [`Parameterized::assign_parameter_names`]). Starts in training mode; a part added later
/// takes the container's mode.
pub struct Sequential<T: Float> {
    layers: Vec<Box<dyn Module<T>>>,
    training: Cell<bool>,
}

impl<T: Float> Default for Sequential<T> {
    fn default() -> Self {
        Sequential { layers: Vec::new(), training: Cell::new(true) }
    }
}

impl<T: Float> Sequential<T> {
    /// An empty container (the identity).
    pub fn new() -> Self {
        Self::default()
    }
    /// Appends a module (builder style): `Sequential::new().add(Linear::new(2, 8)).add(Activation::Tanh)`.
    #[allow(clippy::should_implement_trait)]
    pub fn add(mut self, m: impl Module<T> + 'static) -> Self {
        self.push(m);
        self
    }
    /// Appends a module.
    pub fn push(&mut self, m: impl Module<T> + 'static) {
        self.push_boxed(Box::new(m));
    }
    /// Appends a boxed module.
    pub fn push_boxed(&mut self, m: Box<dyn Module<T>>) {
        let i = self.layers.len();
        m.visit_parameters(&mut |n, p, _| {
            p.rename(&format!("{i}.{n}"));
        });
        m.train(self.training.get());
        self.layers.push(m);
    }
    /// Number of parts.
    pub fn len(&self) -> usize {
        self.layers.len()
    }
    /// Whether there are no parts.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }
    /// Part `i`, if any.
    pub fn get(&self, i: usize) -> Option<&dyn Module<T>> {
        self.layers.get(i).map(|b| b.as_ref())
    }
    /// The parts in order.
    pub fn iter(&self) -> impl Iterator<Item = &dyn Module<T>> {
        self.layers.iter().map(|b| b.as_ref())
    }
}

impl<T: Float> std::ops::Index<usize> for Sequential<T> {
    type Output = dyn Module<T>;
    /// Part `i`; panics if there are not that many parts.
    fn index(&self, i: usize) -> &Self::Output {
        self.layers[i].as_ref()
    }
}

impl<T: Float> Parameterized<T> for Sequential<T> {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<T>, Layout)) {
        for (i, m) in self.layers.iter().enumerate() {
            visit_child(&i.to_string(), m.as_ref(), f);
        }
    }
    fn train(&self, training: bool) {
        self.training.set(training);
        self.layers.iter().for_each(|m| m.train(training));
    }
    fn is_training(&self) -> bool {
        self.training.get()
    }
}

impl<T: Float> Module<T> for Sequential<T> {
    fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        let mut h = x.clone();
        for m in &self.layers {
            h = m.forward(&h);
        }
        h
    }
}

/// An activation is a parameter-free module.
impl<T: Float> Parameterized<T> for crate::Activation {
    fn visit_parameters(&self, _f: &mut dyn FnMut(&str, &Param<T>, Layout)) {}
}

impl<T: Float> Module<T> for crate::Activation {
    fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        self.apply(x)
    }
}

// ------------------------------------------------------------------ state dicts of modules

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
    use crate::layers::{Bidirectional, Conv1dText, Dropout, Embedding, LayerNorm, Linear, LstmCell};
    use crate::params::{manual_seed, ParamStore};
    use crate::Activation;
    use chi_autodiff::Rng;

    #[test]
    fn nested_paths_and_distinct_parameter_names() {
        let inner = Sequential::<f64>::new().add(Linear::new(2, 3)).add(Activation::Tanh).add(LayerNorm::new(3));
        let model = Sequential::new().add(inner).add(Linear::new(3, 1).no_bias());
        let names: Vec<String> = model.named_parameters().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["0.0.weight", "0.0.bias", "0.2.weight", "0.2.bias", "1.weight"]);
        // The parameters themselves carry the paths, so optimiser state keys are distinct.
        let pnames: Vec<String> = model.parameters().iter().map(|p| p.name()).collect();
        assert_eq!(pnames, names);
        assert_eq!(model.num_parameters(), 6 + 3 + 3 + 3 + 3);
        assert_eq!(model.len(), 2);
        assert_eq!(model[1].num_parameters(), 3);
        assert_eq!(model.forward(&Tensor::zeros(&[4, 2])).shape(), [4, 1]);
    }

    #[test]
    fn store_parameters_keep_their_store_names() {
        let mut store = ParamStore::<f64>::new();
        let lin = Linear::in_store(&mut store, "head", "g", 2, 2, true, &mut Rng::new(0));
        let model = Sequential::new().add(lin);
        assert_eq!(model.named_parameters()[0].0, "0.weight");
        assert_eq!(model.parameters()[0].name(), "head.weight");
        assert!(store.get("head.weight").is_some());
    }

    #[test]
    fn train_and_eval_reach_nested_dropout() {
        let model = Sequential::<f64>::new().add(Sequential::new().add(Dropout::new(0.5))).add(Activation::Identity);
        let x = Tensor::ones(&[64]);
        assert!(model.is_training());
        assert_ne!(model.forward(&x).to_vec(), x.to_vec(), "training: some entries dropped");
        model.eval();
        assert!(!model.is_training() && !model[0].is_training());
        assert_eq!(model.forward(&x).to_vec(), x.to_vec(), "eval: identity");
        model.train(true);
        assert!(model[0].is_training());
        // A part added to a container in eval mode takes that mode.
        let mut m = Sequential::<f64>::new();
        m.eval();
        m.push(Dropout::new(0.9));
        assert_eq!(m.forward(&x).to_vec(), x.to_vec());
    }

    #[test]
    fn default_init_is_deterministic_and_overridable() {
        manual_seed(5);
        let a = Linear::<f32>::new(3, 2);
        let a2 = Linear::<f32>::new(3, 2);
        manual_seed(5);
        let b = Linear::<f32>::new(3, 2);
        assert_eq!(a.weight.to_vec(), b.weight.to_vec(), "same stream, same weights");
        assert_ne!(a.weight.to_vec(), a2.weight.to_vec(), "each construction draws its own seed");
        assert_eq!(Linear::<f32>::new(3, 2).seed(9).weight.to_vec(), Linear::<f32>::new(3, 2).seed(9).weight.to_vec());
        let z = Linear::<f32>::new(3, 2).init(crate::Init::Zeros);
        assert!(z.weight.to_vec().iter().all(|&v| v == 0.0));
    }

    #[test]
    fn every_layer_lists_its_parameters() {
        let emb = Embedding::<f64>::new(5, 3);
        assert_eq!(emb.named_parameters()[0].0, "weight");
        let y = Module::forward(&emb, &Tensor::from_vec(vec![4.0, 0.0, 4.0, 1.0], &[2, 2]));
        assert_eq!(y.shape(), [2, 2, 3]);
        assert_eq!(y.to_vec()[..3], emb.weight.to_vec()[12..15]);
        let conv = Conv1dText::<f64>::new(4, &[2, 3], 5);
        let n: Vec<String> = conv.named_parameters().into_iter().map(|(n, _)| n).collect();
        assert_eq!(n, ["convs.0.weight", "convs.0.bias", "convs.1.weight", "convs.1.bias"]);
        assert_eq!(conv.state_dict().get("convs.1.weight").unwrap().0, [5, 4, 3]);
        let mut store = ParamStore::<f64>::new();
        let mut rng = Rng::new(1);
        let bi = Bidirectional::new(
            LstmCell::new(&mut store, "f", "g", 2, 3, true, &mut rng),
            LstmCell::new(&mut store, "b", "g", 2, 3, false, &mut rng),
        );
        let n: Vec<String> = bi.named_parameters().into_iter().map(|(n, _)| n).collect();
        assert_eq!(n, ["fwd.w_ih", "fwd.w_hh", "fwd.bias", "fwd.p_i", "fwd.p_f", "fwd.p_o", "bwd.w_ih", "bwd.w_hh", "bwd.bias"]);
        assert_eq!(bi.num_parameters(), store.num_scalars());
        bi.zero_grad();
    }
}
