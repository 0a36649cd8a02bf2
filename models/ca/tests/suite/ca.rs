//! Tests of the context-aware model family ([CAML]): whole-model gradchecks, the CA-RES →
//! ResNet reduction, CA-SEM's closed-form steps against brute force, CA-RNN as a drop-in cell,
//! and CA-ATT's unnormalised weights.

use chi_autodiff::{GradcheckOptions, Rng, Tensor};
use chi_ca::{Activation, CaAttention, CaRes, CaResConfig, CaRnnCell, CaRnnConfig, CaSem, CaSemOptions, ChiForm};
use chi_nn::gradcheck::check_model;
use chi_nn::layers::{run_sequence, GruCell, GruVariant, LstmCell, RecurrentCell};
use chi_nn::params::ParamStore;

#[test]
fn every_ca_model_passes_a_whole_model_gradcheck() {
    let cases = chi_ca::gradcheck_cases();
    assert!(cases.len() >= 8);
    for case in cases {
        let inst = (case.build)();
        let r = check_model(&inst.store, &inst.inputs, &inst.loss, &GradcheckOptions::default());
        assert!(r.is_ok(), "{}: {:?}", case.name, r.err());
    }
}

/// `(l, n_v, n_σ, b) = (2, 1, −, 1)` with a two-layer `v_1` and `v_2(c, w_1) = relu(c + w_1)` is
/// a ResNet basic block `relu(x + W₂·relu(W₁x + b₁) + b₂)`.
#[test]
fn ca_res_with_b_1_is_a_resnet_block() {
    let mut rng = Rng::new(5);
    let mut store = ParamStore::<f64>::new();
    let d = 6;
    let cfg = CaResConfig { l: 2, n_v: 1, n_sigma: 0, b: true, v_net: vec![(d, Activation::Relu), (d, Activation::Identity)], last_sum: Some(Activation::Relu) };
    let block = CaRes::new(&mut store, "res", d, cfg, &mut rng);
    // Make the biases non-zero so they are exercised.
    for p in store.params() {
        let noise: Vec<f64> = (0..p.numel()).map(|_| 0.2 * rng.normal()).collect();
        p.update(|v| v.iter_mut().zip(&noise).for_each(|(a, b)| *a += b));
    }
    let x = Tensor::<f64>::randn(&[4, d], &mut rng);
    let got = block.forward(&x).to_vec();
    let net = block.v_net(1).expect("layer 1 has a dense v");
    let (w1, b1) = (net[0].linear.weight.to_vec(), net[0].linear.bias.as_ref().unwrap().to_vec());
    let (w2, b2) = (net[1].linear.weight.to_vec(), net[1].linear.bias.as_ref().unwrap().to_vec());
    let xv = x.to_vec();
    // Plain f64 loops, independent of chi's ops.
    for r in 0..4 {
        let h: Vec<f64> = (0..d).map(|j| ((0..d).map(|i| xv[r * d + i] * w1[i * d + j]).sum::<f64>() + b1[j]).max(0.0)).collect();
        for j in 0..d {
            let f = (0..d).map(|i| h[i] * w2[i * d + j]).sum::<f64>() + b2[j];
            let want = (xv[r * d + j] + f).max(0.0);
            assert!((got[r * d + j] - want).abs() < 1e-12, "row {r} col {j}: {} vs {want}", got[r * d + j]);
        }
    }
    // And χ is identically 1 (no w_l0 anywhere).
    let (_, chis) = block.forward_with_chi(&x);
    assert!(chis.iter().all(|c| c.to_vec().iter().all(|v| *v == 1.0)));
}

fn random_words(rng: &mut Rng, n: usize, d: usize) -> (Vec<Vec<f64>>, Vec<f64>) {
    // A shared direction (what v0 should capture) plus word-specific parts.
    let common: Vec<f64> = (0..d).map(|_| rng.normal()).collect();
    let words = (0..n).map(|_| {
        let a = rng.uniform(0.2, 1.5);
        (0..d).map(|k| a * common[k] + 0.5 * rng.normal()).collect()
    });
    (words.collect(), (0..n).map(|_| 1.0 + rng.below(5) as f64).collect())
}

fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

#[test]
fn ca_sem_chi_step_is_the_brute_force_minimiser() {
    let mut rng = Rng::new(9);
    for _ in 0..50 {
        let d = 4;
        let w: Vec<f64> = (0..d).map(|_| rng.normal()).collect();
        let v0: Vec<f64> = (0..d).map(|_| rng.normal()).collect();
        let wp = CaSem::solve_w_prime(&v0, &w);
        let c = CaSem::solve_chi(&w, &wp, &v0);
        let e = |c: f64| dist2(&w, &v0.iter().zip(&wp).map(|(v, p)| c * v + (1.0 - c) * p).collect::<Vec<_>>());
        let best = (0..=100_000).map(|i| i as f64 / 100_000.0).map(|c| (e(c), c)).min_by(|a, b| a.0.total_cmp(&b.0)).unwrap();
        assert!(e(c) <= best.0 + 1e-9, "closed form χ̃ = {c} (E {}), grid best {} (E {})", e(c), best.1, best.0);
        assert!((0.0..=1.0).contains(&c));
    }
}

#[test]
fn ca_sem_w_prime_step_is_the_closest_vector_orthogonal_to_v0() {
    let mut rng = Rng::new(10);
    let d = 5;
    let w: Vec<f64> = (0..d).map(|_| rng.normal()).collect();
    let v0: Vec<f64> = (0..d).map(|_| rng.normal()).collect();
    let wp = CaSem::solve_w_prime(&v0, &w);
    let dot: f64 = wp.iter().zip(&v0).map(|(a, b)| a * b).sum();
    assert!(dot.abs() < 1e-12, "w' · v0 = {dot}");
    // Brute force over random w'' ⊥ v0: none is closer to w.
    let best = dist2(&w, &wp);
    for _ in 0..2000 {
        let r: Vec<f64> = (0..d).map(|_| rng.normal()).collect();
        let cand = CaSem::solve_w_prime(&v0, &r.iter().zip(&wp).map(|(a, b)| b + 0.3 * a).collect::<Vec<_>>());
        assert!(dist2(&w, &cand) >= best - 1e-12);
    }
}

#[test]
fn ca_sem_v0_step_zeroes_the_autodiff_gradient_and_beats_perturbations() {
    let mut rng = Rng::new(11);
    let (words, counts) = random_words(&mut rng, 12, 4);
    let v0_init = CaSem::init_v0(&words, &counts);
    let (wp, chi) = CaSem::solve_step1(&words, &v0_init);
    let v0 = CaSem::solve_v0(&words, &counts, &chi, &wp, &v0_init);
    let t = |rows: &[Vec<f64>]| Tensor::from_vec(rows.concat(), &[rows.len(), rows[0].len()]);
    let v = Tensor::from_vec(v0.clone(), &[4]).requires_grad();
    let e = CaSem::energy_tensor(&t(&words), &Tensor::from_vec(counts.clone(), &[12]), &Tensor::from_vec(chi.clone(), &[12]), &t(&wp), &v);
    // The autodiff energy equals the closed-form one...
    let e_closed = CaSem::energy_of(&words, &counts, &chi, &wp, &v0);
    assert!((e.item() - e_closed).abs() < 1e-9 * e_closed.max(1.0));
    e.backward();
    // ...and its gradient vanishes at the least-squares v0 (stationarity).
    let g = v.grad().unwrap().to_vec();
    let scale: f64 = counts.iter().sum::<f64>() * v0.iter().map(|x| x.abs()).fold(1.0, f64::max);
    assert!(g.iter().all(|x| x.abs() < 1e-9 * scale), "∂E/∂v0 = {g:?}");
    for _ in 0..200 {
        let p: Vec<f64> = v0.iter().map(|x| x + 0.05 * rng.normal()).collect();
        assert!(CaSem::energy_of(&words, &counts, &chi, &wp, &p) >= e_closed - 1e-12);
    }
}

