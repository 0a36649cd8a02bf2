//! The recurrent-convolution scan: the dynamic program of Table 2.2 / Appendix A.1 of
//! *Interpretable Neural Models for Natural Language Processing* (Lei, 2017), over a batch.
//!
//! Given the projections `p_k[t] = W⁽ᵏ⁾x_t` (`k = 1…n`, all computed by one GEMM before the scan)
//! and a decay `a` (constant, per hidden unit, or per step), each batch row runs
//!
//! ```text
//! u_1[t] = p_1[t]
//! u_k[t] = c_{k−1}[t−1] ⊙ p_k[t]        (multiplicative map)
//! u_k[t] = c_{k−1}[t−1] + p_k[t]        (additive map)
//! c_k[t] = a_t ⊙ c_k[t−1] + β_t ⊙ u_k[t]   β_t = 1 (un-normalised) or 1 − a_t (normalised)
//! z_n[t] = u_n[t]
//! ```
//!
//! with `c_k[−1] = 0`. A masked-out step (padding, or a word a rationale did not select) carries
//! every state unchanged: `c_k[t] = c_k[t−1]`.
//!
//! The output is `[B, T, (n+1)·h]`: `c_1[t] … c_n[t]` followed by `z_n[t]`.
//!
//! Two implementations with identical values: [`scan_composed`] records one small op per step on
//! the tape (the reference, and differentiable to any order), and [`scan_fused`] is a single
//! [`CustomOp`] whose forward and backward are plain loops. Its backward, when it is itself being
//! recorded (`create_graph`), switches to the same adjoint recurrence written with tensor ops, so
//! second derivatives through the fused op are exact too.

use crate::error::{shape_err, RcnnError, Result};
use chi_autodiff::{is_grad_enabled, CustomOp, Float, Tensor};
use std::rc::Rc;

/// How the n words of a non-consecutive n-gram are combined (Table 2.1, "feature mapping").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeatureMap {
    /// `W₁x_i + W₂x_j + W₃x_k`.
    Additive,
    /// `W₁x_i ⊙ W₂x_j ⊙ W₃x_k` (the low-rank tensor map; an output matrix `O` may follow).
    Multiplicative,
}

/// Whether the decayed sums are normalised by `(1 − λ)` factors (Table 2.2 (b), (c)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregation {
    /// `c_k[t] = λ c_k[t−1] + u_k[t]`.
    Unnormalized,
    /// `c_k[t] = λ c_k[t−1] + (1 − λ) u_k[t]`.
    Normalized,
}

/// The static description of a scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanSpec {
    /// n-gram order `n ≥ 1`.
    pub order: usize,
    /// Hidden size `h`.
    pub hidden: usize,
    /// Feature map.
    pub map: FeatureMap,
    /// Aggregation.
    pub aggregation: Aggregation,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LamKind {
    Scalar,
    PerDim,
    PerStep,
}

struct Dims {
    b: usize,
    t: usize,
    n: usize,
    h: usize,
    lam: LamKind,
}

fn check(spec: &ScanSpec, proj: &[usize], lam: &[usize], mask: Option<&[bool]>) -> Result<Dims> {
    if spec.order == 0 {
        return Err(RcnnError::Config { field: "order", reason: "the n-gram order must be at least 1".into() });
    }
    if spec.hidden == 0 {
        return Err(RcnnError::Config { field: "hidden", reason: "the hidden size must be at least 1".into() });
    }
    let (n, h) = (spec.order, spec.hidden);
    if proj.len() != 3 || proj[2] != n * h {
        return Err(shape_err("rcnn_scan (projections)", format!("[batch, time, {}] (order {n} × hidden {h})", n * h), proj));
    }
    let (b, t) = (proj[0], proj[1]);
    if b == 0 || t == 0 {
        return Err(shape_err("rcnn_scan (projections)", "a non-empty batch and time axis", proj));
    }
    let kind = if lam == [1] || lam.is_empty() {
        LamKind::Scalar
    } else if lam == [h] {
        LamKind::PerDim
    } else if lam == [b, t, h] {
        LamKind::PerStep
    } else {
        return Err(shape_err("rcnn_scan (decay)", format!("[1], [{h}] or [{b}, {t}, {h}] (projections {proj:?})"), lam));
    };
    if let Some(m) = mask {
        if m.len() != b * t {
            return Err(shape_err("rcnn_scan (mask)", format!("{} flags for [batch {b}, time {t}]", b * t), &[m.len()]));
        }
    }
    Ok(Dims { b, t, n, h, lam: kind })
}

