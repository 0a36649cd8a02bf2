//! The library used as a demanding PyTorch user would, including by mistake: tied and
//! same-named parameters, sparse gradients with weight decay, out-of-range learning rates,
//! schedules, clipping norms and step counts, damaged weight files, checkpoints the loader
//! would refuse, and layer settings that give NaN. Each is an exact update, a refusal naming
//! the setting, or an error naming the file — never a silently wrong update.

use chi_autodiff::Tensor;
use chi_nn::checkpoint::{self, CheckpointMeta};
use chi_nn::layers::{Conv1dText, Embedding, LayerNorm, Linear};
use chi_nn::module::{visit_child, Layout};
use chi_nn::optim::{Grads, OptimConfig, Optimizer};
use chi_nn::schedule::LrSchedule;
use chi_nn::{Param, Parameterized, TensorDataset};
use std::path::PathBuf;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chi-nn-misuse-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn panic_of(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let e = std::panic::catch_unwind(f).expect_err("should panic");
    e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

/// An embedding whose table is also the output layer's weight (weight tying).
struct Tied {
    emb: Embedding<f64>,
    out_w: Param<f64>,
}

impl Parameterized<f64> for Tied {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<f64>, Layout)) {
        visit_child("emb", &self.emb, f);
        f("out.weight", &self.out_w, Layout::Native);
    }
}

/// A tied parameter, listed once per path, is updated once per step (it moved by twice the
/// step, and Adam counted two steps).
#[test]
fn a_tied_parameter_is_updated_once() {
    let emb = Embedding::<f64>::new(3, 2);
    let m = Tied { out_w: emb.weight.clone(), emb };
    m.assign_parameter_names();
    assert_eq!(m.parameters().len(), 2);
    let before = m.out_w.to_vec();
    m.emb.forward(&[0, 1]).matmul(&m.out_w.get().t()).cross_entropy(&[1, 2]).backward();
    let g = m.out_w.get().grad().unwrap().to_vec();
    let mut opt = Optimizer::<f64>::new(OptimConfig::sgd(0.1));
    opt.step_params(&m.parameters());
    for ((a, b), g) in m.out_w.to_vec().iter().zip(&before).zip(&g) {
        assert!((a - (b - 0.1 * g)).abs() < 1e-15, "{a} vs {}", b - 0.1 * g);
    }
    assert_eq!(opt.param_state(&m.out_w.name()).unwrap().step, 1);
}

struct TwoLayers {
    a: Linear<f64>,
    b: Linear<f64>,
}

impl Parameterized<f64> for TwoLayers {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Param<f64>, Layout)) {
        visit_child("a", &self.a, f);
        visit_child("b", &self.b, f);
    }
}

/// Two different parameters of one name would share the optimiser's state (moments, step
/// counts, even across shapes): refused, naming the name and both shapes; named by path they
/// train.
#[test]
fn two_parameters_of_one_name_are_refused_by_the_optimiser() {
    let m = TwoLayers { a: Linear::new(3, 4), b: Linear::new(4, 2) };
    let x = Tensor::<f64>::ones(&[2, 3]);
    m.b.forward(&m.a.forward(&x).tanh()).square().sum().backward();
    let params = m.parameters();
    let e = panic_of(std::panic::AssertUnwindSafe(|| Optimizer::<f64>::new(OptimConfig::adam(0.1)).step_params(&params)));
    assert!(e.contains("two different parameters are named \"weight\"") && e.contains("[3, 4]") && e.contains("[4, 2]"), "{e}");
    m.assign_parameter_names();
    let mut opt = Optimizer::<f64>::new(OptimConfig::adam(0.1));
    opt.step_params(&m.parameters());
    assert_eq!(opt.param_state("b.weight").unwrap().step, 1);
}

