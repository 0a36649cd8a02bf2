//! Rationales (Chapter 3 of *Interpretable Neural Models for NLP*): a generator samples a binary
//! mask `z` over the words, an encoder predicts the target from the kept words only, and
//!
//! ```text
//! cost(z, x, y) = ‖y − enc(x, z)‖² + λ₁ Σ_t z_t + λ₂ Σ_t |z_t − z_{t−1}|
//! ```
//!
//! is minimised in expectation over `z ~ gen(x)` with the doubly stochastic gradient: the encoder
//! gets the ordinary gradient of `cost` at a sampled `z`, the generator the score-function
//! (REINFORCE) estimate `cost(z) · ∇ log p(z | x)`, optionally minus a moving-average baseline
//! or, with several draws per row, minus the mean cost of the row's other draws.
//!
//! * Independent generator: `p(z_t | x) = σ(w·[→h_t; ←h_t] + b)` from a bidirectional RCNN.
//! * Dependent generator: `p(z_t | x, z_{<t}) = σ(w·[→h_t; ←h_t; s_{t−1}] + b)` with a small
//!   recurrent state `s_t` (an order-1 additive normalised RCNN unit reading `[→h_t; ←h_t; z_t]`),
//!   sampled left to right; its log-probability is recomputed teacher-forced on the tape.
//! * Encoder: an RCNN that skips unselected words (a masked step carries its state, as the
//!   thesis's released code does), read at the last position, then `σ(W h + b)`.

use crate::deps::{init, Linear, Param, ParamStore};
use crate::error::{shape_err, RcnnError, Result};
use crate::layer::{lengths_mask, pool, BiRcnn, Pooling, Rcnn, RcnnConfig};
use chi_autodiff::{no_grad, Float, Rng, Tensor};

/// Which generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GeneratorKind {
    /// `z_t` independent given `x`.
    Independent,
    /// `z_t` depends on `z_{<t}` through a recurrent state of the given size.
    Dependent {
        /// Size of the selection state `s_t`.
        state: usize,
    },
}

/// Configuration of a [`RationaleModel`].
#[derive(Clone, Debug, PartialEq)]
pub struct RationaleConfig {
    /// Recurrent unit of the generator (both directions) and of the encoder; its `input` is the
    /// word-vector size and its `hidden` the state size.
    pub rcnn: RcnnConfig,
    /// Number of outputs `m` (aspects), each in `[0, 1]`.
    pub outputs: usize,
    /// Generator kind.
    pub generator: GeneratorKind,
    /// Sparsity weight `λ₁`.
    pub lambda1: f64,
    /// Coherence weight `λ₂`.
    pub lambda2: f64,
    /// Encoder depth.
    pub encoder_depth: usize,
}

/// The generator `gen(x)`.
pub struct Generator<T: Float> {
    kind: GeneratorKind,
    bi: BiRcnn<T>,
    /// `[2h (+ state), 1]` selection logit weights.
    pub w_z: Param<T>,
    /// `[1]` selection logit bias.
    pub b_z: Param<T>,
    /// `[2h + 1, state]` state-update weights (dependent generator).
    pub w_s: Option<Param<T>>,
    hidden: usize,
}

/// Decay of the dependent generator's selection state.
const STATE_DECAY: f64 = 0.5;

impl<T: Float> Generator<T> {
    fn new(store: &mut ParamStore<T>, cfg: &RationaleConfig, rng: &mut Rng) -> Result<Self> {
        let h = cfg.rcnn.hidden;
        let bi = BiRcnn::new(store, "gen.rcnn", "generator", &cfg.rcnn, 1, rng)?;
        let q = match cfg.generator {
            GeneratorKind::Independent => 0,
            GeneratorKind::Dependent { state } if state == 0 => {
                return Err(RcnnError::Config { field: "generator", reason: "the dependent generator needs a state of size ≥ 1".into() })
            }
            GeneratorKind::Dependent { state } => state,
        };
        let a = (3.0 / (2 * h + q) as f64).sqrt();
        let w_z = store.add("gen.w_z", "generator", init::uniform(&[2 * h + q, 1], -a, a, rng));
        let b_z = store.add("gen.b_z", "generator", init::zeros(&[1]));
        let w_s = (q > 0).then(|| {
            let a = (3.0 / (2 * h + 1) as f64).sqrt();
            store.add("gen.w_s", "generator", init::uniform(&[2 * h + 1, q], -a, a, rng))
        });
        Ok(Generator { kind: cfg.generator, bi, w_z, b_z, w_s, hidden: h })
    }

