//! The fused recurrent steps equal their composed references: values and gradients of every
//! input, float64 to 1e-12 and float32 to 1e-5, for shapes including 1 and primes; a chain of
//! steps (state carried through the fused output) as well; and the `create_graph` rule (the
//! composed adjoint) gives the same first-order gradients as the fast one.

use chi_autodiff::ops::fused_rnn::{ca_rnn_sequence_composed, gru_cell_composed, gru_sequence_composed, lstm_cell_composed, lstm_sequence_composed, SEQ_SPLIT_MIN_FLOPS};
use std::rc::Rc;
use chi_autodiff::{grad, Float, GradOptions, Rng, Tensor};

const SHAPES: [(usize, usize); 8] = [(1, 1), (1, 7), (2, 1), (3, 5), (2, 13), (5, 2), (16, 11), (7, 17)];

fn rand<T: Float>(r: &mut Rng, shape: &[usize]) -> Tensor<T> {
    Tensor::rand_uniform(shape, -1.0, 1.0, r).requires_grad()
}

fn max_rel<T: Float>(a: &Tensor<T>, b: &Tensor<T>) -> f64 {
    assert_eq!(a.shape(), b.shape());
    a.data().iter().zip(b.data()).map(|(x, y)| (x.to_f64() - y.to_f64()).abs() / (1.0 + y.to_f64().abs())).fold(0.0, f64::max)
}

/// Compares `fused(inputs)` with `composed(inputs)` (same output shape): values, then the
/// gradients of every input for one random seed, with and without `create_graph`.
fn compare<T: Float>(inputs: &[Tensor<T>], fused: &dyn Fn(&[Tensor<T>]) -> Tensor<T>, composed: &dyn Fn(&[Tensor<T>]) -> Tensor<T>, tol: f64, what: &str, r: &mut Rng) {
    let (yf, yc) = (fused(inputs), composed(inputs));
    assert!(max_rel(&yf, &yc) <= tol, "{what}: values differ by {}", max_rel(&yf, &yc));
    let seed: Tensor<T> = Tensor::rand_uniform(yf.shape(), -1.0, 1.0, r);
    let refs: Vec<&Tensor<T>> = inputs.iter().collect();
    let gc = grad(&[&yc], &refs, Some(&[seed.clone()]), GradOptions::default()).unwrap();
    for opts in [GradOptions::default(), GradOptions::create_graph()] {
        let yf = fused(inputs);
        let gf = grad(&[&yf], &refs, Some(&[seed.clone()]), opts).unwrap();
        for (k, (a, b)) in gf.iter().zip(&gc).enumerate() {
            let e = max_rel(a, b);
            assert!(e <= tol, "{what}: gradient of input {k} differs by {e} (create_graph {})", opts.create_graph);
        }
    }
}

fn lstm_inputs<T: Float>(r: &mut Rng, b: usize, h: usize, peep: bool) -> Vec<Tensor<T>> {
    let mut v = vec![rand(r, &[b, 4 * h]), rand(r, &[b, h]), rand(r, &[b, h]), rand(r, &[h, 4 * h])];
    if peep {
        v.extend((0..3).map(|_| rand(r, &[h])));
    }
    v
}

fn lstm_fused<T: Float>(x: &[Tensor<T>]) -> Tensor<T> {
    let p = (x.len() == 7).then(|| [&x[4], &x[5], &x[6]]);
    Tensor::lstm_cell(&x[0], &x[1], &x[2], &x[3], p)
}
fn lstm_ref<T: Float>(x: &[Tensor<T>]) -> Tensor<T> {
    let p = (x.len() == 7).then(|| [&x[4], &x[5], &x[6]]);
    let [h, c] = lstm_cell_composed(&x[0], &x[1], &x[2], &x[3], p);
    Tensor::concat(&[h, c], 1)
}

