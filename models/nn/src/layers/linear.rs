//! Fully connected (affine) layer.

use super::param_name;
use crate::params::{init, Param, ParamStore};
use chi_autodiff::{Float, Rng, Tensor};

/// `y = x·W + b`: `x [.., in]` → `y [.., out]` (any number of leading axes).
///
/// `W` is stored `[in, out]` (Xavier/Glorot uniform, `a = √(6/(in+out))`); the optional bias
/// `b [out]` starts at zero. Parameters: `{prefix}.weight`, `{prefix}.bias`.
pub struct Linear<T: Float> {
    /// `[in, out]` weight.
    pub weight: Param<T>,
    /// `[out]` bias, if any.
    pub bias: Option<Param<T>>,
    in_features: usize,
    out_features: usize,
}

impl<T: Float> Linear<T> {
    /// A new layer with Xavier-uniform weights and (if `bias`) a zero bias.
    pub fn new(store: &mut ParamStore<T>, prefix: &str, group: &str, in_features: usize, out_features: usize, bias: bool, rng: &mut Rng) -> Self {
        let weight = store.add(
            &param_name(prefix, "weight"),
            group,
            init::xavier_uniform(&[in_features, out_features], in_features, out_features, 1.0, rng),
        );
        let bias = bias.then(|| store.add(&param_name(prefix, "bias"), group, init::zeros(&[out_features])));
        Linear { weight, bias, in_features, out_features }
    }
    /// Input size.
    pub fn in_features(&self) -> usize {
        self.in_features
    }
    /// Output size.
    pub fn out_features(&self) -> usize {
        self.out_features
    }
    /// `x [.., in]` → `x·W + b` `[.., out]`.
    #[track_caller]
    pub fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        assert!(
            x.rank() >= 1 && x.dim(-1) == self.in_features,
            "Linear({}): input {:?} does not end in {} features",
            self.weight.name(),
            x.shape(),
            self.in_features
        );
        let y = x.matmul(&self.weight.get());
        match &self.bias {
            Some(b) => y.add(&b.get()),
            None => y,
        }
    }
}
