//! chi's side of the PyTorch comparison (`benches/torch/side_by_side.py` drives both sides).
//!
//! `side_by_side WORKLOAD [--threads N] [--reps R]` runs one workload `R` times after two
//! warm-up runs and prints one JSON line: the median and all times in milliseconds, plus
//! correctness numbers for a fixed instance — the loss before and after one optimiser step and
//! the sum and sum of squares of one gradient — that the PyTorch side computes too.
//!
//! Weights and inputs come from a closed form both sides evaluate identically
//! (`fill(tag, i) = scale · sin(0.37·i + tag)` in float64, rounded to f32), indexed in PyTorch's
//! layout, so no files need to be exchanged. `side_by_side --list` prints the workloads.

use chi_autodiff::{no_grad, Tensor};
use chi_ca::{CaRnnCell, CaRnnConfig};
use chi_nn::layers::{run_sequence_batch, Activation, Bidirectional, Conv1dText, Embedding, GruCell, GruVariant, Linear, LstmCell, RecurrentCell};
use chi_nn::params::{Param, ParamStore};
use chi_autodiff::Rng;
use std::time::Instant;

/// Every `lstm_*` and `gru_*` workload also exists as `NAME_composed` (the unfused cell step).
const WORKLOADS: [&str; 20] = [
    "scalar_chain",
    "lstm_h128_b16",
    "lstm_h512_b16",
    "lstm_h512_b64",
    "gru_h128_b16",
    "gru_h512_b16",
    "gru_h512_b64",
    "ca_rnn_h128_b16",
    "ca_rnn_h512_b16",
    "bilstm_h256_b16",
    "bilstm_h256_b64",
    "mlp",
    "textcnn",
    "sgemm256",
    "sgemm1024",
    "gemm_gru_xw",
    "gemm_gru_xt_dy",
    "gemm_gru_dy_wt",
    "softmax_fb",
    "log_softmax_fb",
];

/// `scale · sin(0.37·i + tag)` for `i < n`, as f32.

/// The same allocator as the `chi` program (see `chi_cli::allocator`).
#[global_allocator]
static GLOBAL: chi_cli::allocator::MiMalloc = chi_cli::allocator::MiMalloc;

fn fill(tag: f64, n: usize, scale: f64) -> Vec<f32> {
    (0..n).map(|i| (scale * (0.37 * i as f64 + tag).sin()) as f32).collect()
}

/// Sets a `[rows, cols]` chi weight (`x·W` convention) from PyTorch's `[cols, rows]` layout.
fn set_transposed(p: &Param<f32>, tag: f64, scale: f64) {
    let (rows, cols) = (p.shape()[0], p.shape()[1]);
    let t = fill(tag, rows * cols, scale); // torch layout [cols, rows]
    let mut v = vec![0.0; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            v[r * cols + c] = t[c * rows + r];
        }
    }
    p.set_values(v);
}

fn set_same(p: &Param<f32>, tag: f64, scale: f64) {
    p.set_values(fill(tag, p.numel(), scale));
}

fn sgd(store: &ParamStore<f32>, lr: f32) {
    no_grad(|| {
        for p in store.params() {
            // In place with chi's elementwise `axpy` (SIMD, split over the pool's threads when
            // large), as PyTorch's `p -= lr * p.grad` runs ATen's elementwise kernels.
            if let Some(g) = p.grad() {
                p.update(|v| chi_kernels::elementwise::axpy(-lr, g.data(), v));
            }
        }
    });
}

/// A workload: `step()` runs forward + backward (+ update) once and returns the loss;
/// `check()` returns (loss before, loss after one step, grad sum, grad sum of squares).
struct Work {
    step: Box<dyn FnMut() -> f64>,
    check: Box<dyn FnMut() -> [f64; 4]>,
    /// Ops per step (for per-op figures), 0 if not meaningful.
    ops: usize,
}

fn grad_stats(p: &Param<f32>) -> (f64, f64) {
    let g = p.grad().map(|g| g.to_vec()).unwrap_or_default();
    (g.iter().map(|x| *x as f64).sum(), g.iter().map(|x| (*x as f64).powi(2)).sum())
}

/// The recurrent cell of a workload: an LSTM or a GRU (PyTorch's reset-after form), each running
/// the whole sequence as one fused op, or with `composed` either cell with its step composed of
/// single ops.
struct BenchCell {
    lstm: Option<LstmCell<f32>>,
    gru: Option<GruCell<f32>>,
    composed: bool,
}

