//! `chi gradcheck`: every registered op ([`chi_autodiff::gradcheck_cases`]) and every whole model
//! ([`model_registry`]) against float64 central differences, and stochastic gradient estimators
//! (`--estimator reinforce`) against the exact gradient by enumeration.

use chi_autodiff::gradcheck_cases::{all as registry, check_case};
use chi_autodiff::{GradcheckOptions, GradcheckReport};
use chi_nn::gradcheck::{check_model_order, layer_cases, ModelCase};
use crate::train::recurrent::CellKind;
use clap::Args;

/// Options of `chi gradcheck`.
#[derive(Args, Debug, Clone)]
pub struct GradcheckArgs {
    /// Check only this op (see `--list`).
    #[arg(long, conflicts_with = "model")]
    pub op: Option<String>,
    /// Check a whole model's parameters instead of ops (`all` for every registered model).
    #[arg(long)]
    pub model: Option<String>,
    /// 1 = gradients (gradcheck), 2 = second derivatives (gradgradcheck). Order 2 checks the
    /// derivative of whatever the backward rules compute, not that they are the gradient (a rule
    /// returning zero passes it, as in PyTorch's gradgradcheck): run order 1 too.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=2))]
    pub order: u32,
    /// Random instances (shapes, broadcasts, values) per op, 1 to 10000.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub instances: u64,
    /// Fast mode: random projections vᵀJu instead of every element (as PyTorch's
    /// `fast_mode`). Weaker: the tolerance applies to the projected sum, so an error in one
    /// element of many can pass (one element 1.6 % off among 12 did); use it for speed, not
    /// as proof.
    #[arg(long)]
    pub fast: bool,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
    /// List the registered ops and models.
    #[arg(long)]
    pub list: bool,
    /// Check a stochastic gradient estimator instead (`reinforce`: the rationale generator's
    /// REINFORCE gradient against exact enumeration of all masks, by a z-test). `--order`,
    /// `--instances` and `--fast` do not apply to it and are refused beside it.
    #[arg(long, conflicts_with_all = ["op", "model", "order", "instances", "fast"])]
    pub estimator: Option<String>,
    /// Draws of the estimator for `--estimator`, 500 to 10^6 (default 2000). The z-test leans on
    /// the normal approximation of the sample mean, which needs many draws of a skewed estimator:
    /// a correct one failed 10 of 80 checks at 20 draws, 1 of 80 at 100, 2 of 300 at 200 and none
    /// of 380 at 500, against the 0.1 % that --alpha promises (the README has the command).
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(500..=1_000_000))]
    pub samples: Option<usize>,
    /// Family-wise false-failure rate of the `--estimator` z-test, in (0, 1; default 0.001).
    #[arg(long)]
    pub alpha: Option<f64>,
}

/// The estimators `chi gradcheck --estimator` knows.
pub const ESTIMATORS: &[&str] = &["reinforce"];

/// Every model registered for whole-graph gradient checks: the layers of [`chi_nn`]
/// ([`layer_cases`]), the `chi train` sequence classifiers end to end with their cross-entropy
/// (`seq-*`, [`crate::train::recurrent::gradcheck_instance`]), and the context-aware models
/// ([`chi_ca::gradcheck_cases`]).
pub fn model_registry() -> Vec<ModelCase> {
    let mut v = layer_cases();
    v.push(ModelCase { name: "seq-lstm", build: || crate::train::recurrent::gradcheck_instance(CellKind::Lstm) });
    v.push(ModelCase { name: "seq-gru", build: || crate::train::recurrent::gradcheck_instance(CellKind::Gru) });
    v.push(ModelCase { name: "seq-ca-rnn", build: || crate::train::recurrent::gradcheck_instance(CellKind::CaRnn) });
    v.extend(chi_ca::gradcheck_cases());
    v.extend(rcnn_cases());
    v
}

