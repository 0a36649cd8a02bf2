//! Data-parallel training across processes: the collective operations a group of *ranks*
//! needs ([`Collective`]), two in-library groups ([`Solo`], [`ThreadGroup`]), the sharding of a
//! global batch ([`shard`]) and the gradient reducer [`Trainer`](crate::trainer::Trainer) runs
//! when given a [`DataParallel`].
//!
//! The `chi-mpi` program (models/chi-mpi, built with its `mpi` feature) implements
//! [`Collective`] on MPI (`MPI_Iallreduce`, `MPI_Bcast`, `MPI_Allgatherv`); this library needs no
//! MPI. [`ThreadGroup`] runs
//! the same protocol between threads of one process, which is how the tests prove that K ranks
//! give the single-process answer without an MPI installation.
//!
//! ## Synchronous data parallelism ([`Mode::Sync`])
//! Every rank holds the whole model; parameters start equal (broadcast from rank 0). Each step,
//! rank r takes its shard of the global batch, computes its loss and gradients, and the ranks
//! average the gradients before the same optimiser update is applied everywhere — as PyTorch's
//! `DistributedDataParallel` and Horovod do:
//!
//! * **Weights.** A rank's loss is a mean over its `w_r` examples ([`StepOutput::weight`](crate::trainer::StepOutput::weight)); the
//!   global gradient is `Σ_r (w_r / Σ w) · g_r`, which is the gradient of the mean over the global
//!   batch whether or not the shards have equal sizes (the last batch of an epoch may not). The
//!   logged loss is the same weighted mean, so every rank sees the same loss and stops together
//!   on a non-finite one.
//! * **Buckets.** Dense gradients travel in a few large messages: the parameters, in reverse
//!   order (backward produces the last layers' gradients first), are packed into buckets of about
//!   [`DataParallel::bucket_bytes`]. With [`DataParallel::overlap`] (the default) a bucket's
//!   non-blocking all-reduce starts from a post-accumulate gradient hook
//!   ([`chi_autodiff::Tensor::register_post_accumulate_grad_hook`]) as soon as every gradient in
//!   it is complete, so communication runs while backward computes the earlier layers. Buckets
//!   start strictly in index order on every rank (a ready bucket waits for the ones before it),
//!   since collective calls must match across ranks.
//! * **No gradient.** Each parameter carries a flag in its bucket: a parameter no rank produced a
//!   gradient for stays without one (an optimiser skips it, as in a single process), rather than
//!   receiving zeros (which would decay Adam's moments).
//! * **Sparse gradients.** Tables marked [`chi_autodiff::Tensor::sparse_grad`] exchange their
//!   `(row ids, rows)` with an all-gather, not a dense all-reduce; rows are merged in rank order.
//!
//! **Reduction order.** The dense sum is the MPI library's (`MPI_SUM`); for two ranks it is one
//! exactly commutative addition, so every rank gets bitwise the same sum. [`ThreadGroup`] adds in
//! rank order. Against one process with the whole global batch the result differs only by
//! rounding (a mean of `B·K` terms versus a weighted sum of `K` means of `B`): in float64 the
//! parameters agree to about 1e-15 per step.
//!
//! ## Local SGD ([`Mode::LocalSgd`])
//! Each rank steps on its own shard's gradient and the ranks average their *parameters* every
//! `every` steps (periodic model averaging). Optimiser state stays per rank. One message per
//! period instead of one per step; the effect on quality is measured, not assumed.

pub mod check;
mod own_loop;

pub use own_loop::{GradSync, Group};

use crate::optim::{Grad, Grads};
use crate::params::Param;
use chi_autodiff::{Float, HookHandle};
use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::{Arc, Condvar, Mutex};

/// A buffer of numbers being reduced: the element types chi trains in.
#[derive(Clone, Debug, PartialEq)]
pub enum Buf {
    /// Single precision.
    F32(Vec<f32>),
    /// Double precision.
    F64(Vec<f64>),
}

