//! Every op's gradcheck case passes gradcheck (order 1) and gradgradcheck (order 2) on many random
//! shapes and broadcasts.

use chi_autodiff::gradcheck_cases::{self, check_case};
use chi_autodiff::GradcheckOptions;

fn run_all(order: u32, seeds: u64) {
    let opts = GradcheckOptions::default();
    let mut failures = Vec::new();
    for op in gradcheck_cases::all() {
        if order == 2 && !op.order2 {
            continue;
        }
        for seed in 0..seeds {
            let (case, res) = check_case(&op, order, seed, &opts);
            if let Err(r) = res {
                failures.push(format!("{} (order {order}, seed {seed}, shapes {}): {r}", op.name, case.shapes()));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn every_op_passes_first_order_gradcheck() {
    run_all(1, 12);
}

#[test]
fn every_op_passes_second_order_gradcheck() {
    run_all(2, 4);
}

#[test]
fn case_names_are_unique() {
    let r = gradcheck_cases::all();
    let mut names: Vec<&str> = r.iter().map(|o| o.name).collect();
    names.sort();
    let n = names.len();
    names.dedup();
    assert_eq!(n, names.len());
}