impl RecurrentCell<f32> for BenchCell {
    fn input_size(&self) -> usize {
        self.lstm.as_ref().map_or_else(|| self.gru.as_ref().unwrap().input_size(), |c| c.input_size())
    }
    fn hidden_size(&self) -> usize {
        self.lstm.as_ref().map_or_else(|| self.gru.as_ref().unwrap().hidden_size(), |c| c.hidden_size())
    }
    fn init_state(&self, batch: usize) -> Vec<Tensor<f32>> {
        self.lstm.as_ref().map_or_else(|| self.gru.as_ref().unwrap().init_state(batch), |c| c.init_state(batch))
    }
    fn step(&self, x: &Tensor<f32>, state: &[Tensor<f32>]) -> Vec<Tensor<f32>> {
        let xp = self.project_inputs(x).unwrap();
        self.step_projected(&xp, state)
    }
    fn name(&self) -> &'static str {
        "bench"
    }
    fn project_inputs(&self, xs: &Tensor<f32>) -> Option<Tensor<f32>> {
        self.lstm.as_ref().map_or_else(|| self.gru.as_ref().unwrap().project_inputs(xs), |c| c.project_inputs(xs))
    }
    fn run_projected(&self, xp: &Tensor<f32>, state: &[Tensor<f32>], keep: Option<std::rc::Rc<Vec<bool>>>) -> Option<Vec<Vec<Tensor<f32>>>> {
        match (&self.lstm, &self.gru, self.composed) {
            (Some(c), _, false) => c.run_projected(xp, state, keep),
            (None, Some(c), false) => c.run_projected(xp, state, keep),
            _ => None,
        }
    }
    fn step_projected(&self, xp: &Tensor<f32>, state: &[Tensor<f32>]) -> Vec<Tensor<f32>> {
        match (&self.lstm, &self.gru, self.composed) {
            (Some(c), _, false) => c.step_projected(xp, state),
            (Some(c), _, true) => c.step_projected_composed(xp, state),
            (None, Some(c), false) => c.step_projected(xp, state),
            (None, Some(c), true) => c.step_projected_composed(xp, state),
            (None, None, _) => unreachable!("a bench cell is an LSTM or a GRU"),
        }
    }
}

/// `[rows, cols]` chi weight from rows `r0..r0 + cols` of PyTorch's `[total, rows]` weight
/// `fill(tag)` (a gate block of a fused PyTorch weight).
fn set_transposed_block(p: &Param<f32>, tag: f64, scale: f64, total: usize, r0: usize) {
    let (rows, cols) = (p.shape()[0], p.shape()[1]);
    let t = fill(tag, total * rows, scale);
    let mut v = vec![0.0; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            v[r * cols + c] = t[(r0 + c) * rows + r];
        }
    }
    p.set_values(v);
}

/// A training workload: `step` runs forward, backward and SGD on one instance; `check` builds a
/// fresh one and reports the loss before and after one step and the sum and sum of squares of
/// `probe`'s gradient. `build` returns the parameter store and the model with its data.
fn training<M: 'static>(build: impl Fn() -> (ParamStore<f32>, M) + 'static, loss: impl Fn(&M) -> Tensor<f32> + 'static, probe: impl Fn(&M) -> Param<f32> + 'static) -> Work {
    let loss = std::rc::Rc::new(loss);
    let (store, model) = build();
    let step_loss = loss.clone();
    let step = Box::new(move || {
        store.zero_grad();
        let l = step_loss(&model);
        let v = l.item() as f64;
        l.backward();
        sgd(&store, 0.01);
        v
    });
    let check = Box::new(move || {
        let (store, m) = build();
        let l = loss(&m);
        let l0 = l.item() as f64;
        l.backward();
        let (gs, gq) = grad_stats(&probe(&m));
        sgd(&store, 0.01);
        let l1 = no_grad(|| loss(&m).item() as f64);
        [l0, l1, gs, gq]
    });
    Work { step, check, ops: 0 }
}