    /// Selection logits `[B, T]`. The dependent generator needs the selections `z` (row-major
    /// `[B, T]`) it conditions on (teacher forcing); the independent one ignores them.
    pub fn logits(&self, x: &Tensor<T>, lengths: Option<&[usize]>, z: Option<&[bool]>) -> Result<Tensor<T>> {
        check_x("Generator", x, self.bi.fwd.layers[0].config().input)?;
        let (b, t) = (x.dim(0), x.dim(1));
        let hcat = self.bi.forward(x, lengths)?;
        match self.kind {
            GeneratorKind::Independent => Ok(hcat.matmul(&self.w_z.get()).add(&self.b_z.get()).reshape(&[b, t])),
            GeneratorKind::Dependent { state } => {
                let z = z.ok_or(RcnnError::Config { field: "z", reason: "the dependent generator's logits need the selections".into() })?;
                if z.len() != b * t {
                    return Err(shape_err("Generator::logits (z)", format!("{} flags", b * t), &[z.len()]));
                }
                let mut out = Vec::with_capacity(t);
                self.run_dependent(&hcat, state, |step, _logit| Ok((0..b).map(|bi| z[bi * t + step]).collect()), &mut out)?;
                Ok(Tensor::concat(&out, 1))
            }
        }
    }

    /// Runs the dependent generator left to right; `choose(t, logits [B, 1])` gives `z_t` per row.
    fn run_dependent(&self, hcat: &Tensor<T>, q: usize, mut choose: impl FnMut(usize, &Tensor<T>) -> Result<Vec<bool>>, out: &mut Vec<Tensor<T>>) -> Result<()> {
        let (b, t, h2) = (hcat.dim(0), hcat.dim(1), 2 * self.hidden);
        let w_s = self.w_s.as_ref().expect("dependent generator").get();
        let (wz, bz) = (self.w_z.get(), self.b_z.get());
        let mut c = Tensor::<T>::zeros(&[b, q]);
        let mut s = Tensor::<T>::zeros(&[b, q]);
        for step in 0..t {
            let ht = hcat.narrow(1, step, 1).reshape(&[b, h2]);
            let logit = Tensor::concat(&[ht.clone(), s.clone()], 1).matmul(&wz).add(&bz);
            let zt = choose(step, &logit)?;
            let zt = Tensor::from_vec(zt.iter().map(|&v| if v { T::ONE } else { T::ZERO }).collect(), &[b, 1]);
            let inp = Tensor::concat(&[ht, zt], 1).matmul(&w_s);
            c = c.mul_scalar(STATE_DECAY).add(&inp.mul_scalar(1.0 - STATE_DECAY));
            s = c.tanh();
            out.push(logit);
        }
        Ok(())
    }

    /// Samples selections (row-major `[B, T]`, padding `false`) with a seeded generator.
    pub fn sample(&self, x: &Tensor<T>, lengths: Option<&[usize]>, rng: &mut Rng) -> Result<Vec<bool>> {
        check_x("Generator::sample", x, self.bi.fwd.layers[0].config().input)?;
        let (b, t) = (x.dim(0), x.dim(1));
        let real = lengths_mask("Generator::sample", b, t, lengths)?;
        let on = |i: usize| real.as_ref().is_none_or(|m| m[i]);
        no_grad(|| match self.kind {
            GeneratorKind::Independent => {
                let l = self.logits(x, lengths, None)?;
                Ok(l.data().iter().enumerate().map(|(i, &v)| on(i) && rng.next_f64() < sigmoid(v.to_f64())).collect())
            }
            GeneratorKind::Dependent { state } => {
                let hcat = self.bi.forward(x, lengths)?;
                let mut z = vec![false; b * t];
                let mut out = Vec::new();
                self.run_dependent(
                    &hcat,
                    state,
                    |step, logit| {
                        let zt: Vec<bool> = (0..b).map(|bi| on(bi * t + step) && rng.next_f64() < sigmoid(logit.data()[bi].to_f64())).collect();
                        for (bi, &v) in zt.iter().enumerate() {
                            z[bi * t + step] = v;
                        }
                        Ok(zt)
                    },
                    &mut out,
                )?;
                Ok(z)
            }
        })
    }

