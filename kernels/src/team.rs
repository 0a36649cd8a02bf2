//! Low-latency fork-join for small parallel work: the calling thread and one spinning partner
//! thread share a list of jobs.
//!
//! # Why
//!
//! Handing a job to a sleeping rayon worker costs the caller a queue push and a futex wake, the
//! worker (on a VM, a halted vCPU) tens of µs to start, and the caller, which sleeps on a latch
//! meanwhile, another wake-up at the end. On the 2-vCPU Zen 3 VM that was ~15–20 µs of a ~45 µs
//! 128³ product, so work between ~10 µs and ~1 ms gained little or nothing from a second thread.
//! Here the caller computes a share itself, and the partner waits for the next job by spinning
//! for [`SPIN`] after its last one before it parks, so back-to-back splits (the products and
//! elementwise passes of one training step) find it awake.
//!
//! # How
//!
//! [`for_each`] puts the jobs (an iterator) behind a mutex; every participating thread takes the
//! next job until none is left (dynamic balancing: if the partner is late or its core busy, the
//! caller takes its jobs too). With a budget of exactly two threads it *claims* the process-wide
//! partner (a compare-and-swap on its state), posts the work, runs its own share, then either
//! reclaims the post (the partner never started it) or waits for the partner to finish (spinning
//! for [`SPIN`], then parking). With more threads, or when the partner is busy with another
//! caller, the same drain runs on rayon instead (`rayon::scope`, the thread budget − 1 spawned
//! drainers), so nothing ever blocks on another caller's work.
//!
//! # The spin bound
//!
//! A wake-up costs ~20–30 µs on the VM; spinning costs CPU time of a core that would otherwise
//! be idle (chi's callers use the partner only when the pool has a second thread for it). The
//! gaps between splits inside one training step are a few µs to a few hundred µs (sequential
//! elementwise work, the tape's bookkeeping), so [`SPIN`] = 200 µs covers them while an idle
//! process stops burning the core within 0.2 ms. The waiting caller uses the same bound: it
//! normally waits for a partner share of about its own size.
//!
//! # Invariants
//!
//! * A caller never returns or unwinds out of [`for_each`] while the partner may still touch the
//!   borrowed work: the partner's last access to it happens before it publishes `DONE`, and the
//!   caller leaves only after reclaiming an untaken post or seeing `DONE` (a drop guard, so also
//!   when the caller's own share panics).
//! * At most `threads` threads (capped at the current rayon pool's size) run jobs of one call,
//!   and with one thread, or from inside a share ([`in_share`]), jobs run in order on the calling
//!   thread: nested calls never split, so they cannot deadlock or oversubscribe.
//! * A panic in any job propagates to the caller after every participant has stopped; the
//!   partner survives it and stays usable.
//! * Which thread runs a job never changes its result: callers give jobs fixed boundaries.
//! * The partner runs each job with the caller's MXCSR (FTZ/DAZ, rounding), as rayon workers do
//!   after [`crate::fpmode::set_flush_denormals`].

use std::any::Any;
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::*};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// How long the partner spins for a new job after its last one (and a caller for the partner's
/// share) before parking. See the module docs for the choice; `benches/benches/team.rs` measures
/// the hand-off with and without a parked partner.
pub const SPIN: Duration = Duration::from_micros(200);

// States of the partner's hand-off slot.
/// No job; a caller may claim it.
const IDLE: u32 = 0;
/// A caller owns the slot and is writing (or removing) its job.
const CLAIMED: u32 = 1;
/// A job is posted; the partner may take it.
const POSTED: u32 = 2;
/// The partner is running the posted job.
const TAKEN: u32 = 3;
/// The partner has finished the job and no longer touches it.
const DONE: u32 = 4;

/// A posted job: the drain closure with its lifetime erased (see [`Partner::run_with`]) and the
/// caller's MXCSR.
struct Job {
    work: &'static (dyn Fn() + Sync),
    csr: u32,
}

