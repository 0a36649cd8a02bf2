//! Optimisers: SGD (momentum, Nesterov, weight decay), Adagrad (the paper's), RMSProp, Adam and
//! AdamW, each exactly per its published update rule (in the form PyTorch implements it), with
//! gradient clipping by global norm and row-sparse (embedding) updates.
//!
//! ## Usage
//! ```
//! use chi_autodiff::Tensor;
//! use chi_nn::optim::{Grads, OptimConfig, Optimizer};
//! use chi_nn::params::ParamStore;
//! let mut store = ParamStore::<f64>::new();
//! let w = store.add("w", "main", Tensor::from_vec(vec![1.0, -2.0], &[2]));
//! let mut opt = Optimizer::<f64>::new(OptimConfig::sgd(0.1));
//! w.get().square().sum().backward();          // ∂/∂w Σ w² = 2w
//! let mut grads = Grads::collect(store.params());
//! grads.clip_global_norm(1.0);                 // optional
//! opt.step(store.params(), &grads);
//! store.zero_grad();
//! ```
//!
//! ## Which parameters are updated
//! Frozen parameters ([`Param::is_frozen`]) and parameters without a gradient are skipped: their
//! values *and* their optimiser state (including the per-parameter step count used for bias
//! correction) stay as they are. This is what block-coordinate training relies on.
//!
//! ## Sparse (row) gradients
//! A parameter marked with `Tensor::sparse_grad` (an embedding table) delivers its gradient as
//! rows ([`chi_autodiff::SparseRows`]). Duplicate rows are first summed (coalesced). Then:
//! * SGD without momentum or weight decay, Adagrad without weight decay: only the touched rows
//!   of the value and of the state change (exactly what the dense update would do, since
//!   untouched rows have zero gradient — for Adagrad this is PyTorch's sparse Adagrad).
//! * Adam / AdamW: *lazy* updates like PyTorch's `SparseAdam`: the moments of the touched rows
//!   are updated, untouched rows keep stale moments and do not move; weight decay (Adam's L2
//!   term, AdamW's decoupled decay) applies to the touched rows only.
//! * SGD with momentum or weight decay, Adagrad with weight decay, and RMSProp: the gradient is
//!   densified and the update is the dense one (momentum and weight decay move untouched rows
//!   too; PyTorch refuses sparse Adagrad with weight decay).
//!
//! ## Numerics
//! Optimiser state is stored in the parameter's element type `T` (as PyTorch does), the update
//! arithmetic runs in `f64` and is rounded once to `T`. Everything is sequential and in a fixed
//! order, so results are bit-reproducible.

use crate::error::NnError;
use crate::params::Param;
use chi_autodiff::Float;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Largest step count of a parameter's state: beyond 2^53 the count is not exact as a float
/// (Adam's bias correction reads it as one).
const MAX_STEP: u64 = 1 << 53;

/// Which update rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OptimKind {
    /// Stochastic gradient descent, optionally with (Nesterov) momentum.
    Sgd,
    /// Adagrad (Duchi et al. 2011), the optimiser of the paper.
    #[default]
    Adagrad,
    /// RMSProp (Hinton 2012), optionally centred and with momentum.
    Rmsprop,
    /// Adam (Kingma & Ba 2015) with L2 weight decay added to the gradient.
    Adam,
    /// AdamW (Loshchilov & Hutter 2019): Adam with decoupled weight decay.
    Adamw,
}

impl OptimKind {
    /// The learning rate this optimiser gets when it is chosen without one: 1e-3 for Adam and
    /// AdamW (PyTorch's default), 1e-2 for RMSProp (PyTorch's) and SGD,
    /// 0.1 for Adagrad (chi's general default, tuned for its built-in models; PyTorch's is 1e-2).
    /// A rate that suits Adagrad makes Adam diverge on most data.
    pub fn default_lr(self) -> f64 {
        match self {
            OptimKind::Sgd | OptimKind::Rmsprop => 1e-2,
            OptimKind::Adagrad => 0.1,
            OptimKind::Adam | OptimKind::Adamw => 1e-3,
        }
    }
}

impl std::str::FromStr for OptimKind {
    type Err = NnError;
    fn from_str(s: &str) -> Result<Self, NnError> {
        match s.to_ascii_lowercase().as_str() {
            "sgd" => Ok(OptimKind::Sgd),
            "adagrad" => Ok(OptimKind::Adagrad),
            "rmsprop" => Ok(OptimKind::Rmsprop),
            "adam" => Ok(OptimKind::Adam),
            "adamw" => Ok(OptimKind::Adamw),
            _ => Err(NnError::Unknown { context: String::new(), kind: "optimiser".into(), name: s.into(), known: ["sgd", "adagrad", "rmsprop", "adam", "adamw"].map(String::from).to_vec() }),
        }
    }
}

/// Hyperparameters of every optimiser in one flat struct (so a TOML file or command-line flags
/// can set them uniformly). Fields an optimiser does not use are ignored. Defaults are PyTorch's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OptimConfig {
    /// Update rule.
    pub name: OptimKind,
    /// Base learning rate (a schedule may scale it per step; see [`Optimizer::set_lr`]).
    pub lr: f64,
    /// Weight decay. `None` = the optimiser's default (0, or 0.01 for AdamW). For SGD, Adagrad,
    /// RMSProp and Adam it is L2 regularisation (`g += wd·θ`); for AdamW it is decoupled
    /// (`θ ← θ·(1 − lr·wd)`).
    pub weight_decay: Option<f64>,
    /// Denominator epsilon. `None` = default (1e-10 for Adagrad, 1e-8 otherwise).
    pub eps: Option<f64>,
    /// Momentum (SGD, RMSProp).
    pub momentum: f64,
    /// SGD momentum dampening.
    pub dampening: f64,
    /// SGD: Nesterov momentum.
    pub nesterov: bool,
    /// Adagrad: learning-rate decay `lr / (1 + (t−1)·lr_decay)`.
    pub lr_decay: f64,
    /// Adagrad: initial value of the squared-gradient accumulator.
    pub initial_accumulator_value: f64,
    /// RMSProp smoothing constant α.
    pub alpha: f64,
    /// RMSProp: centred variant (normalise by an estimate of the variance).
    pub centered: bool,
    /// Adam/AdamW β₁.
    pub beta1: f64,
    /// Adam/AdamW β₂.
    pub beta2: f64,
}

