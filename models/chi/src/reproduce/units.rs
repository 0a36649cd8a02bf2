//! Units of work, their records, and `chi reproduce --resume`; progress bars inside training.
//!
//! An experiment splits its work into **units**: one model variant × one run (or one
//! cross-validation fold), each independent of the others (its own seed, its own model). It runs
//! each unit through [`Ctx::unit`], which, when the unit finishes, writes everything the
//! experiment later aggregates or plots ([`UnitData`]) to `OUT/reproduce/NAME/units/KEY.json`,
//! atomically (temporary file, fsync, rename, fsync of the directory: [`atomic_write`]).
//!
//! With `--resume`, [`Ctx::unit`] first looks for the unit's record and, if it is valid, hands
//! back its numbers instead of training, so an interrupted experiment only runs its missing
//! units and prints the same final table. A record is valid when its checksum matches and it was
//! made by the same experiment, unit, unit configuration (steps, sizes, hyperparameters, the
//! unit's seed), base `--seed`, `--quick` and chi version. **A record that is corrupt (unreadable,
//! not JSON, wrong checksum, missing values) or made with another configuration is ignored with a
//! warning on stderr naming the file and the problem, and its unit is run again** (the new record
//! replaces it). Without `--resume`, every unit runs and its record is (over)written.
//!
//! Numbers are stored as the hex of their IEEE-754 bits, so a reloaded value is bit-identical to
//! the one computed (JSON decimal parsing is not guaranteed to round-trip). Both a fresh unit and
//! a reused one are handed to the experiment through the same decoding of a [`UnitData`], so the
//! two paths cannot differ.

use super::Ctx;
use chi_nn::checkpoint::{atomic_write, fnv, FNV_OFFSET};
use crate::train::progress::Progress;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Format tag of unit records.
pub const UNIT_FORMAT: &str = "chi-reproduce-unit/1";
/// Sub-directory of the experiment directory holding unit records.
pub const UNIT_DIR: &str = "units";

/// The results of one unit: named vectors of numbers and of strings.
#[derive(Clone, Debug, Default)]
pub struct UnitData {
    nums: BTreeMap<String, Vec<f64>>,
    texts: BTreeMap<String, Vec<String>>,
}

impl UnitData {
    /// Empty data.
    pub fn new() -> UnitData {
        UnitData::default()
    }
    /// Adds one number under `key`.
    pub fn with_scalar(self, key: &str, v: f64) -> UnitData {
        self.with_vector(key, vec![v])
    }
    /// Adds a vector of numbers under `key`.
    pub fn with_vector(mut self, key: &str, v: Vec<f64>) -> UnitData {
        self.nums.insert(key.to_string(), v);
        self
    }
    /// Adds a curve of `(x, y)` points under `key`.
    pub fn with_curve(self, key: &str, c: &[(f64, f64)]) -> UnitData {
        self.with_vector(key, c.iter().flat_map(|p| [p.0, p.1]).collect())
    }
    /// Adds strings under `key`.
    pub fn with_strings(mut self, key: &str, v: Vec<String>) -> UnitData {
        self.texts.insert(key.to_string(), v);
        self
    }
    /// The vector under `key`, or `None` if absent.
    pub fn opt_vector(&self, key: &str) -> Option<Vec<f64>> {
        self.nums.get(key).cloned()
    }
    /// The vector under `key`.
    pub fn vector(&self, key: &str) -> Result<Vec<f64>, String> {
        self.opt_vector(key).ok_or_else(|| format!("no values '{key}'"))
    }
    /// The single number under `key`.
    pub fn scalar(&self, key: &str) -> Result<f64, String> {
        match self.nums.get(key).map(Vec::as_slice) {
            Some([v]) => Ok(*v),
            Some(v) => Err(format!("'{key}' has {} values, expected 1", v.len())),
            None => Err(format!("no value '{key}'")),
        }
    }
    /// The curve under `key`.
    pub fn curve(&self, key: &str) -> Result<Vec<(f64, f64)>, String> {
        let v = self.vector(key)?;
        if v.len() % 2 != 0 {
            return Err(format!("curve '{key}' has an odd number of values ({})", v.len()));
        }
        Ok(v.chunks(2).map(|p| (p[0], p[1])).collect())
    }
    /// The strings under `key`.
    pub fn strings(&self, key: &str) -> Result<Vec<String>, String> {
        self.texts.get(key).cloned().ok_or_else(|| format!("no strings '{key}'"))
    }
    /// Whether `self` and `other` hold the same keys and bit-identical values.
    pub fn same_bits(&self, other: &UnitData) -> bool {
        self.texts == other.texts
            && self.nums.len() == other.nums.len()
            && self.nums.iter().zip(&other.nums).all(|((ka, a), (kb, b))| ka == kb && a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()))
    }
}

