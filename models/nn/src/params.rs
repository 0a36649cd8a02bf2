//! Parameters: named, grouped, freezable tensors shared between layers and optimisers.
//!
//! A [`Param`] is a handle (cheap to clone) to one trainable tensor. Layers keep handles and read
//! the current value with [`Param::get`] in their forward pass; optimisers write new values with
//! [`Param::update`]. The tensor's autodiff identity stays the same across updates, so its
//! accumulated `.grad()` and any hooks survive.
//!
//! A [`ParamStore`] owns the list of parameters of a model in creation order, with unique
//! dotted names (`"encoder.lstm.w_ih"`) and a *group* per parameter. Groups are what the paper's
//! block-coordinate training freezes and unfreezes ([CAML](crate#references) §4.2.1, `em_steps`).

use chi_autodiff::{Float, Rng, Tensor};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

struct ParamInner<T: Float> {
    name: RefCell<String>,
    /// Whether a [`ParamStore`] indexes the parameter by its name (then the name is fixed).
    in_store: bool,
    group: RefCell<String>,
    value: RefCell<Tensor<T>>,
}

/// A handle to one trainable tensor.
pub struct Param<T: Float>(Rc<ParamInner<T>>);

impl<T: Float> Clone for Param<T> {
    fn clone(&self) -> Self {
        Param(self.0.clone())
    }
}

impl<T: Float> std::fmt::Debug for Param<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Param({} {:?} group={})", self.name(), self.shape(), self.group())
    }
}

impl<T: Float> Param<T> {
    /// A free-standing parameter (not in any [`ParamStore`]) named `name`, in group
    /// `"default"`, starting at `init`. Layers built with their builder constructors (e.g.
    /// [`crate::layers::Linear::new`]) hold such parameters; a [`crate::Sequential`] renames
    /// them to their dotted paths (`"0.weight"`) when they are added.
    pub fn new(name: &str, init: Tensor<T>) -> Self {
        Self::make(name, "default", init, false)
    }
    fn make(name: &str, group: &str, init: Tensor<T>, in_store: bool) -> Self {
        let value = init.detach().requires_grad().named(name);
        Param(Rc::new(ParamInner { name: RefCell::new(name.to_string()), in_store, group: RefCell::new(group.to_string()), value: RefCell::new(value) }))
    }
    /// Whether the parameter belongs to a [`ParamStore`] (whose index fixes its name).
    pub fn in_store(&self) -> bool {
        self.0.in_store
    }
    /// Renames a free-standing parameter (see [`Param::new`]); returns `false` and changes
    /// nothing for a parameter of a [`ParamStore`], whose name is its key there. Optimiser
    /// state and checkpoints are keyed by this name, so the parameters of one model need
    /// distinct names: [`crate::Parameterized::assign_parameter_names`] gives each its path.
    pub fn rename(&self, name: &str) -> bool {
        if self.0.in_store {
            return false;
        }
        *self.0.name.borrow_mut() = name.to_string();
        let _ = self.0.value.borrow().clone().named(name);
        true
    }
    /// Moves the parameter to another group (block-coordinate training freezes whole groups).
    pub fn set_group(&self, group: &str) {
        *self.0.group.borrow_mut() = group.to_string();
    }
    /// The current value (a tracked leaf unless frozen). Use this in forward passes.
    pub fn get(&self) -> Tensor<T> {
        self.0.value.borrow().clone()
    }
    /// Full dotted name.
    pub fn name(&self) -> String {
        self.0.name.borrow().clone()
    }
    /// Group name.
    pub fn group(&self) -> String {
        self.0.group.borrow().clone()
    }
    /// Shape.
    pub fn shape(&self) -> Vec<usize> {
        self.0.value.borrow().shape().to_vec()
    }
    /// Number of scalars.
    pub fn numel(&self) -> usize {
        self.0.value.borrow().numel()
    }
    /// The accumulated gradient, if any (sparse gradients densified).
    pub fn grad(&self) -> Option<Tensor<T>> {
        self.0.value.borrow().grad()
    }
    /// Clears the accumulated gradient.
    pub fn zero_grad(&self) {
        self.0.value.borrow().zero_grad()
    }
    /// Freezes (`true`) or unfreezes the parameter: a frozen parameter is a constant to every op.
    pub fn set_frozen(&self, frozen: bool) {
        self.0.value.borrow().set_requires_grad(!frozen)
    }
    /// Whether the parameter is frozen.
    pub fn is_frozen(&self) -> bool {
        !self.0.value.borrow().is_tracked()
    }
    /// Changes values in place (copy-on-write if a tape still holds the old values).
    pub fn update(&self, f: impl FnOnce(&mut [T])) {
        self.0.value.borrow_mut().update(f)
    }
    /// Replaces the values (same shape), keeping identity. Panics on a shape mismatch.
    pub fn set_values(&self, values: Vec<T>) {
        self.0.value.borrow_mut().set_values(values)
    }
    /// Whether two handles refer to the same parameter.
    pub fn ptr_eq(&self, other: &Param<T>) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
    /// Swaps in another tensor as this parameter's value (identity included), returning the old
    /// one. Used by [`crate::gradcheck::check_model`] to put the checker's leaves in place.
    pub fn replace(&self, t: Tensor<T>) -> Tensor<T> {
        std::mem::replace(&mut *self.0.value.borrow_mut(), t)
    }
    /// Values as a plain vector.
    pub fn to_vec(&self) -> Vec<T> {
        self.0.value.borrow().to_vec()
    }
}

