//! Command-line tests: run the built `chi` binary and check what it prints, its exit status and
//! the files it writes (gradient checks, benchmarks' JSON, graph export, recurrent training).

use chi_cli::train::registry;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `chi ARGS…` and returns its output (never panics on a non-zero exit).
fn chi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chi")).args(args).output().unwrap_or_else(|e| panic!("cannot run chi {args:?}: {e}"))
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `chi ARGS…`, requires exit status 0 and returns stdout.
#[track_caller]
fn chi_ok(args: &[&str]) -> String {
    let o = chi(args);
    assert!(o.status.success(), "chi {args:?} failed ({}):\nstdout:\n{}\nstderr:\n{}", o.status, stdout(&o), stderr(&o));
    stdout(&o)
}

/// A fresh temporary directory for one test.
fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chi-cli-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The `(passed, failed)` counts of the summary line `N passed, M failed`, which must be the
/// last line printed.
#[track_caller]
fn summary(out: &str) -> (usize, usize) {
    let last = out.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_else(|| panic!("no output"));
    let nums: Vec<usize> = last.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
    assert!(last.ends_with(" failed") && last.contains(" passed, ") && nums.len() == 2, "last line is not `N passed, M failed`: {last:?}");
    (nums[0], nums[1])
}

#[test]
fn gradcheck_tanh_passes_at_first_and_second_order() {
    for args in [&["gradcheck", "--op", "tanh"][..], &["gradcheck", "--op", "tanh", "--order", "2"][..]] {
        let out = chi_ok(args);
        let (passed, failed) = summary(&out);
        assert_eq!((passed, failed), (1, 0), "chi {args:?}:\n{out}");
        assert!(out.lines().any(|l| l.starts_with("tanh") && l.ends_with("PASS")), "no PASS row for tanh in:\n{out}");
    }
}

#[test]
fn gradcheck_unknown_op_or_model_fails_with_a_clear_message() {
    let o = chi(&["gradcheck", "--op", "no_such_op"]);
    assert!(!o.status.success(), "an unknown op must fail");
    let err = stderr(&o);
    assert!(err.contains("no op named \"no_such_op\"") && err.contains("--list"), "unclear message: {err}");

    let o = chi(&["gradcheck", "--model", "no_such_model"]);
    assert!(!o.status.success(), "an unknown model must fail");
    assert!(stderr(&o).contains("no model named \"no_such_model\""), "unclear message: {}", stderr(&o));
}

#[test]
fn gradcheck_models_of_layers_and_recurrent_classifiers_pass() {
    let list = chi_ok(&["gradcheck", "--list"]);
    let names = [
        "lstm",
        "gru",
        "attention-bahdanau",
        "attention-luong",
        "conv2d-maxpool",
        "text-conv1d",
        "seq-lstm",
        "seq-gru",
        "seq-ca-rnn",
    ];
    for name in names {
        assert!(list.lines().any(|l| l.trim() == name), "{name} is not listed by chi gradcheck --list:\n{list}");
        let out = chi_ok(&["gradcheck", "--model", name]);
        assert_eq!(summary(&out), (1, 0), "chi gradcheck --model {name}:\n{out}");
        let row = out.lines().next().unwrap();
        assert!(row.starts_with(name) && row.ends_with("PASS"), "chi gradcheck --model {name}: first row {row:?}");
    }
}

/// The recurrent-convolution and rationale instances are registered and pass at orders 1 and 2.
#[test]
fn gradcheck_models_of_recurrent_convolution_and_rationales_pass() {
    let list = chi_ok(&["gradcheck", "--list"]);
    for name in ["rcnn-fused", "rcnn-composed", "rcnn-adaptive-xh", "rationale-encoder", "rcnn-classifier"] {
        assert!(list.lines().any(|l| l.trim() == name), "{name} is not listed by chi gradcheck --list:\n{list}");
        for order in ["1", "2"] {
            let out = chi_ok(&["gradcheck", "--model", name, "--order", order]);
            assert_eq!(summary(&out), (1, 0), "chi gradcheck --model {name} --order {order}:\n{out}");
        }
    }
}

