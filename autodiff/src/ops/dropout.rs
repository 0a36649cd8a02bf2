//! Inverted dropout: a product with a constant random mask.

use crate::tensor::Tensor;
use crate::{Float, Rng};

impl<T: Float> Tensor<T> {
    /// Inverted dropout: in training, each element is zeroed with probability `p` and the rest
    /// are scaled by `1/(1−p)` (so the expectation is unchanged); `x ⊙ mask` with a constant
    /// mask drawn from `rng` (the same seed gives the same mask). The identity when
    /// `!training` or `p == 0`; all zeros when `p == 1`. Panics unless `0 ≤ p ≤ 1`.
    #[track_caller]
    pub fn dropout(&self, p: f64, training: bool, rng: &mut Rng) -> Tensor<T> {
        assert!((0.0..=1.0).contains(&p), "dropout: probability {p} is not in [0, 1] (input {:?})", self.shape);
        if !training || p == 0.0 {
            return self.clone();
        }
        let keep = if p < 1.0 { T::from_f64(1.0 / (1.0 - p)) } else { T::ZERO };
        let mask: Vec<T> = (0..self.numel()).map(|_| if rng.next_f64() >= p { keep } else { T::ZERO }).collect();
        self.mul(&Tensor::from_vec(mask, self.shape()))
    }
}
