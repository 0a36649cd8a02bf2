//! Ownership of a run directory: one run at a time, no silent mixing of two runs, exact resume.
//!
//! * **Lock.** A run holds an exclusive advisory lock ([`std::fs::File::try_lock`]) on
//!   `DIR/.chi.lock` for its whole life and writes its PID into the file. A second run in the
//!   same directory fails at once with an error naming the holder's PID. The operating system
//!   releases the lock when the holder exits or is killed; a lock file that still names a PID
//!   (the holder was killed before it could clear it) is taken over with a warning naming that
//!   PID.
//! * **Fresh runs need a fresh directory.** A new run (no `--resume`) in a directory that already
//!   holds a run's files ([`RUN_FILES`]) is refused, naming the files, unless `--overwrite` is
//!   given: then the whole directory is renamed to `DIR.old-YYYYMMDD-HHMMSS` (one atomic
//!   rename, so the old run is intact in one place) and the new run starts in a new, empty `DIR`.
//!   A directory without a run that holds files a run would write ([`OUTPUT_FILES`]: a user's
//!   own `data.json`, a plot) is refused with or without `--overwrite`, and left as it was (no
//!   lock file behind); other files of the user's (a config, notes) may share the directory.
//! * **Resume.** The directory's configuration is the truth ([`super::cli::resume_config`]); `--resume` in a
//!   directory without a run is an error.
//! * **Stale temporary files** left by a killed writer (`.NAME.tmp-PID`, see
//!   `chi_nn::checkpoint::atomic_write`) are removed once the lock is held.
//! * **Pruning** ([`prune_checkpoints`]) only ever deletes older checkpoints of the run in the
//!   directory; the newest `keep` (by step) always survive, so the one just written does.

use super::Config;
use chi_nn::checkpoint::{self, atomic_write};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Name of the lock file inside a run directory.
pub const LOCK_FILE: &str = ".chi.lock";

/// The files and directories that make a directory a run directory (`*.svg` / `*.png` plots are
/// not listed: they are redrawn from the logs).
pub const RUN_FILES: &[&str] = &[
    "config.toml",
    "checkpoints",
    "log.jsonl",
    "log.csv",
    "eval.jsonl",
    "gradflow.csv",
    "gradflow_time.csv",
    "model.safetensors",
    "summary.json",
    super::files::DATA_FINGERPRINT_FILE,
    SEQ2SEQ_SETTINGS_FILE,
];

/// The settings file of a sequence-to-sequence run ([`super::translation`]).
pub const SEQ2SEQ_SETTINGS_FILE: &str = "seq2seq.json";

/// The other files a training run writes into its directory: a directory without a run that
/// holds one of them (a user's own `data.json`, a plot) is not taken.
pub const OUTPUT_FILES: &[&str] = &[
    super::DATA_SCHEMA_FILE,
    "dist.json",
    "loss.svg",
    "loss.png",
    "eval.svg",
    "eval.png",
    "gradflow.svg",
    "gradflow.png",
    "gradflow_time.svg",
    "gradflow_time.png",
    "gradflow_time_lines.svg",
    "gradflow_time_lines.png",
];

/// Largest accepted TOML config file (1 MiB): a config is a few hundred bytes; the bound keeps
/// `--config /dev/zero` from reading forever.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The exclusive lock on a run directory, released (and its PID cleared) on drop.
#[derive(Debug)]
pub struct RunLock {
    file: File,
    path: PathBuf,
}