#[test]
fn ca_sem_energy_never_increases() {
    let mut rng = Rng::new(12);
    for trial in 0..5 {
        let (words, counts) = random_words(&mut rng, 30, 6);
        let fit = CaSem::fit(&words, &counts, &CaSemOptions { max_iter: 100, ..CaSemOptions::default() });
        assert!(fit.energy.len() >= 2, "trial {trial}: no iteration was accepted");
        for w in fit.energy.windows(2) {
            assert!(w[1] <= w[0], "trial {trial}: energy rose {} → {}", w[0], w[1]);
        }
        assert!(fit.chi.iter().all(|c| (0.0..=1.0).contains(c)));
    }
}

/// The same sequence code runs LSTM, GRU and CA-RNN cells (the shared interface).
#[test]
fn ca_rnn_is_a_drop_in_recurrent_cell() {
    let mut rng = Rng::new(13);
    let mut store = ParamStore::<f64>::new();
    let cells: Vec<Box<dyn RecurrentCell<f64>>> = vec![
        Box::new(LstmCell::new(&mut store, "lstm", "g", 3, 4, false, &mut rng)),
        Box::new(GruCell::new(&mut store, "gru", "g", 3, 4, GruVariant::ResetBeforeMatmul, &mut rng)),
        Box::new(CaRnnCell::new(&mut store, "carnn", 3, 4, CaRnnConfig::default(), &mut rng)),
    ];
    let xs: Vec<Tensor<f64>> = (0..5).map(|_| Tensor::randn(&[2, 3], &mut rng)).collect();
    for cell in &cells {
        let (outs, state) = run_sequence(cell.as_ref(), &xs, None, Some(&[5, 3]));
        assert_eq!(outs.len(), 5, "{}", cell.name());
        assert_eq!(outs[4].shape(), &[2, 4]);
        assert!(state.iter().all(|s| s.all_finite()));
        // Batch row 1 has length 3: its state stops changing after step 3.
        let y = cell.output(&state).to_vec();
        let y3 = outs[2].to_vec();
        assert_eq!(&y[4..8], &y3[4..8], "{}: masked steps changed the state", cell.name());
    }
}

/// CA-ATT's weights `1 − χ` are not normalised: with χ → 1 nothing is attended and the output is
/// `T·v(c)`; with χ → 0 every item is attended with weight 1 (total weight T, not 1).
#[test]
fn ca_att_weights_are_unnormalised() {
    let mut rng = Rng::new(14);
    let mut store = ParamStore::<f64>::new();
    let att = CaAttention::new(&mut store, "att", ChiForm::Luong, 3, 2, &mut rng);
    let mem = Tensor::<f64>::randn(&[2, 4, 3], &mut rng);
    let q = Tensor::<f64>::randn(&[2, 2], &mut rng);
    att.b_g.set_values(vec![60.0]);
    let (s, chi) = att.forward(&mem, &q, None);
    let v = att.v(&q).to_vec();
    assert!(chi.to_vec().iter().all(|c| *c > 1.0 - 1e-12));
    for (a, b) in s.to_vec().iter().zip(&v) {
        assert!((a - 4.0 * b).abs() < 1e-9);
    }
    att.b_g.set_values(vec![-60.0]);
    let (s, _) = att.forward(&mem, &q, None);
    let m = mem.to_vec();
    for b in 0..2 {
        for k in 0..3 {
            let want: f64 = (0..4).map(|t| m[(b * 4 + t) * 3 + k]).sum();
            assert!((s.to_vec()[b * 3 + k] - want).abs() < 1e-9);
        }
    }
}