/// The parameters of a model, in creation order, with unique names.
pub struct ParamStore<T: Float> {
    params: Vec<Param<T>>,
    index: HashMap<String, usize>,
}

impl<T: Float> Default for ParamStore<T> {
    fn default() -> Self {
        ParamStore { params: Vec::new(), index: HashMap::new() }
    }
}

impl<T: Float> ParamStore<T> {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds a parameter with initial value `init` in group `group`. Panics if the name is taken.
    pub fn add(&mut self, name: &str, group: &str, init: Tensor<T>) -> Param<T> {
        assert!(!self.index.contains_key(name), "ParamStore: parameter name {name:?} is already used");
        let p = Param::make(name, group, init, true);
        self.index.insert(name.to_string(), self.params.len());
        self.params.push(p.clone());
        p
    }
    /// All parameters in creation order.
    pub fn params(&self) -> &[Param<T>] {
        &self.params
    }
    /// A parameter by name.
    pub fn get(&self, name: &str) -> Option<&Param<T>> {
        self.index.get(name).map(|&i| &self.params[i])
    }
    /// Total number of scalars.
    pub fn num_scalars(&self) -> usize {
        self.params.iter().map(|p| p.numel()).sum()
    }
    /// Names of the groups, in first-seen order.
    pub fn groups(&self) -> Vec<String> {
        let mut g: Vec<String> = Vec::new();
        for p in &self.params {
            let n = p.group();
            if !g.contains(&n) {
                g.push(n);
            }
        }
        g
    }
    /// Moves a parameter to another group.
    pub fn set_group(&self, name: &str, group: &str) {
        let p = self.get(name).unwrap_or_else(|| panic!("ParamStore: no parameter named {name:?}"));
        p.set_group(group);
    }
    /// Freezes or unfreezes every parameter of a group.
    pub fn set_group_frozen(&self, group: &str, frozen: bool) {
        for p in self.params.iter().filter(|p| p.group() == group) {
            p.set_frozen(frozen);
        }
    }
    /// Clears every gradient.
    pub fn zero_grad(&self) {
        for p in &self.params {
            p.zero_grad();
        }
    }
    /// `(name, ‖grad‖₂)` for every parameter that has a gradient.
    pub fn grad_norms(&self) -> Vec<(String, f64)> {
        self.params.iter().filter_map(|p| p.grad().map(|g| (p.name(), g.norm()))).collect()
    }
    /// Global L2 norm of all gradients.
    pub fn global_grad_norm(&self) -> f64 {
        self.grad_norms().iter().map(|(_, n)| n * n).sum::<f64>().sqrt()
    }
}

