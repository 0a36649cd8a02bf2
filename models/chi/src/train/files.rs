//! The file datasets of `chi train`: `--data PATH` (any file or folder [`chi_nn::userdata`]
//! reads) and the fetched image sets by name (`fashion-mnist`, `mnist`); the one-line summary of
//! what a run on them learns ([`describe`]); and the fingerprint of a run's data files
//! ([`DataFingerprint`]) that lets `--resume` refuse data that changed since the run started.

use chi_autodiff::Rng;
use chi_nn::data;
use chi_nn::dataset::{DataConfig, Dataset, Task};
use chi_nn::userdata::{self, clipped, short_list, Column, DataSchema, Encoder, Format};
use serde::{Deserialize, Serialize};

/// Fashion-MNIST's ten classes, in label order.
pub const FASHION_CLASSES: [&str; 10] = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"];

/// The dataset name of files given with `--data PATH`.
pub const FILE_DATASET: &str = "file";

/// Prints a loader's warnings (lossy text, imputed values) on stderr.
fn warn(warnings: &[String]) {
    for w in warnings {
        eprintln!("warning: {w}");
    }
}

/// `--data PATH`: reads the user's file or folder.
pub fn build_file_dataset(cfg: &DataConfig, rng: &mut Rng) -> Result<Dataset, String> {
    unused_by_files(cfg, FILE_DATASET)?;
    // What reading the file takes beyond the encoded data goes back to the system.
    let l = crate::allocator::returning_freed_memory(|| userdata::load(FILE_DATASET, cfg, rng))?;
    warn(&l.warnings);
    Ok(l.dataset)
}

/// The sizes and options of the synthetic datasets, which a file (or a named image set) does
/// not read: its examples, classes and labels are the file's.
fn unused_by_files(cfg: &DataConfig, name: &str) -> Result<(), String> {
    let what = format!("dataset {name}");
    chi_nn::dataset::check_options(&cfg.options, &[], &what).map_err(|e| e.to_string())?;
    chi_nn::dataset::check_unused_sizes(cfg, name, &["n_train", "n_test", "noise", "classes"]).map_err(|e| e.to_string())
}

/// A named image set takes only `split` (its validation share) among the file options.
fn only_split(cfg: &DataConfig, name: &str) -> Result<(), String> {
    match cfg.file_options_set().into_iter().find(|k| *k != "split") {
        Some(k) => Err(format!("dataset {name}: option {k} does not apply (its files are fixed; only `split` sets the validation share)")),
        None => Ok(()),
    }
}

/// `fashion-mnist`: its 60,000 training images (of which `split`'s validation share, default
/// 10%, is held out) and its 10,000 test images, standardised with the training statistics.
pub fn build_fashion_mnist(cfg: &DataConfig, rng: &mut Rng) -> Result<Dataset, String> {
    only_split(cfg, "fashion-mnist")?;
    unused_by_files(cfg, "fashion-mnist")?;
    let dir = data::require(data::Dataset::FashionMnist)?;
    let (train, test) = data::load_mnist_idx_dir(&dir).map_err(|e| e.to_string())?;
    let c = DataConfig { split: Some(cfg.split.clone().unwrap_or_else(|| vec![0.9, 0.1, 0.0])), ..DataConfig::default() };
    let l = userdata::from_image_sets("fashion-mnist", &train, Some(&test), Some(&FASHION_CLASSES), &c, rng)?;
    warn(&l.warnings);
    Ok(l.dataset)
}

/// `mnist`: the 10,000 fetched MNIST digits, split 80/10/10 (or by `split`), stratified.
pub fn build_mnist(cfg: &DataConfig, rng: &mut Rng) -> Result<Dataset, String> {
    only_split(cfg, "mnist")?;
    unused_by_files(cfg, "mnist")?;
    let dir = data::require(data::Dataset::Mnist)?;
    let all = data::load_mnist_json_dir(&dir).map_err(|e| e.to_string())?;
    let c = DataConfig { split: cfg.split.clone(), ..DataConfig::default() };
    let l = userdata::from_image_sets("mnist", &all, None, None, &c, rng)?;
    warn(&l.warnings);
    Ok(l.dataset)
}