/// The scan as composed tensor ops (one small set of ops per step; differentiable to any order).
///
/// `proj` is `[B, T, n·h]` (`p_1 … p_n` side by side), `lam` is `[1]`, `[h]` or `[B, T, h]`, and
/// `mask` (row-major `[B, T]`, `true` = a real step) makes masked steps carry the state.
/// Returns `[B, T, (n+1)·h]` (see the [module docs](self)).
pub fn scan_composed<T: Float>(spec: &ScanSpec, proj: &Tensor<T>, lam: &Tensor<T>, mask: Option<&[bool]>) -> Result<Tensor<T>> {
    let d = check(spec, proj.shape(), lam.shape(), mask)?;
    let (b, n, h) = (d.b, d.n, d.h);
    let norm = spec.aggregation == Aggregation::Normalized;
    let mult = spec.map == FeatureMap::Multiplicative;
    let lam_flat = if lam.rank() == 0 { lam.reshape(&[1]) } else { lam.clone() };
    let mut c: Vec<Tensor<T>> = (0..n).map(|_| Tensor::zeros(&[b, h])).collect();
    let mut rows = Vec::with_capacity(d.t);
    for t in 0..d.t {
        let pt = proj.narrow(1, t, 1).reshape(&[b, n * h]);
        let a = match d.lam {
            LamKind::PerStep => lam_flat.narrow(1, t, 1).reshape(&[b, h]),
            _ => lam_flat.clone(),
        };
        let beta = if norm { Some(a.rsub_scalar(1.0)) } else { None };
        let m = mask.map(|m| step_mask::<T>(m, d.t, t, b));
        let mut z = None;
        for k in (0..n).rev() {
            let pk = pt.narrow(1, k * h, h);
            let u = if k == 0 {
                pk
            } else if mult {
                c[k - 1].mul(&pk)
            } else {
                c[k - 1].add(&pk)
            };
            if k == n - 1 {
                z = Some(u.clone());
            }
            let bu = match &beta {
                Some(bt) => bt.mul(&u),
                None => u,
            };
            let next = a.mul(&c[k]).add(&bu);
            c[k] = match &m {
                Some((on, off)) => next.mul(on).add(&c[k].mul(off)),
                None => next,
            };
        }
        let mut parts = c.clone();
        parts.push(z.expect("order ≥ 1"));
        rows.push(Tensor::concat(&parts, 1));
    }
    Ok(Tensor::stack(&rows, 1))
}

/// `(m, 1 − m)` for step `t` as `[B, 1]` constants.
fn step_mask<T: Float>(mask: &[bool], time: usize, t: usize, b: usize) -> (Tensor<T>, Tensor<T>) {
    let on: Vec<T> = (0..b).map(|bi| if mask[bi * time + t] { T::ONE } else { T::ZERO }).collect();
    let off: Vec<T> = on.iter().map(|&v| T::ONE - v).collect();
    (Tensor::from_vec(on, &[b, 1]), Tensor::from_vec(off, &[b, 1]))
}

/// The scan as one fused op: plain loops forward and backward (see the [module docs](self)).
/// Same arguments and result as [`scan_composed`].
pub fn scan_fused<T: Float>(spec: &ScanSpec, proj: &Tensor<T>, lam: &Tensor<T>, mask: Option<&[bool]>) -> Result<Tensor<T>> {
    let d = check(spec, proj.shape(), lam.shape(), mask)?;
    let lam = if lam.rank() == 0 { lam.reshape(&[1]) } else { lam.clone() };
    let op = RcnnScan { spec: *spec, batch: d.b, time: d.t, mask: mask.map(|m| Rc::new(m.to_vec())) };
    Ok(Tensor::apply_custom(Rc::new(op), &[proj.clone(), lam]))
}