impl Buf {
    /// Wraps a `Vec` of chi's float type.
    pub fn from_vec<T: Float>(v: Vec<T>) -> Buf {
        let any: Box<dyn Any> = Box::new(v);
        match any.downcast::<Vec<f32>>() {
            Ok(v) => Buf::F32(*v),
            Err(any) => Buf::F64(*any.downcast::<Vec<f64>>().expect("chi's Float is f32 or f64")),
        }
    }
    /// Unwraps into a `Vec<T>`; panics if the element type differs (a protocol error between
    /// ranks, not an input error).
    pub fn into_vec<T: Float>(self) -> Vec<T> {
        let any: Box<dyn Any> = match self {
            Buf::F32(v) => Box::new(v),
            Buf::F64(v) => Box::new(v),
        };
        *any.downcast::<Vec<T>>().unwrap_or_else(|_| panic!("Buf::into_vec: element type is not {}", T::NAME))
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Buf::F32(v) => v.len(),
            Buf::F64(v) => v.len(),
        }
    }
    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        match self {
            Buf::F32(v) => 4 * v.len(),
            Buf::F64(v) => 8 * v.len(),
        }
    }
    /// Elementwise `self += other` (same type and length).
    fn add_assign(&mut self, other: &Buf) {
        match (self, other) {
            (Buf::F32(a), Buf::F32(b)) if a.len() == b.len() => a.iter_mut().zip(b).for_each(|(x, y)| *x += *y),
            (Buf::F64(a), Buf::F64(b)) if a.len() == b.len() => a.iter_mut().zip(b).for_each(|(x, y)| *x += *y),
            (a, b) => panic!("all-reduce: ranks sent different buffers ({} vs {} elements, or different types)", a.len(), b.len()),
        }
    }
}

/// A reduction started by [`Collective::start_all_reduce_sum`].
pub trait Pending {
    /// Lets the communication progress; returns whether it has finished.
    fn test(&mut self) -> bool {
        false
    }
    /// Waits for the result.
    fn wait(self: Box<Self>) -> Buf;
}

/// The collective operations of a group of `size` ranks. Every rank must call the same
/// operations in the same order (as MPI requires); a rank that fails instead should end the
/// whole group (the `chi` program calls `MPI_Abort`).
pub trait Collective {
    /// This rank, `0..size`.
    fn rank(&self) -> usize;
    /// The number of ranks.
    fn size(&self) -> usize;
    /// Starts an element-wise sum of `buf` over all ranks; every rank gets the sum.
    fn start_all_reduce_sum(&self, buf: Buf) -> Box<dyn Pending>;
    /// Blocking [`Collective::start_all_reduce_sum`].
    fn all_reduce_sum(&self, buf: Buf) -> Buf {
        self.start_all_reduce_sum(buf).wait()
    }
    /// Replaces `bytes` on every rank with rank `root`'s (whose length may differ).
    fn broadcast_bytes(&self, bytes: &mut Vec<u8>, root: usize);
    /// Every rank's `mine`, in rank order.
    fn all_gather_bytes(&self, mine: &[u8]) -> Vec<Vec<u8>>;
}

/// The group of one: every operation is the identity. Training with it is training without data
/// parallelism.
#[derive(Clone, Copy, Debug, Default)]
pub struct Solo;

struct Ready(Buf);

impl Pending for Ready {
    fn test(&mut self) -> bool {
        true
    }
    fn wait(self: Box<Self>) -> Buf {
        self.0
    }
}

impl Collective for Solo {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn start_all_reduce_sum(&self, buf: Buf) -> Box<dyn Pending> {
        Box::new(Ready(buf))
    }
    fn broadcast_bytes(&self, _bytes: &mut Vec<u8>, _root: usize) {}
    fn all_gather_bytes(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        vec![mine.to_vec()]
    }
}

// ------------------------------------------------------------------------------ thread group

enum Part {
    Sum(Buf),
    Bytes(Vec<u8>),
}

