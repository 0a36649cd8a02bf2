//! Parameters: named, grouped, freezable tensors shared between layers and optimisers.
//!
//! A [`Param`] is a handle (cheap to clone) to one trainable tensor. Layers keep handles and read
//! the current value with [`Param::get`] in their forward pass; optimisers write new values with
//! [`Param::update`]. The tensor's autodiff identity stays the same across updates, so its
//! accumulated `.grad()` and any hooks survive.
//!
//! A [`ParamStore`] owns the list of parameters of a model in creation order, with unique
//! dotted names (`"encoder.lstm.w_ih"`) and a *group* per parameter. Groups are what the paper's
//! block-coordinate training freezes and unfreezes ([CAML] §4.2.1, `em_steps`).

use chi_autodiff::{Float, Rng, Tensor};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

struct ParamInner<T: Float> {
    name: String,
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
        write!(f, "Param({} {:?} group={})", self.0.name, self.shape(), self.group())
    }
}

impl<T: Float> Param<T> {
    /// The current value (a tracked leaf unless frozen). Use this in forward passes.
    pub fn get(&self) -> Tensor<T> {
        self.0.value.borrow().clone()
    }
    /// Full dotted name.
    pub fn name(&self) -> &str {
        &self.0.name
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
        let value = init.detach().requires_grad().named(name);
        let p = Param(Rc::new(ParamInner { name: name.to_string(), group: RefCell::new(group.to_string()), value: RefCell::new(value) }));
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
        *p.0.group.borrow_mut() = group.to_string();
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
        self.params.iter().filter_map(|p| p.grad().map(|g| (p.name().to_string(), g.norm()))).collect()
    }
    /// Global L2 norm of all gradients.
    pub fn global_grad_norm(&self) -> f64 {
        self.grad_norms().iter().map(|(_, n)| n * n).sum::<f64>().sqrt()
    }
}

/// Initialisers. Each returns a constant tensor; [`ParamStore::add`] makes it a parameter.
pub mod init {
    use super::*;

    /// Xavier/Glorot uniform: `U(−a, a)`, `a = gain·√(6 / (fan_in + fan_out))`.
    pub fn xavier_uniform<T: Float>(shape: &[usize], fan_in: usize, fan_out: usize, gain: f64, rng: &mut Rng) -> Tensor<T> {
        let a = gain * (6.0 / (fan_in + fan_out).max(1) as f64).sqrt();
        Tensor::rand_uniform(shape, -a, a, rng)
    }
    /// Xavier/Glorot normal: `N(0, gain²·2 / (fan_in + fan_out))`.
    pub fn xavier_normal<T: Float>(shape: &[usize], fan_in: usize, fan_out: usize, gain: f64, rng: &mut Rng) -> Tensor<T> {
        let std = gain * (2.0 / (fan_in + fan_out).max(1) as f64).sqrt();
        Tensor::randn(shape, rng).mul_scalar(std)
    }
    /// He/Kaiming normal for ReLU layers: `N(0, 2 / fan_in)`.
    pub fn he_normal<T: Float>(shape: &[usize], fan_in: usize, rng: &mut Rng) -> Tensor<T> {
        Tensor::randn(shape, rng).mul_scalar((2.0 / fan_in.max(1) as f64).sqrt())
    }
    /// He/Kaiming uniform: `U(−a, a)`, `a = √(6 / fan_in)`.
    pub fn he_uniform<T: Float>(shape: &[usize], fan_in: usize, rng: &mut Rng) -> Tensor<T> {
        let a = (6.0 / fan_in.max(1) as f64).sqrt();
        Tensor::rand_uniform(shape, -a, a, rng)
    }
    /// `U(lo, hi)`.
    pub fn uniform<T: Float>(shape: &[usize], lo: f64, hi: f64, rng: &mut Rng) -> Tensor<T> {
        Tensor::rand_uniform(shape, lo, hi, rng)
    }
    /// `N(0, std²)`.
    pub fn normal<T: Float>(shape: &[usize], std: f64, rng: &mut Rng) -> Tensor<T> {
        Tensor::randn(shape, rng).mul_scalar(std)
    }
    /// Zeros.
    pub fn zeros<T: Float>(shape: &[usize]) -> Tensor<T> {
        Tensor::zeros(shape)
    }
    /// A constant.
    pub fn constant<T: Float>(shape: &[usize], v: f64) -> Tensor<T> {
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