// ------------------------------------------------------------------------------- data summary

/// One line that says what a run on the user's data learns: the target (or where the labels
/// come from) and the task with its classes, then the inputs — the feature columns (tabular),
/// the text column and vocabulary size (text), or the shape of an example (arrays). For example
/// `data: target "y" (regression), features x, z, value (3 numeric, 0 categorical)`.
pub fn describe(schema: &DataSchema, cfg: &DataConfig) -> String {
    let file_name = |p: &str| std::path::Path::new(p).file_name().map_or_else(|| p.to_string(), |n| n.to_string_lossy().to_string());
    let target = match (&schema.target, schema.format) {
        (Some(t), _) => format!("target \"{}\"", clipped(t)),
        (None, Format::Folder) => "labels from the class folders".to_string(),
        (None, Format::Lines) => "labels from the first field of each line".to_string(),
        (None, Format::Npy | Format::Idx) => match cfg.target.as_deref() {
            Some(t) => format!("labels from {}", clipped(&file_name(t))),
            None => "labels".to_string(),
        },
        (None, _) => "labels".to_string(),
    };
    let classes = schema.class_names();
    let task = match schema.task {
        Task::Regression => "regression".to_string(),
        Task::Binary => format!("binary: {}", short_list(&classes)),
        Task::Classification { classes: k } => format!("classification, {k} classes: {}", short_list(&classes)),
    };
    // A numeric target's task was decided from its values (whole numbers, at most 20 distinct:
    // classes; else regression): say so, and how to change it, where a file does not say.
    let numeric_classes = !classes.is_empty() && classes.iter().all(|c| c.trim().parse::<f64>().is_ok());
    let task = match (&schema.task, cfg.task.is_none() && matches!(schema.format, Format::Csv | Format::Tsv)) {
        (Task::Regression, true) => format!("{task}: the targets are numbers with fractions or over {} values; --task classification if they are classes", chi_nn::userdata::MAX_INTEGER_CLASSES),
        (Task::Classification { .. } | Task::Binary, true) if numeric_classes => {
            format!("{task}: the targets are whole numbers, at most {} distinct; --task regression if they are amounts", chi_nn::userdata::MAX_INTEGER_CLASSES)
        }
        _ => task,
    };
    let inputs = match &schema.encoder {
        Encoder::Tabular { columns } => {
            let names: Vec<String> = columns.iter().map(|c| c.name().to_string()).collect();
            let numeric = columns.iter().filter(|c| matches!(c, Column::Numeric { .. })).count();
            format!("features {} ({numeric} numeric, {} categorical)", short_list(&names), columns.len() - numeric)
        }
        Encoder::Text { vocab, text_column, .. } => {
            let source = match (text_column, schema.format) {
                (Some(c), _) => format!("text column \"{}\"", clipped(c)),
                (None, Format::Folder) => "texts (one per file)".to_string(),
                (None, Format::Lines) => "token lines".to_string(),
                (None, _) => "texts".to_string(),
            };
            format!("{source}, vocabulary {} (with <unk>)", vocab.len())
        }
        Encoder::Array { shape, .. } => match shape.as_slice() {
            [n] => format!("{n} features per example"),
            s => format!("{} {}", if s.len() >= 2 { "images" } else { "arrays" }, s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("×")),
        },
    };
    format!("data: {target} ({task}), {inputs}")
}

// ------------------------------------------------------------------------------- fingerprint

/// 64-bit FNV-1a, fed in pieces.
#[derive(Clone, Copy, Debug)]
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    /// Adds `bytes` to the hash.
    pub fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    /// The hash of everything added so far.
    pub fn finish(&self) -> u64 {
        self.0
    }
}

