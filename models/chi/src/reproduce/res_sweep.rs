//! CA-RES sweeps with statistics over seeds ([CAML] §3.5.2, Eq. 42; §4.7):
//!
//! * `ca-res-sweep` — convolutional CA-RES blocks ([`CaResConv`]) on Fashion-MNIST (the
//!   CIFAR-10 stand-in; 60,000 train / the full 10,000 test images) in `ca-res-fashion`'s
//!   network with a smaller hidden layer (stem convolution 1 → 16 channels, 3×3, stride 2 → one
//!   block at 14×14×16 → hidden 128 (the paper: 512; reduced for time) → softmax; Adagrad lr
//!   0.01, batch 100): the ResNet block; the chain block of `ca-res-fashion` (middle convolutions
//!   read only `w_{i−1}`, tuple (3, 1, 1, 0)); Eq. 42 exactly (every `v_i` also reads the input
//!   `c`) with the tuples (2, 1, 1, 0), (3, 1, 1, 0) and (3, 2, 2, 0); and the kernel sweep of
//!   Fig. 20(b), k ∈ {3, 5} for Eq. 42 (3, 1, 1, 0) (k = 7 costs 5× k = 3 and did not fit). The
//!   paper (Fig. 20): more sublayers help; a bigger kernel does not.
//! * `ca-res-tabular` — the dense [`CaRes`] of Eq. 42 on a tabular task: the 49 block means
//!   (4×4 blocks) of each Fashion-MNIST image — the construction of the UCI "optdigits"
//!   features — standardised with training statistics; stem 49 → 32 (ReLU) → block → softmax,
//!   with blocks MLP (two dense layers, no skip), ResNet `(2, 1, −, 1)`, CA-RES (2, 1, 1, 0),
//!   (3, 1, 1, 0) and (3, 2, 2, 0); Adagrad lr 0.01, batch 100, 3,000 steps, 10 seeds.
//!
//! Training lengths (300 steps for the conv sweep) are chosen so each experiment ends in about 25
//! minutes on one core; the paper trains for far longer on CIFAR-10, so its figures are compared
//! as orderings, judged by paired t-tests over seeds ([`super::ca_compare`]).

use super::ca_compare::{push_claim, summaries};
use super::cnn_sweep::{fashion, fit, training, Fashion, Training, TRAINING_OPTIONS};
use super::options::{num, parsed, OptionSpec};
use super::res_fashion::accuracy_unit;
use super::util::{mean_curve, write_curves};
use super::{ranks, Ctx, Report, Row};
use chi_ca::res::{CaResConv, CaResConvConfig, ConvVInput};
use chi_ca::{Activation, CaRes, CaResConfig, Dense};
use chi_nn::data::ImageSet;
use chi_nn::layers::{Conv2d, Linear};
use chi_nn::optim::{OptimConfig, Optimizer};
use chi_nn::params::ParamStore;
use chi_nn::schedule::BlockCoordinate;
use chi_autodiff::{no_grad, Rng, Tensor};

const C: usize = 16;
/// The mini-batch of the tabular runs.
pub(super) const TABULAR_BATCH: usize = 100;

/// The options of `ca-res-sweep`.
pub const CONV_OPTIONS: &[OptionSpec] = &[
    OptionSpec { key: "kernels", help: "kernel sides of the Eq. 42 (3,1,1,0) block besides 3, e.g. 5,7 (odd, 3 to 13; default 5; Fig. 20(b))" },
    TRAINING_OPTIONS[0],
    TRAINING_OPTIONS[1],
    TRAINING_OPTIONS[2],
];

/// One conv variant: label, what `v_i` reads, `(l, n_v, n_σ, b)`, kernel.
#[derive(Clone, Debug)]
struct ConvVariant {
    label: String,
    v_input: ConvVInput,
    tuple: (usize, usize, usize, bool),
    kernel: usize,
}

