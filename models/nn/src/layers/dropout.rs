//! Dropout with a train/eval switch and its own seeded generator.

use chi_autodiff::{Float, Rng, Tensor};
use std::cell::{Cell, RefCell};

/// Inverted dropout: in training mode each element is zeroed with probability `p` and the rest
/// scaled by `1/(1−p)`; the identity in eval mode. Shape in = shape out.
///
/// The layer owns a seeded [`Rng`], so a run is reproducible; masks are constants (the
/// gradient is `mask ⊙ g`). Starts in training mode.
pub struct Dropout {
    p: f64,
    training: Cell<bool>,
    rng: RefCell<Rng>,
}

impl Dropout {
    /// Dropout with probability `p ∈ [0, 1]` and masks drawn from `Rng::new(seed)`.
    pub fn new(p: f64, seed: u64) -> Self {
        assert!((0.0..=1.0).contains(&p), "Dropout: probability {p} is not in [0, 1]");
        Dropout { p, training: Cell::new(true), rng: RefCell::new(Rng::new(seed)) }
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
}
