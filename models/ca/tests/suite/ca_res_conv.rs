//! The convolutional CA-RES block (Eq. 42 and the chain variant) and the stacked CA-CNN:
//! float64 gradient checks of first and second order (eps 1e-6, atol 1e-5, rtol 1e-3), the
//! ResNet reduction, and what each sublayer reads.

use chi_autodiff::{GradcheckOptions, Rng, Tensor};
use chi_ca::cnn::{stack_gradcheck_instance, CaCnnStack};
use chi_ca::res::{conv_gradcheck_instance, CaResConv, CaResConvConfig, ConvVInput};
use chi_ca::Activation;
use chi_nn::gradcheck::{check_model, check_model_order, perturb};
use chi_nn::params::ParamStore;

fn cfg(l: usize, n_v: usize, n_sigma: usize, b: bool, v_input: ConvVInput, act: Activation) -> CaResConvConfig {
    CaResConvConfig { l, n_v, n_sigma, b, kernel: 3, channels: 2, v_input, act }
}

/// Every tuple and both input variants, order 1 against central differences, with respect to
/// every parameter and the input; with tanh also order 2 (relu has no second derivative at 0).
#[test]
fn conv_ca_res_blocks_pass_float64_gradchecks_of_order_1_and_2() {
    let opts = GradcheckOptions::default();
    assert_eq!((opts.eps, opts.atol, opts.rtol), (1e-6, 1e-5, 1e-3));
    for v_input in [ConvVInput::Eq42, ConvVInput::Chain] {
        for (l, n_v, n_sigma, b) in [(2, 1, 1, false), (3, 1, 1, false), (3, 2, 2, false), (3, 2, 0, false), (4, 3, 1, false), (3, 1, 0, true)] {
            for act in [Activation::Relu, Activation::Tanh] {
                let mut rng = Rng::new(7 + l as u64);
                let mut s = ParamStore::<f64>::new();
                let block = CaResConv::new(&mut s, "b", cfg(l, n_v, n_sigma, b, v_input, act), &mut rng).unwrap();
                perturb(&s, &mut rng);
                let x = Tensor::<f64>::randn(&[2, 2, 4, 4], &mut rng);
                let what = format!("{v_input:?} ({l}, {n_v}, {n_sigma}, {}) {act:?}", b as u8);
                let r = check_model(&s, std::slice::from_ref(&x), |xs| block.forward(&xs[0]), &opts).unwrap_or_else(|r| panic!("{what}: {r}"));
                assert_eq!(r.checked, s.num_scalars() + x.numel(), "{what}: every parameter and input element compared");
                if act == Activation::Tanh && l <= 3 {
                    check_model_order(&s, std::slice::from_ref(&x), |xs| block.forward(&xs[0]), 2, &opts).unwrap_or_else(|r| panic!("{what} order 2: {r}"));
                }
            }
        }
    }
    let inst = conv_gradcheck_instance();
    check_model_order(&inst.store, &inst.inputs, &inst.loss, 2, &GradcheckOptions::default()).unwrap();
}

/// Eq. 42's `v_i` reads `c` and the previous outputs, so its convolutions have more input
/// channels than the chain's, which read `w_{i−1}` alone.
#[test]
fn eq42_convolutions_read_the_input_and_the_chain_does_not() {
    let mut rng = Rng::new(1);
    let mut s = ParamStore::<f32>::new();
    let eq = CaResConv::new(&mut s, "e", CaResConvConfig { channels: 4, ..cfg(4, 2, 1, false, ConvVInput::Eq42, Activation::Relu) }, &mut rng).unwrap();
    let cin: Vec<usize> = eq.convs.iter().map(|c| c.weight.shape()[1]).collect();
    assert_eq!(cin, [4, 8, 12], "v_1 reads c; v_2 reads [c, w_1]; v_3 reads [c, w_2, w_1]");
    let chi_in: Vec<usize> = eq.chis.iter().map(|c| c.weight.shape()[1]).collect();
    assert_eq!(chi_in, [4, 8, 8, 8], "χ_i reads [c, w_{{i−1}}] (n_σ = 1)");
    let mut s = ParamStore::<f32>::new();
    let ch = CaResConv::new(&mut s, "c", CaResConvConfig { channels: 4, ..cfg(4, 2, 1, false, ConvVInput::Chain, Activation::Relu) }, &mut rng).unwrap();
    assert!(ch.convs.iter().all(|c| c.weight.shape()[1] == 4));
    // Changing c while keeping w_1 fixed is impossible from outside, so check the dependency
    // directly: with Eq. 42, zeroing the c-slice of v_2's kernel changes the output.
    let x = Tensor::<f32>::randn(&[1, 4, 5, 5], &mut rng);
    let before = eq.forward(&x).to_vec();
    eq.convs[1].weight.update(|w| {
        let per_out = 8 * 9;
        for o in 0..4 {
            for j in 0..4 * 9 {
                w[o * per_out + j] = 0.0;
            }
        }
    });
    assert_ne!(before, eq.forward(&x).to_vec());
}

