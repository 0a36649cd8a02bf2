//! Dropout with a train/eval switch and its own seeded generator.

use crate::module::{Layout, Module, Parameterized};
use crate::params::{next_init_seed, Param};
use chi_autodiff::{Float, Rng, Tensor};
use std::cell::{Cell, RefCell};

/// Inverted dropout: in training mode each element is zeroed with probability `p` and the rest
/// scaled by `1/(1−p)`; the identity in eval mode. Shape in = shape out.
///
/// The layer owns a seeded [`Rng`], so a run is reproducible; masks are constants (the
/// gradient is `mask ⊙ g`). Starts in training mode; [`Parameterized::train`] /
/// [`Parameterized::eval`] (or a container's) switch it. A training loop that keeps its own
/// checkpointed dropout stream passes it to [`Dropout::forward_rng`] instead.
pub struct Dropout {
    p: f64,
    training: Cell<bool>,
    rng: RefCell<Rng>,
}

impl Dropout {
    /// Dropout with probability `p ∈ [0, 1]`, masks drawn from a seed of the thread's
    /// initialisation stream ([`crate::manual_seed`]; [`Dropout::seed`] sets another).
    /// Panics if `p` is outside `[0, 1]`.
    pub fn new(p: f64) -> Self {
        Self::with_seed(p, next_init_seed())
    }
    /// Dropout with probability `p ∈ [0, 1]` and masks drawn from `Rng::new(seed)`.
    pub fn with_seed(p: f64, seed: u64) -> Self {
        assert!((0.0..=1.0).contains(&p), "Dropout: probability {p} is not in [0, 1]");
        Dropout { p, training: Cell::new(true), rng: RefCell::new(Rng::new(seed)) }
    }
    /// Restarts the mask stream from `Rng::new(seed)`.
    pub fn seed(self, seed: u64) -> Self {
        *self.rng.borrow_mut() = Rng::new(seed);
        self
    }
    /// Restarts the mask stream from `Rng::new(seed)` in place (for a layer inside a model,
    /// e.g. to give each data-parallel rank its own masks).
    pub fn reseed(&self, seed: u64) {
        *self.rng.borrow_mut() = Rng::new(seed);
    }
    /// The drop probability.
    pub fn p(&self) -> f64 {
        self.p
    }
    /// Switches between training (`true`, masks applied) and evaluation (`false`, identity).
    pub fn set_training(&self, training: bool) {
        self.training.set(training)
    }
    /// Whether the layer is in training mode.
    pub fn is_training(&self) -> bool {
        self.training.get()
    }
    /// Applies dropout (training) or passes `x` through (eval).
    pub fn forward<T: Float>(&self, x: &Tensor<T>) -> Tensor<T> {
        x.dropout(self.p, self.training.get(), &mut self.rng.borrow_mut())
    }
    /// Applies dropout if `training` (masks from `rng`, one draw per element; nothing is drawn
    /// when `p = 0` or in eval mode), ignoring the layer's own mode and generator.
    pub fn forward_rng<T: Float>(&self, x: &Tensor<T>, training: bool, rng: &mut Rng) -> Tensor<T> {
        x.dropout(self.p, training, rng)
    }
}

impl<T: Float> Parameterized<T> for Dropout {
    fn visit_parameters(&self, _f: &mut dyn FnMut(&str, &Param<T>, Layout)) {}
    fn train(&self, training: bool) {
        self.set_training(training)
    }
    fn is_training(&self) -> bool {
        self.training.get()
    }
}

impl<T: Float> Module<T> for Dropout {
    fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        Dropout::forward(self, x)
    }
}