/// A recurrent workload: `gru` selects the GRU, `composed` the unfused step.
fn rnn(gru: bool, hidden: usize, input: usize, batch: usize, steps: usize, composed: bool) -> Work {
    let build = move || {
        let mut store = ParamStore::<f32>::new();
        let mut rng = Rng::new(0);
        let s = 1.0 / (hidden as f64).sqrt();
        let cell = if gru {
            let c = GruCell::new(&mut store, "gru", "g", input, hidden, GruVariant::ResetAfterMatmul, &mut rng);
            // PyTorch: weight_hh [3H, H] = fill(2) holds r, z, n; bias_hh = 0.
            set_transposed(&c.w_ih, 1.0, s);
            set_transposed_block(&c.w_hh, 2.0, s, 3 * hidden, 0);
            set_transposed_block(&c.w_hn, 2.0, s, 3 * hidden, 2 * hidden);
            set_same(&c.bias, 3.0, s);
            c.b_hn.as_ref().unwrap().set_values(vec![0.0; hidden]);
            BenchCell { lstm: None, gru: Some(c), composed }
        } else {
            let c = LstmCell::new(&mut store, "lstm", "g", input, hidden, false, &mut rng);
            set_transposed(&c.w_ih, 1.0, s);
            set_transposed(&c.w_hh, 2.0, s);
            set_same(&c.bias, 3.0, s);
            BenchCell { lstm: Some(c), gru: None, composed }
        };
        let head = Linear::in_store(&mut store, "head", "g", hidden, 1, true, &mut rng);
        set_transposed(&head.weight, 4.0, s);
        set_same(head.bias.as_ref().unwrap(), 5.0, s);
        let x = Tensor::from_vec(fill(6.0, batch * steps * input, 1.0), &[batch, steps, input]);
        let y = Tensor::from_vec(fill(7.0, batch, 1.0), &[batch, 1]);
        (store, (cell, head, x, y))
    };
    let loss = |(cell, head, x, y): &(BenchCell, Linear<f32>, Tensor<f32>, Tensor<f32>)| {
        let (_, state) = run_sequence_batch(cell, x, None, None);
        head.forward(&state[0]).mse_loss(y)
    };
    training(build, loss, |(c, ..)| c.lstm.as_ref().map_or_else(|| c.gru.as_ref().unwrap().w_ih.clone(), |l| l.w_ih.clone()))
}

/// A CA-RNN (*Context Aware Machine Learning*, Eqs. 34 and 36; chi-ca's `CaRnnCell`, its
/// sequence as one fused op) over `[batch, steps, input]`, a linear head on the last output,
/// MSE. PyTorch has no CA-RNN: `benches/torch/side_by_side.py` writes it from the equations with
/// the same algorithm (input terms of all steps in one matmul, per step one matmul over
/// `[y, c]` and one over the new cell state) and the same stacked parameters.
fn ca_rnn(hidden: usize, input: usize, batch: usize, steps: usize) -> Work {
    let build = move || {
        let mut store = ParamStore::<f32>::new();
        let mut rng = Rng::new(0);
        let s = 1.0 / (hidden as f64).sqrt();
        let c = CaRnnCell::new(&mut store, "ca", input, hidden, CaRnnConfig::default(), &mut rng);
        // Both sides: parameter k (in this order) is fill(10 + k) in chi's own layout.
        for (k, p) in [&c.w_f, &c.b_f, &c.w_v, &c.p_v, &c.b_v, &c.w_c, &c.b_c, &c.w_o, &c.b_o, &c.w_ov, &c.b_ov, &c.w_oc, &c.b_oc].into_iter().enumerate() {
            set_same(p, 10.0 + k as f64, s);
        }
        let head = Linear::in_store(&mut store, "head", "g", hidden, 1, true, &mut rng);
        set_transposed(&head.weight, 4.0, s);
        set_same(head.bias.as_ref().unwrap(), 5.0, s);
        let x = Tensor::from_vec(fill(6.0, batch * steps * input, 1.0), &[batch, steps, input]);
        let y = Tensor::from_vec(fill(7.0, batch, 1.0), &[batch, 1]);
        (store, (c, head, x, y))
    };
    let loss = |(c, head, x, y): &(CaRnnCell<f32>, Linear<f32>, Tensor<f32>, Tensor<f32>)| {
        let (_, state) = run_sequence_batch(c, x, None, None);
        head.forward(&state[0]).mse_loss(y)
    };
    training(build, loss, |(c, ..)| c.w_v.clone())
}

