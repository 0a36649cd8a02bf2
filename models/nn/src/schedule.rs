//! Learning-rate schedules and the block-coordinate (`em_steps`) freezing schedule.

use crate::error::NnError;
use crate::params::ParamStore;
use chi_autodiff::Float;
use serde::{Deserialize, Serialize};

/// A learning-rate schedule: the learning rate at step `s` (0-based) is
/// `base_lr · factor(s)`. In TOML: `[schedule]` with `kind = "cosine"`, `total_steps = 1000`, ...
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum LrSchedule {
    /// `lr` at every step. (A variant with no fields rather than a unit variant: serde checks
    /// unknown keys only for the former, and `kind = "constant"` with `gamma = 0.5` would
    /// otherwise be taken without a word.)
    Constant {},
    /// `lr · gamma^⌊s / every⌋` (PyTorch `StepLR`).
    Step {
        /// Steps between decays.
        every: u64,
        /// Multiplicative factor.
        gamma: f64,
    },
    /// `lr · gamma^s` (PyTorch `ExponentialLR`).
    Exponential {
        /// Per-step factor.
        gamma: f64,
    },
    /// Cosine annealing from `lr` to `min_lr` over `total_steps`, then `min_lr`
    /// (`min + (lr − min)·(1 + cos(π·s/T))/2`, PyTorch `CosineAnnealingLR` without restarts).
    Cosine {
        /// Steps of the half cosine.
        total_steps: u64,
        /// Final learning rate.
        #[serde(default)]
        min_lr: f64,
    },
    /// Linear warmup `lr·(s+1)/steps` for the first `steps` steps, then `after` evaluated at
    /// `s − steps`.
    Warmup {
        /// Warmup length.
        steps: u64,
        /// Schedule after the warmup.
        #[serde(default)]
        after: Box<LrSchedule>,
    },
}

impl LrSchedule {
    /// Learning rate at 0-based step `step` for base rate `base`.
    pub fn lr_at(&self, base: f64, step: u64) -> f64 {
        match self {
            LrSchedule::Constant {} => base,
            // The clamp keeps the i32 from wrapping past 2^31 decays (γ^(2^31) is 0 or ∞ anyway).
            LrSchedule::Step { every, gamma } => base * gamma.powi((step / (*every).max(1)).min(i32::MAX as u64) as i32),
            LrSchedule::Exponential { gamma } => base * gamma.powf(step as f64),
            LrSchedule::Cosine { total_steps, min_lr } => {
                let t = (*total_steps).max(1);
                if step >= t {
                    *min_lr
                } else {
                    min_lr + (base - min_lr) * (1.0 + (std::f64::consts::PI * step as f64 / t as f64).cos()) / 2.0
                }
            }
            LrSchedule::Warmup { steps, after } => {
                if step < *steps {
                    base * (step + 1) as f64 / *steps as f64
                } else {
                    after.lr_at(base, step - steps)
                }
            }
        }
    }

    /// Checks the values for a run whose base learning rate is `base_lr`: factors and minimum
    /// rates finite and ≥ 0, step lengths at least 1 (a decay every 0 steps or a cosine over 0
    /// steps would be read as 1 and drop the rate at once), and a cosine's final rate at most
    /// `base_lr` (above it, the "decay" would raise the rate).
    pub fn validate(&self, base_lr: f64) -> Result<(), NnError> {
        let bad = |field: &str, v: String, why: String| Err(NnError::invalid("schedule", field, v, why));
        let check = |field: &str, v: f64| if v.is_finite() && v >= 0.0 { Ok(()) } else { bad(field, v.to_string(), "must be finite and >= 0".into()) };
        let steps = |field: &str, n: u64| if n >= 1 { Ok(()) } else { bad(field, "0".into(), "must be at least 1 step".into()) };
        match self {
            LrSchedule::Constant {} => Ok(()),
            LrSchedule::Step { every, gamma } => steps("step EVERY", *every).and(check("gamma", *gamma)),
            LrSchedule::Exponential { gamma } => check("gamma", *gamma),
            LrSchedule::Cosine { total_steps, min_lr } => {
                steps("cosine TOTAL", *total_steps)?;
                check("min_lr", *min_lr)?;
                if *min_lr > base_lr {
                    return bad("cosine MIN_LR", min_lr.to_string(), format!("above the learning rate {base_lr} it decays from"));
                }
                Ok(())
            }
            LrSchedule::Warmup { after, .. } => after.validate(base_lr),
        }
    }

    /// Parses the command-line form: `constant`, `step:EVERY:GAMMA`, `exp:GAMMA`,
    /// `cosine:TOTAL[:MIN_LR]`, optionally prefixed with `warmup:STEPS,` (e.g.
    /// `warmup:100,cosine:10000`). The values are checked as [`LrSchedule::validate`] checks
    /// them, but for `MIN_LR` against a learning rate (not known here).
    pub fn parse(s: &str) -> Result<LrSchedule, NnError> {
        let parsed = Self::parse_unchecked(s)?;
        parsed.validate(f64::INFINITY)?;
        Ok(parsed)
    }

