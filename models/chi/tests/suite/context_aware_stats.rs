//! The context-aware experiments' statistics, through the real binary: quick variants print
//! intervals (mean ± sd, 95 % CI, n) and paired judgements of the paper's claims, and the
//! CA-RNN sweep reports how often the ranking holds for both peephole forms.

use std::path::PathBuf;
use std::process::Command;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chi-test-ca-stats-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Runs `chi --out OUT reproduce NAME --quick` and returns its `results.json` and stdout.
fn quick(out: &std::path::Path, name: &str, extra: &[&str]) -> (serde_json::Value, String) {
    let mut args = vec!["--out", out.to_str().unwrap(), "reproduce", name, "--quick"];
    args.extend_from_slice(extra);
    let o = Command::new(env!("CARGO_BIN_EXE_chi")).args(&args).env("CHI_DATA", std::env::var("CHI_DATA").unwrap_or_default()).output().unwrap();
    assert!(o.status.success(), "chi {args:?} failed: {}", String::from_utf8_lossy(&o.stderr));
    let rec = out.join("reproduce").join(name).join("results.json");
    (serde_json::from_str(&std::fs::read_to_string(rec).unwrap()).unwrap(), String::from_utf8_lossy(&o.stdout).into_owned())
}

fn notes(rec: &serde_json::Value) -> Vec<String> {
    rec["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()).collect()
}

#[test]
fn ca_rnn_synthetic_prints_intervals_and_judges_the_ranking() {
    let out = tmp("rnn");
    let (rec, stdout) = quick(&out, "ca-rnn-synthetic", &["--runs", "4"]);
    let n = notes(&rec);
    for cell in ["LSTM", "GRU", "CA-RNN"] {
        let line = n.iter().find(|l| l.starts_with(&format!("test prediction error, {cell}:"))).unwrap_or_else(|| panic!("no interval for {cell}: {n:?}"));
        assert!(line.contains("95 % CI [") && line.contains("n = 4"), "{line}");
    }
    let claims: Vec<&String> = n.iter().filter(|l| l.starts_with("claim ")).collect();
    assert_eq!(claims.len(), 3, "{n:?}");
    for c in claims {
        assert!(c.contains(": holds (") || c.contains(": does not hold (") || c.contains(": not distinguishable at 4 seeds ("), "{c}");
        assert!(c.contains("paired t-test over 4 seeds") && c.contains("detectable at 80 % power"), "{c}");
    }
    assert!(stdout.contains("claim CA-RNN < GRU"), "the table's notes are printed");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn ca_rnn_sweep_counts_the_ranking_for_both_peepholes() {
    let out = tmp("sweep");
    let (rec, _) = quick(&out, "ca-rnn-sweep", &[]);
    let rows = rec["rows"].as_array().unwrap();
    for p in ["vector", "matrix"] {
        let fr: f64 = rows
            .iter()
            .filter(|r| r["metric"].as_str().unwrap().starts_with("fraction of configurations") && r["model"].as_str().unwrap().contains(p))
            .map(|r| r["values"][0].as_f64().unwrap())
            .sum();
        assert!((fr - 1.0).abs() < 1e-12, "{p}: the three outcomes cover every configuration ({fr})");
    }
    // 4 quick configurations (2 optimisers × 2 peepholes), 3 seeds each.
    let ca_rows = rows.iter().filter(|r| r["model"].as_str().unwrap().starts_with("CA-RNN d")).count();
    assert_eq!(ca_rows, 4);
    let table = std::fs::read_to_string(out.join("reproduce/ca-rnn-sweep/sweep.md")).unwrap();
    assert_eq!(table.lines().filter(|l| l.starts_with("| d8 h8")).count(), 4, "{table}");
    assert!(notes(&rec).iter().any(|l| l.starts_with("claim vector peephole < matrix peephole")));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn ca_nn_xor_reports_three_symmetries_for_every_width() {
    let out = tmp("xor");
    let (rec, _) = quick(&out, "ca-nn-xor", &[]);
    let rows = rec["rows"].as_array().unwrap();
    let models = ["CA-NN", "NN-1 (2-2-1)", "NN-1 (2-4-1)", "NN-1 (2-8-1)", "NN-1 (2-16-1)", "NN-2 (2-2-2-1)"];
    for m in models {
        let asym = rows.iter().filter(|r| r["model"] == m && r["metric"].as_str().unwrap().starts_with("surface asymmetry")).count();
        assert_eq!(asym, 3, "{m}: one row per symmetry");
    }
    let params: Vec<f64> = models.iter().map(|m| rows.iter().find(|r| r["model"] == *m && r["metric"] == "parameters").unwrap()["values"][0].as_f64().unwrap()).collect();
    assert_eq!(params, [7.0, 9.0, 17.0, 33.0, 65.0, 15.0]);
    let n = notes(&rec);
    assert_eq!(n.iter().filter(|l| l.starts_with("claim CA-NN > NN")).count(), 15, "3 symmetries × 5 NNs: {n:?}");
    let _ = std::fs::remove_dir_all(&out);
}

/// Whether the datasets are fetched (the test is skipped with the fetch message otherwise).
fn have(datasets: &[chi_nn::data::Dataset]) -> bool {
    let missing: Vec<String> = datasets.iter().filter_map(|d| chi_nn::data::require(*d).err().map(String::from)).collect();
    if !missing.is_empty() {
        eprintln!("SKIPPED: {}", missing.join("; "));
    }
    missing.is_empty()
}

#[test]
fn ca_sem_lee_traces_the_drift_compares_stopping_rules_and_quotes_eq_18() {
    use chi_nn::data::Dataset;
    if !have(&[Dataset::Gensim, Dataset::Glove]) {
        return;
    }
    let out = tmp("sem");
    let (rec, _) = quick(&out, "ca-sem-lee", &[]);
    let rows = rec["rows"].as_array().unwrap();
    let row = |metric: &str, model: &str| rows.iter().find(|r| r["metric"] == metric && r["model"].as_str().unwrap().starts_with(model)).unwrap_or_else(|| panic!("no row {metric} / {model}"))["values"][0].as_f64().unwrap();
    // Alg. 1 drifts: with the paper's rule alone it runs to the cap while ‖v0‖ grows and χ̃ shrinks;
    // a ‖v0‖ bound stops it early with a larger mean χ̃.
    let long = "energy no longer drops, ≤ 2000";
    assert_eq!(row("stopping rule: iterations", long), 2000.0);
    let bound = "‖v0‖ ≤ 2 × initial";
    assert!(row("stopping rule: iterations", bound) < 100.0);
    assert!(row("stopping rule: final ‖v0‖", long) > row("stopping rule: final ‖v0‖", bound));
    assert!(row("stopping rule: final mean χ̃", long) < row("stopping rule: final mean χ̃", bound));
    // Both readings of Eq. 18, with the paper's sentence.
    for model in ["CA-SEM, Eq. 18 as printed", "CA-SEM, Eq. 18 read as its context-sensitive part"] {
        let p = row("Lee Pearson (1225 pairs)", model);
        assert!((-1.0..=1.0).contains(&p), "{model}: {p}");
    }
    assert!(notes(&rec).iter().any(|n| n.contains("\"which represents the context-sensitive part of Eq. 14.\"")));
    // Intervals from the document bootstrap bracket each Pearson value; claims are judged on them.
    let ns = notes(&rec);
    for model in ["CA-SEM, Eq. 18 as printed", "CA-SEM, Eq. 18 read as its context-sensitive part", "SIF", "Average"] {
        let n = ns.iter().find(|n| n.starts_with(&format!("Lee Pearson, {model}")) && n.contains("bootstrap interval")).unwrap_or_else(|| panic!("no interval for {model}: {ns:?}"));
        let nums: Vec<f64> = n.rsplit(": ").next().unwrap().split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-')).filter_map(|t| t.parse().ok()).collect();
        let (r, lo, hi) = (nums[0], nums[2], nums[3]);
        assert!(lo <= r && r <= hi && hi - lo > 0.01, "{n}: {nums:?}");
    }
    let claims: Vec<&String> = ns.iter().filter(|n| n.starts_with("claim ") && n.contains("bootstrap interval")).collect();
    assert_eq!(claims.len(), 6, "{claims:?}");
    assert!(claims.iter().all(|c| [": holds (", ": does not hold (", ": not distinguishable ("].iter().any(|v| c.contains(v))));
    assert!(row("phrase occurrences found by the segmentation", "GloVe hyphenated") > 0.0);
    for f in ["energy.csv", "v0_norm.csv", "mean_chi.csv", "v0_norm.png"] {
        assert!(out.join("reproduce/ca-sem-lee").join(f).is_file(), "{f}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn ca_bsfe_synthetic_reports_both_averaging_sizes_with_paired_judgements() {
    let out = tmp("bsfe");
    let (rec, _) = quick(&out, "ca-bsfe-synthetic", &["--runs", "2"]);
    let rows = rec["rows"].as_array().unwrap();
    for m in ["Average, 5-d", "Average, 10-d"] {
        assert!(rows.iter().any(|r| r["metric"] == "test accuracy" && r["model"].as_str().unwrap().starts_with(m)), "{m}");
    }
    let n = notes(&rec);
    assert_eq!(n.iter().filter(|l| l.starts_with("claim CA-BSFE > Average")).count(), 2, "{n:?}");
    let _ = std::fs::remove_dir_all(&out);
}
