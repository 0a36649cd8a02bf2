//! Experiment runners returning plain result structs (no printing, no files): a word-level
//! language-model comparison of RCNN variants against LSTM and CNN at (nearly) equal parameter
//! count, and the synthetic multi-aspect rationale task with planted spans, comparing the
//! generator's rationales with an attention baseline's top words.

use crate::deps::{run_sequence_batch, stack_outputs, Embedding, Grad, Grads, GradSync, Group, Linear, LstmCell, OptimConfig, Optimizer, Param, ParamStore};
use crate::error::{RcnnError, Result};
use crate::layer::{Activation, BiRcnn, Decay, Rcnn, RcnnConfig};
use crate::rationale::{GeneratorKind, MovingAverage, RationaleConfig, RationaleModel};
use crate::scan::{Aggregation, FeatureMap};
use chi_autodiff::{no_grad, Rng, Tensor};

// ------------------------------------------------------------------ language models

/// A model family of the language-model comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LmKind {
    /// RCNN (2-gram, multiplicative, normalised, `g(c_n)` = tanh) with the given decay.
    Rcnn(Decay),
    /// An LSTM.
    Lstm,
    /// A consecutive 2-gram multiplicative CNN: the RCNN at λ = 0.
    Cnn,
}

impl LmKind {
    /// A short label ("rcnn-const-0.8", "rcnn-learned", "rcnn-adaptive-x", "lstm", "cnn", …).
    pub fn label(&self) -> String {
        match self {
            LmKind::Rcnn(Decay::Constant(l)) => format!("rcnn-const-{l}"),
            LmKind::Rcnn(Decay::Learned(_)) => "rcnn-learned".into(),
            LmKind::Rcnn(Decay::AdaptiveX) => "rcnn-adaptive-x".into(),
            LmKind::Rcnn(Decay::AdaptiveXH) => "rcnn-adaptive-xh".into(),
            LmKind::Lstm => "lstm".into(),
            LmKind::Cnn => "cnn".into(),
        }
    }
}

/// Settings of [`run_language_models`].
#[derive(Clone, Debug, PartialEq)]
pub struct LmRunConfig {
    /// Vocabulary size (token ids must be below it).
    pub vocab: usize,
    /// Embedding size.
    pub emb: usize,
    /// Target parameter count; each model's hidden size is chosen to come closest to it.
    pub target_params: usize,
    /// Window length (truncated back-propagation; each window starts from the zero state).
    pub unroll: usize,
    /// Windows per step.
    pub batch: usize,
    /// Training steps.
    pub steps: usize,
    /// Adam learning rate.
    pub lr: f64,
    /// Gradient-norm clip.
    pub clip: f64,
    /// Seed (initialisation and window sampling).
    pub seed: u64,
}

/// One model's outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct LmResult {
    /// [`LmKind::label`].
    pub model: String,
    /// Hidden size chosen.
    pub hidden: usize,
    /// Parameter count.
    pub params: usize,
    /// Mean training loss (nats/token) over the first 10 % of steps.
    pub train_loss_start: f64,
    /// Mean training loss over the last 10 % of steps.
    pub train_loss_end: f64,
    /// Held-out perplexity (windows of `unroll` tokens, each from the zero state).
    pub test_perplexity: f64,
}

enum LmCore {
    Rcnn(Rcnn<f32>),
    Lstm(LstmCell<f32>),
}

struct Lm {
    emb: Embedding<f32>,
    core: LmCore,
    out: Linear<f32>,
    store: ParamStore<f32>,
}

impl Lm {
    fn new(kind: LmKind, vocab: usize, emb: usize, hidden: usize, seed: u64) -> Result<Lm> {
        let mut rng = Rng::new(seed);
        let mut store = ParamStore::new();
        let e = Embedding::in_store(&mut store, "emb", "lm", vocab, emb, false, &mut rng);
        e.weight.update(|v| v.iter_mut().for_each(|x| *x *= 0.1));
        let core = match kind {
            LmKind::Lstm => LmCore::Lstm(LstmCell::new(&mut store, "lstm", "lm", emb, hidden, false, &mut rng)),
            LmKind::Rcnn(_) | LmKind::Cnn => {
                let mut c = RcnnConfig::new(emb, hidden);
                c.order = 2;
                c.map = FeatureMap::Multiplicative;
                c.activation = Activation::Tanh;
                (c.aggregation, c.decay) = match kind {
                    LmKind::Rcnn(d) => (Aggregation::Normalized, d),
                    // λ = 0 turns the scan into the consecutive n-gram convolution.
                    _ => (Aggregation::Unnormalized, Decay::Constant(0.0)),
                };
                LmCore::Rcnn(Rcnn::new(&mut store, "rcnn", "lm", &c, 1, &mut rng)?)
            }
        };
        let out = Linear::in_store(&mut store, "out", "lm", hidden, vocab, true, &mut rng);
        Ok(Lm { emb: e, core, out, store })
    }

