//! `LstmCell` and `GruCell` run a whole sequence as one fused op; their composed steps
//! (`step_projected_composed`) are the reference. Over whole masked sequences, for sizes
//! including 1 and primes: outputs, final states and every parameter's and the input's gradient
//! agree to 1e-12 in float64.

use chi_autodiff::{grad, GradOptions, Rng, Tensor};
use chi_nn::layers::{run_sequence_batch, stack_outputs, GruCell, GruVariant, LstmCell, RecurrentCell};
use chi_nn::params::ParamStore;

/// Delegates to a cell but runs its composed step.
struct Composed<'a, C>(&'a C, fn(&C, &Tensor<f64>, &[Tensor<f64>]) -> Vec<Tensor<f64>>);

impl<C: RecurrentCell<f64>> RecurrentCell<f64> for Composed<'_, C> {
    fn input_size(&self) -> usize {
        self.0.input_size()
    }
    fn hidden_size(&self) -> usize {
        self.0.hidden_size()
    }
    fn init_state(&self, batch: usize) -> Vec<Tensor<f64>> {
        self.0.init_state(batch)
    }
    fn step(&self, x: &Tensor<f64>, state: &[Tensor<f64>]) -> Vec<Tensor<f64>> {
        let xp = self.0.project_inputs(x).unwrap();
        (self.1)(self.0, &xp, state)
    }
    fn name(&self) -> &'static str {
        "composed"
    }
    fn project_inputs(&self, xs: &Tensor<f64>) -> Option<Tensor<f64>> {
        self.0.project_inputs(xs)
    }
    fn step_projected(&self, xp: &Tensor<f64>, state: &[Tensor<f64>]) -> Vec<Tensor<f64>> {
        (self.1)(self.0, xp, state)
    }
}

fn max_diff(a: &Tensor<f64>, b: &Tensor<f64>) -> f64 {
    assert_eq!(a.shape(), b.shape());
    a.data().iter().zip(b.data()).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

/// Runs both cells over a random `[B, T, in]` batch with ragged lengths and compares the loss
/// value and the gradients of the input and of every parameter.
fn compare(name: &str, store: &ParamStore<f64>, fused: &dyn RecurrentCell<f64>, composed: &dyn RecurrentCell<f64>, b: usize, t: usize, rng: &mut Rng) {
    // Move the parameters off their structured init (forget bias 1, zero biases).
    for p in store.params() {
        p.update(|v| v.iter_mut().for_each(|x| *x += rng.uniform(-0.3, 0.3)));
    }
    let input = fused.input_size();
    let xs = Tensor::<f64>::rand_uniform(&[b, t, input], -1.0, 1.0, rng).requires_grad();
    let lengths: Vec<usize> = (0..b).map(|i| if i % 2 == 1 { 1 + (t - 1) / 2 } else { t }).collect();
    let weights = Tensor::<f64>::rand_uniform(&[b, t, fused.hidden_size()], -1.0, 1.0, rng);
    let loss = |cell: &dyn RecurrentCell<f64>| {
        let (outs, state) = run_sequence_batch(cell, &xs, None, Some(&lengths));
        let s: Tensor<f64> = state.iter().map(|s| s.square().sum()).reduce(|a, b| a.add(&b)).unwrap();
        stack_outputs(&outs).mul(&weights).sum().add(&s)
    };
    let mut wrt: Vec<Tensor<f64>> = vec![xs.clone()];
    wrt.extend(store.params().iter().map(|p| p.get()));
    let refs: Vec<&Tensor<f64>> = wrt.iter().collect();
    let (lf, lc) = (loss(fused), loss(composed));
    assert!((lf.item() - lc.item()).abs() <= 1e-12 * (1.0 + lc.item().abs()), "{name}: loss {} vs {}", lf.item(), lc.item());
    let gf = grad(&[&lf], &refs, None, GradOptions::default()).unwrap();
    let gc = grad(&[&lc], &refs, None, GradOptions::default()).unwrap();
    for (k, (a, c)) in gf.iter().zip(&gc).enumerate() {
        let d = max_diff(a, c);
        assert!(d <= 1e-12, "{name} B={b} T={t}: gradient {k} differs by {d}");
    }
}

#[test]
fn fused_lstm_and_gru_equal_their_composed_steps() {
    let mut rng = Rng::new(11);
    for &(input, hidden, b, t) in &[(1, 1, 1, 1), (3, 5, 2, 4), (7, 2, 3, 3), (2, 13, 5, 2), (11, 3, 1, 5)] {
        for peep in [false, true] {
            let mut s = ParamStore::new();
            let cell = LstmCell::new(&mut s, "l", "g", input, hidden, peep, &mut rng);
            compare(&format!("lstm peephole {peep}"), &s, &cell, &Composed(&cell, LstmCell::step_projected_composed), b, t, &mut rng);
        }
        for v in [GruVariant::ResetBeforeMatmul, GruVariant::ResetAfterMatmul] {
            let mut s = ParamStore::new();
            let cell = GruCell::new(&mut s, "g", "g", input, hidden, v, &mut rng);
            compare(&format!("gru {v:?}"), &s, &cell, &Composed(&cell, GruCell::step_projected_composed), b, t, &mut rng);
        }
    }
}

/// The whole-sequence LSTM op hands back per-step states that are outputs of one node, so a
/// gradient retained on an early `h_t` is only its downstream part (zero here: the loss reads
/// only the last state). Under `with_stepwise_recurrence` the graph is built step by step and
/// the retained gradient is the total ∂L/∂h_t, equal to the composed reference; parameter
/// gradients agree either way.
#[test]
fn stepwise_recurrence_gives_total_gradients_of_every_state() {
    use chi_nn::layers::with_stepwise_recurrence;
    let mut rng = Rng::new(5);
    let mut s = ParamStore::new();
    let cell = LstmCell::new(&mut s, "l", "g", 3, 4, false, &mut rng);
    let xs = Tensor::<f64>::rand_uniform(&[2, 6, 3], -1.0, 1.0, &mut rng);
    let early_grad = |outs: &[Tensor<f64>], last: &Tensor<f64>| {
        for h in outs {
            h.retain_grad();
        }
        let loss = last.square().sum();
        loss.backward();
        outs[0].grad().map(|g| g.data().iter().map(|v| v * v).sum::<f64>().sqrt()).unwrap_or(0.0)
    };
    let (outs, _) = run_sequence_batch(&cell, &xs, None, None);
    let fused_early = early_grad(&outs, outs.last().unwrap());
    let (outs, _) = with_stepwise_recurrence(|| run_sequence_batch(&cell, &xs, None, None));
    let stepwise_early = early_grad(&outs, outs.last().unwrap());
    let composed = Composed(&cell, LstmCell::step_projected_composed);
    let (outs, _) = run_sequence_batch(&composed, &xs, None, None);
    let composed_early = early_grad(&outs, outs.last().unwrap());
    assert_eq!(fused_early, 0.0, "the whole-sequence op keeps the recurrent part of ∂L/∂h_0 inside");
    assert!(stepwise_early > 0.0);
    assert!((stepwise_early - composed_early).abs() <= 1e-12 * composed_early, "{stepwise_early} vs {composed_early}");
    assert!(!chi_nn::layers::stepwise_recurrence(), "the switch is scoped");
}