/// Adagrad's weight decay reaches every row of a table, touched or not: a sparse gradient
/// with weight decay updates as the dense one does (untouched rows kept their values, though
/// the docs promise the dense update). Adam and AdamW stay lazy, as documented: untouched rows
/// neither move nor decay.
#[test]
fn sparse_gradients_with_weight_decay_update_as_documented() {
    let run = |cfg: &OptimConfig, sparse: bool| {
        let p = Param::new("emb", Tensor::<f64>::from_vec(vec![1., 2., 3., 4., 5., 6.], &[3, 2]));
        if sparse {
            let _ = p.get().sparse_grad();
        }
        let mut opt = Optimizer::<f64>::new(cfg.clone());
        for _ in 0..3 {
            p.zero_grad();
            p.get().embedding(&[0]).sum().backward();
            opt.step_params(std::slice::from_ref(&p));
        }
        p.to_vec()
    };
    let adagrad = OptimConfig { weight_decay: Some(0.1), ..OptimConfig::adagrad(0.5) };
    assert_eq!(run(&adagrad, true), run(&adagrad, false));
    for cfg in [OptimConfig { weight_decay: Some(0.1), ..OptimConfig::adam(0.05) }, OptimConfig { weight_decay: Some(0.1), ..OptimConfig::adamw(0.05) }] {
        assert_eq!(run(&cfg, true)[2..], [3., 4., 5., 6.], "{:?}", cfg.name);
    }
}

/// A learning rate, clipping norm or step count out of range is refused where it is given.
#[test]
fn learning_rates_clipping_norms_and_step_counts_out_of_range_are_refused() {
    let e = panic_of(|| Optimizer::<f64>::new(OptimConfig::sgd(0.1)).set_lr(f64::NAN));
    assert!(e.contains("set_lr: learning rate NaN must be finite and >= 0"), "{e}");
    let p = Param::new("w", Tensor::<f64>::from_vec(vec![3.0, 4.0], &[2]));
    p.get().square().sum().mul_scalar(0.5).backward();
    for bad in [-1.0, f64::NAN] {
        let mut g = Grads::collect(std::slice::from_ref(&p));
        let e = panic_of(std::panic::AssertUnwindSafe(|| {
            g.clip_global_norm(bad);
        }));
        assert!(e.contains("max_norm") && e.contains("finite and >= 0"), "{e}");
    }
    // A stored step count of 0 or past 2^53 (u64::MAX wrapped to 0: a bias correction of 0).
    let mut opt = Optimizer::<f64>::new(OptimConfig::adam(0.1));
    opt.step_params(std::slice::from_ref(&p));
    for step in [0, u64::MAX] {
        let mut st = opt.state();
        st.params.get_mut("w").unwrap().step = step;
        let e = opt.clone().load_state(st, std::slice::from_ref(&p)).unwrap_err().to_string();
        assert!(e.contains("step count") && e.contains("1 to 2^53"), "{e}");
    }
    // Adam's bias correction past 2^31 steps is that of the step, not of a wrapped i32.
    let mut st = opt.state();
    st.params.get_mut("w").unwrap().step = 1 << 31;
    opt.load_state(st, std::slice::from_ref(&p)).unwrap();
    let before = p.to_vec();
    opt.step_params(std::slice::from_ref(&p));
    assert!(p.to_vec().iter().zip(&before).all(|(a, b)| a.is_finite() && a != b), "{:?} → {:?}", before, p.to_vec());
}

/// Schedules are checked by the library as by the command line: at parse, and when a trainer
/// is given one; a step decay far along stays finite.
#[test]
fn schedules_out_of_range_are_refused_by_the_library() {
    for (text, why) in [
        ("step:0:0.5", "step EVERY = 0 (must be at least 1 step)"),
        ("step:10:-1", "gamma = -1 (must be finite and >= 0)"),
        ("exp:nan", "gamma = NaN"),
        ("exp:1e400", "gamma = inf"),
        ("cosine:100:-1", "min_lr = -1"),
        ("warmup:5,cosine:0", "cosine TOTAL = 0"),
    ] {
        let e = LrSchedule::parse(text).unwrap_err().to_string();
        assert!(e.contains(why), "{text}: {e}");
    }
    let e = LrSchedule::Cosine { total_steps: 100, min_lr: 5.0 }.validate(0.1).unwrap_err().to_string();
    assert!(e.contains("cosine MIN_LR = 5 (above the learning rate 0.1 it decays from)"), "{e}");
    assert!(LrSchedule::parse("cosine:100:0.01").is_ok());
    let lr = LrSchedule::Step { every: 1, gamma: 0.5 }.lr_at(1.0, 1 << 31);
    assert!(lr.is_finite() && lr >= 0.0, "{lr}");
}

