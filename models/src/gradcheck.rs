//! Whole-model gradient checks: the gradient of a model's loss with respect to every parameter,
//! against float64 central differences (`chi gradcheck --model NAME` and the layer tests).

use crate::params::ParamStore;
use chi_autodiff::{gradcheck, GradcheckOptions, GradcheckReport, Tensor};

/// Gradchecks `loss` (a closure that runs the model forward using its parameters and any fixed
/// inputs, returning any tensor) with respect to every unfrozen parameter in `store`, plus the
/// extra `inputs` passed to it (e.g. the input batch, to check input gradients too).
///
/// Each parameter's value is temporarily replaced by the checker's leaf, so the closure must
/// read parameters with [`crate::params::Param::get`] at call time.
pub fn check_model(
    store: &ParamStore<f64>,
    inputs: &[Tensor<f64>],
    loss: impl Fn(&[Tensor<f64>]) -> Tensor<f64>,
    opts: &GradcheckOptions,
) -> Result<GradcheckReport, GradcheckReport> {
    let params: Vec<_> = store.params().iter().filter(|p| !p.is_frozen()).cloned().collect();
    let originals: Vec<Tensor<f64>> = params.iter().map(|p| p.get()).collect();
    let mut all: Vec<Tensor<f64>> = inputs.to_vec();
    all.extend(originals.iter().map(|t| t.detach()));
    let n_in = inputs.len();
    let f = |xs: &[Tensor<f64>]| {
        for (p, x) in params.iter().zip(&xs[n_in..]) {
            p.replace(x.clone());
        }
        loss(&xs[..n_in])
    };
    let r = gradcheck(f, &all, opts);
    for (p, o) in params.iter().zip(originals) {
        p.replace(o);
    }
    r
}