/// `--estimator reinforce` z-tests both generators against exact enumeration, reports the
/// variance with and without the baseline, and refuses unknown estimators and bad levels.
#[test]
fn gradcheck_estimator_reinforce_passes_and_reports_the_baseline_variance() {
    let out = chi_ok(&["gradcheck", "--estimator", "reinforce"]);
    assert_eq!(summary(&out), (2, 0), "{out}");
    for g in ["reinforce-independent", "reinforce-dependent"] {
        assert!(out.lines().any(|l| l.starts_with(g) && l.ends_with("PASS")), "no PASS row for {g}:\n{out}");
    }
    assert!(out.contains("with a moving-average baseline"), "{out}");
    let out = chi_ok(&["gradcheck", "--estimator", "reinforce", "--samples", "500", "--json"]);
    // With --json, standard output is JSON lines only.
    let rows: Vec<_> = out.lines().map(json_object).collect();
    assert_eq!(rows.len(), 2, "{out}");
    // --seed moves the check: its random instance and the draws.
    let other = chi_ok(&["--seed", "7", "gradcheck", "--estimator", "reinforce", "--samples", "500", "--json"]);
    let moved: Vec<_> = other.lines().map(json_object).collect();
    assert_ne!(moved[0]["max_abs_z"], rows[0]["max_abs_z"], "--seed did not change the check");
    for r in rows {
        assert_eq!(r["samples"], 500);
        assert_eq!(r["masks"], 64);
        let (plain, base) = (r["variance_without_baseline"].as_f64().unwrap(), r["variance_with_baseline"].as_f64().unwrap());
        assert!(plain > 0.0 && base > 0.0 && base < plain, "the baseline should reduce the variance here: {r:?}");
        assert!(r["max_abs_z"].as_f64().unwrap() <= r["threshold"].as_f64().unwrap(), "{r:?}");
    }
    let o = chi(&["gradcheck", "--estimator", "nope"]);
    assert!(!o.status.success() && stderr(&o).contains("no estimator named \"nope\""), "{}", stderr(&o));
    let o = chi(&["gradcheck", "--estimator", "reinforce", "--alpha", "2"]);
    assert!(!o.status.success() && stderr(&o).contains("--alpha"), "{}", stderr(&o));
    // Too few draws for the normal approximation the test leans on are refused.
    for few in ["1", "100", "499"] {
        let o = chi(&["gradcheck", "--estimator", "reinforce", "--samples", few]);
        assert!(!o.status.success() && stderr(&o).contains("500"), "--samples {few}: {}", stderr(&o));
    }
}

/// Parses one line of `--json` output into an object.
#[track_caller]
fn json_object(line: &str) -> serde_json::Map<String, serde_json::Value> {
    match serde_json::from_str::<serde_json::Value>(line) {
        Ok(serde_json::Value::Object(m)) => m,
        other => panic!("not a JSON object: {line:?} ({other:?})"),
    }
}

#[track_caller]
fn positive_number(m: &serde_json::Map<String, serde_json::Value>, key: &str) -> f64 {
    let v = m.get(key).and_then(|v| v.as_f64()).unwrap_or_else(|| panic!("key {key:?} missing or not a number in {m:?}"));
    assert!(v.is_finite() && v > 0.0, "{key} = {v} is not finite and positive");
    v
}

#[test]
fn bench_gemm_json_has_the_documented_keys() {
    let out = chi_ok(&["bench", "gemm", "--sizes", "64", "--threads", "1", "--reps", "3", "--json"]);
    let lines: Vec<&str> = out.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line per size expected:\n{out}");
    let m = json_object(lines[0]);
    let numeric = ["n", "threads", "chi_gflops", "matrixmultiply_gflops", "ratio", "ceiling_gflops", "pct_of_ceiling"];
    // The documented keys, plus `isa` (a label of the vector instruction set, also printed).
    let mut expected: Vec<&str> = numeric.to_vec();
    expected.extend(["kernel", "isa"]);
    let mut keys: Vec<&str> = m.keys().map(|k| k.as_str()).collect();
    keys.sort_unstable();
    expected.sort_unstable();
    assert_eq!(keys, expected, "keys of {}", lines[0]);
    assert_eq!(m["kernel"], "sgemm");
    assert!(m["isa"].is_string());
    for k in numeric {
        positive_number(&m, k);
    }
    assert_eq!(m["n"], 64);
    assert_eq!(m["threads"], 1);
}

/// `--flush-denormals` is a global flag: it is set after the thread pool `--threads` builds (the
/// other order would make building the pool fail), on every thread that runs kernels.
#[test]
fn flush_denormals_is_accepted_with_an_explicit_pool() {
    for threads in ["1", "2"] {
        let out = chi_ok(&["--flush-denormals", "--threads", threads, "bench", "gemm", "--sizes", "64", "--reps", "1", "--json"]);
        let m = json_object(out.lines().find(|l| !l.trim().is_empty()).expect("a JSON line"));
        positive_number(&m, "chi_gflops");
    }
}

