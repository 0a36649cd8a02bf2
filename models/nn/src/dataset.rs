//! Datasets for `chi train`: a small in-memory representation general enough for dense
//! features, token sequences and sentence pairs, the built-in synthetic datasets, and the
//! seeded mini-batch [`Batcher`].

use crate::error::NnError;
use crate::userdata::text::{Tokenizer, Vocab};
use std::path::Path;
use chi_autodiff::{Rng, Tensor};
use serde::{Deserialize, Serialize};

/// What the targets mean (decides the loss and the metrics).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Task {
    /// Class labels; the model outputs `[batch, classes]` logits; softmax cross-entropy.
    Classification {
        /// Number of classes.
        classes: usize,
    },
    /// Labels 0/1; the model outputs `[batch]` (or `[batch, 1]`) logits; sigmoid cross-entropy.
    Binary,
    /// Real targets; the model outputs `[batch]` (or `[batch, 1]`); mean squared error.
    Regression,
}

/// The inputs of a split.
#[derive(Clone, Debug)]
pub enum Inputs {
    /// Fixed-size examples, row-major: example `i` is `x[i·k..(i+1)·k]` with `k = Π shape`.
    Dense {
        /// All values.
        x: Vec<f32>,
        /// Shape of one example (`[2]` for points, `[1, 28, 28]` for images).
        shape: Vec<usize>,
    },
    /// Token-id sequences (variable length).
    Tokens {
        /// One sequence per example.
        seqs: Vec<Vec<usize>>,
        /// Vocabulary size.
        vocab: usize,
    },
    /// Pairs of token sequences (sentence similarity).
    TokenPairs {
        /// One pair per example.
        pairs: Vec<(Vec<usize>, Vec<usize>)>,
        /// Vocabulary size.
        vocab: usize,
    },
}

impl Inputs {
    /// Number of examples.
    pub fn len(&self) -> usize {
        match self {
            Inputs::Dense { x, shape } => x.len() / shape.iter().product::<usize>().max(1),
            Inputs::Tokens { seqs, .. } => seqs.len(),
            Inputs::TokenPairs { pairs, .. } => pairs.len(),
        }
    }
    /// Whether there are no examples.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The examples `idx` of a dense split as a `[idx.len(), shape...]` constant. Panics on
    /// token inputs.
    pub fn dense_batch(&self, idx: &[usize]) -> Tensor<f32> {
        let Inputs::Dense { x, shape } = self else { panic!("dense_batch: inputs are not dense") };
        let k: usize = shape.iter().product();
        let mut v = Vec::with_capacity(idx.len() * k);
        for &i in idx {
            v.extend_from_slice(&x[i * k..(i + 1) * k]);
        }
        let mut s = vec![idx.len()];
        s.extend_from_slice(shape);
        Tensor::from_vec(v, &s)
    }
}

/// The targets of a split.
#[derive(Clone, Debug)]
pub enum Targets {
    /// Class labels (classification, or 0/1 for binary).
    Classes(Vec<usize>),
    /// Real values (regression, or 0/1 for binary).
    Values(Vec<f32>),
}

