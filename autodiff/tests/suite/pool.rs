//! The per-thread pools of value buffers and autodiff records (`chi_autodiff::pool`): a
//! recycled block never aliases a live tensor, results do not depend on whether blocks were
//! recycled, and tensors dropped while a thread exits are freed without panicking.

use chi_autodiff::{pool, tape_len, Rng, Tensor};
use std::cell::RefCell;
use std::collections::HashSet;

/// `y = 2x + 1`, `z = y·y`, `loss = Σ z`, computed with chi. `z` and `∂loss/∂x = 4y` are each
/// one correctly rounded operation away from exact values (or exact: powers of two), so chi's
/// must equal the plain-Rust reference bit for bit.
fn step(x: &Tensor<f64>) -> (Tensor<f64>, Tensor<f64>) {
    let y = x.mul_scalar(2.0).add_scalar(1.0);
    let z = y.mul(&y);
    let loss = z.sum();
    (z, loss)
}

#[test]
fn recycled_blocks_never_alias_live_tensors() {
    let mut rng = Rng::new(11);
    // Tensors kept alive across iterations, with a private copy of the values they must keep.
    let mut live: Vec<(Tensor<f64>, Vec<f64>)> = Vec::new();
    let mut reused_any = false;
    for it in 0..4000 {
        // Sizes across several capacity classes, including scalars.
        let n = [1, 1, 2, 3, 5, 8, 17, 64][rng.below(8)];
        let xs: Vec<f64> = (0..n).map(|_| rng.uniform(-2.0, 2.0)).collect();
        let x = Tensor::from_vec(xs.clone(), &[n]).requires_grad();
        let before = pool::pooled::<f64>();
        let (z, loss) = step(&x);
        let after = pool::pooled::<f64>();
        reused_any |= after.0 < before.0 || after.2 < before.2;
        // Values equal a fresh computation.
        let zs: Vec<f64> = xs.iter().map(|v| (2.0 * v + 1.0) * (2.0 * v + 1.0)).collect();
        assert_eq!(z.data(), &zs[..], "iteration {it}");
        let s: f64 = zs.iter().sum();
        // (The kernel sums in another order: equal up to rounding.)
        assert!((loss.item() - s).abs() <= 1e-12 * s.abs(), "iteration {it}");
        loss.backward();
        let gs: Vec<f64> = xs.iter().map(|v| 4.0 * (2.0 * v + 1.0)).collect();
        assert_eq!(x.grad().unwrap().data(), &gs[..], "iteration {it}");
        // Keep some outputs (and some gradients) alive for a while, drop others at random.
        if rng.below(3) == 0 {
            live.push((z.detach(), zs));
            live.push((x.grad().unwrap(), gs));
        }
        if live.len() > 64 {
            let k = rng.below(live.len());
            live.swap_remove(k);
        }
        // Every kept tensor still holds its own values...
        for (t, v) in &live {
            assert_eq!(t.data(), &v[..], "a kept tensor changed at iteration {it}");
        }
        // ...in its own storage: no two kept tensors share a buffer.
        let ptrs: HashSet<*const f64> = live.iter().map(|(t, _)| t.data().as_ptr()).collect();
        assert_eq!(ptrs.len(), live.len(), "two live tensors share storage at iteration {it}");
    }
    assert!(reused_any, "the loop never took a block from the pool, so it tested nothing");
    assert_eq!(tape_len::<f64>(), 0);
}

/// A graph kept alive while its blocks' neighbours are recycled still differentiates correctly.
#[test]
fn a_kept_graph_survives_recycling_around_it() {
    let x = Tensor::<f64>::from_vec(vec![0.25, -0.5], &[2]).requires_grad();
    let (_, kept) = step(&x);
    for _ in 0..1000 {
        let (_, l) = step(&x);
        l.backward();
    }
    x.zero_grad();
    kept.backward();
    let g: Vec<f64> = [0.25f64, -0.5].iter().map(|v| 4.0 * (2.0 * v + 1.0)).collect();
    assert_eq!(x.grad().unwrap().data(), &g[..]);
}

/// Idle blocks are bounded by the pool's limits and can be handed back to the allocator.
#[test]
fn pool_is_bounded_and_releasable() {
    let x = Tensor::<f64>::scalar(0.5).requires_grad();
    for _ in 0..3 {
        let mut y = x.clone();
        for _ in 0..20_000 {
            y = y.mul_scalar(1.0).tanh();
        }
        y.backward();
    }
    let (_, bytes, vars) = pool::pooled::<f64>();
    assert!(bytes <= pool::MAX_POOLED_BYTES, "{bytes} idle bytes");
    assert!(vars <= pool::MAX_POOLED_VARS, "{vars} idle records");
    assert!(vars > 0, "a finished chain leaves idle records behind");
    pool::release_pooled::<f64>();
    assert_eq!(pool::pooled::<f64>(), (0, 0, 0));
    // Still works after releasing.
    let y = x.mul_scalar(3.0).sum();
    y.backward();
}

thread_local! {
    static KEPT: RefCell<Vec<Tensor<f32>>> = const { RefCell::new(Vec::new()) };
}

/// Tensors owned by another thread-local are dropped during thread exit, possibly after chi's
/// own per-thread state is gone: they must be freed, not panic.
#[test]
fn tensors_dropped_at_thread_exit_are_freed() {
    std::thread::spawn(|| {
        let w = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]).requires_grad();
        let y = w.tanh().mul_scalar(2.0);
        let z = w.exp();
        KEPT.with(|k| k.borrow_mut().extend([w, y, z]));
        // Touch chi's state after the user's thread-local was created, so it is destroyed first
        // on platforms that destroy in reverse order of first use.
        let _ = Tensor::<f32>::scalar(1.0).requires_grad().mul_scalar(2.0);
    })
    .join()
    .expect("thread exit with live tensors in a thread-local");
}