impl Default for OptimConfig {
    fn default() -> Self {
        OptimConfig {
            name: OptimKind::Adagrad,
            lr: 0.1,
            weight_decay: None,
            eps: None,
            momentum: 0.0,
            dampening: 0.0,
            nesterov: false,
            lr_decay: 0.0,
            initial_accumulator_value: 0.0,
            alpha: 0.99,
            centered: false,
            beta1: 0.9,
            beta2: 0.999,
        }
    }
}

impl OptimConfig {
    /// Plain SGD with learning rate `lr`.
    pub fn sgd(lr: f64) -> Self {
        OptimConfig { name: OptimKind::Sgd, lr, ..Default::default() }
    }
    /// Adagrad with learning rate `lr` (eps 1e-10, zero initial accumulator).
    pub fn adagrad(lr: f64) -> Self {
        OptimConfig { name: OptimKind::Adagrad, lr, ..Default::default() }
    }
    /// RMSProp with learning rate `lr` (α 0.99, eps 1e-8).
    pub fn rmsprop(lr: f64) -> Self {
        OptimConfig { name: OptimKind::Rmsprop, lr, ..Default::default() }
    }
    /// Adam with learning rate `lr` (β 0.9/0.999, eps 1e-8).
    pub fn adam(lr: f64) -> Self {
        OptimConfig { name: OptimKind::Adam, lr, ..Default::default() }
    }
    /// AdamW with learning rate `lr` (β 0.9/0.999, eps 1e-8, weight decay 0.01).
    pub fn adamw(lr: f64) -> Self {
        OptimConfig { name: OptimKind::Adamw, lr, ..Default::default() }
    }
    /// The effective weight decay.
    pub fn weight_decay(&self) -> f64 {
        self.weight_decay.unwrap_or(if self.name == OptimKind::Adamw { 0.01 } else { 0.0 })
    }
    /// The effective epsilon.
    pub fn eps(&self) -> f64 {
        self.eps.unwrap_or(if self.name == OptimKind::Adagrad { 1e-10 } else { 1e-8 })
    }
    /// Checks the ranges: PyTorch's checks, and beyond them every value finite, RMSProp's α and
    /// SGD's dampening in `[0, 1]` (outside it the squared-gradient average goes negative, or the
    /// momentum adds the gradient with the wrong sign), Adagrad's learning-rate decay and initial
    /// accumulator non-negative (as PyTorch requires). A value out of range is refused by name
    /// here rather than surfacing steps later as a diverged loss.
    pub fn validate(&self) -> Result<(), NnError> {
        let bad = |what: &str, v: f64| Err(NnError::invalid("invalid optimiser setting", what, v, "out of range"));
        let checks: [(&str, f64, bool); 10] = [
            ("lr", self.lr, self.lr >= 0.0),
            ("weight_decay", self.weight_decay(), self.weight_decay() >= 0.0),
            ("eps", self.eps(), self.eps() >= 0.0),
            ("momentum", self.momentum, self.momentum >= 0.0),
            ("dampening", self.dampening, (0.0..=1.0).contains(&self.dampening)),
            ("lr_decay", self.lr_decay, self.lr_decay >= 0.0),
            ("initial_accumulator_value", self.initial_accumulator_value, self.initial_accumulator_value >= 0.0),
            ("alpha", self.alpha, (0.0..=1.0).contains(&self.alpha)),
            ("beta1", self.beta1, (0.0..1.0).contains(&self.beta1)),
            ("beta2", self.beta2, (0.0..1.0).contains(&self.beta2)),
        ];
        for (what, v, ok) in checks {
            if !(ok && v.is_finite()) {
                return bad(what, v);
            }
        }
        if self.nesterov && (self.momentum <= 0.0 || self.dampening != 0.0) {
            return Err(NnError::invalid("invalid optimiser setting", "nesterov", true, "Nesterov momentum needs momentum > 0 and dampening = 0"));
        }
        Ok(())
    }
    /// Names of the per-parameter state buffers this optimiser keeps.
    pub fn slot_names(&self) -> Vec<&'static str> {
        match self.name {
            OptimKind::Sgd => {
                if self.momentum != 0.0 {
                    vec!["momentum_buffer"]
                } else {
                    vec![]
                }
            }
            OptimKind::Adagrad => vec!["sum"],
            OptimKind::Rmsprop => {
                let mut v = vec!["square_avg"];
                if self.momentum > 0.0 {
                    v.push("momentum_buffer");
                }
                if self.centered {
                    v.push("grad_avg");
                }
                v
            }
            OptimKind::Adam | OptimKind::Adamw => vec!["exp_avg", "exp_avg_sq"],
        }
    }
}

// ------------------------------------------------------------------------------------ grads

/// One parameter's gradient, as the optimiser consumes it.
#[derive(Clone, Debug, PartialEq)]
pub enum Grad<T> {
    /// A dense gradient with the parameter's shape, row-major.
    Dense(Vec<T>),
    /// Coalesced row gradient: row `ids[r]` (sorted, unique) receives `values[r·dim..(r+1)·dim]`.
    Rows {
        /// Sorted unique row indices.
        ids: Vec<usize>,
        /// `[ids.len(), dim]` values.
        values: Vec<T>,
        /// Row length.
        dim: usize,
    },
}

impl<T: Float> Grad<T> {
    /// Sum of squares of the entries.
    pub fn sum_sq(&self) -> f64 {
        let v = match self {
            Grad::Dense(v) => v,
            Grad::Rows { values, .. } => values,
        };
        v.iter().map(|x| x.to_f64() * x.to_f64()).sum()
    }
    /// Multiplies every entry by `s`.
    pub fn scale(&mut self, s: f64) {
        let v = match self {
            Grad::Dense(v) => v,
            Grad::Rows { values, .. } => values,
        };
        for x in v.iter_mut() {
            *x = T::from_f64(x.to_f64() * s);
        }
    }
    /// The dense equivalent (`numel` entries).
    pub fn to_dense(&self, numel: usize) -> Vec<T> {
        match self {
            Grad::Dense(v) => v.clone(),
            Grad::Rows { ids, values, dim } => {
                let mut d = vec![T::ZERO; numel];
                for (r, &id) in ids.iter().enumerate() {
                    d[id * dim..(id + 1) * dim].copy_from_slice(&values[r * dim..(r + 1) * dim]);
                }
                d
            }
        }
    }
}