impl Targets {
    /// Number of targets.
    pub fn len(&self) -> usize {
        match self {
            Targets::Classes(v) => v.len(),
            Targets::Values(v) => v.len(),
        }
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Target `i` as a real number.
    pub fn value(&self, i: usize) -> f64 {
        match self {
            Targets::Classes(v) => v[i] as f64,
            Targets::Values(v) => v[i] as f64,
        }
    }
    /// Target `i` as a class.
    pub fn class(&self, i: usize) -> usize {
        match self {
            Targets::Classes(v) => v[i],
            Targets::Values(v) => v[i].round().max(0.0) as usize,
        }
    }
}

/// One split (train or test).
#[derive(Clone, Debug)]
pub struct Split {
    /// Inputs.
    pub inputs: Inputs,
    /// Targets, one per example.
    pub targets: Targets,
}

impl Split {
    /// Number of examples.
    pub fn len(&self) -> usize {
        self.inputs.len()
    }
    /// Whether the split is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A dataset: a task and its train and test splits.
#[derive(Clone, Debug)]
pub struct Dataset {
    /// Registry name.
    pub name: String,
    /// What the targets mean.
    pub task: Task,
    /// Training split.
    pub train: Split,
    /// Validation split, when the dataset has one (evaluated during training; the test split
    /// is kept for the end).
    pub valid: Option<Split>,
    /// Test split.
    pub test: Split,
    /// How the files of a file dataset are read and encoded (saved with a run as `data.json`);
    /// `None` for the built-in datasets.
    pub schema: Option<Box<DataSchema>>,
}

/// Options of the built-in synthetic datasets (and, via `options`, of any registered one).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DataConfig {
    /// Training examples (synthetic datasets).
    pub n_train: usize,
    /// Test examples (synthetic datasets).
    pub n_test: usize,
    /// Noise level (synthetic datasets).
    pub noise: f64,
    /// Number of classes (spirals).
    pub classes: usize,
    /// Where to read data from (file datasets; see [`crate::userdata`]).
    pub path: Option<String>,
    /// File format: csv, tsv, folder, lines, npy, idx (inferred from `path` when absent).
    pub format: Option<String>,
    /// Target column (CSV) or label file (npy, IDX).
    pub target: Option<String>,
    /// Feature columns (CSV; default: all but the target).
    pub features: Option<Vec<String>>,
    /// Text column (CSV text classification; detected when absent).
    pub text_column: Option<String>,
    /// `classification` or `regression` (inferred from the target when absent).
    pub task: Option<String>,
    /// Whether a CSV has a header row (detected when absent).
    pub header: Option<bool>,
    /// Train, validation and test fractions of one file (default 0.8, 0.1, 0.1), split with
    /// the run's seed, stratified by class.
    pub split: Option<Vec<f64>>,
    /// Validation file (instead of a share of `path`).
    pub valid_path: Option<String>,
    /// Label file of an array validation file.
    pub valid_target: Option<String>,
    /// Test file (instead of a share of `path`).
    pub test_path: Option<String>,
    /// Label file of an array test file.
    pub test_target: Option<String>,
    /// Text: most vocabulary entries kept, `<unk>` included (default 20000; 0 = all).
    pub max_vocab: Option<usize>,
    /// Text: fewest occurrences of a kept token (default 1).
    pub min_count: Option<usize>,
    /// Text: most tokens kept per text (default 400; `chi train` gives the averaging text models
    /// bow and ca-bsfe 5000).
    pub max_len: Option<usize>,
    /// Text: lower-case before tokenizing (default true; false for `lines`).
    pub lowercase: Option<bool>,
    /// Dataset-specific options.
    pub options: serde_json::Map<String, serde_json::Value>,
}

impl Default for DataConfig {
    fn default() -> Self {
        DataConfig {
            n_train: 1000,
            n_test: 500,
            noise: 0.1,
            classes: 3,
            path: None,
            format: None,
            target: None,
            features: None,
            text_column: None,
            task: None,
            header: None,
            split: None,
            valid_path: None,
            valid_target: None,
            test_path: None,
            test_target: None,
            max_vocab: None,
            min_count: None,
            max_len: None,
            lowercase: None,
            options: Default::default(),
        }
    }
}

/// `classes` interleaved spiral arms in the plane with Gaussian noise (a classic non-linear
/// classification toy). Example `i` of class `c`: radius `r ∈ [0, 1]`, angle
/// `θ = 2π·c/classes + 4r + noise`.
pub fn spirals(cfg: &DataConfig, rng: &mut Rng) -> Result<Dataset, NnError> {
    check_options(&cfg.options, &[], "dataset spirals")?;
    check_no_path(cfg, "spirals")?;
    let k = cfg.classes;
    if k < 2 {
        return Err(NnError::invalid("dataset spirals", "classes", k, "need at least 2"));
    }
    let make = |n: usize, rng: &mut Rng| {
        let mut x = Vec::with_capacity(2 * n);
        let mut y = Vec::with_capacity(n);
        for _ in 0..n {
            let c = rng.below(k);
            let r = rng.next_f64();
            let th = 2.0 * std::f64::consts::PI * c as f64 / k as f64 + 4.0 * r + cfg.noise * rng.normal();
            x.push((r * th.cos()) as f32);
            x.push((r * th.sin()) as f32);
            y.push(c);
        }
        Split { inputs: Inputs::Dense { x, shape: vec![2] }, targets: Targets::Classes(y) }
    };
    let train = make(cfg.n_train, rng);
    let test = make(cfg.n_test, rng);
    Ok(Dataset { name: "spirals".into(), task: Task::Classification { classes: k }, train, valid: None, test, schema: None })
}

/// Noisy XOR: points uniform in `[−1, 1]²`, label 1 when `x·y > 0`, each label flipped with
/// probability `noise`. A binary task (sigmoid output).
pub fn xor_noise(cfg: &DataConfig, rng: &mut Rng) -> Result<Dataset, NnError> {
    check_options(&cfg.options, &[], "dataset xor-noise")?;
    check_no_path(cfg, "xor-noise")?;
    check_unused_sizes(cfg, "xor-noise", &["classes"])?;
    if !(0.0..=1.0).contains(&cfg.noise) {
        return Err(NnError::invalid("dataset xor-noise", "noise", cfg.noise, "a label-flip probability: 0 to 1"));
    }
    let make = |n: usize, rng: &mut Rng| {
        let mut x = Vec::with_capacity(2 * n);
        let mut y = Vec::with_capacity(n);
        for _ in 0..n {
            let a = rng.uniform(-1.0, 1.0);
            let b = rng.uniform(-1.0, 1.0);
            let mut l = a * b > 0.0;
            if rng.next_f64() < cfg.noise {
                l = !l;
            }
            x.push(a as f32);
            x.push(b as f32);
            y.push(l as usize);
        }
        Split { inputs: Inputs::Dense { x, shape: vec![2] }, targets: Targets::Classes(y) }
    };
    let train = make(cfg.n_train, rng);
    let test = make(cfg.n_test, rng);
    Ok(Dataset { name: "xor-noise".into(), task: Task::Binary, train, valid: None, test, schema: None })
}

/// The paper's smooth surface ([CAML](crate#references) §4.5.1) as regression: `z = x·exp(−x² − y²)` for
/// `(x, y)` uniform in `[−2, 2]²`, plus Gaussian noise of std `noise`.
pub fn surface(cfg: &DataConfig, rng: &mut Rng) -> Result<Dataset, NnError> {
    check_options(&cfg.options, &[], "dataset surface")?;
    check_no_path(cfg, "surface")?;
    check_unused_sizes(cfg, "surface", &["classes"])?;
    let make = |n: usize, rng: &mut Rng| {
        let mut x = Vec::with_capacity(2 * n);
        let mut y = Vec::with_capacity(n);
        for _ in 0..n {
            let a = rng.uniform(-2.0, 2.0);
            let b = rng.uniform(-2.0, 2.0);
            x.push(a as f32);
            x.push(b as f32);
            y.push((a * (-a * a - b * b).exp() + cfg.noise * rng.normal()) as f32);
        }
        Split { inputs: Inputs::Dense { x, shape: vec![2] }, targets: Targets::Values(y) }
    };
    let train = make(cfg.n_train, rng);
    let test = make(cfg.n_test, rng);
    Ok(Dataset { name: "surface".into(), task: Task::Regression, train, valid: None, test, schema: None })
}

/// A whole-number option of `options` (`default` when absent), with the dataset or model name
/// `what` in the error message.
pub fn option_usize(options: &serde_json::Map<String, serde_json::Value>, key: &str, default: usize, what: &str) -> Result<usize, NnError> {
    match options.get(key) {
        None => Ok(default),
        Some(v) => v.as_u64().map(|n| n as usize).ok_or_else(|| NnError::invalid(what, format!("option {key:?}"), v, "must be a non-negative integer")),
    }
}

/// Fails if `options` has a key not in `known` (catches typos such as `seqlen`).
pub fn check_options(options: &serde_json::Map<String, serde_json::Value>, known: &[&str], what: &str) -> Result<(), NnError> {
    match options.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(NnError::Unknown { context: what.into(), kind: "option".into(), name: k.clone(), known: known.iter().map(|s| s.to_string()).collect() }),
        None => Ok(()),
    }
}

