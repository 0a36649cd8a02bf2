//! Fused recurrent steps and sequences ([`Tensor::lstm_cell`], [`Tensor::gru_cell`],
//! [`Tensor::lstm_sequence`], [`Tensor::gru_sequence`], [`Tensor::ca_rnn_sequence`]). Second order runs
//! through the composed rules the fused ops use under `create_graph`.

use super::*;

/// Batch and hidden sizes: 1..=4 and 1..=5 (so 1 and the primes 2, 3, 5 occur).
fn dims(r: &mut Rng) -> (usize, usize) {
    (1 + r.below(4), 1 + r.below(5))
}

/// Values in a range where no gate saturates, so finite differences stay accurate.
fn small(r: &mut Rng, shape: &[usize]) -> Tensor<f64> {
    uniform(r, shape, -0.8, 0.8)
}

pub(super) fn cases() -> Vec<OpCase> {
    vec![
        OpCase {
            name: "lstm_cell",
            order2: true,
            make: |r| {
                let (b, h) = dims(r);
                let ins = vec![small(r, &[b, 4 * h]), small(r, &[b, h]), small(r, &[b, h]), small(r, &[h, 4 * h])];
                case(ins, |x| Tensor::lstm_cell(&x[0], &x[1], &x[2], &x[3], None))
            },
        },
        OpCase {
            name: "lstm_cell_peephole",
            order2: true,
            make: |r| {
                let (b, h) = dims(r);
                let mut ins = vec![small(r, &[b, 4 * h]), small(r, &[b, h]), small(r, &[b, h]), small(r, &[h, 4 * h])];
                ins.extend((0..3).map(|_| small(r, &[h])));
                case(ins, |x| Tensor::lstm_cell(&x[0], &x[1], &x[2], &x[3], Some([&x[4], &x[5], &x[6]])))
            },
        },
        OpCase {
            name: "gru_cell_reset_after",
            order2: true,
            make: |r| {
                let (b, h) = dims(r);
                let ins = vec![small(r, &[b, 3 * h]), small(r, &[b, h]), small(r, &[h, 2 * h]), small(r, &[h, h]), small(r, &[h])];
                case(ins, |x| Tensor::gru_cell(&x[0], &x[1], &x[2], &x[3], Some(&x[4])))
            },
        },
        OpCase {
            name: "gru_cell_reset_before",
            order2: true,
            make: |r| {
                let (b, h) = dims(r);
                let ins = vec![small(r, &[b, 3 * h]), small(r, &[b, h]), small(r, &[h, 2 * h]), small(r, &[h, h])];
                case(ins, |x| Tensor::gru_cell(&x[0], &x[1], &x[2], &x[3], None))
            },
        },
    ]
}

/// Ragged lengths for `b` rows over `t` steps (every row runs at least one step), as the
/// `keep[t·B + b]` flags of the whole-sequence ops.
fn ragged(r: &mut Rng, b: usize, t: usize) -> std::rc::Rc<Vec<bool>> {
    let lens: Vec<usize> = (0..b).map(|_| 1 + r.below(t)).collect();
    std::rc::Rc::new((0..t).flat_map(|ti| lens.iter().map(move |&l| ti < l).collect::<Vec<_>>()).collect())
}

/// The whole-sequence LSTM, GRU and CA-RNN ([`Tensor::lstm_sequence`], [`Tensor::gru_sequence`],
/// [`Tensor::ca_rnn_sequence`]), with peepholes, both GRU reset forms and ragged lengths.
pub(super) fn sequence_cases() -> Vec<OpCase> {
    vec![
        OpCase {
            name: "gru_sequence_reset_after",
            order2: true,
            make: |r| {
                let (b, h) = dims(r);
                let t = 1 + r.below(3);
                let ins = vec![small(r, &[b, t, 3 * h]), small(r, &[b, h]), small(r, &[h, 2 * h]), small(r, &[h, h]), small(r, &[h])];
                let keep = ragged(r, b, t);
                case(ins, move |x| Tensor::gru_sequence(&x[0], &x[1], &x[2], &x[3], Some(&x[4]), Some(keep.clone())))
            },
        },
        OpCase {
            name: "gru_sequence_reset_before",
            order2: true,
            make: |r| {
                let (b, h) = dims(r);
                let t = 1 + r.below(3);
                let ins = vec![small(r, &[b, t, 3 * h]), small(r, &[b, h]), small(r, &[h, 2 * h]), small(r, &[h, h])];
                let keep = ragged(r, b, t);
                case(ins, move |x| Tensor::gru_sequence(&x[0], &x[1], &x[2], &x[3], None, Some(keep.clone())))
            },
        },
        OpCase {
            name: "ca_rnn_sequence",
            order2: true,
            make: |r| {
                let (b, n) = dims(r);
                let t = 1 + r.below(3);
                let w = 4 * n + 2;
                let ins = vec![small(r, &[b, t, w]), small(r, &[b, n]), small(r, &[b, n]), small(r, &[2 * n, w]), small(r, &[n, n + 1]), small(r, &[n])];
                let keep = ragged(r, b, t);
                case(ins, move |x| Tensor::ca_rnn_sequence(&x[0], &x[1], &x[2], &x[3], &x[4], &x[5], Some(keep.clone())))
            },
        },
        OpCase {
            name: "lstm_sequence",
            order2: true,
            make: |r| {
                let (b, h) = dims(r);
                let t = 1 + r.below(3);
                let mut ins = vec![small(r, &[b, t, 4 * h]), small(r, &[b, h]), small(r, &[b, h]), small(r, &[h, 4 * h])];
                ins.extend((0..3).map(|_| small(r, &[h])));
                let keep = ragged(r, b, t);
                case(ins, move |x| Tensor::lstm_sequence(&x[0], &x[1], &x[2], &x[3], Some([&x[4], &x[5], &x[6]]), Some(keep.clone())))
            },
        },
    ]
}
