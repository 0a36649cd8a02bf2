//! Recycling of tensor buffers and of tape records (per-thread free lists).
//!
//! A dynamic graph of small tensors allocates and frees, per op, a value buffer (`Rc<Vec<T>>`:
//! two heap blocks) and the output's autodiff record (`Rc<Var>`, a few hundred bytes, too large
//! for the allocator's fast bins). Profiling the scalar-chain benchmark (`chi bench tape`)
//! showed about half of all instructions inside `malloc`/`free`. This module keeps freed blocks
//! of both kinds on per-thread, per-element-type free lists and hands them out again, so a
//! steady-state loop of small ops does not call the allocator at all. Large buffers can be kept
//! too ([`cache_large_buffers`]), so that an op's output that will be overwritten is not cleared
//! first ([`LARGE_MIN_LEN`]).
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
//!    beyond goes back to the allocator. Buffers of at least [`LARGE_MIN_LEN`] elements go to a
//!    separate list instead (when [`cache_large_buffers`] is on), served by exact capacity and
//!    bounded the same way: never more idle buffers of a capacity than the pool has made of it,
//!    at most [`MAX_LARGE_POOLED`] buffers and [`MAX_LARGE_POOLED_BYTES`], the least recently
//!    freed leaving first. Memory therefore stays flat in loops once the first iterations have
//!    filled the lists; what the lists hold is memory the process's allocator keeps anyway (see
//!    [`crate::malloc`]), as PyTorch's caching allocator does, only kept for the sizes that come
//!    back.
//! 4. **Thread exit is safe.** Every access uses `try_with`: a tensor dropped while the
//!    thread's state is being torn down is freed normally.

use crate::tape::{Float, Var};
use std::cell::RefCell;
use std::ops::{Deref, DerefMut};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Number of capacity classes: class `k` holds buffers of capacity at least `2^k` elements.
const CLASSES: usize = 11;
/// Largest buffer (in elements) that is pooled in the capacity classes.
pub const MAX_POOLED_LEN: usize = 1 << (CLASSES - 1);
/// Most bytes of idle buffers a thread keeps per element type in the capacity classes.
pub const MAX_POOLED_BYTES: usize = 2 << 20;
/// Smallest buffer (in elements) kept in the large-buffer list. A large op output taken from
/// the allocator is zero-filled first (the allocator's `calloc` clears recycled memory), a pass
/// over memory that no longer fits the caches; a recycled buffer is handed out as it is.
/// Profiling the text CNN's training step put ~11 % of its samples in that clearing (the
/// embedding lookup's output, the matmul gradients), all on one thread at 2 threads. Buffers
/// between [`MAX_POOLED_LEN`] and this size fit in L2, where clearing them is cheap. Kept
/// only while [`cache_large_buffers`] is on.
pub const LARGE_MIN_LEN: usize = 1 << 16;
/// Most bytes of idle large buffers a thread keeps per element type.
pub const MAX_LARGE_POOLED_BYTES: usize = 256 << 20;
/// Most idle large buffers a thread keeps per element type.
pub const MAX_LARGE_POOLED: usize = 256;
/// Most distinct large capacities whose demand a thread counts per element type.
const MAX_LARGE_SIZES: usize = 1024;
/// Most idle autodiff records a thread keeps per element type.
pub const MAX_POOLED_VARS: usize = 4096;

/// Whether buffers of at least [`LARGE_MIN_LEN`] elements are kept ([`cache_large_buffers`]).
static CACHE_LARGE: AtomicBool = AtomicBool::new(false);

/// Turns the large-buffer list on or off for every thread (off by default; the `chi` program and
/// the benchmark binaries turn it on). Off, large buffers come from the allocator and return to
/// it; lists already filled stay until [`release_pooled`].
///
/// Why it is not on by default: whether it pays depends on the allocator. With mimalloc (the
/// programs' allocator) it removes the clearing of large outputs and takes no page faults in
/// the steady state (`models/chi/tests/page_faults.rs`). With glibc's malloc, buffers held in
/// the list stay where they are in its heap, and the rest of a step's allocations, in the gaps
/// between them, made the heap grow again after warm-up (134 pages in 100 LSTM/GRU steps, where
/// without the list it takes none: `autodiff/tests/page_faults.rs`). It costs memory: idle
/// buffers wait in their thread's list, where the other threads' allocations cannot use them
/// (the 2-thread benchmarks' peak resident set grew 6–12 %: text CNN 99 → 105 MB, LSTM batch 64
/// 148 → 167 MB).
pub fn cache_large_buffers(on: bool) {
    CACHE_LARGE.store(on, Ordering::Relaxed);
}

/// Whether the large-buffer list is on.
#[inline]
fn large_cached() -> bool {
    CACHE_LARGE.load(Ordering::Relaxed)
}

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
    /// Idle buffers of at least [`LARGE_MIN_LEN`] elements, in the order they were freed.
    large: Vec<Rc<Vec<T>>>,
    /// Bytes held by `large`.
    large_bytes: usize,
    /// Per capacity, how many large buffers the pool itself has allocated (requests `large`
    /// could not serve): the most idle buffers of that capacity it keeps, as `made` for the
    /// classes. At most [`MAX_LARGE_SIZES`] capacities; beyond, the count starts over.
    large_made: Vec<(usize, usize)>,
    vars: Vec<Rc<Var<T>>>,
}

