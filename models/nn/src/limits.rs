//! Size limits for everything whose size comes from outside the program (flags, config files,
//! data files, checkpoints), checked *before* memory is allocated.
//!
//! One number bounds them all: the **maximum tensor size in elements**,
//! [`DEFAULT_MAX_TENSOR_ELEMENTS`] (2^28 = 268,435,456 elements, 1 GiB of `f32`), overridable
//! with the environment variable `CHI_MAX_TENSOR_ELEMENTS` (a positive integer). Any single
//! buffer a flag, config value or file header asks for (a weight matrix `hidden × hidden`, a
//! dataset `n_train × features`, a GEMM benchmark `n × n`, the dimensions in an IDX or `.npy`
//! header) must be at most this many elements; larger requests are refused with an error
//! naming the value and the limit instead of aborting on allocation. Whatever the limit, a buffer
//! is also refused when its `f32` size exceeds the memory the machine has available (Linux's
//! `MemAvailable` plus free swap, read once, and at most `CHI_MEMORY_LIMIT` bytes when that is
//! set), so that a raised limit gives an error instead of the out-of-memory killer.
//!
//! Files read whole are bounded the same way by bytes ([`crate::files`], re-exported here):
//! [`read_file`] reads at most [`max_file_bytes`] (4 GiB unless `CHI_MAX_FILE_BYTES` says
//! otherwise, and never more than the memory available), counting what it *reads*.

use crate::error::NnError;
use crate::files::memory_available;
pub use crate::files::{max_file_bytes, read_file, read_file_checked, read_stream_checked, DEFAULT_MAX_FILE_BYTES, FILE_HEAD_BYTES, MAX_FILE_BYTES_ENV, MEMORY_LIMIT_ENV};

/// Default of [`max_tensor_elements`]: 2^28 elements (1 GiB of `f32`).
pub const DEFAULT_MAX_TENSOR_ELEMENTS: usize = 1 << 28;

/// Environment variable overriding [`DEFAULT_MAX_TENSOR_ELEMENTS`].
pub const MAX_TENSOR_ELEMENTS_ENV: &str = "CHI_MAX_TENSOR_ELEMENTS";

thread_local! {
    static OVERRIDE: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with the limit set to `n` on the current thread (for fuzz targets and tests, which
/// must not change the limit of other threads the way setting the environment variable would).
pub fn with_max_tensor_elements<R>(n: usize, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<usize>);
    impl Drop for Restore {
        fn drop(&mut self) {
            OVERRIDE.with(|o| o.set(self.0));
        }
    }
    let _restore = Restore(OVERRIDE.with(|o| o.replace(Some(n))));
    f()
}

/// The maximum number of elements of one tensor or buffer sized from outside input: the value
/// set by [`with_max_tensor_elements`] on this thread, else the value of
/// `CHI_MAX_TENSOR_ELEMENTS` if it is set to a positive integer, else
/// [`DEFAULT_MAX_TENSOR_ELEMENTS`].
pub fn max_tensor_elements() -> usize {
    if let Some(n) = OVERRIDE.with(|o| o.get()) {
        return n;
    }
    std::env::var(MAX_TENSOR_ELEMENTS_ENV).ok().and_then(|v| v.trim().parse::<usize>().ok()).filter(|&v| v > 0).unwrap_or(DEFAULT_MAX_TENSOR_ELEMENTS)
}

/// The product of `dims` if it is at most [`max_tensor_elements`]; otherwise an
/// [`NnError::InvalidValue`] naming `what`, the dimensions and the limit (also when the product
/// overflows `usize`). Also an error when that many `f32` values exceed the memory available
/// ([`check_total_elements`]).
pub fn check_elements(what: &str, dims: &[usize]) -> Result<usize, NnError> {
    let limit = max_tensor_elements();
    let prod = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    match prod {
        // A raised limit can let through a tensor the machine cannot hold: refuse it here rather
        // than be killed by the kernel's out-of-memory handler halfway through a run.
        Some(p) if p <= limit => check_total_elements(what, p as u128).map(|()| p),
        _ => {
            let shown = dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(" × ");
            let total = prod.map_or_else(|| "more than usize::MAX".to_string(), |p| p.to_string());
            Err(NnError::invalid(
                what,
                "size",
                format!("{shown} = {total} elements"),
                format!("larger than the limit of {limit} elements per tensor (set {MAX_TENSOR_ELEMENTS_ENV} to raise it)"),
            ))
        }
    }
}

/// An error if `elements` values of `f32` exceed the memory this machine has available; `what`
/// names them. [`check_elements`] applies it to one tensor; a configuration applies it to a lower
/// bound on what it holds at once (weights, their gradients and optimiser moments, activations),
/// which per-tensor checks cannot see.
pub fn check_total_elements(what: &str, elements: u128) -> Result<(), NnError> {
    check_total_bytes(what, &format!("at least {elements} values"), elements.saturating_mul(MIN_ELEMENT_BYTES as u128))
}

/// The product of `dims` if that many values fit in the memory available; otherwise an
/// [`NnError::InvalidValue`] naming `what` and the dimensions (also when the product overflows
/// `usize`). For sizes a program chooses (a library user's layer), where the tensor limit of
/// [`check_elements`], meant for sizes from outside input, would refuse large but legitimate
/// models: it only turns an allocation that must fail (an abort) into an error.
pub fn check_fits_memory(what: &str, dims: &[usize]) -> Result<usize, NnError> {
    let shown = || dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(" × ");
    let Some(p) = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)) else {
        return Err(NnError::invalid(what, "size", shown(), "more values than a usize can count"));
    };
    check_total_elements(&format!("{what} ({})", shown()), p as u128).map(|()| p)
}

