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
//! `MemAvailable` plus free swap, read once), so that a raised limit gives an error instead of
//! the out-of-memory killer.
//!
//! Files read whole are bounded the same way by bytes: [`read_file`] reads at most
//! [`max_file_bytes`] (4 GiB unless `CHI_MAX_FILE_BYTES` says otherwise, and never more than the
//! memory available), counting what it *reads*, not what the file system reports — devices
//! (`/dev/zero`), pipes and FIFOs report a length of 0 and may never end.

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

/// Default of [`max_file_bytes`]: 4 GiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 4 << 30;

/// Environment variable overriding [`DEFAULT_MAX_FILE_BYTES`].
pub const MAX_FILE_BYTES_ENV: &str = "CHI_MAX_FILE_BYTES";

/// How much of a file [`read_file_checked`] shows its check before reading the rest.
pub const FILE_HEAD_BYTES: usize = 8192;

/// The largest file [`read_file`] reads, in bytes: `CHI_MAX_FILE_BYTES` if it is set to a
/// positive integer, else [`DEFAULT_MAX_FILE_BYTES`].
pub fn max_file_bytes() -> u64 {
    std::env::var(MAX_FILE_BYTES_ENV).ok().and_then(|v| v.trim().parse::<u64>().ok()).filter(|&v| v > 0).unwrap_or(DEFAULT_MAX_FILE_BYTES)
}

/// Reads a whole file of at most [`max_file_bytes`] bytes (and at most the memory available).
///
/// Unlike `std::fs::read`, the bound holds for what is read, so an endless stream (`/dev/zero`,
/// a pipe or FIFO that keeps writing) is an error once it passes the limit, not an
/// out-of-memory kill. The error is an `std::io::Error` whose message reads after the path:
/// a directory (`is a directory, not a file`, kind `IsADirectory`), a regular file whose length
/// is over the limit (refused before reading) or a stream that gives more (kind `FileTooLarge`),
/// or the operating system's error.
pub fn read_file(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    read_file_checked(path, |_| Ok(()))
}

/// As [`read_file`], with `check_head` shown the first [`FILE_HEAD_BYTES`] (fewer if the file
/// is shorter) before the rest is read: its error (kind `InvalidData`) stops the reading, so
/// that, say, a 2 GB binary file given where text belongs is refused after 8 KiB.
pub fn read_file_checked(path: &std::path::Path, check_head: impl FnOnce(&[u8]) -> Result<(), String>) -> std::io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory, not a file"));
    }
    read_bounded(file, meta.is_file().then_some(meta.len()), check_head)
}

/// As [`read_file_checked`] for a stream that is not a named file (standard input): read at
/// most [`max_file_bytes`] (and the memory available), whatever it holds.
pub fn read_stream_checked(reader: impl std::io::Read, check_head: impl FnOnce(&[u8]) -> Result<(), String>) -> std::io::Result<Vec<u8>> {
    read_bounded(reader, None, check_head)
}