fn conv_variants(quick: bool) -> Vec<ConvVariant> {
    let v = |label: &str, v_input, tuple, kernel| ConvVariant { label: label.to_string(), v_input, tuple, kernel };
    let mut all = vec![
        v("ResNet block (chain, b = 1)", ConvVInput::Chain, (3, 1, 0, true), 3),
        v("CA-RES chain (3,1,1,0)", ConvVInput::Chain, (3, 1, 1, false), 3),
        v("CA-RES Eq.42 (3,1,1,0)", ConvVInput::Eq42, (3, 1, 1, false), 3),
        v("CA-RES Eq.42 (2,1,1,0)", ConvVInput::Eq42, (2, 1, 1, false), 3),
        v("CA-RES Eq.42 (3,2,2,0)", ConvVInput::Eq42, (3, 2, 2, false), 3),
    ];
    if quick {
        all.truncate(3);
    }
    all
}

struct ConvNet {
    store: ParamStore<f32>,
    stem: Conv2d<f32>,
    block: CaResConv<f32>,
    hidden: Linear<f32>,
    out: Linear<f32>,
}

impl ConvNet {
    fn new(v: &ConvVariant, width: usize, rng: &mut Rng) -> Result<ConvNet, String> {
        let mut store = ParamStore::new();
        let stem = Conv2d::in_store(&mut store, "stem", "emb", 1, C, 3, 2, 1, true, rng);
        let (l, n_v, n_sigma, b) = v.tuple;
        let cfg = CaResConvConfig { l, n_v, n_sigma, b, kernel: v.kernel, channels: C, v_input: v.v_input, act: Activation::Relu };
        let block = CaResConv::new(&mut store, "block", cfg, rng)?;
        let hidden = Linear::in_store(&mut store, "hidden", "head", C * 14 * 14, width, true, rng);
        let out = Linear::in_store(&mut store, "out", "head", width, 10, true, rng);
        Ok(ConvNet { store, stem, block, hidden, out })
    }
    fn logits(&self, x: &Tensor<f32>) -> Tensor<f32> {
        let h = self.block.forward(&self.stem.forward(x).relu());
        let n = h.dim(0);
        self.out.forward(&self.hidden.forward(&h.reshape(&[n, h.numel() / n])).relu())
    }
}

/// Runs `ctx.runs` seeded units of one model; returns (accuracies, mean curve, parameters).
fn seeded(ctx: &Ctx, key: &str, config: &str, train_one: &dyn Fn(u64) -> Result<(f64, Vec<(f64, f64)>, usize), String>) -> Result<(Vec<f64>, Vec<(f64, f64)>, usize), String> {
    let (mut accs, mut cs, mut params) = (Vec::new(), Vec::new(), 0);
    for r in 0..ctx.runs {
        let seed = ctx.run_seed(r);
        let (a, c, p) = accuracy_unit(ctx, &format!("{key}-run{r}"), &format!("{config} seed={seed}"), || train_one(seed))?;
        accs.push(a);
        cs.push(c);
        params = p;
    }
    Ok((accs, mean_curve(&cs), params))
}

