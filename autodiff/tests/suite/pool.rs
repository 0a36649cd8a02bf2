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

/// Op outputs take recycled buffers without clearing them first (`for_overwrite`): every value
/// of the output must still be written by the op. The pool is filled with buffers of NaN of every
/// length used below, then each overwriting op (unary, scalar, same-shape and broadcast binary,
/// the unary backward rule) runs at those lengths and its result is compared with plain Rust.
#[test]
fn ops_overwrite_every_value_of_a_recycled_buffer() {
    let lens = [1usize, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 511, 1000, 1024];
    for &n in &lens {
        // Stale buffers full of NaN, in the size class of `n` and of `n` + 1 (a longer old length).
        for m in [n, n + 1] {
            let junk: Vec<Tensor<f64>> = (0..4).map(|_| Tensor::full(&[m], f64::NAN).mul_scalar(1.0)).collect();
            drop(junk);
        }
        let xs: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
        let x = Tensor::from_vec(xs.clone(), &[n]).requires_grad();
        let t = x.tanh();
        let want: Vec<f64> = xs.iter().map(|v| v.tanh()).collect();
        for (k, (a, b)) in t.data().iter().zip(&want).enumerate() {
            assert!((a - b).abs() <= 1e-15, "tanh, n = {n}, element {k}: {a} vs {b}");
        }
        let s = x.mul_scalar(3.0);
        assert_eq!(s.data(), &xs.iter().map(|v| v * 3.0).collect::<Vec<_>>()[..], "mul_scalar, n = {n}");
        let b = x.add(&s);
        assert_eq!(b.data(), &xs.iter().map(|v| v + v * 3.0).collect::<Vec<_>>()[..], "add, n = {n}");
        // Broadcast: [2, n] + [n].
        let two = Tensor::from_vec(xs.iter().chain(&xs).map(|v| v + 1.0).collect(), &[2, n]);
        let bc = two.add(&x);
        let want_bc: Vec<f64> = (0..2 * n).map(|i| xs[i % n] + 1.0 + xs[i % n]).collect();
        assert_eq!(bc.data(), &want_bc[..], "broadcast add, n = {n}");
        // Backward of tanh with a kept seed (so the rule writes a new buffer, not the seed's).
        let seed = Tensor::full(&[n], 1.0);
        t.backward_with(Some(&seed), Default::default()).unwrap();
        let g = x.grad().unwrap();
        for (k, (gv, tv)) in g.data().iter().zip(t.data()).enumerate() {
            assert!((gv - (1.0 - tv * tv)).abs() <= 1e-15, "tanh backward, n = {n}, element {k}: {gv}");
        }
        assert!(seed.data().iter().all(|&v| v == 1.0), "the kept seed was written");
    }
}
