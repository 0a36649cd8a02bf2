//! Brute-force sums over non-consecutive n-grams: the exact oracles for the scan.
//!
//! Everything here enumerates index tuples `i₁ < … < i_n ≤ t` explicitly (cost `O(Lⁿ)`), so it is
//! only for short sequences. [`closed_form`] is written with tensor ops, so gradients of the
//! brute-force sums come from the tape and can be compared with the scan's hand-written backward.
//!
//! **What the scan equals.** With `β = 1` (un-normalised) or `β = 1 − λ` (normalised):
//!
//! * multiplicative map: `c_n[t] = βⁿ · Σ_{i₁<…<i_n≤t} λ^{t−i₁−n+1} ∏_k p_k[i_k]`, the Table 2.1 sum
//!   (times `βⁿ`); `z_n[t] = β^{n−1}` times the same sum restricted to `i_n = t`;
//! * additive map: `c_n[t] = Σ_{k=1…n} β^{n−k+1} Σ_{i_k<…<i_n≤t} λ^{t−i_k−(n−k)} p_k[i_k]`, and
//!   `z_n[t] = c_{n−1}[t−1] + p_n[t]`.
//!
//! For the additive map the recurrence is the Table 2.1 sum `Σ (p₁[i₁]+…+p_n[i_n]) λ^{t−i₁−n+1}`
//! with the sequence extended infinitely to the left by zero vectors (out-of-range words are zero
//! vectors): the earlier, padded positions of a tuple contribute the geometric factor
//! `(1 − λ)^{−(k−1)}`. Normalised by that context's total weight `C_n = (1 − λ)^{−n}` this is
//! exactly the β-weighted form above. Normalising instead by the finite `C_n[t]` of Table 2.1
//! ([`table21_normalized`]) agrees only as `t → ∞`.

use crate::error::{shape_err, RcnnError, Result};
use crate::scan::{Aggregation, FeatureMap, ScanSpec};
use chi_autodiff::{Float, Tensor};

/// All increasing tuples of `len` indices from `lo..=hi`.
fn tuples(len: usize, lo: usize, hi: usize) -> Vec<Vec<usize>> {
    fn rec(len: usize, lo: usize, hi: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if cur.len() == len {
            out.push(cur.clone());
            return;
        }
        let start = cur.last().map_or(lo, |&l| l + 1);
        for i in start..=hi {
            cur.push(i);
            rec(len, lo, hi, cur, out);
            cur.pop();
        }
    }
    let mut out = Vec::new();
    if len == 0 {
        out.push(Vec::new());
    } else if hi + 1 >= lo + len {
        rec(len, lo, hi, &mut Vec::new(), &mut out);
    }
    out
}

fn check_single(spec: &ScanSpec, p: &[usize], lam: &[usize]) -> Result<usize> {
    let (n, h) = (spec.order, spec.hidden);
    if n == 0 {
        return Err(RcnnError::Config { field: "order", reason: "the n-gram order must be at least 1".into() });
    }
    if p.len() != 2 || p[1] != n * h || p[0] == 0 {
        return Err(shape_err("brute_force (projections)", format!("[length ≥ 1, {}]", n * h), p));
    }
    if !(lam.is_empty() || lam == [1] || lam == [h]) {
        return Err(shape_err("brute_force (decay)", format!("[1] or [{h}]"), lam));
    }
    Ok(p[0])
}

/// The brute-force closed forms of `c_n[t]` and `z_n[t]` for one sequence (see the
/// [module docs](self)), as tensor ops. `p` is `[L, n·h]` (`p_k[t] = W⁽ᵏ⁾x_t`), `lam` a constant
/// decay `[1]` or `[h]`. Returns `(c_n, z_n)`, each `[L, h]`.
pub fn closed_form<T: Float>(spec: &ScanSpec, p: &Tensor<T>, lam: &Tensor<T>) -> Result<(Tensor<T>, Tensor<T>)> {
    let l = check_single(spec, p.shape(), lam.shape())?;
    let (n, h) = (spec.order, spec.hidden);
    let lam = if lam.rank() == 0 { lam.reshape(&[1]) } else { lam.clone() };
    let norm = spec.aggregation == Aggregation::Normalized;
    let ones = Tensor::<T>::ones(&[h]);
    // Powers λ^e and β^e, e = 0…L+n; e = 0 is the constant 1 so that λ = 0 differentiates cleanly.
    let pow = |x: &Tensor<T>, e: usize| if e == 0 { ones.clone() } else { x.pow_scalar(e as f64).mul(&ones) };
    let beta = if norm { lam.rsub_scalar(1.0) } else { Tensor::ones(&[1]) };
    let lp: Vec<Tensor<T>> = (0..l + n + 1).map(|e| pow(&lam, e)).collect();
    let bp: Vec<Tensor<T>> = (0..n + 2).map(|e| pow(&beta, e)).collect();
    let row = |k: usize, i: usize| p.narrow(0, i, 1).reshape(&[n * h]).narrow(0, k * h, h);
    let acc = |s: Option<Tensor<T>>, x: Tensor<T>| Some(match s {
        Some(s) => s.add(&x),
        None => x,
    });
    let zero = Tensor::<T>::zeros(&[h]);
    let mut cs = Vec::with_capacity(l);
    let mut zs = Vec::with_capacity(l);
    match spec.map {
        FeatureMap::Multiplicative => {
            for t in 0..l {
                let (mut c, mut z) = (None, None);
                for tup in tuples(n, 0, t) {
                    let mut prod = row(0, tup[0]);
                    for (k, &i) in tup.iter().enumerate().skip(1) {
                        prod = prod.mul(&row(k, i));
                    }
                    let term = prod.mul(&lp[t - tup[0] + 1 - n]);
                    if tup[n - 1] == t {
                        z = acc(z, term.clone());
                    }
                    c = acc(c, term);
                }
                cs.push(c.map_or(zero.clone(), |c| c.mul(&bp[n])));
                zs.push(z.map_or(zero.clone(), |z| z.mul(&bp[n - 1])));
            }
        }
        FeatureMap::Additive => {
            // c_m[t] for the sub-chain of orders k…m, closed form.
            let c_add = |m: usize, t: usize| -> Option<Tensor<T>> {
                let mut c = None;
                for k in 0..m {
                    for tup in tuples(m - k, 0, t) {
                        let term = row(k, tup[0]).mul(&lp[t - tup[0] + 1 - (m - k)]).mul(&bp[m - k]);
                        c = acc(c, term);
                    }
                }
                c
            };
            for t in 0..l {
                cs.push(c_add(n, t).unwrap_or_else(|| zero.clone()));
                let prev = if n >= 2 && t >= 1 { c_add(n - 1, t - 1) } else { None };
                zs.push(match prev {
                    Some(c) => c.add(&row(n - 1, t)),
                    None => row(n - 1, t),
                });
            }
        }
    }
    Ok((Tensor::stack(&cs, 0), Tensor::stack(&zs, 0)))
}

