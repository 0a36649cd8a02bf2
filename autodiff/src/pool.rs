//! Recycling of small tensor buffers and of tape records (per-thread free lists).
//!
//! A dynamic graph of small tensors allocates and frees, per op, a value buffer (`Rc<Vec<T>>`:
//! two heap blocks) and the output's autodiff record (`Rc<Var>`, a few hundred bytes, too large
//! for the allocator's fast bins). Profiling the scalar-chain benchmark (`chi bench tape`)
//! showed about half of all instructions inside `malloc`/`free`. This module keeps freed blocks
//! of both kinds on per-thread, per-element-type free lists and hands them out again, so a
//! steady-state loop of small ops does not call the allocator at all.
//!
//! ## Invariants
//! 1. **A recycled block is unreachable.** A buffer or record enters a free list only when its
//!    `Rc` is the last strong reference and no `Weak` exists (`Rc::strong_count == 1`,
//!    `Rc::weak_count == 0`, checked when the last [`crate::Tensor`] holding it is dropped). Nothing
//!    else can read or write it, so handing it out again cannot alias a live tensor; this is
//!    plain safe Rust (`Rc::get_mut` succeeds on every block taken from a list).
//! 2. **A recycled record is blank.** Before a `Var` enters its list its op is released
//!    (through [`crate::tape`]'s iterative drop), its gradient, hooks and name are dropped; when
//!    taken out it gets a fresh sequence number and node, exactly as a new one would.
//! 3. **Bounded by the working set.** Buffers are pooled only up to [`MAX_POOLED_LEN`]
//!    elements, in power-of-two capacity classes. A class never holds more idle buffers than
//!    the pool itself has allocated for it (each allocation answers a request the list could
//!    not serve), so buffers made elsewhere (`Tensor::from_vec`, collected iterators) cannot
//!    pile up: the idle count of a class is at most the peak number of its buffers alive at
//!    once. On top of that a thread keeps at most [`MAX_POOLED_BYTES`] of idle buffers and
//!    [`MAX_POOLED_VARS`] idle records per element type (records are only ever made by the
//!    pool's own `take_var` path, so the same working-set bound holds for them); anything
//!    beyond goes back to the allocator. Memory therefore stays flat in loops once the first
//!    iterations have filled the lists.
//! 4. **Thread exit is safe.** Every access uses `try_with`: a tensor dropped while the
//!    thread's state is being torn down is freed normally.

use crate::tape::{Float, Var};
use std::cell::RefCell;
use std::ops::{Deref, DerefMut};
use std::rc::Rc;

/// Number of capacity classes: class `k` holds buffers of capacity at least `2^k` elements.
const CLASSES: usize = 11;
/// Largest buffer (in elements) that is pooled; larger ones cost far more to fill than to
/// allocate, and are left to the allocator (see [`crate::malloc`] for those).
pub const MAX_POOLED_LEN: usize = 1 << (CLASSES - 1);
/// Most bytes of idle buffers a thread keeps per element type.
pub const MAX_POOLED_BYTES: usize = 2 << 20;
/// Most idle autodiff records a thread keeps per element type.
pub const MAX_POOLED_VARS: usize = 4096;
/// Heap bytes of an `Rc<Vec<T>>` besides the values (counts, pointer, capacity, length).
const RC_VEC_OVERHEAD: usize = 40;

/// The free lists of one element type on one thread. Internal; lives in
/// [`crate::tape::GraphState`].
#[doc(hidden)]
pub struct Pool<T: Float> {
    inner: RefCell<PoolInner<T>>,
}

struct PoolInner<T: Float> {
    bufs: [Vec<Rc<Vec<T>>>; CLASSES],
    /// Per class, how many buffers the pool itself has allocated (requests it could not serve
    /// from the list): the most idle buffers the class may hold (invariant 3).
    made: [usize; CLASSES],
    /// Bytes held by `bufs`.
    bytes: usize,
    vars: Vec<Rc<Var<T>>>,
}

