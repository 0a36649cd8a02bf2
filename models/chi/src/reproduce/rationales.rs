//! `rationales` — rationalizing neural predictions (Lei 2017, Ch. 3, Table 3.3) on a synthetic
//! multi-aspect review task with planted spans.
//!
//! The thesis measures rationale precision on 994 BeerAdvocate reviews with sentence-level
//! aspect annotations; that data is not available here. The stand-in
//! ([`chi_rcnn::experiments::synthetic_rationale_task`]) has three aspects, each planted as a
//! 3-word span (aspect marker + two polarity words of one of 5 levels) in texts of 15 words,
//! with 20 % of the other words being distracting polarity words of random levels. The target of
//! aspect `a` is its span's level, so the ideal rationale of aspect `a` is exactly its span
//! (20 % of the text). Precision and selection rate are computed exactly as in Table 3.3:
//! precision = the share of selected words that fall inside the aspect's annotated span, pooled
//! over held-out texts; selection rate = the share of words selected. The attention baseline (a
//! bidirectional RCNN with softmax attention over its states, trained on the same data in the
//! same call) selects, on each text, the same number of words as the generator: its top-k
//! attention weights.
//!
//! Each unit of work is one aspect × generator (independent, dependent) × run; the attention
//! row is the baseline trained alongside the dependent generator, so generator and attention
//! precision are paired by aspect and seed. The thesis's anchor is Table 3.3: dependent
//! generator 96.3 / 95.1 / 80.2 %, independent 94.8 / 93.8 / 79.3 %, attention 80.6 / 88.4 /
//! 65.3 % (appearance / smell / palate), which we place beside synthetic aspects 0 / 1 / 2; the
//! aspects are not the same task, so the anchors are for orientation and the claim judged is
//! the ordering (generator above attention at the same selection count).
//!
//! Settings the thesis leaves open or that we chose: fixed random word vectors of size 16 (the
//! thesis keeps pre-trained vectors fixed), RCNN hidden 16 (thesis: 200), one encoder layer
//! (thesis: 2), λ₁ = 0.005 and λ₂ = 2λ₁ (the thesis's ratio), Adam lr 0.005, batch {BATCH}, one
//! sampled rationale per text, and a moving-average baseline (decay 0.9) for REINFORCE (the
//! thesis uses none; `chi gradcheck --estimator reinforce` shows it keeps the estimate
//! unbiased and lowers its variance).

use super::units::UnitData;
use super::{Ctx, Report, Row};
use chi_nn::stats::{PairedTest, Summary};
use chi_rcnn::experiments::{run_rationale_task_on, synthetic_rationale_task, RationaleRunConfig};
use chi_rcnn::GeneratorKind;

const ASPECTS: usize = 3;
const LENGTH: usize = 15;
const DISTRACTOR: f64 = 0.4;
const LAMBDA1: f64 = 0.002;
/// Texts per training step.
pub(super) const BATCH: usize = 32;
/// Table 3.3's aspects, beside which the synthetic aspects are placed.
const ASPECT_NAMES: [&str; ASPECTS] = ["aspect 0 (appearance)", "aspect 1 (smell)", "aspect 2 (palate)"];
/// Table 3.3: `(precision %, selection %)` per aspect.
const PAPER_DEPENDENT: [(f64, f64); ASPECTS] = [(96.3, 14.0), (95.1, 7.0), (80.2, 7.0)];
const PAPER_INDEPENDENT: [(f64, f64); ASPECTS] = [(94.8, 13.0), (93.8, 7.0), (79.3, 7.0)];
const PAPER_ATTENTION: [f64; ASPECTS] = [80.6, 88.4, 65.3];

/// One unit's numbers.
struct Outcome {
    precision: f64,
    selection: f64,
    attention_precision: f64,
    mse: f64,
    attention_mse: f64,
}