/// The bytes of `reader`, whose length is `known` for a regular file (refused before reading
/// when over the bound) and unknown for a stream.
fn read_bounded(reader: impl std::io::Read, known: Option<u64>, check_head: impl FnOnce(&[u8]) -> Result<(), String>) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind, Read};
    let limit = max_file_bytes();
    let memory = memory_available().unwrap_or(u64::MAX);
    let bound = limit.min(memory);
    let over = |what: String| {
        let limit = if bound < limit {
            format!("the {:.1} GiB of memory this machine has available", memory as f64 / (1u64 << 30) as f64)
        } else {
            format!("the {limit}-byte limit of one input file (set {MAX_FILE_BYTES_ENV} to raise it)")
        };
        Error::new(ErrorKind::FileTooLarge, what.replace("{limit}", &limit))
    };
    if let Some(len) = known.filter(|&l| l > bound) {
        return Err(over(format!("{len} bytes is more than {{limit}}")));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(known.unwrap_or(0)).unwrap_or(0));
    let mut reader = reader.take(bound.saturating_add(1));
    reader.by_ref().take(FILE_HEAD_BYTES as u64).read_to_end(&mut bytes)?;
    check_head(&bytes).map_err(|m| Error::new(ErrorKind::InvalidData, m))?;
    let endless = || over("gives more than {limit}: an endless stream such as /dev/zero, or a file still growing?".to_string());
    if known.is_some() {
        reader.read_to_end(&mut bytes)?;
        if bytes.len() as u64 > bound {
            return Err(endless());
        }
        return Ok(bytes);
    }
    // A stream's length is unknown: gather it in chunks, so that reaching the bound costs the
    // bound in memory, not the doubled capacity of one growing buffer and its copies.
    const CHUNK: u64 = 16 << 20;
    let (mut chunks, mut total) = (Vec::new(), bytes.len() as u64);
    loop {
        let mut chunk = Vec::new();
        if reader.by_ref().take(CHUNK).read_to_end(&mut chunk)? == 0 {
            break;
        }
        total += chunk.len() as u64;
        if total > bound {
            return Err(endless());
        }
        chunks.push(chunk);
    }
    bytes.reserve_exact(chunks.iter().map(Vec::len).sum());
    for c in chunks {
        bytes.extend_from_slice(&c);
    }
    Ok(bytes)
}

/// The memory this machine can still give a process, in bytes, as the kernel estimates it when
/// first asked (Linux: `MemAvailable` + `SwapFree` of `/proc/meminfo`); `None` elsewhere or if
/// the file cannot be read.
fn memory_available() -> Option<u64> {
    static AVAILABLE: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| parse_meminfo(&m)))
}

/// `MemAvailable + SwapFree` in bytes from the text of `/proc/meminfo` (values in kB).
fn parse_meminfo(text: &str) -> Option<u64> {
    let field = |name: &str| {
        text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
    };
    Some(field("MemAvailable")?.saturating_add(field("SwapFree").unwrap_or(0)).saturating_mul(1024))
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

    #[test]
    fn files_are_read_whole_within_the_limit_and_refused_beyond_it() {
        let dir = std::env::temp_dir().join(format!("chi-limits-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("a.txt");
        let body: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&f, &body).unwrap();
        assert_eq!(read_file(&f).unwrap(), body, "a file is read whole, past its first chunk");
        std::fs::write(dir.join("empty"), b"").unwrap();
        assert_eq!(read_file(&dir.join("empty")).unwrap(), b"");
        let e = read_file(&dir).unwrap_err();
        assert_eq!((e.kind(), e.to_string().as_str()), (std::io::ErrorKind::IsADirectory, "is a directory, not a file"));
        assert_eq!(read_file(&dir.join("missing")).unwrap_err().kind(), std::io::ErrorKind::NotFound);
        // The check sees only the head, and its refusal stops the reading.
        let mut seen = 0;
        read_file_checked(&f, |h| {
            seen = h.len();
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, FILE_HEAD_BYTES);
        let e = read_file_checked(&f, |_| Err("looks binary".into())).unwrap_err();
        assert_eq!((e.kind(), e.to_string().as_str()), (std::io::ErrorKind::InvalidData, "looks binary"));
        std::fs::remove_dir_all(&dir).unwrap();
        // An endless device reports length 0: the bound is on what is read. Checked in a child
        // process, which alone sees the lowered limit.
        if std::env::var_os("CHI_LIMITS_CHILD").is_some() {
            let e = read_file(std::path::Path::new("/dev/zero")).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::FileTooLarge);
            assert!(e.to_string().starts_with("gives more than the 100000-byte limit of one input file (set CHI_MAX_FILE_BYTES"), "{e}");
            let e = read_file(&std::env::current_exe().unwrap()).unwrap_err().to_string();
            assert!(e.contains("bytes is more than the 100000-byte limit"), "{e}");
            return;
        }
        if std::path::Path::new("/dev/zero").exists() {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "limits::tests::files_are_read_whole_within_the_limit_and_refused_beyond_it", "--nocapture"])
                .env("CHI_LIMITS_CHILD", "1")
                .env(MAX_FILE_BYTES_ENV, "100000")
                .output()
                .unwrap();
            assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        }
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