impl RunLock {
    /// Takes the lock on `dir` (creating `dir` if needed). Fails at once, naming the holder's
    /// PID, if another process holds it.
    pub fn acquire(dir: &Path) -> Result<RunLock, String> {
        if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) && !dir.exists() {
            let to = std::fs::read_link(dir).map(|t| t.display().to_string()).unwrap_or_default();
            return Err(format!("{} is a link to {to}, which does not exist: create that folder or choose another --out", dir.display()));
        }
        if dir.exists() && !dir.is_dir() {
            return Err(format!("--out {} is a file, not a directory: choose a directory for the run", dir.display()));
        }
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create the run directory: {e}", dir.display()))?;
        let path = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| format!("{}: cannot open the lock file: {e}", path.display()))?;
        let mut old = String::new();
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let _ = file.read_to_string(&mut old);
                let holder = old.trim();
                let who = if holder.is_empty() { "another process".to_string() } else { format!("another chi run (PID {holder})") };
                return Err(format!(
                    "{} is in use by {who}: two runs cannot share a directory (lock file {}); wait for it to finish or choose another --out",
                    dir.display(),
                    path.display()
                ));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(format!("{}: cannot lock: {e}", path.display())),
        }
        // A chi lock file is empty or holds a PID; anything else is a file of the user's that
        // happens to have this name, and is left as it is (at most 64 bytes are read to tell).
        let mut head = Vec::new();
        let _ = (&mut file).take(64).read_to_end(&mut head);
        if !head.iter().all(|b| b.is_ascii_digit() || b.is_ascii_whitespace()) {
            return Err(format!(
                "{} exists and is not a chi lock file: chi keeps its lock there and will not overwrite it; move the file or choose another --out",
                path.display()
            ));
        }
        old = String::from_utf8_lossy(&head).into_owned();
        let stale = old.trim();
        if !stale.is_empty() && stale != std::process::id().to_string() {
            eprintln!("chi: warning: {}: taking over a stale lock of PID {stale}, which ended without releasing it", dir.display());
        }
        let write = |f: &mut File| -> std::io::Result<()> {
            f.set_len(0)?;
            f.seek(SeekFrom::Start(0))?;
            writeln!(f, "{}", std::process::id())?;
            f.sync_all()
        };
        write(&mut file).map_err(|e| format!("{}: cannot write the lock file: {e}", path.display()))?;
        Ok(RunLock { file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Clear the PID first, so that the next run does not report a stale lock.
        let _ = self.file.set_len(0);
        let _ = self.file.unlock();
    }
}

/// The run files present in `dir` (names from [`RUN_FILES`]; an empty `checkpoints/` does not
/// count).
pub fn run_files(dir: &Path) -> Vec<&'static str> {
    RUN_FILES
        .iter()
        .copied()
        .filter(|f| {
            let p = dir.join(f);
            if *f == "checkpoints" {
                std::fs::read_dir(&p).map(|mut d| d.next().is_some()).unwrap_or(false)
            } else {
                p.exists()
            }
        })
        .collect()
}

/// Whether `path` (which need not exist yet) is `dir` or lies under it, links resolved. With a
/// file for `dir`, whether `path` is that file (as [`same_file`], also for a path not yet made).
pub fn lies_within(path: &Path, dir: &Path) -> bool {
    let Ok(dir) = std::fs::canonicalize(dir) else { return false };
    let Ok(abs) = std::path::absolute(path) else { return false };
    // The deepest existing ancestor, resolved, plus the parts that do not exist yet.
    let mut base = abs.as_path();
    let mut rest = Vec::new();
    while !base.exists() {
        let (Some(parent), Some(name)) = (base.parent(), base.file_name()) else { return false };
        rest.push(name.to_owned());
        base = parent;
    }
    let Ok(mut full) = std::fs::canonicalize(base) else { return false };
    full.extend(rest.iter().rev());
    full.starts_with(&dir)
}

/// `YYYYMMDD-HHMMSS` (UTC) of now.
fn timestamp() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms").
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}{m:02}{d:02}-{:02}{:02}{:02}", rem / 3600, rem / 60 % 60, rem % 60)
}

/// Renames `dir` to a free `DIR.old-YYYYMMDD-HHMMSS[-N]` sibling and returns the new path.
///
/// When `dir` is a symbolic link, the folder it leads to is the run: that folder is renamed
/// (beside itself) and made again, empty, so the user's link, often to other storage, leads to
/// the new run.
pub fn archive(dir: &Path) -> Result<PathBuf, String> {
    let is_link = std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink());
    let real = if is_link { std::fs::canonicalize(dir).map_err(|e| format!("{}: cannot follow the link: {e}", dir.display()))? } else { dir.to_path_buf() };
    let name = real.file_name().ok_or_else(|| format!("{}: cannot move this directory aside (no directory name); choose another --out", dir.display()))?;
    let base = format!("{}.old-{}", name.to_string_lossy(), timestamp());
    let mut target = real.with_file_name(&base);
    let mut n = 1;
    while target.exists() {
        n += 1;
        target = real.with_file_name(format!("{base}-{n}"));
    }
    std::fs::rename(&real, &target).map_err(|e| format!("{}: cannot move the old run aside to {}: {e}", real.display(), target.display()))?;
    if is_link {
        std::fs::create_dir(&real).map_err(|e| format!("{}: moved the old run to {}, but cannot make the folder {dir_} leads to again: {e}", real.display(), target.display(), dir_ = dir.display()))?;
    }
    Ok(target)
}

