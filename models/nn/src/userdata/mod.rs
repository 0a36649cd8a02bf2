//! Datasets from the user's own files: tabular CSV/TSV, text (a CSV column, a folder with one
//! sub-folder per class, or one labelled token sequence per line) and arrays (`.npy`, IDX).
//!
//! [`load`] reads the training file (and the validation / test files when given), decides the
//! task, splits one file into train / validation / test with a seeded stratified split when
//! no other files are given, fits the preprocessing on the **training split only** (feature
//! statistics, category lists, the vocabulary) and encodes every split with it. The fitted
//! preprocessing is a [`DataSchema`]: saved with a run (`data.json`), it encodes new labelled
//! files ([`DataSchema::encode_labelled`], for `chi eval`) and unlabelled inputs
//! ([`DataSchema::encode_unlabelled`], for `chi predict`) exactly as training did.
//!
//! | format | what it holds | options |
//! |---|---|---|
//! | `csv`, `tsv` | a header row (detected) and one example per row | `target`, `features`, `text_column` |
//! | `folder` | `DIR/CLASS/*` text files (or `DIR/{train,valid,test}/CLASS/*`) | |
//! | `lines` | one example per line: the label, white space, then the tokens | |
//! | `npy` | `X.npy` `[N, …]` (any real or integer dtype); labels in `target = "y.npy"` | |
//! | `idx` | IDX images (`*-idx3-ubyte[.gz]`); labels in `target = "…-idx1-ubyte[.gz]"` | |
//!
//! The format is inferred from the path (a directory → `folder`; `.csv`, `.tsv`/`.tab`,
//! `.npy`, `idx` in the name, `.txt`/`.lines`) and can be given as `format`.
//!
//! **Tabular columns.** A column is numeric when more than half of its training values parse
//! as numbers; a value that does not is then an error naming the line and column. Numeric
//! features are standardised with the training mean and standard deviation; text-valued
//! columns are one-hot encoded over the training categories (an unseen category encodes as
//! all zeros). Missing values (empty, `NA`, `N/A` in any case, `#N/A`, `NaN`, `null`, `?`) are
//! imputed — the training mean, or a `<missing>` category — and counted in the warnings.
//!
//! A column no row has a value in (a trailing comma's unnamed column) is left out, and said.
//! A file without a header row names its columns `column1`, `column2`, …; new files for the
//! model are then read without a header too, by position. Header fields left empty are named
//! `unnamed1`, `unnamed2`, … in their order. Row identifiers beside real features (an unnamed
//! or `id`-like column with a different whole number or key on every row, as pandas' index)
//! are left out, and said. Without `target`, the target is the column named `label`, `target`
//! or `class` (two of them: an error), else `y`.
//!
//! **Text columns.** The feature column is text (a text model reads it) when it is the only
//! one and holds two words or more per row over many distinct values (not a few repeated
//! categories), or short phrases that nearly all differ; or when the
//! other feature columns are row identifiers (`id`, `…_id`, all-different whole numbers), which
//! are left out, and said. Free text beside real features is an error that asks for
//! `text_column` or `features`: it is never one-hot encoded as categories.
//!
//! **Task.** `task = "classification"` or `"regression"` when given; otherwise a target whose
//! values are all whole numbers with at most [`MAX_INTEGER_CLASSES`] distinct values (or any
//! text) is a class label, and any other numeric target is regressed. Class labels are kept as
//! written (`01` and `1` are two classes, with a warning when they are the same number); a new
//! file's label spelled differently from every class matches the one class of equal value.
//!
//! **New files** ([`DataSchema::encode_labelled`], [`DataSchema::encode_unlabelled`]) are read
//! by their own extension: a text model trained on a folder reads a `.csv` by its free-text
//! column (and its label column), one trained on a CSV reads a `.txt` as one text per line,
//! and token lines written with their labels have them taken off.
//! UTF-16 files with a byte-order mark and files with old Mac (`\r`) line endings are read as
//! text; a line of only spaces is skipped like an empty one.

pub mod text;

use crate::data::error::{DataError, Location};
use crate::dataset::{DataConfig, Dataset, Inputs, Split, Targets, Task};
use crate::error::NnError;
use chi_autodiff::Rng;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
pub use text::{Tokenizer, Vocab};
pub use crate::dataset::{Column, DataKind, DataSchema, Encoder, Format};

/// Largest input file read (bytes) unless `CHI_MAX_FILE_BYTES` says otherwise: see
/// [`crate::limits::read_file`].
pub const MAX_FILE_BYTES: u64 = crate::limits::DEFAULT_MAX_FILE_BYTES;
/// A numeric target with at most this many distinct whole-number values is a class label.
pub const MAX_INTEGER_CLASSES: usize = 20;
/// Most classes a classification target may have (more usually means the wrong column).
pub const MAX_CLASSES: usize = 1000;
/// Default fraction of examples in the train, validation and test splits of one file.
pub const DEFAULT_SPLIT: [f64; 3] = [0.8, 0.1, 0.1];

/// A loaded file dataset: the splits, the schema, and warnings worth showing the user
/// (lossily decoded files, imputed values).
#[derive(Clone, Debug)]
pub struct Loaded {
    /// Train / validation / test splits.
    pub dataset: Dataset,
    /// The fitted schema.
    pub schema: DataSchema,
    /// Things the user should know, one sentence each.
    pub warnings: Vec<String>,
}

// ------------------------------------------------------------------------------- raw reading

/// One raw example before encoding: where it came from, its inputs and its label text.
#[derive(Clone, Debug)]
struct RawExample {
    /// `file:line` or a file path, for messages.
    origin: Origin,
    input: RawInput,
    label: Option<String>,
}

#[derive(Clone, Debug)]
enum RawInput {
    /// CSV fields of the chosen feature columns (in header order of `columns`).
    Row(Vec<String>),
    /// Text (tokenized later).
    Text(String),
    /// Pre-tokenized: the tokens, each followed by one space but the last (a token holds no
    /// white space). One string per line, not per token: a `String` per token took 29 × a
    /// token-lines file's size in memory.
    Tokens(String),
    /// Values of one array example.
    Values(Vec<f32>),
}

/// Where an example came from, shown in messages and as `chi predict`'s input column: a line
/// of a file (`file:line`), an example of an array file (`file example i`), or a name. The
/// file's path is shared by all its examples: a per-row string cost more than a row of numbers
/// (a 229-character path raised a CSV's peak memory by 38 %).
#[derive(Clone, Debug)]
enum Origin {
    /// Line `.1` of file `.0`.
    Line(Arc<Path>, usize),
    /// Example `.1` (0-based) of array file `.0`.
    Example(Arc<Path>, usize),
    /// Anything else (a file of a folder, an example of a built-in set).
    Named(String),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Line(p, l) => write!(f, "{}:{l}", p.display()),
            Origin::Example(p, i) => write!(f, "{} example {i}", p.display()),
            Origin::Named(s) => f.write_str(s),
        }
    }
}

impl Origin {
    /// The 1-based line of a file's line, 0 for other origins.
    fn line(&self) -> usize {
        match self {
            Origin::Line(_, l) => *l,
            _ => 0,
        }
    }
}

impl From<&Origin> for String {
    fn from(o: &Origin) -> String {
        o.to_string()
    }
}

/// A raw source: its examples, and for CSV the header.
#[derive(Clone, Debug, Default)]
struct RawSet {
    path: PathBuf,
    examples: Vec<RawExample>,
    /// CSV feature column names (in `Row` order).
    columns: Vec<String>,
    /// Shape of one array example.
    shape: Vec<usize>,
    lossy: usize,
    /// What the reader decided that the user should hear about.
    notes: Vec<String>,
    /// Read as a CSV without a header row: its line 1 is data.
    headerless: bool,
}

impl RawSet {
    /// Everything but the examples (what each split of a set shares).
    fn without_examples(&self) -> RawSet {
        RawSet {
            path: self.path.clone(),
            examples: Vec::new(),
            columns: self.columns.clone(),
            shape: self.shape.clone(),
            lossy: self.lossy,
            notes: self.notes.clone(),
            headerless: self.headerless,
        }
    }
}

/// What to add to an error about the value on `line` of `raw`: the first line of a file read
/// without a header row (asked with `--header no`, or as the model's training file had none)
/// may be a header.
fn header_hint(raw: &RawSet, line: usize) -> &'static str {
    if raw.headerless && line == 1 {
        " (the file is read without a header row, as --header no asks or, for a trained model, as its training file had none: if line 1 is a header, leave out --header no, or remove the line)"
    } else {
        ""
    }
}

/// The bytes of an input file, at most [`MAX_FILE_BYTES`] (or `CHI_MAX_FILE_BYTES`) however
/// the file reports its length; a binary file is refused after its first 8 KiB.
fn read_bounded(path: &Path) -> Result<Vec<u8>, NnError> {
    // UTF-16 (which has NUL bytes) starts with its byte-order mark.
    let utf16 = |h: &[u8]| matches!(h, [0xFF, 0xFE, ..] | [0xFE, 0xFF, ..]);
    let head = |h: &[u8]| if !utf16(h) && text::looks_binary(h) { Err("looks like a binary file (it has NUL bytes), not text".to_string()) } else { Ok(()) };
    Ok(crate::limits::read_file_checked(path, head).map_err(|e| DataError::io(path, &e))?)
}

/// Text of a file that should be text: binary files are an error, non-UTF-8 bytes are
/// replaced (and counted by the caller through the returned flag). UTF-16 with a byte-order
/// mark (what spreadsheets save as "Unicode text") is decoded, and bare carriage returns (old
/// Mac line endings, also mixed with others) are read as line breaks.
fn read_text(path: &Path) -> Result<(String, bool), NnError> {
    decode_text(path, &read_bounded(path)?)
}

/// [`read_text`] of bytes already read from `path`.
fn decode_text(path: &Path, bytes: &[u8]) -> Result<(String, bool), NnError> {
    let (mut text, lossy) = match text::decode_utf16(bytes) {
        Some(decoded) => decoded,
        None => {
            if text::looks_binary(bytes) {
                return Err(DataError::whole("looks like a binary file (it has NUL bytes), not text").with_path(path).into());
            }
            let b = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF][..]).unwrap_or(bytes);
            text::decode_lossy(b)
        }
    };
    // A bare carriage return, alone (old Mac line endings) or mixed with other line endings (a
    // file joined from two systems), is a line break; CRLF is left to the readers.
    if text.contains('\r') && text.match_indices('\r').any(|(i, _)| !text[i + 1..].starts_with('\n')) {
        text = text.replace("\r\n", "\n").replace('\r', "\n");
    }
    Ok((text, lossy))
}

/// The spellings of a missing value, as messages list them.
const MISSING_SPELLINGS: &str = "empty, NA, N/A (any case), #N/A, NaN, null, None, ?, -";

fn is_missing(v: &str) -> bool {
    // Every spelling of NaN that number parsers and printers produce (`-nan` is C's printf);
    // `n/a` as people type it and `#N/A` as spreadsheets write it.
    let t = v.trim();
    matches!(t, "" | "NA" | "NaN" | "nan" | "NAN" | "Nan" | "-nan" | "-NaN" | "-NAN" | "null" | "NULL" | "None" | "?" | "-")
        || t.eq_ignore_ascii_case("n/a")
        || t.eq_ignore_ascii_case("#n/a")
}

/// What to add to the error about a value of a numeric column that is not a number, when the
/// value looks like a marker of a missing value that chi does not read as one (`missing`, `.`,
/// `n.a.`, a spreadsheet error such as `#VALUE!`).
fn missing_marker_hint(v: &str) -> String {
    let t = v.trim();
    let lower = t.to_lowercase();
    let word = ["missing", "na.", "n.a.", "n.a", "nil", "none", "unknown", "empty", "blank", "nd", "n/d", "undefined", "nothing"].contains(&lower.as_str());
    let marks = !t.is_empty() && t.chars().count() <= 3 && t.chars().all(|c| c.is_ascii_punctuation());
    if word || marks || t.starts_with('#') {
        format!(" (if it marks a missing value, write it as one of the spellings read as missing: {MISSING_SPELLINGS})")
    } else {
        String::new()
    }
}

fn parse_number(v: &str) -> Option<f64> {
    v.trim().parse::<f64>().ok().filter(|x| x.is_finite())
}

/// How `v`, which does not read as a number, reads as one in another spelling: with currency
/// signs (`$52.13`), a percent sign (`4%`), thousands separators (`1,094` or `1,094.5`) or a
/// decimal comma (`0,238`). chi reads numbers as Rust and C do (`.` as the decimal point, no
/// signs or separators); this only names the spelling in a warning or an error.
fn other_number_spelling(v: &str) -> Option<&'static str> {
    let t = v.trim();
    if t.is_empty() || parse_number(t).is_some() {
        return None;
    }
    let bare = t.trim_start_matches(['$', '€', '£', '¥']).trim_end_matches(['$', '€', '£', '¥']).trim();
    if bare != t && (parse_number(bare).is_some() || other_number_spelling(bare).is_some()) {
        return Some("currency signs");
    }
    if let Some(p) = t.strip_suffix('%') {
        if parse_number(p).is_some() || other_number_spelling(p).is_some() {
            return Some("percent signs");
        }
    }
    let (int, frac) = match t.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (t, None),
    };
    let int = int.strip_prefix(['-', '+']).unwrap_or(int);
    let groups: Vec<&str> = int.split(',').collect();
    let digits = |g: &str| !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit());
    let thousands = groups.len() > 1 && groups[0].len() <= 3 && digits(groups[0]) && !(groups[0].starts_with('0') && groups[0] != "0") && groups[1..].iter().all(|g| g.len() == 3 && digits(g)) && frac.is_none_or(digits);
    let decimal = frac.is_none() && groups.len() == 2 && digits(groups[0]) && digits(groups[1]);
    // `1,094` is either; `0,238` and `1,5` are decimal commas; `1,094,221` and `1,094.5` are
    // thousands separators.
    if thousands && decimal && groups[0] != "0" {
        return Some("a comma (thousands separators or a decimal comma)");
    }
    if thousands && groups[0] != "0" {
        return Some("thousands separators");
    }
    if decimal {
        return Some("a decimal comma");
    }
    None
}

/// A warning for each held-out split of which at least 1 % of the examples are exact copies of
/// training examples (the same inputs and label): data with duplicated rows, split at random,
/// puts copies on both sides, and the held-out metrics then measure memory, not generalisation
/// (random labels copied six times scored 0.91 test accuracy). Tables count only when some
/// column alone tells the training split's distinct rows apart (a measured value, an
/// identifier): rows of a few categories (class, sex, port) repeat by nature, not by copying.
fn copies_of_training_examples(parts: &[RawSet; 3]) -> Vec<String> {
    use std::collections::HashSet;
    use std::hash::{Hash, Hasher};
    let key = |e: &RawExample| -> Option<u64> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        match &e.input {
            RawInput::Row(r) => r.hash(&mut h),
            RawInput::Text(t) => t.hash(&mut h),
            RawInput::Tokens(t) => t.hash(&mut h),
            RawInput::Values(v) => v.iter().for_each(|x| x.to_bits().hash(&mut h)),
        }
        e.label.as_deref()?.hash(&mut h);
        Some(h.finish())
    };
    let train: HashSet<u64> = parts[0].examples.iter().filter_map(key).collect();
    let mut out = Vec::new();
    for (part, what) in parts[1..].iter().zip(["validation", "test"]) {
        let n = part.examples.len();
        let copies = part.examples.iter().filter_map(key).filter(|k| train.contains(k)).count();
        if copies > 0 && copies * 100 >= n {
            out.push(format!(
                "{} ({what} split): {copies} of its {n} examples ({:.0} %) are exact copies of training examples (inputs and label): the {what} metrics overstate how the model does on new data; if these are one example written several times, remove the copies or keep them on one side of the split",
                part.path.display(),
                100.0 * copies as f64 / n as f64
            ));
        }
    }
    // Looked for only when there are copies to report (a column's distinct values cost a pass).
    if let Some(RawInput::Row(first)) = parts[0].examples.first().map(|e| &e.input).filter(|_| !out.is_empty()) {
        let identifying = (0..first.len()).any(|c| {
            let values: HashSet<&str> = parts[0].examples.iter().filter_map(|e| match &e.input {
                RawInput::Row(r) => r.get(c).map(|v| v.as_str()),
                _ => None,
            }).collect();
            values.len() * 10 >= train.len() * 9
        });
        if !identifying {
            out.clear();
        }
    }
    out
}

