//! Checkpoint tests: safetensors and full-checkpoint round trips, atomic writes, and corrupt or
//! mismatched files (each an error naming the file and the problem, with the model unchanged).

use chi_autodiff::{Rng, Tensor};
use chi_nn::checkpoint::{self, CheckpointMeta};
use chi_nn::optim::{OptimConfig, Optimizer};
use chi_nn::params::{init, ParamStore};
use std::path::{Path, PathBuf};

fn model(seed: u64, hidden: usize) -> ParamStore<f32> {
    let mut rng = Rng::new(seed);
    let mut s = ParamStore::new();
    s.add("layer0.w", "hidden", init::xavier_uniform(&[3, hidden], 3, hidden, 1.0, &mut rng));
    s.add("layer0.b", "hidden", init::normal(&[hidden], 0.1, &mut rng));
    s.add("layer1.w", "output", init::xavier_uniform(&[hidden, 2], hidden, 2, 1.0, &mut rng));
    s
}

fn forward(s: &ParamStore<f32>, x: &Tensor<f32>) -> Vec<f32> {
    let p = s.params();
    x.matmul(&p[0].get()).add(&p[1].get()).tanh().matmul(&p[2].get()).to_vec()
}

fn values(s: &ParamStore<f32>) -> Vec<Vec<f32>> {
    s.params().iter().map(|p| p.to_vec()).collect()
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chi-ckpt-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn train_steps(s: &ParamStore<f32>, o: &mut Optimizer<f32>, x: &Tensor<f32>, n: usize) {
    for _ in 0..n {
        s.zero_grad();
        let p = s.params();
        x.matmul(&p[0].get()).add(&p[1].get()).tanh().matmul(&p[2].get()).square().sum().backward();
        o.step_params(p);
    }
}

#[test]
fn safetensors_round_trip_gives_identical_output() {
    let d = dir("st");
    let x = Tensor::randn(&[4, 3], &mut Rng::new(9));
    let a = model(1, 5);
    let path = d.join("w.safetensors");
    checkpoint::save_params(&path, a.params(), &Default::default()).unwrap();
    let b = model(2, 5);
    assert_ne!(forward(&a, &x), forward(&b, &x));
    checkpoint::load_params(&path, b.params()).unwrap();
    assert_eq!(forward(&a, &x), forward(&b, &x));
    assert_eq!(values(&a), values(&b));
    // The file is plain safetensors: header names, dtypes and shapes as PyTorch expects.
    let bytes = std::fs::read(&path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    assert_eq!(header["layer0.w"]["dtype"], "F32");
    assert_eq!(header["layer0.w"]["shape"], serde_json::json!([3, 5]));
    assert_eq!(header["layer1.w"]["shape"], serde_json::json!([5, 2]));
    // f64 weights are F64.
    let mut s64 = ParamStore::<f64>::new();
    s64.add("v", "g", Tensor::from_vec(vec![1.5, -2.25], &[2]));
    let p64 = d.join("w64.safetensors");
    checkpoint::save_params(&p64, s64.params(), &Default::default()).unwrap();
    let bytes = std::fs::read(&p64).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    assert_eq!(header["v"]["dtype"], "F64");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn full_checkpoint_round_trip_resumes_identically() {
    let d = dir("full");
    let x = Tensor::randn(&[4, 3], &mut Rng::new(9));
    for cfg in [OptimConfig::adam(0.01), OptimConfig::adagrad(0.1), OptimConfig { momentum: 0.9, ..OptimConfig::sgd(0.01) }, OptimConfig { centered: true, momentum: 0.5, ..OptimConfig::rmsprop(0.01) }] {
        let a = model(1, 4);
        let mut oa = Optimizer::new(cfg.clone());
        train_steps(&a, &mut oa, &x, 3);
        let path = d.join("c.safetensors");
        let mut rng = Rng::new(77);
        rng.next_u64();
        let meta = CheckpointMeta { step: 3, rngs: [("dropout".to_string(), rng.state())].into(), config: "{\"k\":1}".into(), extra: [("x".to_string(), "y".to_string())].into() };
        checkpoint::save_checkpoint(&path, a.params(), &oa, &meta).unwrap();
        let b = model(5, 4);
        let mut ob = Optimizer::new(cfg.clone());
        let got = checkpoint::load_checkpoint(&path, b.params(), &mut ob).unwrap();
        assert_eq!(got, meta);
        assert_eq!(Rng::from_state(got.rngs["dropout"]).next_u64(), rng.clone().next_u64());
        assert_eq!(oa.state(), ob.state());
        train_steps(&a, &mut oa, &x, 3);
        train_steps(&b, &mut ob, &x, 3);
        assert_eq!(values(&a), values(&b), "{:?}: resumed training differs", cfg.name);
        // weights-only loading of a full checkpoint works too
        let c = model(6, 4);
        checkpoint::load_params(&path, c.params()).unwrap();
    }
    let _ = std::fs::remove_dir_all(&d);
}

fn assert_rejected(path: &Path, what: &str) {
    let target = model(3, 4);
    let before = values(&target);
    let mut o = Optimizer::<f32>::new(OptimConfig::adam(0.01));
    let st = o.state();
    let e1 = checkpoint::load_params(path, target.params()).unwrap_err().to_string();
    let e2 = checkpoint::load_checkpoint(path, target.params(), &mut o).unwrap_err().to_string();
    for e in [&e1, &e2] {
        assert!(e.contains(&path.display().to_string()), "error must name the file: {e}");
        assert!(e.to_lowercase().contains(what), "error must say {what:?}: {e}");
    }
    assert_eq!(values(&target), before, "params changed by a failed load");
    assert_eq!(o.state(), st, "optimiser changed by a failed load");
}

fn saved_full(d: &Path, name: &str, s: &ParamStore<f32>) -> PathBuf {
    let mut o = Optimizer::new(OptimConfig::adam(0.01));
    train_steps(s, &mut o, &Tensor::randn(&[2, 3], &mut Rng::new(1)), 1);
    let p = d.join(name);
    checkpoint::save_checkpoint(&p, s.params(), &o, &CheckpointMeta { step: 1, config: "{}".into(), ..Default::default() }).unwrap();
    p
}

#[test]
fn truncated_file_is_an_error() {
    let d = dir("trunc");
    let p = saved_full(&d, "t.safetensors", &model(1, 4));
    let bytes = std::fs::read(&p).unwrap();
    for cut in [0, 5, 8, 20, bytes.len() / 2, bytes.len() - 1] {
        std::fs::write(&p, &bytes[..cut]).unwrap();
        assert_rejected(&p, "safetensors");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn non_finite_weights_and_files_that_are_not_safetensors_are_refused() {
    let d = dir("nonfinite");
    let s = model(1, 4);
    s.params()[0].set_values(vec![f32::NAN; s.params()[0].to_vec().len()]);
    let p = saved_full(&d, "nan.safetensors", &s);
    assert_rejected(&p, "non-finite weights");
    let w = d.join("nan-weights.safetensors");
    checkpoint::save_params(&w, s.params(), &Default::default()).unwrap();
    let e = checkpoint::load_params(&w, model(3, 4).params()).unwrap_err().to_string();
    assert!(e.contains("holds NaN at index 0"), "{e}");
    // Plainly not safetensors: refused after the first 8 KiB, whatever the file's length.
    let z = d.join("zeros.safetensors");
    std::fs::write(&z, vec![0u8; 100_000]).unwrap();
    assert_rejected(&z, "not a safetensors file");
    let csv = d.join("data.safetensors");
    std::fs::write(&csv, b"a,b,label\n1,2,x\n").unwrap();
    assert_rejected(&csv, "not a safetensors file");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn every_flipped_header_byte_is_an_error() {
    let d = dir("flip");
    let p = saved_full(&d, "f.safetensors", &model(1, 4));
    let bytes = std::fs::read(&p).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let target = model(3, 4);
    let before = values(&target);
    for i in 0..8 + n {
        let mut b = bytes.clone();
        b[i] ^= 0x01;
        std::fs::write(&p, &b).unwrap();
        let mut o = Optimizer::<f32>::new(OptimConfig::adam(0.01));
        let e = checkpoint::load_checkpoint(&p, target.params(), &mut o);
        let e = e.expect_err(&format!("flipping byte {i} ({:?}) was not detected", bytes[i] as char)).to_string();
        assert!(e.contains(&p.display().to_string()), "{e}");
        assert_eq!(values(&target), before);
    }
    // A flipped data byte is caught by the checksum.
    let mut b = bytes.clone();
    let last = b.len() - 3;
    b[last] ^= 0x40;
    std::fs::write(&p, &b).unwrap();
    assert_rejected(&p, "checksum");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn wrong_shape_missing_tensor_and_wrong_dtype_are_errors() {
    let d = dir("mismatch");
    // wrong shape: hidden 5 instead of 4
    let p = saved_full(&d, "shape.safetensors", &model(1, 5));
    assert_rejected(&p, "shape");
    // missing tensor: a model without layer1.w
    let mut s = ParamStore::<f32>::new();
    s.add("layer0.w", "hidden", Tensor::zeros(&[3, 4]));
    s.add("layer0.b", "hidden", Tensor::zeros(&[4]));
    let p = d.join("missing.safetensors");
    checkpoint::save_params(&p, s.params(), &Default::default()).unwrap();
    let target = model(3, 4);
    let before = values(&target);
    let e = checkpoint::load_params(&p, target.params()).unwrap_err().to_string();
    assert!(e.contains(&p.display().to_string()) && e.contains("missing tensor") && e.contains("layer1.w"), "{e}");
    assert_eq!(values(&target), before);
    // wrong dtype: f64 file into an f32 model
    let mut s64 = ParamStore::<f64>::new();
    s64.add("layer0.w", "hidden", Tensor::zeros(&[3, 4]));
    s64.add("layer0.b", "hidden", Tensor::zeros(&[4]));
    s64.add("layer1.w", "output", Tensor::zeros(&[4, 2]));
    let p = d.join("dtype.safetensors");
    checkpoint::save_params(&p, s64.params(), &Default::default()).unwrap();
    let e = checkpoint::load_params(&p, target.params()).unwrap_err().to_string();
    assert!(e.contains(&p.display().to_string()) && e.contains("dtype"), "{e}");
    assert_eq!(values(&target), before);
    // unexpected extra tensor
    let mut extra = model(1, 4);
    extra.add("surplus", "g", Tensor::zeros(&[1]));
    let p = d.join("extra.safetensors");
    checkpoint::save_params(&p, extra.params(), &Default::default()).unwrap();
    let e = checkpoint::load_params(&p, target.params()).unwrap_err().to_string();
    assert!(e.contains("unexpected tensor") && e.contains("surplus"), "{e}");
    // a weights file is not a full checkpoint
    let p = d.join("weights.safetensors");
    checkpoint::save_params(&p, model(1, 4).params(), &Default::default()).unwrap();
    let mut o = Optimizer::<f32>::new(OptimConfig::adam(0.01));
    let e = checkpoint::load_checkpoint(&p, target.params(), &mut o).unwrap_err().to_string();
    assert!(e.contains("not a full checkpoint"), "{e}");
    assert_eq!(values(&target), before);
    // optimiser kind mismatch leaves everything unchanged
    let p = saved_full(&d, "adam.safetensors", &model(1, 4));
    let mut o = Optimizer::<f32>::new(OptimConfig::sgd(0.01));
    let e = checkpoint::load_checkpoint(&p, target.params(), &mut o).unwrap_err().to_string();
    assert!(e.contains(&p.display().to_string()) && e.contains("optimiser"), "{e}");
    assert_eq!(values(&target), before);
    // missing file
    let e = checkpoint::load_params(&d.join("nope.safetensors"), target.params()).unwrap_err().to_string();
    assert!(e.contains("nope.safetensors"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn atomic_write_replaces_and_leaves_no_temporary() {
    let d = dir("atomic");
    let p = d.join("f.bin");
    checkpoint::atomic_write(&p, b"old").unwrap();
    checkpoint::atomic_write(&p, b"new contents").unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"new contents");
    let names: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(checkpoint::atomic_write(&d.join("missing-dir/\0bad"), b"x").is_err());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn errors_are_typed_and_name_tensor_and_both_shapes() {
    use chi_nn::NnError;
    let d = dir("typed");
    let p = d.join("w.safetensors");
    checkpoint::save_params(&p, model(1, 4).params(), &Default::default()).unwrap();
    let target = model(2, 5);
    match checkpoint::load_params(&p, target.params()).unwrap_err() {
        NnError::TensorShape { path, tensor, found, expected } => {
            assert_eq!(path, p);
            assert_eq!(tensor, "layer0.w");
            assert_eq!((found, expected), (vec![3, 4], vec![3, 5]));
        }
        e => panic!("expected a TensorShape error, got {e:?}"),
    }
    let missing = d.join("nope.safetensors");
    match checkpoint::load_params(&missing, target.params()).unwrap_err() {
        NnError::Io { path, action, .. } => assert_eq!((path, action), (missing, "cannot read")),
        e => panic!("expected an Io error, got {e:?}"),
    }
    let e = "adamz".parse::<chi_nn::optim::OptimKind>().unwrap_err();
    assert!(matches!(&e, NnError::Unknown { name, .. } if name == "adamz"), "{e:?}");
    let e: Box<dyn std::error::Error> = Box::new(e);
    assert!(e.to_string().contains("adamz") && e.to_string().contains("adamw"), "{e}");
}