/// An error if one of `fields` (of `n_train`, `n_test`, `noise`, `classes`) differs from its
/// default for a dataset that does not read it: a file's examples, classes and labels come from
/// the file, XOR is binary and the surface a regression, so the value would be ignored (and
/// recorded in the run's `config.toml` as if it had been used).
pub fn check_unused_sizes(cfg: &DataConfig, dataset: &str, fields: &[&str]) -> Result<(), NnError> {
    let d = DataConfig::default();
    for &f in fields {
        let set = match f {
            "n_train" => (cfg.n_train != d.n_train).then(|| cfg.n_train.to_string()),
            "n_test" => (cfg.n_test != d.n_test).then(|| cfg.n_test.to_string()),
            "noise" => (cfg.noise.to_bits() != d.noise.to_bits()).then(|| cfg.noise.to_string()),
            "classes" => (cfg.classes != d.classes).then(|| cfg.classes.to_string()),
            _ => None,
        };
        if let Some(v) = set {
            return Err(NnError::invalid(format!("dataset {dataset}"), f, v, "this dataset does not use it, so it would be silently ignored; remove it"));
        }
    }
    Ok(())
}

/// A synthetic dataset reads no file: a `path` or any other file option given to it
/// (`[data] path = …`, `target`, …) is an error rather than silently ignored, so a run never
/// trains on spirals when the user meant their file.
pub fn check_no_path(cfg: &DataConfig, dataset: &str) -> Result<(), NnError> {
    match cfg.file_options_set().first() {
        Some(key) => Err(NnError::invalid(
            format!("dataset {dataset}"),
            *key,
            cfg.path.clone().unwrap_or_else(|| "set".into()),
            "a built-in dataset reads no file, so this option would be silently ignored (for your own file: --data FILE, or dataset = \"file\" in a config)",
        )),
        None => Ok(()),
    }
}