/// Why [`standardisation`] refused values.
const TOO_LARGE: &str = "too large to standardise (the squares overflow beyond ±1e154)";

/// The mean and standard deviation to standardise values by (a numeric column, a regression
/// target). A constant's deviation (zero, or a spread below 1e-14 of the largest magnitude,
/// about fifty units in the last place, which is rounding) is 1. The test is relative and the
/// deviations are scaled before they are squared, so values on any scale (1e-200, 1e200) and
/// small differences on a large offset (1e6 ± 1e-5) keep their differences. Values that deviate
/// by more than 1e154 (their squares overflow) are an error holding `values up to …`.
fn standardisation(vals: &[f64]) -> Result<(f64, f64), String> {
    let big = vals.iter().fold(0.0, |m: f64, x| m.max(x.abs()));
    if vals.is_empty() {
        return Ok((0.0, 1.0));
    }
    let mean = crate::metrics::mean(vals);
    if !mean.is_finite() {
        return Err(format!("values up to {big:e}"));
    }
    // Deviations whose squares overflow would make a regression target's squared errors
    // infinite; a feature that large is refused alike.
    let reach = vals.iter().fold(0.0, |m: f64, x| m.max((x - mean).abs()));
    if !(reach <= 1e154) {
        return Err(format!("values up to {big:e}"));
    }
    let sd = if reach > 0.0 { reach * (vals.iter().map(|x| ((x - mean) / reach).powi(2)).sum::<f64>() / vals.len() as f64).sqrt() } else { 0.0 };
    Ok((mean, if sd > 1e-14 * big && sd > 0.0 { sd } else { 1.0 }))
}

/// A value far from all the others in a numeric column or target: `(index, value, distance)`,
/// the distance from the median in median absolute deviations, when it exceeds ten thousand (a
/// code such as 999999 for a missing value, or a typo). Standardising by the spread one such
/// value adds leaves the other values nearly equal, and a model then learns nothing from them.
/// `None` when half or more of the values are equal (no spread to measure against).
fn far_outlier(vals: &[f64]) -> Option<(usize, f64, f64)> {
    if vals.len() < 5 {
        return None;
    }
    use crate::metrics::median;
    let med = median(vals);
    let mad = median(&vals.iter().map(|x| (x - med).abs()).collect::<Vec<_>>());
    if !(mad > 0.0) {
        return None;
    }
    let (i, d) = vals.iter().enumerate().map(|(i, x)| (i, (x - med).abs() / mad)).max_by(|a, b| a.1.total_cmp(&b.1))?;
    (d > 1e4).then_some((i, vals[i], d))
}

/// The warning for [`far_outlier`]'s finding in `what` (a column or the target of `path`).
fn outlier_warning(path: &Path, what: &str, (_, value, distance): (usize, f64, f64)) -> String {
    format!(
        "{}: {what} has the value {value} {distance:.0} median absolute deviations from its median: standardised by the spread it adds, the other values become nearly equal and teach the model little; if it is a code for a missing value or a typo, leave it out (an empty field is imputed)",
        path.display()
    )
}

/// What is wrong with a value [`parse_number`] refused: not a number at all, or a number no
/// float holds (`1e400`, `inf`).
fn not_a_number(v: &str) -> &'static str {
    match v.trim().parse::<f64>() {
        Ok(x) if x.is_infinite() => "is infinite or out of range (beyond ±1.8e308)",
        _ => "is not a number",
    }
}

/// What reading a data file costs in memory (measured in RELIABILITY.md, "Large files"):
/// `bytes` × the file's size, and `per_unit` bytes per unit (a CSV's field: its `String`, 40
/// bytes with the allocator's block; a token's id in a file of token lines, 8 bytes). Fields
/// of one or two characters take 20 × their bytes, numbers of eight 7.5 ×, texts 4.5 ×.
#[derive(Clone, Copy)]
struct ReadingCost {
    what: &'static str,
    bytes: f64,
    per_unit: f64,
    /// Whether a unit ends at `sep` as well as at a line break (a CSV's fields), else at white
    /// space (tokens).
    fields: bool,
}

const CSV_COST: ReadingCost = ReadingCost { what: "CSV file", bytes: 4.5, per_unit: 40.0, fields: true };
const LINES_COST: ReadingCost = ReadingCost { what: "file of token lines", bytes: 3.0, per_unit: 8.0, fields: false };

/// Refuses, before reading it, a file that would take more memory than the machine has
/// available: [`ReadingCost`] of its size and of its units, counted on its first MiB. Read
/// anyway, such a file runs until an allocation fails (an abort with no word from chi) or the
/// kernel kills the process.
fn check_room(path: &Path, cost: ReadingCost, sep: u8) -> Result<(), NnError> {
    let (Ok(meta), Some(available)) = (std::fs::metadata(path), crate::files::machine_memory()) else { return Ok(()) };
    // A quick look first: even one unit per byte could not need more than this.
    if !meta.is_file() || (meta.len() as f64) * (cost.bytes + cost.per_unit) <= available as f64 {
        return Ok(());
    }
    let Some(head) = file_head(path, 1 << 20).filter(|h| !h.is_empty()) else { return Ok(()) };
    let ends = |b: u8| if cost.fields { b == sep || b == b'\n' } else { b.is_ascii_whitespace() };
    let units_per_byte = head.iter().filter(|&&b| ends(b)).count() as f64 / head.len() as f64;
    let need = meta.len() as f64 * (cost.bytes + cost.per_unit * units_per_byte);
    if need <= available as f64 {
        return Ok(());
    }
    let gib = |b: f64| format!("{:.2} GiB", b / (1u64 << 30) as f64);
    Err(DataError::whole(format!(
        "is {} and reading this {} takes about {} of memory ({:.1} × its size), more than the {} available (memory and swap left, or {}): use a sample of the rows, or a machine with more memory",
        gib(meta.len() as f64),
        cost.what,
        gib(need),
        need / meta.len() as f64,
        gib(available as f64),
        crate::files::MEMORY_LIMIT_ENV,
    ))
    .with_path(path)
    .into())
}

/// The first `n` bytes of the file at `path` (fewer if it is shorter), or `None` if it cannot be
/// read: a look at a file before deciding how to read it whole.
fn file_head(path: &Path, n: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path).ok()?.take(n).read_to_end(&mut head).ok()?;
    Some(head)
}

/// The CSV records of a file (lossy UTF-8), with their line numbers.
fn csv_records(path: &Path, sep: u8) -> Result<(Vec<crate::data::CsvRecord>, bool), NnError> {
    check_room(path, CSV_COST, sep)?;
    let (text, lossy) = read_text(path)?;
    Ok((csv_records_of(path, &text, sep)?, lossy))
}

/// The CSV records of text already read from `path` (which names it in errors).
fn csv_records_of(path: &Path, text: &str, sep: u8) -> Result<Vec<crate::data::CsvRecord>, NnError> {
    let mut recs = crate::data::csv_from_bytes_with(text.as_bytes(), sep).map_err(|e| e.with_path(path))?;
    // A line of only spaces is as empty as an empty line (which the reader already skips).
    recs.retain(|r| !(r.fields.len() == 1 && r.fields[0].trim().is_empty()));
    // A first line of only separators (`,,,`: a spreadsheet's header row whose columns have no
    // names) names nothing and holds no value: skipped like an empty line, so the line below it
    // is read as the header or as the first row, as in a file without it.
    if recs.first().is_some_and(|r| r.fields.iter().all(|f| f.trim().is_empty())) {
        recs.remove(0);
    }
    Ok(recs)
}

/// Whether the first record is a header: it names the target, or some column is numeric below
/// it but not in it, or every field is a distinct non-numeric name while later rows differ.
fn has_header(recs: &[crate::data::CsvRecord], target: Option<&str>) -> bool {
    let Some(first) = recs.first() else { return false };
    if let Some(t) = target {
        if first.fields.iter().any(|f| f.trim() == t) {
            return true;
        }
    }
    let rest = &recs[1..recs.len().min(51)];
    if rest.is_empty() {
        return true;
    }
    let numeric_below = |c: usize| rest.iter().filter_map(|r| r.fields.get(c)).filter(|v| !is_missing(v)).all(|v| parse_number(v).is_some());
    if first.fields.iter().enumerate().any(|(c, f)| parse_number(f).is_none() && !is_missing(f) && numeric_below(c)) {
        return true;
    }
    // All text: a header if its fields are short distinct names no later row repeats.
    let names: std::collections::HashSet<&str> = first.fields.iter().map(|f| f.trim()).collect();
    names.len() == first.fields.len()
        && first.fields.iter().all(|f| !f.trim().is_empty() && f.len() <= 40 && parse_number(f).is_none())
        && rest.iter().all(|r| r.fields.iter().zip(&first.fields).all(|(a, b)| a.trim() != b.trim()))
}

/// The parts of a `[data]` table that are resolved before reading: the format and the text
/// settings (the other options are read from the [`DataConfig`] itself).
#[derive(Clone, Debug, Default)]
pub struct FileOptions {
    /// Format (inferred from the path when `None`).
    pub format: Option<Format>,
    /// Tokenizer (text).
    pub tokenizer: Tokenizer,
    /// Vocabulary: most tokens kept (`<unk>` included; 0 = all).
    pub max_vocab: usize,
    /// Vocabulary: fewest occurrences of a kept token.
    pub min_count: usize,
}

impl FileOptions {
    /// The file options of a `[data]` table.
    pub fn from_config(cfg: &DataConfig) -> Result<FileOptions, NnError> {
        let mut tokenizer = Tokenizer::default();
        if let Some(l) = cfg.lowercase {
            tokenizer.lowercase = l;
        }
        if let Some(m) = cfg.max_len {
            if m == 0 {
                return Err(NnError::invalid("data", "max_len", m, "must be at least 1"));
            }
            tokenizer.max_len = m;
        }
        Ok(FileOptions {
            format: cfg.format.as_deref().map(Format::parse).transpose()?,
            tokenizer,
            max_vocab: cfg.max_vocab.unwrap_or(20_000),
            min_count: cfg.min_count.unwrap_or(1),
        })
    }
}

/// Chooses the target column of a header: the one given, else one named like a label.
fn target_column(header: &[String], given: Option<&str>, path: &Path) -> Result<usize, NnError> {
    if let Some(t) = given {
        // Names are compared without the spaces around them, on both sides (as `--features`).
        let t = t.trim();
        return header.iter().position(|h| h.trim() == t).ok_or_else(|| {
            DataError::new(Location::Line(1), format!("no target column {t:?}; the columns are {}{}", short_list(header), separator_hint(header))).with_path(path).into()
        });
    }
    // `label`, `target` and `class` name nothing but a target: two of them leave the choice to
    // the user (training on the wrong one, with the other as a feature, would look like a
    // perfect model). `y` is a target only when none of them is there (`x, y, label`).
    let named = |w: &str| header.iter().position(|h| h.trim().eq_ignore_ascii_case(w));
    // Every such column, `Label` beside `label` included.
    let strong: Vec<usize> = (0..header.len()).filter(|&i| ["label", "target", "class"].iter().any(|w| header[i].trim().eq_ignore_ascii_case(w))).collect();
    match strong.as_slice() {
        [i] => return Ok(*i),
        [] => {
            if let Some(i) = named("y") {
                return Ok(i);
            }
        }
        many => {
            let list: Vec<String> = many.iter().map(|&i| header[i].clone()).collect();
            return Err(DataError::new(
                Location::Line(1),
                format!("columns {} could each be the target: pass --target NAME (and leave the other out with --features, if it is the same label)", short_list(&list)),
            )
            .with_path(path)
            .into());
        }
    }
    Err(DataError::new(Location::Line(1), format!("which column is the target? pass --target NAME (the columns are {}){}", short_list(header), separator_hint(header))).with_path(path).into())
}

