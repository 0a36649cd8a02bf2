//! `chi reproduce --quick` end to end, through the real binary: every built-in experiment runs,
//! prints well-formed JSON rows with finite numbers, and writes its records. This checks the
//! pipeline, not the paper's claims (those are in the README's results table).

use std::path::PathBuf;
use std::process::Command;

fn chi() -> Command {
    Command::new(env!("CARGO_BIN_EXE_chi"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chi-test-reproduce-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn builtin_names() -> Vec<String> {
    chi_models::reproduce::registry().into_iter().filter(chi_models::reproduce::is_builtin).map(|e| e.name.to_string()).collect()
}

#[test]
fn quick_json_covers_every_builtin_experiment_with_finite_values() {
    let out = tmp("quick");
    let o = chi().args(["--out", out.to_str().unwrap(), "reproduce", "--quick", "--json"]).output().unwrap();
    assert!(o.status.success(), "chi reproduce --quick failed: {}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8(o.stdout).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    let mut rows = 0;
    for line in stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        for key in ["experiment", "metric", "model", "paper", "chi_mean", "chi_std", "runs"] {
            assert!(v.get(key).is_some(), "missing {key}: {line}");
        }
        let mean = v["chi_mean"].as_f64().unwrap_or_else(|| panic!("chi_mean not a finite number: {line}"));
        assert!(mean.is_finite());
        assert!(v["paper"].is_null() || v["paper"].is_f64(), "{line}");
        assert!(v["runs"].as_u64().unwrap() >= 1);
        seen.insert(v["experiment"].as_str().unwrap().to_string());
        rows += 1;
    }
    let want: std::collections::BTreeSet<String> = builtin_names().into_iter().collect();
    assert!(want.len() >= 5, "expected the five built-in experiments, registry has {want:?}");
    assert_eq!(seen, want, "experiments in the JSON output");
    assert!(rows >= 2 * want.len());
    for name in &want {
        let rec = out.join("reproduce").join(name).join("results.json");
        let text = std::fs::read_to_string(&rec).unwrap_or_else(|e| panic!("{}: {e}", rec.display()));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(v.get("rows").is_some(), "{}: no rows", rec.display());
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn list_names_every_experiment_and_unknown_names_fail() {
    let o = chi().args(["reproduce", "--list"]).output().unwrap();
    assert!(o.status.success());
    let s = String::from_utf8(o.stdout).unwrap();
    for name in builtin_names() {
        assert!(s.contains(&name), "--list misses {name}:\n{s}");
    }
    let out = tmp("unknown");
    let o = chi().args(["--out", out.to_str().unwrap(), "reproduce", "no-such-experiment"]).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("unknown experiment 'no-such-experiment'"), "{err}");
}

/// The real-data experiments' quick variants, when the data has been fetched (skipped with the
/// fetch command otherwise): they run end to end and report finite numbers.
#[test]
fn real_data_experiments_run_quick_when_data_is_present() {
    let reg = chi_models::reproduce::registry();
    let real: Vec<_> = reg.iter().filter(|e| !chi_models::reproduce::is_builtin(e)).collect();
    assert!(real.len() >= 3, "expected the real-data experiments in the registry");
    for e in real {
        let missing: Vec<String> = e
            .data
            .iter()
            .filter_map(|d| d.parse::<chi_models::data::Dataset>().ok())
            .filter_map(|d| chi_models::data::require(d).err())
            .collect();
        if !missing.is_empty() {
            eprintln!("SKIPPED {}: {}", e.name, missing.join("; "));
            continue;
        }
        let out = tmp(e.name);
        let o = chi().args(["--out", out.to_str().unwrap(), "reproduce", e.name, "--quick", "--json"]).output().unwrap();
        assert!(o.status.success(), "{} --quick failed: {}", e.name, String::from_utf8_lossy(&o.stderr));
        let stdout = String::from_utf8(o.stdout).unwrap();
        assert!(stdout.lines().count() >= 2, "{}: too few rows", e.name);
        for line in stdout.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(v["chi_mean"].as_f64().is_some_and(f64::is_finite), "{}: {line}", e.name);
        }
        let _ = std::fs::remove_dir_all(&out);
    }
}