/// Values of a weights file that are not finite in the model's type are refused, naming the
/// file: a damaged byte that makes a weight NaN (it loaded with `Ok`), an `F64` value beyond
/// `f32`'s range.
#[test]
fn damaged_or_overflowing_weight_files_are_refused() {
    let d = dir("weights");
    let path = d.join("lin.safetensors");
    let l = Linear::<f32>::new(3, 2);
    // Every value 1.5 (`00 00 c0 3f`): flipping bit 6 of the file's last byte makes one NaN.
    for p in l.parameters() {
        p.set_values(vec![1.5; p.numel()]);
    }
    l.save(&path).unwrap();
    let l2 = Linear::<f32>::new(3, 2);
    l2.load(&path).unwrap();
    assert_eq!(l2.parameters()[0].to_vec(), l.parameters()[0].to_vec());
    let mut b = std::fs::read(&path).unwrap();
    let n = b.len();
    b[n - 1] ^= 0x40;
    std::fs::write(&path, &b).unwrap();
    let e = Linear::<f32>::new(3, 2).load(&path).unwrap_err().to_string();
    assert!(e.contains("lin.safetensors") && e.contains("must be finite"), "{e}");
    // An f64 file of 1e300 into an f32 model.
    let big = Linear::<f64>::new(3, 2);
    big.parameters()[0].set_values(vec![1e300; 6]);
    let p64 = d.join("big.safetensors");
    big.save(&p64).unwrap();
    let e = Linear::<f32>::new(3, 2).load(&p64).unwrap_err().to_string();
    assert!(e.contains("big.safetensors") && e.contains("1e300 does not fit f32") && e.contains("must be finite"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A checkpoint whose optimiser has made more updates than `CheckpointMeta::step` is refused
/// when written, as the loader would refuse it.
#[test]
fn a_checkpoint_the_loader_would_refuse_is_not_written() {
    let d = dir("ckpt");
    let l = Linear::<f64>::new(3, 2);
    l.assign_parameter_names();
    let mut opt = Optimizer::<f64>::new(OptimConfig::adam(0.1));
    for _ in 0..3 {
        l.zero_grad();
        l.forward(&Tensor::ones(&[2, 3])).square().sum().backward();
        opt.step_params(&l.parameters());
    }
    let path = d.join("c.ckpt.safetensors");
    let e = checkpoint::save_checkpoint(&path, &l.parameters(), &opt, &CheckpointMeta::default()).unwrap_err().to_string();
    assert!(e.contains("3 updates") && e.contains("CheckpointMeta::step 0"), "{e}");
    assert!(!path.exists());
    checkpoint::save_checkpoint(&path, &l.parameters(), &opt, &CheckpointMeta { step: 3, ..CheckpointMeta::default() }).unwrap();
    checkpoint::load_checkpoint(&path, &l.parameters(), &mut Optimizer::new(OptimConfig::adam(0.1))).unwrap();
    let _ = std::fs::remove_dir_all(&d);
}

/// Layer settings that give NaN or meaningless layers, parameters past the size limit and
/// overflowing example shapes are refused by name before anything is allocated.
#[test]
fn layer_settings_and_sizes_out_of_range_are_refused() {
    for eps in [f64::NAN, -1.0] {
        let e = panic_of(move || drop(LayerNorm::<f64>::new(3).eps(eps)));
        assert!(e.contains("LayerNorm: eps") && e.contains("finite and > 0"), "{e}");
    }
    let e = panic_of(|| drop(Conv1dText::<f64>::new(4, &[0], 5)));
    assert!(e.contains("Conv1dText: filter widths [0] hold 0"), "{e}");
    let e = panic_of(|| drop(Linear::<f32>::new(1 << 20, 1 << 20)));
    assert!(e.contains("parameter") && e.contains("1048576 × 1048576"), "{e}");
    let e = TensorDataset::<f32, usize>::new(vec![], &[1 << 32, 1 << 32], vec![0]).unwrap_err().to_string();
    assert!(e.contains("TensorDataset features"), "{e}");
}

/// Misuse of the recurrent, attention and bag layers names the layer and the argument (the
/// messages named `index out of bounds`, an internal `xp`, `gemm_batched` or `scatter_rows`).
#[test]
fn layer_misuse_names_the_layer_and_the_argument() {
    use chi_autodiff::Rng;
    use chi_nn::layers::{run_sequence_batch, Attention, BagMode, DotScore, EmbeddingBag, LstmCell};
    use chi_nn::ParamStore;
    let mut s = ParamStore::<f64>::new();
    let mut rng = Rng::new(1);
    let lstm = LstmCell::new(&mut s, "l", "g", 3, 5, false, &mut rng);
    let xs = Tensor::<f64>::zeros(&[2, 3, 3]);
    let one = [Tensor::zeros(&[2, 5])];
    let e = panic_of(std::panic::AssertUnwindSafe(|| drop(run_sequence_batch(&lstm, &xs, Some(&one), None))));
    assert!(e.contains("initial state of the lstm cell must be [[2, 5], [2, 5]]") && e.contains("got [[2, 5]]"), "{e}");
    let wide = [Tensor::zeros(&[2, 4]), Tensor::zeros(&[2, 4])];
    let e = panic_of(std::panic::AssertUnwindSafe(|| drop(run_sequence_batch(&lstm, &xs, Some(&wide), None))));
    assert!(e.contains("initial state of the lstm cell") && e.contains("got [[2, 4], [2, 4]]"), "{e}");
    let e = panic_of(std::panic::AssertUnwindSafe(|| drop(run_sequence_batch(&lstm, &Tensor::zeros(&[2, 3, 5]), None, None))));
    assert!(e.contains("has 5 features per step, the lstm cell reads 3"), "{e}");
    let att = Attention::<f64>::new(Box::new(DotScore));
    let q = Tensor::<f64>::zeros(&[2, 3]);
    let e = panic_of(std::panic::AssertUnwindSafe(|| drop(att.forward(&q, &Tensor::zeros(&[2, 4, 3]), &Tensor::zeros(&[2, 5, 3]), None))));
    assert!(e.contains("Attention: keys [2, 4, 3] and values [2, 5, 3]"), "{e}");
    let e = panic_of(std::panic::AssertUnwindSafe(|| drop(att.forward(&q, &Tensor::zeros(&[2, 0, 3]), &Tensor::zeros(&[2, 0, 3]), None))));
    assert!(e.contains("Attention: no keys"), "{e}");
    let bag = EmbeddingBag::<f64>::new(&mut s, "bag", "g", 7, 3, BagMode::Sum, false, &mut rng);
    let e = panic_of(std::panic::AssertUnwindSafe(|| drop(bag.forward_offsets(&[1, 2], &[]))));
    assert!(e.contains("EmbeddingBag: 2 ids but no offsets"), "{e}");
    let e = panic_of(std::panic::AssertUnwindSafe(|| drop(bag.forward_offsets(&[0, 1], &[0, 9]))));
    assert!(e.contains("offset 9 in [0, 9] is past the end of the 2 ids"), "{e}");
}

/// A schedule whose rate overflows (`exp:1e300`) ends training with an error naming the step,
/// before the optimiser takes the infinite rate.
#[test]
fn a_schedule_that_overflows_is_a_training_error() {
    use chi_nn::trainer::{TrainError, Trainer};
    let mut store = chi_nn::ParamStore::<f64>::new();
    let w = store.add("w", "g", Tensor::from_vec(vec![1.0], &[1]));
    let mut opt = Optimizer::<f64>::new(OptimConfig::sgd(0.1));
    let r = Trainer::new(&store, &mut opt).steps(5).schedule(LrSchedule::parse("exp:1e300").unwrap()).fit(std::iter::repeat(()), |()| w.get().square().sum());
    match r {
        Err(e @ TrainError::NonFiniteLr { step: 3, .. }) => assert!(e.to_string().contains("overflows"), "{e}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}
