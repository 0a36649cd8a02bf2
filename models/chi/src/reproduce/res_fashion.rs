//! `ca-res-fashion` — CA-RES blocks ([CAML] §3.5.2, Eq. 42; §4.7.2) against plain CNN blocks
//! and ResNet blocks in the paper's CIFAR architecture (convolution layers + hidden 512 +
//! softmax), on Fashion-MNIST. CIFAR-10 is not reachable from this machine's registries, so
//! Fashion-MNIST (60k/10k grey 28×28) stands in; the paper's claims (§4.7.2: more layers and more
//! sublayers help CA-RES) are compared as trends, not numbers.
//!
//! Network: stem convolution 1 → 16 channels (3×3, stride 2, padding 1) + ReLU → `B` blocks at
//! 14×14×16 → hidden 512 (ReLU) → softmax; Adagrad, lr 0.01, batch 100. A block of `l`
//! sublayers has `l − 1` convolutions (3×3, same padding) and is one of:
//!
//! ```text
//! plain:   h_1 = relu(conv_1(c)), …, out = relu(conv_{l−1}(h_{l−2}))
//! ResNet:  h_1 = relu(conv_1(c)), …, h_{l−1} = conv_{l−1}(h_{l−2}),  out = relu(c + h_{l−1})
//! CA-RES:  w_i = χ_i ⊙ v_i + (1 − χ_i) ⊙ w_i0   for i = 1 … l   (Eq. 42, per position)
//!          v_i = relu(conv_i(w_{i−1}))  (i < l − 1),  v_{l−1} = conv_{l−1}(w_{l−2}),  v_l = relu(c + w_{l−1})
//!          χ_1 = σ(conv_χ(c)),  χ_i = σ(conv_χ([c, w_{i−1}]))  (n_v = n_σ = 1, b = 0; w_0 = c)
//! ```
//!
//! so the CA-RES block has the paper's tuple `(l, 1, 1, 0)` for its gates, but its middle
//! convolutions read only `w_{i−1}`, not the input `c` that Eq. 42 gives every `v_i`: it is the
//! *chain* variant (labelled "CA-RES chain"; [`chi_ca::res::ConvVInput::Chain`]), whose `b = 1` form
//! (χ ≡ 1) is exactly the ResNet block. Eq. 42 as written, the other tuples and the kernel sweep
//! are in `ca-res-sweep`. Three runs per cell by default (runs r of the three blocks share seed r);
//! the notes give each row's mean, sd and 95 % CI and paired t-tests over the runs (the reduction is tested in `models/ca/tests/suite/ca.rs` for the dense CA-RES, and
//! here for this conv block). The conv blocks' gradients are checked whole, in float64, by the
//! unit test `conv_blocks_pass_a_float64_whole_block_gradcheck`.

use super::units::UnitData;
use super::util::{check_image_splits, image_batch, mean_curve, metric, write_curves};
use super::{ranks, Ctx, Report, Row};
use chi_nn::data::{self, Dataset, ImageSet};
use chi_nn::layers::{Conv2d, Linear};
use chi_nn::optim::{OptimConfig, Optimizer};
use chi_nn::params::{init, Param, ParamStore};
use chi_autodiff::{no_grad, Float, Rng, Tensor};

const C: usize = 16;
pub(super) const BATCH: usize = 100;
const LR: f64 = 0.01;

/// Block kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Convolutions with ReLU, no skip.
    Plain,
    /// ResNet basic block (generalised to `l − 1` convolutions).
    ResNet,
    /// CA-RES `(l, 1, 1, 0)`.
    CaRes,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Plain => "CNN",
            Kind::ResNet => "ResNet",
            Kind::CaRes => "CA-RES chain",
        }
    }

    /// The row name of this block kind in the grid cell of `blocks` blocks × `l` sublayers.
    fn cell(self, blocks: usize, l: usize) -> String {
        format!("{} {blocks} block{} × {l} sublayers", self.label(), if blocks == 1 { "" } else { "s" })
    }
}

/// One block of `l` sublayers on `channels` channels (the network uses [`C`]; the gradient
/// check a tiny float64 instance).
struct Block<T: Float> {
    kind: Kind,
    convs: Vec<Conv2d<T>>,
    chis: Vec<Conv2d<T>>,
    w0: Vec<Param<T>>,
}

