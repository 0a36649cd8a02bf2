//! Memory stays flat: a 10,000-step training loop, and 10,000 forward passes *without*
//! `no_grad` whose outputs are dropped (a graph lives as long as its tensors). Live heap bytes
//! do not grow after warm-up (thread-local scratch is allocated once, in the first steps). A
//! counting global allocator measures it.

use chi_autodiff::{tape_len, Rng, Tensor};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Mutex;

struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        System.dealloc(p, l)
    }
}
#[global_allocator]
static A: Counting = Counting;

/// The allocator counts every thread: the tests of this file run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn ten_thousand_steps_in_flat_memory() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut rng = Rng::new(1);
    let mut w = Tensor::<f32>::randn(&[8, 4], &mut rng).mul_scalar(0.1).requires_grad();
    let x = Tensor::<f32>::randn(&[16, 8], &mut rng);
    let y = Tensor::<f32>::randn(&[16, 4], &mut rng);
    let mut live_at_1000 = 0;
    for step in 0..10_000 {
        let loss = x.matmul(&w).tanh().sub(&y).square().mean();
        loss.backward();
        let g = w.grad().unwrap();
        w.update(|v| v.iter_mut().zip(g.data()).for_each(|(a, b)| *a -= 0.01 * b));
        w.zero_grad();
        assert_eq!(tape_len::<f32>(), 0);
        if step == 1000 {
            live_at_1000 = LIVE.load(Ordering::Relaxed);
        }
    }
    let live_end = LIVE.load(Ordering::Relaxed);
    // The counter is process-wide: libtest's own thread may record another test's result
    // (about a kilobyte) meanwhile. A leak of even one small node per step would be 9,000 nodes,
    // far above this bound.
    assert!(live_end.saturating_sub(live_at_1000) < 64 * 1024, "live heap grew from {live_at_1000} to {live_end} bytes over 9,000 steps");
}

/// Inference with parameters that require grad, without `no_grad`: every step records a graph
/// and drops it with its output. Nothing accumulates.
#[test]
fn ten_thousand_forward_passes_without_no_grad_in_flat_memory() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut rng = Rng::new(2);
    let w1 = Tensor::<f32>::randn(&[8, 16], &mut rng).mul_scalar(0.3).requires_grad();
    let w2 = Tensor::<f32>::randn(&[16, 4], &mut rng).mul_scalar(0.3).requires_grad();
    let x = Tensor::<f32>::randn(&[32, 8], &mut rng);
    let base = tape_len::<f32>();
    let mut live_at_1000 = 0;
    let mut sink = 0.0f32;
    for step in 0..10_000 {
        let h = x.matmul(&w1).tanh(); // tanh saves its output: a node that refers to itself
        let out = h.matmul(&w2).softmax(1);
        sink += out.data()[0];
        assert_eq!(tape_len::<f32>(), base + 4);
        drop(out);
        drop(h);
        assert_eq!(tape_len::<f32>(), base);
        if step == 1000 {
            live_at_1000 = LIVE.load(Ordering::Relaxed);
        }
    }
    let live_end = LIVE.load(Ordering::Relaxed);
    assert!(sink.is_finite());
    // The counter is process-wide: libtest's own thread may record another test's result
    // (about a kilobyte) meanwhile. A leak of even one small node per step would be 9,000 nodes,
    // far above this bound.
    assert!(live_end.saturating_sub(live_at_1000) < 64 * 1024, "live heap grew from {live_at_1000} to {live_end} bytes over 9,000 steps");
}

/// The benchmark workload of `chi bench tape` (a scalar chain, forward and backward), whose
/// blocks all come from the per-thread pools after the first chain: live heap bytes do not
/// grow, and the idle part stays within the pools' limits.
#[test]
fn scalar_chains_with_the_pool_in_flat_memory() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let x = Tensor::<f64>::scalar(0.5).requires_grad();
    let mut live_after_warmup = 0;
    for rep in 0..200 {
        let mut y = x.clone();
        for _ in 0..1000 {
            y = y.mul_scalar(1.01).add_scalar(0.1).tanh();
        }
        y.backward();
        drop(y);
        x.zero_grad();
        assert_eq!(tape_len::<f64>(), 0);
        if rep == 10 {
            live_after_warmup = LIVE.load(Ordering::Relaxed);
        }
    }
    let live_end = LIVE.load(Ordering::Relaxed);
    assert!(live_end - live_after_warmup < 1024, "live heap grew from {live_after_warmup} to {live_end} bytes");
    let (_, bytes, vars) = chi_autodiff::pool::pooled::<f64>();
    assert!(bytes <= chi_autodiff::pool::MAX_POOLED_BYTES && vars <= chi_autodiff::pool::MAX_POOLED_VARS);
    assert!(vars >= 3000, "the chain's 3000 records are kept for the next chain, not freed ({vars})");
}