impl<T: Float> Pool<T> {
    pub(crate) const fn new() -> Self {
        Pool { inner: RefCell::new(PoolInner { bufs: [const { Vec::new() }; CLASSES], made: [0; CLASSES], bytes: 0, vars: Vec::new() }) }
    }
}

/// The class whose buffers all have capacity ≥ `n` (`n ≥ 1`): ⌈log₂ n⌉.
#[inline]
fn class_for_len(n: usize) -> usize {
    if n <= 1 {
        0
    } else {
        (usize::BITS - (n - 1).leading_zeros()) as usize
    }
}

/// The class a buffer of capacity `cap` (`cap ≥ 1`) belongs to: ⌊log₂ cap⌋.
#[inline]
fn class_for_cap(cap: usize) -> usize {
    (usize::BITS - 1 - cap.leading_zeros()) as usize
}

#[inline]
fn buf_bytes<T>(cap: usize) -> usize {
    cap * std::mem::size_of::<T>() + RC_VEC_OVERHEAD
}

/// A freshly made value buffer that only its holder can see: writable through `DerefMut`,
/// turned into tensor storage with `.into()` (or given to `record`).
pub(crate) struct Buf<T>(Rc<Vec<T>>);

impl<T> Deref for Buf<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        &self.0
    }
}
impl<T> DerefMut for Buf<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        // Unique by construction (invariant 1): `get_mut` cannot fail.
        Rc::get_mut(&mut self.0).expect("a fresh buffer has one owner")
    }
}
impl<T> From<Buf<T>> for Rc<Vec<T>> {
    #[inline]
    fn from(b: Buf<T>) -> Rc<Vec<T>> {
        b.0
    }
}

/// A buffer of `n` copies of `v`, recycled when one of a fitting size is idle.
#[inline]
pub(crate) fn filled<T: Float>(n: usize, v: T) -> Buf<T> {
    if n == 0 || n > MAX_POOLED_LEN {
        return Buf(Rc::new(vec![v; n]));
    }
    let mut b = for_overwrite(n);
    b.fill(v);
    b
}

/// A buffer of `n` values for a caller that writes every one of them before reading any (an
/// op's output computed by a kernel): a recycled buffer keeps its old values instead of being
/// filled first, which for the small tensors of dynamic graphs costs as much as the op's own
/// arithmetic. The values are initialised (old results or zeros), never undefined.
#[inline]
pub(crate) fn for_overwrite<T: Float>(n: usize) -> Buf<T> {
    if n == 0 || n > MAX_POOLED_LEN {
        return Buf(Rc::new(vec![T::ZERO; n]));
    }
    let k = class_for_len(n);
    match take_buf::<T>(k) {
        Some(mut rc) => {
            let vec = Rc::get_mut(&mut rc).expect("pooled buffers have one owner");
            if vec.len() >= n {
                vec.truncate(n);
            } else {
                vec.resize(n, T::ZERO);
            }
            Buf(rc)
        }
        None => {
            let mut vec = Vec::with_capacity(1 << k);
            vec.resize(n, T::ZERO);
            Buf(Rc::new(vec))
        }
    }
}

/// A pooled buffer of size class `k`, if one is kept (else `None`, counted as made).
#[inline]
fn take_buf<T: Float>(k: usize) -> Option<Rc<Vec<T>>> {
    T::graph_state()
        .try_with(|s| {
            let mut p = s.pool.inner.borrow_mut();
            let b = p.bufs[k].pop();
            match &b {
                Some(b) => p.bytes -= buf_bytes::<T>(b.capacity()),
                None => p.made[k] += 1,
            }
            b
        })
        .ok()
        .flatten()
}

/// A zero-filled buffer of `n` elements (see [`filled`]).
#[inline]
pub(crate) fn zeros<T: Float>(n: usize) -> Buf<T> {
    filled(n, T::ZERO)
}

