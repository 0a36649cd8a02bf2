//! Statistics sentences of the CA-CNN and CA-RES sweeps: every row's mean, sd, n and 95 % CI,
//! and paper claims "A beats B" judged by a paired t-test over runs that share their seeds
//! (same initial draw order, same batches, same test set), with the test's power stated as the
//! smallest difference it would detect.

use super::{Report, Row};
use chi_nn::stats::{student_t_quantile, PairedTest, Summary, Verdict};

/// Significance level of every comparison.
pub const ALPHA: f64 = 0.05;

/// The smallest true mean difference a two-sided paired t-test at level [`ALPHA`] detects with
/// 80 % power, given the standard deviation `sd_diff` of the paired differences over `n` runs:
/// `(t_{1−α/2, n−1} + t_{0.8, n−1}) · sd_diff / √n` (the usual approximation, which ignores the
/// non-centrality of the t distribution). `NaN` below two runs.
pub fn detectable_difference(sd_diff: f64, n: usize) -> f64 {
    if n < 2 {
        return f64::NAN;
    }
    let df = (n - 1) as f64;
    (student_t_quantile(1.0 - ALPHA / 2.0, df) + student_t_quantile(0.8, df)) * sd_diff / (n as f64).sqrt()
}

/// One note per row of `metric`: "`model`: mean ± sd (95 % CI ± h, n = …)".
pub fn summaries(rep: &mut Report, metric: &str) {
    let notes: Vec<String> = rep.rows.iter().filter(|r| r.metric == metric && !r.values.is_empty()).map(|r| format!("{metric} — {}: {}", r.model, Summary::of(&r.values))).collect();
    rep.notes.extend(notes);
}

fn values<'a>(rows: &'a [Row], metric: &str, model: &str) -> Option<&'a [f64]> {
    rows.iter().find(|r| r.metric == metric && r.model == model).map(|r| r.values.as_slice())
}

/// The claim "`a` > `b`" on `metric` (larger is better), from `source` (e.g. "paper §4.6.2"), or
/// a plain comparison when `source` is `None`: the paired test's sentence, the verdict ("holds",
/// "does not hold: the reverse is significant", "not distinguishable at n runs") and the
/// difference the test could have detected (80 % power). `None` if either row is missing.
pub fn claim(rep: &Report, metric: &str, a: &str, b: &str, source: Option<&str>) -> Option<String> {
    let (va, vb) = (values(&rep.rows, metric, a)?, values(&rep.rows, metric, b)?);
    if va.len() != vb.len() || va.is_empty() {
        return None;
    }
    let t = PairedTest::new(va, vb);
    let d: Vec<f64> = va.iter().zip(vb).map(|(x, y)| x - y).collect();
    let sd = Summary::of(&d).sd;
    let power = if t.n < 2 {
        String::new()
    } else {
        format!("; with sd of the differences {sd:.4} this test detects a true difference of {:.4} with 80% power", detectable_difference(sd, t.n))
    };
    let desc = t.describe(a, b, ALPHA);
    Some(match source {
        None => format!("{metric}: {desc}{power}"),
        Some(src) => {
            let verdict = match (t.n < 2, t.verdict(ALPHA)) {
                (true, _) => "cannot be judged from one run".to_string(),
                (false, Verdict::AGreater) => "holds".to_string(),
                (false, Verdict::BGreater) => "does not hold (the reverse is significant)".to_string(),
                (false, Verdict::NotDistinguishable) => format!("not distinguishable at n = {}", t.n),
            };
            format!("{metric}: '{a} > {b}' ({src}) {verdict} — {desc}{power}")
        }
    })
}

/// Pushes [`claim`] onto the notes when both rows exist.
pub fn push_claim(rep: &mut Report, metric: &str, a: &str, b: &str, source: Option<&str>) {
    if let Some(s) = claim(rep, metric, a, b, source) {
        rep.notes.push(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detectable_difference_matches_the_formula_and_shrinks_with_n() {
        // n = 5: t_.975,4 = 2.776445, t_.80,4 = 0.940965 → 3.717410 · sd / √5.
        let d = detectable_difference(1.0, 5);
        assert!((d - 3.717_410 / 5f64.sqrt()).abs() < 1e-5, "{d}");
        assert!(detectable_difference(1.0, 10) < d);
        assert!(detectable_difference(1.0, 1).is_nan());
    }

    #[test]
    fn claims_are_judged_by_the_paired_test() {
        let mut rep = Report::default();
        rep.rows.push(Row::new("acc", "A", None, vec![0.90, 0.91, 0.92, 0.93, 0.94]));
        rep.rows.push(Row::new("acc", "B", None, vec![0.89, 0.899, 0.91, 0.921, 0.93]));
        rep.rows.push(Row::new("acc", "C", None, vec![0.91, 0.90, 0.93, 0.92, 0.94]));
        let s = claim(&rep, "acc", "A", "B", Some("paper")).unwrap();
        assert!(s.contains("holds") && s.contains("80% power"), "{s}");
        let s = claim(&rep, "acc", "B", "A", Some("paper")).unwrap();
        assert!(s.contains("does not hold"), "{s}");
        let s = claim(&rep, "acc", "A", "C", Some("paper")).unwrap();
        assert!(s.contains("not distinguishable at n = 5"), "{s}");
        assert!(claim(&rep, "acc", "A", "missing", None).is_none());
        summaries(&mut rep, "acc");
        assert_eq!(rep.notes.len(), 3);
        assert!(rep.notes[0].contains("95% CI") && rep.notes[0].contains("n = 5"), "{}", rep.notes[0]);
    }
}