/// The fused scan op (inputs: projections, decay).
struct RcnnScan {
    spec: ScanSpec,
    batch: usize,
    time: usize,
    mask: Option<Rc<Vec<bool>>>,
}

impl RcnnScan {
    fn dims<T: Float>(&self, lam: &Tensor<T>) -> Dims {
        check(&self.spec, &[self.batch, self.time, self.spec.order * self.spec.hidden], lam.shape(), self.mask.as_deref().map(|v| &v[..]))
            .expect("shapes were checked when the op was built")
    }
    #[inline]
    fn on(&self, b: usize, t: usize) -> bool {
        self.mask.as_ref().is_none_or(|m| m[b * self.time + t])
    }

    /// The decay `a` and input weight `β` of step `(b, t)` for every hidden unit.
    fn decay_row<T: Float>(&self, lam: &[T], d: &Dims, b: usize, t: usize, a: &mut [T], beta: &mut [T]) {
        let norm = self.spec.aggregation == Aggregation::Normalized;
        match d.lam {
            LamKind::Scalar => a.iter_mut().for_each(|v| *v = lam[0]),
            LamKind::PerDim => a.copy_from_slice(&lam[..d.h]),
            LamKind::PerStep => a.copy_from_slice(&lam[(b * d.t + t) * d.h..][..d.h]),
        }
        for (bv, &av) in beta.iter_mut().zip(a.iter()) {
            *bv = if norm { T::ONE - av } else { T::ONE };
        }
    }

    fn forward_loops<T: Float>(&self, proj: &[T], lam: &[T], d: &Dims) -> Vec<T> {
        let (n, h) = (d.n, d.h);
        let mult = self.spec.map == FeatureMap::Multiplicative;
        let w = (n + 1) * h;
        let mut out = vec![T::ZERO; d.b * d.t * w];
        let mut c = vec![T::ZERO; n * h];
        let (mut a, mut beta) = (vec![T::ZERO; h], vec![T::ZERO; h]);
        for b in 0..d.b {
            c.iter_mut().for_each(|v| *v = T::ZERO);
            for t in 0..d.t {
                let on = self.on(b, t);
                if t == 0 || d.lam == LamKind::PerStep {
                    self.decay_row(lam, d, b, t, &mut a, &mut beta);
                }
                let p = &proj[(b * d.t + t) * n * h..][..n * h];
                let row = &mut out[(b * d.t + t) * w..][..w];
                // Descending k: u_k reads c_{k−1}[t−1] before that block is overwritten.
                for k in (0..n).rev() {
                    let (lower, upper) = c.split_at_mut(k * h);
                    let ck = &mut upper[..h];
                    let pk = &p[k * h..][..h];
                    let z = &mut row[n * h..];
                    for j in 0..h {
                        let u = if k == 0 {
                            pk[j]
                        } else if mult {
                            lower[(k - 1) * h + j] * pk[j]
                        } else {
                            lower[(k - 1) * h + j] + pk[j]
                        };
                        if k == n - 1 {
                            z[j] = u;
                        }
                        if on {
                            ck[j] = a[j] * ck[j] + beta[j] * u;
                        }
                    }
                }
                row[..n * h].copy_from_slice(&c);
            }
        }
        out
    }