/// The recurrent-convolution and rationale instances of [`chi_rcnn::checks::gradcheck_cases`],
/// as model cases. `ModelCase::build` is a plain function pointer, so each instance gets its own
/// non-capturing wrapper; a test keeps the two lists equal.
pub fn rcnn_cases() -> Vec<ModelCase> {
    use chi_nn::gradcheck::ModelInstance;
    use chi_rcnn::checks::{self, CheckInstance};
    fn wrap(i: CheckInstance) -> ModelInstance {
        ModelInstance { store: i.store, inputs: i.inputs, loss: i.loss }
    }
    vec![
        ModelCase { name: "rcnn-fused", build: || wrap(checks::rcnn_fused_instance()) },
        ModelCase { name: "rcnn-composed", build: || wrap(checks::rcnn_composed_instance()) },
        ModelCase { name: "rcnn-adaptive-xh", build: || wrap(checks::rcnn_adaptive_instance()) },
        ModelCase { name: "rationale-encoder", build: || wrap(checks::rationale_encoder_instance()) },
        ModelCase { name: "rcnn-classifier", build: || wrap(checks::rcnn_classifier_instance()) },
    ]
}

/// `chi gradcheck --estimator reinforce`: the REINFORCE estimate of the rationale generator's
/// gradient, z-tested coordinate by coordinate against the exact gradient over all `2^L` masks
/// (independent and dependent generator), and the estimator's variance with and without a
/// moving-average baseline. Returns the numbers of passed and failed z-tests.
fn run_estimator(name: &str, args: &GradcheckArgs, seed: u64) -> Result<(usize, usize), String> {
    if !ESTIMATORS.contains(&name) {
        return Err(format!("no estimator named {name:?} (known: {})", ESTIMATORS.join(", ")));
    }
    let (samples, alpha) = (args.samples.unwrap_or(2000), args.alpha.unwrap_or(1e-3));
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(format!("--alpha {alpha} is not in (0, 1)"));
    }
    let (mut passed, mut failed) = (0, 0);
    for dependent in [false, true] {
        let opts = chi_rcnn::checks::ReinforceCheckOptions {
            // `--seed` moves the check's seed: its random instance and the draws (0 keeps the
            // library's default).
            test: chi_rcnn::EstimatorCheckOptions { samples, alpha, seed: chi_rcnn::EstimatorCheckOptions::default().seed.wrapping_add(seed) },
            dependent,
            ..Default::default()
        };
        let (check, var) = chi_rcnn::checks::reinforce_self_check(&opts).map_err(|e| e.to_string())?;
        let label = format!("reinforce-{}", if dependent { "dependent" } else { "independent" });
        let status = if check.passed { "PASS" } else { "FAIL" };
        if args.json {
            println!(
                "{}",
                serde_json::json!({
                    "estimator": label, "length": opts.length, "masks": 1usize << opts.length, "samples": check.samples,
                    "coordinates": check.exact.len(), "alpha": alpha, "max_abs_z": check.max_abs_z,
                    "threshold": check.threshold, "passed": check.passed, "expected_cost": check.expectation,
                    "variance_without_baseline": var.without_baseline, "variance_with_baseline": var.with_baseline,
                    "baseline_decay": opts.baseline_decay,
                })
            );
        } else {
            println!(
                "{label:<22} L={} ({} masks), {} coords, {} draws  max |z| {:>5.2} (threshold {:.2})  {status}",
                opts.length,
                1usize << opts.length,
                check.exact.len(),
                check.samples,
                check.max_abs_z,
                check.threshold
            );
            println!(
                "    variance of one estimate (sum over coords): {:.4e} plain, {:.4e} with a moving-average baseline (decay {}); ratio {:.2}",
                var.without_baseline,
                var.with_baseline,
                opts.baseline_decay,
                var.without_baseline / var.with_baseline
            );
        }
        if check.passed {
            passed += 1;
        } else {
            failed += 1;
        }
    }
    if !args.json {
        println!("z-test per coordinate at level alpha/(2P) (Bonferroni): a correct estimator fails with probability at most alpha = {alpha} per check");
    }
    Ok((passed, failed))
}

fn print_row(json: bool, kind: &str, name: &str, order: u32, r: &Result<GradcheckReport, GradcheckReport>, shapes: &str) {
    let rep = match r {
        Ok(x) | Err(x) => x,
    };
    let status = if r.is_ok() { "PASS" } else { "FAIL" };
    if json {
        println!(
            "{{\"{kind}\":\"{name}\",\"order\":{order},\"max_abs_err\":{:e},\"max_rel_err\":{:e},\"checked\":{},\"passed\":{},\"shapes\":\"{}\"}}",
            rep.max_abs_err,
            rep.max_rel_err,
            rep.checked,
            r.is_ok(),
            shapes
        );
    } else {
        println!("{name:<22} order {order}  max abs err {:>9.2e}  max rel err {:>9.2e}  {status}", rep.max_abs_err, rep.max_rel_err);
        if let Err(e) = r {
            println!("    {e} (shapes {shapes})");
        }
    }
}

