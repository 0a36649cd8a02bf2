//! Gradient checking as a product feature.
//!
//! * [`gradcheck`]: float64 central differences per input element, PyTorch semantics
//!   (`eps = 1e-6`, `atol = 1e-5`, `rtol = 1e-3`; an element passes when
//!   `|analytic − numeric| ≤ atol + rtol·|numeric|`), reporting the worst element. A fast mode
//!   compares random projections `vᵀJu` instead of every element.
//! * [`gradgradcheck`]: the same check applied to the first-order gradient computed with
//!   `create_graph`, i.e. a check of second derivatives.
//! * [`check_grads`]: a JAX-style check usable in f32: the forward-mode derivative `J·t` against
//!   finite differences, and the reverse mode against it by `⟨t, Jᵀc⟩ = ⟨J·t, c⟩`.
//!
//! Outputs are reduced with random, non-uniform weights `w` (`L = Σ w ⊙ f(x)`), so errors in
//! different output elements cannot cancel out. Each check also recomputes the analytic
//! gradient through the differentiable (`create_graph`) form of every backward rule and
//! requires it to agree with the fast form, so both code paths are proved.

use crate::backward::{grad, GradOptions};
use crate::tape::Float;
use crate::tensor::Tensor;
use crate::Rng;
use std::fmt;

/// Options of [`gradcheck`] and [`gradgradcheck`].
#[derive(Clone, Debug)]
pub struct GradcheckOptions {
    /// Finite-difference step.
    pub eps: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance.
    pub rtol: f64,
    /// Compare random projections `vᵀJu` (one per input) instead of every element.
    pub fast_mode: bool,
    /// Seed for the output weights and projections.
    pub seed: u64,
    /// Also compute the gradient through the `create_graph` form and compare the two.
    pub check_create_graph: bool,
}

impl Default for GradcheckOptions {
    fn default() -> Self {
        GradcheckOptions { eps: 1e-6, atol: 1e-5, rtol: 1e-3, fast_mode: false, seed: 0x5eed, check_create_graph: true }
    }
}

/// The element with the largest error relative to its tolerance.
#[derive(Clone, Debug, PartialEq)]
pub struct WorstElement {
    /// Which input.
    pub input: usize,
    /// Flat index within that input (`usize::MAX` for a fast-mode projection).
    pub index: usize,
    /// Reverse-mode value.
    pub analytic: f64,
    /// Finite-difference value.
    pub numeric: f64,
}

/// Result of a gradient check.
#[derive(Clone, Debug)]
pub struct GradcheckReport {
    /// Whether every compared value is within tolerance.
    pub passed: bool,
    /// Largest `|analytic − numeric|`.
    pub max_abs_err: f64,
    /// Largest `|analytic − numeric| / max(|numeric|, tiny)`.
    pub max_rel_err: f64,
    /// The worst element (relative to its tolerance), if any were compared.
    pub worst: Option<WorstElement>,
    /// How many values were compared.
    pub checked: usize,
    /// A problem found before comparing (shape change, fast/create-graph disagreement, …).
    pub problem: Option<String>,
}

impl fmt::Display for GradcheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} values, max abs err {:.3e}, max rel err {:.3e}",
            if self.passed { "PASS" } else { "FAIL" },
            self.checked,
            self.max_abs_err,
            self.max_rel_err
        )?;
        if let Some(w) = &self.worst {
            write!(f, "; worst: input {} index {} analytic {:.9e} numeric {:.9e}", w.input, w.index, w.analytic, w.numeric)?;
        }
        if let Some(p) = &self.problem {
            write!(f, "; {p}")?;
        }
        Ok(())
    }
}

