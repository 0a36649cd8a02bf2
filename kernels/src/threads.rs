//! How many threads chi's kernels use.
//!
//! The kernels split large work (GEMM above a measured size, big elementwise maps and
//! reductions) across the threads of the *current* rayon pool: the global pool, or the pool a
//! caller is running in. So the thread count is set either for the whole process, once, before
//! any kernel runs ([`set_num_threads`]), or for a scope ([`with_threads`]). Without either, the
//! global pool has one thread per logical CPU (or `RAYON_NUM_THREADS`, if set).
//!
//! ```
//! use chi_kernels::threads::{num_threads, with_threads};
//! let n = with_threads(1, || num_threads()).unwrap();
//! assert_eq!(n, 1);
//! ```

use rayon::ThreadPool;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Why a thread count could not be applied.
#[derive(Debug)]
pub enum ThreadsError {
    /// A thread count of 0 was asked for.
    Zero,
    /// The global pool already exists (a kernel or other code used it first, or
    /// [`set_num_threads`] was called before); it keeps its size, reported here.
    AlreadyInitialized {
        /// The size of the existing global pool.
        current: usize,
    },
    /// The operating system refused to start the threads.
    Build(rayon::ThreadPoolBuildError),
}

impl std::fmt::Display for ThreadsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ThreadsError::Zero => write!(f, "thread count must be at least 1"),
            ThreadsError::AlreadyInitialized { current } => write!(
                f,
                "the global thread pool already exists with {current} threads; call set_num_threads before any kernel runs, or use with_threads"
            ),
            ThreadsError::Build(e) => write!(f, "could not start the thread pool: {e}"),
        }
    }
}

impl std::error::Error for ThreadsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ThreadsError::Build(e) => Some(e),
            _ => None,
        }
    }
}

/// Sets the number of threads every kernel of this process may use (by building rayon's global
/// pool with `n` threads). Call it once, at start-up, before any kernel runs: the global pool
/// cannot be resized once it exists, and that is then reported as
/// [`ThreadsError::AlreadyInitialized`].
pub fn set_num_threads(n: usize) -> Result<(), ThreadsError> {
    if n == 0 {
        return Err(ThreadsError::Zero);
    }
    // `build_global` fails only when the global pool already exists (or the threads cannot be
    // started, which rayon reports the same way); either way the pool in use is the old one.
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build_global()
        .map_err(|_| ThreadsError::AlreadyInitialized { current: rayon::current_num_threads() })
}

/// The number of threads kernels called from here may use (the size of the current rayon pool).
pub fn num_threads() -> usize {
    rayon::current_num_threads()
}

/// Runs `f` with the kernels it calls limited to `n` threads: `f` runs inside a pool of `n`
/// threads (built on first use for each `n`, then reused), and its result is returned.
pub fn with_threads<R: Send>(n: usize, f: impl FnOnce() -> R + Send) -> Result<R, ThreadsError> {
    if n == 0 {
        return Err(ThreadsError::Zero);
    }
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();
    let pool = {
        let mut pools = POOLS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
        match pools.get(&n) {
            Some(p) => Arc::clone(p),
            None => {
                let p = Arc::new(rayon::ThreadPoolBuilder::new().num_threads(n).build().map_err(ThreadsError::Build)?);
                pools.insert(n, Arc::clone(&p));
                p
            }
        }
    };
    Ok(pool.install(f))
}

/// Runs `f` on every job, spread over the threads of the current pool, and returns when all
/// are done (one fork and join for the whole call; [`crate::team::for_each`], so with two
/// threads the second is the spinning partner). The calling thread takes part; with one job,
/// one thread, or from inside another split's job, the jobs run in order on the calling thread.
///
/// Meant for coarse, independent pieces of work whose split is decided by the caller, such as
/// the row blocks of a recurrence over a batch (`chi_autodiff`'s whole-sequence LSTM and GRU):
/// each job owns its part of the output.
///
/// ```
/// use chi_kernels::threads::run_each;
/// let mut out = vec![0u64; 8];
/// let jobs: Vec<(u64, &mut [u64])> = out.chunks_mut(4).enumerate().map(|(i, c)| (i as u64, c)).collect();
/// run_each(jobs, |(i, part)| part.iter_mut().for_each(|v| *v = i + 1));
/// assert_eq!(out, [1, 1, 1, 1, 2, 2, 2, 2]);
/// ```
pub fn run_each<J: Send>(jobs: Vec<J>, f: impl Fn(J) + Sync) {
    let threads = if jobs.len() > 1 { rayon::current_num_threads() } else { 1 };
    crate::team::for_each(threads, jobs.into_iter(), f);
}