/// A hint for a header read as one column that holds another common separator.
fn separator_hint(header: &[String]) -> String {
    match header {
        [only] => [b';', b'|', b'\t', b',']
            .into_iter()
            .find(|&c| only.contains(c as char))
            .and_then(|c| Some((c as char, crate::data::csv::separator_name(c)?)))
            .map(|(c, name)| {
                let fix = match c {
                    '\t' => "name it .tsv, or give --format tsv".to_string(),
                    ',' => "name it .csv, or give --format csv".to_string(),
                    _ => format!("convert it to commas (e.g. `tr '{c}' ','`)"),
                };
                format!(". The header is one column holding {name}s: is the file {name}-separated? chi reads commas (.csv) and tabs (.tsv); {fix}")
            })
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// What a CSV's columns are used for, decided on the training file.
#[derive(Clone, Debug)]
struct CsvLayout {
    sep: u8,
    header: bool,
    /// All column names.
    names: Vec<String>,
    target: String,
    /// Text column (text classification) or feature columns.
    text: Option<String>,
    features: Vec<String>,
    /// Decisions the user should hear about (columns left out, a text column chosen).
    notes: Vec<String>,
}

/// The layout new files are read with: the schema's columns, the header as training had it.
fn schema_layout(schema: &DataSchema, sep: u8, text: Option<String>, features: Vec<String>) -> CsvLayout {
    let headerless = schema.headerless_columns.clone().or_else(|| generated_names(schema, text.as_deref(), &features));
    CsvLayout {
        sep,
        header: headerless.is_none(),
        names: headerless.unwrap_or_default(),
        target: schema.target.clone().unwrap_or_default(),
        text,
        features,
        notes: Vec::new(),
    }
}

/// The columns of a schema saved before schemas recorded a missing header: when the target
/// and every input column are the names given to a file without a header (`column1`, …,
/// `columnN`, each once, with none left out), the file had none, and these are its columns.
fn generated_names(schema: &DataSchema, text: Option<&str>, features: &[String]) -> Option<Vec<String>> {
    let used: Vec<&str> = schema.target.as_deref().into_iter().chain(text).chain(features.iter().map(String::as_str)).collect();
    let mut numbers: Vec<usize> = used.iter().map(|n| n.strip_prefix("column")?.parse::<usize>().ok().filter(|&k| k >= 1 && n[6..] == k.to_string())).collect::<Option<_>>()?;
    numbers.sort_unstable();
    (numbers.iter().copied().eq(1..=used.len())).then(|| (1..=used.len()).map(|k| format!("column{k}")).collect())
}

/// Whether the values of a column read as free text rather than as categories: mostly not
/// numbers, and either sentences (three words or more on average) that mostly differ, or short
/// phrases that nearly all differ (titles, names: one-hot categories of them could not
/// generalise). Repeated multi-word values ("New Zealand", a job title) are categories.
fn looks_like_text(vals: &[&str]) -> bool {
    let present: Vec<&str> = vals.iter().copied().filter(|v| !is_missing(v)).collect();
    let n = present.len();
    if n == 0 || present.iter().filter(|v| parse_number(v).is_some()).count() * 2 > n {
        return false;
    }
    let words: usize = present.iter().map(|v| v.split_whitespace().count()).sum();
    let distinct = present.iter().map(|v| v.trim()).collect::<std::collections::HashSet<_>>().len();
    (words >= 3 * n && distinct * 2 > n) || (2 * words >= 3 * n && n >= 20 && distinct * 10 >= n * 9)
}

/// Whether the only feature column of a file is its text: [`looks_like_text`], or two words or
/// more per value over more distinct values than categories have (more than 20, and more than
/// a tenth of the rows: short titles, a text classification file with duplicate texts). A text
/// model reads the words, where one-hot categories of whole values could tell nothing about a
/// combination not seen in training; a few values that repeat ("New York", "San Diego") are
/// categories.
fn only_column_is_text(vals: &[&str]) -> bool {
    let present: Vec<&str> = vals.iter().copied().filter(|v| !is_missing(v)).collect();
    let n = present.len();
    let numeric = present.iter().filter(|v| parse_number(v).is_some()).count();
    let words: usize = present.iter().map(|v| v.split_whitespace().count()).sum();
    let distinct = present.iter().map(|v| v.trim()).collect::<std::collections::HashSet<_>>().len();
    looks_like_text(vals) || (n > 0 && numeric * 2 <= n && words >= 2 * n && distinct > 20 && distinct * 10 > n)
}

/// Whether a column's name says it identifies rows (`id`, `…_id`, `index`, pandas' `Unnamed: 0`).
fn named_like_id(name: &str) -> bool {
    let n = name.trim().to_ascii_lowercase();
    matches!(n.as_str(), "" | "id" | "#" | "no" | "index" | "idx" | "key" | "row" | "uid" | "uuid") || n.ends_with("_id") || n.ends_with(" id") || n.starts_with("unnamed")
}

/// Whether a column is a row identifier: named like one (or not named: `unnamed`), or whole
/// numbers / single words that are all different.
fn looks_like_id(name: &str, unnamed: bool, vals: &[&str]) -> bool {
    unnamed || named_like_id(name) || distinct_keys(vals)
}

/// Whether the values are whole numbers or single words, at least ten and all different (a
/// row number, a key).
fn distinct_keys(vals: &[&str]) -> bool {
    let distinct = vals.iter().map(|v| v.trim()).collect::<std::collections::HashSet<_>>().len();
    vals.len() >= 10
        && distinct == vals.len()
        && vals.iter().all(|v| v.split_whitespace().count() == 1 && parse_number(v).is_none_or(|x| x.fract() == 0.0))
}

fn csv_layout(path: &Path, fmt: Format, o: &DataConfig) -> Result<CsvLayout, NnError> {
    csv_layout_of(path, &csv_records(path, fmt.separator())?.0, fmt, o)
}

/// Bytes of a CSV's beginning that [`input_kind`] reads to tell a text file from a table.
const HEAD_BYTES: u64 = 8 << 20;

/// [`csv_layout`] of the file's first [`HEAD_BYTES`] (whole lines), or of the whole file when it
/// is smaller or its beginning cannot be read alone (UTF-16, a quoted field cut at the end):
/// enough to choose a model, without parsing a large file once more before [`load`] parses it.
fn csv_head_layout(path: &Path, fmt: Format, o: &DataConfig) -> Result<CsvLayout, NnError> {
    let whole = || csv_layout(path, fmt, o);
    if std::fs::metadata(path).map_or(true, |m| m.len() <= HEAD_BYTES) {
        return whole();
    }
    let Some(mut head) = file_head(path, HEAD_BYTES).filter(|h| !matches!(h[..], [0xFF, 0xFE, ..] | [0xFE, 0xFF, ..])) else { return whole() };
    let Some(end) = head.iter().rposition(|&b| b == b'\n') else { return whole() };
    head.truncate(end + 1);
    match decode_text(path, &head).and_then(|(text, _)| csv_records_of(path, &text, fmt.separator())) {
        Ok(recs) => csv_layout_of(path, &recs, fmt, o).or_else(|_| whole()),
        Err(_) => whole(),
    }
}

/// [`csv_layout`] of records already parsed (the training file is parsed once, for its layout
/// and its rows).
fn csv_layout_of(path: &Path, recs: &[crate::data::CsvRecord], fmt: Format, o: &DataConfig) -> Result<CsvLayout, NnError> {
    if recs.is_empty() {
        return Err(DataError::whole("holds no rows").with_path(path).into());
    }
    let header = o.header.unwrap_or_else(|| has_header(&recs, o.target.as_deref().map(str::trim)));
    let names = column_names(&recs[0].fields, header);
    let unnamed: Vec<bool> = recs[0].fields.iter().map(|f| header && f.trim().is_empty()).collect();
    unique_names(&names, path)?;
    let target = if !header && o.target.is_none() { names.len() - 1 } else { target_column(&names, o.target.as_deref(), path)? };
    let body = if header { &recs[1..] } else { &recs[..] };
    let sample = |c: usize| -> Vec<&str> { body.iter().take(1000).filter_map(|r| r.fields.get(c)).map(|s| s.as_str()).collect() };
    let mut notes = Vec::new();
    // A first line of numbers is a data row by every rule `has_header` has, but a header of
    // years or codes (`2019,2020,2021`) looks the same: say which way it was read.
    if o.header.is_none() && !header && recs.len() > 1 && recs[0].fields.iter().all(|f| parse_number(f).is_some()) {
        notes.push(format!(
            "{}: line 1 ({}) is read as data, not as column names (every field is a number, as in the lines below); if it names the columns, pass --header yes (header = true in [data])",
            path.display(),
            short_list(&recs[0].fields)
        ));
    }
    let mut features: Vec<String> = match &o.features {
        Some(f) => {
            for (i, n) in f.iter().enumerate() {
                if !names.contains(n) {
                    return Err(DataError::new(Location::Line(1), format!("no feature column {n:?}; the columns are {}", short_list(&names))).with_path(path).into());
                }
                if f[..i].contains(n) {
                    return Err(NnError::invalid("data", "features", quoted(n), "is named twice; name each feature column once"));
                }
            }
            f.clone()
        }
        None => {
            // A column with no value in any row (a spreadsheet's trailing comma makes an
            // unnamed one) would only ever encode `<missing>`: left out, and said.
            let (empty, kept): (Vec<(usize, &String)>, Vec<(usize, &String)>) = names
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != target)
                .partition(|(i, _)| body.iter().all(|r| r.fields.get(*i).is_none_or(|v| is_missing(v))));
            if !empty.is_empty() && !kept.is_empty() {
                let list: Vec<String> = empty.iter().map(|(_, n)| quoted(n)).collect();
                notes.push(format!("{}: {} left out: no row has a value in it", path.display(), list.join(", ")));
            }
            let kept = if kept.is_empty() { empty } else { kept };
            kept.into_iter().map(|(_, n)| n.clone()).collect()
        }
    };
    if let Some(t) = &o.text_column {
        if !names.contains(t) {
            return Err(DataError::new(Location::Line(1), format!("no text column {t:?}; the columns are {}", short_list(&names))).with_path(path).into());
        }
        if *t == names[target] {
            return Err(NnError::invalid("data", "text_column", quoted(t), "is the target column: a model reading its own label would learn nothing (name the text column, or another --target)"));
        }
    }
    // Column positions by name (a file may have 10^5 columns: no linear search per feature).
    let index: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
    let col = |n: &str| index[n];
    // Text classification: one feature column of free text, alone or beside row identifiers
    // (which carry nothing a model should learn). Feature columns named by the user are
    // features, not text.
    let text = match (&o.text_column, &o.features) {
        (Some(t), _) => {
            let unused: Vec<String> = features.iter().filter(|n| *n != t).map(|n| quoted(n)).collect();
            if !unused.is_empty() {
                notes.push(format!("{}: a text model reads only the text column {}; {} not used", path.display(), quoted(t), unused.join(", ")));
            }
            Some(t.clone())
        }
        (None, Some(_)) => None,
        (None, None) => {
            let texty: Vec<&String> = features.iter().filter(|n| looks_like_text(&sample(col(n)))).collect();
            match texty.as_slice() {
                _ if features.len() == 1 => only_column_is_text(&sample(col(&features[0]))).then(|| features[0].clone()),
                [t] => {
                    let others: Vec<&String> = features.iter().filter(|n| n != t).collect();
                    if others.iter().all(|n| looks_like_id(n, unnamed[col(n)], &sample(col(n)))) {
                        let list: Vec<String> = others.iter().map(|n| quoted(n)).collect();
                        notes.push(format!(
                            "{}: column {} is free text, read by a text model; {} look(s) like row identifiers and are not used (choose columns with --features, or the text with --text-column)",
                            path.display(),
                            quoted(t),
                            list.join(", ")
                        ));
                        Some((*t).clone())
                    } else {
                        None
                    }
                }
                _ => None,
            }
        }
    };
    if text.is_some() {
        features.clear();
    }
    // Row identifiers beside real features (pandas' unnamed index column, an `id`) number the
    // rows: a model would learn the file's order from them, which new data does not share.
    // Left out, and said; columns the user names are always used.
    if text.is_none() && o.features.is_none() {
        let (ids, rest): (Vec<String>, Vec<String>) =
            features.iter().cloned().partition(|n| (unnamed[col(n)] || named_like_id(n)) && distinct_keys(&sample(col(n))));
        if !ids.is_empty() && !rest.is_empty() {
            let list: Vec<String> = ids.iter().map(|n| quoted(n)).collect();
            notes.push(format!(
                "{}: {} left out: a row identifier (a different whole number or key on every row), which would let the model learn the rows' order (use it with --features)",
                path.display(),
                list.join(", ")
            ));
            features = rest;
        }
    }
    if features.contains(&names[target]) {
        return Err(NnError::invalid("data", "features", names[target].clone(), "the target column cannot also be a feature"));
    }
    if text.is_none() && features.is_empty() {
        return Err(DataError::new(Location::Line(1), format!("no feature columns besides the target{}", separator_hint(&names))).with_path(path).into());
    }
    if text.is_none() && o.features.is_none() && features.iter().all(|n| named_like_id(n) || (unnamed[col(n)] && distinct_keys(&sample(col(n))))) {
        return Err(DataError::new(
            Location::Line(1),
            format!("the only feature columns, {}, are row identifiers: there is nothing to learn from (name the columns to use with --features)", features.iter().map(|n| quoted(n)).collect::<Vec<_>>().join(", ")),
        )
        .with_path(path)
        .into());
    }
    Ok(CsvLayout { sep: fmt.separator(), header, names: names.clone(), target: names[target].clone(), text, features, notes })
}

/// The column names of a CSV whose first record is `first`: the header's fields (trimmed), or
/// `column1`, `column2`, … without a header. Header fields left empty (the index column
/// pandas' `to_csv` writes, a spreadsheet column without a title) are named `unnamed1`,
/// `unnamed2`, … in their order, so that they can be named in messages and found again in new
/// files (counted among the unnamed ones only, a file without the target column finds them
/// too).
fn column_names(first: &[String], header: bool) -> Vec<String> {
    let mut unnamed = 0;
    first
        .iter()
        .enumerate()
        .map(|(i, f)| match (header, f.trim()) {
            (false, _) => format!("column{}", i + 1),
            (true, "") => {
                unnamed += 1;
                format!("unnamed{unnamed}")
            }
            (true, name) => name.to_string(),
        })
        .collect()
}

/// Columns are found by name, so two columns of one name would leave one of them unread
/// without a word: an error naming both.
fn unique_names(names: &[String], path: &Path) -> Result<(), NnError> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, n) in names.iter().enumerate() {
        if let Some(j) = seen.insert(n, i) {
            return Err(DataError::new(Location::Line(1), format!("columns {} and {} are both named {}", j + 1, i + 1, quoted(n))).with_path(path).into());
        }
    }
    Ok(())
}

/// Reads a CSV with a known layout. `labelled`: the target column must be present.
fn read_csv(path: &Path, lay: &CsvLayout, labelled: bool) -> Result<RawSet, NnError> {
    check_room(path, CSV_COST, lay.sep)?;
    let (text, lossy) = read_text(path)?;
    csv_of_text(path, &text, lossy, lay, labelled)
}

/// [`read_csv`] of text already read (standard input can be read only once).
fn csv_of_text(path: &Path, text: &str, lossy: bool, lay: &CsvLayout, labelled: bool) -> Result<RawSet, NnError> {
    csv_of_records(path, csv_records_of(path, text, lay.sep)?, lossy, lay, labelled)
}

/// [`read_csv`] of records already parsed.
///
/// The records are taken by value and their fields moved into the examples, each record freed
/// as soon as it is read: copying the fields while every record is still held would double the
/// memory a CSV takes while it is read.
fn csv_of_records(path: &Path, recs: Vec<crate::data::CsvRecord>, lossy: bool, lay: &CsvLayout, labelled: bool) -> Result<RawSet, NnError> {
    let (names, skip): (Vec<String>, usize) = if lay.header {
        let Some(first) = recs.first() else { return Err(DataError::whole("is empty: no header row").with_path(path).into()) };
        // A first row of numbers where training had names: the header row is missing (reading
        // the numbers as names would end in a puzzling "both named 0.9").
        let wanted: Vec<String> = lay.text.iter().chain(&lay.features).cloned().collect();
        if first.fields.iter().all(|f| parse_number(f).is_some()) && !wanted.is_empty() && !wanted.iter().any(|n| parse_number(n).is_some()) {
            let target = if lay.target.is_empty() { String::new() } else { format!(" (and the target {})", quoted(&lay.target)) };
            return Err(DataError::new(
                Location::Line(first.line),
                format!("holds numbers where the header row should be: the model reads the columns {}{target}; add the header row", short_list(&wanted)),
            )
            .with_path(path)
            .into());
        }
        (column_names(&first.fields, true), 1)
    } else {
        // No header, as in training: columns by position, with or without the target.
        let width = recs.first().map_or(lay.names.len(), |r| r.fields.len());
        let without_target: Vec<String> = lay.names.iter().filter(|n| **n != lay.target).cloned().collect();
        let names = if width == lay.names.len() {
            lay.names.clone()
        } else if width == without_target.len() && !labelled {
            without_target
        } else {
            let line = recs.first().map_or(1, |r| r.line);
            let label = if labelled { String::new() } else { format!(", or {} without the target {}", without_target.len(), quoted(&lay.target)) };
            return Err(DataError::new(
                Location::Line(line),
                format!("{width} fields, but the model was trained on a file without a header row of {} columns{label}; columns are matched by position", lay.names.len()),
            )
            .with_path(path)
            .into());
        };
        (names, 0)
    };
    unique_names(&names, path)?;
    let index: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
    let col = |n: &str| -> Result<usize, NnError> {
        index.get(n).copied().ok_or_else(|| DataError::new(Location::Line(1), format!("no column {n:?}; the columns are {}{}", short_list(&names), separator_hint(&names))).with_path(path).into())
    };
    let target = if labelled { Some(col(&lay.target)?) } else { names.iter().position(|h| *h == lay.target) };
    let text = lay.text.as_deref().map(col).transpose()?;
    let feats: Vec<usize> = lay.features.iter().map(|n| col(n)).collect::<Result<_, _>>()?;
    let mut out = RawSet { path: path.to_path_buf(), columns: lay.features.clone(), lossy: lossy as usize, headerless: !lay.header, ..Default::default() };
    // Each label read without surrounding spaces, with the spellings that had them.
    let mut spaced: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    let shared: Arc<Path> = Arc::from(path);
    out.examples.reserve(recs.len().saturating_sub(skip));
    for mut r in recs.into_iter().skip(skip) {
        if r.fields.len() != names.len() {
            return Err(DataError::new(Location::Line(r.line), format!("{} fields, but the header has {} columns", r.fields.len(), names.len())).with_path(path).into());
        }
        let label = target.map(|t| r.fields[t].trim().to_string());
        if let Some(t) = target.filter(|&t| r.fields[t].trim().len() != r.fields[t].len()) {
            spaced.entry(r.fields[t].trim().to_string()).or_default().insert(r.fields[t].clone());
        }
        let input = match text {
            Some(t) => RawInput::Text(std::mem::take(&mut r.fields[t])),
            // A column listed twice is refused when the layout is made, so each field moves once.
            None => RawInput::Row(feats.iter().map(|&c| std::mem::take(&mut r.fields[c])).collect()),
        };
        out.examples.push(RawExample { origin: Origin::Line(shared.clone(), r.line), input, label });
    }
    // Labels are read without the spaces around them, so `sp`, `sp ` and ` sp` are one class:
    // said, since a user who meant three classes would otherwise not know.
    if !spaced.is_empty() {
        let list: Vec<String> = spaced.iter().take(5).map(|(k, v)| format!("{} read as {}", v.iter().map(|s| quoted(s)).collect::<Vec<_>>().join(", "), quoted(k))).collect();
        let more = if spaced.len() > 5 { format!(" (and {} more)", spaced.len() - 5) } else { String::new() };
        out.notes.push(format!("{}: labels are read without the spaces around them: {}{more}", path.display(), list.join("; ")));
    }
    Ok(out)
}

/// Every regular, non-hidden file under `dir`, sorted (so the order is the same everywhere).
///
/// Symbolic links to folders are followed, except to a folder already read or to `dir` itself
/// or one of its parents: a link back up the tree (a loop) would otherwise read the same files
/// again and again, each time under a longer path (and, in a class folder, under that class).
/// A file reached by two paths (a link to a file beside it) is listed once, under the first
/// path in sorted order: read twice it would count double in training and in the scores.
fn files_under(dir: &Path) -> Result<Vec<PathBuf>, NnError> {
    let mut out = Vec::new();
    let root = std::fs::canonicalize(dir).ok();
    let mut visited: std::collections::HashSet<PathBuf> = root.iter().cloned().collect();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let rd = std::fs::read_dir(&d).map_err(|e| DataError::io(&d, &e))?;
        for e in rd {
            let e = e.map_err(|e| DataError::io(&d, &e))?;
            let p = e.path();
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            if p.is_dir() {
                if let Ok(c) = std::fs::canonicalize(&p) {
                    // `dir` itself or a parent (a loop), or a folder already read.
                    if root.as_ref().is_some_and(|r| r.starts_with(&c)) || !visited.insert(c) {
                        continue;
                    }
                }
                stack.push(p);
            } else if p.is_file() {
                out.push(p);
            }
        }
    }
    out.sort();
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())));
    Ok(out)
}