fn gru_inputs<T: Float>(r: &mut Rng, b: usize, h: usize, after: bool) -> Vec<Tensor<T>> {
    let mut v = vec![rand(r, &[b, 3 * h]), rand(r, &[b, h]), rand(r, &[h, 2 * h]), rand(r, &[h, h])];
    if after {
        v.push(rand(r, &[h]));
    }
    v
}
fn gru_fused<T: Float>(x: &[Tensor<T>]) -> Tensor<T> {
    Tensor::gru_cell(&x[0], &x[1], &x[2], &x[3], x.get(4))
}
fn gru_ref<T: Float>(x: &[Tensor<T>]) -> Tensor<T> {
    gru_cell_composed(&x[0], &x[1], &x[2], &x[3], x.get(4))
}

fn all_cells<T: Float>(tol: f64) {
    let mut r = Rng::new(17);
    for &(b, h) in &SHAPES {
        for flag in [false, true] {
            let x = lstm_inputs::<T>(&mut r, b, h, flag);
            compare(&x, &lstm_fused, &lstm_ref, tol, &format!("lstm {b}x{h} peephole {flag}"), &mut r);
            let x = gru_inputs::<T>(&mut r, b, h, flag);
            compare(&x, &gru_fused, &gru_ref, tol, &format!("gru {b}x{h} reset_after {flag}"), &mut r);
        }
    }
}

#[test]
fn fused_cells_equal_composed_f64() {
    all_cells::<f64>(1e-12);
}

#[test]
fn fused_cells_equal_composed_f32() {
    all_cells::<f32>(1e-5);
}

/// Three LSTM and GRU steps, the state of each fed to the next: the fused chain (state taken
/// from the fused output with `narrow`) against the composed chain, values and gradients.
#[test]
fn fused_chains_equal_composed() {
    let mut r = Rng::new(5);
    for &(b, h) in &[(1, 1), (3, 5), (4, 7)] {
        let steps = 3;
        let mut ins: Vec<Tensor<f64>> = (0..steps).map(|_| rand(&mut r, &[b, 4 * h])).collect();
        ins.extend([rand(&mut r, &[b, h]), rand(&mut r, &[b, h]), rand(&mut r, &[h, 4 * h])]);
        ins.extend((0..3).map(|_| rand(&mut r, &[h])));
        let chain = |x: &[Tensor<f64>], fused: bool| {
            let (mut hh, mut cc) = (x[steps].clone(), x[steps + 1].clone());
            let w = &x[steps + 2];
            let p = [&x[steps + 3], &x[steps + 4], &x[steps + 5]];
            for xp in &x[..steps] {
                if fused {
                    let hc = Tensor::lstm_cell(xp, &hh, &cc, w, Some(p));
                    (hh, cc) = (hc.narrow(1, 0, h), hc.narrow(1, h, h));
                } else {
                    [hh, cc] = lstm_cell_composed(xp, &hh, &cc, w, Some(p));
                }
            }
            hh.square().sum().add(&cc.sum())
        };
        compare(&ins, &|x| chain(x, true), &|x| chain(x, false), 1e-12, &format!("lstm chain {b}x{h}"), &mut r);

        let mut ins: Vec<Tensor<f64>> = (0..steps).map(|_| rand(&mut r, &[b, 3 * h])).collect();
        ins.extend([rand(&mut r, &[b, h]), rand(&mut r, &[h, 2 * h]), rand(&mut r, &[h, h]), rand(&mut r, &[h])]);
        for after in [false, true] {
            let chain = |x: &[Tensor<f64>], fused: bool| {
                let mut hh = x[steps].clone();
                let bn = after.then(|| &x[steps + 3]);
                for xp in &x[..steps] {
                    hh = if fused { Tensor::gru_cell(xp, &hh, &x[steps + 1], &x[steps + 2], bn) } else { gru_cell_composed(xp, &hh, &x[steps + 1], &x[steps + 2], bn) };
                }
                hh.square().sum()
            };
            // Reset-before has no b_hn: its gradient is zero in both forms.
            compare(&ins, &|x| chain(x, true), &|x| chain(x, false), 1e-12, &format!("gru chain {b}x{h} after {after}"), &mut r);
        }
    }
}