/// The gradients of a list of parameters, aligned with it (`None`: frozen or no gradient).
/// Collect them after backward, optionally clip, then pass them to [`Optimizer::step`].
#[derive(Clone, Debug)]
pub struct Grads<T> {
    /// One entry per parameter, in the order of the slice they were collected from.
    pub items: Vec<Option<Grad<T>>>,
}

impl<T: Float> Grads<T> {
    /// Reads the gradients of `params`. Row-sparse gradients are coalesced (duplicate rows
    /// summed in order of appearance; rows sorted). Frozen parameters give `None`.
    pub fn collect(params: &[Param<T>]) -> Grads<T> {
        let items = params
            .iter()
            .map(|p| {
                if p.is_frozen() {
                    return None;
                }
                let t = p.get();
                if let Some(s) = t.sparse_grad_rows() {
                    // A dense gradient may have been added too (the table also used by a
                    // non-gather op): then the gradient is their sum, used densely.
                    if t.dense_grad_part().is_some() {
                        return t.grad().map(|g| Grad::Dense(g.to_vec()));
                    }
                    let dim = s.dim;
                    let mut ids: Vec<usize> = s.ids.clone();
                    ids.sort_unstable();
                    ids.dedup();
                    let mut values = vec![0.0f64; ids.len() * dim];
                    for (r, &id) in s.ids.iter().enumerate() {
                        let k = ids.binary_search(&id).unwrap();
                        for j in 0..dim {
                            values[k * dim + j] += s.values[r * dim + j].to_f64();
                        }
                    }
                    return Some(Grad::Rows { ids, values: values.into_iter().map(T::from_f64).collect(), dim });
                }
                t.grad().map(|g| Grad::Dense(g.to_vec()))
            })
            .collect();
        Grads { items }
    }
    /// Global L2 norm over all gradients (what [`Grads::clip_global_norm`] compares).
    pub fn global_norm(&self) -> f64 {
        self.items.iter().flatten().map(|g| g.sum_sq()).sum::<f64>().sqrt()
    }
    /// L2 norm of each gradient (`None` where there is none).
    pub fn norms(&self) -> Vec<Option<f64>> {
        self.items.iter().map(|g| g.as_ref().map(|g| g.sum_sq().sqrt())).collect()
    }
    /// Clipping by global norm (PyTorch's `clip_grad_norm_`): if the global norm `n` exceeds
    /// `max_norm`, every gradient is multiplied by `max_norm / (n + 1e-6)`. Returns `n` (the norm
    /// before clipping). Panics if `max_norm` is negative or not finite (a negative one would
    /// reverse the gradient, a NaN one switch clipping off).
    #[track_caller]
    pub fn clip_global_norm(&mut self, max_norm: f64) -> f64 {
        assert!(max_norm.is_finite() && max_norm >= 0.0, "clip_global_norm: max_norm {max_norm} must be finite and >= 0");
        let n = self.global_norm();
        let coef = max_norm / (n + 1e-6);
        if coef < 1.0 {
            for g in self.items.iter_mut().flatten() {
                g.scale(coef);
            }
        }
        n
    }
}

// ------------------------------------------------------------------------------------ state

/// One parameter's optimiser state.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamState<T> {
    /// Number of updates applied to this parameter (Adam's `t`, Adagrad's step for lr decay).
    pub step: u64,
    /// Named buffers with the parameter's number of elements (see [`OptimConfig::slot_names`]).
    pub slots: BTreeMap<String, Vec<T>>,
}

/// The complete optimiser state: hyperparameters, current learning rate and per-parameter
/// buffers keyed by parameter name. [`crate::checkpoint`] stores it next to the weights.
#[derive(Clone, Debug, PartialEq)]
pub struct OptimState<T> {
    /// Hyperparameters.
    pub config: OptimConfig,
    /// The learning rate in use (a schedule may have changed it from `config.lr`).
    pub lr: f64,
    /// Per-parameter state, by parameter name.
    pub params: BTreeMap<String, ParamState<T>>,
}

/// An optimiser: one of the [`OptimKind`] rules with its state.
#[derive(Clone, Debug)]
pub struct Optimizer<T> {
    cfg: OptimConfig,
    lr: f64,
    state: BTreeMap<String, ParamState<T>>,
}

impl<T: Float> Optimizer<T> {
    /// A fresh optimiser. Panics on invalid settings; use [`Optimizer::try_new`] for a `Result`.
    #[track_caller]
    pub fn new(cfg: OptimConfig) -> Self {
        Self::try_new(cfg).unwrap_or_else(|e| panic!("{e}"))
    }
    /// A fresh optimiser, or an error naming the invalid setting.
    pub fn try_new(cfg: OptimConfig) -> Result<Self, NnError> {
        cfg.validate()?;
        Ok(Optimizer { lr: cfg.lr, cfg, state: BTreeMap::new() })
    }
    /// Hyperparameters.
    pub fn config(&self) -> &OptimConfig {
        &self.cfg
    }
    /// Current learning rate.
    pub fn lr(&self) -> f64 {
        self.lr
    }
    /// Sets the learning rate for the next steps (schedules call this every step). Panics if
    /// `lr` is negative or not finite, as [`OptimConfig::validate`] refuses such a `lr`.
    #[track_caller]
    pub fn set_lr(&mut self, lr: f64) {
        assert!(lr.is_finite() && lr >= 0.0, "Optimizer::set_lr: learning rate {lr} must be finite and >= 0");
        self.lr = lr;
    }
    /// A copy of the full state (for checkpoints).
    pub fn state(&self) -> OptimState<T> {
        OptimState { config: self.cfg.clone(), lr: self.lr, params: self.state.clone() }
    }
    /// The state of one parameter, if it has been updated at least once.
    pub fn param_state(&self, name: &str) -> Option<&ParamState<T>> {
        self.state.get(name)
    }
    /// Restores a state from [`Optimizer::state`]. Checks the kind matches and every buffer has
    /// the right slots and length for `params` before changing anything.
    pub fn load_state(&mut self, s: OptimState<T>, params: &[Param<T>]) -> Result<(), NnError> {
        self.check_state(&s, params)?;
        self.cfg = s.config;
        self.lr = s.lr;
        self.state = s.params;
        Ok(())
    }