/// `--anatomy` adds the microkernel's two rates (as % of the ceiling) to each line, and refuses
/// more than one thread (it times one thread's microkernel).
#[test]
fn bench_gemm_anatomy_adds_the_microkernel_rates() {
    let out = chi_ok(&["bench", "gemm", "--sizes", "64", "--threads", "1", "--reps", "2", "--json", "--anatomy"]);
    let m = json_object(out.lines().find(|l| !l.trim().is_empty()).expect("a JSON line"));
    for k in ["tile_l1_pct", "tile_block_pct"] {
        positive_number(&m, k);
    }
    let table = chi_ok(&["bench", "gemm", "--sizes", "64", "--threads", "1", "--reps", "1", "--anatomy"]);
    assert!(table.contains("anatomy: microkernel") && table.contains("tile block %"), "{table}");
    let o = chi(&["bench", "gemm", "--sizes", "64", "--threads", "2", "--anatomy"]);
    assert!(!o.status.success() && stderr(&o).contains("--threads 1"), "{}", stderr(&o));
}

#[test]
fn bench_tape_json_reports_ns_per_op() {
    let out = chi_ok(&["bench", "tape", "--steps", "200", "--reps", "5", "--json"]);
    let lines: Vec<&str> = out.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one JSON line expected:\n{out}");
    let m = json_object(lines[0]);
    assert_eq!(m["bench"], "scalar_chain");
    let ns = positive_number(&m, "ns_per_op");
    assert!(ns < 1e7, "{ns} ns per scalar op is implausible");
}