/// What a unit record must match to be reused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitHeader {
    /// Experiment name.
    pub experiment: String,
    /// Unit key (also the file name).
    pub unit: String,
    /// The unit's own configuration (sizes, steps, hyperparameters, seed).
    pub config: String,
    /// `--quick`.
    pub quick: bool,
    /// Base `--seed`.
    pub seed: u64,
    /// chi version that made it.
    pub chi_version: String,
}

/// The record's body (everything the checksum covers): only strings, booleans and integers, so
/// it re-serialises to the same text after parsing.
fn body(h: &UnitHeader, d: &UnitData) -> serde_json::Value {
    let nums: serde_json::Map<String, serde_json::Value> = d
        .nums
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::Array(v.iter().map(|x| serde_json::Value::String(format!("{:016x}", x.to_bits()))).collect())))
        .collect();
    serde_json::json!({
        "format": UNIT_FORMAT,
        "experiment": h.experiment,
        "unit": h.unit,
        "config": h.config,
        "quick": h.quick,
        "seed": h.seed,
        "chi_version": h.chi_version,
        "nums": nums,
        "texts": d.texts,
    })
}

fn checksum(body: &serde_json::Value) -> String {
    let mut h = FNV_OFFSET;
    fnv(&mut h, body.to_string().as_bytes());
    format!("{h:016x}")
}

/// The record's JSON text: the checksummed body, the checksum, and (ignored when reading) a
/// readable preview of the single numbers.
pub fn encode_unit(h: &UnitHeader, d: &UnitData) -> String {
    let b = body(h, d);
    let preview: serde_json::Map<String, serde_json::Value> = d
        .nums
        .iter()
        .filter(|(_, v)| v.len() == 1)
        .map(|(k, v)| (k.clone(), serde_json::Number::from_f64(v[0]).map_or(serde_json::Value::Null, serde_json::Value::Number)))
        .collect();
    let rec = serde_json::json!({ "checksum": checksum(&b), "body": b, "preview": preview });
    serde_json::to_string_pretty(&rec).unwrap_or_default() + "\n"
}