/// `ca-res-sweep`.
pub fn run_conv(ctx: &Ctx) -> Result<Report, String> {
    // Options are checked before the data is read, so a bad value is not reported as missing data.
    let Training { steps, lr, hidden } = training(ctx, if ctx.quick { 30 } else { 300 })?;
    // The kernel sweep of Fig. 20(b): the Eq. 42 (3,1,1,0) block at other kernel sides (k = 5
    // in a full run, none under --quick).
    let default_kernels = if ctx.quick { vec![] } else { vec![5] };
    let mut kernels = ctx.list_option("kernels", default_kernels, "odd kernel sides from 3 to 13", |x| parsed(x, |&k: &usize| (3..=13).contains(&k) && k % 2 == 1))?;
    let d: Fashion = fashion(ctx.quick)?;
    let mut rep = Report::default();
    rep.data.push(format!("{} (stand-in for CIFAR-10, not reachable here)", d.version));
    let m = format!("Fashion-MNIST test accuracy ({} images)", d.te.len());
    let mut variants = conv_variants(ctx.quick);
    let eq = "CA-RES Eq.42 (3,1,1,0)";
    kernels.retain(|&k| k != 3);
    kernels.sort_unstable();
    kernels.dedup();
    variants.extend(kernels.iter().map(|&k| ConvVariant { label: format!("{eq} k={k}"), v_input: ConvVInput::Eq42, tuple: (3, 1, 1, false), kernel: k }));
    ctx.plan_units(variants.len() * ctx.runs);
    let mut curves = Vec::new();
    for v in &variants {
        let (l, n_v, n_s, b) = v.tuple;
        let config = format!("data=fashion {}/{}; v_input={:?} l={l} n_v={n_v} n_sigma={n_s} b={b} k={} channels={C} hidden={hidden} steps={steps} adagrad lr={} batch=100", d.tr.len(), d.te.len(), v.v_input, v.kernel, num(lr));
        let key = v.label.to_lowercase().replace([' ', ',', '(', ')', '='], "_");
        let (accs, curve, params) = seeded(ctx, &key, &config, &|seed| {
            let mut rng = Rng::new(seed);
            let net = ConvNet::new(v, hidden, &mut rng)?;
            let (a, c) = fit(ctx, &format!("{} seed {seed}", v.label), &net.store, &|x| net.logits(x), BlockCoordinate::default(), &d, &d.train, &d.test, steps, lr, &mut rng)?;
            Ok((a, c, net.store.num_scalars()))
        })?;
        ctx.log(&format!("{}: {:.4}", v.label, accs.iter().sum::<f64>() / accs.len() as f64));
        rep.rows.push(Row::new(&m, &v.label, None, accs));
        rep.rows.push(Row::new("parameters", &v.label, None, vec![params as f64]));
        curves.push((v.label.clone(), curve));
    }
    rep.files.extend(write_curves(ctx, "accuracy", "Fashion-MNIST: test-probe accuracy over steps (mean of runs)", "step", "accuracy", false, &curves)?);
    summaries(&mut rep, &m);
    push_claim(&mut rep, &m, eq, "CA-RES chain (3,1,1,0)", None);
    push_claim(&mut rep, &m, eq, "ResNet block (chain, b = 1)", None);
    push_claim(&mut rep, &m, "CA-RES chain (3,1,1,0)", "ResNet block (chain, b = 1)", None);
    push_claim(&mut rep, &m, eq, "CA-RES Eq.42 (2,1,1,0)", Some("paper Fig. 20(c): more sublayers help"));
    push_claim(&mut rep, &m, "CA-RES Eq.42 (3,2,2,0)", eq, None);
    for &k in &kernels {
        push_claim(&mut rep, &m, &format!("{eq} k={k}"), eq, Some("the opposite of paper Fig. 20(b), which finds that a bigger kernel does not help"));
    }
    rep.config = vec![
        ("steps".into(), steps.to_string()),
        ("network".into(), format!("stem conv 1→{C} 3×3 stride 2 + ReLU → one block at 14×14×{C} → hidden {hidden} ReLU → softmax")),
        ("optimizer".into(), format!("adagrad lr {}, batch 100", num(lr))),
    ];
    Ok(rep)
}

/// The 49 means of the 4×4 blocks of every 28×28 image, standardised with the mean and sd of
/// the training images `tr` (feature by feature).
fn block_features(train: &ImageSet, test: &ImageSet, tr: &[usize]) -> Result<(Vec<f32>, Vec<f32>), String> {
    if train.rows != 28 || train.cols != 28 || test.rows != 28 || test.cols != 28 {
        return Err(format!("ca-res-tabular: expected 28×28 images, got {}×{} and {}×{}", train.rows, train.cols, test.rows, test.cols));
    }
    let feats = |set: &ImageSet| -> Vec<f32> {
        let mut v = Vec::with_capacity(set.n * 49);
        for i in 0..set.n {
            let img = &set.pixels[i * 784..(i + 1) * 784];
            for by in 0..7 {
                for bx in 0..7 {
                    let s: f32 = (0..4).flat_map(|y| (0..4).map(move |x| (y, x))).map(|(y, x)| img[(4 * by + y) * 28 + 4 * bx + x]).sum();
                    v.push(s / 16.0);
                }
            }
        }
        v
    };
    let (mut a, mut b) = (feats(train), feats(test));
    for j in 0..49 {
        let n = tr.len() as f64;
        let mean = tr.iter().map(|&i| a[i * 49 + j] as f64).sum::<f64>() / n;
        let sd = (tr.iter().map(|&i| (a[i * 49 + j] as f64 - mean).powi(2)).sum::<f64>() / n).sqrt().max(1e-6);
        for x in a.chunks_mut(49).chain(b.chunks_mut(49)) {
            x[j] = ((x[j] as f64 - mean) / sd) as f32;
        }
    }
    Ok((a, b))
}

