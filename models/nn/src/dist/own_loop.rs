//! Data parallelism for a training loop of one's own (the loops that do not run through
//! [`Trainer`](crate::trainer::Trainer)): the group a loop runs on ([`Group`]) and the gradient
//! exchange of one step ([`GradSync`]).
//!
//! A loop written for one process becomes data-parallel with three changes, and stays exactly
//! the same loop when the group is one process:
//!
//! ```
//! # use chi_autodiff::Tensor;
//! # use chi_nn::dist::{GradSync, Group};
//! # use chi_nn::optim::{OptimConfig, Optimizer};
//! # use chi_nn::params::ParamStore;
//! let mut store = ParamStore::<f64>::new();
//! let w = store.add("w", "layer", Tensor::from_vec(vec![0.5], &[1, 1]));
//! let params = store.params().to_vec();
//! let group = Group::one(); // or Group::new(comm) on each rank of an MPI job
//! let mut sync = GradSync::new(&group, &params); // 1. parameters broadcast from rank 0
//! let mut opt = Optimizer::new(OptimConfig::sgd(0.1));
//! let xs = [1.0, 2.0, 3.0, 4.0];
//! for global in xs.chunks(2) {
//!     let mine = group.shard(global); // 2. this rank's share of the global batch
//!     store.zero_grad();
//!     let x = Tensor::from_vec(mine.to_vec(), &[mine.len(), 1]);
//!     let loss = x.matmul(&w.get()).square().mean();
//!     // 3. backward of this rank's mean, then the gradients averaged over the ranks
//!     let (_global_loss, grads) = sync.backward(&loss, mine.len() as f64).unwrap();
//!     opt.step(&params, &grads);
//! }
//! ```
//!
//! The weighting is [`Trainer`](crate::trainer::Trainer)'s (see [the module](super)): a rank's
//! loss is a mean over its `w_r` examples (or tokens), and the step's gradient is
//! `Σ_r (w_r / Σ w) · g_r`, the gradient of the mean over the whole global batch. A rank whose
//! share is empty passes an untracked constant loss with weight 0 (a global batch smaller than
//! the group leaves some ranks without examples).

use super::{broadcast_params, Buf, Collective, DataParallel, Reducer};
use crate::optim::Grads;
use crate::params::Param;
use chi_autodiff::{AutodiffError, Float, Tensor};
use std::rc::Rc;

/// The processes a training loop runs on: this one alone, or the ranks of a [`Collective`].
#[derive(Clone, Default)]
pub struct Group(Option<Rc<dyn Collective>>);

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            None => write!(f, "one process"),
            Some(c) => write!(f, "rank {} of {}", c.rank(), c.size()),
        }
    }
}