/// Parses and validates a record's text against `want`. The error is the problem (without
/// the file name, which the caller adds).
pub fn decode_unit(text: &str, want: &UnitHeader) -> Result<UnitData, String> {
    let rec: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON ({e})"))?;
    let b = rec.get("body").ok_or("no 'body'")?;
    let sum = rec.get("checksum").and_then(|c| c.as_str()).ok_or("no 'checksum'")?;
    let actual = checksum(b);
    if sum != actual {
        return Err(format!("checksum mismatch (recorded {sum}, contents hash to {actual}): the file is corrupt"));
    }
    let s = |k: &str| b.get(k).and_then(|v| v.as_str()).map(str::to_string).ok_or_else(|| format!("no string '{k}'"));
    let format = s("format")?;
    if format != UNIT_FORMAT {
        return Err(format!("format '{format}', expected '{UNIT_FORMAT}'"));
    }
    let got = UnitHeader {
        experiment: s("experiment")?,
        unit: s("unit")?,
        config: s("config")?,
        quick: b.get("quick").and_then(|v| v.as_bool()).ok_or("no boolean 'quick'")?,
        seed: b.get("seed").and_then(|v| v.as_u64()).ok_or("no integer 'seed'")?,
        chi_version: s("chi_version")?,
    };
    let field = |name: &str, g: String, w: String| if g == w { Ok(()) } else { Err(format!("made with {name} {g:?}, this run has {w:?}")) };
    field("experiment", got.experiment.clone(), want.experiment.clone())?;
    field("unit", got.unit.clone(), want.unit.clone())?;
    field("configuration", got.config.clone(), want.config.clone())?;
    field("--quick", got.quick.to_string(), want.quick.to_string())?;
    field("--seed", got.seed.to_string(), want.seed.to_string())?;
    field("chi version", got.chi_version.clone(), want.chi_version.clone())?;
    let mut d = UnitData::new();
    for (k, v) in b.get("nums").and_then(|v| v.as_object()).ok_or("no object 'nums'")? {
        let arr = v.as_array().ok_or_else(|| format!("'{k}' is not an array"))?;
        let mut xs = Vec::with_capacity(arr.len());
        for x in arr {
            let hex = x.as_str().ok_or_else(|| format!("'{k}' holds a non-string"))?;
            let bits = u64::from_str_radix(hex, 16).map_err(|e| format!("'{k}': bad hex '{hex}' ({e})"))?;
            xs.push(f64::from_bits(bits));
        }
        d.nums.insert(k.clone(), xs);
    }
    for (k, v) in b.get("texts").and_then(|v| v.as_object()).ok_or("no object 'texts'")? {
        let arr = v.as_array().ok_or_else(|| format!("'{k}' is not an array"))?;
        let strs: Option<Vec<String>> = arr.iter().map(|x| x.as_str().map(str::to_string)).collect();
        d.texts.insert(k.clone(), strs.ok_or_else(|| format!("'{k}' holds a non-string"))?);
    }
    Ok(d)
}

/// A unit key as a file name: characters other than `[A-Za-z0-9._-]` become `_`.
pub fn unit_file_name(key: &str) -> String {
    let s: String = key.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' }).collect();
    format!("{s}.json")
}

/// A progress bar for one unit's training loop: experiment, unit, step/total, loss, elapsed,
/// throughput and ETA, on stderr. Silent unless [`Ctx::progress`] (a terminal, no `--json`).
pub struct StepBar {
    bar: Progress,
    label: String,
    total: usize,
}

impl StepBar {
    /// Records that `done` steps are finished, the last with loss `loss`.
    pub fn tick(&self, done: usize, loss: f64) {
        if self.bar.is_visible() && (done.is_multiple_of(10) || done == self.total) {
            self.bar.update(done as u64, format!("{} · loss {loss:.4}", self.label));
        }
    }
    /// Finishes the bar (it stays on screen as the unit's line).
    pub fn finish(&self) {
        self.bar.finish();
    }
}

impl Ctx {
    /// The record file of unit `key`.
    pub fn unit_path(&self, key: &str) -> PathBuf {
        self.dir.join(UNIT_DIR).join(unit_file_name(key))
    }

    /// Declares how many units the experiment will run (for the `unit i/n` in progress bars).
    pub fn plan_units(&self, n: usize) {
        self.units_planned.set(n);
    }

    /// A progress bar for `total` training steps of the current unit, labelled `what`.
    pub fn bar(&self, what: &str, total: usize) -> StepBar {
        let planned = self.units_planned.get();
        let i = self.units_reused.get() + self.units_ran.get() + 1;
        let unit = if planned > 0 { format!(" [unit {i}/{planned}]") } else { String::new() };
        StepBar { bar: Progress::new(total as u64, 0, self.progress), label: format!("{}{unit} {what}", self.name), total }
    }

