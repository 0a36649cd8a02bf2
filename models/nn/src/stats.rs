//! Statistics for claims over seeds: mean, sample standard deviation and a Student-t 95 %
//! confidence interval of a set of runs, and the paired t-test that decides whether "A beats B"
//! over runs sharing their seeds, or the two are not distinguishable.
//!
//! The Student-t distribution function is computed from the regularised incomplete beta
//! function (continued fraction, as in Press et al., "Numerical Recipes", §6.4); its quantiles by
//! bisection on it.

/// `ln Γ(x)` for `x > 0` (Lanczos approximation, g = 7, n = 9; relative error below 1e-14).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        return std::f64::consts::PI.ln() - (std::f64::consts::PI * x).sin().ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let mut a = G[0];
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Continued fraction of the incomplete beta function (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularised incomplete beta function `I_x(a, b)`.
pub fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front = (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

/// The Student-t distribution function `P(T ≤ t)` with `df > 0` degrees of freedom.
pub fn student_t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    let tail = 0.5 * inc_beta(df / 2.0, 0.5, x);
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The quantile `q` (in (0, 1)) of the Student-t distribution with `df` degrees of freedom.
pub fn student_t_quantile(q: f64, df: f64) -> f64 {
    assert!(q > 0.0 && q < 1.0 && df > 0.0, "student_t_quantile: q {q} must be in (0, 1) and df {df} > 0");
    let (mut lo, mut hi) = (-1e6, 1e6);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if student_t_cdf(mid, df) < q {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Mean, spread and 95 % confidence interval of `n` runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// Number of runs.
    pub n: usize,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (`n − 1` in the denominator; 0 for one run).
    pub sd: f64,
    /// Half-width of the Student-t 95 % confidence interval of the mean (`NaN` for one run: no
    /// interval can be given).
    pub ci95: f64,
}

impl Summary {
    /// Summarises `values` (at least one).
    pub fn of(values: &[f64]) -> Summary {
        assert!(!values.is_empty(), "Summary::of: no values");
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        if n < 2 {
            return Summary { n, mean, sd: 0.0, ci95: f64::NAN };
        }
        let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
        let ci95 = student_t_quantile(0.975, (n - 1) as f64) * sd / (n as f64).sqrt();
        Summary { n, mean, sd, ci95 }
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.n < 2 {
            write!(f, "{:.4} (n = 1)", self.mean)
        } else {
            write!(f, "{:.4} ± {:.4} (sd; 95% CI ± {:.4}, n = {})", self.mean, self.sd, self.ci95, self.n)
        }
    }
}

/// The verdict of a paired comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A's values are significantly larger.
    AGreater,
    /// B's values are significantly larger.
    BGreater,
    /// The test cannot tell them apart at the chosen level.
    NotDistinguishable,
}

/// A two-sided paired t-test of `a` against `b` (the same runs: same seeds, same data).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairedTest {
    /// Pairs.
    pub n: usize,
    /// Mean of `a − b`.
    pub mean_diff: f64,
    /// The t statistic (`±∞` when every difference is equal and non-zero).
    pub t: f64,
    /// Two-sided p-value (1 when fewer than two pairs).
    pub p: f64,
}

impl PairedTest {
    /// Tests `a` against `b` (equal lengths).
    pub fn new(a: &[f64], b: &[f64]) -> PairedTest {
        assert_eq!(a.len(), b.len(), "PairedTest: {} values against {}", a.len(), b.len());
        let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
        let n = d.len();
        if n < 2 {
            return PairedTest { n, mean_diff: d.first().copied().unwrap_or(0.0), t: 0.0, p: 1.0 };
        }
        let s = Summary::of(&d);
        let se = s.sd / (n as f64).sqrt();
        let t = if se == 0.0 {
            if s.mean == 0.0 {
                0.0
            } else {
                s.mean.signum() * f64::INFINITY
            }
        } else {
            s.mean / se
        };
        let p = if t.is_infinite() { 0.0 } else { 2.0 * (1.0 - student_t_cdf(t.abs(), (n - 1) as f64)) };
        PairedTest { n, mean_diff: s.mean, t, p }
    }

    /// The verdict at level `alpha` (e.g. 0.05).
    pub fn verdict(&self, alpha: f64) -> Verdict {
        if self.p < alpha {
            if self.mean_diff > 0.0 {
                Verdict::AGreater
            } else {
                Verdict::BGreater
            }
        } else {
            Verdict::NotDistinguishable
        }
    }

    /// A sentence: "`a_name` > `b_name` (paired t-test, n = 5, mean difference 0.031, p = 0.004)"
    /// or "`a_name` and `b_name` are not distinguishable at n = 5 (…)";
    /// `>` means larger.
    pub fn describe(&self, a_name: &str, b_name: &str, alpha: f64) -> String {
        if self.n < 2 {
            return format!("{a_name} vs {b_name}: cannot be judged from n = {} run (difference {:+.4}; a paired test needs n ≥ 2)", self.n, self.mean_diff);
        }
        let stats = format!("paired t-test, n = {}, mean difference {:+.4}, p = {:.3}", self.n, self.mean_diff, self.p);
        match self.verdict(alpha) {
            Verdict::AGreater => format!("{a_name} > {b_name} ({stats})"),
            Verdict::BGreater => format!("{a_name} < {b_name} ({stats})"),
            Verdict::NotDistinguishable => format!("{a_name} and {b_name} are not distinguishable at n = {} ({stats}, α = {alpha})", self.n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_distribution_matches_tables() {
        // Reference values: scipy.stats.t (confirmed here by Simpson integration of the density).
        assert!((student_t_cdf(2.0, 5.0) - 0.949_030_260_585_070_6).abs() < 1e-12);
        assert!((student_t_cdf(-1.0, 1.0) - 0.25).abs() < 1e-12); // Cauchy
        assert!((student_t_cdf(0.0, 3.0) - 0.5).abs() < 1e-15);
        for (df, q) in [(1.0, 12.706_204_736_174_7), (2.0, 4.302_652_729_749_464), (9.0, 2.262_157_162_798_205), (29.0, 2.045_229_642_132_703)] {
            assert!((student_t_quantile(0.975, df) - q).abs() < 1e-9, "df {df}");
        }
        // Large df approaches the normal: 1.959964.
        assert!((student_t_quantile(0.975, 1e6) - 1.959_966).abs() < 1e-5);
    }

    #[test]
    fn summary_and_paired_test_by_hand() {
        let s = Summary::of(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!((s.n, s.mean), (4, 2.5));
        assert!((s.sd - (5.0f64 / 3.0).sqrt()).abs() < 1e-15);
        assert!((s.ci95 - 3.182_446_305_284_263 * s.sd / 2.0).abs() < 1e-9);
        assert!(Summary::of(&[7.0]).ci95.is_nan());
        // d = [1, 2, 3, 2]: mean 2, sd √(2/3), t = 2 / (√(2/3)/2) = 4.898979, df 3 → p = 0.016277 (numerical integration of the density)
        let t = PairedTest::new(&[3.0, 5.0, 6.0, 4.0], &[2.0, 3.0, 3.0, 2.0]);
        assert!((t.t - 4.898_979_485_566_356).abs() < 1e-12);
        assert!((t.p - 0.016_276_603).abs() < 1e-8, "{}", t.p);
        assert_eq!(t.verdict(0.05), Verdict::AGreater);
        assert_eq!(t.verdict(0.01), Verdict::NotDistinguishable);
        assert_eq!(PairedTest::new(&[1.0, 2.0], &[2.0, 3.0]).verdict(0.05), Verdict::BGreater);
        assert!(PairedTest::new(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]).describe("A", "B", 0.05).contains("not distinguishable at n = 3"));
        assert!(PairedTest::new(&[1.0], &[2.0]).describe("A", "B", 0.05).contains("cannot be judged from n = 1"));
    }
}