struct Partner {
    state: AtomicU32,
    job: Mutex<Option<Job>>,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// Set by the partner before it parks (Dekker-style with `state`, both `SeqCst`).
    sleeping: AtomicBool,
    /// Set by a caller before it parks waiting for `DONE`; `caller` then holds its handle.
    caller_waiting: AtomicBool,
    caller: Mutex<Option<Thread>>,
    thread: OnceLock<Thread>,
    /// Spin bound in ns (settable for measurement, see [`set_spin`]).
    spin_ns: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while these locks are held; a poisoned lock still holds consistent data.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

thread_local! {
    /// Whether this thread is running a share of a [`for_each`] (so nested calls run inline).
    static IN_SHARE: Cell<bool> = const { Cell::new(false) };
    /// Jobs this thread posted to the partner, and splits it sent to rayon (for tests).
    static COUNTS: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// Whether the calling thread is inside a share of a [`for_each`] (partner or rayon): kernels
/// called from there run single-threaded.
pub fn in_share() -> bool {
    IN_SHARE.with(Cell::get)
}

/// Marks this thread as in a share until dropped (restoring the previous value, also on unwind).
struct ShareGuard(bool);
impl ShareGuard {
    fn enter() -> Self {
        ShareGuard(IN_SHARE.with(|s| s.replace(true)))
    }
}
impl Drop for ShareGuard {
    fn drop(&mut self) {
        IN_SHARE.with(|s| s.set(self.0));
    }
}

/// Counts of parallel splits made by the calling thread, for tests: `(posted to the partner,
/// sent to rayon)`.
#[doc(hidden)]
pub fn split_counts() -> (usize, usize) {
    COUNTS.with(Cell::get)
}

/// Sets the partner's spin bound (default [`SPIN`]); for measuring the choice only.
#[doc(hidden)]
pub fn set_spin(d: Duration) {
    if let Some(p) = partner() {
        p.spin_ns.store(d.as_nanos().min(u64::MAX as u128) as u64, Relaxed);
    }
}

/// The process-wide partner, started on first use; `None` if the thread could not be started.
fn partner() -> Option<&'static Partner> {
    static P: OnceLock<Option<&'static Partner>> = OnceLock::new();
    *P.get_or_init(|| {
        let p: &'static Partner = Box::leak(Box::new(Partner {
            state: AtomicU32::new(IDLE),
            job: Mutex::new(None),
            panic: Mutex::new(None),
            sleeping: AtomicBool::new(false),
            caller_waiting: AtomicBool::new(false),
            caller: Mutex::new(None),
            thread: OnceLock::new(),
            spin_ns: AtomicU64::new(SPIN.as_nanos() as u64),
        }));
        let handle = thread::Builder::new().name("chi-partner".into()).spawn(move || p.serve()).ok()?;
        let _ = p.thread.set(handle.thread().clone());
        Some(p)
    })
}

/// Busy-waits (PAUSE only) for at most this long before [`spin_until`] yields between checks.
const PURE_SPIN_NS: u64 = 5_000;

/// Waits until `done()` or the bound passes; true if done. The first [`PURE_SPIN_NS`] spin on
/// PAUSE (checking the clock every 64 rounds); after that each round yields the CPU, because
/// the thread being waited for may be queued on this very CPU (the scheduler often wakes a
/// parked thread onto its waker's core), and pure spinning would hold it off until preemption.
/// Measured (`benches/benches/team.rs`, the split after a pause): without the yield, two 20 µs
/// jobs took 151 µs.
#[inline]
fn spin_until(bound_ns: u64, done: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    let mut i = 0u32;
    loop {
        if done() {
            return true;
        }
        i = i.wrapping_add(1);
        if i % 64 != 0 {
            std::hint::spin_loop();
            continue;
        }
        let t = start.elapsed().as_nanos() as u64;
        if t >= bound_ns {
            return false;
        }
        if t >= PURE_SPIN_NS {
            thread::yield_now();
            i = i.wrapping_add(63); // check the clock after every yield
        }
    }
}

impl Partner {
    /// The partner thread's loop: wait for a post, run it, publish `DONE`.
    fn serve(&self) {
        loop {
            self.wait_posted();
            if self.state.compare_exchange(POSTED, TAKEN, Acquire, Relaxed).is_err() {
                continue; // the caller reclaimed it
            }
            if let Some(job) = lock(&self.job).take() {
                crate::fpmode::set_csr(job.csr);
                let _share = ShareGuard::enter();
                if let Err(p) = panic::catch_unwind(AssertUnwindSafe(job.work)) {
                    *lock(&self.panic) = Some(p);
                }
            }
            // The job's borrows are not touched after this store.
            self.state.store(DONE, SeqCst);
            if self.caller_waiting.load(SeqCst) {
                if let Some(t) = lock(&self.caller).as_ref() {
                    t.unpark();
                }
            }
        }
    }

    fn wait_posted(&self) {
        let spin = self.spin_ns.load(Relaxed);
        if spin_until(spin, || self.state.load(Acquire) == POSTED) {
            return;
        }
        loop {
            self.sleeping.store(true, SeqCst);
            if self.state.load(SeqCst) == POSTED {
                self.sleeping.store(false, Relaxed);
                return;
            }
            thread::park();
            self.sleeping.store(false, SeqCst);
            if self.state.load(Acquire) == POSTED {
                return;
            }
        }
    }

