//! Whole-layer float64 gradient checks of every layer in `models/nn/src/layers` (parameters and inputs
//! against central differences, PyTorch tolerances), LSTM/GRU steps against hand-computed
//! references, masking, and the sparse embedding gradient against the dense one.

use chi_autodiff::{GradcheckOptions, Rng, Tensor};
use chi_nn::gradcheck::check_model;
use chi_nn::layers::{
    run_sequence, run_sequence_batch, run_sequence_batch_stacked, stack_outputs, with_stepwise_recurrence, Activation, AdditiveScore, Attention, BagMode, Bidirectional, ConcatScore, Conv1dText, Conv2d,
    DotScore, Dropout, Embedding, EmbeddingBag, GeneralScore, GruCell, GruVariant, LayerNorm, Linear, LocalAttention, LstmCell, MaxPool2d,
    RecurrentCell, RnnCell, SelfAttention,
};
use chi_nn::optim::Grads;
use chi_nn::params::ParamStore;

/// Non-zero, generic parameter values (zero biases would hide bias-gradient bugs).
fn perturb(store: &ParamStore<f64>, rng: &mut Rng) {
    for p in store.params() {
        let noise: Vec<f64> = (0..p.numel()).map(|_| 0.3 * rng.normal()).collect();
        p.update(|v| v.iter_mut().zip(&noise).for_each(|(a, b)| *a += b));
    }
}

#[track_caller]
fn check(name: &str, store: &ParamStore<f64>, inputs: &[Tensor<f64>], f: impl Fn(&[Tensor<f64>]) -> Tensor<f64>) {
    let r = check_model(store, inputs, f, &GradcheckOptions::default());
    assert!(r.is_ok(), "{name}: {:?}", r.err());
}

#[test]
fn linear_embedding_bag_layernorm_dropout() {
    let mut rng = Rng::new(1);
    let mut s = ParamStore::new();
    let lin = Linear::in_store(&mut s, "fc", "g", 4, 3, true, &mut rng);
    perturb(&s, &mut rng);
    check("Linear", &s, &[Tensor::randn(&[5, 4], &mut rng)], |x| lin.forward(&x[0]));

    let mut s = ParamStore::new();
    let emb = Embedding::in_store(&mut s, "emb", "g", 6, 3, false, &mut rng);
    check("Embedding", &s, &[], |_| emb.forward_shaped(&[1, 4, 4, 0, 5, 1], &[2, 3]).tanh());

    for mode in [BagMode::Sum, BagMode::Mean] {
        let mut s = ParamStore::new();
        let bag = EmbeddingBag::new(&mut s, "bag", "g", 7, 3, mode, false, &mut rng);
        check("EmbeddingBag", &s, &[], |_| bag.forward_bags(&[vec![0, 2, 2], vec![], vec![6, 1, 3, 0]]).sin_like());
    }

    let mut s = ParamStore::new();
    let ln = LayerNorm::in_store(&mut s, "ln", "g", 5, 1e-5, true);
    perturb(&s, &mut rng);
    check("LayerNorm", &s, &[Tensor::randn(&[3, 5], &mut rng)], |x| ln.forward(&x[0]));

    // The layer draws a new mask per call (as it must in training); a fresh layer with the same
    // seed draws the same mask, which makes the map a fixed function to gradcheck.
    let s = ParamStore::new();
    check("Dropout", &s, &[Tensor::randn(&[4, 6], &mut rng)], |x| Dropout::with_seed(0.4, 17).forward(&x[0]));
}

/// `tanh` as a fixed nonlinearity for outputs that are otherwise linear in the parameters.
trait SinLike {
    fn sin_like(&self) -> Self;
}
impl SinLike for Tensor<f64> {
    fn sin_like(&self) -> Self {
        self.tanh()
    }
}

#[test]
fn sparse_embedding_gradient_equals_the_dense_one() {
    let ids = [3, 1, 3, 3, 0];
    let grads: Vec<Vec<f64>> = [false, true]
        .iter()
        .map(|&sparse| {
            let mut rng = Rng::new(2);
            let mut s = ParamStore::<f64>::new();
            let emb = Embedding::in_store(&mut s, "emb", "g", 5, 4, sparse, &mut rng);
            let w = Tensor::randn(&[5, 4], &mut Rng::new(3));
            emb.forward(&ids).mul(&w).sum().backward();
            let g = Grads::collect(s.params());
            g.items[0].as_ref().expect("embedding has a gradient").to_dense(20)
        })
        .collect();
    assert_eq!(grads[0], grads[1]);
    assert!(grads[0][8..12].iter().all(|v| *v == 0.0), "row 2 was never looked up");
}

