//! Experiment options: `chi reproduce NAME --set KEY=VALUE …`.
//!
//! Where a paper leaves a choice open (sizes, optimiser, learning rate, initialisation…), the
//! experiment fixes a default and declares the choice as an option ([`Experiment::options`]), so
//! a reader can rerun it with another value and see whether the result depends on it. Options
//! are checked before anything runs: an unknown key, a key given twice or a value out of range
//! is an error naming the experiment, the key and what it accepts. The options given are part of
//! every unit's configuration (through the experiment's own description of its setup) and of
//! `results.json`.

use super::{Ctx, Experiment};
use std::collections::BTreeMap;
use std::str::FromStr;

/// One option an experiment accepts: its key and what its value means (shown by `--list`).
#[derive(Clone, Copy, Debug)]
pub struct OptionSpec {
    /// The key, e.g. `hidden`.
    pub key: &'static str,
    /// What it sets and which values it takes, with the default.
    pub help: &'static str,
}

/// Parses `--set KEY=VALUE` arguments against the options of every chosen experiment.
pub fn parse(sets: &[String], chosen: &[&Experiment]) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for s in sets {
        let (k, v) = s.split_once('=').ok_or_else(|| format!("--set {s:?}: expected KEY=VALUE"))?;
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() || v.is_empty() {
            return Err(format!("--set {s:?}: expected KEY=VALUE with a key and a value"));
        }
        for e in chosen {
            if !e.options.iter().any(|o| o.key == k) {
                let known = if e.options.is_empty() { "none".to_string() } else { e.options.iter().map(|o| o.key).collect::<Vec<_>>().join(", ") };
                return Err(format!("--set {k}: experiment {} has no option '{k}' (its options: {known}; `chi reproduce --list` describes them)", e.name));
            }
        }
        if out.insert(k.to_string(), v.to_string()).is_some() {
            return Err(format!("--set {k}: given twice"));
        }
    }
    Ok(out)
}

impl Ctx {
    /// The same context with the options given by `--set`.
    pub fn with_options(mut self, options: BTreeMap<String, String>) -> Ctx {
        self.options = options;
        self
    }
    /// The options given by `--set`, by key.
    pub fn options(&self) -> &BTreeMap<String, String> {
        &self.options
    }
    /// Option `key` parsed as a `T` and checked by `ok` (which says what is allowed), or
    /// `default` when it was not given.
    pub fn option<T: FromStr + Copy>(&self, key: &str, default: T, allowed: &str, ok: impl Fn(T) -> bool) -> Result<T, String> {
        match self.options.get(key) {
            None => Ok(default),
            Some(v) => match v.parse::<T>() {
                Ok(x) if ok(x) => Ok(x),
                _ => Err(format!("--set {key}={v}: {} expects {allowed}", self.name)),
            },
        }
    }
    /// Option `key` read by `f` (which returns `None` for a value it rejects), or `default`
    /// when it was not given.
    pub fn word_option<T>(&self, key: &str, default: T, allowed: &str, f: impl Fn(&str) -> Option<T>) -> Result<T, String> {
        match self.options.get(key) {
            None => Ok(default),
            Some(v) => f(v).ok_or_else(|| format!("--set {key}={v}: {} expects {allowed}", self.name)),
        }
    }
    /// Option `key` as a comma-separated list, each item parsed by `item` (which returns `None`
    /// for an item it rejects), or `default` when it was not given.
    pub fn list_option<T>(&self, key: &str, default: Vec<T>, allowed: &str, item: impl Fn(&str) -> Option<T>) -> Result<Vec<T>, String> {
        match self.options.get(key) {
            None => Ok(default),
            Some(v) => {
                let bad = || format!("--set {key}={v}: {} expects a comma-separated list of {allowed}", self.name);
                let items: Vec<T> = v.split(',').map(|s| item(s.trim()).ok_or_else(bad)).collect::<Result<_, _>>()?;
                if items.is_empty() {
                    return Err(bad());
                }
                Ok(items)
            }
        }
    }
}