/// The fingerprint of one data source of a run (the data, a validation or test file, an
/// array's label file).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceFingerprint {
    /// What the source is to the run: `data`, `labels`, `validation`, `validation labels`,
    /// `test` or `test labels`.
    pub role: String,
    /// The path as the run's configuration names it.
    pub path: String,
    /// Files hashed (1 for a file; a folder's files, hidden ones excepted).
    pub files: u64,
    /// Bytes hashed.
    pub bytes: u64,
    /// 64-bit FNV-1a of the file's bytes; for a folder, of its files' relative paths (sorted),
    /// lengths and bytes. Written as 16 hex digits.
    pub fnv1a64: String,
}

/// The fingerprints of a run's data sources, recorded when the run starts
/// ([`DATA_FINGERPRINT_FILE`]) so that `--resume` can refuse data that changed since.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataFingerprint {
    /// One entry per source, in the order of [`DataFingerprint::of`].
    pub sources: Vec<SourceFingerprint>,
}

/// The run file that holds the [`DataFingerprint`] of a run on the user's data.
pub const DATA_FINGERPRINT_FILE: &str = "data-fingerprint.json";

/// Most nested folders a fingerprint descends into (a guard against links that loop).
const MAX_FOLDER_DEPTH: usize = 64;

/// The files and folders `cfg` reads, each with its role: the data, the validation and test
/// files when given, and for arrays (`.npy`, IDX) their label files. The run's record of the
/// user's data: fingerprinted, and never written over by the program.
pub fn data_sources(cfg: &DataConfig) -> Vec<(&'static str, String)> {
    let Some(path) = cfg.path.as_deref() else { return Vec::new() };
    let format = match cfg.format.as_deref() {
        Some(f) => Format::parse(f).ok(),
        None => Format::infer(std::path::Path::new(path)).ok(),
    };
    // For arrays the `target` options are label files; otherwise they are column names.
    let arrays = matches!(format, Some(Format::Npy | Format::Idx));
    let labels = |t: &Option<String>| if arrays { t.clone() } else { None };
    [
        ("data", Some(path.to_string())),
        ("labels", labels(&cfg.target)),
        ("validation", cfg.valid_path.clone()),
        ("validation labels", labels(&cfg.valid_target)),
        ("test", cfg.test_path.clone()),
        ("test labels", labels(&cfg.test_target)),
    ]
    .into_iter()
    .filter_map(|(role, p)| p.map(|p| (role, p)))
    .collect()
}

impl DataFingerprint {
    /// The fingerprints of the files and folders `cfg` reads ([`data_sources`]).
    pub fn of(cfg: &DataConfig) -> Result<DataFingerprint, String> {
        let sources = data_sources(cfg).into_iter().map(|(role, p)| fingerprint_path(role, &p)).collect::<Result<_, _>>()?;
        Ok(DataFingerprint { sources })
    }

    /// The first source whose fingerprint differs from `earlier`'s (or that one lacks), by role.
    pub fn changed_since<'a>(&'a self, earlier: &DataFingerprint) -> Option<&'a SourceFingerprint> {
        self.sources.iter().find(|s| earlier.sources.iter().find(|e| e.role == s.role).is_none_or(|e| e.bytes != s.bytes || e.fnv1a64 != s.fnv1a64 || e.files != s.files))
    }
}

/// The fingerprint of one file or folder.
fn fingerprint_path(role: &str, path: &str) -> Result<SourceFingerprint, String> {
    let p = std::path::Path::new(path);
    let mut h = Fnv1a::default();
    let (mut files, mut bytes) = (0u64, 0u64);
    if p.is_dir() {
        let mut visited = std::collections::HashSet::new();
        hash_folder(p, p, 0, &mut visited, &mut h, &mut files, &mut bytes)?;
    } else {
        bytes = hash_file(p, &mut h)?;
        files = 1;
    }
    Ok(SourceFingerprint { role: role.into(), path: path.into(), files, bytes, fnv1a64: format!("{:016x}", h.finish()) })
}