    /// `log p(z | x)` per row `[B]` (padding excluded), on the tape.
    pub fn log_prob(&self, x: &Tensor<T>, lengths: Option<&[usize]>, z: &[bool]) -> Result<Tensor<T>> {
        check_x("Generator::log_prob", x, self.bi.fwd.layers[0].config().input)?;
        if z.len() != x.dim(0) * x.dim(1) {
            return Err(shape_err("Generator::log_prob (z)", format!("{} flags", x.dim(0) * x.dim(1)), &[z.len()]));
        }
        let (b, t) = (x.dim(0), x.dim(1));
        let real = lengths_mask("Generator::log_prob", b, t, lengths)?;
        let l = self.logits(x, lengths, Some(z))?;
        let sign: Vec<T> = z.iter().map(|&v| if v { T::ONE } else { -T::ONE }).collect();
        // log σ(l) if z = 1, log σ(−l) if z = 0.
        let lp = l.mul(&Tensor::from_vec(sign, &[b, t])).log_sigmoid();
        let lp = match real {
            Some(m) => lp.mul(&Tensor::from_vec(m.iter().map(|&v| if v { T::ONE } else { T::ZERO }).collect(), &[b, t])),
            None => lp,
        };
        Ok(lp.sum_axis(1, false))
    }
}

fn check_x<T: Float>(op: &'static str, x: &Tensor<T>, input: usize) -> Result<()> {
    if x.rank() != 3 || x.dim(2) != input || x.dim(0) == 0 || x.dim(1) == 0 {
        return Err(shape_err(op, format!("[batch ≥ 1, time ≥ 1, {input}]"), x.shape()));
    }
    Ok(())
}

fn sigmoid(v: f64) -> f64 {
    1.0 / (1.0 + (-v).exp())
}

/// The encoder `enc(x, z)`.
pub struct Encoder<T: Float> {
    rcnn: Rcnn<T>,
    out: Linear<T>,
}

impl<T: Float> Encoder<T> {
    fn new(store: &mut ParamStore<T>, cfg: &RationaleConfig, rng: &mut Rng) -> Result<Self> {
        let rcnn = Rcnn::new(store, "enc.rcnn", "encoder", &cfg.rcnn, cfg.encoder_depth, rng)?;
        let out = Linear::in_store(store, "enc.out", "encoder", cfg.rcnn.hidden, cfg.outputs, true, rng);
        Ok(Encoder { rcnn, out })
    }
    /// Predictions `[B, m]` in `(0, 1)` from the selected words only (`z` row-major `[B, T]`;
    /// `None` reads every real word).
    pub fn forward(&self, x: &Tensor<T>, lengths: Option<&[usize]>, z: Option<&[bool]>) -> Result<Tensor<T>> {
        check_x("Encoder", x, self.rcnn.layers[0].config().input)?;
        let (b, t) = (x.dim(0), x.dim(1));
        if z.is_some_and(|z| z.len() != b * t) {
            return Err(shape_err("Encoder (z)", format!("{} flags", b * t), &[z.map_or(0, |z| z.len())]));
        }
        let real = lengths_mask("Encoder::forward", b, t, lengths)?;
        let mask: Vec<bool> = (0..b * t).map(|i| real.as_ref().is_none_or(|m| m[i]) && z.is_none_or(|z| z[i])).collect();
        let h = self.rcnn.forward_masked(x, &mask)?;
        // Skipped words carry the state, so the last real position holds the last selected word's state.
        let last = pool(&h, lengths, Pooling::Last)?;
        Ok(self.out.forward(&last).sigmoid())
    }
}

/// Generator + encoder.
pub struct RationaleModel<T: Float> {
    /// Configuration.
    pub cfg: RationaleConfig,
    /// The generator (parameter group `"generator"`).
    pub generator: Generator<T>,
    /// The encoder (parameter group `"encoder"`).
    pub encoder: Encoder<T>,
}