/// Whether `p` itself (not a folder above it) is a symbolic link.
fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// Whether the folder `p` (inside `root`) is, through symbolic links, `root` itself or one of
/// its parents.
fn leads_back(root: &Path, p: &Path) -> bool {
    match (std::fs::canonicalize(root), std::fs::canonicalize(p)) {
        (Ok(r), Ok(c)) => r.starts_with(&c),
        _ => false,
    }
}

/// The non-hidden subfolders of `dir`, sorted, without links back to `dir` or its parents.
fn subdirs(dir: &Path) -> Result<Vec<PathBuf>, NnError> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| DataError::io(dir, &e))?
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !leads_back(dir, p))
        .collect();
    v.sort();
    Ok(v)
}

/// Whether the first line of `path`, split by `sep`, has a field `name`.
fn first_line_names(text: &str, sep: u8, name: &str) -> bool {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    first.split(sep as char).any(|f| f.trim().trim_matches('"') == name)
}

/// One text per line, unlabelled (`chi predict` on a plain text file). Blank lines are kept (as
/// texts without tokens, which the encoder warns about) so that the predictions line up with
/// the input's lines; only blank lines at the end of the file are dropped.
fn read_text_lines(path: &Path) -> Result<RawSet, NnError> {
    let (text, lossy) = read_text(path)?;
    Ok(text_lines_of(path, &text, lossy))
}

/// [`read_text_lines`] of text already read.
fn text_lines_of(path: &Path, text: &str, lossy: bool) -> RawSet {
    let mut out = RawSet { path: path.to_path_buf(), lossy: lossy as usize, ..Default::default() };
    let lines: Vec<&str> = text.lines().collect();
    let last = lines.iter().rposition(|l| !l.trim().is_empty()).map_or(0, |i| i + 1);
    let shared: Arc<Path> = Arc::from(path);
    for (i, l) in lines[..last].iter().enumerate() {
        out.examples.push(RawExample { origin: Origin::Line(shared.clone(), i + 1), input: RawInput::Text(l.to_string()), label: None });
    }
    out
}

/// How a CSV is read by a text model that was trained on a folder (which names no columns):
/// a header is detected, the text is the one column that reads as free text (or the only
/// column), and the label (`labelled`) is the column named like one (label, target, class,
/// y) or else the column whose values are all class names.
fn text_csv_layout(path: &Path, recs: &[crate::data::CsvRecord], fmt: Format, labelled: bool, classes: &[String]) -> Result<CsvLayout, NnError> {
    let Some(first) = recs.first() else { return Err(DataError::whole("holds no rows").with_path(path).into()) };
    let header = has_header(&recs, None);
    let names = column_names(&first.fields, header);
    let body = if header { &recs[1..] } else { &recs[..] };
    let values = |c: usize| -> Vec<&str> { body.iter().take(1000).filter_map(|r| r.fields.get(c)).map(|s| s.as_str()).collect() };
    let is_label = |c: usize| ["label", "target", "class", "y"].iter().any(|w| names[c].eq_ignore_ascii_case(w)) || (!body.is_empty() && values(c).iter().all(|v| classes.iter().any(|k| k == v.trim())));
    let label = (0..names.len()).find(|&c| is_label(c));
    let texts: Vec<usize> = (0..names.len()).filter(|&c| Some(c) != label && (names.len() == 1 || looks_like_text(&values(c)))).collect();
    let what = "the model was trained on a folder of texts";
    let text = match texts.as_slice() {
        [t] => *t,
        [] => return Err(DataError::new(Location::Line(1), format!("no column reads as free text ({what}); the columns are {}", short_list(&names))).with_path(path).into()),
        many => {
            let list: Vec<String> = many.iter().map(|&c| names[c].clone()).collect();
            return Err(DataError::new(Location::Line(1), format!("several columns read as free text ({}) and {what}: keep only the text column (and the label)", short_list(&list))).with_path(path).into());
        }
    };
    if labelled && label.is_none() {
        return Err(DataError::new(Location::Line(1), format!("no label column: name it label (the columns are {})", short_list(&names))).with_path(path).into());
    }
    Ok(CsvLayout {
        sep: fmt.separator(),
        header,
        target: label.map(|c| names[c].clone()).unwrap_or_default(),
        text: Some(names[text].clone()),
        features: Vec::new(),
        names,
        notes: Vec::new(),
    })
}

/// Unlabelled token lines whose first field is, on every line, one of the model's classes were
/// written with their labels (the training format): the labels are taken off, not read as
/// tokens. A single line, or a line of one token, leaves the input as it is (a first token may
/// be a class name by chance).
fn strip_class_fields(raw: &mut RawSet, classes: &[String]) {
    let labelled = raw.examples.len() >= 2
        && raw.examples.iter().all(|e| matches!(&e.input, RawInput::Tokens(t) if t.split(' ').nth(1).is_some() && classes.iter().any(|c| t.split(' ').next() == Some(c.as_str()))));
    if labelled {
        for e in &mut raw.examples {
            if let RawInput::Tokens(t) = &mut e.input {
                *t = t.split_once(' ').map_or_else(String::new, |(_, rest)| rest.to_string());
            }
        }
        raw.notes.push(format!("{}: the first field of every line is a class name: read as the line's label, not as a token", raw.path.display()));
    }
}

/// Why a path that does not exist cannot be read: nothing there, or a link to nothing.
fn not_found(path: &Path) -> NnError {
    let why = if std::fs::symlink_metadata(path).is_ok() { "is a symbolic link that leads nowhere (to a missing file, or round in a loop)" } else { "no such file or directory" };
    DataError::whole(why).with_path(path).into()
}

/// A folder of class folders: each file is one example of its folder's class. A file is read
/// once however many links lead to it; one reached from two classes is an error, and a class
/// folder that is a link to another class folder is skipped with a note.
fn read_class_folder(dir: &Path) -> Result<RawSet, NnError> {
    if !dir.is_dir() {
        return Err(DataError::whole("is not a folder (folder data is DIR/CLASS/file.txt …; for a file, leave out --format folder or give its format)").with_path(dir).into());
    }
    let classes = subdirs(dir)?;
    if classes.is_empty() {
        return Err(DataError::whole("has no class sub-folders (expected DIR/CLASS/file.txt …)").with_path(dir).into());
    }
    let mut out = RawSet { path: dir.to_path_buf(), ..Default::default() };
    let name_of = |c: &Path| c.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    // A class folder that is a link to another class folder (`good -> pos`) would put every
    // file of that class under a second label: it is skipped, and said.
    let canon: Vec<Option<PathBuf>> = classes.iter().map(|c| std::fs::canonicalize(c).ok()).collect();
    let alias_of = |i: usize| -> Option<usize> {
        let ci = canon[i].as_ref()?;
        (0..classes.len()).filter(|&j| j != i && canon[j].as_ref() == Some(ci)).find(|&j| !is_link(&classes[j]) || j < i)
    };
    // Every file read so far, by its canonical path: its class and the path it was read by.
    let mut read: HashMap<PathBuf, (String, PathBuf)> = HashMap::new();
    for (i, c) in classes.iter().enumerate() {
        let name = name_of(c);
        if let Some(j) = alias_of(i).filter(|_| is_link(c)) {
            let target = name_of(&classes[j]);
            out.notes.push(format!(
                "{}: the class folder {name:?} is a symbolic link to the class folder {target:?} and is skipped (its files are read once, as class {target:?}); to have a class {name:?}, give it files of its own",
                c.display()
            ));
            continue;
        }
        let files = files_under(c)?;
        if files.is_empty() {
            return Err(DataError::whole(format!("class folder {name:?} holds no files")).with_path(c).into());
        }
        for f in files {
            let key = std::fs::canonicalize(&f).unwrap_or_else(|_| f.clone());
            if let Some((other, first)) = read.get(&key) {
                if *other != name {
                    return Err(DataError::whole(format!(
                        "is the same file as {} (one of the two paths goes through a symbolic link), so one text would be an example of class {other:?} and of class {name:?}: remove the link, or keep the file in one class folder",
                        first.display()
                    ))
                    .with_path(&f)
                    .into());
                }
                continue;
            }
            read.insert(key, (name.clone(), f.clone()));
            let (text, lossy) = read_text(&f)?;
            out.lossy += lossy as usize;
            out.examples.push(RawExample { origin: Origin::Named(f.display().to_string()), input: RawInput::Text(text), label: Some(name.clone()) });
        }
    }
    Ok(out)
}

/// `lines`: the label, white space, the tokens. `labelled = false`: every field is a token.
fn read_lines(path: &Path, labelled: bool) -> Result<RawSet, NnError> {
    check_room(path, LINES_COST, b' ')?;
    let (text, lossy) = read_text(path)?;
    let mut out = RawSet { path: path.to_path_buf(), lossy: lossy as usize, ..Default::default() };
    let shared: Arc<Path> = Arc::from(path);
    for (i, line) in text.lines().enumerate() {
        let mut toks = line.split_whitespace();
        let label = if labelled {
            match toks.next() {
                Some(l) => Some(l.to_string()),
                None => continue,
            }
        } else {
            None
        };
        let tokens: String = toks.collect::<Vec<&str>>().join(" ");
        if !labelled && tokens.is_empty() {
            continue;
        }
        out.examples.push(RawExample { origin: Origin::Line(shared.clone(), i + 1), input: RawInput::Tokens(tokens), label });
    }
    if out.examples.is_empty() {
        return Err(DataError::whole("holds no examples (one per line: label, then tokens)").with_path(path).into());
    }
    Ok(out)
}

/// Whether token lines look like CSV rows: every label (first token) holds a comma, so each
/// whole row would be a class of its own.
fn lines_look_like_csv(raw: &RawSet) -> bool {
    raw.examples.len() > 1 && raw.examples.iter().all(|e| e.label.as_deref().is_some_and(|l| l.contains(',')))
}

/// Array examples from an `.npy` or IDX file; labels from `labels` when given.
fn read_arrays(path: &Path, fmt: Format, labels: Option<&Path>) -> Result<RawSet, NnError> {
    let (shape, values): (Vec<usize>, Vec<f32>) = match fmt {
        Format::Npy => {
            let a = crate::data::read_npy(path)?;
            (a.shape.clone(), a.into_f32())
        }
        _ => {
            let a = crate::data::read_idx(path)?;
            // Bytes are pixel intensities: scaled to [0, 1] as the MNIST loaders do.
            let bytes = matches!(a.data, crate::data::idx::IdxData::U8(_));
            let mut v = idx_values(a.data);
            if bytes {
                v.iter_mut().for_each(|x| *x /= 255.0);
            }
            (a.dims, v)
        }
    };
    if shape.is_empty() || shape[0] == 0 {
        return Err(DataError::whole(format!("shape {shape:?} holds no examples (the first axis counts them)")).with_path(path).into());
    }
    let n = shape[0];
    let mut ex: Vec<usize> = shape[1..].to_vec();
    if ex.is_empty() {
        ex = vec![1];
    }
    if ex.len() == 2 {
        ex.insert(0, 1); // one channel
    }
    let k: usize = ex.iter().product();
    if k == 0 {
        return Err(DataError::whole(format!("shape {shape:?}: each example holds no values (an axis after the first is 0)")).with_path(path).into());
    }
    if let Some(i) = values.iter().position(|v| !v.is_finite()) {
        return Err(DataError::whole(format!("value {i} (example {}) is {}: inputs must be finite", i / k.max(1), values[i])).with_path(path).into());
    }
    let labels: Option<Vec<String>> = match labels {
        None => None,
        Some(lp) => {
            // Read in f64, not the inputs' f32: class codes such as 123456789 name their class
            // exactly (in f32, 123456789 would read as 123456792, and 16777216 and 16777217 as one class).
            let (lshape, lv): (Vec<usize>, Vec<f64>) = match Format::infer(lp).unwrap_or(fmt) {
                Format::Npy => {
                    let a = crate::data::read_npy(lp)?;
                    (a.shape.clone(), a.into_f64())
                }
                _ => {
                    let a = crate::data::read_idx(lp)?;
                    (a.dims.clone(), idx_values_f64(a.data))
                }
            };
            let count: usize = lshape.iter().product();
            if lshape.len() > 2 || count != n || (lshape.len() == 2 && lshape[1] != 1) {
                return Err(DataError::whole(format!("labels of shape {lshape:?} do not match the {n} examples of {}", path.display())).with_path(lp).into());
            }
            // Past 2^53 an integer label may already have been rounded on reading (int64 data):
            // two classes could have become one.
            if let Some(i) = lv.iter().position(|v| v.fract() == 0.0 && v.abs() > 9_007_199_254_740_992.0) {
                return Err(DataError::whole(format!("label {i} is {}, beyond 2^53: whole-number labels that large cannot be told apart exactly; renumber the classes", lv[i])).with_path(lp).into());
            }
            Some(lv.iter().map(|v| fmt_number(*v)).collect())
        }
    };
    let mut out = RawSet { path: path.to_path_buf(), shape: ex, ..Default::default() };
    let shared: Arc<Path> = Arc::from(path);
    for i in 0..n {
        out.examples.push(RawExample {
            origin: Origin::Example(shared.clone(), i),
            input: RawInput::Values(values[i * k..(i + 1) * k].to_vec()),
            label: labels.as_ref().map(|l| l[i].clone()),
        });
    }
    Ok(out)
}

fn idx_values(d: crate::data::idx::IdxData) -> Vec<f32> {
    use crate::data::idx::IdxData::*;
    match d {
        U8(v) => v.into_iter().map(f32::from).collect(),
        I8(v) => v.into_iter().map(f32::from).collect(),
        I16(v) => v.into_iter().map(f32::from).collect(),
        I32(v) => v.into_iter().map(|x| x as f32).collect(),
        F32(v) => v,
        F64(v) => v.into_iter().map(|x| x as f32).collect(),
    }
}

/// IDX elements in f64 (exact for every IDX type), for label files.
fn idx_values_f64(d: crate::data::idx::IdxData) -> Vec<f64> {
    use crate::data::idx::IdxData::*;
    match d {
        U8(v) => v.into_iter().map(f64::from).collect(),
        I8(v) => v.into_iter().map(f64::from).collect(),
        I16(v) => v.into_iter().map(f64::from).collect(),
        I32(v) => v.into_iter().map(f64::from).collect(),
        F32(v) => v.into_iter().map(f64::from).collect(),
        F64(v) => v,
    }
}

/// A number as a class name: whole numbers without a decimal point.
fn fmt_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

// ------------------------------------------------------------------------------- the task

/// Whether numeric targets are continuous (a regression), not class codes: class codes are few
/// distinct whole numbers (below 2^53, past which every float is whole and distinct values
/// would round together as integers).
fn continuous_numbers(v: &[f64]) -> bool {
    let whole = v.iter().all(|x| x.fract() == 0.0 && x.abs() < 9.0e15);
    let mut d: Vec<i64> = v.iter().map(|x| *x as i64).collect();
    d.sort_unstable();
    d.dedup();
    !(whole && d.len() <= MAX_INTEGER_CLASSES)
}

/// A continuous numeric target with a few values that do not read as finite numbers (a typo,
/// `1e400`) would silently become a classification with every number a class: an error naming
/// the first odd value instead (when at least 90 % of the targets are numbers).
fn odd_value_in_numeric_target(labels: &[&str], origin: &dyn Fn(usize) -> String) -> Result<(), NnError> {
    let parsed: Vec<f64> = labels.iter().filter_map(|l| parse_number(l)).collect();
    if parsed.len() == labels.len() || parsed.len() * 10 < labels.len() * 9 || !continuous_numbers(&parsed) {
        return Ok(());
    }
    let i = labels.iter().position(|l| parse_number(l).is_none()).expect("some label is not a number");
    Err(NnError::invalid(
        origin(i),
        "target",
        quoted(labels[i]),
        format!(
            "is not a finite number, but {} of {} targets are numbers (a continuous target): fix it, or pass --task classification if the values are class names",
            parsed.len(),
            labels.len()
        ),
    ))
}