impl<T: Float> Block<T> {
    fn new(store: &mut ParamStore<T>, name: &str, kind: Kind, l: usize, channels: usize, rng: &mut Rng) -> Block<T> {
        let convs = (1..l).map(|i| Conv2d::in_store(store, &format!("{name}.conv{i}"), "emb", channels, channels, 3, 1, 1, true, rng)).collect();
        let (chis, w0) = if kind == Kind::CaRes {
            let chis = (1..=l).map(|i| Conv2d::in_store(store, &format!("{name}.chi{i}"), "chi", if i == 1 { channels } else { 2 * channels }, 1, 3, 1, 1, true, rng)).collect();
            let w0 = (1..=l).map(|i| store.add(&format!("{name}.w0_{i}"), "emb", init::zeros(&[1, channels, 1, 1]))).collect();
            (chis, w0)
        } else {
            (Vec::new(), Vec::new())
        };
        Block { kind, convs, chis, w0 }
    }
    fn forward(&self, c: &Tensor<T>) -> Tensor<T> {
        self.forward_as(self.kind, c)
    }
    /// The block's computation as `kind` (CA-RES parameters are ignored by the other kinds).
    fn forward_as(&self, kind: Kind, c: &Tensor<T>) -> Tensor<T> {
        let n = self.convs.len();
        match kind {
            Kind::Plain => self.convs.iter().fold(c.clone(), |h, conv| conv.forward(&h).relu()),
            Kind::ResNet => {
                let mut h = c.clone();
                for (i, conv) in self.convs.iter().enumerate() {
                    h = conv.forward(&h);
                    if i + 1 < n {
                        h = h.relu();
                    }
                }
                c.add(&h).relu()
            }
            Kind::CaRes => {
                let mut w = c.clone();
                for i in 0..=n {
                    let ctx = if i == 0 { c.clone() } else { Tensor::concat(&[c.clone(), w.clone()], 1) };
                    let chi = self.chis[i].forward(&ctx).sigmoid(); // [N, 1, H, W]
                    let v = if i == n {
                        c.add(&w).relu()
                    } else {
                        let v = self.convs[i].forward(&w);
                        if i + 1 < n {
                            v.relu()
                        } else {
                            v
                        }
                    };
                    let w0 = self.w0[i].get();
                    w = w0.add(&chi.mul(&v.sub(&w0)));
                }
                w
            }
        }
    }
}

struct Net {
    store: ParamStore<f32>,
    stem: Conv2d<f32>,
    blocks: Vec<Block<f32>>,
    hidden: Linear<f32>,
    out: Linear<f32>,
}

impl Net {
    fn new(kind: Kind, blocks: usize, l: usize, rng: &mut Rng) -> Net {
        let mut store = ParamStore::new();
        let stem = Conv2d::in_store(&mut store, "stem", "emb", 1, C, 3, 2, 1, true, rng);
        let blocks = (0..blocks).map(|b| Block::new(&mut store, &format!("block{b}"), kind, l, C, rng)).collect();
        let hidden = Linear::in_store(&mut store, "hidden", "head", C * 14 * 14, 512, true, rng);
        let out = Linear::in_store(&mut store, "out", "head", 512, 10, true, rng);
        Net { store, stem, blocks, hidden, out }
    }
    fn logits(&self, x: &Tensor<f32>) -> Tensor<f32> {
        let mut h = self.stem.forward(x).relu();
        for b in &self.blocks {
            h = b.forward(&h);
        }
        let n = h.dim(0);
        self.out.forward(&self.hidden.forward(&h.reshape(&[n, h.numel() / n])).relu())
    }
}


fn accuracy(net: &Net, set: &ImageSet, idx: &[usize]) -> f64 {
    no_grad(|| {
        let mut correct = 0;
        for chunk in idx.chunks(500) {
            let (x, y) = image_batch(set, chunk);
            let pred = net.logits(&x).argmax_axis(1);
            correct += pred.iter().zip(&y).filter(|(p, t)| p == t).count();
        }
        correct as f64 / idx.len() as f64
    })
}

