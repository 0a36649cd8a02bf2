//! `CaRnnCell` runs a whole sequence as one fused op (`Tensor::ca_rnn_sequence`, operands sliced
//! from its stacked parameters); its per-step `step` (Eqs. 34 and 36 written directly over the
//! stacked parameters) is the reference. Over masked batches, for sizes including 1 and primes:
//! outputs, final states and the gradients of the input and of every parameter agree to 1e-12 in
//! float64. Configurations the op does not cover (other activations, the matrix peephole) take
//! the per-step path and give the same results as `step`, trivially.

use chi_autodiff::{grad, GradOptions, Rng, Tensor};
use chi_ca::{Activation, CaRnnCell, CaRnnConfig, Peephole};
use chi_nn::layers::{run_sequence_batch, stack_outputs, with_stepwise_recurrence, RecurrentCell};
use chi_nn::params::ParamStore;

/// The cell with its fused path hidden: the runner steps with `step`.
struct PerStep<'a>(&'a CaRnnCell<f64>);

impl RecurrentCell<f64> for PerStep<'_> {
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
        self.0.step(x, state)
    }
    fn name(&self) -> &'static str {
        "per-step"
    }
}

/// Loss over all outputs and the final state, and its gradients with respect to the input and
/// every parameter.
fn loss_and_grads(store: &ParamStore<f64>, cell: &dyn RecurrentCell<f64>, xs: &Tensor<f64>, lengths: &[usize], weights: &Tensor<f64>) -> (f64, Vec<Tensor<f64>>) {
    let (outs, state) = run_sequence_batch(cell, xs, None, Some(lengths));
    let s = state.iter().map(|s| s.square().sum()).reduce(|a, b| a.add(&b)).unwrap();
    let loss = stack_outputs(&outs).mul(weights).sum().add(&s);
    let mut wrt = vec![xs.clone()];
    wrt.extend(store.params().iter().map(|p| p.get()));
    let refs: Vec<&Tensor<f64>> = wrt.iter().collect();
    (loss.item(), grad(&[&loss], &refs, None, GradOptions::default()).unwrap())
}

fn check(cfg: CaRnnConfig, fused_expected: bool) {
    let mut rng = Rng::new(17);
    for &(dx, n, b, t) in &[(1, 1, 1, 1), (3, 5, 2, 4), (7, 2, 3, 3), (2, 13, 5, 6), (11, 3, 1, 5), (4, 16, 7, 9)] {
        let mut store = ParamStore::new();
        let cell = CaRnnCell::new(&mut store, "ca", dx, n, cfg, &mut rng);
        chi_nn::gradcheck::perturb(&store, &mut rng);
        assert_eq!(cell.project_inputs(&Tensor::zeros(&[1, 1, dx])).is_some(), fused_expected);
        let xs = Tensor::<f64>::rand_uniform(&[b, t, dx], -1.0, 1.0, &mut rng).requires_grad();
        let lengths: Vec<usize> = (0..b).map(|i| if i % 2 == 1 { 1 + (t - 1) / 2 } else { t }).collect();
        let weights = Tensor::<f64>::rand_uniform(&[b, t, n], -1.0, 1.0, &mut rng);
        let (lf, gf) = loss_and_grads(&store, &cell, &xs, &lengths, &weights);
        let (ls, gs) = with_stepwise_recurrence(|| loss_and_grads(&store, &cell, &xs, &lengths, &weights));
        let (lr, gr) = loss_and_grads(&store, &PerStep(&cell), &xs, &lengths, &weights);
        for (what, l, g) in [("fused", lf, &gf), ("stepwise projected", ls, &gs)] {
            assert!((l - lr).abs() <= 1e-12 * (1.0 + lr.abs()), "{what} dx={dx} n={n} B={b} T={t}: loss {l} vs {lr}");
            for (k, (a, c)) in g.iter().zip(&gr).enumerate() {
                let d = a.data().iter().zip(c.data()).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
                assert!(d <= 1e-12, "{what} dx={dx} n={n} B={b} T={t}: gradient {k} differs by {d}");
            }
        }
    }
}

#[test]
fn fused_ca_rnn_sequence_equals_the_per_step_cell() {
    check(CaRnnConfig::default(), true);
}

#[test]
fn other_ca_rnn_configurations_step_one_at_a_time() {
    check(CaRnnConfig { peephole: Peephole::Matrix, ..CaRnnConfig::default() }, false);
    check(CaRnnConfig { h_out_c: Activation::Relu, ..CaRnnConfig::default() }, false);
}
