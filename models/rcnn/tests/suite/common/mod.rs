#![allow(dead_code)]
use chi_autodiff::{gradcheck, gradgradcheck, GradcheckOptions, GradcheckReport, Tensor};
use chi_rcnn::deps::ParamStore;

/// Gradchecks `f` with respect to the extra `inputs` and every unfrozen parameter of `store`
/// (each parameter's value is swapped for the checker's leaf while `f` runs).
pub fn check_store(store: &ParamStore<f64>, inputs: &[Tensor<f64>], f: impl Fn(&[Tensor<f64>]) -> Tensor<f64>, order: u32) -> Result<GradcheckReport, GradcheckReport> {
    let params: Vec<_> = store.params().iter().filter(|p| !p.is_frozen()).cloned().collect();
    let originals: Vec<Tensor<f64>> = params.iter().map(|p| p.get()).collect();
    let mut all: Vec<Tensor<f64>> = inputs.to_vec();
    all.extend(originals.iter().map(|t| t.detach()));
    let n_in = inputs.len();
    let g = |xs: &[Tensor<f64>]| {
        for (p, x) in params.iter().zip(&xs[n_in..]) {
            p.replace(x.clone());
        }
        f(&xs[..n_in])
    };
    let opts = GradcheckOptions::default();
    let r = if order == 1 { gradcheck(g, &all, &opts) } else { gradgradcheck(g, &all, &opts) };
    for (p, o) in params.iter().zip(originals) {
        p.replace(o);
    }
    r
}

pub fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "length mismatch");
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}