    /// Checks that `s` could be loaded by [`Optimizer::load_state`] without changing anything.
    pub fn check_state(&self, s: &OptimState<T>, params: &[Param<T>]) -> Result<(), NnError> {
        s.config.validate()?;
        if !(s.lr.is_finite() && s.lr >= 0.0) {
            return Err(NnError::optim_state(None, format!("optimiser state has learning rate {} (must be finite and >= 0)", s.lr)));
        }
        if s.config.name != self.cfg.name {
            return Err(NnError::optim_state(None, format!("optimiser state is for {:?}, not {:?}", s.config.name, self.cfg.name)));
        }
        let slots = s.config.slot_names();
        for (name, ps) in &s.params {
            let p = params
                .iter()
                .find(|p| p.name() == *name)
                .ok_or_else(|| NnError::optim_state(Some(name), format!("optimiser state for unknown parameter {name:?}")))?;
            // A stored state has had at least one update; past 2^53 the count is not an exact
            // float, and at u64::MAX the next update would wrap it to 0 (a bias correction of 0).
            if ps.step == 0 || ps.step > MAX_STEP {
                return Err(NnError::optim_state(Some(name), format!("optimiser state of {name:?} has step count {} (must be 1 to 2^53)", ps.step)));
            }
            for (slot, buf) in &ps.slots {
                if !slots.contains(&slot.as_str()) {
                    return Err(NnError::optim_state(Some(name), format!("optimiser state for {name:?} has unexpected buffer {slot:?}")));
                }
                if buf.len() != p.numel() {
                    return Err(NnError::Shape {
                        what: format!("optimiser buffer {slot:?} of {name:?} (values)"),
                        expected: vec![p.numel()],
                        found: vec![buf.len()],
                    });
                }
                // Running sums of squared gradients are never negative; no buffer holds a NaN or
                // an infinity. Either would otherwise surface steps later as "training diverged".
                let squares = matches!(slot.as_str(), "sum" | "square_avg" | "exp_avg_sq");
                if let Some((i, v)) = buf.iter().map(|v| v.to_f64()).enumerate().find(|&(_, v)| !v.is_finite() || (squares && v < 0.0)) {
                    let rule = if squares { "a running sum of squared gradients, finite and >= 0" } else { "finite" };
                    return Err(NnError::optim_state(Some(name), format!("optimiser buffer {slot:?} of {name:?} holds {v} at index {i} (must be {rule})")));
                }
            }
            for slot in &slots {
                if !ps.slots.contains_key(*slot) {
                    return Err(NnError::optim_state(Some(name), format!("optimiser state for {name:?} lacks buffer {slot:?}")));
                }
            }
        }
        Ok(())
    }

    /// Collects the gradients of `params` and applies one update (no clipping).
    pub fn step_params(&mut self, params: &[Param<T>]) {
        let g = Grads::collect(params);
        self.step(params, &g);
    }

    /// Applies one update to every parameter that has a gradient in `grads` (aligned with
    /// `params`) and is not frozen. A parameter listed twice (tied weights reached by two
    /// paths) is updated once, as PyTorch's `parameters()` lists it once. Panics if two
    /// different parameters share a name: the state is kept by name, so they would share
    /// moments and step counts (give each a unique name, e.g. with
    /// `Parameterized::assign_parameter_names`).
    #[track_caller]
    pub fn step(&mut self, params: &[Param<T>], grads: &Grads<T>) {
        assert_eq!(params.len(), grads.items.len(), "Optimizer::step: {} params but {} grads", params.len(), grads.items.len());
        let mut by_name: HashMap<String, &Param<T>> = HashMap::with_capacity(params.len());
        for (p, g) in params.iter().zip(&grads.items) {
            let name = p.name();
            match by_name.get(&name) {
                Some(q) if q.ptr_eq(p) => continue,
                Some(q) => panic!(
                    "Optimizer::step: two different parameters are named {:?} (shapes {:?} and {:?}): the optimiser keeps its state by name, so they would share it; give each a unique name (Parameterized::assign_parameter_names names them by path)",
                    name,
                    q.shape(),
                    p.shape()
                ),
                None => {
                    by_name.insert(name, p);
                }
            }
            let Some(g) = g else { continue };
            if p.is_frozen() {
                continue;
            }
            self.update_one(p, g);
        }
    }

