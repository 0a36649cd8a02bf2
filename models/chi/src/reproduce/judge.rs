//! Statistics for the notes of the context-aware experiments: every comparison row as mean, sd,
//! n and a 95 % confidence interval, and every "A beats B" claim of the paper judged by a
//! two-sided paired t-test over runs that share their seeds ([`chi_nn::stats::PairedTest`],
//! α = 0.05), with the smallest difference that test detects with 80 % power at the measured
//! spread.
//!
//! A claim "A < B" (or "A > B") is said to **hold** when the paired test finds the claimed
//! direction, to **not hold** when it finds the opposite direction, and to be **not
//! distinguishable at n runs** otherwise.

use super::Report;
use chi_nn::stats::{student_t_quantile, PairedTest, Summary, Verdict};

/// Significance level of every judgement.
pub const ALPHA: f64 = 0.05;
/// Power at which [`detectable_difference`] is quoted.
pub const POWER: f64 = 0.8;

/// The outcome of judging one claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The paired test finds the claimed direction.
    Holds,
    /// The paired test finds the opposite direction.
    DoesNotHold,
    /// The test cannot tell the two apart.
    NotDistinguishable,
}

impl Outcome {
    /// The words used in notes and the README.
    pub fn words(self, n: usize) -> String {
        match self {
            Outcome::Holds => "holds".into(),
            Outcome::DoesNotHold => "does not hold".into(),
            Outcome::NotDistinguishable => format!("not distinguishable at {n} runs"),
        }
    }
}

/// The smallest true mean difference a two-sided paired t-test at level [`ALPHA`] detects with
/// probability [`POWER`], given `n` pairs whose differences have sample standard deviation
/// `sd_diff`: `(t_{1−α/2, n−1} + t_{power, n−1}) · sd_diff / √n` (the usual approximation by the
/// central t distribution). `NaN` for fewer than two pairs.
pub fn detectable_difference(sd_diff: f64, n: usize) -> f64 {
    if n < 2 {
        return f64::NAN;
    }
    let df = (n - 1) as f64;
    (student_t_quantile(1.0 - ALPHA / 2.0, df) + student_t_quantile(POWER, df)) * sd_diff / (n as f64).sqrt()
}

/// Judges the claim "`a` < `b`" (`a_lower = true`) or "`a` > `b`" over paired runs.
pub fn outcome(a: &[f64], b: &[f64], a_lower: bool) -> Outcome {
    match (PairedTest::new(a, b).verdict(ALPHA), a_lower) {
        (Verdict::NotDistinguishable, _) => Outcome::NotDistinguishable,
        (Verdict::BGreater, true) | (Verdict::AGreater, false) => Outcome::Holds,
        _ => Outcome::DoesNotHold,
    }
}

/// A judged claim as a sentence: the claim, the outcome, the paired test over seeds and the power.
pub fn judge(metric: &str, a_name: &str, a: &[f64], b_name: &str, b: &[f64], a_lower: bool) -> String {
    judge_over("seeds", metric, a_name, a, b_name, b, a_lower)
}

/// [`judge`] for pairs that are not seeds, e.g. `"folds"` of a cross-validation.
pub fn judge_over(pairs: &str, metric: &str, a_name: &str, a: &[f64], b_name: &str, b: &[f64], a_lower: bool) -> String {
    let t = PairedTest::new(a, b);
    let rel = if a_lower { "<" } else { ">" };
    if t.n < 2 {
        // One pair has no spread: a t statistic and p-value would be made up.
        return format!("claim {a_name} {rel} {b_name} ({metric}): not tested (a paired t-test needs at least two {pairs}; {} given)", t.n);
    }
    let o = outcome(a, b, a_lower);
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let sd = if d.len() >= 2 { Summary::of(&d).sd } else { f64::NAN };
    format!(
        "claim {a_name} {rel} {b_name} ({metric}): {} (two-sided paired t-test over {} {pairs}: mean difference {:+.4}, t = {:.2}, p = {:.3}; smallest difference detectable at 80 % power: {:.4})",
        if o == Outcome::NotDistinguishable { format!("not distinguishable at {} {pairs}", t.n) } else { o.words(t.n) },
        t.n,
        t.mean_diff,
        t.t,
        t.p,
        detectable_difference(sd, d.len())
    )
}