/// Takes back a tensor's value buffer: pooled if this was its last reference and it is small,
/// otherwise dropped as usual.
///
/// Split in two so that the test runs inline in every tensor drop and only last references
/// pay a call: most dropped tensors share their buffer with another (a saved input, a clone).
#[inline]
pub(crate) fn recycle_buf<T: Float>(data: Rc<Vec<T>>) {
    if Rc::strong_count(&data) != 1 || Rc::weak_count(&data) != 0 {
        return; // a reference is dropped here, the buffer lives on
    }
    keep_buf(data);
}

/// Pools the last reference to a buffer, if it fits the limits (invariant 3).
#[inline(never)]
fn keep_buf<T: Float>(data: Rc<Vec<T>>) {
    let cap = data.capacity();
    if cap == 0 || cap > 2 * MAX_POOLED_LEN {
        return; // dropped here
    }
    let k = class_for_cap(cap).min(CLASSES - 1);
    let bytes = buf_bytes::<T>(cap);
    let _ = T::graph_state().try_with(move |s| {
        let mut p = s.pool.inner.borrow_mut();
        if p.bufs[k].len() < p.made[k] && p.bytes + bytes <= MAX_POOLED_BYTES {
            p.bytes += bytes;
            p.bufs[k].push(data);
        }
        // else: `data` is dropped with the closure (plain `Vec<T>`, no tensors inside).
    });
}

/// An autodiff record for a new tensor: a blank one from the free list (its contents already
/// dropped, invariant 2), or a new allocation. `init` fills in the identity.
#[inline]
pub(crate) fn take_var<T: Float>() -> Option<Rc<Var<T>>> {
    T::graph_state().try_with(|s| s.pool.inner.borrow_mut().vars.pop()).ok().flatten()
}

/// Takes back an autodiff record whose last tensor is being dropped (`var` is the only strong
/// reference and no `Weak` exists): blanks it and keeps it, or drops it when the list is full.
pub(crate) fn recycle_var<T: Float>(mut var: Rc<Var<T>>) {
    let Some(v) = Rc::get_mut(&mut var) else { return };
    // Drops what the record holds (op through the iterative path, gradient, hooks); may drop
    // further tensors, which may recycle in turn. No pool borrow is held here.
    v.blank();
    let _ = T::graph_state().try_with(move |s| {
        let mut p = s.pool.inner.borrow_mut();
        if p.vars.len() < MAX_POOLED_VARS {
            p.vars.push(var);
        }
        // else: dropped with the closure; a blank record owns nothing.
    });
}

/// Idle buffers and records this thread keeps for `T`: `(buffers, bytes, records)`. A probe for
/// tests and benchmarks.
pub fn pooled<T: Float>() -> (usize, usize, usize) {
    T::graph_state()
        .try_with(|s| {
            let p = s.pool.inner.borrow();
            (p.bufs.iter().map(Vec::len).sum(), p.bytes, p.vars.len())
        })
        .unwrap_or((0, 0, 0))
}

/// Returns every idle buffer and record of this thread (for `T`) to the allocator.
pub fn release_pooled<T: Float>() {
    let taken = T::graph_state().try_with(|s| {
        let mut p = s.pool.inner.borrow_mut();
        p.bytes = 0;
        p.made = [0; CLASSES];
        (std::mem::take(&mut p.bufs), std::mem::take(&mut p.vars))
    });
    drop(taken); // outside the borrow
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn classes_cover_the_requested_length() {
        for n in 1..=MAX_POOLED_LEN {
            let k = class_for_len(n);
            assert!(1usize << k >= n, "class {k} for {n}");
            assert!(k == 0 || 1usize << (k - 1) < n);
            assert_eq!(class_for_cap(1 << k), k);
        }
        assert_eq!(class_for_cap(3), 1);
        assert_eq!(class_for_cap(4), 2);
    }
}
