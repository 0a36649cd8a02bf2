//! `chi reproduce` as one of several processes (`mpirun -n K chi-mpi reproduce NAME …`).
//!
//! Every rank runs the experiment's code: the same units, in the same order, with the same seeds,
//! so every rank draws the same global batches. A training step splits its global batch over the
//! ranks ([`Ctx::shard`]), each rank differentiates the mean loss of its share, and the gradients
//! are averaged weighted by the shares' sizes, so K ranks take the steps one process takes with
//! the whole batch (in float32 up to the rounding of a different summation order). Experiments
//! that train through [`chi_nn::trainer::Trainer`] get the averaging from [`Ctx::trainer`]; those
//! with a training loop of their own (the text classifiers' `fit`, the tagger, the RCNN language
//! model and sentiment folds, the rationale model) take [`Ctx::processes`] and exchange
//! gradients with [`chi_nn::dist::GradSync`]. Random masks (dropout, sampled rationales) come
//! from a stream per rank ([`chi_nn::dist::Group::rank_seed`]), so a run is reproducible for a
//! given K but draws other masks than one process. Evaluation runs on every rank (the
//! parameters are identical), which keeps the code one path; only training is divided.
//!
//! Rank 0 is the run: it owns the experiment directory (lock, unit records, plots,
//! `results.json`) and prints the table. The other ranks write into a private temporary
//! directory, removed at the end, and print nothing. With `--resume`, rank 0 decides which units
//! are done and sends their records to the others, so every rank skips the same units. A record
//! made with K ranks is reused only by a run with the same K (the rank count is part of the
//! unit's configuration): its numbers differ from one process's in the last bits.
//!
//! Experiments that train full-batch, or have no training to divide, run in one process only
//! and say so ([`check`]).

use super::{Ctx, Experiment};
use chi_autodiff::{Float, Tensor};
use chi_nn::dist::{Collective, DataParallel, Group};
use chi_nn::optim::Optimizer;
use chi_nn::params::ParamStore;
use chi_nn::trainer::{StepOutput, Trainer};
use std::path::PathBuf;
use std::rc::Rc;

impl Ctx {
    /// The same context, running on the processes of `comm` (`None`: this one alone).
    pub fn with_group(mut self, comm: Option<Rc<dyn Collective>>) -> Ctx {
        self.group = Group::from_option(comm);
        self
    }
    /// The group's collective operations, when there are several processes.
    pub fn comm(&self) -> Option<&dyn Collective> {
        self.group.comm().map(|c| &**c)
    }
    /// The group, for code that takes one (`None` in one process).
    pub fn group(&self) -> Option<Rc<dyn Collective>> {
        self.group.comm().cloned()
    }
    /// The processes, for training loops of their own ([`chi_nn::dist::GradSync`]).
    pub fn processes(&self) -> &Group {
        &self.group
    }
    /// The number of processes (1 without `mpirun`).
    pub fn ranks(&self) -> usize {
        self.group.size()
    }
    /// Whether this process is rank 0, the one that writes and prints.
    pub fn leads(&self) -> bool {
        self.group.leads()
    }
    /// This rank's contiguous share of a global batch (all of it in one process). Shares differ
    /// in size by at most one and are empty only when the batch has fewer items than ranks,
    /// which [`check`] rules out for the experiments' own batches.
    pub fn shard<'b, I>(&self, global: &'b [I]) -> &'b [I] {
        self.group.shard(global)
    }
    /// A trainer over `store`: data-parallel over the ranks when there are several (parameters
    /// broadcast from rank 0 at the start, gradients averaged every step, overlapped with
    /// backward), a plain one otherwise. Its step closure returns [`step`].
    pub fn trainer<'a, T: Float>(&self, store: &'a ParamStore<T>, opt: &'a mut Optimizer<T>) -> Trainer<'a, T> {
        let t = Trainer::new(store, opt);
        match self.group.comm() {
            Some(c) => t.data_parallel(DataParallel::new(c.clone())),
            None => t,
        }
    }
    /// `config` with the rank count when there are several ranks (unit records are per K).
    pub(super) fn unit_config(&self, config: &str) -> String {
        match self.ranks() {
            1 => config.to_string(),
            k => format!("{config}; ranks={k}"),
        }
    }
}

/// A training step whose loss is the mean over `examples` examples (this rank's share): the
/// weight its gradients get when the ranks average them.
pub fn step<T: Float>(loss: Tensor<T>, examples: usize) -> StepOutput<T> {
    StepOutput::new(loss).weight(examples as f64)
}

/// Whether experiment `e` can run on `k` processes: it must train with mini-batches of at least
/// `k` examples.
pub fn check(e: &Experiment, k: usize) -> Result<(), String> {
    match e.batch {
        None => Err(format!(
            "{} runs in one process (it trains full-batch, or has no training to divide); under mpirun, \
             `chi reproduce` runs data-parallel only the mini-batch experiments: {}",
            e.name,
            super::registry().iter().filter(|e| e.batch.is_some()).map(|e| e.name).collect::<Vec<_>>().join(", ")
        )),
        Some(b) if k > b => Err(format!("{}: its batches of {b} examples cannot be split over {k} processes (at most {b})", e.name)),
        Some(_) => Ok(()),
    }
}

/// The private directory of a rank other than 0 (unique per process).
pub fn private_dir(rank: usize) -> PathBuf {
    std::env::temp_dir().join(format!("chi-reproduce-rank{rank}-{}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_mini_batch_experiments_split_and_never_below_one_example_per_rank() {
        let reg = super::super::registry();
        let get = |n: &str| reg.iter().find(|e| e.name == n).unwrap();
        let bsfe = get("ca-bsfe-synthetic");
        assert_eq!(bsfe.batch, Some(16));
        assert!(check(bsfe, 2).is_ok() && check(bsfe, 16).is_ok());
        let e = check(bsfe, 17).unwrap_err();
        assert!(e.contains("batches of 16") && e.contains("17 processes"), "{e}");
        let e = check(get("ca-rnn-synthetic"), 2).unwrap_err();
        assert!(e.contains("runs in one process") && e.contains("ca-cnn-mnist"), "{e}");
    }

    #[test]
    fn one_process_context_is_the_whole_batch_and_a_plain_config() {
        let ctx = Ctx::new("x", std::env::temp_dir(), true, 1, 0, false, false).with_group(None);
        let batch = [3, 1, 4, 1, 5];
        assert_eq!(ctx.shard(&batch), &batch);
        assert_eq!((ctx.ranks(), ctx.leads()), (1, true));
        assert_eq!(ctx.unit_config("steps=3"), "steps=3");
    }
}
