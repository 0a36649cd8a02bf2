//! chi's state dicts load into PyTorch and back, with equal outputs: an MLP saved by chi
//! (`Sequential` of `Linear`, `Tanh`, `Linear`) runs in `torch.nn.Sequential(Linear, Tanh,
//! Linear)` with no transposes or renames, and a PyTorch-saved one runs in chi.
//!
//! Needs a Python with PyTorch: `$CHI_TORCH_PYTHON`, or the `.venv-torch/bin/python` that
//! `scripts/setup-torch.sh` installs at the repository root. Without one the test says so and
//! passes; the default test command never needs PyTorch.

use chi_autodiff::Tensor;
use chi_nn::module::{load_file, state_dict};
use chi_nn::{Activation, Linear, Module, Sequential};
use std::path::PathBuf;
use std::process::Command;

fn torch_python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHI_TORCH_PYTHON").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.ancestors().map(|a| a.join(".venv-torch").join("bin").join("python")).find(|p| p.is_file())
}

/// Reads and writes safetensors by hand (8-byte little-endian header length, JSON header,
/// raw little-endian data), so the venv needs nothing beyond torch.
const SCRIPT: &str = r#"
import json, struct, sys, torch
def load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n]); data = b[8 + n:]
    out = {}
    for k, v in head.items():
        if k == "__metadata__": continue
        assert v["dtype"] == "F32", v
        s, e = v["data_offsets"]
        out[k] = torch.frombuffer(bytearray(data[s:e]), dtype=torch.float32).reshape(v["shape"])
    return out
def save(path, sd):
    head, blobs, off = {}, [], 0
    for k, t in sd.items():
        raw = t.detach().contiguous().to(torch.float32).numpy().tobytes()
        head[k] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw); off += len(raw)
    h = json.dumps(head).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
chi_path, torch_path, x = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
m.load_state_dict(load(chi_path))  # strict: same names, same shapes
x = torch.tensor(x, dtype=torch.float32)
print(json.dumps(m(x).detach().reshape(-1).tolist()))
torch.manual_seed(5)
m2 = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
save(torch_path, m2.state_dict())
print(json.dumps(m2(x).detach().reshape(-1).tolist()))
"#;

fn mlp() -> Sequential<f32> {
    Sequential::new().add(Linear::new(3, 4).seed(1)).add(Activation::Tanh).add(Linear::new(4, 2).seed(2))
}

#[test]
fn chi_mlp_state_dict_runs_in_pytorch_and_back() {
    let Some(py) = torch_python() else {
        eprintln!("skipped: no Python with PyTorch (set CHI_TORCH_PYTHON or run scripts/setup-torch.sh)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("chi-torch-interop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (chi_path, torch_path) = (dir.join("chi.safetensors"), dir.join("torch.safetensors"));
    let model = mlp();
    let sd = state_dict(&model);
    assert_eq!(sd.names(), ["0.weight", "0.bias", "2.weight", "2.bias"]);
    sd.save(&chi_path).unwrap();
    let xs: Vec<f32> = (0..15).map(|i| (0.37 * i as f32).sin()).collect();
    let x = Tensor::from_vec(xs.clone(), &[5, 3]);
    let xjson = format!("[{}]", xs.chunks(3).map(|r| format!("[{}]", r.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join(","))).collect::<Vec<_>>().join(","));
    let out = Command::new(&py).args(["-c", SCRIPT, chi_path.to_str().unwrap(), torch_path.to_str().unwrap(), &xjson]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Vec<f64>> = text.lines().map(|l| l.trim_matches(['[', ']']).split(',').map(|v| v.trim().parse().unwrap()).collect()).collect();
    let ours = model.forward(&x).to_vec();
    for (a, b) in ours.iter().zip(&lines[0]) {
        assert!((*a as f64 - b).abs() < 1e-6, "chi {a} vs torch {b}");
    }
    // PyTorch's weights into a fresh chi MLP: the same outputs as PyTorch computed.
    let back = Sequential::new().add(Linear::new(3, 4)).add(Activation::Tanh).add(Linear::new(4, 2));
    load_file(&back, &torch_path).unwrap();
    let theirs = back.forward(&x).to_vec();
    assert_eq!(theirs.len(), lines[1].len());
    for (a, b) in theirs.iter().zip(&lines[1]) {
        assert!((*a as f64 - b).abs() < 1e-6, "chi {a} vs torch {b}");
    }
    assert!(ours.iter().zip(&theirs).any(|(a, b)| a != b), "the two models differ");
    std::fs::remove_dir_all(&dir).ok();
}