struct Compare {
    atol: f64,
    rtol: f64,
    report: GradcheckReport,
    worst_score: f64,
}
impl Compare {
    fn new(o: &GradcheckOptions) -> Self {
        Compare {
            atol: o.atol,
            rtol: o.rtol,
            report: GradcheckReport { passed: true, max_abs_err: 0.0, max_rel_err: 0.0, worst: None, checked: 0, problem: None },
            worst_score: f64::NEG_INFINITY,
        }
    }
    fn add(&mut self, input: usize, index: usize, analytic: f64, numeric: f64) {
        let abs = (analytic - numeric).abs();
        let rel = abs / numeric.abs().max(1e-12);
        let tol = self.atol + self.rtol * numeric.abs();
        let ok = abs <= tol && analytic.is_finite() == numeric.is_finite();
        let score = if ok { abs / tol } else { f64::INFINITY.min(1.0 + abs / tol) };
        self.report.checked += 1;
        if abs.is_finite() {
            self.report.max_abs_err = self.report.max_abs_err.max(abs);
            self.report.max_rel_err = self.report.max_rel_err.max(if numeric.abs() > self.atol { rel } else { 0.0 });
        } else if !ok {
            // A NaN or infinite gradient on one side only: the error has no bound, and a report
            // of the largest finite error (0 when it is the only element) would read as a pass.
            self.report.max_abs_err = f64::INFINITY;
            self.report.max_rel_err = f64::INFINITY;
        }
        if !ok {
            self.report.passed = false;
        }
        if score > self.worst_score || (!ok && self.report.worst.is_none()) {
            self.worst_score = score;
            self.report.worst = Some(WorstElement { input, index, analytic, numeric });
        }
    }
}

/// `Σ w ⊙ f(x)` evaluated on constants (no tape growth beyond what `f` itself makes).
fn weighted_value(f: &dyn Fn(&[Tensor<f64>]) -> Tensor<f64>, xs: &[Tensor<f64>], w: &Tensor<f64>) -> f64 {
    let y = f(xs);
    let v = y.data().iter().zip(w.data()).map(|(a, b)| a * b).sum();
    v
}

/// Checks the reverse-mode gradient of `f` at `inputs` against float64 central differences.
/// Returns `Ok(report)` when every element is within tolerance, `Err(report)` otherwise.
///
/// ```
/// use chi_autodiff::{gradcheck, GradcheckOptions, Tensor};
/// let x = Tensor::from_vec(vec![0.3, -1.2, 2.0], &[3]);
/// let r = gradcheck(|xs| xs[0].tanh().mul(&xs[0]), &[x], &GradcheckOptions::default()).unwrap();
/// assert!(r.max_abs_err < 1e-6);
/// ```
pub fn gradcheck(
    f: impl Fn(&[Tensor<f64>]) -> Tensor<f64>,
    inputs: &[Tensor<f64>],
    opts: &GradcheckOptions,
) -> Result<GradcheckReport, GradcheckReport> {
    let mut rng = Rng::new(opts.seed);
    let leaves: Vec<Tensor<f64>> = inputs.iter().map(|x| x.detach().requires_grad()).collect();
    let leaf_refs: Vec<&Tensor<f64>> = leaves.iter().collect();
    let y = f(&leaves);
    // Non-uniform weights so errors in different outputs cannot cancel.
    let w = Tensor::from_vec((0..y.numel()).map(|_| rng.uniform(0.5, 1.5) * if rng.next_f64() < 0.5 { -1.0 } else { 1.0 }).collect(), y.shape());
    let mut cmp = Compare::new(opts);
    if !y.is_tracked() {
        // Output independent of all inputs: the gradient is zero; check that numerically.
        let analytic: Vec<Tensor<f64>> = inputs.iter().map(|x| x.zeros_like()).collect();
        return numeric_compare(&f, inputs, &analytic, &w, opts, &mut rng, cmp);
    }
    let loss = y.mul(&w).sum();
    let analytic = match grad(&[&loss], &leaf_refs, None, GradOptions::default()) {
        Ok(g) => g,
        Err(e) => {
            cmp.report.passed = false;
            cmp.report.problem = Some(format!("backward failed: {e}"));
            return Err(cmp.report);
        }
    };
    if opts.check_create_graph {
        let leaves2: Vec<Tensor<f64>> = inputs.iter().map(|x| x.detach().requires_grad()).collect();
        let refs2: Vec<&Tensor<f64>> = leaves2.iter().collect();
        let loss2 = f(&leaves2).mul(&w).sum();
        let slow = grad(&[&loss2], &refs2, None, GradOptions::create_graph());
        match slow {
            Ok(slow) => {
                for (k, (a, b)) in analytic.iter().zip(&slow).enumerate() {
                    for (j, (&p, &q)) in a.data().iter().zip(b.data()).enumerate() {
                        if (p - q).abs() > 1e-9 * (1.0 + p.abs()) && !(p.is_nan() && q.is_nan()) {
                            cmp.report.passed = false;
                            cmp.report.problem = Some(format!(
                                "fast and create_graph backward disagree at input {k} index {j}: {p:e} vs {q:e}"
                            ));
                            return Err(cmp.report);
                        }
                    }
                }
            }
            Err(e) => {
                cmp.report.passed = false;
                cmp.report.problem = Some(format!("create_graph backward failed: {e}"));
                return Err(cmp.report);
            }
        }
    }
    numeric_compare(&f, inputs, &analytic, &w, opts, &mut rng, cmp)
}