/// The chain variant with `b = 1` and two sublayers is `relu(x + conv₂(relu(conv₁ x)))`,
/// computed here with chi-nn's plain convolutions.
#[test]
fn chain_block_with_b_1_is_the_resnet_block() {
    let mut rng = Rng::new(9);
    let mut s = ParamStore::<f64>::new();
    let block = CaResConv::new(&mut s, "r", CaResConvConfig { channels: 3, ..cfg(3, 1, 0, true, ConvVInput::Chain, Activation::Relu) }, &mut rng).unwrap();
    perturb(&s, &mut rng);
    assert!(block.chis.is_empty() && block.w0.is_empty());
    let x = Tensor::<f64>::randn(&[2, 3, 5, 5], &mut rng);
    let (got, maps) = block.forward_with_chi(&x);
    assert!(maps.is_empty());
    let want = x.add(&block.convs[1].forward(&block.convs[0].forward(&x).relu())).relu();
    for (a, b) in got.to_vec().iter().zip(want.to_vec()) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }
}

/// With every χ driven to 1 (large χ biases, zero χ kernels) the `b = 0` chain block equals its
/// `b = 1` ResNet computation whatever the defaults; with χ driven to 0 it returns `w_l0`.
#[test]
fn chain_block_gates_interpolate_between_resnet_and_the_defaults() {
    let mut rng = Rng::new(4);
    let mut s = ParamStore::<f64>::new();
    let block = CaResConv::new(&mut s, "g", CaResConvConfig { channels: 3, ..cfg(3, 1, 1, false, ConvVInput::Chain, Activation::Relu) }, &mut rng).unwrap();
    perturb(&s, &mut rng);
    let x = Tensor::<f64>::randn(&[2, 3, 4, 4], &mut rng);
    for (bias, check_defaults) in [(60.0, false), (-60.0, true)] {
        for chi in &block.chis {
            chi.weight.set_values(vec![0.0; chi.weight.numel()]);
            chi.bias.as_ref().unwrap().set_values(vec![bias]);
        }
        let got = block.forward(&x).to_vec();
        let want = if check_defaults {
            let w0 = block.w0[2].to_vec();
            (0..got.len()).map(|i| w0[(i / 16) % 3]).collect::<Vec<_>>()
        } else {
            x.add(&block.convs[1].forward(&block.convs[0].forward(&x).relu())).relu().to_vec()
        };
        for (a, b) in got.iter().zip(&want) {
            assert!((a - b).abs() < 1e-9, "bias {bias}: {a} vs {b}");
        }
    }
}

#[test]
fn bad_tuples_are_errors_not_panics() {
    let mut rng = Rng::new(0);
    let mut s = ParamStore::<f32>::new();
    for (c, what) in [
        (cfg(1, 1, 1, false, ConvVInput::Eq42, Activation::Relu), "l ≥ 2"),
        (CaResConvConfig { kernel: 4, ..cfg(2, 1, 1, false, ConvVInput::Eq42, Activation::Relu) }, "odd"),
        (cfg(2, 0, 1, false, ConvVInput::Eq42, Activation::Relu), "n_v"),
        (CaResConvConfig { channels: 0, ..cfg(2, 1, 1, false, ConvVInput::Eq42, Activation::Relu) }, "channels"),
    ] {
        let e = CaResConv::new(&mut s, "x", c, &mut rng).err().expect("an error");
        assert!(e.contains(what), "{e}");
    }
    assert!(CaCnnStack::new(&mut s, "s", 1, 2, 0, 3, Activation::Relu, &mut rng).is_err());
    assert!(CaCnnStack::new(&mut s, "s", 1, 2, 2, 4, Activation::Relu, &mut rng).is_err());
}

/// The stacked CA-CNN, order 1 with relu and tanh, order 2 with tanh; its σ-maps are one per
/// layer, in (0, 1), at full resolution.
#[test]
fn stacked_ca_cnn_passes_float64_gradchecks_and_keeps_the_size() {
    let opts = GradcheckOptions::default();
    for act in [Activation::Relu, Activation::Tanh] {
        let mut rng = Rng::new(21);
        let mut s = ParamStore::<f64>::new();
        let stack = CaCnnStack::new(&mut s, "s", 1, 2, 3, 3, act, &mut rng).unwrap();
        perturb(&s, &mut rng);
        let x = Tensor::<f64>::randn(&[2, 1, 5, 5], &mut rng);
        let r = check_model(&s, std::slice::from_ref(&x), |xs| stack.forward(&xs[0]), &opts).unwrap_or_else(|r| panic!("{act:?}: {r}"));
        assert_eq!(r.checked, s.num_scalars() + x.numel());
        let (out, maps) = stack.forward_with_maps(&x);
        assert_eq!(out.shape(), [2, 2, 5, 5]);
        assert_eq!(maps.len(), 3);
        assert!(maps.iter().all(|m| m.shape() == [2, 1, 5, 5] && m.to_vec().iter().all(|v| *v > 0.0 && *v < 1.0)));
    }
    let inst = stack_gradcheck_instance();
    check_model_order(&inst.store, &inst.inputs, &inst.loss, 2, &opts).unwrap();
}