#[test]
fn graph_mlp_writes_dot() {
    let dir = tmp("graph");
    let out = chi_ok(&["graph", "mlp", "--out", dir.to_str().unwrap()]);
    let path = dir.join("graph-mlp.dot");
    assert!(out.contains(&path.display().to_string()), "chi graph should say where it wrote: {out}");
    let dot = std::fs::read_to_string(&path).unwrap();
    assert!(dot.contains("digraph"), "not DOT: {dot}");
    assert!(dot.contains("tanh"), "the MLP's tanh node is missing: {dot}");
    // A file given as the output directory is named as such (it was "File exists (os error 17)").
    let o = Command::new(env!("CARGO_BIN_EXE_chi")).args(["graph", "mlp", "--out", path.to_str().unwrap()]).output().unwrap();
    assert!(!o.status.success() && stderr(&o).contains("is a file, not a directory"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn train_help_and_list_name_every_model_and_dataset() {
    let help = chi_ok(&["train", "--help"]);
    let list = chi_ok(&["train", "--list"]);
    let r = registry::snapshot();
    for name in r.models.iter().map(|m| m.name.as_str()).chain(r.datasets.iter().map(|d| d.name.as_str())) {
        assert!(help.contains(name), "chi train --help does not mention {name}:\n{help}");
        assert!(list.lines().any(|l| l.trim_start().starts_with(name)), "chi train --list does not list {name}:\n{list}");
    }
    for name in ["lstm", "gru", "ca-rnn"] {
        assert!(r.models.iter().any(|m| m.name == name), "{name} is not a registered model");
    }
}

#[test]
fn recurrent_model_needs_a_sequence_dataset() {
    let dir = tmp("wrong-data");
    let o = chi(&["train", "--model", "gru", "--dataset", "spirals", "--steps", "1", "--quiet", "--out", dir.to_str().unwrap()]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("gru takes text data") && err.contains("\"spirals\" is tabular") && err.contains("first-token"), "unclear message: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `(step, t, norm)` rows of `gradflow_time.csv`.
fn gradflow_time(dir: &Path) -> Vec<(u64, usize, f64)> {
    let text = std::fs::read_to_string(dir.join("gradflow_time.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("step,t,norm"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 3, "bad row {l:?}");
            (f[0].parse().unwrap(), f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect()
}

#[test]
fn train_recurrent_model_writes_logs_and_gradient_flow_over_time() {
    const SEQ_LEN: usize = 6;
    const STEPS: usize = 120;
    for model in ["lstm", "gru", "ca-rnn"] {
        let dir = tmp(&format!("train-{model}"));
        let cfg = dir.join("config.in.toml");
        std::fs::write(
            &cfg,
            format!(
                "model = \"{model}\"\ndataset = \"first-token\"\nsteps = {STEPS}\nbatch_size = 32\nclip_norm = 5.0\ngradflow_every = 20\n\
                 [optim]\nname = \"adam\"\nlr = 0.02\n[model_options]\nhidden = [16]\n[model_options.options]\nembed = 8\n\
                 [data]\nn_train = 512\nn_test = 256\nclasses = 3\n[data.options]\nseq_len = {SEQ_LEN}\ndistractors = 5\n"
            ),
        )
        .unwrap();
        let out = chi_ok(&["--seed", "5", "train", "--config", cfg.to_str().unwrap(), "--quiet", "--out", dir.to_str().unwrap()]);
        assert!(out.contains(&format!("trained {model} on first-token for {STEPS} steps")), "{out}");

        // One log row per step, loss finite and falling.
        let log = std::fs::read_to_string(dir.join("log.jsonl")).unwrap();
        let losses: Vec<f64> = log.lines().map(|l| json_object(l)["loss"].as_f64().expect("loss is a number")).collect();
        assert_eq!(losses.len(), STEPS, "{model}: one log row per step");
        assert!(losses.iter().all(|l| l.is_finite()), "{model}: non-finite loss");
        let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
        let (first, last) = (mean(&losses[..10]), mean(&losses[STEPS - 10..]));
        assert!(last < 0.7 * first, "{model}: loss should fall: first 10 steps {first:.4}, last 10 {last:.4}");

        // gradflow_time.csv: for every recorded step, one finite norm per time step t = 0..T−1.
        let rows = gradflow_time(&dir);
        let steps: Vec<u64> = rows.iter().map(|r| r.0).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
        assert_eq!(steps, (1..=(STEPS / 20) as u64).map(|k| 20 * k).collect::<Vec<_>>(), "{model}: recorded steps");
        for s in &steps {
            let ts: Vec<(usize, f64)> = rows.iter().filter(|r| r.0 == *s).map(|r| (r.1, r.2)).collect();
            assert_eq!(ts.iter().map(|r| r.0).collect::<Vec<_>>(), (0..SEQ_LEN).collect::<Vec<_>>(), "{model}: time steps at step {s}");
            assert!(ts.iter().all(|(_, v)| v.is_finite() && *v > 0.0), "{model}: step {s}: norms {ts:?}");
        }
        for f in ["gradflow_time.svg", "gradflow_time.png", "gradflow_time_lines.svg", "gradflow.csv", "loss.svg", "model.safetensors"] {
            assert!(dir.join(f).exists(), "{model}: missing {f}");
        }
        let svg = std::fs::read_to_string(dir.join("gradflow_time_lines.svg")).unwrap();
        assert!(svg.contains("time step t"), "{model}: the gradient-flow plot has no axis label");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_bad_gemm_blocking_override_is_an_error_not_a_panic() {
    let run = |v: &str| {
        Command::new(env!("CARGO_BIN_EXE_chi"))
            .args(["bench", "gemm", "--sizes", "64", "--threads", "1", "--reps", "1", "--json"])
            .env("CHI_GEMM_BLOCKING", v)
            .output()
            .unwrap()
    };
    for bad in ["7,256,1024", "96,0,1024", "96,256", "x"] {
        let o = run(bad);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "CHI_GEMM_BLOCKING={bad}: {err}");
        assert!(err.contains("chi: error: CHI_GEMM_BLOCKING=") && !err.contains("panicked"), "CHI_GEMM_BLOCKING={bad}: {err}");
    }
    // A valid override for every kernel (multiples of 48 fit MR = 4, 6, 12; NC of 32) runs.
    let o = run("96,128,512");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Flags and settings that would otherwise be ignored without a word are errors: `--op` with
/// `--model`, the estimator's `--alpha` / `--samples` without `--estimator`, and a `CHI_SIMD`
/// value the kernels do not know.
#[test]
fn ignored_flags_and_settings_are_errors() {
    for args in [&["gradcheck", "--op", "add", "--model", "mlp"][..], &["gradcheck", "--alpha", "0.5"], &["gradcheck", "--op", "add", "--samples", "1000"]] {
        let o = chi(args);
        assert!(matches!(o.status.code(), Some(1 | 2)), "chi {args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("cannot be used with") || e.contains("--estimator"), "chi {args:?}: {e}");
    }
    let o = Command::new(env!("CARGO_BIN_EXE_chi")).env("CHI_SIMD", "bogus").args(["gradcheck", "--op", "add", "--instances", "1"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("CHI_SIMD=bogus is not one of portable, avx2, avx512"), "{}", stderr(&o));
    let o = Command::new(env!("CARGO_BIN_EXE_chi")).env("CHI_SIMD", "portable").args(["gradcheck", "--op", "add", "--instances", "1"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

/// The global `--seed` and `--out` given to a command that does not read them are refused
/// (before the command runs), and so are the op-check flags beside `--estimator`; where a command
/// reads them, or they are left at their defaults, nothing is refused.
#[test]
fn global_and_op_flags_a_command_does_not_read_are_errors() {
    let refused = [
        (&["translate", "model.safetensors", "--out", "d"][..], "--out is not used by `chi translate`"),
        (&["--out", "d", "explain", "run", "--text", "hi"], "--out is not used by `chi explain`"),
        (&["--out", "d", "gradcheck", "--op", "tanh"], "--out is not used by `chi gradcheck`"),
        (&["bench", "tape", "--out", "d"], "--out is not used by `chi bench`"),
        (&["embed", "neighbours", "v.txt", "cat", "--out", "d"], "--out is not used by `chi embed`"),
        (&["--seed", "3", "eval", "run"], "--seed does not change `chi eval`"),
        (&["eval", "run", "--out", "d"], "--out is not used by `chi eval`: it evaluates the model named"),
        (&["predict", "run", "--input", "x.csv", "--seed", "1"], "--seed does not change `chi predict`"),
        (&["--seed", "1", "graph", "mlp"], "--seed does not change `chi graph`: its examples' weights are fixed"),
        (&["gradcheck", "--estimator", "reinforce", "--order", "2"], "cannot be used with '--order"),
        (&["gradcheck", "--estimator", "reinforce", "--instances", "3"], "cannot be used with '--instances"),
        (&["gradcheck", "--estimator", "reinforce", "--fast"], "cannot be used with '--fast"),
    ];
    for (args, want) in refused {
        let o = chi(args);
        assert_eq!(o.status.code(), Some(2), "chi {args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "chi {args:?}: {}", stderr(&o));
    }
    // Read where given: gradcheck follows --seed, graph writes to --out.
    let d = tmp("global-flags");
    chi_ok(&["--seed", "3", "gradcheck", "--op", "tanh", "--instances", "1"]);
    chi_ok(&["--out", d.to_str().unwrap(), "graph", "mlp"]);
    assert!(d.join("graph-mlp.dot").exists());
    std::fs::remove_dir_all(&d).ok();
}

/// `chi graph` replaces its own drawings but not a file of the same name it did not draw.
#[test]
fn graph_keeps_drawings_it_did_not_make() {
    let d = tmp("graph-keeps");
    std::fs::create_dir_all(&d).unwrap();
    let mine = d.join("graph-mlp.dot");
    std::fs::write(&mine, "precious\n").unwrap();
    let o = chi(&["--out", d.to_str().unwrap(), "graph", "mlp"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("was not drawn by chi graph"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "precious\n");
    std::fs::remove_file(&mine).unwrap();
    std::fs::write(d.join("graph-mlp.svg"), "<svg>mine</svg>").unwrap();
    assert!(chi(&["--out", d.to_str().unwrap(), "graph", "mlp"]).status.code() == Some(1), "an svg without chi's .dot is kept");
    std::fs::remove_file(d.join("graph-mlp.svg")).unwrap();
    // Its own drawing is replaced, twice over.
    chi_ok(&["--out", d.to_str().unwrap(), "graph", "mlp"]);
    chi_ok(&["--out", d.to_str().unwrap(), "graph", "mlp", "--values"]);
    assert!(std::fs::read_to_string(&mine).unwrap().starts_with("digraph tape {"));
    std::fs::remove_dir_all(&d).ok();
}

/// `bench gemm` refuses a size whose three matrices exceed the memory the process may use (an
/// address-space limit counts), instead of aborting on the failed allocation.
#[test]
fn bench_gemm_refuses_sizes_beyond_the_memory_it_may_use() {
    let chi = env!("CARGO_BIN_EXE_chi");
    let o = Command::new("bash").args(["-c", "ulimit -v 3000000 && exec \"$0\" bench gemm --sizes 16384 --dtype f64 --reps 1 --threads 1", chi]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("bench gemm --sizes 16384 --dtype f64") && e.contains("GiB of memory"), "{e}");
}

/// Started by a launcher as one of several processes, the one-process `chi` refuses to run (it
/// would train unrelated copies into one directory) and names the program that can.
#[test]
fn chi_refuses_to_run_as_one_of_several_processes() {
    for var in ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"] {
        let o = Command::new(env!("CARGO_BIN_EXE_chi")).env(var, "2").args(["gradcheck", "--list"]).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{var}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("one of 2 processes") && e.contains("chi-mpi"), "{var}: {e}");
    }
    // A launcher's size of 1 is one process: nothing to refuse.
    let o = Command::new(env!("CARGO_BIN_EXE_chi")).env("OMPI_COMM_WORLD_SIZE", "1").args(["--version"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}