/// Runs `chi gradcheck`; returns an error (non-zero exit) if anything fails.
pub fn run_cli(args: &GradcheckArgs, seed: u64) -> Result<(), String> {
    // Without `--estimator` these would be ignored. (Not clap's `requires`: it lets them
    // through beside `--op` / `--model`, which conflict with `--estimator`.)
    if args.estimator.is_none() && (args.samples.is_some() || args.alpha.is_some()) {
        return Err("--samples and --alpha set the --estimator check; give --estimator too".into());
    }
    let opts = GradcheckOptions { fast_mode: args.fast, ..Default::default() };
    if args.list {
        println!("ops:");
        for o in registry() {
            println!("  {}{}", o.name, if o.order2 { "" } else { " (order 1 only)" });
        }
        println!("models:");
        for m in model_registry() {
            println!("  {}", m.name);
        }
        println!("estimators:");
        for e in ESTIMATORS {
            println!("  {e}");
        }
        return Ok(());
    }
    let (mut passed, mut failed) = (0usize, 0usize);
    if let Some(name) = &args.estimator {
        (passed, failed) = run_estimator(name, args, seed)?;
    } else if let Some(model) = &args.model {
        let cases: Vec<ModelCase> = model_registry().into_iter().filter(|m| model == "all" || m.name == model).collect();
        if cases.is_empty() {
            return Err(format!("no model named {model:?} (see chi gradcheck --list)"));
        }
        for m in cases {
            let inst = (m.build)();
            let r = check_model_order(&inst.store, &inst.inputs, |xs| (inst.loss)(xs), args.order, &opts);
            let shapes = format!("{} params", inst.store.num_scalars());
            print_row(args.json, "model", m.name, args.order, &r, &shapes);
            if r.is_ok() {
                passed += 1
            } else {
                failed += 1
            }
        }
    } else {
        let ops: Vec<_> = registry().into_iter().filter(|o| args.op.as_deref().is_none_or(|n| n == o.name)).collect();
        if ops.is_empty() {
            return Err(format!("no op named {:?} (see chi gradcheck --list)", args.op.as_deref().unwrap_or("")));
        }
        for op in ops {
            if args.order == 2 && !op.order2 {
                continue;
            }
            // Aggregate the worst result over several random instances.
            let mut worst: Option<(Result<GradcheckReport, GradcheckReport>, String)> = None;
            // Instance i draws from seed `--seed + i` (the default, 0, gives instances 0, 1, …).
            for i in 0..args.instances.max(1) {
                let (case, r) = check_case(&op, args.order, seed.wrapping_add(i), &opts);
                let bad = r.is_err();
                let err = match &r {
                    Ok(x) | Err(x) => x.max_abs_err,
                };
                let replace = match &worst {
                    None => true,
                    Some((w, _)) => (bad && w.is_ok()) || (bad == w.is_err() && err > w.as_ref().map_or_else(|e| e.max_abs_err, |x| x.max_abs_err)),
                };
                if replace {
                    worst = Some((r, case.shapes()));
                }
            }
            let (r, shapes) = worst.unwrap();
            print_row(args.json, "op", op.name, args.order, &r, &shapes);
            if r.is_ok() {
                passed += 1
            } else {
                failed += 1
            }
        }
    }
    // With --json, standard output holds JSON lines only; the tally goes to standard error.
    if args.json {
        eprintln!("{passed} passed, {failed} failed");
    } else {
        println!("{passed} passed, {failed} failed");
    }
    if failed > 0 {
        Err(format!("{failed} gradient checks failed"))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rcnn_cases_are_exactly_the_library_instances() {
        let ours: Vec<&str> = rcnn_cases().iter().map(|c| c.name).collect();
        let lib: Vec<&str> = chi_rcnn::checks::gradcheck_cases().iter().map(|c| c.0).collect();
        assert_eq!(ours, lib);
        let reg: Vec<&str> = model_registry().iter().map(|c| c.name).collect();
        for n in lib {
            assert_eq!(reg.iter().filter(|&&r| r == n).count(), 1, "{n} must be registered once");
        }
    }
}
