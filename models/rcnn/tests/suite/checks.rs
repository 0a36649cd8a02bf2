//! The ready-made check instances pass, and the REINFORCE self-check passes its z-test.

use crate::common;
use chi_rcnn::checks::{gradcheck_cases, reinforce_self_check, ReinforceCheckOptions};
use chi_rcnn::EstimatorCheckOptions;

#[test]
fn every_instance_gradchecks() {
    for (name, build) in gradcheck_cases() {
        let inst = build();
        common::check_store(&inst.store, &inst.inputs, |xs| (inst.loss)(xs), 1).unwrap_or_else(|r| panic!("{name}: {r}"));
    }
}

/// The self-check's z-test (α = 10⁻³ family-wise, Bonferroni; fixed seed so deterministic).
#[test]
fn reinforce_self_check_passes() {
    for dependent in [false, true] {
        let opts = ReinforceCheckOptions { length: 5, dependent, test: EstimatorCheckOptions { samples: 1500, seed: 9, alpha: 1e-3 }, baseline_decay: 0.9 };
        let (check, var) = reinforce_self_check(&opts).unwrap();
        assert!(check.passed, "dependent={dependent}: max |z| {:.2} > {:.2}", check.max_abs_z, check.threshold);
        eprintln!("dependent={dependent}: max|z| {:.2} (threshold {:.2}); variance {:.3e} without / {:.3e} with baseline", check.max_abs_z, check.threshold, var.without_baseline, var.with_baseline);
        assert!(var.with_baseline.is_finite() && var.without_baseline > 0.0);
    }
    assert!(reinforce_self_check(&ReinforceCheckOptions { length: 13, ..Default::default() }).is_err());
}
