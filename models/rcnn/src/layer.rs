//! The RCNN layer (recurrent convolution), its stacked and bidirectional forms, and pooling.
//!
//! One layer maps `x [B, T, d]` to `h [B, T, h]`:
//!
//! 1. one GEMM `x·[W⁽¹⁾ … W⁽ⁿ⁾ | W^λ | W^f]` for every step at once (the n-gram projections and,
//!    when used, the decay gate and the highway gate);
//! 2. the scan of [`crate::scan`] (fused or composed) with the decay λ: a constant, a learned
//!    per-unit constant `σ(θ)`, an adaptive gate `λ_t = σ(W^λx_t + b^λ)`, or the gate that also
//!    reads the previous output `λ_t = σ(W^λx_t + U^λh[t−1] + b^λ)` (Appendix B.1);
//! 3. `h[t] = g(O c_n[t] + b)` or `g(O z_n[t] + b)` (`O` optional, `g` = tanh, ReLU or identity);
//! 4. optionally the highway connection `h[t] ← f_t ⊙ h[t] + (1 − f_t) ⊙ x_t`,
//!    `f_t = σ(W^f x_t + b^f)` (needs `d = h`).
//!
//! Ragged batches pass `lengths`; a general step mask (e.g. a rationale) passes `mask`. Masked
//! steps carry the recurrent state.
//!
//! The decay that reads `h[t−1]` needs a matrix-vector product per step, so that variant always
//! runs step by step with composed ops; every other variant can use the fused scan.

use crate::deps::{init, reverse_padded, Param, ParamStore};
use crate::error::{shape_err, RcnnError, Result};
use crate::scan::{scan_composed, scan_fused, Aggregation, FeatureMap, ScanSpec};
use chi_autodiff::{Float, Rng, Tensor};
use std::rc::Rc;

/// How the decay λ is obtained.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Decay {
    /// A fixed constant in `[0, 1)`.
    Constant(f64),
    /// A per-unit constant `σ(θ)` trained as a parameter, starting at the given value in `(0, 1)`.
    Learned(f64),
    /// `λ_t = σ(W^λ x_t + b^λ)`, adaptive on the input.
    AdaptiveX,
    /// `λ_t = σ(W^λ x_t + U^λ h[t−1] + b^λ)`, adaptive on the input and the previous output.
    AdaptiveXH,
}

/// Which aggregate feeds the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputOf {
    /// `c_n[t]`: all n-grams up to position t.
    State,
    /// `z_n[t]`: the n-grams ending exactly at t.
    ExactlyAt,
}

/// The output non-linearity `g` (the workspace's one activation enum; the paper uses
/// `tanh`, `relu`, or none for the Appendix B.1 language-model unit).
pub use chi_nn::Activation;

/// Which scan implementation to run (they compute the same values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanImpl {
    /// One fused op with a hand-written backward.
    Fused,
    /// Composed tensor ops per step (the reference).
    Composed,
}

/// Pooling over time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pooling {
    /// Element-wise maximum over the real steps.
    Max,
    /// Mean over the real steps.
    Mean,
    /// The output at the last real step.
    Last,
}

/// Configuration of one RCNN layer.
#[derive(Clone, Debug, PartialEq)]
pub struct RcnnConfig {
    /// Input size `d`.
    pub input: usize,
    /// Hidden size `h`.
    pub hidden: usize,
    /// n-gram order `n ≥ 1`.
    pub order: usize,
    /// Feature map.
    pub map: FeatureMap,
    /// Aggregation.
    pub aggregation: Aggregation,
    /// Output `g(c_n[t])` or `g(z_n[t])`.
    pub output: OutputOf,
    /// Apply an output matrix `O` (`h × h`) before `g`.
    pub output_matrix: bool,
    /// Decay.
    pub decay: Decay,
    /// Output non-linearity.
    pub activation: Activation,
    /// Add a bias before `g`.
    pub bias: bool,
    /// Highway connection to the input (requires `input == hidden`).
    pub highway: bool,
    /// Scan implementation.
    pub scan: ScanImpl,
}