#[test]
fn convolutions_and_pooling() {
    let mut rng = Rng::new(4);
    let mut s = ParamStore::new();
    let conv = Conv1dText::in_store(&mut s, "conv", "g", 3, &[2, 3], 2, Activation::Relu, &mut rng);
    perturb(&s, &mut rng);
    check("Conv1dText (widths 2, 3; max over time)", &s, &[Tensor::randn(&[2, 6, 3], &mut rng)], |x| conv.forward(&x[0]));
    check("Conv1dText with lengths", &s, &[Tensor::randn(&[3, 6, 3], &mut rng)], |x| conv.forward_lengths(&x[0], Some(&[6, 4, 1])));
    // A text in a padded batch gives the features it gives alone, unpadded (a text shorter than
    // the widest filter keeps that filter's first window), whatever the padding holds.
    let tanh_conv = Conv1dText::in_store(&mut s, "conv_t", "g", 3, &[2, 3], 2, Activation::Tanh, &mut rng);
    let x = Tensor::<f64>::randn(&[3, 6, 3], &mut rng);
    for layer in [&conv, &tanh_conv] {
        let batched = layer.forward_lengths(&x, Some(&[6, 4, 3])).to_vec();
        for (r, n) in [(0usize, 6usize), (1, 4), (2, 3)] {
            let alone = layer.forward(&x.narrow(0, r, 1).narrow(1, 0, n)).to_vec();
            for (a, b) in batched[r * 4..(r + 1) * 4].iter().zip(&alone) {
                assert!((a - b).abs() < 1e-12, "row {r}: batched {batched:?} vs alone {alone:?}");
            }
        }
    }

    let mut s = ParamStore::new();
    let conv = Conv2d::in_store(&mut s, "c2", "g", 2, 3, 3, 1, 1, true, &mut rng);
    perturb(&s, &mut rng);
    let pool = MaxPool2d::new(2, 2);
    check("Conv2d + MaxPool2d", &s, &[Tensor::randn(&[1, 2, 6, 6], &mut rng)], |x| pool.forward(&conv.forward(&x[0]).tanh()));

    let mut s = ParamStore::new();
    let conv = Conv2d::in_store(&mut s, "c2s", "g", 1, 2, 3, 2, 0, false, &mut rng);
    check("Conv2d stride 2, no padding", &s, &[Tensor::randn(&[2, 1, 7, 7], &mut rng)], |x| conv.forward(&x[0]));
}

fn seq(rng: &mut Rng, t: usize, b: usize, d: usize) -> Vec<Tensor<f64>> {
    (0..t).map(|_| Tensor::randn(&[b, d], rng)).collect()
}

/// Builders of every recurrent cell of this crate (input 3, hidden 4), by name.
type CellBuilder = Box<dyn Fn(&mut ParamStore<f64>, &mut Rng) -> Box<dyn RecurrentCell<f64>>>;
fn recurrent_cells() -> Vec<(&'static str, CellBuilder)> {
    vec![
        ("Elman RNN", Box::new(|s, r| Box::new(RnnCell::new(s, "rnn", "g", 3, 4, r)))),
        ("LSTM", Box::new(|s, r| Box::new(LstmCell::new(s, "lstm", "g", 3, 4, false, r)))),
        ("LSTM peephole", Box::new(|s, r| Box::new(LstmCell::new(s, "lstm", "g", 3, 4, true, r)))),
        ("GRU reset-before", Box::new(|s, r| Box::new(GruCell::new(s, "gru", "g", 3, 4, GruVariant::ResetBeforeMatmul, r)))),
        ("GRU reset-after", Box::new(|s, r| Box::new(GruCell::new(s, "gru", "g", 3, 4, GruVariant::ResetAfterMatmul, r)))),
    ]
}

