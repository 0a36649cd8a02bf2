//! Evaluation metrics: accuracy, mean squared error, Pearson and Spearman correlation.

/// Fraction of `pred[i] == target[i]` (0 for empty input).
pub fn accuracy(pred: &[usize], target: &[usize]) -> f64 {
    assert_eq!(pred.len(), target.len(), "accuracy: {} predictions for {} targets", pred.len(), target.len());
    if pred.is_empty() {
        return 0.0;
    }
    pred.iter().zip(target).filter(|(a, b)| a == b).count() as f64 / pred.len() as f64
}

/// Index of the largest value (first on ties; 0 for an empty slice).
pub fn argmax(row: &[f64]) -> usize {
    row.iter().enumerate().fold((0, f64::NEG_INFINITY), |b, (i, &v)| if v > b.1 { (i, v) } else { b }).0
}

/// Index of the largest value of each row of a row-major `[rows, cols]` matrix (first on ties).
pub fn argmax_rows(values: &[f64], cols: usize) -> Vec<usize> {
    values.chunks(cols).map(argmax).collect()
}

/// Mean squared error `Σ(pᵢ − yᵢ)² / n` (0 for empty input).
pub fn mse(pred: &[f64], target: &[f64]) -> f64 {
    assert_eq!(pred.len(), target.len(), "mse: {} predictions for {} targets", pred.len(), target.len());
    if pred.is_empty() {
        return 0.0;
    }
    pred.iter().zip(target).map(|(p, y)| (p - y) * (p - y)).sum::<f64>() / pred.len() as f64
}

/// The mean of `x` (NaN when empty), corrected by a second pass over the deviations: the plain
/// sum of values with a large common offset (targets near 1e15) is off by several units in the
/// last place, which a correlation of their small deviations would then inherit.
pub fn mean(x: &[f64]) -> f64 {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    m + x.iter().map(|v| v - m).sum::<f64>() / n
}

/// The median of `x` (the mean of the two middle values for an even count; NaN when empty).
pub fn median(x: &[f64]) -> f64 {
    let mut s = x.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => 0.5 * (s[n / 2 - 1] + s[n / 2]),
    }
}

/// Pearson correlation `cov(x, y) / (σx σy)`. `NaN` when fewer than two points or a constant
/// input (the correlation is undefined).
pub fn pearson(x: &[f64], y: &[f64]) -> f64 {
    assert_eq!(x.len(), y.len(), "pearson: {} vs {} values", x.len(), y.len());
    let n = x.len();
    // Equal values have no spread (tested directly, as scipy does: their computed deviations
    // can be rounding errors instead of zeros).
    if n < 2 || x.iter().all(|v| *v == x[0]) || y.iter().all(|v| *v == y[0]) {
        return f64::NAN;
    }
    let (mx, my) = (mean(x), mean(y));
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        let (da, db) = (a - mx, b - my);
        sxy += da * db;
        sxx += da * da;
        syy += db * db;
    }
    if sxx == 0.0 || syy == 0.0 {
        return f64::NAN;
    }
    sxy / (sxx.sqrt() * syy.sqrt())
}

/// 1-based ranks with ties given the average of the ranks they span (`[10, 20, 20, 30]` →
/// `[1, 2.5, 2.5, 4]`). NaN sorts last.
pub fn ranks(x: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..x.len()).collect();
    idx.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let mut r = vec![0.0; x.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && x[idx[j + 1]] == x[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            r[k] = avg;
        }
        i = j + 1;
    }
    r
}

/// Spearman rank correlation: Pearson correlation of the average ranks (correct with ties).
pub fn spearman(x: &[f64], y: &[f64]) -> f64 {
    assert_eq!(x.len(), y.len(), "spearman: {} vs {} values", x.len(), y.len());
    // A NaN would be ranked (last) and give a finite correlation of data that has none.
    if x.iter().chain(y).any(|v| v.is_nan()) {
        return f64::NAN;
    }
    pearson(&ranks(x), &ranks(y))
}

/// Running mean of a stream of values (loss over an epoch, ...).
#[derive(Clone, Debug, Default)]
pub struct Mean {
    sum: f64,
    n: u64,
}

impl Mean {
    /// Adds a value.
    pub fn add(&mut self, v: f64) {
        self.sum += v;
        self.n += 1;
    }
    /// The mean so far (`NaN` when empty).
    pub fn value(&self) -> f64 {
        if self.n == 0 {
            f64::NAN
        } else {
            self.sum / self.n as f64
        }
    }
    /// Number of values.
    pub fn count(&self) -> u64 {
        self.n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Correlations are invariant to a common offset: targets near 1e15, whose plain summed
    /// mean is off by a few units in the last place, correlate as their deviations do.
    #[test]
    fn correlations_of_values_with_a_large_offset_equal_those_of_their_deviations() {
        let d: Vec<f64> = (0..100).map(|i| ((i * 37 % 101) as f64 * 0.07).sin() * 3.0).collect();
        let e: Vec<f64> = d.iter().enumerate().map(|(i, v)| v + 0.3 * ((i as f64) * 1.3).cos()).collect();
        let off = |v: &[f64]| v.iter().map(|x| x + 1e15).collect::<Vec<_>>();
        let (r, r_off) = (pearson(&d, &e), pearson(&off(&d), &off(&e)));
        assert!((r - r_off).abs() < 1e-3, "{r} vs {r_off}");
        assert_eq!(mean(&[1e15 + 0.125, 1e15 + 0.25, 1e15 + 0.375]), 1e15 + 0.25);
        assert!(pearson(&[0.1, 0.1, 0.1], &[1.0, 2.0, 4.0]).is_nan() && pearson(&[0.7; 7], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0]).is_nan());
    }

    #[test]
    fn spearman_of_data_with_a_nan_is_nan() {
        assert!(spearman(&[1.0, f64::NAN, 3.0], &[1.0, 2.0, 3.0]).is_nan());
        assert!((spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn median_of_odd_even_and_empty_inputs() {
        assert_eq!((median(&[3.0, 1.0, 2.0]), median(&[4.0, 1.0, 3.0, 2.0])), (2.0, 2.5));
        assert!(median(&[]).is_nan());
    }
}
