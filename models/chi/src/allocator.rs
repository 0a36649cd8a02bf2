//! The allocator of chi's programs: mimalloc, set to keep freed memory for reuse.
//!
//! Why: a tape is thousands of small, short-lived allocations (each recorded op's output buffer,
//! shape and node; each gradient during backward), all freed together when the tape is dropped.
//! Profiling the scalar-chain workload (`y = tanh(1.01·y + 0.1)`, the per-op-overhead benchmark)
//! under glibc's malloc put ~45 % of the time in `malloc`/`free` and their slow paths
//! (`_int_free`, `malloc_consolidate`: freeing a whole tape at once overflows glibc's small
//! per-thread caches). With mimalloc the same workload took ~0.62 ms instead of ~0.91 ms per
//! 3,000 ops (`LD_PRELOAD` of Debian's libmimalloc, same binary, 2026-11-23).
//!
//! mimalloc by default returns ("purges") freed memory to the system after a short delay, so a
//! training step that frees and re-allocates the same large activation buffers every iteration
//! page-faults them back in; [`keep_freed_memory`] turns purging off, as
//! `chi_autodiff::malloc::keep_freed_memory` does for glibc (PyTorch's CPU caching allocator
//! exists for the same reason). Peak memory is unchanged; freed memory stays with the process.
//!
//! Only the programs (`chi`, `side_by_side`) install it, each with its own `#[global_allocator]`:
//! the library does not choose an allocator for its users, and test binaries keep theirs (the
//! flat-memory test counts bytes through its own allocator).

pub use mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (its position in `mi_option_e` of `mimalloc.h`, v3; the
/// `libmimalloc-sys` bindings do not name it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Turns off mimalloc's purging of freed memory (`purge_delay = -1`). Harmless when mimalloc is
/// not the global allocator (it then only sets an option of an allocator nobody uses).
pub fn keep_freed_memory() {
    // SAFETY: mi_option_set only stores an integer option; it is thread-safe and valid to call at
    // any time, including before the first allocation.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) }
}

/// Runs `f` with mimalloc's own purging (freed memory returned to the system after 1 s, its
/// default), then returns what `f` freed and keeps freed memory again. For a phase that frees
/// much more than what follows will use: reading a data file takes several times the file's
/// size, training afterwards a fraction of it; with purging off throughout, the process keeps
/// its loading peak for the whole run (2.9 GB for 84 MB of training data). Memory freed while purging is off is never
/// scheduled for purging, so the phase itself must run with it on.
pub fn returning_freed_memory<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: mi_option_get/mi_option_set read and store an integer option (mimalloc's API for
    // changing options while it runs; an allocation racing with the change sees the old or the
    // new delay), and mi_collect(true) only returns memory mimalloc holds freed.
    let before = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 1000) };
    let out = f();
    unsafe {
        libmimalloc_sys::mi_collect(true);
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, before);
    }
    out
}

#[cfg(test)]
mod tests {
    /// The option index we set is the one mimalloc calls `purge_delay`: reading it back through
    /// the same index gives what we wrote, and its default (before we touch it) is mimalloc v3's
    /// 1000 ms (`mi_option_purge_delay`'s entry in `options.c`) — a wrong index would read another
    /// option's default.
    #[test]
    fn purge_delay_option_is_the_documented_one() {
        // SAFETY: plain integer option reads and writes.
        unsafe {
            assert_eq!(libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY), 1000, "mimalloc v3's default purge_delay is 1000 ms");
            super::keep_freed_memory();
            assert_eq!(libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY), -1);
        }
    }
}