    fn header(&self, key: &str, config: &str) -> UnitHeader {
        UnitHeader {
            experiment: self.name.clone(),
            unit: key.to_string(),
            config: config.to_string(),
            quick: self.quick,
            seed: self.seed,
            chi_version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }

    /// Runs one unit of work, or (with `--resume`) reuses its valid record; see the module
    /// docs. `config` must describe everything that determines the unit's numbers besides the
    /// experiment, `--quick` and `--seed` (steps, sizes, hyperparameters, the unit's seed).
    /// `compute` returns the unit's [`UnitData`], which is written as its record; `decode`
    /// turns a [`UnitData`] into what the experiment uses (it is applied to fresh and reloaded
    /// data alike; a reloaded record it rejects is treated as corrupt).
    pub fn unit<R>(&self, key: &str, config: &str, compute: impl FnOnce() -> Result<UnitData, String>, decode: impl Fn(&UnitData) -> Result<R, String>) -> Result<R, String> {
        let path = self.unit_path(key);
        let header = self.header(key, &self.unit_config(config));
        if self.resume {
            // Rank 0 decides (it alone has the records); under mpirun it sends the record it
            // reuses, so every rank reuses or runs the same units.
            let reused: Option<R> = if self.leads() {
                let found = match load_unit(&path, &header).and_then(|d| d.map(|d| decode(&d).map(|r| (d, r))).transpose()) {
                    Ok(found) => found,
                    Err(problem) => {
                        eprintln!("chi reproduce: warning: {}: {problem}; ignoring this record and running the unit again", path.display());
                        None
                    }
                };
                if let Some(c) = self.comm() {
                    let mut text = found.as_ref().map_or_else(Vec::new, |(d, _)| encode_unit(&header, d).into_bytes());
                    c.broadcast_bytes(&mut text, 0);
                }
                found.map(|(_, r)| r)
            } else {
                let mut text = Vec::new();
                if let Some(c) = self.comm() {
                    c.broadcast_bytes(&mut text, 0);
                }
                if text.is_empty() {
                    None
                } else {
                    let d = String::from_utf8(text)
                        .map_err(|_| "not UTF-8 text".to_string())
                        .and_then(|t| decode_unit(&t, &header))
                        .map_err(|e| format!("{}: the record rank 0 sent: {e}", path.display()))?;
                    Some(decode(&d)?)
                }
            };
            if let Some(r) = reused {
                self.units_reused.set(self.units_reused.get() + 1);
                return Ok(r);
            }
        }
        let data = compute()?;
        atomic_write(&path, encode_unit(&header, &data).as_bytes())?;
        self.units_ran.set(self.units_ran.get() + 1);
        decode(&data).map_err(|e| format!("{}: unit '{key}' produced data its experiment cannot read: {e}", path.display()))
    }
}

/// Reads and validates the record at `path`: `Ok(None)` when there is none, `Err(problem)`
/// when it is unreadable, corrupt or made with another configuration.
pub fn load_unit(path: &Path, want: &UnitHeader) -> Result<Option<UnitData>, String> {
    let text = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read: {e}")),
    };
    let text = String::from_utf8(text).map_err(|_| "not UTF-8 text".to_string())?;
    decode_unit(&text, want).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn ctx(dir: &Path, resume: bool, seed: u64) -> Ctx {
        Ctx::new("unit-test", dir.to_path_buf(), true, 1, seed, false, resume)
    }

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("chi-units-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn sample() -> UnitData {
        UnitData::new()
            .with_scalar("acc", 0.1 + 0.2)
            .with_vector("odd", vec![f64::NAN, -0.0, 1e-310, f64::MAX, f64::NEG_INFINITY, 1.0 / 3.0])
            .with_curve("curve", &[(1.0, 0.5), (2.0, 0.25)])
            .with_strings("words", vec!["the".into(), "χ̃ \"quoted\"".into()])
    }

    #[test]
    fn records_round_trip_bit_exactly() {
        let h = ctx(Path::new("."), false, 3).header("k", "steps=1");
        let d = sample();
        let back = decode_unit(&encode_unit(&h, &d), &h).unwrap();
        assert!(back.same_bits(&d));
        assert_eq!(back.scalar("acc").unwrap().to_bits(), (0.1f64 + 0.2).to_bits());
        assert_eq!(back.curve("curve").unwrap(), vec![(1.0, 0.5), (2.0, 0.25)]);
        assert!(back.scalar("odd").is_err() && back.scalar("missing").is_err());
        assert!(!back.same_bits(&d.clone().with_scalar("acc", 0.3)));
    }

