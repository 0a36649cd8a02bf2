//! `ca-bsfe-synthetic` — a planted bag-of-features task where the χ̃ that CA-BSFE learns
//! ([CAML] §3.2, Eq. 19–20) can be compared with the truth.
//!
//! Generative process (per document):
//! * `k`, uniform on {0, …, 4}, **informative** tokens are drawn from a set of 20; the label is
//!   `y = 1` iff `k ≥ 2`. Their presence is what matters — context-*sensitive*, true χ̃ = 0 in the
//!   paper's sense;
//! * 8–60 **filler** tokens are drawn (Zipf-like, weight ∝ 1/rank) from 200 label-independent
//!   tokens: context-*free*, true χ̃ = 1 (best replaced by the shared `v0`);
//! * in test documents, each filler is replaced with probability 0.2 by a token never seen in
//!   training (an out-of-vocabulary token, Eq. 21–22: embedded as `v0`).
//!
//! The label depends on a *count*, which a sum of embeddings (Eq. 20) can represent and an
//! average cannot (the average sees `k / length`, and lengths vary 8–64): this is the paper's
//! argument for summing with χ̃ instead of averaging (§3.2).
//!
//! Models (dims 5 + 5, logistic head, Adagrad lr 0.1, batch 16 — the paper's §4.2.1 settings):
//! CA-BSFE; CA-BSFE with `em_steps = 100` (block-coordinate: χ-group and embedding-group
//! alternate every 100 steps); the averaging baseline, as the mean of 5-d embeddings (CA-BSFE's
//! output size and head) and of 10-d ones (CA-BSFE's `n + m` numbers per token).
//!
//! What is measured: test accuracy; for CA-BSFE, the ROC AUC of `1 − χ̃` for telling informative
//! from filler tokens (1 = χ̃ ranks every informative token as more context-sensitive than every
//! filler), and the mean χ̃ of each kind.

use super::units::UnitData;
use super::util::{mean_curve, metric, write_curves};
use super::{judge, ranks, Ctx, Report, Row};
use chi_ca::bsfe::{BagAverage, CaBsfe, LogisticHead, OOV};
use chi_nn::optim::{OptimConfig, Optimizer};
use chi_nn::params::ParamStore;
use chi_nn::schedule::BlockCoordinate;
use chi_autodiff::{no_grad, Rng, Tensor};

const INFORMATIVE: usize = 20;
const FILLER: usize = 200;
const VOCAB: usize = INFORMATIVE + FILLER;
pub(super) const BATCH: usize = 16;
const LR: f64 = 0.1;

/// A document: token ids (informative `0..20`, fillers `20..220`, [`OOV`]) and its label.
#[derive(Clone, Debug)]
pub struct Doc {
    /// Token ids.
    pub tokens: Vec<usize>,
    /// Label.
    pub label: f64,
}

/// Draws one document (see the module docs).
pub fn sample_doc(rng: &mut Rng, test: bool, zipf_cdf: &[f64]) -> Doc {
    let k = rng.below(5);
    let label = if k >= 2 { 1.0 } else { 0.0 };
    let mut tokens: Vec<usize> = (0..k).map(|_| rng.below(INFORMATIVE)).collect();
    let fill = 8 + rng.below(53);
    for _ in 0..fill {
        if test && rng.next_f64() < 0.2 {
            tokens.push(OOV);
        } else {
            let u = rng.next_f64();
            let r = zipf_cdf.partition_point(|&c| c < u).min(FILLER - 1);
            tokens.push(INFORMATIVE + r);
        }
    }
    rng.shuffle(&mut tokens);
    Doc { tokens, label }
}

/// Cumulative Zipf weights over the filler tokens.
pub fn zipf_cdf() -> Vec<f64> {
    let w: Vec<f64> = (1..=FILLER).map(|r| 1.0 / r as f64).collect();
    let total: f64 = w.iter().sum();
    w.iter()
        .scan(0.0, |acc, x| {
            *acc += x / total;
            Some(*acc)
        })
        .collect()
}

/// ROC AUC of `scores` for `positive` vs the rest (ties count ½).
pub fn auc(scores: &[f64], positive: &[bool]) -> f64 {
    let (mut num, mut pairs) = (0.0, 0.0);
    for (i, &si) in scores.iter().enumerate() {
        if !positive[i] {
            continue;
        }
        for (j, &sj) in scores.iter().enumerate() {
            if positive[j] {
                continue;
            }
            pairs += 1.0;
            num += if si > sj {
                1.0
            } else if si == sj {
                0.5
            } else {
                0.0
            };
        }
    }
    num / pairs
}

/// Model variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// CA-BSFE trained jointly.
    CaBsfe,
    /// CA-BSFE with block-coordinate `em_steps`.
    CaBsfeEm(u64),
    /// Mean of 5-d embeddings (CA-BSFE's output size).
    Average,
    /// Mean of 10-d embeddings (CA-BSFE's numbers per token, n + m).
    Average10,
}