impl DataConfig {
    /// The names of the file-dataset options that are set (`path`, `target`, …).
    pub fn file_options_set(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        macro_rules! set {
            ($($f:ident),*) => { $( if self.$f.is_some() { v.push(stringify!($f)); } )* };
        }
        set!(path, format, target, features, text_column, task, header, split, valid_path, valid_target, test_path, test_target, max_vocab, min_count, max_len, lowercase);
        v
    }
}

/// Long-range memory task for recurrent models: token sequences of length `seq_len` whose class
/// is decided by the **first** token only.
///
/// Tokens `0..classes` are *signal* tokens, tokens `classes..classes + distractors` are
/// *distractors*. Example of class `c`: `[c, d_1, …, d_{T−1}]` with each `d_i` a uniformly drawn
/// distractor. A model must carry the first token through `T − 1` uninformative steps, so the
/// gradient ‖∂L/∂h_t‖ has to reach `t = 0` for it to learn: the vanishing-gradient picture of
/// `gradflow_time.csv`. Options (in `[data.options]`): `seq_len` (default 12, at least 1),
/// `distractors` (default 8, at least 1). Uses `n_train`, `n_test`, `classes`; ignores `noise`.
pub fn first_token(cfg: &DataConfig, rng: &mut Rng) -> Result<Dataset, NnError> {
    let what = "dataset first-token";
    check_options(&cfg.options, &["seq_len", "distractors"], what)?;
    check_no_path(cfg, "first-token")?;
    check_unused_sizes(cfg, "first-token", &["noise"])?;
    let seq_len = option_usize(&cfg.options, "seq_len", 12, what)?;
    let distractors = option_usize(&cfg.options, "distractors", 8, what)?;
    let k = cfg.classes;
    if k < 2 {
        return Err(NnError::invalid(what, "classes", k, "need at least 2"));
    }
    if seq_len == 0 || distractors == 0 {
        return Err(NnError::invalid(what, "seq_len, distractors", format!("{seq_len}, {distractors}"), "each must be at least 1"));
    }
    let vocab = k + distractors;
    let make = |n: usize, rng: &mut Rng| {
        let mut seqs = Vec::with_capacity(n);
        let mut y = Vec::with_capacity(n);
        for _ in 0..n {
            let c = rng.below(k);
            let mut s = Vec::with_capacity(seq_len);
            s.push(c);
            s.extend((1..seq_len).map(|_| k + rng.below(distractors)));
            seqs.push(s);
            y.push(c);
        }
        Split { inputs: Inputs::Tokens { seqs, vocab }, targets: Targets::Classes(y) }
    };
    let train = make(cfg.n_train, rng);
    let test = make(cfg.n_test, rng);
    Ok(Dataset { name: "first-token".into(), task: Task::Classification { classes: k }, train, valid: None, test, schema: None })
}

/// Resumable position of a [`Batcher`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatcherState {
    /// Current epoch (0-based).
    pub epoch: u64,
    /// Position in the current epoch's order.
    pub pos: usize,
    /// The shuffling generator's state *before* this epoch's shuffle (the order is rebuilt
    /// from it on restore).
    pub epoch_rng: u64,
}