    #[test]
    fn corrupt_or_mismatched_records_are_rejected_with_the_problem() {
        let h = ctx(Path::new("."), false, 3).header("k", "steps=1");
        let text = encode_unit(&h, &sample());
        // Truncated.
        assert!(decode_unit(&text[..text.len() / 2], &h).unwrap_err().contains("not valid JSON"));
        // A changed value that keeps the JSON valid is caught by the checksum.
        let hex = format!("{:016x}", (0.1f64 + 0.2).to_bits());
        let flipped = text.replacen(&hex, &format!("{:016x}", 0.3f64.to_bits()), 1);
        assert_ne!(flipped, text);
        assert!(decode_unit(&flipped, &h).unwrap_err().contains("checksum mismatch"));
        // Another configuration, seed or unit.
        let mut other = h.clone();
        other.config = "steps=2".into();
        assert!(decode_unit(&text, &other).unwrap_err().contains("configuration"));
        let mut other = h.clone();
        other.seed = 4;
        assert!(decode_unit(&text, &other).unwrap_err().contains("--seed"));
        let mut other = h.clone();
        other.unit = "j".into();
        assert!(decode_unit(&text, &other).unwrap_err().contains("unit"));
    }

    #[test]
    fn resume_reuses_valid_records_and_reruns_bad_ones() {
        let dir = tmpdir("resume");
        let calls = Cell::new(0);
        let compute = |v: f64| -> Result<UnitData, String> {
            calls.set(calls.get() + 1);
            Ok(UnitData::new().with_scalar("v", v))
        };
        let get = |d: &UnitData| d.scalar("v");
        // Fresh run: computes and writes the record.
        let c = ctx(&dir, false, 0);
        assert_eq!(c.unit("a", "cfg", || compute(1.5), get).unwrap(), 1.5);
        assert_eq!(calls.get(), 1);
        assert!(c.unit_path("a").is_file());
        // Resume: the record's value comes back, nothing is computed (the closure would give 9).
        let c = ctx(&dir, true, 0);
        assert_eq!(c.unit("a", "cfg", || compute(9.0), get).unwrap(), 1.5);
        assert_eq!((calls.get(), c.units_reused.get(), c.units_ran.get()), (1, 1, 0));
        // Without --resume the unit runs again.
        let c = ctx(&dir, false, 0);
        assert_eq!(c.unit("a", "cfg", || compute(1.5), get).unwrap(), 1.5);
        assert_eq!(calls.get(), 2);
        // Another configuration: the record is ignored, the unit reruns and its record is replaced.
        let c = ctx(&dir, true, 0);
        assert_eq!(c.unit("a", "cfg2", || compute(2.5), get).unwrap(), 2.5);
        assert_eq!(calls.get(), 3);
        assert_eq!(c.unit("a", "cfg2", || compute(7.0), get).unwrap(), 2.5, "the rerun's record is reused next time");
        // A corrupt record: ignored, rerun.
        std::fs::write(c.unit_path("a"), "{ \"body\": ").unwrap();
        assert_eq!(c.unit("a", "cfg2", || compute(3.5), get).unwrap(), 3.5);
        assert_eq!(calls.get(), 4);
        // A record the experiment cannot decode (missing value): ignored, rerun.
        let c2 = ctx(&dir, true, 0);
        assert_eq!(c2.unit("b", "cfg", || Ok(UnitData::new().with_scalar("w", 1.0)), |d| d.scalar("w")).unwrap(), 1.0);
        assert_eq!(c2.unit("b", "cfg", || compute(4.5), get).unwrap(), 4.5);
        // A compute error propagates and writes nothing.
        assert!(c2.unit("c", "cfg", || Err::<UnitData, _>("boom".to_string()), get).unwrap_err().contains("boom"));
        assert!(!c2.unit_path("c").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn file_names_are_sanitised() {
        assert_eq!(unit_file_name("CNN (8×8) run 0"), "CNN__8_8__run_0.json");
        assert_eq!(unit_file_name("reviews-ca-bsfe-fold3"), "reviews-ca-bsfe-fold3.json");
    }
}
