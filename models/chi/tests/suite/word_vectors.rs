//! `chi reproduce word-vectors --quick` through the real binary, when Brown, SOTU, Shakespeare,
//! gensim's test data and GloVe are fetched (skipped with the fetch command otherwise): every
//! chi model and the pretrained vectors get all three scores in range, the pretrained GloVe 6B
//! 50d scores are the published ones (WordSim353 0.503, SimLex-999 0.265), and without gensim
//! the gensim rows are left out and the notes say why.

use std::path::PathBuf;
use std::process::Command;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chi-test-word-vectors-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn data_present() -> bool {
    let missing: Vec<String> = ["brown", "sotu", "shakespeare", "gensim", "glove"]
        .iter()
        .filter_map(|d| chi_nn::data::require(d.parse().unwrap()).err().map(String::from))
        .collect();
    if !missing.is_empty() {
        eprintln!("skipped: {}", missing.join("; "));
    }
    missing.is_empty()
}

/// Runs the quick experiment and returns its `results.json`.
fn quick(name: &str, gensim_python: Option<&str>) -> serde_json::Value {
    let out = tmp(name);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_chi"));
    cmd.args(["--out", out.to_str().unwrap(), "reproduce", "word-vectors", "--quick", "--json"]);
    if let Some(py) = gensim_python {
        cmd.env("CHI_GENSIM_PYTHON", py);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "word-vectors --quick failed: {}", String::from_utf8_lossy(&o.stderr));
    let path = out.join("reproduce/word-vectors/results.json");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    v
}

fn value(rec: &serde_json::Value, metric: &str, model: &str) -> Option<f64> {
    rec["rows"].as_array().unwrap().iter().find(|r| r["metric"].as_str().unwrap().starts_with(metric) && r["model"] == model).map(|r| r["chi_mean"].as_f64().unwrap())
}

fn notes(rec: &serde_json::Value) -> Vec<String> {
    rec["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()).collect()
}

#[test]
fn quick_run_scores_every_model_and_the_pretrained_reference() {
    if !data_present() {
        return;
    }
    let rec = quick("all", None);
    for model in ["chi sgns", "chi cbow", "chi sg-hs", "chi glove", "GloVe 6B 50d pretrained"] {
        for metric in ["WordSim353 Spearman", "SimLex-999 Spearman"] {
            let v = value(&rec, metric, model).unwrap_or_else(|| panic!("no {metric} row for {model}"));
            assert!((-1.0..=1.0).contains(&v), "{model} {metric} {v}");
        }
        let a = value(&rec, "analogy accuracy", model).unwrap_or_else(|| panic!("no analogy row for {model}"));
        assert!((0.0..=1.0).contains(&a), "{model} analogies {a}");
    }
    for model in ["chi sgns", "chi cbow", "chi sg-hs"] {
        assert!(value(&rec, "training words/s", model).unwrap() > 0.0, "{model}");
    }
    assert!(value(&rec, "training co-occurrence entries/s", "chi glove").unwrap() > 0.0);
    // Measured with chi-words' evaluator on the full pair sets (published: 0.503, 0.265).
    assert!((value(&rec, "WordSim353 Spearman", "GloVe 6B 50d pretrained").unwrap() - 0.503).abs() < 0.001);
    assert!((value(&rec, "SimLex-999 Spearman", "GloVe 6B 50d pretrained").unwrap() - 0.265).abs() < 0.001);
    let n = notes(&rec);
    assert!(n.iter().any(|s| s.starts_with("chi sgns: vocabulary") && s.contains("analogies") && s.contains("questions")), "{n:#?}");
    let gensim = n.iter().any(|s| s.starts_with("gensim 4.4"));
    assert_eq!(gensim, value(&rec, "WordSim353 Spearman", "gensim sgns").is_some(), "gensim rows iff gensim ran: {n:#?}");
    if gensim {
        assert!(n.iter().any(|s| s.starts_with("sgns WordSim353 Spearman, paired over runs")), "{n:#?}");
    } else {
        eprintln!("gensim 4.4 not available: the gensim side was not exercised");
    }
}

#[test]
fn without_gensim_the_rows_are_left_out_and_the_notes_say_why() {
    if !data_present() {
        return;
    }
    let rec = quick("nogensim", Some("/nonexistent/python"));
    assert!(value(&rec, "WordSim353 Spearman", "gensim sgns").is_none());
    assert!(value(&rec, "WordSim353 Spearman", "chi sgns").is_some());
    let n = notes(&rec);
    assert!(n.iter().any(|s| s.starts_with("gensim rows: not run") && s.contains("/nonexistent/python") && s.contains("setup-venv.sh")), "{n:#?}");
}