/// Removes temporary files of interrupted atomic writes (`.NAME.tmp-PID`) in `dir`. Only called
/// while holding the directory's lock, so no live writer owns them.
pub fn remove_stale_temps(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with('.') && name.contains(".tmp-") && e.file_type().map(|t| t.is_file()).unwrap_or(false) && std::fs::remove_file(e.path()).is_ok() {
            n += 1;
        }
    }
    n
}

/// Prepares `dir` for a run and returns its lock: takes the lock; refuses a fresh run
/// (`resume = false`) in a directory holding another run unless `overwrite`, which moves the
/// old run aside first (and says so on stderr); removes stale temporary files.
pub fn prepare(dir: &Path, resume: bool, overwrite: bool) -> Result<RunLock, String> {
    check_new_name("--out", dir)?;
    if resume && overwrite {
        return Err("--resume and --overwrite contradict each other: --resume continues the run in the directory, --overwrite moves it aside".into());
    }
    let had_lock = dir.join(LOCK_FILE).exists();
    let mut lock = RunLock::acquire(dir)?;
    if !resume {
        let found = run_files(dir);
        let clash: Vec<&str> = if found.is_empty() { OUTPUT_FILES.iter().copied().filter(|f| dir.join(f).exists()).collect() } else { Vec::new() };
        if !clash.is_empty() {
            // Not a run, but the user's own files of the names a run writes (a `data.json`, a
            // plot): the run would replace them, and --overwrite would move the user's folder
            // itself aside. Refused either way, leaving the folder as it was.
            drop(lock);
            if !had_lock {
                let _ = std::fs::remove_file(dir.join(LOCK_FILE));
            }
            return Err(format!(
                "{} holds no chi run but has files a run would write over ({}); move them, or choose another --out",
                dir.display(),
                clash.join(", ")
            ));
        }
        if !found.is_empty() {
            if !overwrite {
                return Err(format!(
                    "{} already holds a run ({}); pass --resume to continue it, --overwrite to move it aside (to {}.old-<time>), or choose another --out",
                    dir.display(),
                    found.join(", "),
                    dir.display()
                ));
            }
            let moved = archive(dir)?;
            // The old lock moved with the directory; take the new directory's before releasing it.
            let new_lock = RunLock::acquire(dir)?;
            drop(std::mem::replace(&mut lock, new_lock));
            let _ = std::fs::remove_file(moved.join(LOCK_FILE));
            let link = if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) { " (the folder the link leads to; the link stays)" } else { "" };
            eprintln!("chi: --overwrite: moved the previous run in {} to {}{link}", dir.display(), moved.display());
        }
    }
    let stale = remove_stale_temps(dir) + remove_stale_temps(&dir.join("checkpoints"));
    if stale > 0 {
        eprintln!("chi: removed {stale} temporary file(s) left by an interrupted write in {}", dir.display());
    }
    Ok(lock)
}

/// Reads a TOML config file of at most [`MAX_CONFIG_BYTES`].
pub fn read_config_text(path: &Path) -> Result<String, String> {
    if path.is_dir() {
        return Err(format!("{} is a directory, not a config file (TOML)", path.display()));
    }
    let f = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    f.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(format!("{}: larger than {MAX_CONFIG_BYTES} bytes; not a config file", path.display()));
    }
    String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))
}

