//! Reading whole files with a bound on what is read.
//!
//! [`read_file`] reads at most [`max_file_bytes`] (4 GiB unless `CHI_MAX_FILE_BYTES` says
//! otherwise) and never more than the memory available, counting what it *reads*, not what the
//! file system reports: devices (`/dev/zero`), pipes and FIFOs report a length of 0 and may
//! never end. [`read_file_checked`] also lets a caller refuse a file by its first 8 KiB (a
//! binary file where text belongs) before the rest is read. The size limits of tensors are in
//! [`crate::limits`], which re-exports these.

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

/// Environment variable: the most memory, in bytes, that chi's size checks let one process use
/// (for a share of a machine that others use too; below what the machine has, it only lowers
/// the bound).
pub const MEMORY_LIMIT_ENV: &str = "CHI_MEMORY_LIMIT";

/// The memory this machine can still give a process, in bytes, as the kernel estimates it when
/// first asked (Linux: `MemAvailable` + `SwapFree` of `/proc/meminfo`), and no more than what is
/// left of this process's address-space limit (`ulimit -v`, which makes an allocation fail
/// however much memory the machine has) or than `CHI_MEMORY_LIMIT`; `None` elsewhere or if the
/// files cannot be read (and no limit is set).
pub(crate) fn memory_available() -> Option<u64> {
    static AVAILABLE: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| [machine_memory(), address_space_left()].into_iter().flatten().min())
}

/// [`memory_available`] without the address-space limit: the machine's memory and swap left,
/// and at most `CHI_MEMORY_LIMIT`. For estimates of what a whole phase needs (reading a data
/// file): the allocator reserves address space ahead of use (mimalloc, a gigabyte), which the
/// process's mapped size counts but its allocations then fill.
pub fn machine_memory() -> Option<u64> {
    static MACHINE: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *MACHINE.get_or_init(|| {
        let machine = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| parse_meminfo(&m));
        let set = std::env::var(MEMORY_LIMIT_ENV).ok().and_then(|v| v.trim().parse::<u64>().ok()).filter(|&v| v > 0);
        [machine, set].into_iter().flatten().min()
    })
}

/// What is left of the address-space limit (`RLIMIT_AS`) beside this process's mapped size
/// (`VmSize` of `/proc/self/status`), in bytes; `None` without a limit or off Linux.
fn address_space_left() -> Option<u64> {
    let limit = parse_address_space_limit(&std::fs::read_to_string("/proc/self/limits").ok()?)?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let size_kb = status.lines().find_map(|l| l.strip_prefix("VmSize:")?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())?;
    Some(limit.saturating_sub(size_kb.saturating_mul(1024)))
}

/// The soft "Max address space" limit in bytes from the text of `/proc/self/limits`; `None` when
/// it is `unlimited` or absent.
pub(crate) fn parse_address_space_limit(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("Max address space"))?;
    line["Max address space".len()..].split_whitespace().next()?.parse::<u64>().ok()
}

/// `MemAvailable + SwapFree` in bytes from the text of `/proc/meminfo` (values in kB).
pub(crate) fn parse_meminfo(text: &str) -> Option<u64> {
    let field = |name: &str| {
        text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
    };
    Some(field("MemAvailable")?.saturating_add(field("SwapFree").unwrap_or(0)).saturating_mul(1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_space_limit_is_read_from_proc_limits() {
        let text = "Limit                     Soft Limit           Hard Limit           Units     \n\
                    Max stack size            8388608              unlimited            bytes     \n\
                    Max address space         6144000000           unlimited            bytes     \n";
        assert_eq!(parse_address_space_limit(text), Some(6_144_000_000));
        assert_eq!(parse_address_space_limit(&text.replace("6144000000", "unlimited")), None);
        assert_eq!(parse_address_space_limit("Max stack size 8388608 unlimited bytes\n"), None);
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
        if std::env::var_os("CHI_FILES_CHILD").is_some() {
            let e = read_file(std::path::Path::new("/dev/zero")).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::FileTooLarge);
            assert!(e.to_string().starts_with("gives more than the 100000-byte limit of one input file (set CHI_MAX_FILE_BYTES"), "{e}");
            let e = read_file(&std::env::current_exe().unwrap()).unwrap_err().to_string();
            assert!(e.contains("bytes is more than the 100000-byte limit"), "{e}");
            return;
        }
        if std::path::Path::new("/dev/zero").exists() {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "files::tests::files_are_read_whole_within_the_limit_and_refused_beyond_it", "--nocapture"])
                .env("CHI_FILES_CHILD", "1")
                .env(MAX_FILE_BYTES_ENV, "100000")
                .output()
                .unwrap();
            assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        }
    }
}