impl<T: Float> Pool<T> {
    pub(crate) const fn new() -> Self {
        Pool { inner: RefCell::new(PoolInner { bufs: [const { Vec::new() }; CLASSES], made: [0; CLASSES], bytes: 0, large: Vec::new(), large_bytes: 0, large_made: Vec::new(), vars: Vec::new() }) }
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
    if n == 0 || (n > MAX_POOLED_LEN && (n < LARGE_MIN_LEN || !large_cached())) {
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
    if n >= LARGE_MIN_LEN && large_cached() {
        return Buf(take_large(n).unwrap_or_else(|| Rc::new(vec![T::ZERO; n])));
    }
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

/// [`for_overwrite`] as a plain `Vec`, for an op's saved work buffers that are not tensors (a
/// fused sequence's gate activations): give it back with [`recycle_vec`] when the op is done
/// with it.
pub(crate) fn vec_for_overwrite<T: Float>(n: usize) -> Vec<T> {
    Rc::try_unwrap(for_overwrite::<T>(n).0).unwrap_or_else(|_| unreachable!("a fresh buffer has one owner"))
}

/// Offers a plain `Vec` to the pool, as a tensor's buffer is offered when the tensor is dropped.
pub(crate) fn recycle_vec<T: Float>(v: Vec<T>) {
    if v.capacity() > 0 {
        keep_buf(Rc::new(v));
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

/// An idle large buffer of capacity `n ≥ LARGE_MIN_LEN` elements, set to length `n`. Exact
/// capacity, not best fit: a training loop asks for the same sizes every step, and a buffer
/// lent to a smaller request would leave the next request of its own size to the allocator (a
/// fresh, cleared allocation every step).
fn take_large<T: Float>(n: usize) -> Option<Rc<Vec<T>>> {
    let mut rc = T::graph_state()
        .try_with(|s| {
            let mut p = s.pool.inner.borrow_mut();
            // The most recently freed buffer of this capacity, whose lines may still be cached.
            let Some(best) = p.large.iter().rposition(|b| b.capacity() == n) else {
                match p.large_made.iter_mut().find(|(c, _)| *c == n) {
                    Some((_, made)) => *made += 1,
                    None => {
                        if p.large_made.len() == MAX_LARGE_SIZES {
                            p.large_made.clear();
                        }
                        p.large_made.push((n, 1));
                    }
                }
                return None;
            };
            let b = p.large.remove(best);
            p.large_bytes -= buf_bytes::<T>(b.capacity());
            Some(b)
        })
        .ok()
        .flatten()?;
    let vec = Rc::get_mut(&mut rc).expect("pooled buffers have one owner");
    if vec.len() >= n {
        vec.truncate(n);
    } else {
        vec.resize(n, T::ZERO);
    }
    Some(rc)
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
    if cap >= LARGE_MIN_LEN {
        if large_cached() {
            keep_large(data);
        }
        return; // else dropped here
    }
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

/// Keeps an idle large buffer while the list holds fewer buffers of its capacity than the pool
/// has made of it. Buffers made elsewhere (by `Tensor::from_vec`, a kernel's own `Vec`) are so
/// kept only in a size the pool is asked for and only up to that demand: kept regardless, they
/// would take the places of the pool's own buffers, whose sizes would then miss every step and
/// be allocated anew, page faults included (measured on the bidirectional LSTM benchmark:
/// BENCHMARKS.md, "Large op outputs reused without clearing"). Within [`MAX_LARGE_POOLED`] and
/// [`MAX_LARGE_POOLED_BYTES`] the least recently freed buffers go back to the allocator to make
/// room, so that sizes no longer asked for (an evaluation's batch after training) do not hold
/// the list.
fn keep_large<T: Float>(data: Rc<Vec<T>>) {
    let bytes = buf_bytes::<T>(data.capacity());
    if bytes > MAX_LARGE_POOLED_BYTES {
        return; // dropped here
    }
    // Buffers dropped here (refused or evicted) are plain `Vec<T>`s, no tensors inside: freeing
    // them inside the borrow cannot reach the pool again.
    let _ = T::graph_state().try_with(move |s| {
        let mut p = s.pool.inner.borrow_mut();
        let cap = data.capacity();
        let made = p.large_made.iter().find(|(c, _)| *c == cap).map_or(0, |&(_, m)| m);
        if p.large.iter().filter(|b| b.capacity() == cap).count() >= made {
            return; // `data` is dropped with the closure
        }
        while p.large.len() >= MAX_LARGE_POOLED || p.large_bytes + bytes > MAX_LARGE_POOLED_BYTES {
            let old = p.large.remove(0);
            p.large_bytes -= buf_bytes::<T>(old.capacity());
        }
        p.large.push(data);
        p.large_bytes += bytes;
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

/// Idle buffers and records this thread keeps for `T` in the capacity classes: `(buffers,
/// bytes, records)`. A probe for tests and benchmarks (the large buffers: [`pooled_large`]).
pub fn pooled<T: Float>() -> (usize, usize, usize) {
    T::graph_state()
        .try_with(|s| {
            let p = s.pool.inner.borrow();
            (p.bufs.iter().map(Vec::len).sum(), p.bytes, p.vars.len())
        })
        .unwrap_or((0, 0, 0))
}

/// Idle large buffers this thread keeps for `T`: `(buffers, bytes)`.
pub fn pooled_large<T: Float>() -> (usize, usize) {
    T::graph_state().try_with(|s| {
        let p = s.pool.inner.borrow();
        (p.large.len(), p.large_bytes)
    })
    .unwrap_or((0, 0))
}

/// Returns every idle buffer and record of this thread (for `T`) to the allocator.
pub fn release_pooled<T: Float>() {
    let taken = T::graph_state().try_with(|s| {
        let mut p = s.pool.inner.borrow_mut();
        p.bytes = 0;
        p.made = [0; CLASSES];
        p.large_bytes = 0;
        p.large_made.clear();
        (std::mem::take(&mut p.bufs), std::mem::take(&mut p.large), std::mem::take(&mut p.vars))
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
