//! `chi reproduce NAME --set KEY=VALUE`: the choices a paper leaves open, set from the command
//! line. The options reach the training (the unit records describe the setup that ran), are
//! recorded in `results.json`, and unknown keys or bad values stop the run before it trains.

use std::path::PathBuf;
use std::process::{Command, Output};

fn chi(out: &PathBuf, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chi")).args(["--threads", "1", "--out", out.to_str().unwrap(), "reproduce"]).args(args).output().unwrap()
}

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chi-test-reproduce-options-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The `config` strings of every unit record of an experiment.
fn unit_configs(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir.join("units"))
        .unwrap()
        .map(|e| {
            let rec: serde_json::Value = serde_json::from_slice(&std::fs::read(e.unwrap().path()).unwrap()).unwrap();
            rec["body"]["config"].as_str().unwrap().to_string()
        })
        .collect()
}

#[test]
fn rnn_synthetic_options_change_what_trains_and_are_recorded() {
    let out = tmp("rnn");
    let o = chi(&out, &["ca-rnn-synthetic", "--quick", "--runs", "1", "--set", "hidden=4", "--set", "optimizer=adam", "--set", "lr=0.05", "--set", "peephole=matrix", "--set", "init-scale=0.5"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = out.join("reproduce").join("ca-rnn-synthetic");
    let configs = unit_configs(&dir);
    assert_eq!(configs.len(), 3, "{configs:?}");
    assert!(configs.iter().all(|c| c.contains("d8 h4 adam lr0.05 s0.5 peephole matrix")), "{configs:?}");
    let res: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(res["options"]["hidden"], "4");
    assert_eq!(res["config"]["peephole"], "matrix");
    assert!(res["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("this run: dim 8, hidden 4, adam lr 0.05")));
    // Another setting is another unit: --resume does not reuse the records of this one.
    let o = chi(&out, &["ca-rnn-synthetic", "--quick", "--runs", "1", "--resume", "--set", "hidden=6"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("reused 0 of 3 units"), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn sweep_axes_are_options() {
    let out = tmp("sweep");
    let o = chi(&out, &["ca-rnn-sweep", "--quick", "--runs", "2", "--set", "sizes=4x4", "--set", "optimizers=sgd:0.5", "--set", "peepholes=vector"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let configs = unit_configs(&out.join("reproduce").join("ca-rnn-sweep"));
    // One configuration: LSTM, GRU and the CA-RNN with the vector peephole.
    assert_eq!(configs.len(), 3, "{configs:?}");
    assert!(configs.iter().all(|c| c.contains("d4 h4 sgd lr0.5 s1")), "{configs:?}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn unknown_options_and_bad_values_stop_before_training() {
    let out = tmp("bad");
    for (args, want) in [
        (vec!["ca-nn-xor", "--set", "hidden=4"], "experiment ca-nn-xor has no option 'hidden'"),
        (vec!["ca-rnn-synthetic", "--set", "hidden"], "expected KEY=VALUE"),
        (vec!["ca-rnn-synthetic", "--set", "hidden=0"], "--set hidden=0: ca-rnn-synthetic expects a size from 1 to 512"),
        (vec!["ca-rnn-synthetic", "--set", "optimizer=rmsprop"], "expects adagrad, adam or sgd"),
        (vec!["ca-rnn-synthetic", "--set", "lr=inf"], "expects a learning rate"),
        (vec!["ca-rnn-sweep", "--set", "sizes=4x"], "comma-separated list of EMBEDxHIDDEN"),
        (vec!["ca-rnn-sweep", "--set", "optimizers=adam"], "OPTIMIZER:RATE"),
        (vec!["ca-rnn-synthetic", "--set", "lr=1", "--set", "lr=2"], "given twice"),
        (vec!["g2p-cmudict", "--set", "steps=0"], "--set steps=0: g2p-cmudict expects a step count from 1 to 1000000"),
        (vec!["nmt-cells", "--set", "steps=many"], "--set steps=many: nmt-cells expects a step count"),
        (vec!["--list", "bogus"], "give it alone"),
        (vec!["--list", "--set", "hidden=0"], "give it alone"),
    ] {
        let o = chi(&out, &args);
        assert!(!o.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// A bad value is reported as such, not as the experiment's missing data: options are read
/// before the data.
#[test]
fn option_values_are_checked_before_the_data_is_read() {
    let out = tmp("nodata");
    let empty = out.join("no-data");
    std::fs::create_dir_all(&empty).unwrap();
    for (args, want) in [
        (vec!["ca-cnn-depth", "--quick", "--set", "depths=0"], "--set depths=0: ca-cnn-depth expects a comma-separated list of filter counts"),
        (vec!["ca-cnn-depth", "--quick", "--set", "kernel=29"], "expects a kernel side from 1 to 28"),
        (vec!["ca-cnn-stacked", "--quick", "--set", "layers=0"], "layer counts from 1 to 64"),
        (vec!["ca-res-sweep", "--quick", "--set", "kernels=4"], "odd kernel sides from 3 to 13"),
        (vec!["ca-res-sweep", "--quick", "--set", "lr=0"], "a learning rate > 0"),
        (vec!["rationales-reviews", "--quick", "--set", "lambda1=2"], "numbers in (0, 1]"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_chi")).args(["--threads", "1", "--out", out.to_str().unwrap(), "reproduce"]).args(&args).env("CHI_DATA", &empty).output().unwrap();
        assert!(!o.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want) && !err.contains("fetch-data"), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// Option values far from 1 are written in exponent form in the configuration and notes, not
/// as hundreds of digits.
#[test]
fn tiny_option_values_are_written_in_exponent_form() {
    let out = tmp("tiny");
    let o = chi(&out, &["ca-rnn-synthetic", "--quick", "--runs", "1", "--set", "lr=1e-300", "--set", "init-scale=2.5e-7", "--set", "iters=2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = out.join("reproduce").join("ca-rnn-synthetic");
    let res = std::fs::read_to_string(dir.join("results.json")).unwrap();
    assert!(res.contains("adagrad lr 1e-300") && res.contains("N(0, 2.5e-7²)"), "{res}");
    assert!(!res.contains("0.00000000"), "{res}");
    assert!(unit_configs(&dir).iter().all(|c| c.contains("lr1e-300 s2.5e-7")));
    let _ = std::fs::remove_dir_all(&out);
}

/// The CNN and CA-RES sweeps' open choices (Fashion-MNIST; skipped without it).
#[test]
fn cnn_and_res_sweep_options_reach_the_units() {
    if let Err(e) = chi_nn::data::require(chi_nn::data::Dataset::FashionMnist) {
        eprintln!("SKIPPED: {e}");
        return;
    }
    let out = tmp("cnn");
    let o = chi(&out, &["ca-cnn-depth", "--quick", "--runs", "1", "--set", "depths=3,2,3", "--set", "kernel=5", "--set", "hidden=16", "--set", "steps=5", "--set", "lr=0.05"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let configs = unit_configs(&out.join("reproduce").join("ca-cnn-depth"));
    // Depths 2 and 3 (the repeated 3 once), CNN and CA-CNN each.
    assert_eq!(configs.len(), 4, "{configs:?}");
    assert!(configs.iter().all(|c| c.contains("k=5 depth=") && c.contains("hidden=16 steps=5 adagrad lr=0.05")), "{configs:?}");
    let o = chi(&out, &["ca-res-sweep", "--quick", "--runs", "1", "--set", "kernels=7", "--set", "steps=3"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let configs = unit_configs(&out.join("reproduce").join("ca-res-sweep"));
    assert!(configs.iter().any(|c| c.contains("v_input=Eq42 l=3 n_v=1 n_sigma=1 b=false k=7")), "{configs:?}");
    for (args, want) in [
        (vec!["ca-cnn-depth", "--quick", "--set", "kernel=0"], "expects a kernel side from 1 to 28"),
        (vec!["ca-cnn-depth", "--quick", "--set", "depths=256", "--set", "kernel=1", "--set", "hidden=4096"], "ca-cnn-depth hidden-layer weights"),
        (vec!["ca-cnn-stacked", "--quick", "--set", "layers=0"], "layer counts from 1 to 64"),
        (vec!["ca-cnn-stacked", "--quick", "--set", "em-steps=-3"], "em_steps from 1 to 1000000"),
        (vec!["ca-res-sweep", "--quick", "--set", "kernels=4"], "odd kernel sides from 3 to 13"),
        (vec!["ca-res-sweep", "--quick", "--set", "hidden=0"], "a width from 1 to 4096"),
    ] {
        let o = chi(&out, &args);
        assert!(!o.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want) && !err.contains("panicked"), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// An experiment named twice runs once (twice it redid the first run into the same directory
/// and printed its table twice).
#[test]
fn an_experiment_named_twice_runs_once() {
    let out = tmp("twice");
    let o = chi(&out, &["ca-nn-xor", "ca-nn-xor", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout).lines().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).unwrap()).collect();
    let once = chi(&tmp("once"), &["ca-nn-xor", "--json"]);
    let single = String::from_utf8_lossy(&once.stdout).lines().filter(|l| l.starts_with('{')).count();
    assert!(single > 0 && rows.len() == single, "{} rows named twice, {single} named once", rows.len());
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(tmp("once"));
}
