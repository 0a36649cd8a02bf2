//! Allocator calls per recorded op on the `chi bench tape` workload (a scalar chain
//! `y ← tanh(1.01·y + 0.1)`, forward and backward), counted by a global allocator. After the
//! first chains have filled the per-thread pools ([`chi_autodiff::pool`]) and the backward
//! pass's lists, a chain must not call the allocator at all: a regression (a `Vec`, `Box` or
//! `Rc` made per op or per node) fails here instead of showing up as a slower benchmark.
//! See `autodiff/PROFILE.md` for the profile behind the count.

use chi_autodiff::{tape_len, Tensor};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
/// `alloc`, `alloc_zeroed` and `realloc` calls (every way to get a block).
static CALLS: AtomicUsize = AtomicUsize::new(0);
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        CALLS.fetch_add(1, Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        CALLS.fetch_add(1, Ordering::Relaxed);
        System.alloc_zeroed(l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        CALLS.fetch_add(1, Ordering::Relaxed);
        System.realloc(p, l, new)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
}
#[global_allocator]
static A: Counting = Counting;

/// The benchmark's chain (`models/chi/src/bench/tape.rs`), on a given leaf.
fn chain(x: &Tensor<f64>, steps: usize) -> f64 {
    let mut y = x.clone();
    for _ in 0..steps {
        y = y.mul_scalar(1.01).add_scalar(0.1).tanh();
    }
    y.backward();
    let g = x.grad().map(|g| g.item()).unwrap_or(0.0);
    x.zero_grad();
    g
}

/// Allowed allocator calls per chain after warm-up: none (measured: 0, see PROFILE.md). The
/// seed, the leaf's gradient and the backward lists all come from pools or kept lists.
const MAX_ALLOCS_PER_CHAIN: usize = 0;

#[test]
fn scalar_chain_allocates_nothing_per_op_after_warm_up() {
    // One test in this file: the counter sees every thread, and no other test may run beside it.
    let steps = 1000;
    let x = Tensor::<f64>::scalar(0.5).requires_grad();
    let mut sink = 0.0;
    let cold = CALLS.load(Ordering::Relaxed);
    sink += chain(&x, steps);
    let cold = CALLS.load(Ordering::Relaxed) - cold;
    eprintln!("first chain (empty pools): {cold} allocator calls for {} ops", 3 * steps);
    for _ in 0..2 {
        sink += chain(&x, steps);
    }
    let before = CALLS.load(Ordering::Relaxed);
    let chains = 20;
    for _ in 0..chains {
        sink += chain(&x, steps);
    }
    let calls = CALLS.load(Ordering::Relaxed) - before;
    assert!(sink.is_finite());
    assert_eq!(tape_len::<f64>(), 0);
    let per_op = calls as f64 / (chains * 3 * steps) as f64;
    eprintln!("allocator calls: {calls} in {chains} chains of {} ops = {per_op:.5} per op", 3 * steps);
    assert!(calls <= MAX_ALLOCS_PER_CHAIN * chains, "{calls} allocator calls in {chains} chains of {} ops ({per_op:.4} per op)", 3 * steps);
}