/// Decides the task and the class names from the training labels.
fn decide_task(labels: &[&str], given: Option<&str>, origin: &dyn Fn(usize) -> String) -> Result<(Task, Vec<String>), NnError> {
    let missing: Vec<usize> = (0..labels.len()).filter(|&i| is_missing(labels[i])).collect();
    if let Some(&i) = missing.first() {
        // A word such as `NA` may be a class (North America) that happens to be a spelling of
        // a missing value: say that it was read as one, and how to keep it.
        let word = labels[i].trim();
        let as_class = if word.is_empty() { String::new() } else { format!("; if {} is a class, spell it another way in the file", quoted(word)) };
        return Err(NnError::invalid(
            origin(i),
            "target",
            quoted(labels[i]),
            format!(
                "reads as a missing target (missing: {MISSING_SPELLINGS}) in {} of the {} training examples; drop those rows{as_class}",
                missing.len(),
                labels.len()
            ),
        ));
    }
    let numbers: Option<Vec<f64>> = labels.iter().map(|l| parse_number(l)).collect();
    let regression = match given {
        Some("regression") => true,
        Some("classification") => false,
        Some(t) => return Err(NnError::invalid("data", "task", t, "classification or regression")),
        None => match &numbers {
            None => {
                odd_value_in_numeric_target(labels, origin)?;
                let spelled = labels.iter().filter(|l| other_number_spelling(l).is_some()).count();
                if spelled > 0 && (spelled + labels.iter().filter(|l| parse_number(l).is_some()).count()) * 2 > labels.len() {
                    let i = labels.iter().position(|l| other_number_spelling(l).is_some()).expect("a label in another spelling");
                    return Err(NnError::invalid(
                        origin(i),
                        "target",
                        quoted(labels[i]),
                        format!(
                            "is a number written with {} (as are {spelled} of {} targets): chi reads numbers with '.' as the decimal point and no signs or separators; rewrite them, or pass --task classification if the values are class names",
                            other_number_spelling(labels[i]).expect("checked"),
                            labels.len()
                        ),
                    ));
                }
                false
            }
            Some(v) => continuous_numbers(v),
        },
    };
    if regression {
        if let Some(i) = labels.iter().position(|l| parse_number(l).is_none()) {
            let spelling = other_number_spelling(labels[i]).map_or(String::new(), |how| format!(" (a number written with {how}: chi reads '.' as the decimal point, without signs or separators)"));
            return Err(NnError::invalid(origin(i), "target", quoted(labels[i]), format!("is not a finite number{spelling}, but the task is regression")));
        }
        // A constant target leaves nothing to learn, and its correlation metrics are 0/0: said
        // before training, not as a NaN metric after it.
        let v: Vec<f64> = labels.iter().filter_map(|l| parse_number(l)).collect();
        if v.len() > 1 && v.iter().all(|&x| x == v[0]) {
            return Err(NnError::invalid(origin(0), "target", quoted(labels[0]), format!("every training target is {}: a constant leaves nothing to learn (is the target column right?)", v[0])));
        }
        return Ok((Task::Regression, Vec::new()));
    }
    let mut classes: Vec<String> = labels.iter().map(|l| class_key(l)).collect();
    // Numbers by value before other labels as text; ties as text. A total order (mixing the
    // two comparisons pairwise is not one: 2 < 10 by value, 10 < 1a < 2 as text), so equal
    // labels end up next to each other for `dedup`.
    classes.sort_by(|a, b| {
        let (x, y) = (parse_number(a), parse_number(b));
        let value = match (x, y) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            _ => y.is_some().cmp(&x.is_some()),
        };
        value.then_with(|| a.cmp(b))
    });
    classes.dedup();
    if classes.len() < 2 {
        return Err(NnError::invalid(
            "data",
            "target",
            classes.first().cloned().unwrap_or_default(),
            "every example of the training split has this class; a classifier needs at least two (is the target column right? pass --target NAME)",
        ));
    }
    if classes.len() > MAX_CLASSES {
        return Err(NnError::invalid(
            "data",
            "target",
            format!("{} distinct values", classes.len()),
            format!("more than {MAX_CLASSES} classes: is this the right target column? (for a numeric target pass --task regression)"),
        ));
    }
    Ok((Task::Classification { classes: classes.len() }, classes))
}

/// The class a label text names: the label as written, without surrounding white space.
/// Labels are compared as text, so codes keep their spelling (`01` is not `1`, `7.0` is not
/// `7`); [`DataSchema::targets`] matches a new file's `1.0` to a class `1` when no class is
/// spelled `1.0`.
fn class_key(l: &str) -> String {
    l.trim().to_string()
}

/// Classes that are one number spelled differently (`7`, `07`, `7.0`) or one word in other
/// letter case (`TRUE`, `true`), as one line each: they stay separate classes, which the user
/// should know.
fn same_number_classes(classes: &[String]) -> Vec<String> {
    let mut by_value: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for c in classes {
        let key = match parse_number(c) {
            Some(v) => format!("number {}", fmt_number(v)),
            None => format!("word {}", c.to_lowercase()),
        };
        by_value.entry(key).or_default().push(c);
    }
    by_value
        .into_iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|(k, v)| {
            let what = if k.starts_with("number") { "the same number written differently" } else { "the same word in other letter case" };
            format!("classes {} are {what}; labels are compared as text, so they are separate classes", v.iter().map(|c| quoted(c)).collect::<Vec<_>>().join(", "))
        })
        .collect()
}

// ------------------------------------------------------------------------------- splitting

/// Seeded split of `labels` into train / validation / test indices by `fractions`, stratified
/// by label (each class is split in the same proportions; a class keeps at least one training
/// example). Indices come out sorted.
pub fn stratified_split(labels: &[String], fractions: [f64; 3], rng: &mut Rng) -> [Vec<usize>; 3] {
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, l) in labels.iter().enumerate() {
        groups.entry(l.as_str()).or_default().push(i);
    }
    let total: f64 = fractions.iter().sum();
    let mut out: [Vec<usize>; 3] = Default::default();
    for (_, mut g) in groups {
        rng.shuffle(&mut g);
        let n = g.len();
        // Validation first, then test, from what is left after one training example.
        let nv = (((fractions[1] / total) * n as f64).round() as usize).min(n - 1);
        let nt = (((fractions[2] / total) * n as f64).round() as usize).min(n - 1 - nv);
        out[2].extend_from_slice(&g[..nt]);
        out[1].extend_from_slice(&g[nt..nt + nv]);
        out[0].extend_from_slice(&g[nt + nv..]);
    }
    for s in &mut out {
        s.sort_unstable();
    }
    out
}

fn check_fractions(f: &[f64]) -> Result<[f64; 3], NnError> {
    let bad = |why: &str| NnError::invalid("data", "split", format!("{f:?}"), why.to_string());
    if f.len() != 3 {
        return Err(bad("three fractions train,valid,test (e.g. 0.8,0.1,0.1)"));
    }
    if f.iter().any(|x| !x.is_finite() || *x < 0.0) || f[0] <= 0.0 {
        return Err(bad("fractions must be finite and >= 0, the training one > 0"));
    }
    if (f.iter().sum::<f64>() - 1.0).abs() > 1e-6 {
        return Err(bad("fractions must add up to 1"));
    }
    Ok([f[0], f[1], f[2]])
}

// ------------------------------------------------------------------------------- encoding

fn fit_encoder(kind: DataKind, raw: &RawSet, o: &FileOptions, text_column: Option<String>, warnings: &mut Vec<String>) -> Result<Encoder, NnError> {
    match kind {
        DataKind::Text => {
            // Counted text by text: every token of every text held at once took several times
            // the texts' size.
            let vocab = Vocab::build(raw.examples.iter().map(|e| tokens_of(&e.input, &o.tokenizer)), o.min_count, o.max_vocab);
            if vocab.len() < 2 {
                warnings.push(format!("{}: the training vocabulary is empty (every token is <unk>)", raw.path.display()));
            }
            Ok(Encoder::Text { tokenizer: o.tokenizer.clone(), vocab, text_column })
        }
        DataKind::Tabular if !raw.columns.is_empty() => {
            let mut columns = Vec::new();
            // Numeric columns with one value in every training row, named in one warning.
            let mut constant: Vec<String> = Vec::new();
            for (c, name) in raw.columns.iter().enumerate() {
                let vals: Vec<&str> = raw.examples.iter().map(|e| match &e.input {
                    RawInput::Row(r) => r[c].as_str(),
                    _ => "",
                }).collect();
                let present: Vec<&str> = vals.iter().copied().filter(|v| !is_missing(v)).collect();
                let nums: Vec<f64> = present.iter().filter_map(|v| parse_number(v)).collect();
                if !present.is_empty() && nums.len() * 2 > present.len() {
                    let (mean, std) = standardisation(&nums)
                        .map_err(|big| NnError::invalid(format!("{}", raw.path.display()), format!("column {name:?}"), big, format!("{TOO_LARGE}: rescale the column")))?;
                    if let Some(o) = far_outlier(&nums) {
                        warnings.push(outlier_warning(&raw.path, &format!("column {name:?}"), o));
                    }
                    if nums.len() >= 2 && nums.iter().all(|&x| x == nums[0]) {
                        constant.push(format!("{name:?} ({})", nums[0]));
                    }
                    columns.push(Column::Numeric { name: name.clone(), mean, std });
                } else {
                    let mut cats: Vec<String> = vals.iter().map(|v| if is_missing(v) { MISSING.to_string() } else { v.trim().to_string() }).collect();
                    cats.sort();
                    cats.dedup();
                    if looks_like_text(&vals) || (cats.len() > 500 && cats.len() * 2 > vals.len()) {
                        return Err(NnError::invalid(
                            format!("{}", raw.path.display()),
                            format!("column {name:?}"),
                            format!("{} distinct text values in {} rows", cats.len(), vals.len()),
                            "looks like an identifier or free text, not a feature: leave it out with --features, or use it as --text-column",
                        ));
                    }
                    let spelled: Vec<(&str, &str)> = present.iter().filter_map(|v| other_number_spelling(v).map(|how| (*v, how))).collect();
                    if !spelled.is_empty() && (spelled.len() + nums.len()) * 2 > present.len() {
                        let (example, how) = spelled[0];
                        warnings.push(format!(
                            "{}: column {name:?} holds numbers written with {how} ({}): chi reads numbers with '.' as the decimal point and no signs or separators, so it is read as {} categories; rewrite the numbers to use it as a number",
                            raw.path.display(),
                            quoted(example.trim()),
                            cats.len()
                        ));
                    } else if cats.len() > 20 && cats.len() * 2 > present.len() {
                        warnings.push(format!(
                            "{}: column {name:?} has {} distinct values in {} rows: nearly every value is a category of its own, from which a model cannot generalise (an identifier, a date?); leave it out with --features",
                            raw.path.display(),
                            cats.len(),
                            vals.len()
                        ));
                    }
                    columns.push(Column::Categorical { name: name.clone(), categories: cats });
                }
            }
            if !constant.is_empty() {
                let shown = constant.iter().take(10).cloned().collect::<Vec<_>>().join(", ");
                let more = if constant.len() > 10 { format!(" and {} more", constant.len() - 10) } else { String::new() };
                warnings.push(format!(
                    "{}: {} numeric column(s) have one value in every training row: {shown}{more}; they cannot inform the model, and other values of them in new data pass through weights that never trained",
                    raw.path.display(),
                    constant.len()
                ));
            }
            Ok(Encoder::Tabular { columns })
        }
        _ => {
            let k: usize = raw.shape.iter().product();
            let per_feature = raw.shape.len() == 1;
            let width = if per_feature { k } else { 1 };
            let mut sum = vec![0f64; width];
            let mut sq = vec![0f64; width];
            let mut count = vec![0f64; width];
            for e in &raw.examples {
                if let RawInput::Values(v) = &e.input {
                    for (j, x) in v.iter().enumerate() {
                        let c = if per_feature { j } else { 0 };
                        sum[c] += *x as f64;
                        sq[c] += (*x as f64) * (*x as f64);
                        count[c] += 1.0;
                    }
                }
            }
            let mean: Vec<f32> = (0..width).map(|c| (sum[c] / count[c].max(1.0)) as f32).collect();
            let std: Vec<f32> = (0..width)
                .map(|c| {
                    let m = sum[c] / count[c].max(1.0);
                    let v = (sq[c] / count[c].max(1.0) - m * m).max(0.0).sqrt();
                    // Relative to the values' size, so that data on a small scale (1e-7) is
                    // standardised; a constant column's spread is rounding (E[x²] − m² cancels).
                    let rms = (sq[c] / count[c].max(1.0)).sqrt();
                    if v > 1e-6 * rms { v as f32 } else { 1.0 }
                })
                .collect();
            Ok(Encoder::Array { shape: raw.shape.clone(), mean, std })
        }
    }
}

/// The category of a missing categorical value.
pub const MISSING: &str = "<missing>";

/// Whether `input` has more tokens than `t` keeps.
fn more_tokens_than(input: &RawInput, t: &Tokenizer) -> bool {
    match input {
        RawInput::Text(s) => t.cuts(s),
        RawInput::Tokens(v) => v.split_whitespace().nth(t.max_len).is_some(),
        _ => false,
    }
}

fn tokens_of(input: &RawInput, t: &Tokenizer) -> Vec<String> {
    match input {
        RawInput::Text(s) => t.tokenize(s),
        RawInput::Tokens(v) => v.split_whitespace().take(t.max_len).map(String::from).collect(),
        _ => Vec::new(),
    }
}

/// Counts of things replaced while encoding, reported as warnings.
#[derive(Default)]
struct Replaced {
    imputed: usize,
    missing_categories: usize,
    /// Missing values of a column that had none in training (no missing category to encode).
    missing_unseen: usize,
    unseen_categories: usize,
    /// The column and value of the first unseen category, and a training category that
    /// differs from it only in letter case.
    first_unseen: Option<(String, String, Option<String>)>,
    empty_texts: usize,
    /// Texts with more tokens than the tokenizer keeps, the limit, and the first such text.
    cut_texts: usize,
    max_len: usize,
    first_cut: Option<String>,
    /// Numeric values more than [`FAR_FROM_TRAINING`] training standard deviations from the
    /// training mean, and the column, value and distance of the first.
    far_values: usize,
    first_far: Option<(String, String, f64)>,
}

/// Distance from the training mean, in training standard deviations, past which a numeric value
/// of new data is named: the model saw nothing like it, and its output there is extrapolation (a
/// column constant in training, 5, read as 1005 in new data is 1000 away).
const FAR_FROM_TRAINING: f64 = 100.0;

impl Encoder {
    /// The model inputs of raw examples.
    fn encode(&self, raw: &RawSet, rep: &mut Replaced) -> Result<Inputs, NnError> {
        match self {
            Encoder::Text { tokenizer, vocab, .. } => {
                let mut seqs = Vec::with_capacity(raw.examples.len());
                for e in &raw.examples {
                    let toks = tokens_of(&e.input, tokenizer);
                    // Only a text that filled the limit can have been cut: look one token further.
                    if toks.len() == tokenizer.max_len && more_tokens_than(&e.input, tokenizer) {
                        rep.cut_texts += 1;
                        rep.max_len = tokenizer.max_len;
                        rep.first_cut.get_or_insert_with(|| e.origin.to_string());
                    }
                    let mut ids = vocab.encode(&toks);
                    if ids.is_empty() {
                        rep.empty_texts += 1;
                        ids.push(text::UNK_ID);
                    }
                    seqs.push(ids);
                }
                Ok(Inputs::Tokens { seqs, vocab: vocab.len() })
            }
            Encoder::Tabular { columns } => {
                let width: usize = columns.iter().map(Column::width).sum();
                crate::limits::check_elements("tabular inputs (rows × encoded features)", &[raw.examples.len(), width])?;
                let mut x = Vec::with_capacity(raw.examples.len() * width);
                for e in &raw.examples {
                    let RawInput::Row(r) = &e.input else { return Err(NnError::invalid(&e.origin, "input", "not a row", "tabular data needs CSV rows")) };
                    for (c, col) in columns.iter().enumerate() {
                        let v = r.get(c).map(String::as_str).unwrap_or("");
                        match col {
                            Column::Numeric { name, mean, std } => {
                                let val = if is_missing(v) {
                                    rep.imputed += 1;
                                    *mean
                                } else {
                                    parse_number(v).ok_or_else(|| {
                                        NnError::from(DataError::new(
                                            Location::Line(e.origin.line()),
                                            format!("column {name:?}: {} {}, and the column is numeric{}{}", quoted(v), not_a_number(v), missing_marker_hint(v), header_hint(raw, e.origin.line())),
                                        ).with_path(&raw.path))
                                    })?
                                };
                                let z = ((val - mean) / std) as f32;
                                if !z.is_finite() {
                                    return Err(DataError::new(
                                        Location::Line(e.origin.line()),
                                        format!("column {name:?}: {} is out of range: standardised with the training mean {mean:.6e} and standard deviation {std:.6e} it is beyond ±3.4e38, the largest float32", quoted(v)),
                                    )
                                    .with_path(&raw.path)
                                    .into());
                                }
                                if (z.abs() as f64) > FAR_FROM_TRAINING {
                                    rep.far_values += 1;
                                    if rep.first_far.is_none() {
                                        rep.first_far = Some((name.clone(), v.trim().to_string(), z.abs() as f64));
                                    }
                                }
                                x.push(z);
                            }
                            Column::Categorical { name, categories } => {
                                let missing = is_missing(v);
                                let key = if missing { MISSING } else { v.trim() };
                                let hit = categories.iter().position(|c| c == key);
                                match (missing, hit) {
                                    (true, Some(_)) => rep.missing_categories += 1,
                                    (true, None) => rep.missing_unseen += 1,
                                    (false, None) => {
                                        rep.unseen_categories += 1;
                                        rep.first_unseen.get_or_insert_with(|| (name.clone(), key.to_string(), categories.iter().find(|c| c.to_lowercase() == key.to_lowercase()).cloned()));
                                    }
                                    (false, Some(_)) => {}
                                }
                                x.extend((0..categories.len()).map(|j| if Some(j) == hit { 1.0 } else { 0.0 }));
                            }
                        }
                    }
                }
                Ok(Inputs::Dense { x, shape: vec![width] })
            }
            Encoder::Array { shape, mean, std } => {
                if raw.shape != *shape {
                    return Err(DataError::whole(format!("examples of shape {:?}, but the model was trained on {shape:?}", raw.shape)).with_path(&raw.path).into());
                }
                let mut x = Vec::with_capacity(raw.examples.len() * shape.iter().product::<usize>());
                for e in &raw.examples {
                    if let RawInput::Values(v) = &e.input {
                        for (j, val) in v.iter().enumerate() {
                            let c = if mean.len() == 1 { 0 } else { j };
                            x.push((val - mean[c]) / std[c]);
                        }
                    }
                }
                Ok(Inputs::Dense { x, shape: shape.clone() })
            }
        }
    }
}