fn numeric_compare(
    f: &dyn Fn(&[Tensor<f64>]) -> Tensor<f64>,
    inputs: &[Tensor<f64>],
    analytic: &[Tensor<f64>],
    w: &Tensor<f64>,
    opts: &GradcheckOptions,
    rng: &mut Rng,
    mut cmp: Compare,
) -> Result<GradcheckReport, GradcheckReport> {
    let eps = opts.eps;
    let base: Vec<Tensor<f64>> = inputs.iter().map(|x| x.detach()).collect();
    for (i, x) in inputs.iter().enumerate() {
        if analytic[i].shape() != x.shape() {
            cmp.report.passed = false;
            cmp.report.problem = Some(format!("gradient of input {i} has shape {:?}, input {:?}", analytic[i].shape(), x.shape()));
            return Err(cmp.report);
        }
        if opts.fast_mode {
            let u: Vec<f64> = (0..x.numel()).map(|_| rng.normal()).collect();
            let shifted = |s: f64| {
                let mut xs = base.clone();
                xs[i] = Tensor::from_vec(x.data().iter().zip(&u).map(|(a, b)| a + s * b).collect(), x.shape());
                weighted_value(f, &xs, w)
            };
            let numeric = (shifted(eps) - shifted(-eps)) / (2.0 * eps);
            let a: f64 = analytic[i].data().iter().zip(&u).map(|(g, u)| g * u).sum();
            cmp.add(i, usize::MAX, a, numeric);
            continue;
        }
        for j in 0..x.numel() {
            let at = |s: f64| {
                let mut xs = base.clone();
                let mut v = x.to_vec();
                v[j] += s;
                xs[i] = Tensor::from_vec(v, x.shape());
                weighted_value(f, &xs, w)
            };
            let numeric = (at(eps) - at(-eps)) / (2.0 * eps);
            cmp.add(i, j, analytic[i].data()[j], numeric);
        }
    }
    if cmp.report.passed {
        Ok(cmp.report)
    } else {
        Err(cmp.report)
    }
}

/// Checks second derivatives: runs [`gradcheck`] on the map from the inputs to the first-order
/// gradient of `Σ w ⊙ f(x)` (computed with `create_graph`).
pub fn gradgradcheck(
    f: impl Fn(&[Tensor<f64>]) -> Tensor<f64>,
    inputs: &[Tensor<f64>],
    opts: &GradcheckOptions,
) -> Result<GradcheckReport, GradcheckReport> {
    let mut rng = Rng::new(opts.seed ^ 0xabcdef);
    let probe = crate::tape::no_grad(|| f(&inputs.iter().map(|x| x.detach()).collect::<Vec<_>>()));
    let w = Tensor::from_vec((0..probe.numel()).map(|_| rng.uniform(0.5, 1.5)).collect(), probe.shape());
    let first_order = |xs: &[Tensor<f64>]| -> Tensor<f64> {
        // Constants (numeric evaluation) become fresh leaves; tracked inputs stay as they are so
        // the outer check can differentiate through this gradient.
        let xs: Vec<Tensor<f64>> = xs.iter().map(|x| if x.is_tracked() { x.clone() } else { x.detach().requires_grad() }).collect();
        let refs: Vec<&Tensor<f64>> = xs.iter().collect();
        let l = f(&xs).mul(&w).sum();
        if !l.is_tracked() {
            return Tensor::zeros(&[xs.iter().map(|x| x.numel()).sum()]);
        }
        let gs = grad(&[&l], &refs, None, GradOptions::create_graph()).expect("first-order gradient");
        let flat: Vec<Tensor<f64>> = gs.iter().map(|g| g.flatten()).collect();
        Tensor::concat(&flat, 0)
    };
    let inner = GradcheckOptions { check_create_graph: false, ..opts.clone() };
    gradcheck(first_order, inputs, &inner)
}