impl Group {
    /// This process alone.
    pub fn one() -> Group {
        Group(None)
    }
    /// The ranks of `comm` (a group of size 1 is [`Group::one`]).
    pub fn new(comm: Rc<dyn Collective>) -> Group {
        Group(Some(comm).filter(|c| c.size() > 1))
    }
    /// The same, from an optional group.
    pub fn from_option(comm: Option<Rc<dyn Collective>>) -> Group {
        comm.map_or(Group(None), Group::new)
    }
    /// The collective operations, when there are several ranks.
    pub fn comm(&self) -> Option<&Rc<dyn Collective>> {
        self.0.as_ref()
    }
    /// This process's rank (0 alone).
    pub fn rank(&self) -> usize {
        self.0.as_ref().map_or(0, |c| c.rank())
    }
    /// The number of processes (1 alone).
    pub fn size(&self) -> usize {
        self.0.as_ref().map_or(1, |c| c.size())
    }
    /// Whether this process is rank 0, the one that writes and prints.
    pub fn leads(&self) -> bool {
        self.rank() == 0
    }
    /// This rank's contiguous share of a global batch (all of it alone): shares differ in size
    /// by at most one, in rank order ([`super::shard`]).
    pub fn shard<'b, I>(&self, global: &'b [I]) -> &'b [I] {
        match &self.0 {
            Some(c) => super::shard(global, c.rank(), c.size()),
            None => global,
        }
    }
    /// A seed for this rank's own random stream (dropout masks, sampled masks): `seed` itself
    /// alone, so a one-process run is unchanged, and a different stream per rank otherwise
    /// (ranks must not draw the same masks for different examples). A function of the seed and
    /// the rank only, so a run is reproducible for a given number of ranks.
    pub fn rank_seed(&self, seed: u64) -> u64 {
        match &self.0 {
            None => seed,
            // Mixed, so nearby ranks and seeds give unrelated streams.
            Some(c) => chi_autodiff::Rng::mix(seed ^ (c.rank() as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        }
    }
    /// The sum of `values` over the ranks (the values themselves alone), for statistics a loop
    /// keeps across the group, such as a baseline's mean cost.
    pub fn sum(&self, values: Vec<f64>) -> Vec<f64> {
        match &self.0 {
            None => values,
            Some(c) => c.all_reduce_sum(Buf::F64(values)).into_vec(),
        }
    }
}

/// The gradient exchange of a training loop of one's own: [`GradSync::backward`] replaces
/// `loss.backward()` + [`Grads::collect`]. With several ranks it averages the gradients as
/// [`Trainer`](crate::trainer::Trainer) does in [`super::Mode::Sync`] (buckets started during
/// backward, sparse rows by all-gather, weights by examples); alone it is exactly the plain step.
pub struct GradSync<T: Float> {
    group: Group,
    params: Vec<Param<T>>,
    reducer: Option<Reducer<T>>,
}

impl<T: Float> GradSync<T> {
    /// The exchange for `params` over `group`. With several ranks, rank 0's parameter values
    /// are broadcast to the others here (every rank must call this at the same point).
    pub fn new(group: &Group, params: &[Param<T>]) -> Self {
        let reducer = group.comm().map(|c| {
            broadcast_params(&**c, params);
            Reducer::new(DataParallel::new(c.clone()), params)
        });
        GradSync { group: group.clone(), params: params.to_vec(), reducer }
    }

    /// The group.
    pub fn group(&self) -> &Group {
        &self.group
    }

    /// Differentiates `loss` (this rank's mean over `weight` examples or tokens) and returns the
    /// global mean loss with the gradients of the parameters averaged over the ranks, weighted
    /// by their shares. A rank with an empty share passes an untracked constant and weight 0;
    /// when no rank has any weight, the loss is 0 and no parameter gets a gradient (an
    /// optimiser step then changes nothing). Every rank must call this once per step.
    pub fn backward(&mut self, loss: &Tensor<T>, weight: f64) -> Result<(f64, Grads<T>), AutodiffError> {
        let Some(reducer) = self.reducer.as_mut() else {
            let value = loss.item().to_f64();
            if loss.is_tracked() {
                loss.try_backward()?;
            }
            return Ok((value, Grads::collect(&self.params)));
        };
        let comm = self.group.comm().expect("a reducer has a group");
        let w = weight.max(0.0);
        let (mean, share) = super::global_loss(&**comm, loss.item().to_f64(), w).unwrap_or((0.0, 0.0));
        reducer.begin(&self.params, share);
        // A failed backward must still join the exchange, or the other ranks wait forever.
        let result = if w > 0.0 && loss.is_tracked() { loss.try_backward() } else { Ok(()) };
        let grads = reducer.finish(&self.params);
        result?;
        Ok((mean, grads))
    }
}

#[cfg(test)]
mod tests {
    use super::super::ThreadGroup;
    use super::*;
    use crate::optim::{Grad, OptimConfig, Optimizer};
    use crate::params::ParamStore;

    /// A tiny regression with a dense weight and a row-sparse embedding, trained by a plain
    /// loop on `group` over global batches of `batch` examples; returns the final parameters.
    fn train(group: &Group, batch: usize, steps: usize) -> Vec<Vec<f64>> {
        let mut store = ParamStore::<f64>::new();
        let emb = store.add("emb", "e", Tensor::from_vec((0..12).map(|i| 0.1 * i as f64 - 0.5).collect(), &[6, 2]));
        let _ = emb.get().sparse_grad();
        let w = store.add("w", "l", Tensor::from_vec(vec![0.3, -0.2], &[2, 1]));
        if group.rank() != 0 {
            // Other ranks start elsewhere: the broadcast must make them equal.
            w.set_values(vec![9.0, 9.0]);
        }
        let params = store.params().to_vec();
        let mut sync = GradSync::new(group, &params);
        let mut opt = Optimizer::new(OptimConfig::adam(0.05));
        let ids: Vec<usize> = (0..60).map(|i| (i * 7 + 3) % 6).collect();
        let ys: Vec<f64> = ids.iter().map(|&i| i as f64 * 0.2 - 0.4).collect();
        let order: Vec<usize> = (0..ids.len()).collect();
        for (s, global) in order.chunks(batch).cycle().take(steps).enumerate() {
            let mine = group.shard(global);
            store.zero_grad();
            let loss = if mine.is_empty() {
                Tensor::scalar(0.0)
            } else {
                let x = emb.get().embedding(&mine.iter().map(|&i| ids[i]).collect::<Vec<_>>());
                let y = Tensor::from_vec(mine.iter().map(|&i| ys[i]).collect(), &[mine.len(), 1]);
                x.matmul(&w.get()).sub(&y).square().mean()
            };
            let (global_loss, grads) = sync.backward(&loss, mine.len() as f64).unwrap();
            assert!(global_loss.is_finite(), "step {s}");
            if let Some(Grad::Rows { ids, .. }) = &grads.items[0] {
                assert!(ids.windows(2).all(|p| p[0] < p[1]), "merged rows sorted and unique");
            }
            opt.step(&params, &grads);
        }
        params.iter().map(|p| p.get().to_vec()).collect()
    }

    #[test]
    fn ranks_of_a_plain_loop_take_the_steps_of_one_process_with_the_whole_batch() {
        // Batches of 7 over 3 ranks: shares 3/2/2, and the last batch of 60 (4 examples) 2/1/1.
        let single = train(&Group::one(), 7, 12);
        for ranked in ThreadGroup::run_each(3, |m| train(&Group::new(Rc::new(m)), 7, 12)) {
            for (a, b) in ranked.iter().flatten().zip(single.iter().flatten()) {
                assert!((a - b).abs() < 1e-12, "{a} vs {b}");
            }
        }
    }

    #[test]
    fn a_global_batch_smaller_than_the_group_leaves_ranks_empty_but_exact() {
        // Batches of 2 over 3 ranks: rank 2 never has an example.
        let single = train(&Group::one(), 2, 8);
        for ranked in ThreadGroup::run_each(3, |m| train(&Group::new(Rc::new(m)), 2, 8)) {
            for (a, b) in ranked.iter().flatten().zip(single.iter().flatten()) {
                assert!((a - b).abs() < 1e-12, "{a} vs {b}");
            }
        }
    }

    #[test]
    fn group_of_one_is_the_plain_loop_and_rank_seeds_differ_only_across_ranks() {
        let g = Group::one();
        assert_eq!((g.rank(), g.size(), g.leads()), (0, 1, true));
        assert_eq!(g.shard(&[1, 2, 3]), &[1, 2, 3]);
        assert_eq!(g.rank_seed(42), 42);
        assert_eq!(g.sum(vec![1.5]), vec![1.5]);
        assert!(Group::new(Rc::new(super::super::Solo)).comm().is_none(), "a group of one is no group");
        let seeds = ThreadGroup::run_each(2, |m| {
            let g = Group::new(Rc::new(m));
            (g.rank_seed(42), g.rank_seed(42), g.sum(vec![g.rank() as f64 + 1.0]))
        });
        assert_eq!(seeds[0].0, seeds[0].1, "a function of seed and rank");
        assert_ne!(seeds[0].0, seeds[1].0);
        assert!(seeds[0].0 != 42 && seeds[1].0 != 42);
        assert_eq!((seeds[0].2.clone(), seeds[1].2.clone()), (vec![3.0], vec![3.0]));
    }
}
