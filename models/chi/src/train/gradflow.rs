//! Gradient-flow statistics: per-parameter gradient norms over training and, for recurrent
//! models, ‖∂L/∂h_t‖ per time step (the vanishing/exploding-gradient picture).
//!
//! For the per-time-step picture: call [`retain_hidden`] on the hidden states `h_1..h_T`
//! returned by the forward pass *before* backward, then [`hidden_grad_norms`] after it. Run
//! that forward pass inside `chi_nn::layers::with_stepwise_recurrence`, so that every `h_t`
//! is its own graph node and its retained gradient is the total ∂L/∂h_t.
//!
//! ```
//! use chi_autodiff::Tensor;
//! use chi_cli::train::gradflow::{hidden_grad_norms, retain_hidden};
//! let w = Tensor::<f32>::from_vec(vec![0.5], &[1, 1]).requires_grad();
//! let mut h = Tensor::from_vec(vec![1.0], &[1, 1]);
//! let mut hs = Vec::new();
//! for _ in 0..4 {
//!     h = h.matmul(&w).tanh();
//!     hs.push(h.clone());
//! }
//! retain_hidden(&hs);
//! h.sum().backward();
//! let n = hidden_grad_norms(&hs);
//! assert!(n[0] < n[3]); // gradients shrink going back in time
//! ```

use chi_autodiff::{Float, Tensor};

/// Asks backward to keep the gradient of every tracked hidden state.
pub fn retain_hidden<T: Float>(hs: &[Tensor<T>]) {
    for h in hs.iter().filter(|h| h.is_tracked()) {
        h.retain_grad();
    }
}

/// ‖∂L/∂h_t‖₂ for each hidden state after backward (0 where no gradient reached it).
pub fn hidden_grad_norms<T: Float>(hs: &[Tensor<T>]) -> Vec<f64> {
    hs.iter().map(|h| h.grad().map_or(0.0, |g| g.norm())).collect()
}

/// Gradient-flow records of a run, written as long-format CSV files by the trainer
/// (`gradflow.csv`: `step,param,norm`; `gradflow_time.csv`: `step,t,norm`).
#[derive(Clone, Debug, Default)]
pub struct GradFlow {
    /// `(step, parameter name, ‖grad‖)`.
    pub params: Vec<(u64, String, f64)>,
    /// `(step, t, ‖∂L/∂h_t‖)`.
    pub time: Vec<(u64, usize, f64)>,
}

impl GradFlow {
    /// Records per-parameter norms of a step.
    pub fn record_params(&mut self, step: u64, names: &[String], norms: &[Option<f64>]) {
        for (n, v) in names.iter().zip(norms) {
            if let Some(v) = v {
                self.params.push((step, n.clone(), *v));
            }
        }
    }
    /// Records per-time-step norms of a step.
    pub fn record_time(&mut self, step: u64, norms: &[f64]) {
        for (t, v) in norms.iter().enumerate() {
            self.time.push((step, t, *v));
        }
    }
    /// Per-parameter series `(name, [(step, norm)])`, in first-seen order.
    pub fn param_series(&self) -> Vec<(String, Vec<(f64, f64)>)> {
        let mut out: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for (s, n, v) in &self.params {
            match out.iter_mut().find(|(m, _)| m == n) {
                Some((_, pts)) => pts.push((*s as f64, *v)),
                None => out.push((n.clone(), vec![(*s as f64, *v)])),
            }
        }
        out
    }
    /// The time picture as a matrix: one row per recorded step (`(steps, rows[step][t])`).
    pub fn time_matrix(&self) -> (Vec<u64>, Vec<Vec<f64>>) {
        let mut steps: Vec<u64> = Vec::new();
        let mut rows: Vec<Vec<f64>> = Vec::new();
        for (s, t, v) in &self.time {
            if steps.last() != Some(s) {
                steps.push(*s);
                rows.push(Vec::new());
            }
            let r = rows.last_mut().unwrap();
            if r.len() <= *t {
                r.resize(*t + 1, 0.0);
            }
            r[*t] = *v;
        }
        (steps, rows)
    }
}