impl Replaced {
    fn report(&self, what: &str, warnings: &mut Vec<String>) {
        if let Some((column, value, z)) = &self.first_far {
            warnings.push(format!(
                "{what}: {} numeric value(s) lie more than {FAR_FROM_TRAINING} training standard deviations from the training mean (the first: column {column:?}, {}, {z:.0} away): the model saw nothing like them, and its outputs there are extrapolation",
                self.far_values,
                quoted(value)
            ));
        }
        if self.imputed > 0 {
            warnings.push(format!("{what}: {} missing numeric values replaced by the training mean", self.imputed));
        }
        if self.missing_categories > 0 {
            warnings.push(format!("{what}: {} missing categorical values encoded as the {MISSING} category", self.missing_categories));
        }
        if self.missing_unseen > 0 {
            warnings.push(format!("{what}: {} missing categorical values in columns that had none in training (encoded as all zeros)", self.missing_unseen));
        }
        if self.unseen_categories > 0 {
            let first = self.first_unseen.as_ref().map_or(String::new(), |(c, v, case)| {
                let case = case.as_ref().map_or(String::new(), |k| format!(", where training has {} (categories are compared as written)", quoted(k)));
                format!("; the first: {} in column {c:?}{case}", quoted(v))
            });
            let n = self.unseen_categories;
            warnings.push(format!("{what}: {n} categorical value{} not seen in training (encoded as all zeros){first}", if n == 1 { "" } else { "s" }));
        }
        if self.empty_texts > 0 {
            warnings.push(format!("{what}: {} texts have no tokens (encoded as one <unk>)", self.empty_texts));
        }
        if self.cut_texts > 0 {
            let (n, max) = (self.cut_texts, self.max_len);
            let first = self.first_cut.as_deref().unwrap_or("?");
            warnings.push(if n == 1 {
                format!("{what}: 1 text ({first}) is longer than the {max} tokens the model reads; only its first {max} tokens are read (train with --max-len to read more)")
            } else {
                format!("{what}: {n} texts (the first {first}) are longer than the {max} tokens the model reads; only the first {max} tokens of each are read (train with --max-len to read more)")
            });
        }
    }
}

// ------------------------------------------------------------------------------- the schema

/// What [`DataSchema::encode_texts`] gives: the token ids, each text's tokens, and whether each
/// text was cut at the tokenizer's `max_len`.
pub type EncodedTexts = (Inputs, Vec<Vec<String>>, Vec<bool>);

impl DataSchema {
    /// Checks a schema read from outside (a run's `data.json`, a model file's metadata) before
    /// anything is sized from it: the class names agree with the task, every size is within
    /// [`crate::limits::max_tensor_elements`], the array statistics have one value or one per
    /// feature, and every mean is finite and every standard deviation finite and positive. The
    /// message names the field.
    pub fn validate(&self) -> Result<(), NnError> {
        let bad = |field: &str, value: String, reason: &str| Err(NnError::invalid("data schema", field, value, reason));
        match self.task {
            Task::Classification { classes } if classes == 0 || classes != self.classes.len() => {
                return bad("task.Classification.classes", classes.to_string(), &format!("must be the number of class names, {}", self.classes.len()));
            }
            Task::Binary if !(self.classes.is_empty() || self.classes.len() == 2) => {
                return bad("classes", format!("{} names", self.classes.len()), "a binary task has two classes");
            }
            _ => {}
        }
        crate::limits::check_elements("data schema: classes", &[self.classes.len()])?;
        let mut seen = std::collections::HashSet::new();
        if let Some(dup) = self.classes.iter().find(|c| !seen.insert(c.as_str())) {
            return bad("classes", quoted(dup), "names two classes; class names must differ");
        }
        if !self.display_names.is_empty() && self.display_names.len() != self.classes.len() {
            return bad("display_names", format!("{} names", self.display_names.len()), &format!("must name each of the {} classes", self.classes.len()));
        }
        if let Some((mean, sd)) = self.target_scale {
            if !mean.is_finite() || !(sd.is_finite() && sd > 0.0) {
                return bad("target_scale", format!("({mean}, {sd})"), "needs a finite mean and a finite positive standard deviation");
            }
        }
        match &self.encoder {
            Encoder::Tabular { columns } => {
                if columns.is_empty() {
                    return bad("encoder.columns", "[]".into(), "a tabular schema needs at least one feature column");
                }
                let mut width = 0usize;
                for c in columns {
                    match c {
                        Column::Numeric { name, mean, std } => {
                            if !mean.is_finite() || !(std.is_finite() && *std > 0.0) {
                                return bad(&format!("encoder.columns[{}]", quoted(name)), format!("mean {mean}, std {std}"), "needs a finite mean and a finite positive standard deviation");
                            }
                        }
                        Column::Categorical { name, categories } if categories.is_empty() => {
                            return bad(&format!("encoder.columns[{}]", quoted(name)), "no categories".into(), "a categorical column needs at least one category");
                        }
                        Column::Categorical { .. } => {}
                    }
                    width = width.saturating_add(c.width());
                }
                crate::limits::check_elements("data schema: encoded features", &[width])?;
            }
            Encoder::Text { vocab, .. } => {
                crate::limits::check_elements("data schema: vocabulary", &[vocab.len()])?;
            }
            Encoder::Array { shape, mean, std } => {
                if shape.is_empty() || shape.contains(&0) {
                    return bad("encoder.shape", format!("{shape:?}"), "an example needs at least one value");
                }
                let n = crate::limits::check_elements("data schema: encoder.shape", shape)?;
                if !(mean.len() == 1 || mean.len() == n) || std.len() != mean.len() {
                    return bad(
                        "encoder.mean / encoder.std",
                        format!("{} / {} values", mean.len(), std.len()),
                        &format!("need one value, or one per feature ({n}), each"),
                    );
                }
                if !mean.iter().all(|m| m.is_finite()) || !std.iter().all(|s| s.is_finite() && *s > 0.0) {
                    return bad("encoder.mean / encoder.std", "a non-finite or non-positive value".into(), "means must be finite, standard deviations finite and positive");
                }
            }
        }
        Ok(())
    }

    /// The targets of raw labelled examples: class ids (classification; a label not seen in
    /// training is an error naming the example) or values (regression). Labels matched to a
    /// class by value rather than as written are counted in a note.
    fn targets(&self, raw: &RawSet, notes: &mut Vec<String>) -> Result<Targets, NnError> {
        match self.task {
            Task::Regression => {
                let (mean, sd) = self.target_scale.unwrap_or((0.0, 1.0));
                let mut v = Vec::with_capacity(raw.examples.len());
                for e in &raw.examples {
                    let l = e.label.as_deref().unwrap_or("");
                    let y = parse_number(l).ok_or_else(|| {
                        NnError::invalid(&e.origin, "target", quoted(l), format!("{}, but the task is regression{}", not_a_number(l), header_hint(raw, e.origin.line())))
                    })?;
                    let z = ((y - mean) / sd) as f32;
                    if !z.is_finite() {
                        return Err(NnError::invalid(
                            &e.origin,
                            "target",
                            quoted(l),
                            format!("is out of range: scaled by the training targets (mean {mean:.6e}, standard deviation {sd:.6e}) it is beyond ±3.4e38, the largest float32"),
                        ));
                    }
                    v.push(z);
                }
                Ok(Targets::Values(v))
            }
            _ => {
                let index: HashMap<&str, usize> = self.classes.iter().enumerate().map(|(i, c)| (c.as_str(), i)).collect();
                // A label spelled as no class is, matched by value when exactly one class has
                // that value (a file written as `1.0` where training wrote `1`; and schemas
                // saved when numeric labels were stored by value).
                let by_value = |l: &str| -> Option<usize> {
                    let x = parse_number(l)?;
                    let mut hits = self.classes.iter().enumerate().filter(|(_, c)| parse_number(c) == Some(x)).map(|(i, _)| i);
                    let first = hits.next()?;
                    hits.next().is_none().then_some(first)
                };
                let mut v = Vec::with_capacity(raw.examples.len());
                let mut valued: Vec<(String, &str)> = Vec::new();
                for e in &raw.examples {
                    let l = e.label.as_deref().unwrap_or("");
                    let key = class_key(l);
                    let exact = index.get(key.as_str()).copied();
                    let hit = exact.or_else(|| by_value(&key));
                    if let (None, Some(c)) = (exact, hit) {
                        valued.push((key.clone(), self.classes[c].as_str()));
                    }
                    v.push(hit.ok_or_else(|| {
                        let same: Vec<String> = parse_number(&key).map_or_else(Vec::new, |x| self.classes.iter().filter(|c| parse_number(c) == Some(x)).cloned().collect());
                        if same.len() > 1 {
                            return NnError::invalid(&e.origin, "label", quoted(l), format!("has the value of the classes {}, which training kept apart as written: spell it as one of them", short_list(&same)));
                        }
                        if l.trim().is_empty() {
                            return NnError::invalid(&e.origin, "label", quoted(l), format!("is empty: every row evaluated needs its label (the classes are {}); predict unlabelled rows with chi predict", short_list(&self.classes)));
                        }
                        NnError::invalid(&e.origin, "label", quoted(l), format!("was not seen in training (the classes are {}){}", short_list(&self.classes), header_hint(raw, e.origin.line())))
                    })?);
                }
                if let Some((label, class)) = valued.first() {
                    // Training keeps labels as written ("1" and "1.0" are two classes there):
                    // a match by value is said, so a different spelling is not taken silently.
                    notes.push(format!(
                        "{}: {} label{} matched a class by value, not as written ({} is read as class {}{})",
                        raw.path.display(),
                        valued.len(),
                        if valued.len() == 1 { "" } else { "s" },
                        quoted(label),
                        quoted(class),
                        if valued.len() > 1 { ", …" } else { "" }
                    ));
                }
                Ok(Targets::Classes(v))
            }
        }
    }

    fn read_raw(&self, path: &Path, labels: Option<&Path>, labelled: bool) -> Result<RawSet, NnError> {
        // A new CSV may be comma- or tab-separated whatever the training file was: its name decides.
        let sep = match Format::infer(path) {
            Ok(f @ (Format::Csv | Format::Tsv)) => f.separator(),
            _ => self.format.separator(),
        };
        match (self.format, &self.encoder) {
            (Format::Csv | Format::Tsv, Encoder::Text { text_column, .. }) if !path.is_dir() => {
                let Some(tc) = text_column.clone() else { return read_lines(path, false) };
                let lay = schema_layout(self, sep, Some(tc.clone()), Vec::new());
                match Format::infer(path) {
                    Ok(Format::Lines) if labelled => Err(DataError::whole(format!(
                        "holds no labels: a plain text file is one text per line; evaluate on a CSV with the columns {} and {}",
                        quoted(&tc),
                        quoted(self.target.as_deref().unwrap_or("label"))
                    ))
                    .with_path(path)
                    .into()),
                    Ok(Format::Lines) => read_text_lines(path),
                    Ok(_) => read_csv(path, &lay, labelled),
                    // A name that says nothing (standard input, no extension), read once: CSV
                    // when its first line names the text column, else one text per line.
                    Err(_) => {
                        let (text, lossy) = read_text(path)?;
                        if labelled || first_line_names(&text, sep, &tc) {
                            csv_of_text(path, &text, lossy, &lay, labelled)
                        } else {
                            Ok(text_lines_of(path, &text, lossy))
                        }
                    }
                }
            }
            (Format::Csv | Format::Tsv, Encoder::Tabular { columns }) => {
                read_csv(path, &schema_layout(self, sep, None, columns.iter().map(|c| c.name().to_string()).collect()), labelled)
            }
            (_, Encoder::Text { .. }) if path.is_dir() => {
                if labelled {
                    read_class_folder(path)
                } else {
                    let mut out = RawSet { path: path.to_path_buf(), ..Default::default() };
                    for f in files_under(path)? {
                        let (text, lossy) = read_text(&f)?;
                        out.lossy += lossy as usize;
                        let id = f.strip_prefix(path).unwrap_or(&f).display().to_string();
                        out.examples.push(RawExample { origin: Origin::Named(id), input: RawInput::Text(text), label: None });
                    }
                    if out.examples.is_empty() {
                        return Err(DataError::whole("holds no files").with_path(path).into());
                    }
                    Ok(out)
                }
            }
            (Format::Folder, Encoder::Text { .. }) => match Format::infer(path) {
                Ok(f @ (Format::Csv | Format::Tsv)) => {
                    // Read and parsed once, for the layout and for the rows.
                    let (recs, lossy) = csv_records(path, f.separator())?;
                    let lay = text_csv_layout(path, &recs, f, labelled, &self.classes)?;
                    csv_of_records(path, recs, lossy, &lay, labelled)
                }
                _ if labelled => Err(DataError::whole(
                    "holds no labels: the model was trained on a folder of class folders, so evaluate it on such a folder (DIR/CLASS/file.txt) or on a CSV with a text and a label column",
                )
                .with_path(path)
                .into()),
                _ => read_text_lines(path),
            },
            (Format::Lines, _) if !labelled => {
                let mut raw = read_lines(path, false)?;
                strip_class_fields(&mut raw, &self.classes);
                Ok(raw)
            }
            (Format::Lines, _) => read_lines(path, labelled),
            (Format::Npy | Format::Idx, _) => {
                let fmt = Format::infer(path).ok().filter(|f| matches!(f, Format::Npy | Format::Idx)).unwrap_or(self.format);
                read_arrays(path, fmt, labels)
            }
            (f, _) => Err(NnError::invalid("data", "format", f.name(), "does not match the model's inputs")),
        }
    }

    /// The inputs of a file read by [`DataSchema::read_raw`], and what was replaced on the way.
    fn encode_read(&self, raw: &RawSet, path: &Path) -> Result<(Inputs, Vec<String>), NnError> {
        if raw.examples.is_empty() {
            return Err(DataError::whole("holds no examples").with_path(path).into());
        }
        let mut rep = Replaced::default();
        let inputs = self.encoder.encode(raw, &mut rep)?;
        let mut warnings = Vec::new();
        if raw.lossy > 0 {
            warnings.push(format!("{}: {} file{} not valid UTF-8 and {} read lossily", path.display(), raw.lossy, if raw.lossy == 1 { " was" } else { "s were" }, if raw.lossy == 1 { "was" } else { "were" }));
        }
        warnings.extend(raw.notes.iter().cloned());
        rep.report(&path.display().to_string(), &mut warnings);
        warnings.extend(self.header_like_first_row(raw));
        Ok((inputs, warnings))
    }