/// Table 2.1's normalised aggregation taken literally, in `f64`: for each `t`,
/// `Σ_{i₁<…<i_n≤t} z[i₁,…,i_n] λ^{t−i₁−n+1} / C_n[t]` with `C_n[t] = Σ λ^{t−i₁−n+1}` over the same
/// (finite) tuples, `z` the additive or multiplicative feature map of the `p_k` rows.
/// `p` is `[L][n·h]` row-major; returns `[L][h]` (zero where no tuple fits yet).
pub fn table21_normalized(map: FeatureMap, order: usize, hidden: usize, p: &[f64], lam: f64) -> Vec<f64> {
    let (n, h) = (order, hidden);
    let l = p.len() / (n * h);
    let mut out = vec![0.0; l * h];
    for t in 0..l {
        let mut total = 0.0;
        for tup in tuples(n, 0, t) {
            let wgt = lam.powi((t - tup[0] + 1 - n) as i32);
            total += wgt;
            for j in 0..h {
                let v = match map {
                    FeatureMap::Multiplicative => tup.iter().enumerate().map(|(k, &i)| p[i * n * h + k * h + j]).product::<f64>(),
                    FeatureMap::Additive => tup.iter().enumerate().map(|(k, &i)| p[i * n * h + k * h + j]).sum::<f64>(),
                };
                out[t * h + j] += wgt * v;
            }
        }
        if total > 0.0 {
            out[t * h..(t + 1) * h].iter_mut().for_each(|v| *v /= total);
        }
    }
    out
}

/// The n-gram string-kernel feature map of *Interpretable Neural Models for NLP* (App. A.2),
/// `φ_n(x) = Σ_{i₁<…<i_n} λ^{|x|−i₁−n+1} x_{i₁} ⊗ … ⊗ x_{i_n}`, for a sequence `x` of `len` vectors
/// of size `d` (row-major), as a flat `dⁿ` tensor.
pub fn string_kernel_features(x: &[f64], d: usize, n: usize, lam: f64) -> Vec<f64> {
    let len = x.len() / d;
    let mut phi = vec![0.0; d.pow(n as u32)];
    if len == 0 {
        return phi;
    }
    for tup in tuples(n, 0, len - 1) {
        let wgt = lam.powi((len - 1 - tup[0] + 1 - n) as i32);
        // Outer product of the chosen vectors, accumulated into phi.
        let mut prod = vec![wgt];
        for &i in &tup {
            let v = &x[i * d..(i + 1) * d];
            prod = prod.iter().flat_map(|&a| v.iter().map(move |&b| a * b)).collect();
        }
        phi.iter_mut().zip(&prod).for_each(|(p, q)| *p += q);
    }
    phi
}

/// `K_n(x, y) = ⟨φ_n(x), φ_n(y)⟩` for two sequences of `d`-vectors (see [`string_kernel_features`]).
pub fn string_kernel(x: &[f64], y: &[f64], d: usize, n: usize, lam: f64) -> f64 {
    let a = string_kernel_features(x, d, n, lam);
    let b = string_kernel_features(y, d, n, lam);
    a.iter().zip(&b).map(|(u, v)| u * v).sum()
}

#[cfg(test)]
mod tests {
    use super::tuples;
    #[test]
    fn tuples_count_binomials() {
        assert_eq!(tuples(3, 0, 4).len(), 10);
        assert_eq!(tuples(2, 0, 0).len(), 0);
        assert_eq!(tuples(1, 0, 2), vec![vec![0], vec![1], vec![2]]);
    }
}