/// One doubly stochastic training step's objective and statistics.
pub struct SurrogateStep<T: Float> {
    /// Scalar whose gradient is the doubly stochastic gradient (encoder: ∇cost; generator:
    /// (cost − baseline)·∇log p), averaged over rows and samples.
    pub surrogate: Tensor<T>,
    /// Mean cost over rows and samples.
    pub mean_cost: f64,
    /// Mean squared error part of the cost.
    pub mean_loss: f64,
    /// Fraction of real words selected.
    pub selection_rate: f64,
    /// The last sample's selections.
    pub z: Vec<bool>,
}

/// An exponential moving average of the cost, used as a REINFORCE baseline.
#[derive(Clone, Debug, PartialEq)]
pub struct MovingAverage {
    /// Current value (`None` before the first update: no baseline yet).
    pub value: Option<f64>,
    /// Weight of the old value, in `[0, 1)`.
    pub decay: f64,
}

impl MovingAverage {
    /// A baseline with the given decay.
    pub fn new(decay: f64) -> Self {
        MovingAverage { value: None, decay }
    }
    /// The baseline to subtract now (0 before any update).
    pub fn get(&self) -> f64 {
        self.value.unwrap_or(0.0)
    }
    /// Folds in a new observation.
    pub fn update(&mut self, v: f64) {
        self.value = Some(match self.value {
            Some(b) => self.decay * b + (1.0 - self.decay) * v,
            None => v,
        });
    }
}

impl<T: Float> RationaleModel<T> {
    /// A new model; parameters go to groups `"generator"` and `"encoder"`.
    pub fn new(store: &mut ParamStore<T>, cfg: RationaleConfig, rng: &mut Rng) -> Result<Self> {
        if cfg.outputs == 0 {
            return Err(RcnnError::Config { field: "outputs", reason: "at least one output".into() });
        }
        if cfg.rcnn.highway {
            return Err(RcnnError::Config { field: "rcnn.highway", reason: "a skipped word must not leak into the encoder through the highway".into() });
        }
        let generator = Generator::new(store, &cfg, rng)?;
        let encoder = Encoder::new(store, &cfg, rng)?;
        Ok(RationaleModel { cfg, generator, encoder })
    }

    fn check(&self, x: &Tensor<T>, y: &Tensor<T>) -> Result<()> {
        if x.rank() != 3 || x.dim(2) != self.cfg.rcnn.input {
            return Err(shape_err("RationaleModel (x)", format!("[batch, time, {}]", self.cfg.rcnn.input), x.shape()));
        }
        if y.shape() != [x.dim(0), self.cfg.outputs] {
            return Err(shape_err("RationaleModel (y)", format!("[{}, {}]", x.dim(0), self.cfg.outputs), y.shape()));
        }
        Ok(())
    }

    /// `cost(z, x, y)` per row `[B]`: squared error (tracking the encoder) plus the regularisers.
    /// Returns `(cost, squared error)`.
    pub fn cost(&self, x: &Tensor<T>, lengths: Option<&[usize]>, y: &Tensor<T>, z: &[bool]) -> Result<(Tensor<T>, Tensor<T>)> {
        self.check(x, y)?;
        let (b, t) = (x.dim(0), x.dim(1));
        if z.len() != b * t {
            return Err(shape_err("RationaleModel::cost (z)", format!("{} flags", b * t), &[z.len()]));
        }
        let pred = self.encoder.forward(x, lengths, Some(z))?;
        let loss = pred.sub(y).square().sum_axis(1, false);
        let reg: Vec<T> = (0..b).map(|bi| T::from_f64(self.regulariser(&z[bi * t..(bi + 1) * t], lengths.map_or(t, |l| l[bi])))).collect();
        Ok((loss.add(&Tensor::from_vec(reg, &[b])), loss))
    }

    /// `λ₁ Σ z_t + λ₂ Σ |z_t − z_{t−1}|` over the first `len` positions of one row.
    pub fn regulariser(&self, z: &[bool], len: usize) -> f64 {
        let z = &z[..len.min(z.len())];
        let count = z.iter().filter(|&&v| v).count() as f64;
        let transitions = z.windows(2).filter(|w| w[0] != w[1]).count() as f64;
        self.cfg.lambda1 * count + self.cfg.lambda2 * transitions
    }

