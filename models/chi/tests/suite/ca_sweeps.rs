//! The CA-CNN / CA-RES sweeps (`ca-cnn-depth`, `ca-cnn-stacked`, `ca-res-sweep`,
//! `ca-res-tabular`) under `--quick`, through the real binary, when Fashion-MNIST has been
//! fetched: every model row is there with one accuracy per seed, the models learn (well above the
//! 10 % of chance), and the notes carry each row's mean ± sd with its 95 % CI and the paired
//! t-tests with their power.

use std::process::Command;

fn results(name: &str) -> Option<serde_json::Value> {
    if let Err(e) = chi_nn::data::require(chi_nn::data::Dataset::FashionMnist) {
        eprintln!("SKIPPED {name}: {e}");
        return None;
    }
    let out = std::env::temp_dir().join(format!("chi-test-ca-sweeps-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let o = Command::new(env!("CARGO_BIN_EXE_chi")).args(["--threads", "1", "--out", out.to_str().unwrap(), "reproduce", name, "--quick"]).output().unwrap();
    assert!(o.status.success(), "{name} --quick failed: {}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(out.join("reproduce").join(name).join("results.json")).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    Some(serde_json::from_str(&text).unwrap())
}

/// Checks the rows of `models` on the accuracy metric and the statistics notes.
fn check(name: &str, models: &[&str], claims: usize) {
    let Some(v) = results(name) else { return };
    let rows = v["rows"].as_array().unwrap();
    let notes: Vec<&str> = v["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    for m in models {
        let row = rows.iter().find(|r| r["model"] == *m && r["metric"].as_str().unwrap().contains("accuracy")).unwrap_or_else(|| panic!("{name}: no accuracy row for {m}"));
        let vals: Vec<f64> = row["values"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert_eq!(vals.len(), 2, "{name} {m}: one value per quick seed");
        assert!(vals.iter().all(|&a| a > 0.3 && a <= 1.0), "{name} {m}: accuracies {vals:?} not above chance");
        assert!(notes.iter().any(|n| n.contains(&format!("— {m}: ")) && n.contains("95% CI") && n.contains("n = 2")), "{name}: no summary note for {m}");
    }
    let paired: Vec<&&str> = notes.iter().filter(|n| n.contains("paired t-test, n = 2") && n.contains("with 80% power")).collect();
    assert!(paired.len() >= claims, "{name}: {} paired comparisons, want {claims}: {notes:#?}", paired.len());
}

#[test]
fn ca_cnn_depth_quick_compares_ca_cnn_and_cnn_at_each_depth() {
    check("ca-cnn-depth", &["CNN (8×8, 4)", "CA-CNN (8×8, 4)", "CNN (8×8, 8)", "CA-CNN (8×8, 8)"], 4);
}

#[test]
fn ca_cnn_stacked_quick_runs_with_and_without_em_steps() {
    check("ca-cnn-stacked", &["CA-CNN 2 layers", "CA-CNN 2 layers em_steps=10", "CA-CNN 4 layers", "CA-CNN 4 layers em_steps=10", "CNN 4 layers"], 5);
}

#[test]
fn ca_res_sweep_quick_has_eq42_next_to_the_chain_block_and_resnet() {
    check("ca-res-sweep", &["ResNet block (chain, b = 1)", "CA-RES chain (3,1,1,0)", "CA-RES Eq.42 (3,1,1,0)"], 3);
}

#[test]
fn ca_res_tabular_quick_compares_the_dense_blocks() {
    check("ca-res-tabular", &["MLP (2 dense layers, no skip)", "ResNet (2,1,–,1)", "CA-RES (2,1,1,0)", "CA-RES (3,1,1,0)", "CA-RES (3,2,2,0)"], 4);
}