/// Feeds a file's bytes to `h`; returns their number.
pub(crate) fn hash_file(p: &std::path::Path, h: &mut Fnv1a) -> Result<u64, String> {
    use std::io::Read;
    let mut f = std::fs::File::open(p).map_err(|e| format!("{}: cannot read the data to fingerprint it: {e}", p.display()))?;
    let mut buf = vec![0u8; 1 << 16];
    let mut n = 0u64;
    loop {
        let k = f.read(&mut buf).map_err(|e| format!("{}: cannot read the data to fingerprint it: {e}", p.display()))?;
        if k == 0 {
            return Ok(n);
        }
        h.update(&buf[..k]);
        n += k as u64;
        if n > chi_nn::limits::max_file_bytes() {
            return Err(format!("{}: gives more than {} bytes, the limit of one input file (an endless stream?)", p.display(), chi_nn::limits::max_file_bytes()));
        }
    }
}

/// Feeds the files under `dir` to `h`, in sorted order of their paths relative to `root`: each
/// file's relative path, a NUL, its length (8 bytes, little-endian) and its bytes. Names
/// starting with `.` are skipped, as the data reader skips them.
fn hash_folder(
    root: &std::path::Path,
    dir: &std::path::Path,
    depth: usize,
    visited: &mut std::collections::HashSet<std::path::PathBuf>,
    h: &mut Fnv1a,
    files: &mut u64,
    bytes: &mut u64,
) -> Result<(), String> {
    let cannot = |e: std::io::Error| format!("{}: cannot read the data folder to fingerprint it: {e}", dir.display());
    // A folder reached twice (through a link) is hashed once.
    if depth > MAX_FOLDER_DEPTH || !visited.insert(std::fs::canonicalize(dir).map_err(cannot)?) {
        return Ok(());
    }
    let mut entries: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map_err(cannot)?
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            hash_folder(root, &p, depth + 1, visited, h, files, bytes)?;
        } else if p.is_file() {
            let rel = p.strip_prefix(root).unwrap_or(&p).to_string_lossy().replace('\\', "/");
            h.update(rel.as_bytes());
            h.update(&[0]);
            let len = std::fs::metadata(&p).map_err(|e| format!("{}: cannot read the data to fingerprint it: {e}", p.display()))?.len();
            h.update(&len.to_le_bytes());
            *bytes += hash_file(&p, h)?;
            *files += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The published FNV-1a 64 test vectors.
    #[test]
    fn fnv1a_matches_the_reference_values() {
        let hash = |s: &str| {
            let mut h = Fnv1a::default();
            h.update(s.as_bytes());
            h.finish()
        };
        assert_eq!(hash(""), 0xcbf29ce484222325);
        assert_eq!(hash("a"), 0xaf63dc4c8601ec8c);
        assert_eq!(hash("foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn a_folder_fingerprint_sees_contents_and_names_but_not_hidden_files() {
        let d = std::env::temp_dir().join(format!("chi-fingerprint-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("good")).unwrap();
        std::fs::create_dir_all(d.join("bad")).unwrap();
        std::fs::write(d.join("good/a.txt"), "fine work").unwrap();
        std::fs::write(d.join("bad/b.txt"), "broken").unwrap();
        let cfg = DataConfig { path: Some(d.display().to_string()), ..DataConfig::default() };
        let first = DataFingerprint::of(&cfg).unwrap();
        assert_eq!((first.sources.len(), first.sources[0].files, first.sources[0].bytes), (1, 2, 15));
        std::fs::write(d.join(".DS_Store"), "x").unwrap();
        assert!(DataFingerprint::of(&cfg).unwrap().changed_since(&first).is_none());
        std::fs::write(d.join("bad/b.txt"), "brokeN").unwrap();
        assert_eq!(DataFingerprint::of(&cfg).unwrap().changed_since(&first).map(|s| s.role.as_str()), Some("data"));
        std::fs::write(d.join("bad/b.txt"), "broken").unwrap();
        std::fs::rename(d.join("bad/b.txt"), d.join("good/b.txt")).unwrap();
        assert!(DataFingerprint::of(&cfg).unwrap().changed_since(&first).is_some(), "a file moved to another class");
        let _ = std::fs::remove_dir_all(&d);
    }
}