    /// A note when the model was trained on a file without a header and line 1 of `raw` reads
    /// like one: every value a category training never saw. (A header over numeric columns is
    /// already an error, as its names are not numbers; over categorical ones it would be
    /// predicted as a row.)
    fn header_like_first_row(&self, raw: &RawSet) -> Option<String> {
        let (Some(_), Encoder::Tabular { columns }) = (&self.headerless_columns, &self.encoder) else { return None };
        let first = raw.examples.first().filter(|e| e.origin.line() == 1)?;
        let RawInput::Row(r) = &first.input else { return None };
        let mut values = Vec::new();
        for (c, col) in columns.iter().enumerate() {
            let v = r.get(c).map(|v| v.trim()).unwrap_or("");
            match col {
                Column::Categorical { categories, .. } if !is_missing(v) && !categories.iter().any(|k| k == v) => values.push(v),
                _ => return None,
            }
        }
        (!values.is_empty()).then(|| {
            format!(
                "{}: line 1 ({}) is read as data, but none of its values was seen in training: if it is a header, remove it (the model was trained on a file without one)",
                raw.path.display(),
                values.join(", ")
            )
        })
    }

    /// A labelled file (or folder) encoded as training did: a split for `chi eval`. `labels`
    /// is the label file of array formats (`.npy`, IDX).
    pub fn encode_labelled(&self, path: &Path, labels: Option<&Path>) -> Result<(Split, Vec<String>), NnError> {
        let arrays = matches!(self.format, Format::Npy | Format::Idx);
        match labels {
            None if arrays => return Err(NnError::invalid("data", "target", "none", "array inputs need their label file (--target LABELS)")),
            Some(l) if !arrays => {
                return Err(NnError::invalid(
                    "data",
                    "target",
                    clipped(&l.display().to_string()),
                    format!("--target is the label file of array inputs; the model was trained on {} data ({}), whose labels are in the data itself: leave it out", self.kind.name(), self.format.name()),
                ))
            }
            _ => {}
        }
        let raw = self.read_raw(path, labels, true)?;
        let (inputs, mut warnings) = self.encode_read(&raw, path)?;
        let targets = self.targets(&raw, &mut warnings)?;
        Ok((Split { inputs, targets }, warnings))
    }

    /// Unlabelled inputs encoded as training did, for `chi predict`: the inputs, one id per
    /// example (`file:line`, a file's path, or `example N`), and warnings.
    pub fn encode_unlabelled(&self, path: &Path) -> Result<(Inputs, Vec<String>, Vec<String>), NnError> {
        let raw = self.read_raw(path, None, false)?;
        let (inputs, warnings) = self.encode_read(&raw, path)?;
        let ids = raw.examples.iter().map(|e| e.origin.to_string()).collect();
        Ok((inputs, ids, warnings))
    }

    /// The texts of a file (or folder) as a text model reads them, before tokenizing: a CSV's
    /// text column, a text file's lines, a folder's files. With one id per text (`file:line`,
    /// a file's path), as [`DataSchema::encode_unlabelled`] names its rows.
    pub fn read_texts(&self, path: &Path) -> Result<(Vec<String>, Vec<String>), NnError> {
        if !matches!(self.encoder, Encoder::Text { .. }) {
            return Err(NnError::invalid("data", "input", "text", format!("the model was trained on {} data, not text", self.kind.name())));
        }
        let raw = self.read_raw(path, None, false)?;
        let mut texts = Vec::with_capacity(raw.examples.len());
        let mut ids = Vec::with_capacity(raw.examples.len());
        for e in raw.examples {
            texts.push(match e.input {
                RawInput::Text(t) => t,
                RawInput::Tokens(t) => t,
                RawInput::Row(_) | RawInput::Values(_) => return Err(NnError::invalid(&e.origin, "input", "not text", "a text model reads texts")),
            });
            ids.push(e.origin.to_string());
        }
        Ok((texts, ids))
    }

    /// Texts given as strings (a text schema only): the token ids of each, its tokens as the
    /// tokenizer split them (before the vocabulary mapped unknown ones to `<unk>`), and whether
    /// it had more tokens than the tokenizer's `max_len`, past which the model reads nothing.
    pub fn encode_texts(&self, texts: &[&str]) -> Result<EncodedTexts, NnError> {
        let Encoder::Text { tokenizer, vocab, .. } = &self.encoder else {
            return Err(NnError::invalid("data", "input", "text", format!("the model was trained on {} data, not text", self.kind.name())));
        };
        let mut seqs = Vec::with_capacity(texts.len());
        let mut words = Vec::with_capacity(texts.len());
        let mut cut = Vec::with_capacity(texts.len());
        for t in texts {
            let mut toks: Vec<String> = if self.format == Format::Lines { t.split_whitespace().take(tokenizer.max_len).map(String::from).collect() } else { tokenizer.tokenize(t) };
            // Only a text that filled the limit can have been cut: look one token further.
            cut.push(
                toks.len() == tokenizer.max_len
                    && if self.format == Format::Lines { t.split_whitespace().nth(tokenizer.max_len).is_some() } else { tokenizer.cuts(t) },
            );
            if toks.is_empty() {
                toks.push(text::UNK.to_string());
            }
            seqs.push(vocab.encode(&toks));
            words.push(toks);
        }
        Ok((Inputs::Tokens { seqs, vocab: vocab.len() }, words, cut))
    }

    /// A dataset with empty splits of this schema's input kind and task: what a model builder
    /// needs to rebuild a trained model without the training data.
    pub fn empty_dataset(&self, name: &str) -> Dataset {
        let inputs = match &self.encoder {
            Encoder::Text { vocab, .. } => Inputs::Tokens { seqs: Vec::new(), vocab: vocab.len() },
            Encoder::Tabular { columns } => Inputs::Dense { x: Vec::new(), shape: vec![columns.iter().map(Column::width).sum()] },
            Encoder::Array { shape, .. } => Inputs::Dense { x: Vec::new(), shape: shape.clone() },
        };
        let targets = if self.task == Task::Regression { Targets::Values(Vec::new()) } else { Targets::Classes(Vec::new()) };
        let split = Split { inputs, targets };
        Dataset { name: name.into(), task: self.task, train: split.clone(), valid: None, test: split, schema: Some(Box::new(self.clone())) }
    }

    /// A regression output (or standardised target) in the target's own units.
    pub fn unscale(&self, z: f64) -> f64 {
        self.target_scale.map_or(z, |(mean, sd)| z * sd + mean)
    }

    /// The name shown for class `i`.
    pub fn class_name(&self, i: usize) -> &str {
        self.display_names.get(i).or_else(|| self.classes.get(i)).map_or("?", String::as_str)
    }

    /// The names shown for all classes.
    pub fn class_names(&self) -> Vec<String> {
        (0..self.classes.len()).map(|i| self.class_name(i).to_string()).collect()
    }

    /// The vocabulary of a text schema.
    pub fn vocab(&self) -> Option<&Vocab> {
        match &self.encoder {
            Encoder::Text { vocab, .. } => Some(vocab),
            _ => None,
        }
    }
}

/// A comma-separated list of names for a message: each too long to write whole cut as
/// [`clipped`] cuts it, and only the first ten of more than twelve, with the count.
pub fn short_list(v: &[String]) -> String {
    // A name that would read as two in the list (`pos, really`), or is blank, is quoted.
    let name = |s: &String| if s.contains(',') || s.trim().is_empty() || s.trim() != s { quoted(s) } else { clipped(s) };
    let names = |v: &[String]| v.iter().map(name).collect::<Vec<_>>().join(", ");
    if v.len() <= 12 {
        names(v)
    } else {
        format!("{}, … ({} in all)", names(&v[..10]), v.len())
    }
}

/// Longest value quoted whole in a message; longer ones are cut to [`CLIP_KEEP`] characters.
const CLIP_AT: usize = 80;
const CLIP_KEEP: usize = 60;

/// The start of `s` and its length in characters when it is too long to write whole in a
/// message. Values come from the user's files and may be megabytes long.
fn cut(s: &str) -> Option<(String, usize)> {
    let n = s.chars().count();
    (n > CLIP_AT).then(|| (s.chars().take(CLIP_KEEP).collect(), n))
}

/// `s` as written in a message: whole, or, when longer than 80 characters, its first 60 and its
/// length. Names and values come from the user's files and may be megabytes long.
pub fn clipped(s: &str) -> String {
    cut(s).map_or_else(|| s.to_string(), |(head, n)| format!("{head}… ({n} characters)"))
}

/// `s` quoted (`{:?}`), cut as [`clipped`] cuts it.
fn quoted(s: &str) -> String {
    cut(s).map_or_else(|| format!("{s:?}"), |(head, n)| format!("{head:?}… ({n} characters)"))
}

// ------------------------------------------------------------------------------- load

/// The kind of input the file dataset of `cfg.path` holds, as [`load`] would decide it (text
/// for a folder, token lines or a CSV whose text column is found), without encoding it: what a
/// caller needs to choose a model before loading.
pub fn input_kind(cfg: &DataConfig) -> Result<DataKind, NnError> {
    let Some(path) = cfg.path.as_deref() else {
        return Err(NnError::invalid("data", "path", "none", "a file dataset needs a path (--data FILE or [data] path)"));
    };
    let path = Path::new(path);
    if !path.exists() {
        return Err(not_found(path));
    }
    let format = match FileOptions::from_config(cfg)?.format {
        Some(f) => f,
        None => Format::infer(path)?,
    };
    Ok(match format {
        Format::Folder | Format::Lines => DataKind::Text,
        Format::Csv | Format::Tsv if csv_head_layout(path, format, cfg)?.text.is_some() => DataKind::Text,
        Format::Csv | Format::Tsv => DataKind::Tabular,
        Format::Npy | Format::Idx => DataKind::Images,
    })
}

/// Refuses the options of one format given with data of another (`--features` for a folder of
/// texts, `--target` for token lines): ignoring them would train on something other than what
/// the user asked for without a word.
fn check_options_fit(cfg: &DataConfig, format: Format) -> Result<(), NnError> {
    let csv = matches!(format, Format::Csv | Format::Tsv);
    let arrays = matches!(format, Format::Npy | Format::Idx);
    let data = match format {
        Format::Folder => "a folder of texts (its classes are its sub-folders)",
        Format::Lines => "token lines (each line's first token is its label)",
        Format::Npy | Format::Idx => "array data",
        Format::Csv | Format::Tsv => "CSV data",
    };
    let refuse = |key: &str, value: String, what: &str| Err(NnError::invalid("data", key, value, format!("{what}, and the data is {data}: leave it out")));
    if !csv {
        if let Some(f) = &cfg.features {
            return refuse("features", clipped(&f.join(",")), "--features names CSV columns");
        }
        if let Some(t) = &cfg.text_column {
            return refuse("text_column", clipped(t), "--text-column names a CSV column");
        }
        if let Some(h) = cfg.header {
            return refuse("header", h.to_string(), "--header says whether a CSV file has a header row");
        }
        if let (false, Some(t)) = (arrays, &cfg.target) {
            return refuse("target", clipped(t), "--target names a CSV column or the label file of arrays");
        }
    }
    if !arrays {
        for (key, file) in [("valid_target", &cfg.valid_target), ("test_target", &cfg.test_target)] {
            if let Some(t) = file {
                return refuse(key, clipped(t), "names the label file of held-out arrays");
            }
        }
    }
    Ok(())
}

/// The folders of the `train/` + `test/` (+ `valid/`) layout.
const SPLIT_FOLDERS: [&str; 3] = ["train", "test", "valid"];

/// A note naming the folders beside `train/` and `test/` in `dir`, which that layout does not
/// read: class folders put beside them would otherwise be dropped without a word.
fn left_out_of_split_layout(dir: &Path) -> Result<Option<String>, NnError> {
    let left: Vec<String> = subdirs(dir)?
        .iter()
        .filter_map(|d| d.file_name().map(|n| n.to_string_lossy().to_string()))
        .filter(|n| !SPLIT_FOLDERS.contains(&n.as_str()))
        .map(|n| format!("{n}/"))
        .collect();
    Ok((!left.is_empty()).then(|| {
        let (are, them) = if left.len() == 1 { ("is", "it") } else { ("are", "them") };
        format!(
            "{}: {} beside train/ and test/ {are} not read: with train/ and test/, only train/, test/ and valid/ are read, each holding the class folders; move {them} into train/ and test/ as class folders, or out of {}",
            dir.display(),
            short_list(&left),
            dir.display()
        )
    }))
}

/// A note naming class folders of `dir` named train, test or valid: the split layout was not
/// recognised (it needs both `train/` and `test/`), so such a folder's texts became a class.
fn split_names_as_classes(dir: &Path) -> Result<Option<String>, NnError> {
    let named: Vec<String> = subdirs(dir)?
        .iter()
        .filter_map(|d| d.file_name().map(|n| n.to_string_lossy().to_string()))
        .filter(|n| SPLIT_FOLDERS.iter().any(|s| n.eq_ignore_ascii_case(s)))
        .collect();
    if named.is_empty() {
        return Ok(None);
    }
    let missing: Vec<String> = ["train", "test"].iter().filter(|s| !dir.join(s).is_dir()).map(|s| format!("{s}/")).collect();
    let (folders, is) = if named.len() == 1 { ("folder", "is read as a class folder") } else { ("folders", "are read as class folders") };
    Ok(Some(format!(
        "{}: the {folders} {} {is}, as the train/test layout needs both train/ and test/ (lower case; valid/ is optional), each holding the class folders, and here {} {}; add {} beside it, or rename {} if {}",
        dir.display(),
        short_list(&named),
        missing.join(" and "),
        if missing.len() == 1 { "is missing" } else { "are missing" },
        missing.join(" and "),
        if named.len() == 1 { "the folder" } else { "the folders" },
        if named.len() == 1 { "it is a class" } else { "they are classes" }
    )))
}