#[derive(Clone)]
enum Outcome {
    Sum(Buf),
    Bytes(Vec<u8>),
    List(Vec<Vec<u8>>),
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Sum,
    Broadcast(usize),
    Gather,
}

struct Round {
    kind: Kind,
    parts: Vec<Option<Part>>,
    result: Option<Outcome>,
    taken: usize,
}

struct Shared {
    size: usize,
    rounds: Mutex<HashMap<u64, Round>>,
    cv: Condvar,
}

/// `size` ranks as threads of one process, for tests and for trying data parallelism without
/// MPI. Create the group with [`ThreadGroup::new`] and move one member into each thread.
/// Sums are taken in rank order.
pub struct ThreadGroup {
    shared: Arc<Shared>,
    rank: usize,
    seq: std::cell::Cell<u64>,
}

impl ThreadGroup {
    /// The `size` members of a new group, rank 0 first.
    pub fn new(size: usize) -> Vec<ThreadGroup> {
        assert!(size > 0, "ThreadGroup::new: a group needs at least one rank");
        let shared = Arc::new(Shared { size, rounds: Mutex::new(HashMap::new()), cv: Condvar::new() });
        (0..size).map(|rank| ThreadGroup { shared: shared.clone(), rank, seq: std::cell::Cell::new(0) }).collect()
    }

    /// Runs `f` on each of `size` ranks, one thread per rank, all started before any is
    /// waited for (a collective blocks until every rank joins it), and returns the ranks'
    /// results in rank order. A panic on a rank is re-raised here.
    pub fn run_each<R: Send + 'static>(size: usize, f: impl Fn(ThreadGroup) -> R + Send + Sync + 'static) -> Vec<R> {
        let f = Arc::new(f);
        let handles: Vec<_> = ThreadGroup::new(size)
            .into_iter()
            .map(|m| {
                let f = f.clone();
                std::thread::spawn(move || f(m))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    }

    /// Deposits this rank's part of the next collective; returns the round's key.
    fn deposit(&self, kind: Kind, part: Part) -> u64 {
        let key = self.seq.get();
        self.seq.set(key + 1);
        let size = self.shared.size;
        let mut rounds = self.shared.rounds.lock().unwrap_or_else(|e| e.into_inner());
        let round = rounds.entry(key).or_insert_with(|| Round { kind, parts: (0..size).map(|_| None).collect(), result: None, taken: 0 });
        assert!(round.kind == kind, "ThreadGroup: ranks called different collectives as operation {key}");
        round.parts[self.rank] = Some(part);
        if round.parts.iter().all(|p| p.is_some()) {
            let parts: Vec<Part> = round.parts.iter_mut().map(|p| p.take().unwrap()).collect();
            round.result = Some(match kind {
                Kind::Sum => {
                    let mut it = parts.into_iter().map(|p| match p {
                        Part::Sum(b) => b,
                        Part::Bytes(_) => unreachable!(),
                    });
                    let mut acc = it.next().unwrap();
                    for b in it {
                        acc.add_assign(&b);
                    }
                    Outcome::Sum(acc)
                }
                Kind::Broadcast(root) => match parts.into_iter().nth(root).unwrap() {
                    Part::Bytes(b) => Outcome::Bytes(b),
                    Part::Sum(_) => unreachable!(),
                },
                Kind::Gather => Outcome::List(
                    parts
                        .into_iter()
                        .map(|p| match p {
                            Part::Bytes(b) => b,
                            Part::Sum(_) => unreachable!(),
                        })
                        .collect(),
                ),
            });
            self.shared.cv.notify_all();
        }
        key
    }

    fn collect(shared: &Shared, key: u64) -> Outcome {
        let mut rounds = shared.rounds.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let round = rounds.get_mut(&key).expect("ThreadGroup: round vanished");
            if let Some(r) = &round.result {
                let r = r.clone();
                round.taken += 1;
                if round.taken == shared.size {
                    rounds.remove(&key);
                }
                return r;
            }
            rounds = shared.cv.wait(rounds).unwrap_or_else(|e| e.into_inner());
        }
    }
}