#[test]
fn fused_cells_name_the_op_and_shapes_in_shape_errors() {
    let r = std::panic::catch_unwind(|| {
        let x = Tensor::<f64>::zeros(&[2, 8]);
        Tensor::lstm_cell(&x, &Tensor::zeros(&[2, 3]), &Tensor::zeros(&[2, 3]), &Tensor::zeros(&[3, 12]), None)
    });
    let msg = *r.unwrap_err().downcast::<String>().unwrap();
    assert!(msg.contains("lstm_cell") && msg.contains("[2, 8]") && msg.contains("[2, 12]"), "{msg}");
}

fn keep_flags(r: &mut Rng, t: usize, b: usize) -> Vec<bool> {
    // Ragged lengths: row b runs its first len_b steps (len_b ≥ 1).
    let lens: Vec<usize> = (0..b).map(|_| 1 + r.below(t)).collect();
    (0..t).flat_map(|ti| lens.iter().map(move |&l| ti < l).collect::<Vec<_>>()).collect()
}

fn sequences<T: Float>(tol: f64) {
    let mut r = Rng::new(23);
    for &(b, h) in &SHAPES {
        for t in [1, 2, 5] {
            for (peep, masked) in [(false, false), (true, false), (false, true), (true, true)] {
                let mut x = vec![rand::<T>(&mut r, &[b, t, 4 * h]), rand(&mut r, &[b, h]), rand(&mut r, &[b, h]), rand(&mut r, &[h, 4 * h])];
                if peep {
                    x.extend((0..3).map(|_| rand(&mut r, &[h])));
                }
                let keep = masked.then(|| keep_flags(&mut r, t, b));
                let k2 = keep.clone();
                let fused = move |x: &[Tensor<T>]| {
                    let p = (x.len() == 7).then(|| [&x[4], &x[5], &x[6]]);
                    Tensor::lstm_sequence(&x[0], &x[1], &x[2], &x[3], p, k2.clone().map(std::rc::Rc::new))
                };
                let composed = move |x: &[Tensor<T>]| {
                    let p = (x.len() == 7).then(|| [&x[4], &x[5], &x[6]]);
                    lstm_sequence_composed(&x[0], &x[1], &x[2], &x[3], p, keep.as_deref())
                };
                compare(&x, &fused, &composed, tol, &format!("lstm_sequence B={b} H={h} T={t} peephole {peep} masked {masked}"), &mut r);
            }
        }
    }
}

#[test]
fn fused_sequence_equals_composed_f64() {
    sequences::<f64>(1e-12);
}

#[test]
fn fused_sequence_equals_composed_f32() {
    sequences::<f32>(1e-5);
}

fn gru_sequences<T: Float>(tol: f64) {
    let mut r = Rng::new(29);
    for &(b, h) in &SHAPES {
        for t in [1, 2, 5] {
            for (after, masked) in [(false, false), (true, false), (false, true), (true, true)] {
                let mut x = vec![rand::<T>(&mut r, &[b, t, 3 * h]), rand(&mut r, &[b, h]), rand(&mut r, &[h, 2 * h]), rand(&mut r, &[h, h])];
                if after {
                    x.push(rand(&mut r, &[h]));
                }
                let keep = masked.then(|| keep_flags(&mut r, t, b));
                let k2 = keep.clone();
                let fused = move |x: &[Tensor<T>]| Tensor::gru_sequence(&x[0], &x[1], &x[2], &x[3], x.get(4), k2.clone().map(Rc::new));
                let composed = move |x: &[Tensor<T>]| gru_sequence_composed(&x[0], &x[1], &x[2], &x[3], x.get(4), keep.as_deref());
                compare(&x, &fused, &composed, tol, &format!("gru_sequence B={b} H={h} T={t} reset after {after} masked {masked}"), &mut r);
            }
        }
    }
}

#[test]
fn fused_gru_sequence_equals_composed_f64() {
    gru_sequences::<f64>(1e-12);
}

#[test]
fn fused_gru_sequence_equals_composed_f32() {
    gru_sequences::<f32>(1e-5);
}