/// Where a resumed run continues: the latest checkpoint (if any) and the directory's
/// configuration.
#[derive(Debug)]
pub struct ResumePoint {
    /// The run's configuration: the latest checkpoint's, else `DIR/config.toml`.
    pub config: Config,
    /// The latest checkpoint and its step (`None`: the run was stopped before its first
    /// checkpoint; it restarts from step 0 with the directory's configuration).
    pub checkpoint: Option<(PathBuf, u64)>,
}

/// The configuration and checkpoint `--resume` continues from in `dir`. An error if `dir` holds
/// no run (neither a checkpoint nor `config.toml`).
pub fn resume_point(dir: &Path) -> Result<ResumePoint, String> {
    let ckdir = dir.join("checkpoints");
    let cfg_path = dir.join("config.toml");
    let mut all = checkpoint::list_checkpoints(&ckdir);
    if let Some((named, latest)) = all.pop() {
        // A damaged latest checkpoint (a kill mid-copy, a full disk) leaves the older ones.
        let meta = checkpoint::read_checkpoint_meta(&latest).map_err(|e| match all.last() {
            Some((_, older)) => format!("{e}; an older checkpoint is {}: move the damaged one out of {} to resume from it", older.display(), ckdir.display()),
            None => e.to_string(),
        })?;
        let config: Config = serde_json::from_str(&meta.config).map_err(|e| format!("{}: bad config in checkpoint: {e}", latest.display()))?;
        // A checkpoint copied in from another run (or renamed) would continue that run's model
        // under this run's logs. The run writes `step-N` at step N, and its config.toml is the
        // checkpoint's configuration up to the `--steps` a resume may change; an unreadable
        // config.toml is rewritten from the checkpoint.
        if meta.step != named {
            return Err(format!(
                "--resume: {} holds step {} but is named for step {named}: not a checkpoint this run wrote there (renamed, or copied from another run?); move it out of {} to resume from the one before",
                latest.display(),
                meta.step,
                ckdir.display()
            ));
        }
        let ours = read_config_text(&cfg_path).ok().and_then(|t| Config::from_toml(&t).ok());
        if let Some(ours) = ours.filter(|c| !c.same_run_as(&config)) {
            return Err(format!(
                "--resume: {} is not a checkpoint of the run in {}: its configuration differs from {} ({}); a checkpoint copied from another run, or an edited config.toml? Move the checkpoint out, or restore config.toml",
                latest.display(),
                dir.display(),
                cfg_path.display(),
                super::config_diff_as(&ours, "in the run", &config, "in the checkpoint")
            ));
        }
        return Ok(ResumePoint { config, checkpoint: Some((latest, meta.step)) });
    }
    // Without a checkpoint a resume starts again from step 0; over a run that wrote its final
    // model that would train it again and replace the model, so it is refused.
    if let Some(f) = ["model.safetensors", "summary.json"].into_iter().find(|f| dir.join(f).is_file()) {
        return Err(format!(
            "--resume: {} holds a run that wrote its {f}, but no checkpoint in {} to continue from: resuming would train again from step 0 and replace it; start a new run in another --out, or with --overwrite (the old run is moved aside)",
            dir.display(),
            ckdir.display()
        ));
    }
    if cfg_path.is_file() {
        let config = Config::from_toml(&read_config_text(&cfg_path)?).map_err(|e| format!("{}: {e}", cfg_path.display()))?;
        return Ok(ResumePoint { config, checkpoint: None });
    }
    Err(format!("--resume: nothing to resume in {} (no checkpoint in {} and no config.toml); start a new run without --resume", dir.display(), ckdir.display()))
}

/// Whether the run in `dir` finished at `step` of its `steps`: the final checkpoint is that
/// step and the summary is written.
pub fn is_finished(dir: &Path, step: u64, steps: u64) -> bool {
    step == steps && dir.join("summary.json").is_file() && dir.join("model.safetensors").is_file()
}

/// Deletes all but the newest `keep` checkpoints (by step) of `dir`; `keep = 0` keeps all.
/// The checkpoint just written has the highest step of the run (the directory belongs to one
/// run, see the module docs), so it is never deleted.
pub fn prune_checkpoints(dir: &Path, keep: usize) {
    checkpoint::prune_checkpoints(dir, keep)
}