struct ThreadPending {
    shared: Arc<Shared>,
    key: u64,
}

impl Pending for ThreadPending {
    fn wait(self: Box<Self>) -> Buf {
        match ThreadGroup::collect(&self.shared, self.key) {
            Outcome::Sum(b) => b,
            _ => unreachable!(),
        }
    }
}

impl Collective for ThreadGroup {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.shared.size
    }
    fn start_all_reduce_sum(&self, buf: Buf) -> Box<dyn Pending> {
        let key = self.deposit(Kind::Sum, Part::Sum(buf));
        Box::new(ThreadPending { shared: self.shared.clone(), key })
    }
    fn broadcast_bytes(&self, bytes: &mut Vec<u8>, root: usize) {
        let key = self.deposit(Kind::Broadcast(root), Part::Bytes(std::mem::take(bytes)));
        match Self::collect(&self.shared, key) {
            Outcome::Bytes(b) => *bytes = b,
            _ => unreachable!(),
        }
    }
    fn all_gather_bytes(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        let key = self.deposit(Kind::Gather, Part::Bytes(mine.to_vec()));
        match Self::collect(&self.shared, key) {
            Outcome::List(l) => l,
            _ => unreachable!(),
        }
    }
}

// ------------------------------------------------------------------------------- sharding

/// Rank `rank`'s part of a global batch: `global` cut into `size` contiguous parts whose
/// lengths differ by at most one (the first `len % size` parts are one longer). A part is empty
/// only when the batch has fewer examples than there are ranks.
pub fn shard<I>(global: &[I], rank: usize, size: usize) -> &[I] {
    assert!(rank < size, "shard: rank {rank} of {size}");
    let (q, r) = (global.len() / size, global.len() % size);
    let start = rank * q + rank.min(r);
    let len = q + usize::from(rank < r);
    &global[start..start + len]
}

// ------------------------------------------------------------------------------ the reducer

/// How the ranks combine their work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Average gradients every step (the single-process answer).
    Sync,
    /// Step locally; average parameters every `every` steps.
    LocalSgd {
        /// Steps between averagings (≥ 1).
        every: u64,
    },
}

/// Data-parallel settings for [`Trainer::data_parallel`](crate::trainer::Trainer::data_parallel).
#[derive(Clone)]
pub struct DataParallel {
    pub(crate) comm: Rc<dyn Collective>,
    pub(crate) bucket_bytes: usize,
    pub(crate) overlap: bool,
    pub(crate) mode: Mode,
    pub(crate) waited: Rc<std::cell::Cell<f64>>,
}

impl DataParallel {
    /// Synchronous data parallelism over `comm`, buckets of 1 MiB, overlapped with backward.
    pub fn new(comm: Rc<dyn Collective>) -> Self {
        DataParallel { comm, bucket_bytes: 1 << 20, overlap: true, mode: Mode::Sync, waited: Rc::default() }
    }
    /// The approximate size of a gradient message (a parameter is never split; ≥ 1).
    pub fn bucket_bytes(mut self, bytes: usize) -> Self {
        self.bucket_bytes = bytes.max(1);
        self
    }
    /// Whether buckets start during backward (`true`) or all after it.
    pub fn overlap(mut self, yes: bool) -> Self {
        self.overlap = yes;
        self
    }
    /// Synchronous gradients or local SGD.
    pub fn mode(mut self, mode: Mode) -> Self {
        if let Mode::LocalSgd { every } = mode {
            assert!(every >= 1, "local SGD: the averaging period must be at least 1 step");
        }
        self.mode = mode;
        self
    }
    /// The group.
    pub fn comm(&self) -> &Rc<dyn Collective> {
        &self.comm
    }
    /// Seconds training has spent blocked in communication so far: the loss all-reduce, the
    /// gradient exchange left after backward (buckets not hidden behind it), sparse all-gathers
    /// and local-SGD averaging. Shared by clones of this value, so read it after `fit`.
    pub fn waited_secs(&self) -> f64 {
        self.waited.get()
    }
    /// Adds the time since `since` to [`DataParallel::waited_secs`].
    pub(crate) fn add_wait(&self, since: std::time::Instant) {
        self.waited.set(self.waited.get() + since.elapsed().as_secs_f64());
    }
}