/// Dense blocks of `ca-res-tabular`.
enum DenseBlock {
    Mlp(Dense<f32>, Dense<f32>),
    Res(CaRes<f32>),
}

const WIDTH: usize = 32;

fn dense_variants() -> Vec<(&'static str, Option<CaResConfig>)> {
    let net = || vec![(WIDTH, Activation::Relu), (WIDTH, Activation::Identity)];
    let cfg = |l, n_v, n_sigma, b| Some(CaResConfig { l, n_v, n_sigma, b, v_net: net(), last_sum: Some(Activation::Relu) });
    vec![
        ("MLP (2 dense layers, no skip)", None),
        ("ResNet (2,1,–,1)", cfg(2, 1, 0, true)),
        ("CA-RES (2,1,1,0)", cfg(2, 1, 1, false)),
        ("CA-RES (3,1,1,0)", cfg(3, 1, 1, false)),
        ("CA-RES (3,2,2,0)", cfg(3, 2, 2, false)),
    ]
}

/// `ca-res-tabular`.
pub fn run_tabular(ctx: &Ctx) -> Result<Report, String> {
    let d = fashion(ctx.quick)?;
    let (ftr, fte) = block_features(&d.train, &d.test, &d.tr)?;
    let mut rep = Report::default();
    rep.data.push(format!("{}; 49 standardised 4×4-block means per image", d.version));
    let steps = if ctx.quick { 100 } else { 3000 };
    let m = format!("block-feature test accuracy ({} images)", d.te.len());
    let variants = dense_variants();
    ctx.plan_units(variants.len() * ctx.runs);
    let rows_of = |f: &[f32], idx: &[usize]| -> Tensor<f32> { Tensor::from_vec(idx.iter().flat_map(|&i| f[i * 49..(i + 1) * 49].iter().copied()).collect(), &[idx.len(), 49]) };
    for (label, cfg) in &variants {
        let config = format!("data=fashion blocks {}/{}; block={label} cfg={cfg:?} width={WIDTH} steps={steps} adagrad lr=0.01 batch=100", d.tr.len(), d.te.len());
        let key = label.to_lowercase().replace([' ', ',', '(', ')', '–'], "_");
        let (accs, curve, params) = seeded(ctx, &key, &config, &|seed| {
            let mut rng = Rng::new(seed);
            let mut store = ParamStore::<f32>::new();
            let stem = Dense::new(&mut store, "stem", "emb", 49, WIDTH, true, Activation::Relu, &mut rng);
            let block = match cfg {
                None => DenseBlock::Mlp(
                    Dense::new(&mut store, "mlp0", "emb", WIDTH, WIDTH, true, Activation::Relu, &mut rng),
                    Dense::new(&mut store, "mlp1", "emb", WIDTH, WIDTH, true, Activation::Relu, &mut rng),
                ),
                Some(c) => DenseBlock::Res(CaRes::new(&mut store, "block", WIDTH, c.clone(), &mut rng)),
            };
            let head = Dense::new(&mut store, "head", "head", WIDTH, 10, true, Activation::Identity, &mut rng);
            let logits = |x: &Tensor<f32>| {
                let h = stem.forward(x);
                let h = match &block {
                    DenseBlock::Mlp(a, b) => b.forward(&a.forward(&h)),
                    DenseBlock::Res(r) => r.forward(&h),
                };
                head.forward(&h)
            };
            let accuracy = |idx: &[usize]| {
                no_grad(|| {
                    let pred = logits(&rows_of(&fte, idx)).argmax_axis(1);
                    pred.iter().zip(idx).filter(|(p, &i)| **p == d.test.labels[i] as usize).count() as f64 / idx.len() as f64
                })
            };
            let probe: Vec<usize> = d.te.iter().step_by((d.te.len() / 1000).max(1)).copied().collect();
            let mut opt = Optimizer::new(OptimConfig::adagrad(0.01));
            let mut order = d.tr.clone();
            let mut pos = order.len();
            let batches = std::iter::from_fn(|| {
                if pos + TABULAR_BATCH > order.len() {
                    rng.shuffle(&mut order);
                    pos = 0;
                }
                let b = ctx.shard(&order[pos..pos + TABULAR_BATCH]);
                pos += TABULAR_BATCH;
                Some((rows_of(&ftr, b), b.iter().map(|&i| d.train.labels[i] as usize).collect::<Vec<_>>()))
            });
            let bar = ctx.bar(&format!("{label} seed {seed}"), steps);
            let curve = ctx.trainer(&store, &mut opt)
                .steps(steps as u64)
                .eval_every((steps / 10) as u64)
                .evaluate(|_| super::util::metric("accuracy", accuracy(&probe)))
                .on_step_end(|info| bar.tick(info.step as usize, info.loss))
                .fit(batches, |(x, y)| ranks::step(logits(&x).cross_entropy(&y), y.len()))?
                .eval_curve("accuracy");
            bar.finish();
            Ok((accuracy(&d.te), curve, store.num_scalars()))
        })?;
        ctx.log(&format!("{label}: {:.4}", accs.iter().sum::<f64>() / accs.len() as f64));
        rep.rows.push(Row::new(&m, label, None, accs));
        rep.rows.push(Row::new("parameters", label, None, vec![params as f64]));
        let _ = curve;
    }
    summaries(&mut rep, &m);
    push_claim(&mut rep, &m, "CA-RES (2,1,1,0)", "ResNet (2,1,–,1)", None);
    push_claim(&mut rep, &m, "ResNet (2,1,–,1)", "MLP (2 dense layers, no skip)", None);
    push_claim(&mut rep, &m, "CA-RES (3,1,1,0)", "CA-RES (2,1,1,0)", Some("paper §4.7.2: more sublayers help"));
    push_claim(&mut rep, &m, "CA-RES (3,2,2,0)", "CA-RES (3,1,1,0)", None);
    rep.config = vec![
        ("steps".into(), steps.to_string()),
        ("network".into(), format!("49 features → dense {WIDTH} ReLU → block (width {WIDTH}, v nets {WIDTH} ReLU → {WIDTH}) → softmax")),
        ("optimizer".into(), "adagrad lr 0.01, batch 100".into()),
    ];
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_features_are_standardised_block_means() {
        let mut pixels = vec![0f32; 3 * 784];
        for i in 0..3 {
            for p in 0..784 {
                pixels[i * 784 + p] = if (p / 28) < 4 && (p % 28) < 4 { i as f32 } else { 0.5 };
            }
        }
        let set = ImageSet { n: 3, rows: 28, cols: 28, pixels, labels: vec![0, 1, 2] };
        let (a, _) = block_features(&set, &set, &[0, 1, 2]).unwrap();
        // Feature 0 is the top-left block mean: 0, 1, 2 → standardised −1.2247, 0, 1.2247.
        assert!((a[0] + 1.224_744_9).abs() < 1e-5 && a[49].abs() < 1e-6 && (a[98] - 1.224_744_9).abs() < 1e-5);
        // A constant feature becomes 0, not NaN.
        assert!(a[1].abs() < 1e-6);
        let bad = ImageSet { n: 1, rows: 8, cols: 8, pixels: vec![0.0; 64], labels: vec![0] };
        assert!(block_features(&bad, &bad, &[0]).is_err());
    }
}