    /// Mean cross-entropy of predicting `ids[b][t+1]` from `ids[b][..=t]`, windows `[B, T+1]`.
    fn loss(&self, windows: &[Vec<usize>]) -> Result<Tensor<f32>> {
        let (b, t) = (windows.len(), windows[0].len() - 1);
        let inp: Vec<usize> = windows.iter().flat_map(|w| w[..t].iter().copied()).collect();
        let tgt: Vec<usize> = windows.iter().flat_map(|w| w[1..].iter().copied()).collect();
        let x = self.emb.forward_shaped(&inp, &[b, t]);
        let h = match &self.core {
            LmCore::Rcnn(r) => r.forward(&x, None)?,
            LmCore::Lstm(c) => stack_outputs(&run_sequence_batch(c, &x, None, None).0),
        };
        let hid = h.dim(2);
        Ok(self.out.forward(&h.reshape(&[b * t, hid])).cross_entropy(&tgt))
    }
}

fn param_count(kind: LmKind, vocab: usize, emb: usize, hidden: usize) -> Result<usize> {
    Ok(Lm::new(kind, vocab, emb, hidden, 0)?.store.num_scalars())
}

/// The hidden size whose model has the parameter count closest to `target`.
pub fn hidden_for_params(kind: LmKind, vocab: usize, emb: usize, target: usize) -> Result<usize> {
    // Counts grow monotonically with the hidden size: binary search, then pick the closer side.
    let (mut lo, mut hi) = (1usize, 4096usize);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if param_count(kind, vocab, emb, mid)? < target {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if lo > 1 && target.abs_diff(param_count(kind, vocab, emb, lo - 1)?) < target.abs_diff(param_count(kind, vocab, emb, lo)?) {
        lo -= 1;
    }
    Ok(lo)
}

/// Trains each model kind on the `train` token stream and reports held-out perplexity on `test`.
pub fn run_language_models(train: &[usize], test: &[usize], kinds: &[LmKind], cfg: &LmRunConfig) -> Result<Vec<LmResult>> {
    run_language_models_on(train, test, kinds, cfg, &Group::one())
}

/// [`run_language_models`] on the ranks of `group`, every rank calling it with the same
/// arguments: each step's windows are drawn alike on every rank, each rank differentiates its
/// share, and the gradients are averaged before the one update (the single-process step up to
/// rounding). Evaluation runs whole on every rank.
pub fn run_language_models_on(train: &[usize], test: &[usize], kinds: &[LmKind], cfg: &LmRunConfig, group: &Group) -> Result<Vec<LmResult>> {
    let need = cfg.unroll + 1;
    if train.len() < need || test.len() < need {
        return Err(RcnnError::Lengths { op: "run_language_models", reason: format!("streams need at least {need} tokens") });
    }
    if let Some(&bad) = train.iter().chain(test).find(|&&t| t >= cfg.vocab) {
        return Err(RcnnError::Config { field: "vocab", reason: format!("token id {bad} ≥ vocabulary {}", cfg.vocab) });
    }
    let mut results = Vec::new();
    for &kind in kinds {
        let hidden = hidden_for_params(kind, cfg.vocab, cfg.emb, cfg.target_params)?;
        let lm = Lm::new(kind, cfg.vocab, cfg.emb, hidden, cfg.seed)?;
        let mut opt = Optimizer::new(OptimConfig::adam(cfg.lr));
        let params: Vec<Param<f32>> = lm.store.params().to_vec();
        let mut sync = GradSync::new(group, &params);
        let mut rng = Rng::new(cfg.seed ^ 0xda7a);
        let mut losses = Vec::with_capacity(cfg.steps);
        for _ in 0..cfg.steps {
            let windows: Vec<Vec<usize>> = (0..cfg.batch).map(|_| {
                let s = rng.below(train.len() - need + 1);
                train[s..s + need].to_vec()
            }).collect();
            let mine = group.shard(&windows);
            lm.store.zero_grad();
            let loss = if mine.is_empty() { Tensor::scalar(0.0) } else { lm.loss(mine)? };
            // Every window has `unroll` targets, so windows weigh the ranks' mean losses.
            let (mean, mut grads) = sync.backward(&loss, mine.len() as f64)?;
            losses.push(mean);
            clip(&mut grads, cfg.clip);
            opt.step(&params, &grads);
        }
        let tenth = (cfg.steps / 10).max(1);
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let windows: Vec<Vec<usize>> = test.chunks_exact(need).map(|c| c.to_vec()).collect();
        let mut nll = 0.0;
        for chunk in windows.chunks(cfg.batch.max(1)) {
            nll += no_grad(|| lm.loss(chunk))?.item() as f64 * chunk.len() as f64;
        }
        results.push(LmResult {
            model: kind.label(),
            hidden,
            params: lm.store.num_scalars(),
            train_loss_start: mean(&losses[..tenth.min(losses.len())]),
            train_loss_end: mean(&losses[losses.len().saturating_sub(tenth)..]),
            test_perplexity: (nll / windows.len() as f64).exp(),
        });
    }
    Ok(results)
}

/// Scales every gradient so the global norm is at most `max` (no-op for `max ≤ 0`).
/// Scales `grads` to global L2 norm `max` when they are longer (no clipping for `max ≤ 0`).
/// Computed per parameter and in `f32` products, as clipping the parameters' own gradients
/// tensor by tensor would, so one-process results do not depend on where the gradients live.
fn clip(grads: &mut Grads<f32>, max: f64) {
    if max <= 0.0 {
        return;
    }
    fn values(g: &Grad<f32>) -> &[f32] {
        match g {
            Grad::Dense(v) | Grad::Rows { values: v, .. } => v,
        }
    }
    let norm = grads.items.iter().flatten().map(|g| values(g).iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt().powi(2)).sum::<f64>().sqrt();
    if norm > max {
        let s = (max / norm) as f32;
        for g in grads.items.iter_mut().flatten() {
            match g {
                Grad::Dense(v) | Grad::Rows { values: v, .. } => v.iter_mut().for_each(|x| *x *= s),
            }
        }
    }
}

// ------------------------------------------------------------------ synthetic rationales

/// A synthetic multi-aspect review corpus with planted aspect spans.
///
/// Every text has one span per aspect: the aspect's marker word followed by two polarity words
/// of the same level (5 levels, value `level/4`). Other positions are filler words, and with
/// probability `distractor` a polarity word of a random level that belongs to no aspect. The
/// target of aspect `a` is its span's value only, so an ideal rationale for aspect `a` is exactly
/// that span.
#[derive(Clone, Debug, PartialEq)]
pub struct RationaleTask {
    /// Token ids, all texts of the same length.
    pub texts: Vec<Vec<usize>>,
    /// `targets[i][a]` in `[0, 1]`.
    pub targets: Vec<Vec<f64>>,
    /// `spans[i][a] = (start, end)` (end exclusive).
    pub spans: Vec<Vec<(usize, usize)>>,
    /// Vocabulary size.
    pub vocab: usize,
    /// Number of aspects.
    pub aspects: usize,
}

const FILLER: usize = 20;
const LEVELS: usize = 5;
const SPAN: usize = 3;

/// Builds a [`RationaleTask`] of `n` texts of `length` words (needs `length ≥ 3·aspects`).
pub fn synthetic_rationale_task(n: usize, aspects: usize, length: usize, distractor: f64, seed: u64) -> Result<RationaleTask> {
    if aspects == 0 || length < SPAN * aspects {
        return Err(RcnnError::Config { field: "length", reason: format!("{aspects} aspects need length ≥ {}", SPAN * aspects.max(1)) });
    }
    let mut rng = Rng::new(seed);
    // Ids: fillers, then 2 polarity synonyms per level, then one marker per aspect.
    let polarity = |level: usize, syn: usize| FILLER + 2 * level + syn;
    let marker = |a: usize| FILLER + 2 * LEVELS + a;
    let vocab = FILLER + 2 * LEVELS + aspects;
    let (mut texts, mut targets, mut spans) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        let mut text: Vec<usize> = (0..length)
            .map(|_| if rng.next_f64() < distractor { polarity(rng.below(LEVELS), rng.below(2)) } else { rng.below(FILLER) })
            .collect();
        // Non-overlapping span starts: choose gaps by distributing the free positions.
        let free = length - SPAN * aspects;
        let mut cuts: Vec<usize> = (0..aspects).map(|_| rng.below(free + 1)).collect();
        cuts.sort_unstable();
        let mut order: Vec<usize> = (0..aspects).collect();
        rng.shuffle(&mut order);
        let mut sp = vec![(0, 0); aspects];
        let mut tg = vec![0.0; aspects];
        for (slot, &a) in order.iter().enumerate() {
            let start = cuts[slot] + SPAN * slot;
            let level = rng.below(LEVELS);
            text[start] = marker(a);
            text[start + 1] = polarity(level, rng.below(2));
            text[start + 2] = polarity(level, rng.below(2));
            sp[a] = (start, start + SPAN);
            tg[a] = level as f64 / (LEVELS - 1) as f64;
        }
        texts.push(text);
        targets.push(tg);
        spans.push(sp);
    }
    Ok(RationaleTask { texts, targets, spans, vocab, aspects })
}