/// The seed of the thread's default initialisation stream, as at the start of every thread.
pub const DEFAULT_INIT_SEED: u64 = 0;

thread_local! {
    static INIT_STREAM: RefCell<Rng> = RefCell::new(Rng::new(DEFAULT_INIT_SEED));
}

/// Restarts this thread's default initialisation stream from `seed` (as `torch.manual_seed`).
///
/// Every builder constructor ([`crate::layers::Linear::new`], [`crate::layers::Embedding::new`],
/// …) draws one seed from this stream and initialises its parameters from `Rng::new(seed)`, so
/// a program that builds the same layers in the same order gets the same weights on every run
/// (the stream starts at [`DEFAULT_INIT_SEED`] in each thread). A layer's `.seed(s)` option
/// replaces its drawn seed.
pub fn manual_seed(seed: u64) {
    INIT_STREAM.with(|r| *r.borrow_mut() = Rng::new(seed));
}

/// Draws the next seed from this thread's default initialisation stream (see [`manual_seed`]).
pub fn next_init_seed() -> u64 {
    INIT_STREAM.with(|r| r.borrow_mut().next_u64())
}

/// How a builder-constructed layer initialises a weight (its fans come from the layer).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Init {
    /// [`init::xavier_uniform`] with this gain.
    XavierUniform(f64),
    /// [`init::xavier_normal`] with this gain.
    XavierNormal(f64),
    /// [`init::he_uniform`].
    HeUniform,
    /// [`init::he_normal`].
    HeNormal,
    /// [`init::uniform`] on `[lo, hi)`.
    Uniform(f64, f64),
    /// [`init::normal`] with this standard deviation.
    Normal(f64),
    /// All zeros.
    Zeros,
    /// A constant.
    Constant(f64),
}

impl Init {
    /// A tensor of `shape` drawn from `rng` for a weight with the given fans.
    pub fn tensor<T: Float>(self, shape: &[usize], fan_in: usize, fan_out: usize, rng: &mut Rng) -> Tensor<T> {
        match self {
            Init::XavierUniform(g) => init::xavier_uniform(shape, fan_in, fan_out, g, rng),
            Init::XavierNormal(g) => init::xavier_normal(shape, fan_in, fan_out, g, rng),
            Init::HeUniform => init::he_uniform(shape, fan_in, rng),
            Init::HeNormal => init::he_normal(shape, fan_in, rng),
            Init::Uniform(lo, hi) => init::uniform(shape, lo, hi, rng),
            Init::Normal(std) => init::normal(shape, std, rng),
            Init::Zeros => init::zeros(shape),
            Init::Constant(v) => init::constant(shape, v),
        }
    }
}

/// Initialisers. Each returns a constant tensor; [`ParamStore::add`] makes it a parameter.
pub mod init {
    use super::*;

    /// Refuses a parameter larger than the memory available before allocating it: a panic
    /// naming the shape, not an abort on a failed allocation.
    #[track_caller]
    fn bounded(shape: &[usize]) {
        if let Err(e) = crate::limits::check_fits_memory("parameter", shape) {
            panic!("{e}");
        }
    }