/// Little-endian bytes of a float slice (for broadcasts).
fn floats_to_bytes<T: Float>(v: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * 8);
    for x in v {
        out.extend_from_slice(&x.to_f64().to_le_bytes());
    }
    out
}

fn bytes_to_floats<T: Float>(b: &[u8]) -> Vec<T> {
    b.chunks_exact(8).map(|c| T::from_f64(f64::from_le_bytes(c.try_into().unwrap()))).collect()
}

/// Makes every rank's parameters equal to rank 0's (one broadcast of all of them).
pub fn broadcast_params<T: Float>(comm: &dyn Collective, params: &[Param<T>]) {
    if comm.size() == 1 {
        return;
    }
    let mut bytes = Vec::new();
    if comm.rank() == 0 {
        for p in params {
            bytes.extend(floats_to_bytes(&p.get().to_vec()));
        }
    }
    comm.broadcast_bytes(&mut bytes, 0);
    let total: usize = params.iter().map(|p| p.numel()).sum();
    assert_eq!(bytes.len(), total * 8, "broadcast_params: rank 0 has {} values, this rank's model {total}", bytes.len() / 8);
    let mut off = 0;
    for p in params {
        let n = p.numel();
        p.set_values(bytes_to_floats(&bytes[off * 8..(off + n) * 8]));
        off += n;
    }
}

/// The global loss of a step whose rank `r` has the mean `loss` over `weight ≥ 0` examples:
/// `(Σ w_r loss_r / Σ w_r, weight / Σ w_r)`, the weighted mean every rank agrees on and this
/// rank's share of the global gradient; `None` when no rank has an example. One all-reduce.
pub(crate) fn global_loss(comm: &dyn Collective, loss: f64, weight: f64) -> Option<(f64, f64)> {
    let local = if weight > 0.0 { weight * loss } else { 0.0 };
    let s: Vec<f64> = comm.all_reduce_sum(Buf::F64(vec![local, weight])).into_vec();
    (s[1] > 0.0).then(|| (s[0] / s[1], weight / s[1]))
}

/// Replaces every rank's parameters with their mean over the ranks (local SGD).
pub fn average_params<T: Float>(comm: &dyn Collective, params: &[Param<T>]) {
    let k = comm.size();
    if k == 1 {
        return;
    }
    let mut all = Vec::with_capacity(params.iter().map(|p| p.numel()).sum());
    for p in params {
        all.extend(p.get().to_vec());
    }
    let sum: Vec<T> = comm.all_reduce_sum(Buf::from_vec(all)).into_vec();
    let inv = 1.0 / k as f64;
    let mut off = 0;
    for p in params {
        let n = p.numel();
        p.set_values(sum[off..off + n].iter().map(|x| T::from_f64(x.to_f64() * inv)).collect());
        off += n;
    }
}

/// One message of dense gradients: parameters `params` (indices into the trainer's list),
/// `numel` values each, then one has-gradient flag per parameter.
struct Bucket {
    params: Vec<usize>,
    len: usize,
}

/// The state shared between the post-accumulate hooks of one step and the reducer.
struct StepState<T: Float> {
    comm: Rc<dyn Collective>,
    buckets: Rc<Vec<Bucket>>,
    bucket_of: Rc<Vec<Option<usize>>>,
    numels: Rc<Vec<usize>>,
    /// This rank's share of the global gradient, `w_r / Σ w`.
    scale: f64,
    grads: Vec<Option<chi_autodiff::Tensor<T>>>,
    ready: Vec<usize>,
    launched: usize,
    pending: Vec<Option<Box<dyn Pending>>>,
}