/// Whether two paths name the same existing file (or directory), links and `..` resolved.
pub use chi_nn::checkpoint::same_file;

/// Checks a directory the user named for a command's output files (`chi eval --report DIR`,
/// `chi explain --dir DIR`) before anything is written: it is not a file, it does not lie inside
/// the model's data ([`super::files::data_sources`] of `data`) or the command's `input` (a text
/// folder would read the files as examples, as [`super::train`] refuses an `--out` there), and if
/// it exists, none of the files the command writes (`names`) is already there unless `ours(dir)`
/// recognises them as an earlier output of the same command (which is replaced, as the command's
/// own default directory is).
pub fn check_output_dir(flag: &str, dir: &Path, data: &chi_nn::dataset::DataConfig, input: Option<&Path>, names: &[&str], ours: impl Fn(&Path) -> bool) -> Result<(), String> {
    check_new_name(flag, dir)?;
    if dir.exists() && !dir.is_dir() {
        return Err(format!("{flag} {} is a file, not a directory", dir.display()));
    }
    let sources = super::files::data_sources(data).into_iter().map(|(_, d)| PathBuf::from(d));
    if let Some(d) = sources.chain(input.map(Path::to_path_buf)).find(|d| lies_within(dir, d)) {
        return Err(format!("{flag} {} is inside the data {}: its files would be read as data next time; choose a directory outside it", dir.display(), d.display()));
    }
    let taken: Vec<&str> = names.iter().copied().filter(|n| dir.join(n).symlink_metadata().is_ok()).collect();
    if !taken.is_empty() && !ours(dir) {
        return Err(format!("{flag} {} has files it would write over that chi did not write ({}); move them, or choose another directory", dir.display(), taken.join(", ")));
    }
    Ok(())
}

/// Whether `file` holds JSON, and with `keys`, an object with every one of them (an output chi
/// wrote).
pub fn json_with_keys(file: &Path, keys: &[&str]) -> bool {
    chi_nn::limits::read_file(file)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|v| keys.iter().all(|k| v.get(k).is_some()))
}

/// The run directory one of whose own files `path` names (links resolved; `path` need not
/// exist): a name of [`RUN_FILES`] or [`OUTPUT_FILES`], the lock file, or anything under one of
/// them (a checkpoint) in the nearest enclosing run directory. `None` for any other path, such
/// as predictions written beside a run's files.
pub fn run_of(path: &Path) -> Option<PathBuf> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let full = std::fs::canonicalize(parent).ok()?.join(path.file_name()?);
    let mut below = full.as_path();
    while let Some(dir) = below.parent() {
        if !run_files(dir).is_empty() {
            let name = below.file_name()?.to_str()?;
            return (RUN_FILES.contains(&name) || OUTPUT_FILES.contains(&name) || name == LOCK_FILE).then(|| dir.to_path_buf());
        }
        below = dir;
    }
    None
}

/// How much of an existing file [`check_text_output`] reads to tell text from binary.
const TEXT_SNIFF_BYTES: u64 = 8192;

/// Refuses an output path chi would create whose name holds a control character (`--out
/// $'runs\n'`, a pasted tab): legal on Linux, but printed raw it splits the messages that name
/// it, and the next command typed by hand does not find it. Paths that already exist are the
/// user's to name.
pub fn check_new_name(flag: &str, path: &Path) -> Result<(), String> {
    if path.symlink_metadata().is_err() && path.to_string_lossy().chars().any(char::is_control) {
        return Err(format!("{flag} {:?} holds a control character (a newline or tab?); name it without one", path.display().to_string()));
    }
    Ok(())
}