    fn parse_unchecked(s: &str) -> Result<LrSchedule, NnError> {
        let err = || NnError::Parse {
            what: "schedule",
            input: s.to_string(),
            expected: "constant | step:EVERY:GAMMA | exp:GAMMA | cosine:TOTAL[:MIN_LR], optionally prefixed by warmup:STEPS,",
        };
        if let Some(rest) = s.strip_prefix("warmup:") {
            let (n, after) = rest.split_once(',').unwrap_or((rest, "constant"));
            let steps = n.parse().map_err(|_| err())?;
            return Ok(LrSchedule::Warmup { steps, after: Box::new(LrSchedule::parse_unchecked(after)?) });
        }
        let parts: Vec<&str> = s.split(':').collect();
        let f = |i: usize| parts.get(i).ok_or_else(err)?.parse::<f64>().map_err(|_| err());
        let u = |i: usize| parts.get(i).ok_or_else(err)?.parse::<u64>().map_err(|_| err());
        match parts[0] {
            "constant" if parts.len() == 1 => Ok(LrSchedule::Constant {}),
            "step" if parts.len() == 3 => Ok(LrSchedule::Step { every: u(1)?, gamma: f(2)? }),
            "exp" | "exponential" if parts.len() == 2 => Ok(LrSchedule::Exponential { gamma: f(1)? }),
            "cosine" if parts.len() == 2 || parts.len() == 3 => {
                Ok(LrSchedule::Cosine { total_steps: u(1)?, min_lr: if parts.len() == 3 { f(2)? } else { 0.0 } })
            }
            _ => Err(err()),
        }
    }
}

impl Default for LrSchedule {
    fn default() -> Self {
        LrSchedule::Constant {}
    }
}

/// Block-coordinate training ([CAML](crate#references) §4.2.1, `em_steps`): the parameter groups are split into
/// blocks and only one block trains at a time; every `em_steps` steps the next block takes over.
/// At step `s` the active block is `(s / em_steps) % blocks.len()`; the groups of the other
/// blocks are frozen with [`ParamStore::set_group_frozen`]. Groups named in no block are left
/// alone. `em_steps = 0` (or fewer than two blocks) disables it: every listed group trains.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct BlockCoordinate {
    /// Steps per block.
    pub em_steps: u64,
    /// Blocks, each a list of group names (the paper: `[["chi"], ["embedding"]]`).
    pub blocks: Vec<Vec<String>>,
}

impl BlockCoordinate {
    /// A schedule alternating `blocks` every `em_steps` steps.
    pub fn new(em_steps: u64, blocks: Vec<Vec<String>>) -> Self {
        BlockCoordinate { em_steps, blocks }
    }
    /// A schedule with one group per block.
    pub fn from_groups(em_steps: u64, groups: &[&str]) -> Self {
        Self::new(em_steps, groups.iter().map(|g| vec![g.to_string()]).collect())
    }
    /// Whether it does anything.
    pub fn enabled(&self) -> bool {
        self.em_steps > 0 && self.blocks.len() >= 2
    }
    /// The active block at step `step` (`None` when disabled).
    pub fn active(&self, step: u64) -> Option<usize> {
        self.enabled().then(|| ((step / self.em_steps) % self.blocks.len() as u64) as usize)
    }
    /// Freezes/unfreezes the groups of `store` for step `step`; returns the active block. When
    /// disabled, unfreezes every listed group.
    pub fn apply<T: Float>(&self, store: &ParamStore<T>, step: u64) -> Option<usize> {
        let active = self.active(step);
        for (b, groups) in self.blocks.iter().enumerate() {
            for g in groups {
                store.set_group_frozen(g, active.is_some_and(|a| a != b));
            }
        }
        active
    }
    /// Checks that the schedule does something if set (`em_steps` ≥ 1, two blocks or more), that
    /// no block is empty or shares a group with another, and that every group named exists in
    /// `store`.
    pub fn validate<T: Float>(&self, store: &ParamStore<T>) -> Result<(), NnError> {
        let what = "block-coordinate schedule";
        // Settings that switch the schedule off would train as a plain run without a word.
        if *self != Self::default() && !self.enabled() {
            return Err(NnError::invalid(
                what,
                "em_steps, blocks",
                format!("{}, {} block(s)", self.em_steps, self.blocks.len()),
                "it alternates blocks only with em_steps ≥ 1 and at least two blocks; as given it would do nothing",
            ));
        }
        if let Some(i) = self.blocks.iter().position(Vec::is_empty) {
            return Err(NnError::invalid(what, "blocks", format!("block {} is empty", i + 1), "each block names at least one parameter group"));
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(g) = self.blocks.iter().flatten().find(|g| !seen.insert(g.as_str())) {
            return Err(NnError::invalid(what, "blocks", format!("{g:?} in two blocks"), "each group belongs to one block"));
        }
        let have = store.groups();
        for g in self.blocks.iter().flatten() {
            if !have.contains(g) {
                return Err(NnError::Unknown { context: "block-coordinate schedule".into(), kind: "parameter group".into(), name: g.clone(), known: have.into_iter().collect() });
            }
        }
        Ok(())
    }
}