impl<T: Float> StepState<T> {
    /// Marks parameter `i`'s gradient complete and starts every bucket that can start.
    fn arrive(&mut self, i: usize, g: Option<chi_autodiff::Tensor<T>>) {
        let Some(b) = self.bucket_of[i] else { return };
        if self.grads[i].is_none() && g.is_some() {
            self.grads[i] = g;
            self.ready[b] += 1;
        }
        self.launch_ready(false);
    }

    /// Starts buckets in index order while the next one is complete (or, with `all`, every
    /// remaining bucket: after backward, a missing gradient is a parameter no gradient reached).
    fn launch_ready(&mut self, all: bool) {
        let buckets = self.buckets.clone();
        while self.launched < buckets.len() && (all || self.ready[self.launched] == buckets[self.launched].params.len()) {
            let b = &buckets[self.launched];
            let mut buf: Vec<T> = Vec::with_capacity(b.len + b.params.len());
            let s = T::from_f64(self.scale);
            for &i in &b.params {
                match &self.grads[i] {
                    Some(g) => buf.extend(g.data().iter().map(|&x| x * s)),
                    None => buf.extend(std::iter::repeat_n(T::ZERO, self.numels[i])),
                }
            }
            for &i in &b.params {
                buf.push(if self.grads[i].is_some() { T::ONE } else { T::ZERO });
            }
            self.pending[self.launched] = Some(self.comm.start_all_reduce_sum(Buf::from_vec(buf)));
            self.launched += 1;
        }
        // Give the transport a chance to move the buckets already started.
        for p in self.pending.iter_mut().flatten() {
            p.test();
        }
    }
}

/// The gradient exchange of [`Mode::Sync`]: buckets built once for a parameter list, hooks
/// registered for each step.
pub(crate) struct Reducer<T: Float> {
    dp: DataParallel,
    buckets: Rc<Vec<Bucket>>,
    bucket_of: Rc<Vec<Option<usize>>>,
    numels: Rc<Vec<usize>>,
    sparse: Vec<bool>,
    state: Option<Rc<RefCell<StepState<T>>>>,
    hooks: Vec<HookHandle<T>>,
}

impl<T: Float> Reducer<T> {
    pub(crate) fn new(dp: DataParallel, params: &[Param<T>]) -> Self {
        let sparse: Vec<bool> = params.iter().map(|p| p.get().is_sparse_grad()).collect();
        let numels: Vec<usize> = params.iter().map(|p| p.numel()).collect();
        let elem = std::mem::size_of::<T>();
        let mut buckets: Vec<Bucket> = Vec::new();
        let mut bucket_of = vec![None; params.len()];
        let mut cur = Bucket { params: Vec::new(), len: 0 };
        for i in (0..params.len()).rev() {
            if sparse[i] {
                continue;
            }
            if !cur.params.is_empty() && (cur.len + numels[i]) * elem > dp.bucket_bytes {
                buckets.push(std::mem::replace(&mut cur, Bucket { params: Vec::new(), len: 0 }));
            }
            bucket_of[i] = Some(buckets.len());
            cur.params.push(i);
            cur.len += numels[i];
        }
        if !cur.params.is_empty() {
            buckets.push(cur);
        }
        Reducer { dp, buckets: Rc::new(buckets), bucket_of: Rc::new(bucket_of), numels: Rc::new(numels), sparse, state: None, hooks: Vec::new() }
    }

    /// The number of dense messages per step.
    #[cfg(test)]
    pub(crate) fn n_buckets(&self) -> usize {
        self.buckets.len()
    }