    /// The doubly stochastic objective for a batch with `samples` draws of `z` per row.
    /// With a baseline, `(cost − b)` multiplies the score and the baseline is updated with the
    /// mean cost afterwards (so each step's baseline does not depend on its own samples).
    pub fn surrogate(&self, x: &Tensor<T>, lengths: Option<&[usize]>, y: &Tensor<T>, samples: usize, rng: &mut Rng, baseline: Option<&mut MovingAverage>) -> Result<SurrogateStep<T>> {
        let base = baseline.as_ref().map_or(0.0, |m| m.get());
        let step = self.surrogate_with(x, lengths, y, samples.max(1), rng, |_, _, _| base)?;
        if let Some(m) = baseline {
            m.update(step.mean_cost);
        }
        Ok(step)
    }

    /// The doubly stochastic objective with a per-row leave-one-out baseline: `samples ≥ 2`
    /// draws of `z` per row, and each draw's score is multiplied by its cost minus the mean cost
    /// of the *other* draws for the same row. That baseline does not depend on the draw it is
    /// subtracted from, so the estimate stays unbiased, and it removes the part of the cost that
    /// belongs to the row (how hard the example is) rather than to the selection — the part a
    /// single moving average over the batch cannot remove.
    pub fn surrogate_leave_one_out(&self, x: &Tensor<T>, lengths: Option<&[usize]>, y: &Tensor<T>, samples: usize, rng: &mut Rng) -> Result<SurrogateStep<T>> {
        if samples < 2 {
            return Err(RcnnError::Config { field: "samples", reason: format!("a leave-one-out baseline needs at least 2 draws per row, got {samples}") });
        }
        self.surrogate_with(x, lengths, y, samples, rng, |k, row, costs| {
            let others: f64 = costs.iter().enumerate().filter(|&(j, _)| j != k).map(|(_, c)| c[row]).sum();
            others / (costs.len() - 1) as f64
        })
    }

    /// Draws every sample first, then forms `cost + (cost − b)·log p` per draw, where
    /// `baseline(draw, row, costs)` gives `b` from the detached costs of all draws.
    fn surrogate_with(&self, x: &Tensor<T>, lengths: Option<&[usize]>, y: &Tensor<T>, samples: usize, rng: &mut Rng, baseline: impl Fn(usize, usize, &[Vec<f64>]) -> f64) -> Result<SurrogateStep<T>> {
        self.check(x, y)?;
        let (b, t) = (x.dim(0), x.dim(1));
        let real: usize = lengths.map_or(b * t, |l| l.iter().sum());
        let mut draws = Vec::with_capacity(samples);
        for _ in 0..samples {
            let z = self.generator.sample(x, lengths, rng)?;
            let (cost, loss) = self.cost(x, lengths, y, &z)?;
            draws.push((z, cost, loss));
        }
        let costs: Vec<Vec<f64>> = draws.iter().map(|d| d.1.data().iter().map(|v| v.to_f64()).collect()).collect();
        let (mut total, mut loss_sum, mut selected) = (None::<Tensor<T>>, 0.0, 0usize);
        let mut last_z = Vec::new();
        for (k, (z, cost, loss)) in draws.into_iter().enumerate() {
            let lp = self.generator.log_prob(x, lengths, &z)?;
            // In `T`, as `cost − b` on the tape would be: the baseline is rounded to `T` first.
            let adv: Vec<T> = (0..b).map(|row| T::from_f64(costs[k][row]) - T::from_f64(baseline(k, row, &costs))).collect();
            let term = cost.add(&Tensor::from_vec(adv, &[b]).mul(&lp)).sum();
            total = Some(match total {
                Some(s) => s.add(&term),
                None => term,
            });
            loss_sum += loss.data().iter().map(|v| v.to_f64()).sum::<f64>();
            selected += z.iter().filter(|&&v| v).count();
            last_z = z;
        }
        let n = (b * samples) as f64;
        Ok(SurrogateStep {
            surrogate: total.expect("samples ≥ 1").mul_scalar(1.0 / n),
            mean_cost: costs.iter().map(|c| c.iter().sum::<f64>()).sum::<f64>() / n,
            mean_loss: loss_sum / n,
            selection_rate: selected as f64 / (real * samples) as f64,
            z: last_z,
        })
    }

    /// Every parameter of the generator (the coordinates REINFORCE estimates).
    pub fn generator_params<'a>(&self, store: &'a ParamStore<T>) -> Vec<&'a Param<T>> {
        store.params().iter().filter(|p| p.group() == "generator").collect()
    }
}