/// One row as "metric, model: mean ± sd (95 % CI [lo, hi], n = …)".
pub fn describe_row(metric: &str, model: &str, values: &[f64]) -> String {
    if values.is_empty() {
        return format!("{metric}, {model}: no values");
    }
    let s = Summary::of(values);
    if s.n < 2 {
        return format!("{metric}, {model}: {:.4} (n = 1, no interval)", s.mean);
    }
    format!("{metric}, {model}: {:.4} ± {:.4} (95 % CI [{:.4}, {:.4}], n = {})", s.mean, s.sd, s.mean - s.ci95, s.mean + s.ci95, s.n)
}

/// Appends one note per row whose metric is in `metrics` (all rows if empty) with its mean, sd,
/// 95 % CI and n — the table itself prints mean ± sd only.
pub fn interval_notes(rep: &mut Report, metrics: &[&str]) {
    let lines: Vec<String> = rep
        .rows
        .iter()
        .filter(|r| metrics.is_empty() || metrics.iter().any(|m| r.metric == *m))
        .map(|r| describe_row(&r.metric, &r.model, &r.values))
        .collect();
    rep.notes.extend(lines);
}

/// The values of row (`metric`, `model`) in `rep`.
pub fn values<'a>(rep: &'a Report, metric: &str, model: &str) -> Result<&'a [f64], String> {
    rep.rows.iter().find(|r| r.metric == metric && r.model == model).map(|r| r.values.as_slice()).ok_or_else(|| format!("no row '{metric}' for '{model}'"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reproduce::Row;

    #[test]
    fn outcomes_follow_the_paired_test() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [1.5, 2.4, 3.6, 4.5, 5.4];
        assert_eq!(outcome(&a, &b, true), Outcome::Holds);
        assert_eq!(outcome(&a, &b, false), Outcome::DoesNotHold);
        let c = [1.1, 1.9, 3.1, 3.9, 5.0];
        assert_eq!(outcome(&a, &c, true), Outcome::NotDistinguishable);
        let s = judge("error", "A", &a, "B", &b, true);
        assert!(s.starts_with("claim A < B (error): holds"), "{s}");
        assert!(judge("error", "A", &a, "C", &c, true).contains("not distinguishable at 5 seeds"));
        // One seed: no test, and no made-up t or p.
        let one = judge("error", "A", &a[..1], "B", &b[..1], true);
        assert_eq!(one, "claim A < B (error): not tested (a paired t-test needs at least two seeds; 1 given)");
    }

    #[test]
    fn detectable_difference_matches_the_normal_approximation_for_large_n() {
        // z_{0.975} + z_{0.8} = 1.95996 + 0.84162 = 2.80158.
        let d = detectable_difference(1.0, 10_000);
        assert!((d - 2.80158 / 100.0).abs() < 1e-4, "{d}");
        // Smaller n needs a larger difference; a single pair gives no answer.
        assert!(detectable_difference(1.0, 5) > detectable_difference(1.0, 50) * (50.0f64 / 5.0).sqrt());
        assert!(detectable_difference(1.0, 1).is_nan());
    }

    #[test]
    fn interval_notes_give_mean_sd_ci_and_n() {
        let mut rep = Report { rows: vec![Row::new("err", "X", None, vec![1.0, 2.0, 3.0, 4.0]), Row::new("other", "X", None, vec![1.0])], ..Default::default() };
        interval_notes(&mut rep, &["err"]);
        assert_eq!(rep.notes.len(), 1);
        // t_{0.975, 3} = 3.182446; sd = 1.290994; half-width 2.054260.
        assert_eq!(rep.notes[0], "err, X: 2.5000 ± 1.2910 (95 % CI [0.4457, 4.5543], n = 4)");
        assert_eq!(values(&rep, "other", "X").unwrap(), &[1.0]);
        assert!(values(&rep, "nope", "X").is_err());
    }
}
