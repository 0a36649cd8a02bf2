//! Data-parallel training gives the single-process answer: K ranks (threads of a
//! [`ThreadGroup`], the same protocol the `chi` program runs over MPI) with per-rank batch B end
//! with the parameters of one process trained with batch K·B, in float64 to 1e-12 — for an MLP,
//! an LSTM over a row-sparse embedding, shards of unequal size and empty shards, with and
//! without overlapping the exchange with backward.

use chi_nn::dist::check::{self, Kind, Model, Problem};
use chi_nn::dist::{shard, Collective, DataParallel, Mode, ThreadGroup};
use chi_nn::optim::{OptimConfig, Optimizer};
use chi_nn::trainer::Trainer;
use std::rc::Rc;

/// `k` ranks (threads), each training its part of `s`; every rank's parameters.
fn ranks(s: &Problem, k: usize, dp: impl Fn(Rc<dyn Collective>) -> DataParallel + Sync) -> Vec<Vec<Vec<f64>>> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = ThreadGroup::new(k)
            .into_iter()
            .map(|member| {
                let dp = &dp;
                scope.spawn(move || s.on_rank(dp(Rc::new(member))))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

use check::max_diff;

fn check_equal(s: &Problem, k: usize, overlap: bool, bucket_bytes: usize) {
    let reference = s.single();
    let all = ranks(s, k, |c| DataParallel::new(c).overlap(overlap).bucket_bytes(bucket_bytes));
    for (r, p) in all.iter().enumerate() {
        let d = max_diff(p, &reference);
        assert!(d <= 1e-12, "rank {r} of {k} (overlap {overlap}, buckets of {bucket_bytes} B) differs from one process by {d:e}");
    }
    // Training moved the parameters (the comparison is not of two untouched models).
    assert!(max_diff(&reference, &Model::new(s.kind, 1).values()) > 1e-3);
}

#[test]
fn mlp_two_ranks_equal_one_process_with_the_doubled_batch() {
    let s = Problem { kind: Kind::Mlp, n: 64, batch: 16, steps: 30, optim: OptimConfig::adam(0.01) };
    check_equal(&s, 2, true, 1 << 20);
    // Several buckets (each parameter its own message), started during backward or after it.
    check_equal(&s, 2, true, 64);
    check_equal(&s, 2, false, 64);
}

#[test]
fn lstm_with_sparse_embedding_two_ranks_equal_one_process() {
    let s = Problem { kind: Kind::Lstm, n: 40, batch: 8, steps: 15, optim: OptimConfig::adagrad(0.1) };
    check_equal(&s, 2, true, 256);
}

#[test]
fn unequal_and_empty_shards_are_weighted_by_their_examples() {
    // 47 examples in global batches of 15: every epoch ends with a batch of 2, split 1/1/0
    // across three ranks (rank 2 has nothing); the 15s split 5/5/5.
    let s = Problem { kind: Kind::Mlp, n: 47, batch: 15, steps: 12, optim: OptimConfig::sgd(0.3) };
    check_equal(&s, 3, true, 128);
    let s = Problem { kind: Kind::Lstm, n: 47, batch: 15, steps: 8, optim: OptimConfig::adam(0.02) };
    check_equal(&s, 3, true, 1 << 20);
}

#[test]
fn local_sgd_ends_with_one_averaged_model_that_differs_from_synchronous_training() {
    let s = Problem { kind: Kind::Mlp, n: 64, batch: 16, steps: 10, optim: OptimConfig::adam(0.02) };
    let local = ranks(&s, 2, |c| DataParallel::new(c).mode(Mode::LocalSgd { every: 4 }));
    assert_eq!(local[0], local[1], "the final averaging gives every rank the same model");
    let sync = s.single();
    assert!(max_diff(&local[0], &sync) > 1e-6, "local SGD is a different algorithm");
    // Averaging every step with SGD (no optimiser state) is synchronous SGD.
    let s = Problem { optim: OptimConfig::sgd(0.2), ..s };
    let every_step = ranks(&s, 2, |c| DataParallel::new(c).mode(Mode::LocalSgd { every: 1 }));
    let d = max_diff(&every_step[0], &s.single());
    assert!(d <= 1e-12, "local SGD averaging every SGD step differs from synchronous SGD by {d:e}");
}

/// A group member that counts the all-reduces started through it.
struct Counting {
    inner: ThreadGroup,
    started: Rc<std::cell::Cell<usize>>,
}

impl Collective for Counting {
    fn rank(&self) -> usize {
        self.inner.rank()
    }
    fn size(&self) -> usize {
        self.inner.size()
    }
    fn start_all_reduce_sum(&self, buf: chi_nn::dist::Buf) -> Box<dyn chi_nn::dist::Pending> {
        self.started.set(self.started.get() + 1);
        self.inner.start_all_reduce_sum(buf)
    }
    fn broadcast_bytes(&self, bytes: &mut Vec<u8>, root: usize) {
        self.inner.broadcast_bytes(bytes, root)
    }
    fn all_gather_bytes(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        self.inner.all_gather_bytes(mine)
    }
}

#[test]
fn buckets_start_during_backward_when_overlapping() {
    let d = check::Data::new(32);
    for overlap in [true, false] {
        let seen: Vec<usize> = std::thread::scope(|scope| {
            let handles: Vec<_> = ThreadGroup::new(2)
                .into_iter()
                .map(|member| {
                    let d = &d;
                    scope.spawn(move || {
                        let started = Rc::new(std::cell::Cell::new(0));
                        let rank = member.rank();
                        let comm: Rc<dyn Collective> = Rc::new(Counting { inner: member, started: started.clone() });
                        let m = Model::new(Kind::Mlp, 1);
                        // w1 is the first parameter, so its gradient is the last to be complete;
                        // this hook, registered first, runs before the reducer's.
                        let at_w1 = Rc::new(std::cell::Cell::new(usize::MAX));
                        let (s, a) = (started.clone(), at_w1.clone());
                        let _h = m.store.get("w1").unwrap().get().register_post_accumulate_grad_hook(move |_| a.set(s.get()));
                        let mut opt = Optimizer::new(OptimConfig::sgd(0.1));
                        Trainer::new(&m.store, &mut opt)
                            .steps(1)
                            .data_parallel(DataParallel::new(comm).bucket_bytes(8).overlap(overlap))
                            .fit(std::iter::once((0..32).collect::<Vec<usize>>()), |g| m.loss(d, shard(&g, rank, 2)))
                            .unwrap();
                        at_w1.get()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for s in seen {
            // 1: the loss; then b2, w2 and b1 each in its own bucket.
            let expect = if overlap { 4 } else { 1 };
            assert_eq!(s, expect, "all-reduces started when w1's gradient was complete (overlap {overlap})");
        }
    }
}