fn ca_rnn_sequences<T: Float>(tol: f64) {
    let mut r = Rng::new(31);
    for &(b, n) in &SHAPES {
        for t in [1, 2, 5] {
            for masked in [false, true] {
                let w = 4 * n + 2;
                // Recurrent weights at the scale of their initialisation (±1/√fan-in): with
                // entries of ±1 this cell's recurrence is chaotic, and rounding differences
                // between two correct orders of summation grow by orders of magnitude per step.
                let scaled = |r: &mut Rng, shape: &[usize], fan_in: usize| Tensor::<T>::rand_uniform(shape, -1.0 / (fan_in as f64).sqrt(), 1.0 / (fan_in as f64).sqrt(), r).requires_grad();
                let x = vec![rand::<T>(&mut r, &[b, t, w]), rand(&mut r, &[b, n]), rand(&mut r, &[b, n]), scaled(&mut r, &[2 * n, w], 2 * n), scaled(&mut r, &[n, n + 1], n), rand(&mut r, &[n])];
                let keep = masked.then(|| keep_flags(&mut r, t, b));
                let k2 = keep.clone();
                let fused = move |x: &[Tensor<T>]| Tensor::ca_rnn_sequence(&x[0], &x[1], &x[2], &x[3], &x[4], &x[5], k2.clone().map(Rc::new));
                let composed = move |x: &[Tensor<T>]| ca_rnn_sequence_composed(&x[0], &x[1], &x[2], &x[3], &x[4], &x[5], keep.as_deref());
                compare(&x, &fused, &composed, tol, &format!("ca_rnn_sequence B={b} n={n} T={t} masked {masked}"), &mut r);
            }
        }
    }
}

#[test]
fn fused_ca_rnn_sequence_equals_composed_f64() {
    ca_rnn_sequences::<f64>(1e-12);
}

#[test]
fn fused_ca_rnn_sequence_equals_composed_f32() {
    ca_rnn_sequences::<f32>(1e-5);
}

/// Values and gradients of every input (one fixed seed) of `op` on `x`, in a pool of `threads`.
fn run_in_pool(threads: usize, op: fn(&[Tensor<f64>]) -> Tensor<f64>, make: fn() -> Vec<Tensor<f64>>) -> Vec<Vec<f64>> {
    chi_kernels::threads::with_threads(threads, move || {
        let x = make();
        let y = op(&x);
        let seed: Tensor<f64> = Tensor::rand_uniform(y.shape(), -1.0, 1.0, &mut Rng::new(5));
        let refs: Vec<&Tensor<f64>> = x.iter().collect();
        let gs = grad(&[&y], &refs, Some(&[seed]), GradOptions::default()).unwrap();
        std::iter::once(y.data().to_vec()).chain(gs.iter().map(|g| g.data().to_vec())).collect()
    })
    .unwrap()
}

fn max_abs_diff(a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
    a.iter().zip(b).flat_map(|(u, v)| u.iter().zip(v).map(|(p, q)| (p - q).abs() / (1.0 + q.abs()))).fold(0.0, f64::max)
}