#[test]
fn recurrent_cells_over_sequences() {
    let mut rng = Rng::new(5);
    for (name, make) in recurrent_cells() {
        let mut s = ParamStore::new();
        let cell = make(&mut s, &mut rng);
        perturb(&s, &mut rng);
        let xs = Tensor::stack(&seq(&mut rng, 4, 2, 3), 1); // [B, T, in]
        // Variable lengths: the second sequence has 2 steps.
        check(name, &s, &[xs], |x| {
            let (outs, state) = run_sequence_batch(cell.as_ref(), &x[0], None, Some(&[4, 2]));
            Tensor::concat(&[stack_outputs(&outs).reshape(&[2, 16]), Tensor::concat(&state, 1)], 1)
        });
    }
}

/// `run_sequence_batch_stacked` reads a whole-sequence op's outputs out of its time-major states
/// instead of stacking per-step narrows: the same values bit for bit, and the same gradients (to
/// rounding: the two graphs sum the same terms in other orders) for every cell, with and without
/// lengths (one sequence empty, one full, one short), on the fused path and step by step.
#[test]
fn stacked_runner_equals_stacking_the_per_step_outputs() {
    let mut rng = Rng::new(8);
    for (name, make) in recurrent_cells() {
        let mut s = ParamStore::new();
        let cell = make(&mut s, &mut rng);
        perturb(&s, &mut rng);
        let xs = Tensor::randn(&[3, 5, 3], &mut rng);
        let w_out = Tensor::randn(&[3, 5, 4], &mut rng);
        for lengths in [None, Some(&[5usize, 0, 3][..])] {
            for stepwise in [false, true] {
                // Values of the outputs and final state, and the gradients of all parameters and
                // of the input, of a weighted sum of both.
                let run = |stacked: bool| -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
                    s.zero_grad();
                    let x = xs.detach().requires_grad();
                    let go = || {
                        if stacked {
                            run_sequence_batch_stacked(cell.as_ref(), &x, None, lengths)
                        } else {
                            let (outs, state) = run_sequence_batch(cell.as_ref(), &x, None, lengths);
                            (stack_outputs(&outs), state)
                        }
                    };
                    let (out, state) = if stepwise { with_stepwise_recurrence(go) } else { go() };
                    let mut values = vec![out.to_vec()];
                    values.extend(state.iter().map(|t| t.to_vec()));
                    let loss = out.mul(&w_out).sum().add(&Tensor::concat(&state, 1).square().sum());
                    loss.backward();
                    let mut grads: Vec<Vec<f64>> = s.params().iter().map(|p| p.grad().expect("parameter gradient").to_vec()).collect();
                    grads.push(x.grad().expect("input gradient").to_vec());
                    (values, grads)
                };
                let (v0, g0) = run(false);
                let (v1, g1) = run(true);
                let what = format!("{name}, lengths {lengths:?}, stepwise {stepwise}");
                assert_eq!(v0, v1, "{what}: values differ");
                for (a, b) in g0.iter().flatten().zip(g1.iter().flatten()) {
                    assert!((a - b).abs() <= 1e-12 * (1.0 + a.abs()), "{what}: gradient {a} vs {b}");
                }
            }
        }
    }
}

#[test]
fn bidirectional_wrapper() {
    let mut rng = Rng::new(6);
    let mut s = ParamStore::new();
    let bi = Bidirectional::new(GruCell::new(&mut s, "f", "g", 2, 3, GruVariant::ResetBeforeMatmul, &mut rng), GruCell::new(&mut s, "b", "g", 2, 3, GruVariant::ResetBeforeMatmul, &mut rng));
    perturb(&s, &mut rng);
    let xs = Tensor::randn(&[2, 4, 2], &mut rng);
    check("Bidirectional GRU, lengths [4, 3]", &s, &[xs], |x| bi.forward(&x[0], Some(&[4, 3])).outputs);
    let mut s = ParamStore::new();
    let bi = Bidirectional::new(LstmCell::new(&mut s, "f", "g", 2, 3, true, &mut rng), LstmCell::new(&mut s, "b", "g", 2, 3, false, &mut rng));
    perturb(&s, &mut rng);
    let xs = Tensor::randn(&[3, 4, 2], &mut rng);
    check("Bidirectional LSTM, lengths [4, 1, 3], outputs and final states", &s, &[xs], |x| {
        let o = bi.forward(&x[0], Some(&[4, 1, 3]));
        Tensor::concat(&[o.outputs.reshape(&[3, 24]), Tensor::concat(&o.fwd_state, 1), Tensor::concat(&o.bwd_state, 1)], 1)
    });
}