    /// Claims the partner for one call, or `None` if another caller holds it.
    fn claim(&'static self) -> Option<&'static Self> {
        self.state.compare_exchange(IDLE, CLAIMED, Acquire, Relaxed).ok().map(|_| self)
    }

    /// Runs `work` on the calling thread and on the partner (claimed by [`Self::claim`]),
    /// returning when both have finished; re-raises a panic of the partner's share.
    fn run_with(&self, work: &(dyn Fn() + Sync)) {
        // SAFETY: only the lifetime is changed. The partner calls `work` only between taking the
        // post (state TAKEN) and publishing DONE, and `Finish` (below, also run on unwind) does
        // not let this function return before it has either reclaimed the untaken post or seen
        // DONE; so `work` and everything it borrows outlive every use by the partner.
        let erased: &'static (dyn Fn() + Sync) = unsafe { std::mem::transmute::<&(dyn Fn() + Sync), &'static (dyn Fn() + Sync)>(work) };
        *lock(&self.job) = Some(Job { work: erased, csr: crate::fpmode::csr() });
        COUNTS.with(|c| c.set((c.get().0 + 1, c.get().1)));
        self.state.store(POSTED, SeqCst);
        if self.sleeping.load(SeqCst) {
            if let Some(t) = self.thread.get() {
                t.unpark();
            }
        }
        let mut finish = Finish { p: self, done: false };
        work();
        if let Some(p) = finish.complete() {
            panic::resume_unwind(p);
        }
    }

    /// Ends the caller's use of the partner: reclaim the post or wait for DONE; then IDLE.
    fn finish(&self) -> Option<Box<dyn Any + Send>> {
        if self.state.compare_exchange(POSTED, CLAIMED, Acquire, Acquire).is_ok() {
            lock(&self.job).take();
            self.state.store(IDLE, Release);
            return None;
        }
        let spin = self.spin_ns.load(Relaxed);
        if !spin_until(spin, || self.state.load(Acquire) == DONE) {
            *lock(&self.caller) = Some(thread::current());
            self.caller_waiting.store(true, SeqCst);
            while self.state.load(SeqCst) != DONE {
                thread::park();
            }
            self.caller_waiting.store(false, SeqCst);
            lock(&self.caller).take();
        }
        let p = lock(&self.panic).take();
        self.state.store(IDLE, Release);
        p
    }
}

/// Finishes the caller's use of the partner exactly once, on return or on unwind.
struct Finish<'a> {
    p: &'a Partner,
    done: bool,
}
impl Finish<'_> {
    fn complete(&mut self) -> Option<Box<dyn Any + Send>> {
        self.done = true;
        self.p.finish()
    }
}
impl Drop for Finish<'_> {
    fn drop(&mut self) {
        if !self.done {
            // Unwinding from the caller's share: its own panic wins; the partner's is dropped.
            drop(self.p.finish());
        }
    }
}

/// Runs `f` on every job of `jobs` using up to `threads` threads (capped at the current rayon
/// pool's size), the calling thread included, and returns when all jobs are done.
///
/// With a budget of two threads the second one is the low-latency partner (see the module
/// docs) when it is free, else a rayon worker. With one thread, one job, or when called from
/// inside another call's job, the jobs run in order on the calling thread. Jobs may run in any
/// order and on any participating thread, so each must own its part of the output. A panic in
/// a job is re-raised here after all participants have stopped.
///
/// ```
/// use chi_kernels::team::for_each;
/// let mut out = vec![0u32; 1000];
/// for_each(2, out.chunks_mut(100).enumerate(), |(i, c)| c.iter_mut().for_each(|v| *v = i as u32));
/// assert_eq!(out[999], 9);
/// ```
pub fn for_each<I, F>(threads: usize, jobs: I, f: F)
where
    I: Iterator + Send,
    I::Item: Send,
    F: Fn(I::Item) + Sync,
{
    let count = jobs.size_hint().1.unwrap_or(usize::MAX);
    // The pool is consulted only when a split is possible (so that sequential callers never
    // create rayon's global pool).
    let threads = if threads > 1 && count > 1 && !in_share() { threads.min(count).min(rayon::current_num_threads()) } else { 1 };
    if threads <= 1 {
        jobs.for_each(f);
        return;
    }
    let queue = Mutex::new(jobs);
    let stop = AtomicBool::new(false);
    let drain = || {
        let _share = ShareGuard::enter();
        // Stop taking jobs once any participant panicked (its result is discarded anyway).
        let _stop_on_panic = StopOnPanic(&stop);
        while !stop.load(Relaxed) {
            let Some(job) = lock(&queue).next() else { break };
            f(job);
        }
    };
    if threads == 2 {
        if let Some(p) = partner().and_then(Partner::claim) {
            return p.run_with(&drain);
        }
    }
    COUNTS.with(|c| c.set((c.get().0, c.get().1 + 1)));
    rayon::scope(|s| {
        for _ in 1..threads {
            s.spawn(|_| drain());
        }
        drain();
    });
}

struct StopOnPanic<'a>(&'a AtomicBool);
impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if thread::panicking() {
            self.0.store(true, Relaxed);
        }
    }
}