/// Trains one network (one unit of work), with a progress bar labelled `what`: returns the
/// test accuracy, the probe-accuracy curve and the parameter count.
#[allow(clippy::too_many_arguments)]
fn train(ctx: &Ctx, what: &str, kind: Kind, blocks: usize, l: usize, train_set: &ImageSet, tr: &[usize], test_set: &ImageSet, te: &[usize], steps: usize, seed: u64) -> Result<(f64, Vec<(f64, f64)>, usize), String> {
    let mut rng = Rng::new(seed);
    let net = Net::new(kind, blocks, l, &mut rng);
    let mut opt = Optimizer::new(OptimConfig::adagrad(LR));
    let mut order = tr.to_vec();
    let mut pos = order.len();
    let probe: Vec<usize> = te.iter().step_by((te.len() / 1000).max(1)).copied().collect();
    let every = (steps / 10).max(1);
    let bar = ctx.bar(what, steps);
    let batches = std::iter::from_fn(|| {
        if pos + BATCH > order.len() {
            rng.shuffle(&mut order);
            pos = 0;
        }
        let batch = image_batch(train_set, ctx.shard(&order[pos..pos + BATCH]));
        pos += BATCH;
        Some(batch)
    });
    let curve = ctx.trainer(&net.store, &mut opt)
        .steps(steps as u64)
        .eval_every(every as u64)
        .evaluate(|_| metric("accuracy", accuracy(&net, test_set, &probe)))
        .on_step_end(|info| bar.tick(info.step as usize, info.loss))
        .fit(batches, |(x, y)| ranks::step(net.logits(&x).cross_entropy(&y), y.len()))?
        .eval_curve("accuracy");
    bar.finish();
    Ok((accuracy(&net, test_set, te), curve, net.store.num_scalars()))
}

/// A trained model's test accuracy, probe-accuracy curve and parameter count.
pub(super) type Trained = (f64, Vec<(f64, f64)>, usize);

/// One resumable unit ([`Ctx::unit`]) that trains a model and keeps what [`Trained`] holds.
pub(super) fn accuracy_unit(ctx: &Ctx, key: &str, config: &str, train: impl FnOnce() -> Result<Trained, String>) -> Result<Trained, String> {
    ctx.unit(
        key,
        config,
        || {
            let (a, c, p) = train()?;
            Ok(UnitData::new().with_scalar("accuracy", a).with_curve("probe_accuracy", &c).with_scalar("params", p as f64))
        },
        |d| Ok((d.scalar("accuracy")?, d.curve("probe_accuracy")?, d.scalar("params")? as usize)),
    )
}

