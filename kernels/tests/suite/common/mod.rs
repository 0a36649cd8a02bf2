//! Helpers shared by the integration tests (a module, not a test target of its own).

use rayon::ThreadPool;
use std::sync::OnceLock;

/// Runs `f` inside a rayon pool of exactly `threads` threads (1 or 2) and returns its result.
///
/// Why: the kernels size their thread split by the *current* pool (`Par::Threads(t)` is capped at
/// `rayon::current_num_threads()`, and the elementwise/reduction kernels only split when that is
/// at least 2). In the global pool, whose size is the host's core count, a one-core runner would
/// silently run every "2-thread" case sequentially. An explicit pool makes the threaded split
/// happen on every host (two OS threads share one core if need be), and a 1-thread pool gives the
/// sequential result to compare it with. The pools are built once per test binary and shared by
/// the tests running in parallel (`install` queues them).
pub fn in_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    static POOLS: [OnceLock<ThreadPool>; 2] = [OnceLock::new(), OnceLock::new()];
    assert!((1..=2).contains(&threads), "in_pool: {threads} threads (only 1 or 2 are provided)");
    let pool = POOLS[threads - 1].get_or_init(|| rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap());
    pool.install(|| {
        assert_eq!(rayon::current_num_threads(), threads, "in_pool: not running inside the {threads}-thread pool");
        f()
    })
}

/// The xorshift64 generator the kernel tests draw their deterministic inputs from.
pub struct XorShift(u64);

impl XorShift {
    /// A generator starting from `state` (must be non-zero; `seed | 1` guarantees it).
    pub fn new(state: u64) -> XorShift {
        assert!(state != 0, "XorShift: the state must be non-zero");
        XorShift(state)
    }
    /// The next value, uniform in `[lo, hi)` (53 random bits).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let s = &mut self.0;
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        lo + (hi - lo) * ((*s >> 11) as f64 / (1u64 << 53) as f64)
    }
}