/// Settings of [`run_rationale_task`].
#[derive(Clone, Debug, PartialEq)]
pub struct RationaleRunConfig {
    /// Which aspect to predict.
    pub aspect: usize,
    /// Word-vector size (fixed random vectors, as the thesis keeps its word vectors fixed).
    pub emb: usize,
    /// RCNN state size.
    pub hidden: usize,
    /// Generator kind.
    pub generator: GeneratorKind,
    /// Sparsity weight λ₁.
    pub lambda1: f64,
    /// Coherence weight λ₂.
    pub lambda2: f64,
    /// Training steps.
    pub steps: usize,
    /// Texts per step.
    pub batch: usize,
    /// Adam learning rate.
    pub lr: f64,
    /// Use a moving-average baseline (decay 0.9) for REINFORCE.
    pub baseline: bool,
    /// Seed.
    pub seed: u64,
}

/// Outcome of [`run_rationale_task`] on the held-out texts.
#[derive(Clone, Debug, PartialEq)]
pub struct RationaleResult {
    /// Fraction of the generator's selected words inside the aspect's planted span (Table 3.3's
    /// precision), pooled over texts.
    pub generator_precision: f64,
    /// Fraction of words the generator selects (`p(z_t) > 1/2`; dependent: greedy left to right).
    pub selection_rate: f64,
    /// Precision of the attention model's top-k words, k = the generator's count on each text.
    pub attention_precision: f64,
    /// Held-out MSE of the rationale model (encoder on the selected words).
    pub rationale_mse: f64,
    /// Held-out MSE of the attention model (all words).
    pub attention_mse: f64,
    /// Mean training cost over the first and the last 10 % of steps.
    pub cost_start_end: (f64, f64),
}