    fn update_one(&mut self, p: &Param<T>, g: &Grad<T>) {
        let n = p.numel();
        let cfg = self.cfg.clone();
        let lr = self.lr;
        let wd = cfg.weight_decay();
        let slots = cfg.slot_names();
        let fresh = !self.state.contains_key(p.name().as_str());
        let st = self.state.entry(p.name().to_string()).or_insert_with(|| ParamState {
            step: 0,
            slots: slots
                .iter()
                .map(|s| {
                    let init = if *s == "sum" { cfg.initial_accumulator_value } else { 0.0 };
                    (s.to_string(), vec![T::from_f64(init); n])
                })
                .collect(),
        });
        assert!(
            fresh || st.slots.values().all(|b| b.len() == n),
            "Optimizer::step: the state of {:?} holds {} values, the parameter {n}",
            p.name(),
            st.slots.values().next().map_or(0, |b| b.len())
        );
        st.step = st.step.saturating_add(1);
        let t = st.step;
        // Densify where the sparse rule would differ from the dense one (momentum and weight
        // decay reach untouched rows too); Adam and AdamW are lazy by design (module docs).
        let dense_only = match cfg.name {
            OptimKind::Sgd | OptimKind::Adagrad => cfg.momentum != 0.0 || wd != 0.0,
            OptimKind::Rmsprop => true,
            OptimKind::Adam | OptimKind::Adamw => false,
        };
        let g_owned;
        let g = match g {
            Grad::Rows { .. } if dense_only => {
                g_owned = Grad::Dense(g.to_dense(n));
                &g_owned
            }
            _ => g,
        };
        // Rows to visit: (row index into the grad values, offset in the parameter, length).
        let (ranges, gv): (Vec<(usize, usize)>, &[T]) = match g {
            Grad::Dense(v) => {
                assert_eq!(v.len(), n, "gradient of {} has {} values, parameter has {n}", p.name(), v.len());
                (vec![(0, 0)], v)
            }
            Grad::Rows { ids, values, dim } => (ids.iter().enumerate().map(|(r, &id)| (r * dim, id * dim)).collect(), values),
        };
        let len = match g {
            Grad::Dense(_) => n,
            Grad::Rows { dim, .. } => *dim,
        };
        let mut bufs: Vec<Vec<T>> = slots.iter().map(|s| std::mem::take(st.slots.get_mut(*s).unwrap())).collect();
        // One loop per rule, over slices, with the step's constants computed once: a single loop
        // that matches on the rule for every element (and re-derives Adam's bias corrections)
        // does not vectorise, ~26 ns per element for Adam in the `optim` bench against ~3 here.
        // Each rule computes its f64 expression in the order PyTorch's formula states it (the
        // tests below check every rule against an element-by-element reference, bit for bit).
        let rule = Rule::new(&cfg, lr, t);
        // Compiled for the CPU's vector width (SSE2 gives two f64 lanes, AVX2 four); a large
        // dense update is split in chunks over the pool's threads (no element's update reads
        // another's, so the result does not depend on the split).
        let run = |w: &mut [T], g: &[T], state: &mut [&mut [T]]| chi_kernels::simd::vectorized(#[inline(always)] || rule.apply(w, g, state));
        p.update(|w| {
            let threads = chi_kernels::threads::num_threads();
            if let [(go, wo)] = ranges[..] {
                if len >= PAR_MIN_ELEMENTS && threads > 1 && !chi_kernels::team::in_share() {
                    let mut states: Vec<_> = bufs.iter_mut().map(|b| b[wo..wo + len].chunks_mut(PAR_CHUNK)).collect();
                    let jobs: Vec<(&mut [T], &[T], Vec<&mut [T]>)> = w[wo..wo + len]
                        .chunks_mut(PAR_CHUNK)
                        .zip(gv[go..go + len].chunks(PAR_CHUNK))
                        .map(|(wc, gc)| (wc, gc, states.iter_mut().map(|s| s.next().expect("state as long as the parameter")).collect()))
                        .collect();
                    chi_kernels::team::for_each(threads, jobs.into_iter(), |(wc, gc, mut sc)| run(wc, gc, &mut sc));
                    return;
                }
            }
            // One range per row of a sparse gradient: the state slices (at most three slots) go
            // on the stack rather than into a vector allocated per row.
            let slots = bufs.len();
            assert!(slots <= 3, "an update rule keeps at most three state slots");
            for &(go, wo) in &ranges {
                let mut it = bufs.iter_mut();
                let mut state: [&mut [T]; 3] = std::array::from_fn(|_| it.next().map_or_else(Default::default, |b| &mut b[wo..wo + len]));
                run(&mut w[wo..wo + len], &gv[go..go + len], &mut state[..slots]);
            }
        });
        for (s, b) in slots.iter().zip(bufs) {
            *st.slots.get_mut(*s).unwrap() = b;
        }
    }
}

/// Dense updates of at least this many elements run on the pool's threads, in chunks of
/// [`PAR_CHUNK`] elements (at ~0.5–3 ns per element, 128K elements take 60–400 µs on one core,
/// well above the cost of a fork and join).
const PAR_MIN_ELEMENTS: usize = 1 << 17;
/// Elements per chunk of a split update (a multiple of every vector width).
const PAR_CHUNK: usize = 1 << 15;

/// One step's update rule with its constants (learning rate, decays, bias corrections) resolved.
enum Rule {
    /// SGD; `momentum` is `Some((μ, dampening, nesterov, first step))` with a momentum buffer.
    Sgd { lr: f64, wd: f64, momentum: Option<(f64, f64, bool, bool)> },
    /// Adagrad with the step's decayed learning rate.
    Adagrad { clr: f64, wd: f64, eps: f64 },
    /// RMSProp: state `[square_avg, momentum_buffer?, grad_avg?]`.
    Rmsprop { lr: f64, wd: f64, eps: f64, alpha: f64, momentum: f64, centered: bool },
    /// Adam (`decoupled = false`) or AdamW; `bc1`, `bc2` are `1 − βᵗ`.
    Adam { lr: f64, wd: f64, eps: f64, beta1: f64, beta2: f64, bc1: f64, bc2: f64, decoupled: bool },
}

impl Rule {
    fn new(cfg: &OptimConfig, lr: f64, t: u64) -> Self {
        let (wd, eps) = (cfg.weight_decay(), cfg.eps());
        match cfg.name {
            OptimKind::Sgd => Rule::Sgd { lr, wd, momentum: (cfg.momentum != 0.0).then_some((cfg.momentum, cfg.dampening, cfg.nesterov, t == 1)) },
            OptimKind::Adagrad => Rule::Adagrad { clr: lr / (1.0 + (t - 1) as f64 * cfg.lr_decay), wd, eps },
            OptimKind::Rmsprop => Rule::Rmsprop { lr, wd, eps, alpha: cfg.alpha, momentum: cfg.momentum, centered: cfg.centered },
            OptimKind::Adam | OptimKind::Adamw => Rule::Adam {
                lr,
                wd,
                eps,
                beta1: cfg.beta1,
                beta2: cfg.beta2,
                // Past 2^31 steps βᵗ is 0 for any β < 1; the clamp keeps the i32 from wrapping.
                bc1: 1.0 - cfg.beta1.powi(t.min(i32::MAX as u64) as i32),
                bc2: 1.0 - cfg.beta2.powi(t.min(i32::MAX as u64) as i32),
                decoupled: cfg.name == OptimKind::Adamw,
            },
        }
    }