impl Variant {
    fn label(self) -> String {
        match self {
            Variant::CaBsfe => "CA-BSFE".into(),
            Variant::CaBsfeEm(e) => format!("CA-BSFE em_steps={e}"),
            Variant::Average => "Average, 5-d (= CA-BSFE's output size)".into(),
            Variant::Average10 => "Average, 10-d (= CA-BSFE's numbers per token)".into(),
        }
    }
    /// Short name for unit keys.
    fn key(self) -> String {
        match self {
            Variant::CaBsfe => "ca-bsfe".into(),
            Variant::CaBsfeEm(e) => format!("ca-bsfe-em{e}"),
            Variant::Average => "average".into(),
            Variant::Average10 => "average10".into(),
        }
    }
}

/// Result of one run.
pub struct Outcome {
    /// Test accuracy.
    pub accuracy: f64,
    /// `(AUC, mean χ̃ informative, mean χ̃ filler)` for CA-BSFE variants.
    pub chi: Option<(f64, f64, f64)>,
    /// Test accuracy every 100 steps.
    pub curve: Vec<(f64, f64)>,
}

impl Outcome {
    /// As a unit record.
    fn to_unit(&self) -> UnitData {
        let d = UnitData::new().with_scalar("accuracy", self.accuracy).with_curve("test_accuracy", &self.curve);
        match self.chi {
            Some((a, i, f)) => d.with_vector("chi_auc_informative_filler", vec![a, i, f]),
            None => d,
        }
    }
    /// From a unit record.
    fn from_unit(d: &UnitData) -> Result<Outcome, String> {
        let chi = match d.opt_vector("chi_auc_informative_filler").as_deref() {
            None => None,
            Some(&[a, i, f]) => Some((a, i, f)),
            Some(v) => return Err(format!("chi_auc_informative_filler has {} values, expected 3", v.len())),
        };
        Ok(Outcome { accuracy: d.scalar("accuracy")?, chi, curve: d.curve("test_accuracy")? })
    }
}