/// The experiment.
pub fn run(ctx: &Ctx) -> Result<Report, String> {
    let (n_train, n_test, steps) = if ctx.quick { (400, 100, 150) } else { (2000, 300, 1500) };
    let train = synthetic_rationale_task(n_train, ASPECTS, LENGTH, DISTRACTOR, ctx.seed ^ 0x7a11).map_err(|e| e.to_string())?;
    let test = synthetic_rationale_task(n_test, ASPECTS, LENGTH, DISTRACTOR, ctx.seed ^ 0x7e57).map_err(|e| e.to_string())?;
    let generators = [(GeneratorKind::Independent, "independent"), (GeneratorKind::Dependent { state: 4 }, "dependent")];
    ctx.plan_units(ASPECTS * generators.len() * ctx.runs);
    let mut rep = Report::default();
    // results[generator][aspect] = one outcome per run.
    let mut results: Vec<Vec<Vec<Outcome>>> = (0..generators.len()).map(|_| (0..ASPECTS).map(|_| Vec::new()).collect()).collect();
    for (gi, &(generator, gname)) in generators.iter().enumerate() {
        for aspect in 0..ASPECTS {
            for r in 0..ctx.runs {
                let seed = ctx.run_seed(r);
                let cfg = RationaleRunConfig { aspect, emb: 16, hidden: 16, generator, lambda1: LAMBDA1, lambda2: 2.0 * LAMBDA1, steps, batch: BATCH, lr: 0.005, baseline: true, seed };
                let config = format!("train={n_train} test={n_test} length={LENGTH} distractor={DISTRACTOR} {cfg:?}");
                let o = ctx.unit(
                    &format!("{gname}-aspect{aspect}-run{r}"),
                    &config,
                    || {
                        let t0 = std::time::Instant::now();
                        let res = run_rationale_task_on(&train, &test, &cfg, ctx.processes()).map_err(|e| e.to_string())?;
                        ctx.log(&format!("{gname} aspect {aspect} run {r}: precision {:.3}, selection {:.3}, attention {:.3} ({:.1} s)", res.generator_precision, res.selection_rate, res.attention_precision, t0.elapsed().as_secs_f64()));
                        Ok(UnitData::new()
                            .with_scalar("precision", res.generator_precision)
                            .with_scalar("selection", res.selection_rate)
                            .with_scalar("attention_precision", res.attention_precision)
                            .with_scalar("mse", res.rationale_mse)
                            .with_scalar("attention_mse", res.attention_mse))
                    },
                    |d| {
                        Ok(Outcome {
                            precision: d.scalar("precision")?,
                            selection: d.scalar("selection")?,
                            attention_precision: d.scalar("attention_precision")?,
                            mse: d.scalar("mse")?,
                            attention_mse: d.scalar("attention_mse")?,
                        })
                    },
                )?;
                results[gi][aspect].push(o);
            }
        }
    }
    let pct = |v: Vec<f64>| v.into_iter().map(|x| 100.0 * x).collect::<Vec<f64>>();
    for (aspect, name) in ASPECT_NAMES.iter().enumerate() {
        let (ind, dep) = (&results[0][aspect], &results[1][aspect]);
        let metric = format!("{name}: % precision");
        rep.rows.push(Row::new(&metric, "Generator (dependent)", Some(PAPER_DEPENDENT[aspect].0), pct(dep.iter().map(|o| o.precision).collect())));
        rep.rows.push(Row::new(&metric, "Generator (independent)", Some(PAPER_INDEPENDENT[aspect].0), pct(ind.iter().map(|o| o.precision).collect())));
        rep.rows.push(Row::new(&metric, "Attention (top-k, k = dependent's count)", Some(PAPER_ATTENTION[aspect]), pct(dep.iter().map(|o| o.attention_precision).collect())));
        let metric = format!("{name}: % selected");
        rep.rows.push(Row::new(&metric, "Generator (dependent)", Some(PAPER_DEPENDENT[aspect].1), pct(dep.iter().map(|o| o.selection).collect())));
        rep.rows.push(Row::new(&metric, "Generator (independent)", Some(PAPER_INDEPENDENT[aspect].1), pct(ind.iter().map(|o| o.selection).collect())));
        let metric = format!("{name}: held-out MSE");
        rep.rows.push(Row::new(&metric, "Rationale model (dependent, encoder on selection)", None, dep.iter().map(|o| o.mse).collect()));
        rep.rows.push(Row::new(&metric, "Attention model (all words)", None, dep.iter().map(|o| o.attention_mse).collect()));
    }
    // Pooled over aspects and runs, the pairs (same aspect, same seed) for the ordering claims.
    let flat = |gi: usize, f: &dyn Fn(&Outcome) -> f64| -> Vec<f64> { results[gi].iter().flatten().map(|o| 100.0 * f(o)).collect() };
    let dep_p = flat(1, &|o| o.precision);
    let ind_p = flat(0, &|o| o.precision);
    let att_dep = flat(1, &|o| o.attention_precision);
    let att_ind = flat(0, &|o| o.attention_precision);
    rep.notes.push(format!("dependent generator precision over aspects × runs: {}", Summary::of(&dep_p)));
    rep.notes.push(format!("attention precision at the dependent generator's counts: {}", Summary::of(&att_dep)));
    rep.notes.push(format!(
        "dependent generator vs attention (same words per text), paired over {} aspect × run pairs (thesis: 96.3/95.1/80.2 vs 80.6/88.4/65.3 %): {}",
        dep_p.len(),
        PairedTest::new(&dep_p, &att_dep).describe("dependent generator", "attention", 0.05)
    ));
    rep.notes.push(format!(
        "independent generator vs attention (same words per text), paired: {}",
        PairedTest::new(&ind_p, &att_ind).describe("independent generator", "attention", 0.05)
    ));
    rep.notes.push(format!(
        "dependent vs independent generator (thesis: +1.5/+1.3/+0.9 points), paired by aspect and seed: {}",
        PairedTest::new(&dep_p, &ind_p).describe("dependent", "independent", 0.05)
    ));
    rep.notes.push(format!(
        "the planted span is {:.0} % of each text; the thesis's selection rates (7–14 %) are of real reviews of ~145 words and are not comparable in size",
        100.0 * 3.0 / LENGTH as f64
    ));
    rep.notes.push("synthetic stand-in for BeerAdvocate (not available): aspects 0/1/2 are placed beside appearance/smell/palate for orientation only".into());
    rep.config = vec![
        ("task".into(), format!("{ASPECTS} aspects, {LENGTH} words, 3-word planted spans, distractor rate {DISTRACTOR}, {n_train} train / {n_test} test texts")),
        ("model".into(), "RCNN 2-gram additive normalised, λ adaptive on x, emb 16 (fixed random), hidden 16, 1 encoder layer".into()),
        ("training".into(), format!("λ1 {LAMBDA1}, λ2 {}, Adam lr 0.005, batch {BATCH}, {steps} steps, 1 sample per text, moving-average baseline 0.9", 2.0 * LAMBDA1)),
        ("selection".into(), "held out: p(z_t) > 1/2 (dependent: left to right on its own decisions); attention: top-k weights, k = the generator's count on the text".into()),
    ];
    Ok(rep)
}