/// A bidirectional LSTM (the encoder of the NMT models of seeds 002 and 004): both directions
/// over `[batch, steps, input]`, a linear head on the two final states, MSE. PyTorch:
/// `nn.LSTM(bidirectional=True)`, head on `cat(h_n[0], h_n[1])`.
fn bilstm(hidden: usize, input: usize, batch: usize, steps: usize) -> Work {
    let build = move || {
        let mut store = ParamStore::<f32>::new();
        let mut rng = Rng::new(0);
        let s = 1.0 / (hidden as f64).sqrt();
        let mut direction = |name: &str, tag: f64| {
            let c = LstmCell::new(&mut store, name, "g", input, hidden, false, &mut rng);
            set_transposed(&c.w_ih, tag, s);
            set_transposed(&c.w_hh, tag + 1.0, s);
            set_same(&c.bias, tag + 2.0, s);
            c
        };
        // PyTorch: weight_ih_l0 = fill(1), weight_hh_l0 = fill(2), bias_ih_l0 = fill(3) and the
        // `_reverse` ones fill(11), fill(12), fill(13); bias_hh = 0.
        let bi = Bidirectional::new(direction("fwd", 1.0), direction("bwd", 11.0));
        let head = Linear::in_store(&mut store, "head", "g", 2 * hidden, 1, true, &mut rng);
        set_transposed(&head.weight, 4.0, s);
        set_same(head.bias.as_ref().unwrap(), 5.0, s);
        let x = Tensor::from_vec(fill(6.0, batch * steps * input, 1.0), &[batch, steps, input]);
        let y = Tensor::from_vec(fill(7.0, batch, 1.0), &[batch, 1]);
        (store, (bi, head, x, y))
    };
    let loss = |(bi, head, x, y): &(Bidirectional<LstmCell<f32>>, Linear<f32>, Tensor<f32>, Tensor<f32>)| {
        let out = bi.forward(x, None);
        head.forward(&Tensor::concat(&[out.fwd_state[0].clone(), out.bwd_state[0].clone()], 1)).mse_loss(y)
    };
    training(build, loss, |(bi, ..)| bi.fwd.w_ih.clone())
}

fn mlp() -> Work {
    let build = || {
        let mut store = ParamStore::<f32>::new();
        let mut rng = Rng::new(0);
        let l1 = Linear::in_store(&mut store, "fc1", "g", 784, 1024, true, &mut rng);
        let l2 = Linear::in_store(&mut store, "fc2", "g", 1024, 10, true, &mut rng);
        set_transposed(&l1.weight, 1.0, 1.0 / 28.0);
        set_same(l1.bias.as_ref().unwrap(), 2.0, 0.03);
        set_transposed(&l2.weight, 3.0, 1.0 / 32.0);
        set_same(l2.bias.as_ref().unwrap(), 4.0, 0.03);
        let x = Tensor::from_vec(fill(5.0, 128 * 784, 1.0), &[128, 784]);
        let y: Vec<usize> = (0..128).map(|i| i % 10).collect();
        (store, (l1, l2, x, y))
    };
    let loss = |(l1, l2, x, y): &(Linear<f32>, Linear<f32>, Tensor<f32>, Vec<usize>)| l2.forward(&l1.forward(x).relu()).cross_entropy(y);
    training(build, loss, |(l1, ..)| l1.weight.clone())
}

fn textcnn() -> Work {
    const V: usize = 20_000; // the PyTorch baseline's sizes (vocab 20k, dense embedding gradient)
    let build = || {
        let mut store = ParamStore::<f32>::new();
        let mut rng = Rng::new(0);
        let emb = Embedding::in_store(&mut store, "emb", "g", V, 100, false, &mut rng);
        let conv = Conv1dText::in_store(&mut store, "conv", "g", 100, &[3, 4, 5], 100, Activation::Relu, &mut rng);
        let fc = Linear::in_store(&mut store, "fc", "g", 300, 2, true, &mut rng);
        set_same(&emb.weight, 1.0, 1.0);
        for (i, (_, w, b)) in conv.filters.iter().enumerate() {
            set_same(w, 2.0 + i as f64, 0.05);
            set_same(b, 5.0 + i as f64, 0.05);
        }
        set_transposed(&fc.weight, 8.0, 0.05);
        set_same(fc.bias.as_ref().unwrap(), 9.0, 0.05);
        let ids: Vec<usize> = (0..50 * 60).map(|i| (i * 7919) % V).collect();
        let y: Vec<usize> = (0..50).map(|i| i % 2).collect();
        (store, (emb, conv, fc, ids, y))
    };
    let loss = |(emb, conv, fc, ids, y): &(Embedding<f32>, Conv1dText<f32>, Linear<f32>, Vec<usize>, Vec<usize>)| {
        fc.forward(&conv.forward(&emb.forward_shaped(ids, &[50, 60]))).cross_entropy(y)
    };
    training(build, loss, |(_, conv, ..)| conv.filters[0].1.clone())
}

