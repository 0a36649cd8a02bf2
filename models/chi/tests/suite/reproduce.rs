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
    chi_cli::reproduce::registry().into_iter().filter(chi_cli::reproduce::is_builtin).map(|e| e.name.to_string()).collect()
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

/// Real-data experiments whose quick variant runs in a test of its own, with checks specific
/// to it (so the generic check below does not run it a second time).
const TESTED_ELSEWHERE: &[(&str, &str)] = &[
    ("ca-sem-lee", "context_aware_stats.rs"),
    ("ca-cnn-depth", "ca_sweeps.rs"),
    ("ca-cnn-stacked", "ca_sweeps.rs"),
    ("ca-res-sweep", "ca_sweeps.rs"),
    ("ca-res-tabular", "ca_sweeps.rs"),
    ("rationales-reviews", "reproduce.rs"),
    ("nmt-attention", "seq2seq_reproduce.rs"),
    ("nmt-cells", "seq2seq_reproduce.rs"),
    ("g2p-cmudict", "seq2seq_reproduce.rs"),
    ("word-vectors", "word_vectors.rs"),
];

/// The real-data experiments the generic check runs, one test each (so they run in parallel).
const GENERIC: &[&str] = &["ca-bsfe-reviews", "ca-bsfe-long", "ca-cnn-mnist", "ca-res-fashion", "text-cnn-sentences", "han-reviews", "pos-brown", "rcnn-lm", "rcnn-sentiment"];

#[test]
fn every_real_data_experiment_has_a_quick_test() {
    let reg = chi_cli::reproduce::registry();
    let real: Vec<&str> = reg.iter().filter(|e| !chi_cli::reproduce::is_builtin(e)).map(|e| e.name).collect();
    assert!(real.len() >= 3, "expected the real-data experiments in the registry");
    for name in &real {
        let n = GENERIC.iter().filter(|g| *g == name).count() + TESTED_ELSEWHERE.iter().filter(|t| t.0 == *name).count();
        assert_eq!(n, 1, "{name}: list it once, in GENERIC (and add its test below) or in TESTED_ELSEWHERE");
    }
    for name in GENERIC.iter().chain(TESTED_ELSEWHERE.iter().map(|t| &t.0)) {
        assert!(real.contains(name), "{name} is not a real-data experiment");
    }
}

/// A real-data experiment's quick variant, when its data has been fetched (skipped with the
/// fetch command otherwise): it runs end to end and reports finite numbers.
fn quick_real_data(name: &str) {
    assert!(GENERIC.contains(&name), "{name} is not in GENERIC");
    let reg = chi_cli::reproduce::registry();
    let e = reg.iter().find(|e| e.name == name).unwrap_or_else(|| panic!("no experiment {name}"));
    let missing: Vec<String> = e
        .data
        .iter()
        .filter_map(|d| d.parse::<chi_nn::data::Dataset>().ok())
        .filter_map(|d| chi_nn::data::require(d).err().map(String::from))
        .collect();
    if !missing.is_empty() {
        eprintln!("SKIPPED {}: {}", e.name, missing.join("; "));
        return;
    }
    let out = tmp(e.name);
    // One thread: the test harness runs two of these at once on two cores.
    let o = chi().args(["--threads", "1", "--out", out.to_str().unwrap(), "reproduce", e.name, "--quick", "--json"]).output().unwrap();
    assert!(o.status.success(), "{} --quick failed: {}", e.name, String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8(o.stdout).unwrap();
    assert!(stdout.lines().count() >= 2, "{}: too few rows", e.name);
    for line in stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v["chi_mean"].as_f64().is_some_and(f64::is_finite), "{}: {line}", e.name);
    }
    let _ = std::fs::remove_dir_all(&out);
}

macro_rules! quick_real_data_tests {
    ($($test:ident => $name:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                quick_real_data($name);
            }
        )*
        #[test]
        fn every_generic_experiment_has_its_test() {
            let tested = [$($name),*];
            assert_eq!(tested.len(), GENERIC.len());
            assert!(GENERIC.iter().all(|g| tested.contains(g)));
        }
    };
}

quick_real_data_tests! {
    quick_ca_bsfe_reviews => "ca-bsfe-reviews",
    quick_ca_bsfe_long => "ca-bsfe-long",
    quick_ca_cnn_mnist => "ca-cnn-mnist",
    quick_ca_res_fashion => "ca-res-fashion",
    quick_text_cnn_sentences => "text-cnn-sentences",
    quick_han_reviews => "han-reviews",
    quick_pos_brown => "pos-brown",
    quick_rcnn_lm => "rcnn-lm",
    quick_rcnn_sentiment => "rcnn-sentiment",
}