/// An error if `bytes` (`shown` as the value in the message, `what` naming what needs them)
/// exceed the memory this machine has available: [`check_total_elements`] for buffers other than
/// tensors (a corpus's tokens).
pub fn check_total_bytes(what: &str, shown: &str, bytes: u128) -> Result<(), NnError> {
    match memory_available() {
        Some(avail) if bytes > avail as u128 => {
            let gib = |b: u128| b as f64 / (1u64 << 30) as f64;
            Err(NnError::invalid(
                what,
                "memory",
                shown.to_string(),
                format!("at least {:.1} GiB, more than the {:.1} GiB of memory this machine has available", gib(bytes), gib(avail as u128)),
            ))
        }
        _ => Ok(()),
    }
}

/// The smallest element a sized tensor has (`f32`), for [`check_total_elements`].
const MIN_ELEMENT_BYTES: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::parse_meminfo;

    #[test]
    fn products_within_and_beyond_the_limit() {
        assert_eq!(check_elements("t", &[3, 4]).unwrap(), 12);
        assert_eq!(check_elements("t", &[]).unwrap(), 1);
        assert_eq!(check_elements("t", &[0, usize::MAX]).unwrap(), 0);
        let e = check_elements("weight", &[1 << 20, 1 << 20]).unwrap_err().to_string();
        assert!(e.contains("weight") && e.contains("limit") && e.contains(MAX_TENSOR_ELEMENTS_ENV), "{e}");
        assert!(check_elements("t", &[usize::MAX, 2]).unwrap_err().to_string().contains("more than usize::MAX"));
        let e = with_max_tensor_elements(10, || check_elements("t", &[4, 4]).unwrap_err().to_string());
        assert!(e.contains("limit of 10"), "{e}");
        assert_eq!(check_elements("t", &[4, 4]).unwrap(), 16, "the override outlived its closure");
    }

    #[test]
    fn a_raised_limit_does_not_let_through_more_than_the_memory() {
        assert_eq!(parse_meminfo("MemTotal:       24000000 kB\nMemAvailable:   2000000 kB\nSwapFree:  48 kB\n"), Some((2_000_000 + 48) * 1024));
        assert_eq!(parse_meminfo("MemTotal: 5 kB\n"), None);
        let Some(avail) = memory_available() else { return };
        // More f32 elements than the available bytes / 4, under a limit raised past them.
        let n = (avail / 4 + 1) as usize;
        let e = with_max_tensor_elements(usize::MAX, || check_elements("weight", &[n]).unwrap_err().to_string());
        assert!(e.contains("weight") && e.contains("GiB of memory this machine has available"), "{e}");
        assert_eq!(with_max_tensor_elements(usize::MAX, || check_elements("weight", &[1000, 1000]).unwrap()), 1_000_000);
        let e = check_total_elements("the model", avail as u128).unwrap_err().to_string();
        assert!(e.contains("the model") && e.contains("GiB of memory"), "{e}");
        check_total_elements("the model", 1_000_000).unwrap();
    }
}