fn embed(table: &Tensor<f32>, texts: &[Vec<usize>]) -> Tensor<f32> {
    let (b, t, d) = (texts.len(), texts[0].len(), table.dim(1));
    let ids: Vec<usize> = texts.iter().flatten().copied().collect();
    table.embedding(&ids).reshape(&[b, t, d])
}

/// The attention baseline: a bidirectional RCNN, attention weights `softmax_t(v·tanh(W h_t))`, the
/// weighted average of the states, then `σ(linear)`.
struct AttentionModel {
    bi: BiRcnn<f32>,
    w: Linear<f32>,
    v: Linear<f32>,
    out: Linear<f32>,
    store: ParamStore<f32>,
}

impl AttentionModel {
    fn new(cfg: &RcnnConfig, rng: &mut Rng) -> Result<Self> {
        let mut store = ParamStore::new();
        let h = cfg.hidden;
        let bi = BiRcnn::new(&mut store, "att.rcnn", "attention", cfg, 1, rng)?;
        let w = Linear::in_store(&mut store, "att.w", "attention", 2 * h, h, true, rng);
        let v = Linear::in_store(&mut store, "att.v", "attention", h, 1, false, rng);
        let out = Linear::in_store(&mut store, "att.out", "attention", 2 * h, 1, true, rng);
        Ok(AttentionModel { bi, w, v, out, store })
    }
    /// `(predictions [B, 1], attention [B, T])`.
    fn forward(&self, x: &Tensor<f32>) -> Result<(Tensor<f32>, Tensor<f32>)> {
        let (b, t) = (x.dim(0), x.dim(1));
        let hs = self.bi.forward(x, None)?;
        let att = self.v.forward(&self.w.forward(&hs).tanh()).reshape(&[b, t]).softmax(1);
        let ctx = att.reshape(&[b, 1, t]).matmul(&hs).reshape(&[b, hs.dim(2)]);
        Ok((self.out.forward(&ctx).sigmoid(), att))
    }
}