/// The unit records of a finished experiment, sorted.
fn unit_records(exp_dir: &std::path::Path) -> Vec<PathBuf> {
    let dir = exp_dir.join("units");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

/// Changes one hex digit of the first stored number in a unit record, keeping the JSON valid.
fn tamper(text: &str) -> String {
    let start = text.find("\"nums\"").expect("a nums section");
    let b = text.as_bytes();
    let i = (start..b.len() - 17)
        .find(|&i| b[i] == b'"' && b[i + 17] == b'"' && b[i + 1..i + 17].iter().all(u8::is_ascii_hexdigit))
        .expect("a stored number");
    let mut out = text.to_string();
    let c = if b[i + 16] == b'0' { "1" } else { "0" };
    out.replace_range(i + 16..i + 17, c);
    out
}

/// `chi reproduce NAME --resume` (built-in `ca-nn-xor`, quick: 6 models × 2 runs = 12 units):
/// after some unit records are deleted, one is truncated and one has a changed number, it reuses
/// the valid records, warns about each bad one naming the file and the problem, reruns the
/// missing and bad units, and prints exactly the same numbers as the uninterrupted run. Records
/// made with another `--seed` are not reused.
#[test]
fn resume_reuses_valid_unit_records_and_gives_identical_numbers() {
    let out = tmp("resume");
    let name = "ca-nn-xor";
    let exp_dir = out.join("reproduce").join(name);
    let run = |extra: &[&str]| -> (serde_json::Value, String) {
        let mut args = vec!["--out", out.to_str().unwrap(), "reproduce", name, "--quick"];
        args.extend_from_slice(extra);
        let o = chi().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "chi {args:?} failed: {stderr}");
        let rec = exp_dir.join("results.json");
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&rec).unwrap()).unwrap();
        (v, stderr)
    };
    let (first, _) = run(&[]);
    let rows = first["rows"].clone();
    assert!(rows.as_array().is_some_and(|r| r.len() >= 12), "rows: {rows}");
    assert_eq!(first["units"]["ran"], 12);
    let files = unit_records(&exp_dir);
    assert_eq!(files.len(), 12, "one record per model × run: {files:?}");

    // An "interrupted" run: two records missing, one truncated, one with a changed number.
    std::fs::remove_file(&files[0]).unwrap();
    std::fs::remove_file(&files[3]).unwrap();
    let text = std::fs::read_to_string(&files[1]).unwrap();
    std::fs::write(&files[1], &text[..text.len() / 2]).unwrap();
    let text = std::fs::read_to_string(&files[2]).unwrap();
    let tampered = tamper(&text);
    assert_ne!(tampered, text);
    std::fs::write(&files[2], tampered).unwrap();
    let (second, err) = run(&["--resume"]);
    assert_eq!(second["rows"], rows, "resumed numbers differ from the uninterrupted run");
    assert!(err.contains("reused 8 of 12 units, ran 4"), "{err}");
    for (f, problem) in [(&files[1], "not valid JSON"), (&files[2], "checksum mismatch")] {
        let line = err.lines().find(|l| l.contains(&f.display().to_string())).unwrap_or_else(|| panic!("no warning names {}: {err}", f.display()));
        assert!(line.contains("warning") && line.contains(problem), "{line}");
    }
    assert_eq!(unit_records(&exp_dir), files, "every record rewritten");

    // Everything recorded now: a second resume runs nothing and still gives the same numbers.
    let (third, err) = run(&["--resume"]);
    assert_eq!(third["rows"], rows);
    assert!(err.contains("reused 12 of 12 units, ran 0") && !err.contains("warning"), "{err}");
    assert_eq!(third["units"]["reused"], 12);

    // Records made with another seed are not reused.
    let (other, err) = run(&["--resume", "--seed", "5"]);
    assert!(err.contains("reused 0 of 12 units, ran 12"), "{err}");
    let mismatches = err.lines().filter(|l| l.contains("warning") && l.contains("units/") && l.contains("made with")).count();
    assert_eq!(mismatches, 12, "one warning per record made with the other seed: {err}");
    assert_ne!(other["rows"], rows, "another seed gives other numbers");
    let _ = std::fs::remove_dir_all(&out);
}