    /// Before backward: this rank's share `scale` of the global gradient; registers the hooks
    /// that start buckets during backward.
    pub(crate) fn begin(&mut self, params: &[Param<T>], scale: f64) {
        let nb = self.buckets.len();
        let state = Rc::new(RefCell::new(StepState {
            comm: self.dp.comm.clone(),
            buckets: self.buckets.clone(),
            bucket_of: self.bucket_of.clone(),
            numels: self.numels.clone(),
            scale,
            grads: vec![None; params.len()],
            ready: vec![0; nb],
            launched: 0,
            pending: (0..nb).map(|_| None).collect(),
        }));
        if self.dp.overlap {
            for (i, p) in params.iter().enumerate() {
                let t = p.get();
                if self.sparse[i] || !t.is_tracked() || !t.is_leaf() {
                    continue;
                }
                let st = state.clone();
                self.hooks.push(t.register_post_accumulate_grad_hook(move |t| st.borrow_mut().arrive(i, t.grad())));
            }
        }
        self.state = Some(state);
    }

    /// After backward: starts what is left, waits, and returns the averaged gradients (frozen
    /// parameters `None`, as [`Grads::collect`]).
    pub(crate) fn finish(&mut self, params: &[Param<T>]) -> Grads<T> {
        let t0 = std::time::Instant::now();
        let g = self.finish_inner(params);
        self.dp.add_wait(t0);
        g
    }

    fn finish_inner(&mut self, params: &[Param<T>]) -> Grads<T> {
        for h in self.hooks.drain(..) {
            h.remove();
        }
        let state = self.state.take().expect("Reducer::finish without begin");
        let mut st = state.borrow_mut();
        // Gradients whose hooks did not run (overlap off, or not leaves of this pass).
        for (i, p) in params.iter().enumerate() {
            if self.bucket_of[i].is_some() && st.grads[i].is_none() && !p.is_frozen() {
                if let Some(g) = p.get().grad() {
                    st.grads[i] = Some(g);
                    let b = self.bucket_of[i].unwrap();
                    st.ready[b] += 1;
                }
            }
        }
        st.launch_ready(true);
        let mut items: Vec<Option<Grad<T>>> = vec![None; params.len()];
        let pending: Vec<_> = st.pending.iter_mut().map(|p| p.take().expect("every bucket started")).collect();
        for (b, p) in self.buckets.iter().zip(pending) {
            let sum: Vec<T> = p.wait().into_vec();
            let mut off = 0;
            for (k, &i) in b.params.iter().enumerate() {
                let n = self.numels[i];
                if sum[b.len + k] > T::ZERO && !params[i].is_frozen() {
                    items[i] = Some(Grad::Dense(sum[off..off + n].to_vec()));
                }
                off += n;
            }
        }
        let scale = st.scale;
        drop(st);
        for (i, p) in params.iter().enumerate() {
            if self.sparse[i] {
                items[i] = self.exchange_sparse(p, scale);
            }
        }
        Grads { items }
    }