/// Trains a rationale model (generator + encoder) and an attention baseline on `train` for one
/// aspect, and measures rationale precision and selection rate on `test`.
pub fn run_rationale_task(train: &RationaleTask, test: &RationaleTask, cfg: &RationaleRunConfig) -> Result<RationaleResult> {
    run_rationale_task_on(train, test, cfg, &Group::one())
}

/// [`run_rationale_task`] on the ranks of `group`, every rank calling it with the same
/// arguments: the texts of each step are drawn alike on every rank, each rank samples the masks
/// of its share from a stream of its own ([`Group::rank_seed`]) and keeps its own moving-average
/// baseline (a baseline that does not depend on the current sample leaves the estimator
/// unbiased), and the gradients of both models are averaged before their updates. The logged
/// costs are means over the whole global batch. Evaluation runs whole on every rank.
pub fn run_rationale_task_on(train: &RationaleTask, test: &RationaleTask, cfg: &RationaleRunConfig, group: &Group) -> Result<RationaleResult> {
    if cfg.aspect >= train.aspects || test.aspects != train.aspects || train.texts.is_empty() || test.texts.is_empty() {
        return Err(RcnnError::Config { field: "aspect", reason: "aspect out of range or empty data".into() });
    }
    let len = train.texts[0].len();
    for task in [train, test] {
        if task.texts.iter().any(|t| t.len() != len || t.is_empty()) || task.targets.len() != task.texts.len() || task.spans.len() != task.texts.len() {
            return Err(RcnnError::Lengths { op: "run_rationale_task", reason: "all texts must be non-empty, of one length, with a target and spans each".into() });
        }
        if task.texts.iter().flatten().any(|&id| id >= task.vocab) {
            return Err(RcnnError::Config { field: "vocab", reason: "a token id is outside the vocabulary".into() });
        }
    }
    let mut rng = Rng::new(cfg.seed);
    let table = Tensor::<f32>::randn(&[train.vocab.max(test.vocab), cfg.emb], &mut rng);
    let mut rc = RcnnConfig::new(cfg.emb, cfg.hidden);
    rc.map = FeatureMap::Additive;
    rc.decay = Decay::AdaptiveX;
    let mut store = ParamStore::<f32>::new();
    let model = RationaleModel::new(&mut store, RationaleConfig { rcnn: rc.clone(), outputs: 1, generator: cfg.generator, lambda1: cfg.lambda1, lambda2: cfg.lambda2, encoder_depth: 1 }, &mut rng)?;
    let att = AttentionModel::new(&rc, &mut rng)?;
    let params: Vec<Param<f32>> = store.params().to_vec();
    let att_params: Vec<Param<f32>> = att.store.params().to_vec();
    let (mut opt, mut att_opt) = (Optimizer::new(OptimConfig::adam(cfg.lr)), Optimizer::new(OptimConfig::adam(cfg.lr)));
    let mut base = MovingAverage::new(0.9);
    let mut costs = Vec::with_capacity(cfg.steps);
    let target = |task: &RationaleTask, idx: &[usize]| Tensor::from_vec(idx.iter().map(|&i| task.targets[i][cfg.aspect] as f32).collect(), &[idx.len(), 1]);
    let (mut sync, mut att_sync) = (GradSync::new(group, &params), GradSync::new(group, &att_params));
    // One process draws texts and masks from one stream; ranks draw texts alike and masks apart.
    let mut rank_masks = (group.size() > 1).then(|| Rng::new(group.rank_seed(cfg.seed ^ 0x3a5c)));
    for _ in 0..cfg.steps {
        let global: Vec<usize> = (0..cfg.batch).map(|_| rng.below(train.texts.len())).collect();
        let idx = group.shard(&global);
        let n = idx.len() as f64;
        store.zero_grad();
        att.store.zero_grad();
        let (surrogate, cost, att_loss) = if idx.is_empty() {
            (Tensor::scalar(0.0), 0.0, Tensor::scalar(0.0))
        } else {
            let texts: Vec<Vec<usize>> = idx.iter().map(|&i| train.texts[i].clone()).collect();
            let x = embed(&table, &texts);
            let y = target(train, idx);
            let masks = rank_masks.as_mut().unwrap_or(&mut rng);
            let step = model.surrogate(&x, None, &y, 1, masks, if cfg.baseline { Some(&mut base) } else { None })?;
            let (pred, _) = att.forward(&x)?;
            (step.surrogate, step.mean_cost, pred.mse_loss(&y))
        };
        let (_, mut grads) = sync.backward(&surrogate, n)?;
        clip(&mut grads, 5.0);
        opt.step(&params, &grads);
        let (_, mut att_grads) = att_sync.backward(&att_loss, n)?;
        clip(&mut att_grads, 5.0);
        att_opt.step(&att_params, &att_grads);
        let total = group.sum(vec![cost * n, n]);
        costs.push(if total[1] > 0.0 { total[0] / total[1] } else { 0.0 });
    }
    // Evaluation on held-out texts, one batch.
    let idx: Vec<usize> = (0..test.texts.len()).collect();
    let x = embed(&table, &test.texts);
    let y = target(test, &idx);
    let (b, t) = (test.texts.len(), test.texts[0].len());
    let z = no_grad(|| greedy_selection(&model, &x))?;
    let (pred, _) = no_grad(|| Ok::<_, RcnnError>((model.encoder.forward(&x, None, Some(&z))?, ())))?;
    let (apred, attn) = no_grad(|| att.forward(&x))?;
    let mse = |p: &Tensor<f32>| p.data().iter().zip(y.data()).map(|(a, b)| ((a - b) as f64).powi(2)).sum::<f64>() / b as f64;
    let (mut sel, mut hit, mut att_hit, mut att_sel) = (0usize, 0usize, 0usize, 0usize);
    for i in 0..b {
        let (s, e) = test.spans[i][cfg.aspect];
        let zi = &z[i * t..(i + 1) * t];
        let k = zi.iter().filter(|&&v| v).count();
        sel += k;
        hit += zi.iter().enumerate().filter(|&(p, &v)| v && (s..e).contains(&p)).count();
        let mut order: Vec<usize> = (0..t).collect();
        let a = &attn.data()[i * t..(i + 1) * t];
        order.sort_by(|&p, &q| a[q].total_cmp(&a[p]));
        let k = k.max(1);
        att_sel += k;
        att_hit += order[..k].iter().filter(|&&p| (s..e).contains(&p)).count();
    }
    let tenth = (costs.len() / 10).max(1);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    Ok(RationaleResult {
        generator_precision: if sel > 0 { hit as f64 / sel as f64 } else { 0.0 },
        selection_rate: sel as f64 / (b * t) as f64,
        attention_precision: att_hit as f64 / att_sel.max(1) as f64,
        rationale_mse: mse(&pred),
        attention_mse: mse(&apred),
        cost_start_end: (mean(&costs[..tenth.min(costs.len())]), mean(&costs[costs.len().saturating_sub(tenth)..])),
    })
}