/// `chi reproduce rationales --quick` (built in, always runs): Table 3.3's two columns for each
/// synthetic aspect, as percentages, with the paired judgement in the notes.
#[test]
fn rationales_quick_reports_precision_and_selection_for_every_aspect() {
    let out = tmp("rationales");
    let o = chi().args(["--out", out.to_str().unwrap(), "reproduce", "rationales", "--quick", "--json"]).output().unwrap();
    assert!(o.status.success(), "rationales --quick failed: {}", String::from_utf8_lossy(&o.stderr));
    let rows: Vec<serde_json::Value> = String::from_utf8(o.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for aspect in 0..3 {
        for (metric, model) in [("% precision", "Generator (dependent)"), ("% precision", "Generator (independent)"), ("% precision", "Attention"), ("% selected", "Generator (dependent)")] {
            let row = rows
                .iter()
                .find(|r| r["metric"].as_str().unwrap().starts_with(&format!("aspect {aspect}")) && r["metric"].as_str().unwrap().ends_with(metric) && r["model"].as_str().unwrap().starts_with(model))
                .unwrap_or_else(|| panic!("no row for aspect {aspect} {metric} {model}: {rows:?}"));
            let v = row["chi_mean"].as_f64().unwrap();
            assert!((0.0..=100.0).contains(&v), "{row}");
            assert!(row["paper"].as_f64().is_some(), "Table 3.3 anchor missing: {row}");
        }
    }
    let rec: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("reproduce/rationales/results.json")).unwrap()).unwrap();
    let notes = rec["notes"].to_string();
    assert!(notes.contains("dependent generator vs attention"), "{notes}");
    let _ = std::fs::remove_dir_all(&out);
}

/// `chi reproduce rationales-reviews --quick` runs its dev-split search (2 settings, one unit
/// each), records the chosen setting, trains the final run at it, writes the HTML page of
/// example rationales, and `--resume` reuses all three units with the same numbers; a bad
/// `--set` value is an error naming the option (skipped with the fetch message when the
/// Pang & Lee or GloVe data is absent).
#[test]
fn rationales_reviews_quick_writes_the_html_page() {
    let missing: Vec<String> =
        [chi_nn::data::Dataset::PangLee, chi_nn::data::Dataset::Glove].into_iter().filter_map(|d| chi_nn::data::require(d).err().map(String::from)).collect();
    if !missing.is_empty() {
        eprintln!("SKIPPED rationales-reviews: {}", missing.join("; "));
        return;
    }
    let out = tmp("rationales-reviews");
    let exp_dir = out.join("reproduce/rationales-reviews");
    let run = |extra: &[&str]| {
        let mut args = vec!["--out", out.to_str().unwrap(), "reproduce", "rationales-reviews", "--quick", "--json"];
        args.extend_from_slice(extra);
        chi().args(&args).output().unwrap()
    };
    let o = run(&[]);
    assert!(o.status.success(), "rationales-reviews --quick failed: {}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(exp_dir.join("rationales.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.matches("<h2>").count() == 6, "six reviews expected");
    assert!(html.contains("words kept") && html.contains("selection rate"), "captions name the kept words and the rate");
    let stdout = String::from_utf8(o.stdout).unwrap();
    assert!(stdout.lines().any(|l| l.contains("% of words selected")), "{stdout}");

    // The search: one record per setting and per final run, the choice in results.json.
    let names: Vec<String> = unit_records(&exp_dir).iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["run0.json", "search0.json", "search1.json"]);
    let rec: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(exp_dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(rec["units"]["ran"], 3);
    let rows = rec["rows"].as_array().unwrap();
    let search: Vec<&serde_json::Value> = rows.iter().filter(|r| r["metric"].as_str().is_some_and(|m| m.starts_with("search: dev accuracy"))).collect();
    assert_eq!(search.len(), 2, "one dev-accuracy row per setting: {rows:?}");
    let chosen: Vec<&str> = search.iter().filter_map(|r| r["model"].as_str()).filter(|m| m.ends_with("(chosen)")).collect();
    assert_eq!(chosen.len(), 1, "exactly one chosen setting: {search:?}");
    let config = rec["config"]["chosen"].as_str().unwrap_or_else(|| panic!("no chosen setting in {}", rec["config"]));
    let lambda1 = config.split_whitespace().find_map(|w| w.strip_prefix("lambda1=")).unwrap();
    assert!(chosen[0].starts_with(&format!("λ1 {lambda1},")), "{config} vs {}", chosen[0]);
    let notes = rec["notes"].to_string();
    assert!(notes.contains("search: 2 settings") && notes.contains("chosen:"), "{notes}");

    // Resumed: every unit reused, the same rows.
    let o = run(&["--resume"]);
    assert!(o.status.success(), "--resume failed: {}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("reused 3 of 3 units, ran 0"), "{}", String::from_utf8_lossy(&o.stderr));
    let again: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(exp_dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(again["rows"], rec["rows"]);

    let o = run(&["--set", "baseline=median"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--set baseline=median") && err.contains("'average' or 'loo'"), "{err}");
    let _ = std::fs::remove_dir_all(&out);
}