/// Whether `x` is a usable learning rate or initialisation scale: finite, > 0 and ≤ 100.
pub fn positive_rate(x: f64) -> bool {
    x.is_finite() && x > 0.0 && x <= 100.0
}

/// `x` written as `Display` writes it between 1e-4 and 1e15, and in exponent form outside
/// (`1e-300`, where `Display` writes 300 digits): how option values appear in configurations
/// and notes.
pub fn num<T: Copy + Into<f64> + std::fmt::Display + std::fmt::LowerExp>(x: T) -> String {
    let v: f64 = x.into();
    if v != 0.0 && v.is_finite() && !(1e-4..1e15).contains(&v.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// `x` parsed as a `T` when it parses and `ok` accepts it.
pub fn parsed<T: FromStr>(x: &str, ok: impl Fn(&T) -> bool) -> Option<T> {
    x.parse::<T>().ok().filter(ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(options: &'static [OptionSpec]) -> Experiment {
        Experiment { name: "e", title: "", data: &[], runs: 1, quick_runs: 1, run: |_| Ok(Default::default()), fixed_runs: None, batch: None, options }
    }

    const OPTS: &[OptionSpec] = &[OptionSpec { key: "hidden", help: "hidden size" }, OptionSpec { key: "lr", help: "learning rate" }];

    #[test]
    fn numbers_far_from_one_are_written_with_an_exponent() {
        assert_eq!(num(0.05), "0.05");
        assert_eq!(num(1.0), "1");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(-2.5), "-2.5");
        assert_eq!(num(1e-300), "1e-300");
        assert_eq!(num(-3e-5), "-3e-5");
        assert_eq!(num(2e20), "2e20");
        assert_eq!(num(0.1f32), "0.1");
        assert_eq!(num(1e-30f32), "1e-30");
    }

    #[test]
    fn parses_known_keys_and_rejects_the_rest() {
        let e = exp(OPTS);
        let m = parse(&["hidden=16".into(), " lr = 0.5 ".into()], &[&e]).unwrap();
        assert_eq!(m["hidden"], "16");
        assert_eq!(m["lr"], "0.5");
        assert!(parse(&["depth=3".into()], &[&e]).unwrap_err().contains("has no option 'depth' (its options: hidden, lr"));
        assert!(parse(&["hidden".into()], &[&e]).unwrap_err().contains("expected KEY=VALUE"));
        assert!(parse(&["hidden=".into()], &[&e]).unwrap_err().contains("a key and a value"));
        assert!(parse(&["hidden=1".into(), "hidden=2".into()], &[&e]).unwrap_err().contains("given twice"));
        let none = exp(&[]);
        assert!(parse(&["hidden=1".into()], &[&e, &none]).unwrap_err().contains("its options: none"));
    }

    #[test]
    fn values_are_parsed_and_range_checked() {
        let e = exp(OPTS);
        let ctx = Ctx::new("e", std::env::temp_dir(), true, 1, 0, false, false).with_options(parse(&["hidden=16".into(), "lr=nan".into()], &[&e]).unwrap());
        assert_eq!(ctx.option("hidden", 8usize, "1 to 512", |h| (1..=512).contains(&h)).unwrap(), 16);
        assert_eq!(ctx.option("other", 8usize, "", |_| true).unwrap(), 8);
        let err = ctx.option("lr", 0.1f64, "a positive finite number", |x| x.is_finite() && x > 0.0).unwrap_err();
        assert!(err.contains("--set lr=nan: e expects a positive finite number"), "{err}");
        assert!(ctx.option("hidden", 8usize, "1 to 4", |h| h <= 4).is_err());
        let l = ctx.list_option("hidden", vec![1usize], "sizes", |s| parsed(s, |&h: &usize| h > 0)).unwrap();
        assert_eq!(l, vec![16]);
        assert!(ctx.list_option("lr", vec![1.0f64], "rates", |s| parsed(s, |x: &f64| x.is_finite())).is_err());
    }
}