/// Trains and evaluates one variant.
pub fn run_once(ctx: &Ctx, v: Variant, steps: usize, n_train: usize, n_test: usize, seed: u64) -> Result<Outcome, String> {
    let mut rng = Rng::new(seed);
    let cdf = zipf_cdf();
    let train: Vec<Doc> = (0..n_train).map(|_| sample_doc(&mut rng, false, &cdf)).collect();
    let test: Vec<Doc> = (0..n_test).map(|_| sample_doc(&mut rng, true, &cdf)).collect();
    let mut store = ParamStore::<f64>::new();
    let (ca, avg, out_dim) = match v {
        Variant::Average => (None, Some(BagAverage::new(&mut store, "avg", VOCAB, 5, &mut rng)), 5),
        Variant::Average10 => (None, Some(BagAverage::new(&mut store, "avg", VOCAB, 10, &mut rng)), 10),
        _ => (Some(CaBsfe::new(&mut store, "bsfe", VOCAB, 5, 5, &mut rng)), None, 5),
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
    let accuracy = |docs: &[Doc]| {
        no_grad(|| {
            let bags: Vec<Vec<usize>> = docs.iter().map(|d| d.tokens.clone()).collect();
            let logits = head.logits(&embed(&bags)).to_vec();
            logits.iter().zip(docs).filter(|(l, d)| (**l > 0.0) == (d.label > 0.5)).count() as f64 / docs.len() as f64
        })
    };
    let mut opt = Optimizer::new(OptimConfig::adagrad(LR));
    let mut order: Vec<usize> = (0..train.len()).collect();
    let mut pos = train.len();
    let batches = std::iter::from_fn(|| {
        if pos + BATCH > order.len() {
            rng.shuffle(&mut order);
            pos = 0;
        }
        let batch = ctx.shard(&order[pos..pos + BATCH]);
        pos += BATCH;
        let bags: Vec<Vec<usize>> = batch.iter().map(|&i| train[i].tokens.clone()).collect();
        let y = Tensor::from_vec(batch.iter().map(|&i| train[i].label).collect(), &[batch.len()]);
        Some((bags, y))
    });
    let curve = ctx.trainer(&store, &mut opt)
        .steps(steps as u64)
        .block(schedule)
        .eval_every(100)
        .evaluate(|_| metric("accuracy", accuracy(&test)))
        .fit(batches, |(bags, y)| ranks::step(head.logits(&embed(&bags)).binary_cross_entropy_with_logits(&y), bags.len()))?
        .eval_curve("accuracy");
    let chi = ca.as_ref().map(|m| {
        let table = m.chi_table();
        let informative: Vec<bool> = (0..VOCAB).map(|t| t < INFORMATIVE).collect();
        let sensitivity: Vec<f64> = table.iter().map(|c| 1.0 - c).collect();
        let mean = |f: &dyn Fn(usize) -> bool| {
            let v: Vec<f64> = (0..VOCAB).filter(|&t| f(t)).map(|t| table[t]).collect();
            v.iter().sum::<f64>() / v.len() as f64
        };
        (auc(&sensitivity, &informative), mean(&|t| t < INFORMATIVE), mean(&|t| t >= INFORMATIVE))
    });
    Ok(Outcome { accuracy: accuracy(&test), chi, curve })
}

/// The experiment.
pub fn run(ctx: &Ctx) -> Result<Report, String> {
    let (steps, n_train, n_test) = if ctx.quick { (600, 1000, 500) } else { (3000, 4000, 2000) };
    let mut rep = Report::default();
    let mut curves = Vec::new();
    let variants = [Variant::CaBsfe, Variant::CaBsfeEm(100), Variant::Average, Variant::Average10];
    ctx.plan_units(variants.len() * ctx.runs);
    for v in variants {
        let mut outs: Vec<Outcome> = Vec::with_capacity(ctx.runs);
        for r in 0..ctx.runs {
            let seed = ctx.run_seed(r);
            let config = format!("variant={v:?} steps={steps} train={n_train} test={n_test} adagrad lr={LR} batch={BATCH} seed={seed}");
            outs.push(ctx.unit(&format!("{}-run{r}", v.key()), &config, || Ok(run_once(ctx, v, steps, n_train, n_test, seed)?.to_unit()), Outcome::from_unit)?);
        }
        let name = v.label();
        ctx.log(&format!("{name}: test accuracy {:.3}", outs.iter().map(|o| o.accuracy).sum::<f64>() / outs.len() as f64));
        rep.rows.push(Row::new("test accuracy", &name, None, outs.iter().map(|o| o.accuracy).collect()));
        if outs[0].chi.is_some() {
            let c: Vec<(f64, f64, f64)> = outs.iter().filter_map(|o| o.chi).collect();
            rep.rows.push(Row::new("χ̃ AUC (informative vs filler)", &name, None, c.iter().map(|x| x.0).collect()));
            rep.rows.push(Row::new("mean χ̃ informative (truth 0)", &name, None, c.iter().map(|x| x.1).collect()));
            rep.rows.push(Row::new("mean χ̃ filler (truth 1)", &name, None, c.iter().map(|x| x.2).collect()));
        }
        curves.push((name, mean_curve(&outs.iter().map(|o| o.curve.clone()).collect::<Vec<_>>())));
    }
    rep.files.extend(write_curves(ctx, "test_accuracy", "ca-bsfe-synthetic: test accuracy over steps (mean over runs)", "step", "accuracy", false, &curves)?);
    judge::interval_notes(&mut rep, &["test accuracy", "χ̃ AUC (informative vs filler)"]);
    let acc = |model: String| judge::values(&rep, "test accuracy", &model).map(<[f64]>::to_vec);
    let (ca, em) = (acc(Variant::CaBsfe.label())?, acc(Variant::CaBsfeEm(100).label())?);
    let (a5, a10) = (acc(Variant::Average.label())?, acc(Variant::Average10.label())?);
    for (avg, a) in [(Variant::Average, a5), (Variant::Average10, a10)] {
        rep.notes.push(judge::judge("test accuracy", "CA-BSFE", &ca, &avg.label(), &a, false));
    }
    rep.notes.push(judge::judge("test accuracy", "CA-BSFE em_steps=100", &em, "CA-BSFE", &ca, false));
    rep.config = vec![
        ("steps".into(), steps.to_string()),
        ("train_docs".into(), n_train.to_string()),
        ("test_docs".into(), n_test.to_string()),
        ("dims".into(), "CA-BSFE n=5, m=5; averaging 5 and 10".into()),
        ("optimizer".into(), format!("adagrad lr {LR}, batch {BATCH}")),
    ];
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auc_extremes() {
        assert_eq!(auc(&[0.9, 0.8, 0.1, 0.2], &[true, true, false, false]), 1.0);
        assert_eq!(auc(&[0.1, 0.2, 0.9, 0.8], &[true, true, false, false]), 0.0);
        assert_eq!(auc(&[0.5, 0.5], &[true, false]), 0.5);
    }

    #[test]
    fn documents_follow_the_generative_process() {
        let mut rng = Rng::new(1);
        let cdf = zipf_cdf();
        for _ in 0..50 {
            let d = sample_doc(&mut rng, false, &cdf);
            let inf = d.tokens.iter().filter(|&&t| t < INFORMATIVE).count();
            assert!(inf <= 4);
            assert_eq!(inf >= 2, d.label > 0.5);
            assert!(!d.tokens.contains(&OOV), "training documents have no unseen tokens");
        }
        assert!((0..50).any(|_| sample_doc(&mut rng, true, &cdf).tokens.contains(&OOV)));
    }

    #[test]
    fn ca_bsfe_learns_the_task() {
        let ctx = Ctx::new("ca-bsfe-synthetic", std::env::temp_dir(), true, 1, 0, false, false);
        let o = run_once(&ctx, Variant::CaBsfe, 300, 500, 300, 4).unwrap();
        assert!(o.accuracy > 0.7, "accuracy {}", o.accuracy);
        let (a, _, _) = o.chi.unwrap();
        assert!(a.is_finite());
    }
}