    /// Updates the weights `w` from the gradient `g` and the state slices `s` (the rule's slots,
    /// in [`OptimConfig::slot_names`] order, each as long as `w`). States are stored in `T` and
    /// read back before use, as PyTorch's update of a `T` tensor does.
    #[inline(always)]
    fn apply<T: Float>(&self, w: &mut [T], g: &[T], s: &mut [&mut [T]]) {
        let n = w.len();
        assert!(g.len() == n && s.iter().all(|b| b.len() == n), "optimiser state and gradient must match the parameter");
        let f = T::from_f64;
        match *self {
            Rule::Sgd { lr, wd, momentum: None } => {
                for (wv, &gi) in w.iter_mut().zip(g) {
                    let theta = wv.to_f64();
                    *wv = f(theta - lr * (gi.to_f64() + wd * theta));
                }
            }
            Rule::Sgd { lr, wd, momentum: Some((mu, dampening, nesterov, first)) } => {
                for ((wv, &gi), bv) in w.iter_mut().zip(g).zip(s[0].iter_mut()) {
                    let theta = wv.to_f64();
                    let grad = gi.to_f64() + wd * theta;
                    *bv = f(if first { grad } else { mu * bv.to_f64() + (1.0 - dampening) * grad });
                    let b = bv.to_f64();
                    *wv = f(theta - lr * if nesterov { grad + mu * b } else { b });
                }
            }
            Rule::Adagrad { clr, wd, eps } => {
                for ((wv, &gi), sv) in w.iter_mut().zip(g).zip(s[0].iter_mut()) {
                    let theta = wv.to_f64();
                    let grad = gi.to_f64() + wd * theta;
                    *sv = f(sv.to_f64() + grad * grad);
                    *wv = f(theta - clr * grad / (sv.to_f64().sqrt() + eps));
                }
            }
            Rule::Rmsprop { lr, wd, eps, alpha, momentum, centered } => {
                let (sq, rest) = s.split_first_mut().expect("RMSProp keeps square_avg");
                let (mom, rest): (&mut [T], &mut [&mut [T]]) = if momentum > 0.0 {
                    let (m, r) = rest.split_first_mut().expect("RMSProp with momentum keeps momentum_buffer");
                    (m, r)
                } else {
                    (&mut [], rest)
                };
                let gavg: &mut [T] = if centered { rest.first_mut().expect("centred RMSProp keeps grad_avg") } else { &mut [] };
                let k = RmspropConsts { lr, wd, eps, alpha, momentum };
                // One monomorphic loop per (momentum, centred) pair, so that none tests per element.
                match (momentum > 0.0, centered) {
                    (false, false) => rmsprop::<T, false, false>(&k, w, g, sq, mom, gavg),
                    (true, false) => rmsprop::<T, true, false>(&k, w, g, sq, mom, gavg),
                    (false, true) => rmsprop::<T, false, true>(&k, w, g, sq, mom, gavg),
                    (true, true) => rmsprop::<T, true, true>(&k, w, g, sq, mom, gavg),
                }
            }
            Rule::Adam { lr, wd, eps, beta1, beta2, bc1, bc2, decoupled } => {
                let [m, v] = s else { unreachable!("Adam keeps exp_avg and exp_avg_sq") };
                let decay = 1.0 - lr * wd;
                for (((wv, &gi), mv), vv) in w.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
                    let (mut theta, mut grad) = (wv.to_f64(), gi.to_f64());
                    if decoupled {
                        theta *= decay;
                    } else {
                        grad += wd * theta;
                    }
                    *mv = f(beta1 * mv.to_f64() + (1.0 - beta1) * grad);
                    *vv = f(beta2 * vv.to_f64() + (1.0 - beta2) * grad * grad);
                    let (m_hat, v_hat) = (mv.to_f64() / bc1, vv.to_f64() / bc2);
                    *wv = f(theta - lr * m_hat / (v_hat.sqrt() + eps));
                }
            }
        }
    }
}

/// The constants of an RMSProp step.
struct RmspropConsts {
    lr: f64,
    wd: f64,
    eps: f64,
    alpha: f64,
    momentum: f64,
}