    /// Xavier/Glorot uniform: `U(−a, a)`, `a = gain·√(6 / (fan_in + fan_out))`.
    #[track_caller]
    pub fn xavier_uniform<T: Float>(shape: &[usize], fan_in: usize, fan_out: usize, gain: f64, rng: &mut Rng) -> Tensor<T> {
        bounded(shape);
        let a = gain * (6.0 / (fan_in + fan_out).max(1) as f64).sqrt();
        Tensor::rand_uniform(shape, -a, a, rng)
    }
    /// Xavier/Glorot normal: `N(0, gain²·2 / (fan_in + fan_out))`.
    #[track_caller]
    pub fn xavier_normal<T: Float>(shape: &[usize], fan_in: usize, fan_out: usize, gain: f64, rng: &mut Rng) -> Tensor<T> {
        bounded(shape);
        let std = gain * (2.0 / (fan_in + fan_out).max(1) as f64).sqrt();
        Tensor::randn(shape, rng).mul_scalar(std)
    }
    /// He/Kaiming normal for ReLU layers: `N(0, 2 / fan_in)`.
    #[track_caller]
    pub fn he_normal<T: Float>(shape: &[usize], fan_in: usize, rng: &mut Rng) -> Tensor<T> {
        bounded(shape);
        Tensor::randn(shape, rng).mul_scalar((2.0 / fan_in.max(1) as f64).sqrt())
    }
    /// He/Kaiming uniform: `U(−a, a)`, `a = √(6 / fan_in)`.
    #[track_caller]
    pub fn he_uniform<T: Float>(shape: &[usize], fan_in: usize, rng: &mut Rng) -> Tensor<T> {
        bounded(shape);
        let a = (6.0 / fan_in.max(1) as f64).sqrt();
        Tensor::rand_uniform(shape, -a, a, rng)
    }
    /// `U(lo, hi)`.
    #[track_caller]
    pub fn uniform<T: Float>(shape: &[usize], lo: f64, hi: f64, rng: &mut Rng) -> Tensor<T> {
        bounded(shape);
        Tensor::rand_uniform(shape, lo, hi, rng)
    }
    /// `N(0, std²)`.
    #[track_caller]
    pub fn normal<T: Float>(shape: &[usize], std: f64, rng: &mut Rng) -> Tensor<T> {
        bounded(shape);
        Tensor::randn(shape, rng).mul_scalar(std)
    }
    /// Zeros.
    #[track_caller]
    pub fn zeros<T: Float>(shape: &[usize]) -> Tensor<T> {
        bounded(shape);
        Tensor::zeros(shape)
    }
    /// A constant.
    #[track_caller]
    pub fn constant<T: Float>(shape: &[usize], v: f64) -> Tensor<T> {
        bounded(shape);
        Tensor::full(shape, T::from_f64(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn groups_freeze_and_update_keep_identity() {
        let mut rng = Rng::new(0);
        let mut s = ParamStore::<f64>::new();
        let a = s.add("a", "g1", init::normal(&[2], 1.0, &mut rng));
        let b = s.add("b", "g2", init::zeros(&[2]));
        s.set_group_frozen("g1", true);
        assert!(a.is_frozen() && !b.is_frozen());
        let y = a.get().add(&b.get()).sum();
        y.backward();
        assert!(a.grad().is_none());
        assert_eq!(b.grad().unwrap().to_vec(), vec![1.0, 1.0]);
        let before = b.get();
        b.update(|v| v[0] = 5.0);
        assert_eq!(b.to_vec(), vec![5.0, 0.0]);
        assert!(before.same_var(&b.get()), "identity survives updates");
        assert_eq!(before.to_vec(), vec![0.0, 0.0], "old value snapshots are not mutated");
        assert_eq!(s.groups(), vec!["g1".to_string(), "g2".to_string()]);
    }
}

#[cfg(test)]
mod check_tests {
    use super::*;
    use chi_autodiff::GradcheckOptions;
    #[test]
    fn check_model_passes_for_a_correct_model_and_restores_params() {
        let mut rng = Rng::new(3);
        let mut s = ParamStore::<f64>::new();
        let w = s.add("w", "g", init::normal(&[3, 2], 1.0, &mut rng));
        let x = Tensor::randn(&[4, 3], &mut rng);
        let before = w.get();
        let r = crate::gradcheck::check_model(&s, &[x], |xs| xs[0].matmul(&w.get()).tanh(), &GradcheckOptions::default()).unwrap();
        assert_eq!(r.checked, 12 + 6);
        assert!(w.get().same_var(&before));
    }
}