/// Mini-batches of example indices, reshuffled every epoch with its own seeded generator. The
/// last batch of an epoch may be smaller.
#[derive(Clone, Debug)]
pub struct Batcher {
    n: usize,
    batch: usize,
    shuffle: bool,
    order: Vec<usize>,
    rng: Rng,
    state: BatcherState,
}

impl Batcher {
    /// Batches of `batch` indices from `0..n`, shuffled with `rng` when `shuffle`.
    pub fn new(n: usize, batch: usize, shuffle: bool, rng: Rng) -> Batcher {
        assert!(n > 0 && batch > 0, "Batcher: need n > 0 and batch > 0 (n = {n}, batch = {batch})");
        let mut b = Batcher { n, batch, shuffle, order: Vec::new(), rng: rng.clone(), state: BatcherState { epoch: 0, pos: 0, epoch_rng: rng.state() } };
        b.start_epoch();
        b
    }
    fn start_epoch(&mut self) {
        self.state.epoch_rng = self.rng.state();
        self.order = (0..self.n).collect();
        if self.shuffle {
            self.rng.shuffle(&mut self.order);
        }
        self.state.pos = 0;
    }
    /// The next batch of indices.
    pub fn next_batch(&mut self) -> Vec<usize> {
        if self.state.pos >= self.n {
            self.state.epoch += 1;
            self.start_epoch();
        }
        let end = (self.state.pos + self.batch).min(self.n);
        let b = self.order[self.state.pos..end].to_vec();
        self.state.pos = end;
        b
    }
    /// Current epoch.
    pub fn epoch(&self) -> u64 {
        self.state.epoch
    }
    /// The resumable state.
    pub fn state(&self) -> BatcherState {
        self.state
    }
    /// Restores a state from [`Batcher::state`] (same `n`, `batch`, `shuffle`).
    ///
    /// # Errors
    /// A position past the end of an epoch of `n` examples (a state from another dataset, or an
    /// edited one): resuming from it would silently skip the rest of the epoch.
    pub fn restore(&mut self, s: BatcherState) -> Result<(), String> {
        if s.pos > self.n {
            return Err(format!("batcher position {} is past the end of an epoch of {} examples", s.pos, self.n));
        }
        self.rng = Rng::from_state(s.epoch_rng);
        self.start_epoch();
        self.state = s;
        Ok(())
    }
}

// ------------------------------------------------------------------------------- file datasets
//
// The schema of a dataset read from the user's files (`crate::userdata` reads and writes it): it
// lives here, beside `Dataset`, which carries it.

/// What kind of inputs a dataset has: decides which models fit it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataKind {
    /// Feature vectors (CSV columns, `.npy` rows).
    Tabular,
    /// Token sequences (text, pre-tokenized lines).
    Text,
    /// Images `[channels, height, width]` (IDX, `.npy` of rank ≥ 3).
    Images,
}

impl DataKind {
    /// The name shown by `chi train --list`.
    pub fn name(self) -> &'static str {
        match self {
            DataKind::Tabular => "tabular",
            DataKind::Text => "text",
            DataKind::Images => "images",
        }
    }
    /// The kind of a dataset's inputs: token inputs are text, dense inputs of rank ≥ 2 images.
    pub fn of(inputs: &Inputs) -> DataKind {
        match inputs {
            Inputs::Dense { shape, .. } if shape.len() >= 2 => DataKind::Images,
            Inputs::Dense { .. } => DataKind::Tabular,
            Inputs::Tokens { .. } | Inputs::TokenPairs { .. } => DataKind::Text,
        }
    }
}

/// How the files of a dataset are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Comma-separated values with a header row.
    Csv,
    /// Tab-separated values with a header row.
    Tsv,
    /// A folder with one sub-folder of text files per class.
    Folder,
    /// One example per line: label, then white-space separated tokens.
    Lines,
    /// NumPy `.npy` arrays.
    Npy,
    /// IDX arrays (the MNIST format).
    Idx,
}

