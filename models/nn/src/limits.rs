//! Size limits for everything whose size comes from outside the program (flags, config files,
//! data files, checkpoints), checked *before* memory is allocated.
//!
//! One number bounds them all: the **maximum tensor size in elements**,
//! [`DEFAULT_MAX_TENSOR_ELEMENTS`] (2^28 = 268,435,456 elements, 1 GiB of `f32`), overridable
//! with the environment variable `CHI_MAX_TENSOR_ELEMENTS` (a positive integer). Any single
//! buffer a flag, config value or file header asks for (a weight matrix `hidden × hidden`, a
//! dataset `n_train × features`, a GEMM benchmark `n × n`, the dimensions in an IDX or `.npy`
//! header) must be at most this many elements; larger requests are refused with an error
//! naming the value and the limit instead of aborting on allocation.

use crate::error::NnError;

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
/// overflows `usize`).
pub fn check_elements(what: &str, dims: &[usize]) -> Result<usize, NnError> {
    let limit = max_tensor_elements();
    let prod = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    match prod {
        Some(p) if p <= limit => Ok(p),
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