/// Deterministic selections: `p(z_t) > 1/2` (the dependent generator decides left to right,
/// conditioning on its own earlier decisions).
fn greedy_selection(model: &RationaleModel<f32>, x: &Tensor<f32>) -> Result<Vec<bool>> {
    let (b, t) = (x.dim(0), x.dim(1));
    match model.cfg.generator {
        GeneratorKind::Independent => Ok(model.generator.logits(x, None, None)?.data().iter().map(|&l| l > 0.0).collect()),
        GeneratorKind::Dependent { .. } => {
            // Fix decisions one position at a time: later logits never change earlier ones.
            let mut z = vec![false; b * t];
            for step in 0..t {
                let l = model.generator.logits(x, None, Some(&z))?;
                for bi in 0..b {
                    z[bi * t + step] = l.data()[bi * t + step] > 0.0;
                }
            }
            Ok(z)
        }
    }
}

/// A synthetic token stream from a random sparse order-2 Markov chain (each context allows
/// `branching` next tokens with random probabilities): a stand-in corpus whose entropy is known
/// to be low, for quick language-model runs.
pub fn markov_stream(vocab: usize, len: usize, branching: usize, seed: u64) -> Vec<usize> {
    let mut rng = Rng::new(seed);
    let vocab = vocab.max(2);
    let branching = branching.clamp(1, vocab);
    // Next-token table per (previous two tokens).
    let table: Vec<Vec<(usize, f64)>> = (0..vocab * vocab)
        .map(|_| {
            let w: Vec<f64> = (0..branching).map(|_| rng.next_f64() + 0.1).collect();
            let s: f64 = w.iter().sum();
            (0..branching).map(|k| (rng.below(vocab), w[k] / s)).collect()
        })
        .collect();
    let mut out = vec![rng.below(vocab), rng.below(vocab)];
    while out.len() < len {
        let ctx = out[out.len() - 2] * vocab + out[out.len() - 1];
        let mut u = rng.next_f64();
        let mut next = table[ctx][branching - 1].0;
        for &(tok, p) in &table[ctx] {
            if u < p {
                next = tok;
                break;
            }
            u -= p;
        }
        out.push(next);
    }
    out.truncate(len);
    out
}

