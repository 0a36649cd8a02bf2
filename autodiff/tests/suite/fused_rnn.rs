//! The fused recurrent steps equal their composed references: values and gradients of every
//! input, float64 to 1e-12 and float32 to 1e-5, for shapes including 1 and primes; a chain of
//! steps (state carried through the fused output) as well; and the `create_graph` rule (the
//! composed adjoint) gives the same first-order gradients as the fast one.

use chi_autodiff::ops::fused_rnn::{gru_cell_composed, lstm_cell_composed, lstm_sequence_composed};
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