/// Whether `path` may take a text output that replaces whatever is there (`chi embed corpus
/// --out`, `chi embed train --vectors-out`, `chi predict --output`): it is not a directory, not
/// one of a run directory's own files (its model, config, logs, checkpoints), and if it exists
/// it is text (no NUL byte in its first 8 KiB), so that a mistyped path cannot replace a model or
/// another binary file. `flag` names the option in the error.
pub fn check_text_output(flag: &str, path: &Path) -> Result<(), String> {
    check_new_name(flag, path)?;
    if path.is_dir() {
        return Err(format!("{flag} {} is a directory; name a file", path.display()));
    }
    if let Some(run) = run_of(path) {
        return Err(format!("{flag} {} is a file of the run in {}; write elsewhere", path.display(), run.display()));
    }
    if path.is_file() {
        let mut head = Vec::new();
        let read = File::open(path).and_then(|f| f.take(TEXT_SNIFF_BYTES).read_to_end(&mut head));
        if let Err(e) = read {
            return Err(format!("{flag} {}: cannot read the file it would replace: {e}", path.display()));
        }
        if head.contains(&0) {
            return Err(format!("{flag} {} exists and is not a text file; name a new file (or remove it first)", path.display()));
        }
    }
    Ok(())
}

/// Writes `text` atomically (used for run files that replace earlier versions).
pub fn write_atomic(path: &Path, text: &str) -> Result<(), String> {
    atomic_write(path, text.as_bytes()).map_err(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_output_names_with_control_characters_are_refused() {
        let e = check_new_name("--out", Path::new("/nonexistent-chi/runs\n")).unwrap_err();
        assert_eq!(e, "--out \"/nonexistent-chi/runs\\n\" holds a control character (a newline or tab?); name it without one");
        assert!(check_text_output("--output", Path::new("/nonexistent-chi/a\tb.csv")).is_err());
        assert!(check_new_name("--out", Path::new("/nonexistent-chi/runs")).is_ok());
        // A directory that already exists under such a name is the user's choice.
        let d = std::env::temp_dir().join(format!("chi-name-{}\n", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        assert!(check_new_name("--out", &d).is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_dangling_link_as_run_directory_is_named_as_such() {
        let d = tmp("dangling");
        std::fs::create_dir_all(&d).unwrap();
        std::os::unix::fs::symlink(d.join("gone"), d.join("run")).unwrap();
        let e = RunLock::acquire(&d.join("run")).unwrap_err();
        assert!(e.contains("is a link to") && e.contains("gone") && e.contains("does not exist"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_text_output_replaces_text_but_not_binary_files_directories_or_a_runs_files() {
        let d = tmp("text-output");
        std::fs::create_dir_all(d.join("run/checkpoints")).unwrap();
        std::fs::write(d.join("run/config.toml"), "model = \"mlp\"\n").unwrap();
        std::fs::write(d.join("run/checkpoints/step-1.safetensors"), [1u8, 0, 2]).unwrap();
        std::fs::write(d.join("old.txt"), "the old corpus\n").unwrap();
        std::fs::write(d.join("model.bin"), [8u8, 0, 0, 0, 0, 0, 0, 0, b'{']).unwrap();
        let check = |p: &str| check_text_output("--out", &d.join(p));
        assert!(check("old.txt").is_ok(), "text is replaced");
        assert!(check("new.txt").is_ok(), "a new file");
        assert!(check("run/notes.txt").is_ok(), "another file beside a run");
        let err = |p: &str| check(p).unwrap_err();
        assert!(err("model.bin").contains("exists and is not a text file"), "{}", err("model.bin"));
        assert!(err("run").contains("is a directory"));
        for f in ["run/config.toml", "run/model.safetensors", "run/log.csv", "run/data.json", "run/checkpoints/step-2.safetensors"] {
            assert!(err(f).contains("is a file of the run in"), "{f}: {}", err(f));
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("chi-rundir-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn a_users_file_named_like_the_lock_is_left_alone() {
        let d = tmp("foreign-lock");
        std::fs::create_dir_all(&d).unwrap();
        for content in [&b"my notes on the run\n"[..], &[0xff, 0xfe, 0x00, 0x41][..], &b"123 then words"[..]] {
            std::fs::write(d.join(LOCK_FILE), content).unwrap();
            let e = RunLock::acquire(&d).unwrap_err();
            assert!(e.contains("is not a chi lock file") && e.contains(LOCK_FILE), "{e}");
            assert_eq!(std::fs::read(d.join(LOCK_FILE)).unwrap(), content, "the file was changed");
        }
        // A stale chi lock (a PID, or empty) is taken over.
        std::fs::write(d.join(LOCK_FILE), "4194303\n").unwrap();
        let lock = RunLock::acquire(&d).unwrap();
        drop(lock);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn lock_is_exclusive_and_released_on_drop() {
        let d = tmp("lock");
        let a = RunLock::acquire(&d).unwrap();
        let e = RunLock::acquire(&d).unwrap_err();
        assert!(e.contains(&format!("PID {}", std::process::id())) && e.contains("in use"), "{e}");
        drop(a);
        assert_eq!(std::fs::read_to_string(d.join(LOCK_FILE)).unwrap(), "");
        let _b = RunLock::acquire(&d).unwrap();
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn fresh_run_refused_in_a_run_directory_unless_overwrite() {
        let d = tmp("fresh");
        drop(prepare(&d, false, false).unwrap());
        std::fs::write(d.join("config.toml"), "steps = 3\n").unwrap();
        std::fs::write(d.join(".log.jsonl.tmp-1"), "x").unwrap();
        let e = prepare(&d, false, false).unwrap_err();
        assert!(e.contains("already holds a run") && e.contains("config.toml") && e.contains("--overwrite"), "{e}");
        let lock = prepare(&d, true, false).unwrap();
        assert!(!d.join(".log.jsonl.tmp-1").exists(), "stale temporary file kept");
        drop(lock);
        let _l = prepare(&d, false, true).unwrap();
        assert!(run_files(&d).is_empty());
        let moved: Vec<_> = std::fs::read_dir(d.parent().unwrap())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&format!("{}.old-", d.file_name().unwrap().to_string_lossy())))
            .collect();
        assert_eq!(moved.len(), 1);
        assert_eq!(std::fs::read_to_string(moved[0].path().join("config.toml")).unwrap(), "steps = 3\n");
        let _ = std::fs::remove_dir_all(moved[0].path());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn overwrite_through_a_link_moves_the_folder_it_leads_to_and_keeps_the_link() {
        let root = tmp("link");
        let real = root.join("storage").join("run");
        std::fs::create_dir_all(&real).unwrap();
        let link = root.join("lnk");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        drop(prepare(&link, false, false).unwrap());
        std::fs::write(link.join("config.toml"), "steps = 3\n").unwrap();
        drop(prepare(&link, false, true).unwrap());
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
        assert_eq!(std::fs::canonicalize(&link).unwrap(), std::fs::canonicalize(&real).unwrap());
        assert!(run_files(&real).is_empty(), "the new run's folder holds the old run");
        let moved: Vec<_> = std::fs::read_dir(root.join("storage")).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().starts_with("run.old-")).collect();
        assert_eq!(moved.len(), 1);
        assert_eq!(std::fs::read_to_string(moved[0].path().join("config.toml")).unwrap(), "steps = 3\n");
        assert!(!root.read_dir().unwrap().flatten().any(|e| e.file_name().to_string_lossy().starts_with("lnk.old-")));
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn resume_needs_a_run_and_config_size_is_bounded() {
        let d = tmp("resume");
        std::fs::create_dir_all(&d).unwrap();
        assert!(resume_point(&d).unwrap_err().contains("nothing to resume"));
        std::fs::write(d.join("config.toml"), "steps = 7\n").unwrap();
        let r = resume_point(&d).unwrap();
        assert_eq!((r.config.steps, r.checkpoint.is_none()), (7, true));
        // A finished run whose checkpoints are gone is not trained again from step 0.
        for f in ["model.safetensors", "summary.json"] {
            std::fs::write(d.join(f), "x").unwrap();
            let e = resume_point(&d).unwrap_err();
            assert!(e.contains(f) && e.contains("no checkpoint") && e.contains("--overwrite"), "{e}");
            std::fs::remove_file(d.join(f)).unwrap();
        }
        let big = d.join("big.toml");
        std::fs::write(&big, vec![b'#'; MAX_CONFIG_BYTES as usize + 1]).unwrap();
        assert!(read_config_text(&big).unwrap_err().contains("larger than"));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn timestamps_are_civil_dates() {
        let t = timestamp();
        assert_eq!(t.len(), 15, "{t}");
        assert!(t.starts_with("20"), "{t}");
    }
}