    /// The adjoint recurrence in plain loops: gradients for the projections and the decay.
    fn backward_loops<T: Float>(&self, proj: &[T], lam: &[T], out: &[T], g: &[T], d: &Dims) -> (Vec<T>, Vec<T>) {
        let (n, h) = (d.n, d.h);
        let norm = self.spec.aggregation == Aggregation::Normalized;
        let mult = self.spec.map == FeatureMap::Multiplicative;
        let w = (n + 1) * h;
        let mut dproj = vec![T::ZERO; proj.len()];
        let mut dlam = vec![T::ZERO; lam.len()];
        let mut dc = vec![T::ZERO; n * h];
        let mut du = vec![T::ZERO; n * h];
        let mut da = vec![T::ZERO; h];
        let zeros = vec![T::ZERO; n * h];
        let (mut a, mut beta) = (vec![T::ZERO; h], vec![T::ZERO; h]);
        for b in 0..d.b {
            dc.iter_mut().for_each(|v| *v = T::ZERO);
            for t in (0..d.t).rev() {
                let on = self.on(b, t);
                if t + 1 == d.t || d.lam == LamKind::PerStep {
                    self.decay_row(lam, d, b, t, &mut a, &mut beta);
                }
                let base = (b * d.t + t) * n * h;
                let p = &proj[base..][..n * h];
                let grow = &g[(b * d.t + t) * w..][..w];
                let cp = if t > 0 { &out[(b * d.t + t - 1) * w..][..n * h] } else { &zeros[..] };
                for (dcv, &gv) in dc.iter_mut().zip(&grow[..n * h]) {
                    *dcv += gv;
                }
                da.iter_mut().for_each(|v| *v = T::ZERO);
                for k in 0..n {
                    let (dck, duk, pk, cpk) = (&dc[k * h..][..h], &mut du[k * h..][..h], &p[k * h..][..h], &cp[k * h..][..h]);
                    for j in 0..h {
                        duk[j] = if on { beta[j] * dck[j] } else { T::ZERO };
                        if on {
                            let coef = if norm {
                                let u = if k == 0 {
                                    pk[j]
                                } else if mult {
                                    cp[(k - 1) * h + j] * pk[j]
                                } else {
                                    cp[(k - 1) * h + j] + pk[j]
                                };
                                cpk[j] - u
                            } else {
                                cpk[j]
                            };
                            da[j] += dck[j] * coef;
                        }
                    }
                }
                for (duv, &gz) in du[(n - 1) * h..].iter_mut().zip(&grow[n * h..]) {
                    *duv += gz;
                }
                match d.lam {
                    LamKind::Scalar => dlam[0] += da.iter().fold(T::ZERO, |s, &v| s + v),
                    LamKind::PerDim => dlam.iter_mut().zip(&da).for_each(|(l, &v)| *l += v),
                    LamKind::PerStep => dlam[(b * d.t + t) * h..][..h].iter_mut().zip(&da).for_each(|(l, &v)| *l += v),
                }
                if on {
                    for k in 0..n {
                        dc[k * h..][..h].iter_mut().zip(&a).for_each(|(v, &av)| *v *= av);
                    }
                }
                let dp = &mut dproj[base..][..n * h];
                dp[..h].copy_from_slice(&du[..h]);
                for k in 1..n {
                    let (dlow, _) = dc.split_at_mut(k * h);
                    let dcl = &mut dlow[(k - 1) * h..];
                    let (duk, pk, cpl) = (&du[k * h..][..h], &p[k * h..][..h], &cp[(k - 1) * h..][..h]);
                    let dpk = &mut dp[k * h..][..h];
                    for j in 0..h {
                        if mult {
                            dcl[j] += duk[j] * pk[j];
                            dpk[j] = duk[j] * cpl[j];
                        } else {
                            dcl[j] += duk[j];
                            dpk[j] = duk[j];
                        }
                    }
                }
            }
        }
        (dproj, dlam)
    }