fn scalar_chain() -> Work {
    const N: usize = 1000;
    let run = || {
        let x = Tensor::<f32>::scalar(0.5).requires_grad();
        let mut y = x.clone();
        for _ in 0..N {
            y = y.mul_scalar(1.01).add_scalar(0.1).tanh();
        }
        let v = y.item() as f64;
        y.backward();
        (v, x.grad().map(|g| g.item() as f64).unwrap_or(f64::NAN))
    };
    Work { step: Box::new(move || run().0), check: Box::new(move || {
        let (v, g) = run();
        [v, v, g, g * g]
    }), ops: 3 * N }
}

fn sgemm(n: usize) -> Work {
    let a = Tensor::from_vec(fill(1.0, n * n, 1.0), &[n, n]);
    let b = Tensor::from_vec(fill(2.0, n * n, 1.0), &[n, n]);
    let (a2, b2) = (a.clone(), b.clone());
    Work {
        step: Box::new(move || a.matmul(&b).data()[0] as f64),
        check: Box::new(move || {
            let c = a2.matmul(&b2).to_vec();
            // Σ|c| and Σc² (no cancellation, unlike Σc, so f32 rounding differences stay small).
            let a: f64 = c.iter().map(|x| (*x as f64).abs()).sum();
            let q: f64 = c.iter().map(|x| (*x as f64).powi(2)).sum();
            [q, q, a, q]
        }),
        ops: 0,
    }
}

/// One product `C = op(A)·op(B)` of shape `m × k × n` straight through chi's GEMM, with `A`
/// (`B`) read transposed in place when `ta` (`tb`), as the backward passes call it: the three
/// products of the GRU 512 b64 step's sequence-wide work (`gemm_gru_*`, `[B·T = 1600, 512]`
/// inputs, `[512, 3·512]` weights): the input projection `X·W`, the weight gradient `Xᵀ·dY` and
/// the input gradient `dY·Wᵀ`. PyTorch: `a @ b` on the same (transposed) views.
fn gemm_shape(m: usize, k: usize, n: usize, ta: bool, tb: bool) -> Work {
    use chi_kernels::gemm::{gemm, MatMut, MatRef};
    let a = fill(1.0, m * k, 1.0);
    let b = fill(2.0, k * n, 1.0);
    let run = move |c: &mut Vec<f32>| {
        let am = if ta { MatRef::row_major(&a, k, m).t() } else { MatRef::row_major(&a, m, k) };
        let bm = if tb { MatRef::row_major(&b, n, k).t() } else { MatRef::row_major(&b, k, n) };
        gemm(1.0, am, bm, 0.0, MatMut::row_major(c, m, n));
    };
    let run = std::rc::Rc::new(run);
    let run2 = run.clone();
    let mut c = vec![0.0f32; m * n];
    Work {
        step: Box::new(move || {
            run(&mut c);
            c[0] as f64
        }),
        check: Box::new(move || {
            let mut c = vec![0.0f32; m * n];
            run2(&mut c);
            let a: f64 = c.iter().map(|x| (*x as f64).abs()).sum();
            let q: f64 = c.iter().map(|x| (*x as f64).powi(2)).sum();
            [q, q, a, q]
        }),
        ops: 0,
    }
}

fn softmax_fb(log: bool) -> Work {
    // Inputs are made once (outside the timed step): the step is forward + backward only.
    let x0 = Tensor::from_vec(fill(1.0, 4096 * 1024, 3.0), &[4096, 1024]);
    let w = Tensor::from_vec(fill(2.0, 4096 * 1024, 1.0), &[4096, 1024]);
    let run = move || {
        let x = x0.detach().requires_grad();
        let y = if log { x.log_softmax(1) } else { x.softmax(1) };
        let l = y.mul(&w).sum();
        let v = l.item() as f64;
        l.backward();
        let g = x.grad().unwrap().to_vec();
        // Σ|g| rather than Σg: a softmax gradient sums to zero along each row.
        (v, g.iter().map(|x| (*x as f64).abs()).sum::<f64>(), g.iter().map(|x| (*x as f64).powi(2)).sum::<f64>())
    };
    let run = std::rc::Rc::new(run);
    let r2 = run.clone();
    Work {
        step: Box::new(move || run().0),
        check: Box::new(move || {
            let (v, s, q) = r2();
            [v, v, s, q]
        }),
        ops: 0,
    }
}

