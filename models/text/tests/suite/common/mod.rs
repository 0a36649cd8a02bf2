//! Shared test helpers.
#![allow(dead_code)]

use chi_autodiff::{gradcheck, GradcheckOptions, GradcheckReport, Rng, Tensor};
use chi_text::deps::Param;

/// Float64 central-difference gradcheck of `loss` with respect to `params` (their values are
/// swapped for the checker's leaves and restored afterwards).
pub fn check_params(params: &[Param<f64>], loss: impl Fn() -> Tensor<f64>) -> Result<GradcheckReport, GradcheckReport> {
    let originals: Vec<Tensor<f64>> = params.iter().map(|p| p.get()).collect();
    let inputs: Vec<Tensor<f64>> = originals.iter().map(|t| t.detach()).collect();
    let f = |xs: &[Tensor<f64>]| {
        for (p, x) in params.iter().zip(xs) {
            p.replace(x.clone());
        }
        loss()
    };
    let r = gradcheck(f, &inputs, &GradcheckOptions { eps: 1e-6, atol: 1e-5, rtol: 1e-3, ..Default::default() });
    for (p, o) in params.iter().zip(originals) {
        p.replace(o);
    }
    r
}

/// Adds small noise to every parameter (zero biases would hide bias-gradient bugs).
pub fn perturb(params: &[Param<f64>], scale: f64, seed: u64) {
    let mut rng = Rng::new(seed);
    for p in params {
        p.update(|v| v.iter_mut().for_each(|x| *x += scale * rng.normal()));
    }
}

/// A planted sentiment corpus: sentences of filler words with one cue word ("good"-like for
/// class 1, "bad"-like for class 0) at a random position. Returns (token lists, labels).
pub fn planted_corpus(n: usize, seed: u64) -> (Vec<Vec<String>>, Vec<usize>) {
    let fill = ["the", "movie", "was", "a", "plot", "and", "actor", "it", "film", "story", "of", "in"];
    let pos = ["good", "great", "superb"];
    let neg = ["bad", "awful", "dull"];
    let mut rng = Rng::new(seed);
    let mut docs = Vec::new();
    let mut labels = Vec::new();
    for _ in 0..n {
        let y = rng.below(2);
        let len = 4 + rng.below(8);
        let mut d: Vec<String> = (0..len).map(|_| fill[rng.below(fill.len())].to_string()).collect();
        let cue = if y == 1 { pos[rng.below(3)] } else { neg[rng.below(3)] };
        let at = rng.below(len + 1);
        d.insert(at, cue.to_string());
        docs.push(d);
        labels.push(y);
    }
    (docs, labels)
}