impl RcnnConfig {
    /// Defaults following the thesis's best sentence-level setting: 2-gram, multiplicative,
    /// normalised, `g(c_n[t])`, λ = 0.5, tanh, bias, no highway, fused scan.
    pub fn new(input: usize, hidden: usize) -> Self {
        RcnnConfig {
            input,
            hidden,
            order: 2,
            map: FeatureMap::Multiplicative,
            aggregation: Aggregation::Normalized,
            output: OutputOf::State,
            output_matrix: false,
            decay: Decay::Constant(0.5),
            activation: Activation::Tanh,
            bias: true,
            highway: false,
            scan: ScanImpl::Fused,
        }
    }
    /// The scan description.
    pub fn spec(&self) -> ScanSpec {
        ScanSpec { order: self.order, hidden: self.hidden, map: self.map, aggregation: self.aggregation }
    }
    /// Checks the configuration.
    pub fn validate(&self) -> Result<()> {
        if self.input == 0 || self.hidden == 0 {
            return Err(RcnnError::Config { field: "input/hidden", reason: "sizes must be positive".into() });
        }
        if self.order == 0 {
            return Err(RcnnError::Config { field: "order", reason: "the n-gram order must be at least 1".into() });
        }
        // Sizes that cannot fit in memory are refused before anything is allocated.
        for dims in [[self.input, self.order.saturating_mul(self.hidden)], [self.hidden, self.hidden]] {
            chi_nn::limits::check_fits_memory("RCNN layer weights", &dims).map_err(|e| RcnnError::Config { field: "input/hidden/order", reason: e.to_string() })?;
        }
        if self.highway && self.input != self.hidden {
            return Err(RcnnError::Config {
                field: "highway",
                reason: format!("the highway connection needs input size = hidden size (got {} and {})", self.input, self.hidden),
            });
        }
        match self.decay {
            Decay::Constant(l) if !(0.0..1.0).contains(&l) => Err(RcnnError::Config { field: "decay", reason: format!("constant λ = {l} is not in [0, 1)") }),
            Decay::Learned(l) if !(l > 0.0 && l < 1.0) => Err(RcnnError::Config { field: "decay", reason: format!("initial λ = {l} is not in (0, 1)") }),
            _ => Ok(()),
        }
    }
}