/// RMSProp over slices: `sq` the square average, `mb` the momentum buffer (used when `MOM`),
/// `ga` the gradient average (used when `CEN`); an unused buffer may be empty.
#[inline(always)]
fn rmsprop<T: Float, const MOM: bool, const CEN: bool>(k: &RmspropConsts, w: &mut [T], g: &[T], sq: &mut [T], mb: &mut [T], ga: &mut [T]) {
    let n = w.len();
    assert!(g.len() == n && sq.len() == n && (!MOM || mb.len() == n) && (!CEN || ga.len() == n));
    let (f, a) = (T::from_f64, k.alpha);
    for i in 0..n {
        let theta = w[i].to_f64();
        let grad = g[i].to_f64() + k.wd * theta;
        sq[i] = f(a * sq[i].to_f64() + (1.0 - a) * grad * grad);
        let v = sq[i].to_f64();
        let avg = if CEN {
            ga[i] = f(a * ga[i].to_f64() + (1.0 - a) * grad);
            let gm = ga[i].to_f64();
            (v - gm * gm).sqrt() + k.eps
        } else {
            v.sqrt() + k.eps
        };
        w[i] = f(if MOM {
            mb[i] = f(k.momentum * mb[i].to_f64() + grad / avg);
            theta - k.lr * mb[i].to_f64()
        } else {
            theta - k.lr * grad / avg
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chi_autodiff::Tensor;

    /// A sparse-gradient table also used by a dense op gets the sum of both parts, also when
    /// the two parts happen to be equal (an equality test took that for rows alone).
    #[test]
    fn a_table_with_dense_and_row_gradients_gets_their_sum() {
        for (ids, want) in [(vec![0, 1], vec![2.0, 2.0, 2.0, 2.0]), (vec![0], vec![2.0, 2.0, 1.0, 1.0])] {
            let p = Param::new("emb", Tensor::<f64>::from_vec(vec![1., 2., 3., 4.], &[2, 2]));
            let _ = p.get().sparse_grad();
            let t = p.get();
            t.embedding(&ids).sum().add(&t.sum()).backward();
            let g = Grads::collect(std::slice::from_ref(&p));
            match g.items[0].as_ref().unwrap() {
                Grad::Dense(d) => assert_eq!(d, &want, "{ids:?}"),
                other => panic!("{ids:?}: {other:?}"),
            }
        }
    }

    /// Every setting out of its range, or not finite, is refused naming the key (an infinite eps
    /// was accepted, then saved as JSON `null` and read back as "no eps set"; a negative Adagrad
    /// decay or an RMSProp α of 2 trained on to a NaN loss); the defaults and edges pass.
    #[test]
    fn settings_out_of_range_or_not_finite_are_refused_by_name() {
        let base = OptimConfig::default();
        for kind in [OptimKind::Sgd, OptimKind::Adagrad, OptimKind::Rmsprop, OptimKind::Adam, OptimKind::Adamw] {
            assert!(OptimConfig { name: kind, ..base.clone() }.validate().is_ok(), "{kind:?} defaults");
        }
        let edges = [OptimConfig { alpha: 1.0, dampening: 1.0, ..base.clone() }, OptimConfig { alpha: 0.0, lr: 0.0, ..base.clone() }];
        for c in edges {
            assert!(c.validate().is_ok(), "{c:?}");
        }
        let cases: Vec<(&str, OptimConfig)> = vec![
            ("lr", OptimConfig { lr: f64::INFINITY, ..base.clone() }),
            ("eps", OptimConfig { eps: Some(f64::INFINITY), ..base.clone() }),
            ("eps", OptimConfig { eps: Some(f64::NAN), ..base.clone() }),
            ("weight_decay", OptimConfig { weight_decay: Some(f64::INFINITY), ..base.clone() }),
            ("momentum", OptimConfig { momentum: f64::INFINITY, ..base.clone() }),
            ("dampening", OptimConfig { dampening: -100.0, ..base.clone() }),
            ("dampening", OptimConfig { dampening: f64::NAN, ..base.clone() }),
            ("lr_decay", OptimConfig { lr_decay: -10.0, ..base.clone() }),
            ("lr_decay", OptimConfig { lr_decay: f64::NAN, ..base.clone() }),
            ("initial_accumulator_value", OptimConfig { initial_accumulator_value: -1.0, ..base.clone() }),
            ("initial_accumulator_value", OptimConfig { initial_accumulator_value: f64::INFINITY, ..base.clone() }),
            ("alpha", OptimConfig { alpha: 2.0, ..base.clone() }),
            ("beta2", OptimConfig { beta2: 1.0, ..base.clone() }),
        ];
        for (key, c) in cases {
            let e = c.validate().expect_err(key).to_string();
            assert!(e.contains(key) && e.contains("out of range"), "{key}: {e}");
        }
    }

    /// A loaded optimiser state whose squared-gradient sums are negative, whose buffers hold a
    /// NaN or an infinity, or whose learning rate is not finite, is refused naming the
    /// parameter, the buffer and the index (it trained on to a "training diverged" steps later);
    /// the state the optimiser wrote itself loads.
    #[test]
    fn loaded_states_with_negative_sums_or_non_finite_values_are_refused() {
        use crate::params::ParamStore;
        for (kind, slot, bad, word) in [
            (OptimKind::Adagrad, "sum", -1.0, "-1"),
            (OptimKind::Adagrad, "sum", f64::NAN, "NaN"),
            (OptimKind::Adam, "exp_avg_sq", -0.5, "-0.5"),
            (OptimKind::Adam, "exp_avg", f64::INFINITY, "inf"),
            (OptimKind::Rmsprop, "square_avg", -2.0, "-2"),
        ] {
            let mut store = ParamStore::<f64>::new();
            let w = store.add("w", "g", Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]));
            let mut o = Optimizer::new(OptimConfig { name: kind, ..OptimConfig::default() });
            w.get().sum().backward();
            o.step_params(store.params());
            let good = o.state();
            assert!(o.check_state(&good, store.params()).is_ok(), "{kind:?}: its own state");
            let mut st = good.clone();
            st.params.get_mut("w").unwrap().slots.get_mut(slot).unwrap()[1] = bad;
            let e = o.check_state(&st, store.params()).unwrap_err().to_string();
            assert!(e.contains(slot) && e.contains("\"w\"") && e.contains("index 1") && e.contains(word), "{kind:?} {slot}: {e}");
            let mut st = good.clone();
            st.lr = f64::NAN;
            let e = o.check_state(&st, store.params()).unwrap_err().to_string();
            assert!(e.contains("learning rate NaN"), "{e}");
        }
    }

    /// Each rule written element by element as PyTorch's single-tensor update states it (f64
    /// arithmetic, state stored in f32 and read back): the reference the slice loops of
    /// [`Rule::apply`] must equal bit for bit, over three steps on f32 weights.
    fn reference(cfg: &OptimConfig, w: &mut [f32], g: &[f32], s: &mut [Vec<f32>], t: u64) {
        let (lr, wd, eps) = (cfg.lr, cfg.weight_decay(), cfg.eps());
        let r = |x: f64| x as f32 as f64;
        for i in 0..w.len() {
            let mut theta = w[i] as f64;
            let mut grad = g[i] as f64;
            let new = match cfg.name {
                OptimKind::Sgd => {
                    grad += wd * theta;
                    if cfg.momentum != 0.0 {
                        let b = if t == 1 { grad } else { cfg.momentum * s[0][i] as f64 + (1.0 - cfg.dampening) * grad };
                        s[0][i] = b as f32;
                        grad = if cfg.nesterov { grad + cfg.momentum * s[0][i] as f64 } else { s[0][i] as f64 };
                    }
                    theta - lr * grad
                }
                OptimKind::Adagrad => {
                    grad += wd * theta;
                    s[0][i] = (s[0][i] as f64 + grad * grad) as f32;
                    let clr = lr / (1.0 + (t - 1) as f64 * cfg.lr_decay);
                    theta - clr * grad / ((s[0][i] as f64).sqrt() + eps)
                }
                // State [square_avg, momentum_buffer (with momentum), grad_avg (centred)].
                OptimKind::Rmsprop => {
                    grad += wd * theta;
                    let a = cfg.alpha;
                    let (mi, gi) = (1, if cfg.momentum > 0.0 { 2 } else { 1 });
                    let v = r(a * s[0][i] as f64 + (1.0 - a) * grad * grad);
                    s[0][i] = v as f32;
                    let avg = if cfg.centered {
                        let ga = r(a * s[gi][i] as f64 + (1.0 - a) * grad);
                        s[gi][i] = ga as f32;
                        (v - ga * ga).sqrt() + eps
                    } else {
                        v.sqrt() + eps
                    };
                    if cfg.momentum > 0.0 {
                        s[mi][i] = (cfg.momentum * s[mi][i] as f64 + grad / avg) as f32;
                        theta - lr * s[mi][i] as f64
                    } else {
                        theta - lr * grad / avg
                    }
                }
                OptimKind::Adam | OptimKind::Adamw => {
                    if cfg.name == OptimKind::Adamw {
                        theta *= 1.0 - lr * wd;
                    } else {
                        grad += wd * theta;
                    }
                    s[0][i] = (cfg.beta1 * s[0][i] as f64 + (1.0 - cfg.beta1) * grad) as f32;
                    s[1][i] = (cfg.beta2 * s[1][i] as f64 + (1.0 - cfg.beta2) * grad * grad) as f32;
                    let m_hat = s[0][i] as f64 / (1.0 - cfg.beta1.powi(t as i32));
                    let v_hat = s[1][i] as f64 / (1.0 - cfg.beta2.powi(t as i32));
                    theta - lr * m_hat / (v_hat.sqrt() + eps)
                }
            };
            w[i] = new as f32;
        }
    }

    #[test]
    fn each_rule_equals_its_element_by_element_reference_bitwise() {
        let n = 37;
        let w0: Vec<f32> = (0..n).map(|i| (0.37 * i as f64).sin() as f32).collect();
        let grads: Vec<Vec<f32>> = (0..3).map(|t| (0..n).map(|i| (0.11 * i as f64 + t as f64).cos() as f32 * 0.3).collect()).collect();
        let configs = [
            OptimConfig::sgd(0.1),
            OptimConfig { momentum: 0.9, nesterov: true, weight_decay: Some(0.01), ..OptimConfig::sgd(0.1) },
            OptimConfig { momentum: 0.9, dampening: 0.1, ..OptimConfig::sgd(0.1) },
            OptimConfig { initial_accumulator_value: 0.1, lr_decay: 0.5, weight_decay: Some(0.02), ..OptimConfig::adagrad(0.1) },
            OptimConfig { centered: true, momentum: 0.5, weight_decay: Some(0.01), ..OptimConfig::rmsprop(0.01) },
            OptimConfig::rmsprop(0.01),
            OptimConfig { momentum: 0.5, ..OptimConfig::rmsprop(0.01) },
            OptimConfig { centered: true, ..OptimConfig::rmsprop(0.01) },
            OptimConfig { weight_decay: Some(0.1), ..OptimConfig::adam(0.01) },
            OptimConfig::adamw(0.01),
        ];
        for cfg in configs {
            let mut store = crate::ParamStore::<f32>::new();
            let p = store.add("w", "g", Tensor::from_vec(w0.clone(), &[n]));
            let mut opt = Optimizer::<f32>::new(cfg.clone());
            let mut w = w0.clone();
            let init = if cfg.name == OptimKind::Adagrad { cfg.initial_accumulator_value as f32 } else { 0.0 };
            let mut s = vec![vec![init; n]; 3];
            for (t, g) in grads.iter().enumerate() {
                opt.step(std::slice::from_ref(&p), &Grads { items: vec![Some(Grad::Dense(g.clone()))] });
                reference(&cfg, &mut w, g, &mut s, t as u64 + 1);
                let got = p.to_vec();
                for (i, (a, b)) in got.iter().zip(&w).enumerate() {
                    assert_eq!(a.to_bits(), b.to_bits(), "{:?} step {} element {i}: {a} vs {b}", cfg.name, t + 1);
                }
            }
        }
    }

    /// A large dense update runs in chunks on two threads; it equals the one-thread update bit for
    /// bit (a length that is not a multiple of the chunk, every state-carrying rule).
    #[test]
    fn split_update_equals_the_one_thread_update() {
        let n = 3 * PAR_CHUNK + PAR_MIN_ELEMENTS + 77;
        let w0: Vec<f32> = (0..n).map(|i| (0.37 * i as f64).sin() as f32).collect();
        let g: Vec<f32> = (0..n).map(|i| (0.11 * i as f64).cos() as f32 * 0.3).collect();
        let configs = [
            OptimConfig { momentum: 0.9, ..OptimConfig::sgd(0.1) },
            OptimConfig::adagrad(0.1),
            OptimConfig { centered: true, momentum: 0.5, ..OptimConfig::rmsprop(0.01) },
            OptimConfig::adamw(0.01),
        ];
        for cfg in configs {
            let run = |threads: usize| {
                let (w0, g, cfg) = (w0.clone(), g.clone(), cfg.clone());
                chi_kernels::threads::with_threads(threads, move || {
                    let mut store = crate::ParamStore::<f32>::new();
                    let p = store.add("w", "g", Tensor::from_vec(w0, &[n]));
                    let mut opt = Optimizer::<f32>::new(cfg);
                    for _ in 0..2 {
                        opt.step(std::slice::from_ref(&p), &Grads { items: vec![Some(Grad::Dense(g.clone()))] });
                    }
                    p.to_vec()
                })
                .expect("thread pool")
            };
            let (one, two) = (run(1), run(2));
            assert!(one.iter().zip(&two).all(|(a, b)| a.to_bits() == b.to_bits()), "{:?}: the split update differs", cfg.name);
            assert!(one.iter().zip(&w0).any(|(a, b)| a != b), "{:?}: nothing was updated", cfg.name);
        }
    }
}