/// Loads the file dataset of `cfg.path` (see the module docs). `rng` seeds the split.
pub fn load(name: &str, cfg: &DataConfig, rng: &mut Rng) -> Result<Loaded, NnError> {
    let Some(path) = cfg.path.as_deref() else {
        return Err(NnError::invalid("data", "path", "none", "a file dataset needs a path (--data FILE or [data] path)"));
    };
    let path = PathBuf::from(path);
    if !path.exists() {
        return Err(not_found(&path));
    }
    let o = FileOptions::from_config(cfg)?;
    let format = match o.format {
        Some(f) => f,
        None => Format::infer(&path)?,
    };
    let arrays = matches!(format, Format::Npy | Format::Idx);
    check_options_fit(cfg, format)?;
    // The training CSV is parsed once, for its layout and then for its rows.
    let (layout, mut parsed) = match format {
        Format::Csv | Format::Tsv => {
            let (recs, lossy) = csv_records(&path, format.separator())?;
            (Some(csv_layout_of(&path, &recs, format, cfg)?), Some((recs, lossy)))
        }
        _ => (None, None),
    };
    // One labelled source; array inputs take their labels from a second file.
    let explicit = o.format.is_some();
    let read = |p: &Path, labels: Option<&Path>| -> Result<RawSet, NnError> {
        match format {
            Format::Csv | Format::Tsv => {
                let lay = layout.as_ref().expect("a CSV layout");
                // A held-out file is read by its own extension (`.csv` or `.tsv`), as `chi eval`
                // reads new files, unless the format was given.
                match Format::infer(p) {
                    Ok(f @ (Format::Csv | Format::Tsv)) if !explicit && f.separator() != lay.sep => read_csv(p, &CsvLayout { sep: f.separator(), ..lay.clone() }, true),
                    _ => read_csv(p, lay, true),
                }
            }
            Format::Folder => read_class_folder(p),
            Format::Lines => read_lines(p, true),
            Format::Npy | Format::Idx => read_arrays(p, format, labels),
        }
    };
    let label_file = |key: &str, file: &Option<String>| -> Result<Option<PathBuf>, NnError> {
        match file {
            _ if !arrays => Ok(None),
            Some(f) => Ok(Some(PathBuf::from(f))),
            None => Err(NnError::invalid("data", key, "none", "array inputs need a label file: --target LABELS.npy (or the IDX labels file)")),
        }
    };
    let mut given: [Option<RawSet>; 3] = [None, None, None];
    if format == Format::Folder && ["train", "test"].iter().all(|s| path.join(s).is_dir()) {
        let mut train = read(&path.join("train"), None)?;
        train.notes.extend(left_out_of_split_layout(&path)?);
        given[0] = Some(train);
        given[2] = Some(read(&path.join("test"), None)?);
        if path.join("valid").is_dir() {
            given[1] = Some(read(&path.join("valid"), None)?);
        }
    } else {
        let mut raw = match parsed.take() {
            Some((recs, lossy)) => csv_of_records(&path, recs, lossy, layout.as_ref().expect("a CSV layout"), true)?,
            None => read(&path, label_file("target", &cfg.target)?.as_deref())?,
        };
        if format == Format::Folder {
            raw.notes.extend(split_names_as_classes(&path)?);
        }
        if format == Format::Lines && !explicit && lines_look_like_csv(&raw) {
            return Err(DataError::whole(
                "is read as token lines (label, then tokens) by its name, but every line's first token holds a comma, as CSV rows do: give --format csv; for token lines, give --format lines",
            )
            .with_path(&path)
            .into());
        }
        given[0] = Some(raw);
    }
    // A held-out file that is the training file (or the other held-out file) would measure the
    // model on examples it was fitted or selected on: refused, however the path is spelled.
    let same = crate::checkpoint::same_file;
    for (file, flag) in [(&cfg.valid_path, "valid"), (&cfg.test_path, "test")] {
        if let Some(f) = file {
            if same(Path::new(f), &path) {
                return Err(NnError::invalid("data", flag, f, "is the training data: held-out examples must not be training examples; give another file, or leave it out for a split of the training file"));
            }
        }
    }
    if let (Some(v), Some(t)) = (&cfg.valid_path, &cfg.test_path) {
        if same(Path::new(v), Path::new(t)) {
            return Err(NnError::invalid("data", "test", t, "is the validation file too: the test examples would have chosen the model (early stopping, the best checkpoint); give two different files"));
        }
    }
    for (slot, file, labels, key) in [(1, &cfg.valid_path, &cfg.valid_target, "valid_target"), (2, &cfg.test_path, &cfg.test_target, "test_target")] {
        if let Some(f) = file {
            if format == Format::Folder && Path::new(f).is_file() {
                let flag = if slot == 1 { "valid" } else { "test" };
                return Err(NnError::invalid(
                    "data",
                    flag,
                    f,
                    "is a file, but the training data is a folder of class folders, so held-out data must be one too (DIR/CLASS/file.txt …); to score a CSV of texts, train, then give it to chi eval",
                ));
            }
            given[slot] = Some(read(Path::new(f), label_file(key, labels)?.as_deref())?);
        }
    }
    let train_raw = given[0].take().expect("training source");
    let [_, valid, test] = given;
    let mut loaded = finish(name, cfg, o, format, layout, train_raw, [valid, test], rng)?;
    // The text options shape a vocabulary and token sequences; other data has neither.
    let text_options: Vec<&str> = [("max_vocab", cfg.max_vocab.is_some()), ("min_count", cfg.min_count.is_some()), ("max_len", cfg.max_len.is_some()), ("lowercase", cfg.lowercase.is_some())]
        .into_iter()
        .filter_map(|(k, given)| given.then_some(k))
        .collect();
    if loaded.schema.kind != DataKind::Text && !text_options.is_empty() {
        let kind = if loaded.schema.kind == DataKind::Images { "images" } else { "tabular data" };
        loaded.warnings.push(format!("{}: the text options {} (--max-vocab, --min-count, --max-len, lowercase) do nothing for {kind}; ignored", path.display(), text_options.join(", ")));
    }
    Ok(loaded)
}

/// An in-memory labelled image set as a dataset: a stratified train / validation / test split
/// by `cfg.split` (default 80/10/10) or, when `test` is given, train / validation from `train`.
/// Classes are the label numbers; `names` (if any) are their display names.
pub fn from_image_sets(name: &str, train: &crate::data::ImageSet, test: Option<&crate::data::ImageSet>, names: Option<&[&str]>, cfg: &DataConfig, rng: &mut Rng) -> Result<Loaded, NnError> {
    let raw = |s: &crate::data::ImageSet, what: &str| RawSet {
        path: PathBuf::from(what),
        shape: vec![1, s.rows, s.cols],
        examples: (0..s.n)
            .map(|i| RawExample { origin: Origin::Named(format!("{what} example {i}")), input: RawInput::Values(s.image(i).to_vec()), label: Some(s.labels[i].to_string()) })
            .collect(),
        ..Default::default()
    };
    let o = FileOptions::from_config(cfg)?;
    let test = test.map(|t| raw(t, &format!("{name} test")));
    let mut l = finish(name, cfg, o, Format::Idx, None, raw(train, &format!("{name} train")), [None, test], rng)?;
    if let Some(n) = names {
        if n.len() == l.schema.classes.len() {
            l.schema.display_names = n.iter().map(|s| s.to_string()).collect();
            l.dataset.schema = Some(Box::new(l.schema.clone()));
        }
    }
    Ok(l)
}

/// Fewer training examples than this make a class worth a warning: too few to learn from, and
/// in a file of many rows usually a typo in one label.
const FEW_EXAMPLES: usize = 3;

/// Notes naming the classes a classifier can barely learn or is not scored on: those with
/// fewer than [`FEW_EXAMPLES`] examples in the training split (with where the first is), and
/// those with no example in the test split, whose precision and recall would be 0 and mean
/// nothing.
fn rare_and_untested_classes(path: &Path, classes: &[String], train: &RawSet, test: &Split, test_given: bool) -> Vec<String> {
    // Entries already quoted: joined as they are, the first ten of more than twelve.
    let listed = |v: &[String]| if v.len() <= 12 { v.join(", ") } else { format!("{}, … ({} in all)", v[..10].join(", "), v.len()) };
    let mut count = vec![0usize; classes.len()];
    let mut first: Vec<Option<&Origin>> = vec![None; classes.len()];
    let index: HashMap<&str, usize> = classes.iter().enumerate().map(|(i, c)| (c.as_str(), i)).collect();
    for e in &train.examples {
        if let Some(&c) = e.label.as_deref().and_then(|l| index.get(class_key(l).as_str())) {
            count[c] += 1;
            first[c].get_or_insert(&e.origin);
        }
    }
    let mut out = Vec::new();
    let rare: Vec<String> = (0..classes.len())
        .filter(|&c| count[c] < FEW_EXAMPLES)
        .map(|c| match (count[c], first[c]) {
            (1, Some(o)) => format!("{} (1 example, {o})", quoted(&classes[c])),
            (n, _) => format!("{} ({n} examples)", quoted(&classes[c])),
        })
        .collect();
    if !rare.is_empty() {
        out.push(format!(
            "{}: {} with fewer than {FEW_EXAMPLES} training examples: {}; a typo in a label? a class this rare is hardly learned and hardly tested: fix the label, add examples, or remove them",
            path.display(),
            if rare.len() == 1 { "a class" } else { "classes" },
            listed(&rare)
        ));
    }
    let mut tested = vec![false; classes.len()];
    for i in 0..test.len() {
        if let Some(t) = tested.get_mut(test.targets.class(i)) {
            *t = true;
        }
    }
    let untested: Vec<String> = (0..classes.len()).filter(|&c| !tested[c]).map(|c| quoted(&classes[c])).collect();
    if !untested.is_empty() {
        out.push(format!(
            "{}: {} no example in the test split: {}; the test scores say nothing about {it}: add examples of {it}{}",
            path.display(),
            if untested.len() == 1 { "a class has" } else { "classes have" },
            listed(&untested),
            if test_given { " to the test data" } else { " (a class's test share is the test fraction of its examples, rounded), or give --test FILE" },
            it = if untested.len() == 1 { "it" } else { "them" },
        ));
    }
    out
}

/// Splits, decides the task, fits the encoder and encodes: the common end of every loader.
#[allow(clippy::too_many_arguments)]
fn finish(
    name: &str,
    cfg: &DataConfig,
    o: FileOptions,
    format: Format,
    layout: Option<CsvLayout>,
    mut train_raw: RawSet,
    given_vt: [Option<RawSet>; 2],
    rng: &mut Rng,
) -> Result<Loaded, NnError> {
    let mut warnings = Vec::new();
    let [v, t] = given_vt;
    let mut given: [Option<RawSet>; 3] = [None, v, t];
    let path = train_raw.path.clone();
    let n_all = train_raw.examples.len();
    if train_raw.examples.is_empty() {
        return Err(DataError::whole("holds no examples").with_path(&path).into());
    }
    // A held-out file the user named that holds nothing (a header only) would silently drop
    // validation, or be blamed on the training file's split.
    for (s, role) in [(1, "validation"), (2, "test")] {
        if let Some(g) = given[s].as_ref().filter(|g| g.examples.is_empty()) {
            return Err(DataError::whole(format!("holds no examples (the {role} file: a header only?)")).with_path(&g.path).into());
        }
    }
    warnings.extend(layout.iter().flat_map(|l| l.notes.iter().cloned()));
    for s in given.iter().flatten().chain(std::iter::once(&train_raw)) {
        if s.lossy > 0 {
            warnings.push(format!("{}: {} file(s) were not valid UTF-8 and were read lossily", s.path.display(), s.lossy));
        }
        warnings.extend(s.notes.iter().cloned());
    }
    // Split one source when validation / test files are not given.
    let fractions = match &cfg.split {
        Some(f) => check_fractions(f)?,
        None => DEFAULT_SPLIT,
    };
    let labels: Vec<String> = train_raw.examples.iter().map(|e| e.label.clone().unwrap_or_default()).collect();
    let task_hint = cfg.task.as_deref();
    if task_hint.is_none() && train_raw.examples.iter().all(|e| e.label.is_some()) {
        // Before the split, whose stratification would otherwise treat every number as a class.
        let all: Vec<&str> = labels.iter().map(String::as_str).collect();
        odd_value_in_numeric_target(&all, &|i| train_raw.examples[i].origin.to_string())?;
    }
    let keys: Vec<String> = if task_hint == Some("regression") { vec![String::new(); labels.len()] } else { labels.iter().map(|l| class_key(l)).collect() };
    let need = [false, given[1].is_none(), given[2].is_none()];
    let test_given = given[2].is_some();
    let mut parts: [RawSet; 3] = Default::default();
    // With stratification: the number of classes and the size of the largest one.
    let mut strata_sizes: Option<(usize, usize)> = None;
    if need[1] || need[2] {
        let f = [fractions[0], if need[1] { fractions[1] } else { 0.0 }, if need[2] { fractions[2] } else { 0.0 }];
        // A share asked for (above 0) that is less than one example is a slip (`1e-300`, a
        // percentage meant as a fraction): the stratified split would still give every class
        // one example, training or testing on a handful without a word.
        let n = train_raw.examples.len();
        for (s, role) in [(0, "training"), (1, "validation"), (2, "test")] {
            if f[s] > 0.0 && f[s] * (n as f64) < 1.0 {
                return Err(NnError::invalid(
                    format!("{}", path.display()),
                    "split",
                    format!("{fractions:?} of {n} examples"),
                    format!("the {role} fraction {:?} is less than one example; give a larger fraction{}", f[s], if s == 0 { "" } else { ", or 0 for none" }),
                ));
            }
        }
        // A regression target is not stratified (every key is the same).
        let numeric_target = task_hint != Some("classification") && labels.iter().all(|l| parse_number(l).is_some()) && {
            let mut d: Vec<String> = keys.clone();
            d.sort();
            d.dedup();
            d.len() > MAX_INTEGER_CLASSES
        };
        let strata = if numeric_target { vec![String::new(); keys.len()] } else { keys };
        if !numeric_target {
            let mut counts: HashMap<&str, usize> = HashMap::new();
            for k in &strata {
                *counts.entry(k.as_str()).or_default() += 1;
            }
            strata_sizes = Some((counts.len(), counts.values().copied().max().unwrap_or(0)));
        }
        let idx = stratified_split(&strata, f, rng);
        // The examples move into their splits (the indices are a partition): a split costs no
        // copy of the data, as a `Subset` in PyTorch does not.
        let mut pool: Vec<Option<RawExample>> = std::mem::take(&mut train_raw.examples).into_iter().map(Some).collect();
        for s in 0..3 {
            let examples = idx[s].iter().map(|&i| pool[i].take().expect("stratified_split gives each example to one split")).collect();
            parts[s] = RawSet { examples, ..train_raw.without_examples() };
        }
    } else {
        parts[0] = std::mem::take(&mut train_raw);
    }
    for s in 1..3 {
        if let Some(g) = given[s].take() {
            parts[s] = g;
        }
    }
    if parts[0].examples.is_empty() {
        return Err(NnError::invalid("data", "split", format!("{fractions:?}"), "leaves no training examples"));
    }
    if parts[2].examples.is_empty() {
        return Err(NnError::invalid(
            format!("{}", path.display()),
            "split",
            format!("{fractions:?} of {n_all} examples"),
            match strata_sizes {
                // A test fraction of 0 asks for no test share: the run still needs test examples.
                _ if fractions[2] == 0.0 => "gives no test share (its third fraction is 0): a run is scored on test examples; give a test fraction above 0 or --test FILE".to_string(),
                // Each class is split on its own: classes of one or two examples give no test
                // share, which says more about the target column than about the data's size.
                Some((classes, largest)) if classes > 1 && (largest as f64 * fractions[2]) < 1.0 => format!(
                    "leaves no test examples: each of the {classes} classes is split on its own and the largest has {largest} example(s); \
                     is the target the right column? (for a numeric target pass --task regression; else use more data or --test FILE)"
                ),
                _ => "leaves no test examples: use more data, a larger test fraction, or --test FILE".to_string(),
            },
        ));
    }
    warnings.extend(copies_of_training_examples(&parts));
    let train_labels: Vec<&str> = parts[0].examples.iter().map(|e| e.label.as_deref().unwrap_or("")).collect();
    let origin = |i: usize| parts[0].examples[i].origin.to_string();
    let (task, classes) = decide_task(&train_labels, task_hint, &origin)?;
    warnings.extend(same_number_classes(&classes));
    let kind = match (&format, &layout) {
        (Format::Csv | Format::Tsv, Some(l)) if l.text.is_some() => DataKind::Text,
        (Format::Csv | Format::Tsv, _) => DataKind::Tabular,
        (Format::Folder | Format::Lines, _) => DataKind::Text,
        _ if parts[0].shape.len() >= 2 => DataKind::Images,
        _ => DataKind::Tabular,
    };
    let mut o = o;
    if format == Format::Lines {
        // Pre-tokenized: tokens are kept as written.
        o.tokenizer.split_punctuation = false;
        if cfg.lowercase.is_none() {
            o.tokenizer.lowercase = false;
        }
    }
    let encoder = fit_encoder(kind, &parts[0], &o, layout.as_ref().and_then(|l| l.text.clone()), &mut warnings)?;
    let headerless_columns = layout.as_ref().filter(|l| !l.header).map(|l| l.names.clone());
    let schema = DataSchema { kind, format, task, classes, target: layout.as_ref().map(|l| l.target.clone()), encoder, display_names: Vec::new(), target_scale: None, headerless_columns };
    let mut schema = schema;
    if task == Task::Regression {
        let v: Vec<f64> = train_labels.iter().filter_map(|l| parse_number(l)).collect();
        let scale = standardisation(&v).map_err(|big| NnError::invalid("data", "target", big, format!("{TOO_LARGE}: rescale the target")))?;
        if let Some(o) = far_outlier(&v) {
            warnings.push(outlier_warning(&parts[0].path, "the target", o));
        }
        schema.target_scale = Some(scale);
    }
    let mut splits = Vec::new();
    for (s, what) in parts.iter().zip(["training", "validation", "test"]) {
        if s.examples.is_empty() {
            splits.push(None);
            continue;
        }
        let mut rep = Replaced::default();
        let inputs = schema.encoder.encode(s, &mut rep)?;
        let targets = schema.targets(s, &mut warnings)?;
        rep.report(&format!("{} ({what} split)", s.path.display()), &mut warnings);
        splits.push(Some(Split { inputs, targets }));
    }
    let mut it = splits.into_iter();
    let train = it.next().flatten().expect("training split");
    let valid = it.next().flatten();
    let test = it.next().flatten().expect("test split");
    if let Task::Classification { .. } = task {
        warnings.extend(rare_and_untested_classes(&path, &schema.classes, &parts[0], &test, test_given));
    }
    Ok(Loaded { dataset: Dataset { name: name.into(), task, train, valid, test, schema: Some(Box::new(schema.clone())) }, schema, warnings })
}

#[cfg(test)]
mod tests;