    /// The same adjoint recurrence with tensor ops, so that it is recorded under `create_graph`.
    fn backward_tensors<T: Float>(&self, proj: &Tensor<T>, lam: &Tensor<T>, out: &Tensor<T>, g: &Tensor<T>, d: &Dims) -> (Tensor<T>, Tensor<T>) {
        let (b, n, h) = (d.b, d.n, d.h);
        let w = (n + 1) * h;
        let norm = self.spec.aggregation == Aggregation::Normalized;
        let mult = self.spec.map == FeatureMap::Multiplicative;
        let mut dc: Vec<Tensor<T>> = (0..n).map(|_| Tensor::zeros(&[b, h])).collect();
        let mut dps = vec![None; d.t];
        let mut das = vec![None; d.t];
        for t in (0..d.t).rev() {
            let pt = proj.narrow(1, t, 1).reshape(&[b, n * h]);
            let gt = g.narrow(1, t, 1).reshape(&[b, w]);
            let a = match d.lam {
                LamKind::PerStep => lam.narrow(1, t, 1).reshape(&[b, h]),
                _ => lam.clone(),
            };
            let beta = if norm { Some(a.rsub_scalar(1.0)) } else { None };
            let m = self.mask.as_ref().map(|mk| step_mask::<T>(mk, d.t, t, b));
            let cp: Vec<Tensor<T>> = (0..n)
                .map(|k| if t > 0 { out.narrow(1, t - 1, 1).reshape(&[b, w]).narrow(1, k * h, h) } else { Tensor::zeros(&[b, h]) })
                .collect();
            let pk: Vec<Tensor<T>> = (0..n).map(|k| pt.narrow(1, k * h, h)).collect();
            for (k, dck) in dc.iter_mut().enumerate() {
                *dck = dck.add(&gt.narrow(1, k * h, h));
            }
            let mut du = Vec::with_capacity(n);
            let mut da: Option<Tensor<T>> = None;
            for k in 0..n {
                let gk = match &m {
                    Some((on, _)) => dc[k].mul(on),
                    None => dc[k].clone(),
                };
                let mut duk = match &beta {
                    Some(bt) => gk.mul(bt),
                    None => gk.clone(),
                };
                if k == n - 1 {
                    duk = duk.add(&gt.narrow(1, n * h, h));
                }
                du.push(duk);
                let coef = if norm {
                    let u = if k == 0 {
                        pk[0].clone()
                    } else if mult {
                        cp[k - 1].mul(&pk[k])
                    } else {
                        cp[k - 1].add(&pk[k])
                    };
                    cp[k].sub(&u)
                } else {
                    cp[k].clone()
                };
                let term = gk.mul(&coef);
                da = Some(match da {
                    Some(s) => s.add(&term),
                    None => term,
                });
            }
            for k in 0..n {
                dc[k] = match &m {
                    Some((on, off)) => dc[k].mul(&a.mul(on).add(off)),
                    None => dc[k].mul(&a),
                };
            }
            let mut dp = vec![du[0].clone()];
            for k in 1..n {
                if mult {
                    dc[k - 1] = dc[k - 1].add(&du[k].mul(&pk[k]));
                    dp.push(du[k].mul(&cp[k - 1]));
                } else {
                    dc[k - 1] = dc[k - 1].add(&du[k]);
                    dp.push(du[k].clone());
                }
            }
            dps[t] = Some(Tensor::concat(&dp, 1));
            das[t] = da;
        }
        let dproj = Tensor::stack(&dps.into_iter().map(|x| x.expect("every step visited")).collect::<Vec<_>>(), 1);
        let das: Vec<Tensor<T>> = das.into_iter().map(|x| x.expect("every step visited")).collect();
        let dlam = match d.lam {
            LamKind::PerStep => Tensor::stack(&das, 1),
            LamKind::PerDim => das.iter().map(|x| x.sum_axis(0, false)).reduce(|s, x| s.add(&x)).expect("time ≥ 1"),
            LamKind::Scalar => das.iter().map(|x| x.sum()).reduce(|s, x| s.add(&x)).expect("time ≥ 1").reshape(&[1]),
        };
        (dproj, dlam)
    }
}

impl<T: Float> CustomOp<T> for RcnnScan {
    fn name(&self) -> &str {
        "rcnn_scan"
    }
    fn forward(&self, inputs: &[&Tensor<T>]) -> Tensor<T> {
        let (proj, lam) = (inputs[0], inputs[1]);
        let d = self.dims(lam);
        let out = self.forward_loops(proj.data(), lam.data(), &d);
        Tensor::from_vec(out, &[d.b, d.t, (d.n + 1) * d.h])
    }
    fn backward(&self, inputs: &[&Tensor<T>], out: &Tensor<T>, g: &Tensor<T>) -> Vec<Option<Tensor<T>>> {
        let (proj, lam) = (inputs[0], inputs[1]);
        let d = self.dims(lam);
        if is_grad_enabled() {
            let (dp, dl) = self.backward_tensors(proj, lam, out, g, &d);
            return vec![Some(dp), Some(dl)];
        }
        let (dp, dl) = self.backward_loops(proj.data(), lam.data(), out.data(), g.data(), &d);
        vec![Some(Tensor::from_vec(dp, proj.shape())), Some(Tensor::from_vec(dl, lam.shape()))]
    }
}