/// JAX-style check in any precision: forward mode `J·t` (by double VJP) against central
/// differences with step `eps`, and reverse mode against forward by `⟨t, Jᵀc⟩ = ⟨J·t, c⟩`,
/// for one random direction `t` and cotangent `c`. `tol` bounds the relative error of both.
pub fn check_grads<T: Float>(
    f: impl Fn(&[Tensor<T>]) -> Tensor<T>,
    inputs: &[Tensor<T>],
    eps: f64,
    tol: f64,
    seed: u64,
) -> Result<(), String> {
    let mut rng = Rng::new(seed);
    let xs: Vec<Tensor<T>> = inputs.iter().map(|x| x.detach().requires_grad()).collect();
    let refs: Vec<&Tensor<T>> = xs.iter().collect();
    let ts: Vec<Tensor<T>> = inputs.iter().map(|x| Tensor::randn(x.shape(), &mut rng)).collect();
    let y = f(&xs);
    let c = Tensor::<T>::randn(y.shape(), &mut rng);
    // Reverse: Jᵀc.
    let u = Tensor::<T>::zeros(y.shape()).requires_grad();
    let jt_u = grad(&[&y], &refs, Some(std::slice::from_ref(&u)), GradOptions::create_graph()).map_err(|e| e.to_string())?;
    let jtc: Vec<Vec<f64>> = {
        let y2 = f(&xs);
        let g = grad(&[&y2], &refs, Some(std::slice::from_ref(&c)), GradOptions::retain_graph()).map_err(|e| e.to_string())?;
        g.iter().map(|t| t.data().iter().map(|v| v.to_f64()).collect()).collect()
    };
    // Forward: J·t = ∂/∂u ⟨Jᵀu, t⟩.
    let mut s = Tensor::<T>::scalar(T::ZERO);
    for (a, t) in jt_u.iter().zip(&ts) {
        s = s.add(&a.mul(t).sum());
    }
    let jt = if s.is_tracked() {
        grad(&[&s], &[&u], None, GradOptions::default()).map_err(|e| e.to_string())?.remove(0)
    } else {
        Tensor::zeros(y.shape())
    };
    // Numeric J·t.
    let eval = |sgn: f64| -> Vec<f64> {
        let xs: Vec<Tensor<T>> = inputs
            .iter()
            .zip(&ts)
            .map(|(x, t)| Tensor::from_vec(x.data().iter().zip(t.data()).map(|(a, b)| T::from_f64(a.to_f64() + sgn * eps * b.to_f64())).collect(), x.shape()))
            .collect();
        let v = crate::tape::no_grad(|| f(&xs)).data().iter().map(|v| v.to_f64()).collect();
        v
    };
    let (p, m) = (eval(1.0), eval(-1.0));
    let numeric: Vec<f64> = p.iter().zip(&m).map(|(a, b)| (a - b) / (2.0 * eps)).collect();
    let scale = numeric.iter().map(|v| v.abs()).fold(1e-3, f64::max);
    for (k, (a, n)) in jt.data().iter().zip(&numeric).enumerate() {
        if (a.to_f64() - n).abs() > tol * scale {
            return Err(format!("forward-mode J·t disagrees with finite differences at output {k}: {} vs {n}", a.to_f64()));
        }
    }
    let lhs: f64 = ts.iter().zip(&jtc).map(|(t, g)| t.data().iter().zip(g).map(|(a, b)| a.to_f64() * b).sum::<f64>()).sum();
    let rhs: f64 = jt.data().iter().zip(c.data()).map(|(a, b)| a.to_f64() * b.to_f64()).sum();
    if (lhs - rhs).abs() > tol * lhs.abs().max(rhs.abs()).max(1e-3) {
        return Err(format!("⟨t, Jᵀc⟩ = {lhs} but ⟨J·t, c⟩ = {rhs}"));
    }
    Ok(())
}