    /// All-gathers a row-sparse gradient (`ids`, scaled rows) and merges the ranks' rows.
    fn exchange_sparse(&self, p: &Param<T>, scale: f64) -> Option<Grad<T>> {
        let local = Grads::collect(std::slice::from_ref(p)).items.pop().flatten();
        // tag 0: none, 1: rows, 2: dense; then u64 dim/len fields and f64 values.
        let mut msg = Vec::new();
        match &local {
            None => msg.push(0u8),
            Some(Grad::Rows { ids, values, dim }) => {
                msg.push(1);
                msg.extend((*dim as u64).to_le_bytes());
                msg.extend((ids.len() as u64).to_le_bytes());
                for &id in ids {
                    msg.extend((id as u64).to_le_bytes());
                }
                for v in values {
                    msg.extend((v.to_f64() * scale).to_le_bytes());
                }
            }
            Some(Grad::Dense(v)) => {
                msg.push(2);
                for x in v {
                    msg.extend((x.to_f64() * scale).to_le_bytes());
                }
            }
        }
        let all = self.dp.comm.all_gather_bytes(&msg);
        let numel = p.numel();
        let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap()) as usize;
        let f64_at = |b: &[u8], o: usize| f64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        if all.iter().any(|m| m[0] == 2) {
            let mut d = vec![0.0f64; numel];
            for m in &all {
                match m[0] {
                    1 => {
                        let (dim, n) = (u64_at(m, 1), u64_at(m, 9));
                        for r in 0..n {
                            let id = u64_at(m, 17 + 8 * r);
                            for j in 0..dim {
                                d[id * dim + j] += f64_at(m, 17 + 8 * n + 8 * (r * dim + j));
                            }
                        }
                    }
                    2 => (0..numel).for_each(|j| d[j] += f64_at(m, 1 + 8 * j)),
                    _ => {}
                }
            }
            return Some(Grad::Dense(d.into_iter().map(T::from_f64).collect()));
        }
        let mut rows: std::collections::BTreeMap<usize, Vec<f64>> = std::collections::BTreeMap::new();
        let mut dim = 0;
        for m in all.iter().filter(|m| m[0] == 1) {
            let n = u64_at(m, 9);
            dim = u64_at(m, 1);
            for r in 0..n {
                let id = u64_at(m, 17 + 8 * r);
                let row = rows.entry(id).or_insert_with(|| vec![0.0; dim]);
                for (j, x) in row.iter_mut().enumerate() {
                    *x += f64_at(m, 17 + 8 * n + 8 * (r * dim + j));
                }
            }
        }
        if rows.is_empty() {
            return None;
        }
        let ids: Vec<usize> = rows.keys().copied().collect();
        let values: Vec<T> = rows.values().flatten().map(|&x| T::from_f64(x)).collect();
        Some(Grad::Rows { ids, values, dim })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_the_batch_in_order_with_sizes_differing_by_at_most_one() {
        let g: Vec<usize> = (0..11).collect();
        let parts: Vec<&[usize]> = (0..3).map(|r| shard(&g, r, 3)).collect();
        assert_eq!(parts, vec![&[0, 1, 2, 3][..], &[4, 5, 6, 7][..], &[8, 9, 10][..]]);
        let small = [7usize, 8];
        assert_eq!(shard(&small, 2, 3), &[] as &[usize]);
        assert_eq!(shard(&small, 0, 1), &small[..]);
    }

    #[test]
    fn thread_group_collectives() {
        let members = ThreadGroup::new(3);
        let handles: Vec<_> = members
            .into_iter()
            .map(|m| {
                std::thread::spawn(move || {
                    let r = m.rank() as f64;
                    let p1 = m.start_all_reduce_sum(Buf::F64(vec![r, 1.0]));
                    let p2 = m.start_all_reduce_sum(Buf::F32(vec![r as f32 * 2.0]));
                    let s2: Vec<f32> = p2.wait().into_vec();
                    let s1: Vec<f64> = p1.wait().into_vec();
                    let mut b = if m.rank() == 1 { vec![9u8, 8] } else { vec![] };
                    m.broadcast_bytes(&mut b, 1);
                    let all = m.all_gather_bytes(&[m.rank() as u8; 2]);
                    (s1, s2, b, all)
                })
            })
            .collect();
        for h in handles {
            let (s1, s2, b, all) = h.join().unwrap();
            assert_eq!(s1, vec![3.0, 3.0]);
            assert_eq!(s2, vec![6.0]);
            assert_eq!(b, vec![9, 8]);
            assert_eq!(all, vec![vec![0, 0], vec![1, 1], vec![2, 2]]);
        }
    }

    #[test]
    fn buckets_follow_reverse_parameter_order_and_the_size_bound() {
        let mut store = crate::params::ParamStore::<f64>::new();
        for (i, n) in [10usize, 300, 5, 200].iter().enumerate() {
            store.add(&format!("p{i}"), "g", chi_autodiff::Tensor::zeros(&[*n]));
        }
        let dp = DataParallel::new(Rc::new(Solo)).bucket_bytes(8 * 250);
        let r = Reducer::new(dp, store.params());
        // p3 (200) | p2 (5) + ... p1 would overflow -> p1 (300) alone | p0
        assert_eq!(r.buckets.iter().map(|b| b.params.clone()).collect::<Vec<_>>(), vec![vec![3, 2], vec![1], vec![0]]);
        assert_eq!(r.n_buckets(), 3);
    }
}
