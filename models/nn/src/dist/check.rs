//! The single-process check: a small float64 MLP or LSTM trained data-parallel on the ranks of
//! a group and, on every rank, by one process with the whole global batch; the parameters must
//! agree to rounding. `chi dist check` runs it over MPI (as `horovodrun --check-build` checks an
//! installation); chi-nn's tests run it over a [`ThreadGroup`](super::ThreadGroup).

use super::{shard, Collective, DataParallel};
use crate::dataset::Batcher;
use crate::layers::{run_sequence_batch, Embedding, LstmCell, RecurrentCell};
use crate::optim::{OptimConfig, Optimizer};
use crate::params::{init, ParamStore};
use crate::trainer::{StepOutput, Trainer};
use chi_autodiff::{Rng, Tensor};
use std::rc::Rc;

/// The model of a check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `6 → 16 (tanh) → 3`, dense parameters.
    Mlp,
    /// A row-sparse embedding (12 × 4), an LSTM (4 → 8) over sequences of 1–5 tokens, a linear
    /// read-out of the last state: dense and sparse gradients, ragged lengths.
    Lstm,
}

const N_IN: usize = 6;
const CLASSES: usize = 3;
const VOCAB: usize = 12;
const T_MAX: usize = 5;

/// The check's data (fixed seed): features, token sequences and labels for `n` examples.
pub struct Data {
    x: Vec<f64>,
    seqs: Vec<Vec<usize>>,
    y: Vec<usize>,
}

impl Data {
    /// `n` random examples.
    pub fn new(n: usize) -> Data {
        let mut rng = Rng::new(7);
        let x: Vec<f64> = (0..n * N_IN).map(|_| rng.normal()).collect();
        let seqs = (0..n).map(|_| (0..1 + rng.below(T_MAX)).map(|_| rng.below(VOCAB)).collect()).collect();
        let y = (0..n).map(|_| rng.below(CLASSES)).collect();
        Data { x, seqs, y }
    }
}

/// A check model's parameters.
pub struct Model {
    /// The parameters.
    pub store: ParamStore<f64>,
    emb: Option<Embedding<f64>>,
    cell: Option<LstmCell<f64>>,
}

impl Model {
    /// A model initialised from `seed`.
    pub fn new(kind: Kind, seed: u64) -> Model {
        let mut rng = Rng::new(seed);
        let mut store = ParamStore::new();
        match kind {
            Kind::Mlp => {
                store.add("w1", "main", init::normal(&[N_IN, 16], 0.4, &mut rng));
                store.add("b1", "main", init::zeros(&[16]));
                store.add("w2", "main", init::normal(&[16, CLASSES], 0.4, &mut rng));
                store.add("b2", "main", init::zeros(&[CLASSES]));
                Model { store, emb: None, cell: None }
            }
            Kind::Lstm => {
                let emb = Embedding::in_store(&mut store, "emb", "main", VOCAB, 4, true, &mut rng);
                let cell = LstmCell::new(&mut store, "lstm", "main", 4, 8, false, &mut rng);
                store.add("w_out", "main", init::normal(&[8, CLASSES], 0.4, &mut rng));
                Model { store, emb: Some(emb), cell: Some(cell) }
            }
        }
    }
    /// Mean cross-entropy over the examples `idx`.
    pub fn loss(&self, d: &Data, idx: &[usize]) -> Tensor<f64> {
        let p = |name: &str| self.store.get(name).expect("check model parameter").get();
        let labels: Vec<usize> = idx.iter().map(|&i| d.y[i]).collect();
        match (&self.emb, &self.cell) {
            (Some(emb), Some(cell)) => {
                let mut ids = Vec::with_capacity(idx.len() * T_MAX);
                let lengths: Vec<usize> = idx.iter().map(|&i| d.seqs[i].len()).collect();
                for &i in idx {
                    ids.extend(d.seqs[i].iter().copied());
                    ids.extend(std::iter::repeat_n(0, T_MAX - d.seqs[i].len()));
                }
                let xs = emb.forward_shaped(&ids, &[idx.len(), T_MAX]);
                let (_, state) = run_sequence_batch(cell, &xs, None, Some(&lengths));
                cell.output(&state).matmul(&p("w_out")).cross_entropy(&labels)
            }
            _ => {
                let x: Vec<f64> = idx.iter().flat_map(|&i| d.x[i * N_IN..(i + 1) * N_IN].to_vec()).collect();
                let x = Tensor::from_vec(x, &[idx.len(), N_IN]);
                let h = x.matmul(&p("w1")).add(&p("b1")).tanh();
                h.matmul(&p("w2")).add(&p("b2")).cross_entropy(&labels)
            }
        }
    }
    /// Every parameter's values.
    pub fn values(&self) -> Vec<Vec<f64>> {
        self.store.params().iter().map(|p| p.get().to_vec()).collect()
    }
}

