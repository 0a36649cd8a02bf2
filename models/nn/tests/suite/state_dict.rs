//! State dicts of modules: round trips through files, PyTorch's `[out, in]` layout for linear
//! weights, and mismatches named before anything changes.

use chi_nn::state_dict::StateDict;
use safetensors::tensor::{Dtype, TensorView};
use std::path::Path;
use chi_nn::layers::Linear;
use chi_nn::{Activation, Module, Parameterized, Sequential};
use chi_autodiff::Tensor;

fn mlp(seed: u64) -> Sequential<f32> {
    Sequential::new().add(Linear::new(3, 4).seed(seed)).add(Activation::Tanh).add(Linear::new(4, 2).seed(seed + 1))
}

#[test]
fn round_trip_through_a_file_restores_every_value() {
    let a = mlp(1);
    let b = mlp(7);
    assert_ne!(a.parameters()[0].to_vec(), b.parameters()[0].to_vec());
    let dir = std::env::temp_dir().join(format!("chi-sd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mlp.safetensors");
    a.save(&path).unwrap();
    b.load(&path).unwrap();
    for (pa, pb) in a.parameters().iter().zip(b.parameters()) {
        assert_eq!(pa.to_vec(), pb.to_vec(), "{}", pa.name());
    }
    let x = Tensor::from_vec(vec![0.1f32, -0.2, 0.3, 0.5, 0.0, -1.0], &[2, 3]);
    assert_eq!(a.forward(&x).to_vec(), b.forward(&x).to_vec());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn linear_weights_are_exported_out_by_in() {
    let l = Linear::<f32>::new(3, 2);
    let sd = l.state_dict();
    assert_eq!(sd.names(), ["weight", "bias"]);
    let (shape, v) = sd.get("weight").unwrap();
    assert_eq!(shape, [2, 3]);
    let w = l.weight.to_vec(); // [in=3, out=2]
    for o in 0..2 {
        for i in 0..3 {
            assert_eq!(v[o * 3 + i], w[i * 2 + o]);
        }
    }
}

/// A file laid out as `torch.save_file(nn.Sequential(nn.Linear(3, 2)).state_dict())`
/// writes it: `0.weight` is `[out, in]`. Values chosen by hand.
#[test]
fn a_pytorch_layout_file_loads_into_the_right_places() {
    let w_pt: [f32; 6] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]; // rows = outputs
    let b_pt: [f32; 2] = [0.5, -0.5];
    let wb: Vec<u8> = w_pt.iter().flat_map(|x| x.to_le_bytes()).collect();
    let bb: Vec<u8> = b_pt.iter().flat_map(|x| x.to_le_bytes()).collect();
    let views = vec![
        ("0.weight".to_string(), TensorView::new(Dtype::F32, vec![2, 3], &wb).unwrap()),
        ("0.bias".to_string(), TensorView::new(Dtype::F32, vec![2], &bb).unwrap()),
    ];
    let bytes = safetensors::serialize(views, None).unwrap();
    let model = Sequential::<f32>::new().add(Linear::new(3, 2));
    let sd = StateDict::from_safetensors(Path::new("torch.safetensors"), &bytes).unwrap();
    model.load_state_dict(&sd).unwrap();
    // y = x·Wᵀ + b with PyTorch's W: x = [1, 0, −1] → [1 − 3 + 0.5, 4 − 6 − 0.5].
    let y = model.forward(&Tensor::from_vec(vec![1.0f32, 0.0, -1.0], &[1, 3]));
    assert_eq!(y.to_vec(), vec![-1.5, -2.5]);
    // chi's own storage is [in, out].
    assert_eq!(model.parameters()[0].to_vec(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
}

#[test]
fn mismatches_name_the_key_and_both_shapes_and_change_nothing() {
    let model = mlp(3);
    let before: Vec<Vec<f32>> = model.parameters().iter().map(|p| p.to_vec()).collect();
    let mut sd = model.state_dict();
    sd.insert("2.weight", &[2, 5], vec![0.0; 10]).unwrap();
    sd.insert("0.bias", &[4], vec![9.0; 4]).unwrap();
    let e = model.load_state_dict(&sd).unwrap_err().to_string();
    assert!(e.contains("\"2.weight\"") && e.contains("[2, 5]") && e.contains("[2, 4]"), "{e}");
    let after: Vec<Vec<f32>> = model.parameters().iter().map(|p| p.to_vec()).collect();
    assert_eq!(before, after, "nothing loaded on error");

    let mut sd = model.state_dict();
    sd.insert("3.weight", &[1], vec![0.0]).unwrap();
    let e = model.load_state_dict(&sd).unwrap_err().to_string();
    assert!(e.contains("unexpected") && e.contains("3.weight"), "{e}");
    let small = Sequential::<f32>::new().add(Linear::new(3, 4));
    let e = model.load_state_dict(&small.state_dict()).unwrap_err().to_string();
    assert!(e.contains("missing") && e.contains("2.weight") && e.contains("2.bias"), "{e}");
}