impl Format {
    /// All formats, for messages.
    pub const ALL: [Format; 6] = [Format::Csv, Format::Tsv, Format::Folder, Format::Lines, Format::Npy, Format::Idx];
    /// The name used by `format = …` / `--format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Tsv => "tsv",
            Format::Folder => "folder",
            Format::Lines => "lines",
            Format::Npy => "npy",
            Format::Idx => "idx",
        }
    }
    /// Parses a format name.
    pub fn parse(s: &str) -> Result<Format, NnError> {
        Format::ALL.into_iter().find(|f| f.name() == s).ok_or_else(|| NnError::Unknown {
            context: "data".into(),
            kind: "format".into(),
            name: s.into(),
            known: Format::ALL.iter().map(|f| f.name().to_string()).collect(),
        })
    }
    /// The format a path implies: a directory is a folder; otherwise the extension decides.
    pub fn infer(path: &Path) -> Result<Format, NnError> {
        if path.is_dir() {
            return Ok(Format::Folder);
        }
        let name = path.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
        let stem = name.strip_suffix(".gz").unwrap_or(&name);
        let f = if stem.ends_with(".csv") {
            Format::Csv
        } else if stem.ends_with(".tsv") || stem.ends_with(".tab") {
            Format::Tsv
        } else if stem.ends_with(".npy") {
            Format::Npy
        } else if stem.contains("idx") {
            Format::Idx
        } else if stem.ends_with(".txt") || stem.ends_with(".lines") {
            Format::Lines
        } else {
            return Err(NnError::invalid(
                "data",
                "path",
                path.display(),
                "cannot tell the format from the name (.csv, .tsv, .npy, an IDX name, .txt, or a directory); give it with --format",
            ));
        };
        Ok(f)
    }
    pub(crate) fn separator(self) -> u8 {
        if self == Format::Tsv {
            b'\t'
        } else {
            b','
        }
    }
}

/// One tabular feature as fitted on the training split.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Column {
    /// A number, standardised: `(x − mean) / std`.
    Numeric {
        /// Column name.
        name: String,
        /// Training mean.
        mean: f64,
        /// Training standard deviation (1 when constant).
        std: f64,
    },
    /// A text value, one-hot over the training categories.
    Categorical {
        /// Column name.
        name: String,
        /// The categories, in one-hot order.
        categories: Vec<String>,
    },
}

impl Column {
    /// The column's name.
    pub fn name(&self) -> &str {
        match self {
            Column::Numeric { name, .. } | Column::Categorical { name, .. } => name,
        }
    }
    /// How many input values it encodes to.
    pub fn width(&self) -> usize {
        match self {
            Column::Numeric { .. } => 1,
            Column::Categorical { categories, .. } => categories.len(),
        }
    }
}

/// The fitted input preprocessing of a [`DataSchema`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Encoder {
    /// CSV feature columns.
    Tabular {
        /// The feature columns, in input order.
        columns: Vec<Column>,
    },
    /// Text to token ids.
    Text {
        /// The tokenizer.
        tokenizer: Tokenizer,
        /// The vocabulary of the training split.
        vocab: Vocab,
        /// The text column of a CSV source.
        text_column: Option<String>,
    },
    /// Arrays, standardised.
    Array {
        /// Shape of one example (`[features]` or `[channels, height, width]`).
        shape: Vec<usize>,
        /// Per-feature (rank-1 examples) or single (images) training mean.
        mean: Vec<f32>,
        /// Matching standard deviations (1 where constant).
        std: Vec<f32>,
    },
}

/// Everything needed to read new files as training did: format, task, class names and the
/// fitted preprocessing. Saved with a run as `data.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DataSchema {
    /// The inputs' kind.
    pub kind: DataKind,
    /// How files are read.
    pub format: Format,
    /// Classification, binary or regression.
    pub task: Task,
    /// Class names in class-id order (empty for regression).
    pub classes: Vec<String>,
    /// The target column (CSV) — also the name of the predicted value in outputs.
    pub target: Option<String>,
    /// The input preprocessing.
    pub encoder: Encoder,
    /// Names to show for the classes (e.g. Fashion-MNIST's garments for labels 0–9), when
    /// they differ from the labels in the files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub display_names: Vec<String>,
    /// Regression: the training mean and standard deviation of the target. Targets are
    /// standardised with them (the model learns `(y − mean) / std`); [`DataSchema::unscale`]
    /// maps a model output back to the target's units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_scale: Option<(f64, f64)>,
    /// CSV/TSV read without a header row: the names training gave the columns (`column1`, …,
    /// in file order), so new files without a header are read the same way. `None` when the
    /// training file had a header (and for every other format).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headerless_columns: Option<Vec<String>>,
}