fn workload(name: &str) -> Option<Work> {
    Some(match name {
        "scalar_chain" => scalar_chain(),
        // `_composed`: the same workload with the unfused cell step.
        n if n.starts_with("lstm_") || n.starts_with("gru_") => {
            let composed = n.ends_with("_composed");
            let gru = n.starts_with("gru_");
            match n.trim_end_matches("_composed").split_once('_').unwrap().1 {
                "h128_b16" => rnn(gru, 128, 64, 16, 35, composed),
                "h512_b16" => rnn(gru, 512, 512, 16, 25, composed),
                "h512_b64" => rnn(gru, 512, 512, 64, 25, composed),
                _ => return None,
            }
        }
        "ca_rnn_h128_b16" => ca_rnn(128, 64, 16, 35),
        "ca_rnn_h512_b16" => ca_rnn(512, 512, 16, 25),
        "bilstm_h256_b16" => bilstm(256, 128, 16, 35),
        "bilstm_h256_b64" => bilstm(256, 128, 64, 35),
        "mlp" => mlp(),
        "textcnn" => textcnn(),
        "sgemm256" => sgemm(256),
        "sgemm1024" => sgemm(1024),
        "gemm_gru_xw" => gemm_shape(1600, 512, 1536, false, false),
        "gemm_gru_xt_dy" => gemm_shape(512, 1600, 1536, true, false),
        "gemm_gru_dy_wt" => gemm_shape(1600, 1536, 512, false, true),
        "softmax_fb" => softmax_fb(false),
        "log_softmax_fb" => softmax_fb(true),
        _ => return None,
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--list") {
        WORKLOADS.iter().for_each(|w| println!("{w}"));
        return;
    }
    let name = args.first().cloned().unwrap_or_else(|| {
        eprintln!("usage: side_by_side WORKLOAD [--threads N] [--reps R] [--flush-denormals] [--no-large-cache] [--no-malloc-tuning] (--list for workloads)");
        std::process::exit(2)
    });
    let opt = |flag: &str, default: usize| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).map_or(default, |v| v.parse().expect("a number"));
    let (threads, reps) = (opt("--threads", 1), opt("--reps", 5));
    // As the `chi` program does (and PyTorch's caching allocator): keep freed memory for reuse.
    if !args.iter().any(|a| a == "--no-malloc-tuning") {
        chi_cli::allocator::keep_freed_memory();
        chi_autodiff::malloc::keep_freed_memory();
    }
    // As the `chi` program does: large op outputs are reused, not cleared (`--no-large-cache`
    // measures without).
    chi_autodiff::pool::cache_large_buffers(!args.iter().any(|a| a == "--no-large-cache"));
    rayon::ThreadPoolBuilder::new().num_threads(threads).build_global().expect("thread pool");
    // Subnormal operands cost some CPUs (Intel's) a microcode assist per FMA; with this flag both
    // harnesses flush them (PyTorch: `torch.set_flush_denormal(True)`).
    if args.iter().any(|a| a == "--flush-denormals") {
        chi_kernels::fpmode::set_flush_denormals(true);
    }
    let Some(mut w) = workload(&name) else {
        eprintln!("unknown workload {name}; one of {WORKLOADS:?}");
        std::process::exit(2)
    };
    let check = (w.check)();
    for _ in 0..2 {
        std::hint::black_box((w.step)());
    }
    let mut times: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box((w.step)());
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    let all = times.clone();
    times.sort_by(|a, b| a.total_cmp(b));
    let median = times[times.len() / 2];
    println!(
        "{{\"side\":\"chi\",\"workload\":\"{name}\",\"threads\":{threads},\"median_ms\":{median},\"times_ms\":{all:?},\"ops\":{},\"loss0\":{},\"loss1\":{},\"grad_sum\":{},\"grad_sumsq\":{}}}",
        w.ops, check[0], check[1], check[2], check[3]
    );
}