/// A training problem: model, data size, *global* batch, steps, optimiser.
#[derive(Clone, Debug)]
pub struct Problem {
    /// The model.
    pub kind: Kind,
    /// Examples.
    pub n: usize,
    /// Global batch (the ranks split it).
    pub batch: usize,
    /// Optimiser steps.
    pub steps: u64,
    /// The optimiser.
    pub optim: OptimConfig,
}

impl Problem {
    /// Trains in one process with the global batch; returns the parameters.
    pub fn single(&self) -> Vec<Vec<f64>> {
        let d = Data::new(self.n);
        let m = Model::new(self.kind, 1);
        let mut opt = Optimizer::new(self.optim.clone());
        let mut batcher = Batcher::new(self.n, self.batch, true, Rng::new(3));
        Trainer::new(&m.store, &mut opt)
            .steps(self.steps)
            .fit(std::iter::from_fn(|| Some(batcher.next_batch())), |idx| m.loss(&d, &idx))
            .expect("the check problem trains");
        m.values()
    }
    /// Trains this rank's part data-parallel with `dp`; returns this rank's parameters. Ranks
    /// other than 0 start from another initialisation: the broadcast must make them equal.
    pub fn on_rank(&self, dp: DataParallel) -> Vec<Vec<f64>> {
        let comm: Rc<dyn Collective> = dp.comm().clone();
        let (rank, k) = (comm.rank(), comm.size());
        let d = Data::new(self.n);
        let m = Model::new(self.kind, 1 + rank as u64 * 1000);
        let mut opt = Optimizer::new(self.optim.clone());
        let mut batcher = Batcher::new(self.n, self.batch, true, Rng::new(3));
        Trainer::new(&m.store, &mut opt)
            .steps(self.steps)
            .data_parallel(dp)
            .fit(std::iter::from_fn(|| Some(batcher.next_batch())), |global| {
                let mine = shard(&global, rank, k);
                if mine.is_empty() {
                    StepOutput::new(Tensor::scalar(0.0)).weight(0.0)
                } else {
                    StepOutput::new(m.loss(&d, mine)).weight(mine.len() as f64)
                }
            })
            .expect("the check problem trains");
        m.values()
    }
}

/// The largest absolute difference between two parameter lists.
pub fn max_diff(a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
    a.iter().zip(b).flat_map(|(x, y)| x.iter().zip(y).map(|(p, q)| (p - q).abs())).fold(0.0, f64::max)
}

/// What [`run`] measured on this rank.
#[derive(Clone, Debug)]
pub struct Report {
    /// Largest difference between this rank's parameters and the single-process ones.
    pub max_diff: f64,
    /// Largest change of a parameter by training (the comparison is not of untouched models).
    pub moved: f64,
}

/// The check on this rank: `problem` (its `batch` is the global one) data-parallel over `dp`
/// against one process.
pub fn run(problem: &Problem, dp: DataParallel) -> Report {
    let reference = problem.single();
    let mine = problem.on_rank(dp);
    Report { max_diff: max_diff(&mine, &reference), moved: max_diff(&reference, &Model::new(problem.kind, 1).values()) }
}