fn pname(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

/// Turns optional lengths into a `[B, T]` step mask (`None` when every sequence is full).
pub fn lengths_mask(op: &'static str, batch: usize, time: usize, lengths: Option<&[usize]>) -> Result<Option<Vec<bool>>> {
    let Some(lens) = lengths else { return Ok(None) };
    if lens.len() != batch {
        return Err(RcnnError::Lengths { op, reason: format!("{} lengths for a batch of {batch}", lens.len()) });
    }
    if let Some(&bad) = lens.iter().find(|&&l| l == 0 || l > time) {
        return Err(RcnnError::Lengths { op, reason: format!("length {bad} outside 1..={time}") });
    }
    if lens.iter().all(|&l| l == time) {
        return Ok(None);
    }
    Ok(Some((0..batch * time).map(|i| i % time < lens[i / time]).collect()))
}

/// One RCNN layer (see the [module docs](self)).
pub struct RcnnLayer<T: Float> {
    cfg: RcnnConfig,
    /// `[d, n·h]`: `W⁽¹⁾ … W⁽ⁿ⁾` side by side (`x·W` convention).
    pub w: Param<T>,
    /// `[d, h]` decay-gate input weights (adaptive decay).
    pub w_gate: Option<Param<T>>,
    /// `[h, h]` decay-gate recurrent weights (decay adaptive on `h[t−1]`).
    pub u_gate: Option<Param<T>>,
    /// `[h]` decay-gate bias.
    pub b_gate: Option<Param<T>>,
    /// `[h]` logits of the learned constant decay.
    pub lam_logit: Option<Param<T>>,
    /// `[h, h]` output matrix.
    pub out_matrix: Option<Param<T>>,
    /// `[h]` bias before `g`.
    pub bias: Option<Param<T>>,
    /// `[d, h]` highway-gate weights.
    pub w_highway: Option<Param<T>>,
    /// `[h]` highway-gate bias.
    pub b_highway: Option<Param<T>>,
}

impl<T: Float> RcnnLayer<T> {
    /// A new layer; weights `U(±√(3/d))` as in the thesis, biases zero.
    pub fn new(store: &mut ParamStore<T>, prefix: &str, group: &str, cfg: RcnnConfig, rng: &mut Rng) -> Result<Self> {
        cfg.validate()?;
        let (d, h, n) = (cfg.input, cfg.hidden, cfg.order);
        let a = (3.0 / d as f64).sqrt();
        let ah = (3.0 / h as f64).sqrt();
        let w = store.add(&pname(prefix, "w"), group, init::uniform(&[d, n * h], -a, a, rng));
        let adaptive = matches!(cfg.decay, Decay::AdaptiveX | Decay::AdaptiveXH);
        let w_gate = adaptive.then(|| store.add(&pname(prefix, "w_gate"), group, init::uniform(&[d, h], -a, a, rng)));
        let u_gate = (cfg.decay == Decay::AdaptiveXH).then(|| store.add(&pname(prefix, "u_gate"), group, init::uniform(&[h, h], -ah, ah, rng)));
        let b_gate = adaptive.then(|| store.add(&pname(prefix, "b_gate"), group, init::zeros(&[h])));
        let lam_logit = match cfg.decay {
            Decay::Learned(l) => Some(store.add(&pname(prefix, "lam_logit"), group, init::constant(&[h], (l / (1.0 - l)).ln()))),
            _ => None,
        };
        let out_matrix = cfg.output_matrix.then(|| store.add(&pname(prefix, "o"), group, init::uniform(&[h, h], -ah, ah, rng)));
        let bias = cfg.bias.then(|| store.add(&pname(prefix, "bias"), group, init::zeros(&[h])));
        let w_highway = cfg.highway.then(|| store.add(&pname(prefix, "w_highway"), group, init::uniform(&[d, h], -a, a, rng)));
        let b_highway = cfg.highway.then(|| store.add(&pname(prefix, "b_highway"), group, init::zeros(&[h])));
        Ok(RcnnLayer { cfg, w, w_gate, u_gate, b_gate, lam_logit, out_matrix, bias, w_highway, b_highway })
    }
    /// The configuration.
    pub fn config(&self) -> &RcnnConfig {
        &self.cfg
    }
    /// Switches between the fused and the composed scan (same parameters, same values).
    pub fn set_scan(&mut self, scan: ScanImpl) {
        self.cfg.scan = scan;
    }

    /// `x [B, T, d]` → `h [B, T, h]`, with optional per-sequence lengths.
    pub fn forward(&self, x: &Tensor<T>, lengths: Option<&[usize]>) -> Result<Tensor<T>> {
        self.check_input(x)?;
        let mask = lengths_mask("RcnnLayer::forward", x.dim(0), x.dim(1), lengths)?;
        self.run(x, mask.as_deref())
    }

    /// `x [B, T, d]` → `h [B, T, h]` with a step mask (row-major `[B, T]`, `true` = run the step;
    /// a `false` step carries the state, as a rationale encoder skips unselected words).
    pub fn forward_masked(&self, x: &Tensor<T>, mask: &[bool]) -> Result<Tensor<T>> {
        self.check_input(x)?;
        if mask.len() != x.dim(0) * x.dim(1) {
            return Err(shape_err("RcnnLayer::forward_masked (mask)", format!("{} flags", x.dim(0) * x.dim(1)), &[mask.len()]));
        }
        self.run(x, Some(mask))
    }

    fn check_input(&self, x: &Tensor<T>) -> Result<()> {
        if x.rank() != 3 || x.dim(2) != self.cfg.input || x.dim(0) == 0 || x.dim(1) == 0 {
            return Err(shape_err("RcnnLayer::forward", format!("[batch ≥ 1, time ≥ 1, {}]", self.cfg.input), x.shape()));
        }
        Ok(())
    }

    fn run(&self, x: &Tensor<T>, mask: Option<&[bool]>) -> Result<Tensor<T>> {
        let cfg = &self.cfg;
        let (b, t, d, h, n) = (x.dim(0), x.dim(1), cfg.input, cfg.hidden, cfg.order);
        // One GEMM for the n-gram projections and both gates.
        let mut ws = vec![self.w.get()];
        ws.extend(self.w_gate.iter().map(|p| p.get()));
        ws.extend(self.w_highway.iter().map(|p| p.get()));
        let wcat = if ws.len() == 1 { ws.pop().expect("one weight") } else { Tensor::concat(&ws, 1) };
        let width = wcat.dim(1);
        let proj = x.reshape(&[b * t, d]).matmul(&wcat).reshape(&[b, t, width]);
        let p_ngram = if width == n * h { proj.clone() } else { proj.narrow(2, 0, n * h) };
        let mut off = n * h;
        let gate_in = self.w_gate.as_ref().map(|_| {
            let g = proj.narrow(2, off, h);
            off += h;
            g
        });
        let highway = self.w_highway.as_ref().map(|_| proj.narrow(2, off, h).add(&self.b_highway.as_ref().expect("with w_highway").get()).sigmoid());
        let pre = match cfg.decay {
            Decay::AdaptiveXH => self.run_xh(x, &p_ngram, &gate_in.expect("adaptive"), highway.as_ref(), mask)?,
            _ => {
                let lam = match cfg.decay {
                    Decay::Constant(l) => Tensor::full(&[1], T::from_f64(l)),
                    Decay::Learned(_) => self.lam_logit.as_ref().expect("learned decay").get().sigmoid(),
                    _ => gate_in.expect("adaptive").add(&self.b_gate.as_ref().expect("adaptive").get()).sigmoid(),
                };
                let y = match cfg.scan {
                    ScanImpl::Fused => scan_fused(&cfg.spec(), &p_ngram, &lam, mask)?,
                    ScanImpl::Composed => scan_composed(&cfg.spec(), &p_ngram, &lam, mask)?,
                };
                let start = match cfg.output {
                    OutputOf::State => (n - 1) * h,
                    OutputOf::ExactlyAt => n * h,
                };
                let sel = y.narrow(2, start, h);
                self.finish(&sel, x, highway.as_ref())
            }
        };
        Ok(pre)
    }

    /// `g(O s + b)` then the highway mix, for `s [.., h]` and the matching `x`.
    fn finish(&self, sel: &Tensor<T>, x: &Tensor<T>, highway: Option<&Tensor<T>>) -> Tensor<T> {
        let mut pre = match &self.out_matrix {
            Some(o) => sel.matmul(&o.get()),
            None => sel.clone(),
        };
        if let Some(bias) = &self.bias {
            pre = pre.add(&bias.get());
        }
        let hout = self.cfg.activation.apply(&pre);
        match highway {
            Some(f) => f.mul(&hout).add(&f.rsub_scalar(1.0).mul(x)),
            None => hout,
        }
    }

    /// The decay adaptive on `h[t−1]`: one step at a time with composed ops.
    fn run_xh(&self, x: &Tensor<T>, p: &Tensor<T>, gate_in: &Tensor<T>, highway: Option<&Tensor<T>>, mask: Option<&[bool]>) -> Result<Tensor<T>> {
        let cfg = &self.cfg;
        let (b, time, d, h, n) = (x.dim(0), x.dim(1), cfg.input, cfg.hidden, cfg.order);
        let norm = cfg.aggregation == Aggregation::Normalized;
        let mult = cfg.map == FeatureMap::Multiplicative;
        let u = self.u_gate.as_ref().expect("xh decay").get();
        let bg = self.b_gate.as_ref().expect("xh decay").get();
        let mut c: Vec<Tensor<T>> = (0..n).map(|_| Tensor::zeros(&[b, h])).collect();
        let mut hprev = Tensor::<T>::zeros(&[b, h]);
        let mut outs = Vec::with_capacity(time);
        for t in 0..time {
            let pt = p.narrow(1, t, 1).reshape(&[b, n * h]);
            let xt = x.narrow(1, t, 1).reshape(&[b, d]);
            let a = gate_in.narrow(1, t, 1).reshape(&[b, h]).add(&hprev.matmul(&u)).add(&bg).sigmoid();
            let beta = a.rsub_scalar(1.0);
            let m = mask.map(|mk| {
                let on: Vec<T> = (0..b).map(|bi| if mk[bi * time + t] { T::ONE } else { T::ZERO }).collect();
                let on = Tensor::from_vec(on, &[b, 1]);
                let off = on.rsub_scalar(1.0);
                (on, off)
            });
            let mut z = None;
            for k in (0..n).rev() {
                let pk = pt.narrow(1, k * h, h);
                let uk = if k == 0 {
                    pk
                } else if mult {
                    c[k - 1].mul(&pk)
                } else {
                    c[k - 1].add(&pk)
                };
                if k == n - 1 {
                    z = Some(uk.clone());
                }
                let bu = if norm { beta.mul(&uk) } else { uk };
                let next = a.mul(&c[k]).add(&bu);
                c[k] = match &m {
                    Some((on, off)) => next.mul(on).add(&c[k].mul(off)),
                    None => next,
                };
            }
            let sel = match cfg.output {
                OutputOf::State => c[n - 1].clone(),
                OutputOf::ExactlyAt => z.expect("order ≥ 1"),
            };
            let ft = highway.map(|f| f.narrow(1, t, 1).reshape(&[b, h]));
            let ht = self.finish(&sel, &xt, ft.as_ref());
            hprev = match &m {
                Some((on, off)) => ht.mul(on).add(&hprev.mul(off)),
                None => ht.clone(),
            };
            outs.push(ht);
        }
        Ok(Tensor::stack(&outs, 1))
    }
}

/// Stacked RCNN layers; layer `l > 0` reads layer `l − 1`'s output.
pub struct Rcnn<T: Float> {
    /// The layers, bottom first.
    pub layers: Vec<RcnnLayer<T>>,
}

impl<T: Float> Rcnn<T> {
    /// `depth` layers: the first with `cfg`, the others with input size `cfg.hidden` (parameters
    /// `{prefix}.l{i}.…`).
    pub fn new(store: &mut ParamStore<T>, prefix: &str, group: &str, cfg: &RcnnConfig, depth: usize, rng: &mut Rng) -> Result<Self> {
        if depth == 0 {
            return Err(RcnnError::Config { field: "depth", reason: "at least one layer".into() });
        }
        let mut layers = Vec::with_capacity(depth);
        for l in 0..depth {
            let mut c = cfg.clone();
            if l > 0 {
                c.input = cfg.hidden;
            }
            layers.push(RcnnLayer::new(store, &pname(prefix, &format!("l{l}")), group, c, rng)?);
        }
        Ok(Rcnn { layers })
    }
    /// Output size.
    pub fn hidden(&self) -> usize {
        self.layers.last().expect("depth ≥ 1").cfg.hidden
    }
    /// Every layer's output, bottom first.
    pub fn forward_all(&self, x: &Tensor<T>, lengths: Option<&[usize]>) -> Result<Vec<Tensor<T>>> {
        let mut outs: Vec<Tensor<T>> = Vec::with_capacity(self.layers.len());
        for layer in &self.layers {
            let input = outs.last().unwrap_or(x);
            let y = layer.forward(input, lengths)?;
            outs.push(y);
        }
        Ok(outs)
    }
    /// The top layer's output `[B, T, h]`.
    pub fn forward(&self, x: &Tensor<T>, lengths: Option<&[usize]>) -> Result<Tensor<T>> {
        Ok(self.forward_all(x, lengths)?.pop().expect("depth ≥ 1"))
    }
    /// The top layer's output with a step mask on every layer (see [`RcnnLayer::forward_masked`]).
    pub fn forward_masked(&self, x: &Tensor<T>, mask: &[bool]) -> Result<Tensor<T>> {
        let mut y = x.clone();
        for layer in &self.layers {
            y = layer.forward_masked(&y, mask)?;
        }
        Ok(y)
    }
    /// Switches every layer's scan implementation.
    pub fn set_scan(&mut self, scan: ScanImpl) {
        self.layers.iter_mut().for_each(|l| l.set_scan(scan));
    }
}

/// A forward and a backward [`Rcnn`]; outputs are concatenated `[B, T, 2h]`.
pub struct BiRcnn<T: Float> {
    /// Reads left to right.
    pub fwd: Rcnn<T>,
    /// Reads right to left (within each sequence's length).
    pub bwd: Rcnn<T>,
}

impl<T: Float> BiRcnn<T> {
    /// Two stacks with the same configuration (`{prefix}.fwd`, `{prefix}.bwd`).
    pub fn new(store: &mut ParamStore<T>, prefix: &str, group: &str, cfg: &RcnnConfig, depth: usize, rng: &mut Rng) -> Result<Self> {
        let fwd = Rcnn::new(store, &pname(prefix, "fwd"), group, cfg, depth, rng)?;
        let bwd = Rcnn::new(store, &pname(prefix, "bwd"), group, cfg, depth, rng)?;
        Ok(BiRcnn { fwd, bwd })
    }
    /// `x [B, T, d]` → `[B, T, 2h]` (forward states, then backward states aligned to position t).
    pub fn forward(&self, x: &Tensor<T>, lengths: Option<&[usize]>) -> Result<Tensor<T>> {
        let f = self.fwd.forward(x, lengths)?;
        let rb = self.bwd.forward(&reverse_padded(x, lengths), lengths)?;
        Ok(Tensor::concat(&[f, reverse_padded(&rb, lengths)], 2))
    }
    /// Switches both directions' scan implementation.
    pub fn set_scan(&mut self, scan: ScanImpl) {
        self.fwd.set_scan(scan);
        self.bwd.set_scan(scan);
    }
}

/// Pools `h [B, T, H]` over time within each sequence's length → `[B, H]`.
pub fn pool<T: Float>(h: &Tensor<T>, lengths: Option<&[usize]>, mode: Pooling) -> Result<Tensor<T>> {
    if h.rank() != 3 || h.dim(0) == 0 || h.dim(1) == 0 {
        return Err(shape_err("pool", "[batch ≥ 1, time ≥ 1, features]", h.shape()));
    }
    let (b, t, f) = (h.dim(0), h.dim(1), h.dim(2));
    let mask = lengths_mask("pool", b, t, lengths)?;
    let lens: Vec<usize> = lengths.map_or(vec![t; b], |l| l.to_vec());
    Ok(match mode {
        Pooling::Max => match mask {
            None => h.max_axis(1, false),
            Some(m) => {
                // Padded steps get −∞ in effect, so the maximum and its gradient ignore them.
                let pen: Vec<T> = m.iter().map(|&on| if on { T::ZERO } else { T::from_f64(-1e30) }).collect();
                h.add(&Tensor::from_vec(pen, &[b, t, 1])).max_axis(1, false)
            }
        },
        Pooling::Mean => match mask {
            None => h.mean_axis(1, false),
            Some(m) => {
                let on: Vec<T> = m.iter().map(|&on| if on { T::ONE } else { T::ZERO }).collect();
                let inv: Vec<T> = lens.iter().map(|&l| T::from_f64(1.0 / l as f64)).collect();
                h.mul(&Tensor::from_vec(on, &[b, t, 1])).sum_axis(1, false).mul(&Tensor::from_vec(inv, &[b, 1]))
            }
        },
        Pooling::Last => {
            let idx: Vec<usize> = (0..b).flat_map(|bi| {
                let base = (bi * t + lens[bi] - 1) * f;
                (0..f).map(move |k| base + k)
            }).collect();
            h.take(Rc::new(idx), &[b, f])
        }
    })
}