/// The experiment.
pub fn run(ctx: &Ctx) -> Result<Report, String> {
    let dir = data::require(Dataset::FashionMnist)?;
    let (ftrain, ftest) = data::load_mnist_idx_dir(&dir).map_err(|e| e.to_string())?;
    let mut rep = Report::default();
    rep.data.push(format!("Debian dataset-fashion-mnist 0.0~git20200523.55506a9-1: {} train / {} test (stand-in for CIFAR-10, not reachable here)", ftrain.n, ftest.n));
    let (steps, tr, te, grid): (usize, Vec<usize>, Vec<usize>, Vec<(usize, usize)>) = if ctx.quick {
        (30, (0..ftrain.n).step_by(30).collect(), (0..ftest.n).step_by(20).collect(), vec![(1, 2)])
    } else {
        (1500, (0..ftrain.n).collect(), (0..ftest.n).collect(), vec![(1, 2), (2, 2), (1, 3), (2, 3)])
    };
    check_image_splits(&format!("Fashion-MNIST ({})", dir.display()), tr.len(), te.len(), BATCH)?;
    let mut curves = Vec::new();
    ctx.plan_units(grid.len() * 3 * ctx.runs);
    for &(blocks, l) in &grid {
        for kind in [Kind::Plain, Kind::ResNet, Kind::CaRes] {
            let name = kind.cell(blocks, l);
            let mut accs = Vec::new();
            let mut cs = Vec::new();
            let mut params = 0;
            for r in 0..ctx.runs {
                let seed = ctx.run_seed(r);
                let what = format!("{name} run {r}");
                let config = format!("data=fashion-mnist {}/{}; kind={kind:?} blocks={blocks} sublayers={l} channels={C} steps={steps} adagrad lr={LR} batch={BATCH} seed={seed}", tr.len(), te.len());
                let key = format!("{}-b{blocks}-l{l}-run{r}", kind.label().to_lowercase());
                let (a, c, p) = accuracy_unit(ctx, &key, &config, || train(ctx, &what, kind, blocks, l, &ftrain, &tr, &ftest, &te, steps, seed))?;
                accs.push(a);
                cs.push(c);
                params = p;
            }
            ctx.log(&format!("{name}: {:.4}", accs.iter().sum::<f64>() / accs.len() as f64));
            rep.rows.push(Row::new("Fashion-MNIST test accuracy", &name, None, accs));
            rep.rows.push(Row::new("parameters", &name, None, vec![params as f64]));
            if blocks == 2 && l == 3 || ctx.quick {
                curves.push((name, mean_curve(&cs)));
            }
        }
    }
    rep.files.extend(write_curves(ctx, "accuracy", "Fashion-MNIST: test accuracy over steps", "step", "accuracy", false, &curves)?);
    let m = "Fashion-MNIST test accuracy";
    if !ctx.quick {
        // The paper's trend (§4.7.2: more blocks and more sublayers help CA-RES), paired over runs,
        // beside the same comparison for the other two blocks.
        for kind in [Kind::CaRes, Kind::ResNet, Kind::Plain] {
            let source = (kind == Kind::CaRes).then_some("paper §4.7.2: deeper CA-RES is better");
            super::ca_compare::push_claim(&mut rep, m, &kind.cell(2, 3), &kind.cell(1, 2), source);
        }
    }
    super::ca_compare::summaries(&mut rep, m);
    for &(b, l) in &grid {
        super::ca_compare::push_claim(&mut rep, m, &Kind::CaRes.cell(b, l), &Kind::ResNet.cell(b, l), None);
        super::ca_compare::push_claim(&mut rep, m, &Kind::CaRes.cell(b, l), &Kind::Plain.cell(b, l), Some("paper §4.7.2 (CIFAR-10)"));
    }
    rep.config = vec![("steps".into(), steps.to_string()), ("channels".into(), C.to_string()), ("optimizer".into(), format!("adagrad lr {LR}, batch {BATCH}"))];
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole conv CA-RES block (every sublayer, χ-convolution, `w0` and the final skip) in
    /// float64 against central differences with PyTorch's tolerances (eps 1e-6, atol 1e-5,
    /// rtol 1e-3), with respect to every parameter and the input; the other kinds too.
    #[test]
    fn conv_blocks_pass_a_float64_whole_block_gradcheck() {
        for (kind, l) in [(Kind::CaRes, 3), (Kind::CaRes, 2), (Kind::ResNet, 3), (Kind::Plain, 3)] {
            let mut rng = Rng::new(11);
            let mut s = ParamStore::<f64>::new();
            let block = Block::new(&mut s, "b", kind, l, 2, &mut rng);
            // Non-zero w0 and χ biases off 0, so every term of Eq. 42 carries gradient.
            for p in s.params() {
                if p.name().contains("w0_") || (p.name().contains(".chi") && p.name().ends_with("bias")) {
                    p.set_values((0..p.numel()).map(|_| rng.uniform(-0.8, 0.8)).collect());
                }
            }
            let x = Tensor::<f64>::randn(&[2, 2, 4, 4], &mut rng);
            let r = chi_nn::gradcheck::check_model(&s, std::slice::from_ref(&x), |xs| block.forward(&xs[0]), &chi_autodiff::GradcheckOptions::default())
                .unwrap_or_else(|r| panic!("{kind:?} l={l}: {r}"));
            assert_eq!(r.checked, s.num_scalars() + x.numel(), "{kind:?} l={l}: every parameter and input element compared");
            if kind == Kind::CaRes {
                assert_eq!(s.params().iter().filter(|p| p.name().contains(".chi")).count(), 2 * l, "{l} χ-convolutions (weight + bias)");
            }
        }
    }

    /// With every χ forced to 1 (huge χ biases) the CA-RES block computes the ResNet block.
    #[test]
    fn ca_res_block_with_chi_one_is_the_resnet_block() {
        let mut rng = Rng::new(3);
        let mut s = ParamStore::<f32>::new();
        let ca = Block::new(&mut s, "b", Kind::CaRes, 3, C, &mut rng);
        for chi in &ca.chis {
            chi.weight.set_values(vec![0.0; chi.weight.numel()]);
            chi.bias.as_ref().unwrap().set_values(vec![40.0]);
        }
        for w0 in &ca.w0 {
            w0.set_values((0..C).map(|i| i as f32).collect());
        }
        let x = Tensor::<f32>::randn(&[2, C, 5, 5], &mut rng);
        let (a, b) = (ca.forward(&x).to_vec(), ca.forward_as(Kind::ResNet, &x).to_vec());
        assert_ne!(a, ca.forward_as(Kind::Plain, &x).to_vec());
        for (p, q) in a.iter().zip(&b) {
            assert!((p - q).abs() < 1e-5, "{p} vs {q}");
        }
    }
}