/// Masked steps leave the state alone and get no gradient.
#[test]
fn masking_freezes_finished_sequences() {
    let mut rng = Rng::new(7);
    let mut s = ParamStore::<f64>::new();
    let cell = LstmCell::new(&mut s, "l", "g", 2, 3, false, &mut rng);
    let xs: Vec<Tensor<f64>> = seq(&mut rng, 5, 2, 2).into_iter().map(|x| x.requires_grad()).collect();
    let (outs, state) = run_sequence(&cell, &xs, None, Some(&[5, 2]));
    // Row 1's final state equals its state after step 2.
    let (h_final, h2) = (state[0].to_vec(), outs[1].to_vec());
    assert_eq!(&h_final[3..6], &h2[3..6]);
    state[0].sum().backward();
    for (t, x) in xs.iter().enumerate().skip(2) {
        let g = x.grad().unwrap().to_vec();
        assert!(g[2..4].iter().all(|v| *v == 0.0), "step {t}: masked input of row 1 got gradient {g:?}");
        assert!(g[0..2].iter().any(|v| *v != 0.0), "step {t}: row 0 got no gradient");
    }
}

#[test]
fn attention_layers() {
    let mut rng = Rng::new(8);
    let mask = [true, true, true, false, true, true, true, true];
    let q = Tensor::randn(&[2, 3], &mut rng);
    let k = Tensor::randn(&[2, 4, 3], &mut rng);
    let v = Tensor::randn(&[2, 4, 2], &mut rng);

    let s = ParamStore::new();
    let dot = Attention::new(Box::new(DotScore));
    check("Luong dot", &s, &[q.clone(), k.clone(), v.clone()], |x| dot.forward(&x[0], &x[1], &x[2], Some(&mask)).context);

    let mut s = ParamStore::new();
    let general = Attention::new(Box::new(GeneralScore::new(&mut s, "gen", "g", 3, 3, &mut rng)));
    check("Luong general", &s, &[q.clone(), k.clone(), v.clone()], |x| general.forward(&x[0], &x[1], &x[2], Some(&mask)).context);

    let mut s = ParamStore::new();
    let concat = Attention::new(Box::new(ConcatScore::new(&mut s, "cat", "g", 3, 3, 5, &mut rng)));
    check("Luong concat", &s, &[q.clone(), k.clone(), v.clone()], |x| concat.forward(&x[0], &x[1], &x[2], None).context);

    let mut s = ParamStore::new();
    let add = Attention::new(Box::new(AdditiveScore::new(&mut s, "bah", "g", 3, 3, 5, &mut rng)));
    check("Bahdanau additive", &s, &[q.clone(), k.clone(), v.clone()], |x| add.forward(&x[0], &x[1], &x[2], Some(&mask)).weights);

    let mut s = ParamStore::new();
    let scorer = Box::new(GeneralScore::new(&mut s, "lg", "g", 3, 3, &mut rng));
    let local = LocalAttention::new(&mut s, "loc", "g", scorer, 3, 4, 1, &mut rng);
    perturb(&s, &mut rng);
    // Keys and values are fixed here: the window membership is a step function of p_t, so only
    // parameters whose perturbation keeps p_t away from a window edge are differentiable; the
    // instance below is generic (checked by the gradcheck itself, which fails on a jump).
    check("local-p (Gaussian window)", &s, &[q.clone()], |x| local.forward(&x[0], &k, &v, None).0.context);

    let mut s = ParamStore::new();
    let sa = SelfAttention::new(&mut s, "sa", "g", 3, 4, &mut rng);
    perturb(&s, &mut rng);
    check("self-attention (context vector)", &s, &[k.clone()], |x| sa.forward(&x[0], Some(&mask)).context);
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// One LSTM step with peepholes ([CAML] Table 1) against plain f64 arithmetic.
#[test]
fn lstm_step_matches_hand_computation() {
    let mut rng = Rng::new(9);
    let mut s = ParamStore::<f64>::new();
    let cell = LstmCell::new(&mut s, "l", "g", 2, 2, true, &mut rng);
    // Forget-gate bias initialised to 1, the others 0.
    assert_eq!(cell.bias.to_vec(), vec![0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]);
    perturb(&s, &mut rng);
    let x = [0.5, -1.0];
    let (h0, c0) = ([0.2, -0.3], [0.7, 0.1]);
    let out = cell.step(&Tensor::from_vec(x.to_vec(), &[1, 2]), &[Tensor::from_vec(h0.to_vec(), &[1, 2]), Tensor::from_vec(c0.to_vec(), &[1, 2])]);
    let (wih, whh, b) = (cell.w_ih.to_vec(), cell.w_hh.to_vec(), cell.bias.to_vec());
    let p: Vec<Vec<f64>> = cell.peephole.as_ref().unwrap().iter().map(|p| p.to_vec()).collect();
    let a = |j: usize| (0..2).map(|i| x[i] * wih[i * 8 + j]).sum::<f64>() + (0..2).map(|i| h0[i] * whh[i * 8 + j]).sum::<f64>() + b[j];
    let (h, c) = (out[0].to_vec(), out[1].to_vec());
    for u in 0..2 {
        let i = sigmoid(a(u) + p[0][u] * c0[u]);
        let f = sigmoid(a(2 + u) + p[1][u] * c0[u]);
        let g = a(4 + u).tanh();
        let cn = f * c0[u] + i * g;
        let o = sigmoid(a(6 + u) + p[2][u] * cn);
        assert!((c[u] - cn).abs() < 1e-12, "c[{u}] {} vs {cn}", c[u]);
        assert!((h[u] - o * cn.tanh()).abs() < 1e-12, "h[{u}]");
    }
}

/// One GRU step (reset before the recurrent matmul, [CAML] Table 1) against plain f64 arithmetic.
#[test]
fn gru_step_matches_hand_computation() {
    let mut rng = Rng::new(10);
    let mut s = ParamStore::<f64>::new();
    let cell = GruCell::new(&mut s, "g", "g", 2, 2, GruVariant::ResetBeforeMatmul, &mut rng);
    perturb(&s, &mut rng);
    let x = [0.3, 0.8];
    let h0 = [-0.4, 0.6];
    let out = cell.step(&Tensor::from_vec(x.to_vec(), &[1, 2]), &[Tensor::from_vec(h0.to_vec(), &[1, 2])]);
    let (wih, whh, whn, b) = (cell.w_ih.to_vec(), cell.w_hh.to_vec(), cell.w_hn.to_vec(), cell.bias.to_vec());
    let xa = |j: usize| (0..2).map(|i| x[i] * wih[i * 6 + j]).sum::<f64>() + b[j];
    let ha = |j: usize| (0..2).map(|i| h0[i] * whh[i * 4 + j]).sum::<f64>();
    let r: Vec<f64> = (0..2).map(|u| sigmoid(xa(u) + ha(u))).collect();
    let z: Vec<f64> = (0..2).map(|u| sigmoid(xa(2 + u) + ha(2 + u))).collect();
    let h = out[0].to_vec();
    for u in 0..2 {
        let n = (xa(4 + u) + (0..2).map(|i| r[i] * h0[i] * whn[i * 2 + u]).sum::<f64>()).tanh();
        let want = z[u] * h0[u] + (1.0 - z[u]) * n;
        assert!((h[u] - want).abs() < 1e-12, "h[{u}] {} vs {want}", h[u]);
    }
}

/// The fast text-convolution path (`forward`: row gather + one GEMM) equals the generic one
/// (`feature_maps`: `conv1d` on the transposed input) followed by the max over time.
#[test]
fn text_conv_fast_path_equals_generic_conv1d() {
    let mut rng = Rng::new(11);
    let mut s = ParamStore::<f64>::new();
    let conv = Conv1dText::in_store(&mut s, "c", "g", 4, &[1, 2, 5], 3, Activation::Tanh, &mut rng);
    perturb(&s, &mut rng);
    let x = Tensor::randn(&[3, 7, 4], &mut rng);
    let fast = conv.forward(&x).to_vec();
    let maps = conv.feature_maps(&x);
    let generic = Tensor::concat(&maps.iter().map(|m| m.max_axis(-1, false)).collect::<Vec<_>>(), 1).to_vec();
    for (a, b) in fast.iter().zip(&generic) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }
}