/// Above [`SEQ_SPLIT_MIN_FLOPS`] of forward work, in a 2-thread pool, the sequence ops split the
/// batch into one row block per thread. The blocked run equals a 1-thread run (every row gets
/// the same arithmetic; only sums over the batch change their order) and the composed
/// reference, with ragged lengths so that carried rows fall in both blocks.
#[test]
fn sequences_split_over_threads_equal_one_thread_and_composed() {
    const B: usize = 7;
    const H: usize = 64;
    fn inputs(widths: &[&[usize]], seed: u64) -> Vec<Tensor<f64>> {
        let mut r = Rng::new(seed);
        widths.iter().map(|s| Tensor::rand_uniform(s, -0.5, 0.5, &mut r).requires_grad()).collect()
    }
    // The CA-RNN's recurrence is chaotic with weights of ±0.5 over 128 inputs (rounding
    // differences between the fused and composed orders of summation grow to 1e-5 over 40
    // steps); at ±0.2 it is not.
    fn ca_inputs(widths: &[&[usize]], seed: u64) -> Vec<Tensor<f64>> {
        let mut r = Rng::new(seed);
        widths.iter().map(|s| Tensor::rand_uniform(s, -0.2, 0.2, &mut r).requires_grad()).collect()
    }
    fn keep(t: usize) -> Rc<Vec<bool>> {
        // Row b runs t − 3·b steps (at least 1).
        Rc::new((0..t).flat_map(|ti| (0..B).map(move |b| ti + 3 * b < t.max(3 * b + 1))).collect())
    }
    // LSTM with peepholes, 40 steps.
    let lstm_in = || inputs(&[&[B, 40, 4 * H], &[B, H], &[B, H], &[H, 4 * H], &[H], &[H], &[H]], 1);
    let lstm: fn(&[Tensor<f64>]) -> Tensor<f64> = |x| Tensor::lstm_sequence(&x[0], &x[1], &x[2], &x[3], Some([&x[4], &x[5], &x[6]]), Some(keep(40)));
    let lstm_ref: fn(&[Tensor<f64>]) -> Tensor<f64> = |x| lstm_sequence_composed(&x[0], &x[1], &x[2], &x[3], Some([&x[4], &x[5], &x[6]]), Some(&keep(40)));
    assert!(2 * 40 * B * H * 4 * H >= SEQ_SPLIT_MIN_FLOPS, "the LSTM case must be large enough to split");
    // GRU, both reset forms, 50 steps.
    let gru_after_in = || inputs(&[&[B, 50, 3 * H], &[B, H], &[H, 2 * H], &[H, H], &[H]], 2);
    let gru_before_in = || inputs(&[&[B, 50, 3 * H], &[B, H], &[H, 2 * H], &[H, H]], 3);
    let gru: fn(&[Tensor<f64>]) -> Tensor<f64> = |x| Tensor::gru_sequence(&x[0], &x[1], &x[2], &x[3], x.get(4), Some(keep(50)));
    let gru_ref: fn(&[Tensor<f64>]) -> Tensor<f64> = |x| gru_sequence_composed(&x[0], &x[1], &x[2], &x[3], x.get(4), Some(&keep(50)));
    assert!(2 * 50 * B * H * 3 * H >= SEQ_SPLIT_MIN_FLOPS, "the GRU case must be large enough to split");
    // CA-RNN, 40 steps (width 4n+2 = 258).
    let ca_in = || ca_inputs(&[&[B, 40, 4 * H + 2], &[B, H], &[B, H], &[2 * H, 4 * H + 2], &[H, H + 1], &[H]], 4);
    let ca: fn(&[Tensor<f64>]) -> Tensor<f64> = |x| Tensor::ca_rnn_sequence(&x[0], &x[1], &x[2], &x[3], &x[4], &x[5], Some(keep(40)));
    let ca_ref: fn(&[Tensor<f64>]) -> Tensor<f64> = |x| ca_rnn_sequence_composed(&x[0], &x[1], &x[2], &x[3], &x[4], &x[5], Some(&keep(40)));
    assert!(2 * 40 * B * 2 * H * (4 * H + 2) >= SEQ_SPLIT_MIN_FLOPS, "the CA-RNN case must be large enough to split");
    let cases = [
        ("lstm", lstm, lstm_ref, lstm_in as fn() -> Vec<Tensor<f64>>),
        ("gru reset after", gru, gru_ref, gru_after_in),
        ("gru reset before", gru, gru_ref, gru_before_in),
        ("ca-rnn", ca, ca_ref, ca_in),
    ];
    for (what, op, reference, make) in cases {
        let (two, one, composed) = (run_in_pool(2, op, make), run_in_pool(1, op, make), run_in_pool(1, reference, make));
        let e1 = max_abs_diff(&two, &one);
        assert!(e1 <= 1e-13, "{what}: 2 threads differ from 1 thread by {e1}");
        let ec = max_abs_diff(&two, &composed);
        assert!(ec <= 1e-12, "{what}: 2 threads differ from the composed reference by {ec}");
    }
}