// ------------------------------------------------------------------ throughput

/// Measured training speed of one recurrent layer (forward + backward, `f32`).
#[derive(Clone, Debug, PartialEq)]
pub struct Throughput {
    /// [`LmKind::label`], with "/composed" for the composed scan.
    pub model: String,
    /// Hidden size chosen for the parameter budget.
    pub hidden: usize,
    /// Parameters of the layer.
    pub params: usize,
    /// Tokens (batch × time) per second over the timed steps.
    pub tokens_per_sec: f64,
    /// Wall time of the timed steps.
    pub seconds: f64,
}

enum Core {
    Rcnn(Rcnn<f32>),
    Lstm(LstmCell<f32>),
}

fn build_core(kind: LmKind, scan: crate::layer::ScanImpl, input: usize, hidden: usize, store: &mut ParamStore<f32>, rng: &mut Rng) -> Result<Core> {
    Ok(match kind {
        LmKind::Lstm => Core::Lstm(LstmCell::new(store, "lstm", "m", input, hidden, false, rng)),
        _ => {
            let mut c = RcnnConfig::new(input, hidden);
            c.scan = scan;
            (c.aggregation, c.decay) = match kind {
                LmKind::Rcnn(d) => (Aggregation::Normalized, d),
                _ => (Aggregation::Unnormalized, Decay::Constant(0.0)),
            };
            Core::Rcnn(Rcnn::new(store, "rcnn", "m", &c, 1, rng)?)
        }
    })
}

/// Times `steps` training steps (after one warm-up step) of a single recurrent layer on random
/// `[batch, time, input]` inputs, the layer's hidden size chosen so that its parameter count is
/// closest to `target_params`. The loss is the mean square of the outputs.
#[allow(clippy::too_many_arguments)]
pub fn layer_training_throughput(kind: LmKind, scan: crate::layer::ScanImpl, batch: usize, time: usize, input: usize, target_params: usize, steps: usize, seed: u64) -> Result<Throughput> {
    let count = |h: usize| -> Result<usize> {
        let mut s = ParamStore::new();
        build_core(kind, scan, input, h, &mut s, &mut Rng::new(0))?;
        Ok(s.num_scalars())
    };
    let (mut lo, mut hi) = (1usize, 8192usize);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if count(mid)? < target_params {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let mut rng = Rng::new(seed);
    let mut store = ParamStore::new();
    let core = build_core(kind, scan, input, lo, &mut store, &mut rng)?;
    let x = Tensor::<f32>::randn(&[batch, time, input], &mut rng);
    let params: Vec<Param<f32>> = store.params().to_vec();
    let mut opt = Optimizer::new(OptimConfig::sgd(1e-3));
    let mut step = || -> Result<()> {
        store.zero_grad();
        let h = match &core {
            Core::Rcnn(r) => r.forward(&x, None)?,
            Core::Lstm(c) => stack_outputs(&run_sequence_batch(c, &x, None, None).0),
        };
        h.square().mean().backward();
        opt.step_params(&params);
        Ok(())
    };
    step()?;
    let t0 = std::time::Instant::now();
    for _ in 0..steps {
        step()?;
    }
    let seconds = t0.elapsed().as_secs_f64();
    let suffix = if kind != LmKind::Lstm && scan == crate::layer::ScanImpl::Composed { "/composed" } else { "" };
    Ok(Throughput { model: format!("{}{suffix}", kind.label()), hidden: lo, params: store.num_scalars(), tokens_per_sec: (batch * time * steps) as f64 / seconds.max(1e-12), seconds })
}
