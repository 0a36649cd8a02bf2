//! The reliability suite: runs the `chi` binary as a careless user or a hostile file would, and
//! checks that every case ends with a clear error (exit status 1, never a panic's 101 or an
//! abort), that the message names the problem, and that no earlier file of a run was changed.
//! `RELIABILITY.md` at the repository root lists the guarantees and the test of each.

use chi_cli::train::{self, Config};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The `chi` binary under test: `CHI_BIN` if set (to run the suite against another build, e.g.
/// one from before a fix, and see which cases it fails), else the one cargo built.
fn chi_bin() -> PathBuf {
    std::env::var_os("CHI_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_chi")), PathBuf::from)
}

fn chi_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(chi_bin());
    c.args(args).env_remove("CHI_MAX_TENSOR_ELEMENTS");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap_or_else(|e| panic!("cannot run chi {args:?}: {e}"))
}

fn chi(args: &[&str]) -> Output {
    chi_env(args, &[])
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Requires success and returns stdout + stderr.
#[track_caller]
fn ok(args: &[&str]) -> String {
    let o = chi(args);
    assert!(o.status.success(), "chi {args:?} failed ({}):\n{}", o.status, text(&o));
    text(&o)
}

/// Requires a clean failure (exit status 1, or 2 for a command-line syntax error found by the
/// argument parser; never a panic's 101 or a signal) whose message contains every `needle`.
#[track_caller]
fn fails(o: Output, args: &str, needles: &[&str]) -> String {
    let t = text(&o);
    assert!(matches!(o.status.code(), Some(1 | 2)), "chi {args} should fail with exit status 1, got {}:\n{t}", o.status);
    assert!(!t.contains("panicked"), "chi {args} panicked:\n{t}");
    for n in needles {
        assert!(t.contains(n), "chi {args}: message lacks {n:?}:\n{t}");
    }
    t
}

#[track_caller]
fn fails_with(args: &[&str], needles: &[&str]) -> String {
    fails(chi(args), &format!("{args:?}"), needles)
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chi-reliab-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every file under `dir` (but the lock file) and its bytes.
pub(crate) fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut m = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if e.file_name() != ".chi.lock" {
                m.insert(p.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(&p).unwrap());
            }
        }
    }
    m
}

const SMALL: &[&str] = &["--hidden", "8", "--quiet", "--no-plots", "--batch-size", "16"];

/// `chi train` of a small MLP for `steps` steps into `out`, with extra flags.
fn train_args<'a>(out: &'a str, steps: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["train", "--out", out, "--steps", steps, "--checkpoint-every", "10", "--eval-every", "10"];
    a.extend_from_slice(SMALL);
    a.extend_from_slice(extra);
    a
}

#[test]
fn a_second_fresh_run_in_a_run_directory_is_refused_and_overwrite_moves_the_old_run_aside() {
    let root = tmp("own");
    let out = root.join("runs");
    ok(&train_args(s(&out), "20", &[]));
    let before = snapshot(&out);
    assert!(before.contains_key(Path::new("checkpoints/step-00000020.ckpt.safetensors")));
    let t = fails_with(&train_args(s(&out), "30", &["--dataset", "xor-noise"]), &["already holds a run", "--resume", "--overwrite"]);
    assert!(t.contains("config.toml"), "{t}");
    assert_eq!(snapshot(&out), before, "a refused run changed the directory");
    // --overwrite: the old run is moved aside intact, the new run's checkpoints are its own.
    let mut a = vec!["train", "--out", s(&out), "--steps", "30", "--checkpoint-every", "15", "--dataset", "xor-noise", "--overwrite"];
    a.extend_from_slice(SMALL);
    let t = ok(&a);
    assert!(t.contains("moved the previous run"), "{t}");
    let old: Vec<PathBuf> = std::fs::read_dir(&root).unwrap().flatten().map(|e| e.path()).filter(|p| p.to_string_lossy().contains("runs.old-")).collect();
    assert_eq!(old.len(), 1, "{old:?}");
    assert_eq!(snapshot(&old[0]), before, "the moved-aside run differs from the old run");
    let ck: Vec<String> = std::fs::read_dir(out.join("checkpoints")).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert!(ck.contains(&"step-00000030.ckpt.safetensors".to_string()), "the new run's last checkpoint was pruned: {ck:?}");
    assert!(ck.contains(&"step-00000015.ckpt.safetensors".to_string()) && ck.len() == 2, "the old run's checkpoints are mixed in: {ck:?}");
    // chi eval evaluates the checkpoint it names: the old run's on spirals, the new one's on xor-noise.
    let e = ok(&["eval", "--checkpoint", s(&old[0].join("checkpoints/step-00000020.ckpt.safetensors"))]);
    assert!(e.contains("on spirals") && e.contains("at step 20"), "{e}");
    let e = ok(&["eval", "--out", s(&out)]);
    assert!(e.contains("on xor-noise") && e.contains("at step 30"), "{e}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn two_runs_at_once_the_second_fails_at_start_naming_the_first() {
    let root = tmp("lock");
    let out = root.join("r");
    let mut args = vec!["train", "--out", s(&out), "--steps", "100000000", "--checkpoint-every", "0", "--eval-every", "0"];
    args.extend_from_slice(SMALL);
    let mut child = Command::new(chi_bin())
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lock = out.join(".chi.lock");
    let t0 = std::time::Instant::now();
    // The first run writes config.toml just after taking the lock: wait for both, so the
    // snapshot below is of the first run's files, not of a moment in between.
    while std::fs::read_to_string(&lock).map(|t| t.trim().is_empty()).unwrap_or(true) || !out.join("config.toml").exists() {
        if let Some(st) = child.try_wait().unwrap() {
            panic!("the first run ended ({st}) before the test could check its lock");
        }
        assert!(t0.elapsed().as_secs() < 60, "the first run never took the lock");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let before = snapshot(&out);
    let pid = child.id().to_string();
    for extra in [&["--overwrite"][..], &[][..]] {
        fails_with(&train_args(s(&out), "10", extra), &["in use", &format!("PID {pid}")]);
    }
    // The refused runs did not touch the first run's config.
    assert_eq!(snapshot(&out).get(Path::new("config.toml")), before.get(Path::new("config.toml")));
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_stale_lock_of_a_dead_process_is_taken_over_with_a_warning() {
    let out = tmp("stale");
    std::fs::write(out.join(".chi.lock"), "4194999\n").unwrap();
    let t = ok(&train_args(s(&out), "5", &[]));
    assert!(t.contains("stale lock of PID 4194999"), "{t}");
    assert_eq!(std::fs::read_to_string(out.join(".chi.lock")).unwrap(), "", "the lock was not released");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn resume_is_exact_and_explicit() {
    let out = tmp("resume");
    let o = s(&out);
    fails_with(&train_args(o, "20", &["--resume"]), &["nothing to resume"]);
    ok(&train_args(o, "20", &["--lr", "0.05"]));
    let before = snapshot(&out);
    // A flag that contradicts the run's configuration: an error naming the flag and both values.
    fails_with(&["train", "--out", o, "--resume", "--lr", "0.5"], &["--lr 0.5", "0.05", "conflicts"]);
    fails_with(&["train", "--out", o, "--resume", "--hidden", "9"], &["--hidden 9", "[8]"]);
    fails_with(&["--seed", "3", "train", "--out", o, "--resume"], &["--seed 3", "conflicts"]);
    fails_with(&["train", "--out", o, "--resume", "--overwrite"], &["cannot be used with"]);
    // A finished run: nothing to do, nothing written.
    let t = ok(&["train", "--out", o, "--resume", "--quiet"]);
    assert!(t.contains("already finished at step 20"), "{t}");
    assert_eq!(snapshot(&out), before, "refused or no-op resumes changed the run");
    // --steps may extend it; the same flag values as the run's are accepted.
    let t = ok(&["train", "--out", o, "--resume", "--steps", "30", "--lr", "0.05", "--quiet", "--no-plots"]);
    assert!(t.contains("for 30 steps"), "{t}");
    let log = std::fs::read_to_string(out.join("log.jsonl")).unwrap();
    let steps: Vec<u64> = log.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["step"].as_u64().unwrap()).collect();
    assert_eq!(steps, (1..=30).collect::<Vec<_>>());
    let evals = std::fs::read_to_string(out.join("eval.jsonl")).unwrap();
    assert_eq!(evals.lines().count(), 3, "one eval row per 10 steps, none duplicated:\n{evals}");
    let _ = std::fs::remove_dir_all(&out);
}

/// `--resume` continues only its own run: a checkpoint copied in from another run (another
/// configuration) or renamed to a later step is refused, naming it; a `--config` is compared on
/// the keys it names, so a file asking only for more steps resumes, and one changing a key names
/// that key alone.
#[test]
fn resume_refuses_checkpoints_of_other_runs_and_compares_a_config_on_its_own_keys() {
    let (a, b) = (tmp("foreign-a"), tmp("foreign-b"));
    ok(&train_args(s(&a), "20", &[]));
    ok(&train_args(s(&b), "20", &["--lr", "0.05", "--dropout", "0.1"]));
    let ck = |d: &Path, n: u32| d.join(format!("checkpoints/step-{n:08}.ckpt.safetensors"));
    for f in ["model.safetensors", "summary.json"] {
        std::fs::remove_file(a.join(f)).unwrap();
    }
    std::fs::remove_file(ck(&a, 20)).unwrap();
    std::fs::copy(ck(&b, 20), ck(&a, 20)).unwrap();
    let e = fails_with(&["train", "--out", s(&a), "--resume", "--quiet", "--no-plots"], &["is not a checkpoint of the run in", "optim.lr: 0.1 in the run, 0.05 in the checkpoint"]);
    assert!(e.contains("model_options.dropout"), "{e}");
    std::fs::copy(ck(&a, 10), ck(&a, 20)).unwrap();
    fails_with(&["train", "--out", s(&a), "--resume", "--quiet", "--no-plots"], &["holds step 10 but is named for step 20"]);
    std::fs::remove_file(ck(&a, 20)).unwrap();
    // From step 10, with a config that names only the steps.
    let steps = a.join("more-steps.toml");
    std::fs::write(&steps, "steps = 30\n").unwrap();
    let t = ok(&["train", "--out", s(&a), "--resume", "--config", s(&steps), "--quiet", "--no-plots"]);
    assert!(t.contains("from step 10") && t.contains("for 30 steps"), "{t}");
    let lr = a.join("lr.toml");
    std::fs::write(&lr, "steps = 40\n[optim]\nlr = 0.5\n").unwrap();
    let e = fails_with(&["train", "--out", s(&a), "--resume", "--config", s(&lr), "--quiet", "--no-plots"], &["optim.lr: 0.1 in the run, 0.5 now; drop --config"]);
    assert!(!e.contains("model_options") && !e.contains("dataset"), "{e}");
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

#[test]
fn resume_after_a_crash_truncates_logs_drops_a_torn_line_and_removes_temporaries() {
    let (a, b) = (tmp("crash-a"), tmp("crash-b"));
    ok(&train_args(s(&a), "20", &[]));
    ok(&train_args(s(&b), "20", &[]));
    // Simulate a kill after step 17: the last checkpoint is step 10, the logs run past it and
    // end in a torn line, a temporary file of an atomic write is left behind.
    std::fs::remove_file(b.join("checkpoints/step-00000020.ckpt.safetensors")).unwrap();
    for f in ["model.safetensors", "summary.json"] {
        std::fs::remove_file(b.join(f)).unwrap();
    }
    let mut log = std::fs::read_to_string(b.join("log.jsonl")).unwrap();
    log = log.lines().take(17).map(|l| format!("{l}\n")).collect::<String>() + "{\"block\":0,\"epo";
    std::fs::write(b.join("log.jsonl"), log).unwrap();
    std::fs::write(b.join("checkpoints/.step-00000020.ckpt.safetensors.tmp-999"), b"partial").unwrap();
    let t = ok(&["train", "--out", s(&b), "--resume", "--quiet", "--no-plots"]);
    assert!(t.contains("damaged last line") && t.contains("from step 10"), "{t}");
    assert!(!b.join("checkpoints/.step-00000020.ckpt.safetensors.tmp-999").exists(), "stale temporary file kept");
    // Bit-identical to the uninterrupted run: logs' losses, final weights and checkpoint.
    let losses = |d: &Path| train::log::read_column(&d.join("log.jsonl"), "loss").unwrap();
    assert_eq!(losses(&a), losses(&b));
    for f in ["model.safetensors", "checkpoints/step-00000020.ckpt.safetensors", "gradflow.csv"] {
        assert!(std::fs::read(a.join(f)).unwrap() == std::fs::read(b.join(f)).unwrap(), "{f} differs after the crash and resume");
    }
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

#[test]
fn a_run_stopped_before_its_first_checkpoint_resumes_with_its_own_config() {
    let out = tmp("nockpt");
    std::fs::write(out.join("config.toml"), "dataset = \"xor-noise\"\nsteps = 12\nbatch_size = 8\ngradflow_every = 0\n[model_options]\nhidden = [4]\n").unwrap();
    let t = ok(&["train", "--out", s(&out), "--resume", "--quiet", "--no-plots"]);
    assert!(t.contains("from step 0") && t.contains("on xor-noise for 12 steps"), "{t}");
    let _ = std::fs::remove_dir_all(&out);
    // A stored configuration that does not validate is refused, naming the file it came from.
    let out = tmp("nockpt-bad");
    std::fs::write(out.join("config.toml"), "dataset = \"xor-noise\"\nsteps = 12\nbatch_size = 0\n").unwrap();
    let cfg = out.join("config.toml");
    fails_with(&["train", "--out", s(&out), "--resume", "--quiet", "--no-plots"], &[s(&cfg), "bad run configuration", "batch_size must be positive"]);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn same_seed_and_config_give_byte_identical_files() {
    let (a, b) = (tmp("det-a"), tmp("det-b"));
    ok(&train_args(s(&a), "20", &["--dropout", "0.1"]));
    ok(&train_args(s(&b), "20", &["--dropout", "0.1"]));
    for f in ["model.safetensors", "checkpoints/step-00000010.ckpt.safetensors", "checkpoints/step-00000020.ckpt.safetensors", "config.toml", "gradflow.csv"] {
        assert!(std::fs::read(a.join(f)).unwrap() == std::fs::read(b.join(f)).unwrap(), "{f} differs between two runs of the same seed");
    }
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

#[test]
fn sizes_from_flags_configs_and_checkpoints_are_bounded() {
    let out = tmp("sizes");
    let o = s(&out);
    fails_with(&["train", "--out", o, "--hidden", "100000000"], &["limit", "CHI_MAX_TENSOR_ELEMENTS"]);
    fails_with(&["bench", "gemm", "--sizes", "1000000"], &["--sizes", "limit"]);
    let cfg = out.join("big.toml");
    std::fs::write(&cfg, "[data]\nn_train = 100000000000\n").unwrap();
    fails_with(&["train", "--out", o, "--config", s(&cfg)], &["n_train", "limit"]);
    fails_with(&["train", "--out", o, "--steps", "18446744073709551615"], &["steps", "out of range"]);
    // The limit is overridable; an override that is not a positive whole number is an error.
    fails(chi_env(&["train", "--out", o, "--hidden", "64"], &[("CHI_MAX_TENSOR_ELEMENTS", "1000")]), "--hidden 64 under a limit of 1000", &["limit of 1000"]);
    // A limit raised past the machine's memory gives an error, not the out-of-memory killer
    // (10^10 hidden units: terabytes of weights and activations).
    let raised = [("CHI_MAX_TENSOR_ELEMENTS", "1000000000000000")];
    fails(chi_env(&["train", "--out", o, "--hidden", "10000000000"], &raised), "--hidden 10^10 under a raised limit", &["GiB of memory this machine has available"]);
    for bad in ["4e9", "0", "-1", "18446744073709551616"] {
        fails(chi_env(&["train", "--out", o, "--steps", "1"], &[("CHI_MAX_TENSOR_ELEMENTS", bad)]), &format!("CHI_MAX_TENSOR_ELEMENTS={bad}"), &["CHI_MAX_TENSOR_ELEMENTS", "positive whole number"]);
        fails(chi_env(&["train", "--out", o, "--steps", "1"], &[("CHI_MAX_FILE_BYTES", bad)]), &format!("CHI_MAX_FILE_BYTES={bad}"), &["CHI_MAX_FILE_BYTES", "positive whole number", "bytes read from one input file"]);
        fails(chi_env(&["train", "--out", o, "--steps", "1"], &[("CHI_MEMORY_LIMIT", bad)]), &format!("CHI_MEMORY_LIMIT={bad}"), &["CHI_MEMORY_LIMIT", "positive whole number", "memory"]);
    }
    // A checkpoint with a valid checksum but a forged config is refused before the model is built.
    let mut c = Config::default();
    c.model_options.hidden = vec![4];
    c.steps = 1;
    let mut run = train::Run::new(&c).unwrap();
    for (hidden, needle) in [(vec![20000, 20000], "limit"), (vec![3000, 3000], "the checkpoint is inconsistent")] {
        run.cfg.model_options.hidden = hidden;
        let p = out.join("forged.ckpt.safetensors");
        run.save(&p).unwrap();
        fails_with(&["eval", "--checkpoint", s(&p)], &[needle, "forged.ckpt.safetensors"]);
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn flags_and_config_values_are_range_checked() {
    let out = tmp("flags");
    let o = s(&out);
    let cases: &[(&[&str], &[&str])] = &[
        (&["--schedule", "exp:nan"], &["gamma", "NaN"]),
        (&["--schedule", "step:10:-0.5"], &["gamma", "-0.5"]),
        (&["--schedule", "nonsense"], &["schedule"]),
        (&["--momentum", "5"], &["momentum", "[0, 1)"]),
        (&["--lr=-1"], &["lr"]),
        (&["--lr", "inf"], &["lr"]),
        (&["--hidden", "0"], &["--hidden", "at least 1"]),
        (&["--hidden", "8,x"], &["--hidden"]),
        (&["--dropout", "1.5"], &["dropout"]),
        (&["--clip-norm=-1"], &["clip_norm"]),
        (&["--em-blocks", "a,,b"], &["--em-blocks", "empty group"]),
        (&["--log-format", "xml"], &["--log-format"]),
    ];
    for (flags, needles) in cases {
        let mut a = vec!["train", "--out", o];
        a.extend_from_slice(flags);
        fails_with(&a, needles);
    }
    fails_with(&["--threads", "10000", "train", "--out", o], &["--threads 10000", "out of range"]);
    fails_with(&["--threads", "0", "train", "--out", o], &["--threads 0"]);
    let cfg = out.join("c.toml");
    std::fs::write(&cfg, "steps = 10\n[optim]\nname = \"adam\"\nlearning_rate = 0.1\n").unwrap();
    fails_with(&["train", "--out", o, "--config", s(&cfg)], &["learning_rate"]);
    std::fs::write(&cfg, "[data]\nn_test = 0\n").unwrap();
    fails_with(&["train", "--out", o, "--config", s(&cfg)], &["n_test", "empty"]);
    std::fs::write(&cfg, "[data]\nn_train = 20\nclasses = 40\n").unwrap();
    fails_with(&["train", "--out", o, "--config", s(&cfg)], &["never occurs"]);
    fails_with(&["train", "--out", o, "--config", "/dev/zero"], &["/dev/zero", "larger than"]);
    // Nothing was written by any refused run.
    assert!(!out.join("config.toml").exists() && !out.join("checkpoints").exists());
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn printing_to_a_closed_pipe_does_not_panic() {
    let mut child = Command::new(chi_bin()).args(["train", "--list"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked") && o.status.code() != Some(101), "{}: {err}", o.status);
}

#[test]
fn an_empty_output_matrix_is_legal_in_gemm() {
    use chi_kernels::gemm::{gemm, MatMut, MatRef};
    let a = vec![1.0f32; 3 * 2];
    let b: Vec<f32> = Vec::new();
    let mut c: Vec<f32> = Vec::new();
    gemm(1.0, MatRef::row_major(&a, 3, 2), MatRef { data: &b, rows: 2, cols: 0, rs: 0, cs: 1 }, 0.0, MatMut { data: &mut c, rows: 3, cols: 0, rs: 0, cs: 1 });
    // k = 0: C = β·C.
    let mut c2 = vec![2.0f32; 6];
    gemm(1.0, MatRef { data: &b, rows: 3, cols: 0, rs: 0, cs: 1 }, MatRef { data: &b, rows: 0, cols: 2, rs: 2, cs: 1 }, 0.5, MatMut { data: &mut c2, rows: 3, cols: 2, rs: 2, cs: 1 });
    assert_eq!(c2, vec![1.0; 6]);
}

/// A version-1.0 `.npy` file of little-endian f32 values.
fn npy_f32(shape: &[usize], v: &[f32]) -> Vec<u8> {
    let shape_s = match shape {
        [n] => format!("({n},)"),
        _ => format!("({})", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let mut h = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape_s}, }}");
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(h.as_bytes());
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

#[test]
fn data_files_are_validated_with_the_position_of_the_problem() {
    use chi_nn::data::{glove_npy_from_bytes, idx, ImageSet};
    let words = b"the\nof\n";
    assert!(glove_npy_from_bytes(&npy_f32(&[2, 2], &[0.1, 0.2, 0.3, 0.4]), words).is_ok());
    let e = glove_npy_from_bytes(&npy_f32(&[2, 2], &[0.1, 0.2, f32::NAN, 0.4]), words).unwrap_err().to_string();
    assert!(e.contains("[1, 0]") && e.contains("'of'") && e.contains("finite"), "{e}");
    let e = glove_npy_from_bytes(&npy_f32(&[2, 2], &[0.1, f32::INFINITY, 0.3, 0.4]), words).unwrap_err().to_string();
    assert!(e.contains("[0, 1]") && e.contains("inf"), "{e}");
    let e = glove_npy_from_bytes(&npy_f32(&[2, 0], &[]), words).unwrap_err().to_string();
    assert!(e.contains("dimension 0"), "{e}");
    // MNIST-layout splits: image size, labels in range, every class present, not empty.
    let set = |rows: usize, labels: Vec<u8>| ImageSet { n: labels.len(), rows, cols: rows, pixels: vec![0.0; labels.len() * rows * rows], labels };
    let (im, lb) = (Path::new("imgs"), Path::new("labels"));
    assert!(idx::check_mnist_split(&set(28, (0..10).collect()), im, lb).is_ok());
    let e = idx::check_mnist_split(&set(28, vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12]), im, lb).unwrap_err().to_string();
    assert!(e.contains("labels") && e.contains("label 12 of example 10") && e.contains("byte 18"), "{e}");
    let e = idx::check_mnist_split(&set(28, (0..9).collect()), im, lb).unwrap_err().to_string();
    assert!(e.contains("class 9 never occurs"), "{e}");
    let e = idx::check_mnist_split(&set(27, (0..10).collect()), im, lb).unwrap_err().to_string();
    assert!(e.contains("imgs") && e.contains("27×27"), "{e}");
    assert!(idx::check_mnist_split(&set(28, vec![]), im, lb).unwrap_err().to_string().contains("no images"));
}

#[test]
fn a_dataset_with_labels_out_of_range_or_non_finite_inputs_is_an_error() {
    use chi_nn::dataset::{Dataset, Inputs, Split, Targets, Task};
    let split = |x: Vec<f32>, y: Vec<usize>| Split { inputs: Inputs::Dense { x, shape: vec![1] }, targets: Targets::Classes(y) };
    let ds = |train: Split, test: Split| Dataset { name: "t".into(), task: Task::Classification { classes: 2 }, train, valid: None, test, schema: None };
    assert!(train::check_dataset("t", &ds(split(vec![0.0, 1.0], vec![0, 1]), split(vec![0.5], vec![1]))).is_ok());
    let e = train::check_dataset("t", &ds(split(vec![0.0, 1.0], vec![0, 1]), split(vec![0.5], vec![2]))).unwrap_err();
    assert!(e.contains("test label 2 of example 0") && e.contains("2 classes"), "{e}");
    let e = train::check_dataset("t", &ds(split(vec![0.0, f32::NAN], vec![0, 1]), split(vec![0.5], vec![1]))).unwrap_err();
    assert!(e.contains("training input value 1 is NaN"), "{e}");
    let e = train::check_dataset("t", &ds(split(vec![0.0, 1.0], vec![0, 1]), split(vec![], vec![]))).unwrap_err();
    assert!(e.contains("test split is empty"), "{e}");
    let e = train::check_dataset("t", &ds(split(vec![0.0, 1.0], vec![0, 0]), split(vec![0.5], vec![1]))).unwrap_err();
    assert!(e.contains("class 1 of 2 never occurs"), "{e}");
}

/// `chi ARGS` run in `dir` (for the default `--out runs`) with `env` set.
fn chi_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(chi_bin());
    c.current_dir(dir).args(args).env_remove("CHI_MAX_TENSOR_ELEMENTS");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap_or_else(|e| panic!("cannot run chi {args:?}: {e}"))
}

#[test]
fn two_runs_in_sequence_in_the_default_directory_keep_both_runs_checkpoints() {
    let root = tmp("default-out");
    let args = |steps: &'static str, extra: &[&'static str]| {
        let mut a = vec!["train", "--steps", steps, "--checkpoint-every", "10", "--eval-every", "10"];
        a.extend_from_slice(SMALL);
        a.extend_from_slice(extra);
        a
    };
    let o = chi_in(&root, &args("20", &[]), &[]);
    assert!(o.status.success(), "{}", text(&o));
    let first = snapshot(&root.join("runs"));
    fails(chi_in(&root, &args("30", &["--dataset", "xor-noise"]), &[]), "a second run in ./runs", &["already holds a run"]);
    let o = chi_in(&root, &args("30", &["--dataset", "xor-noise", "--overwrite"]), &[]);
    assert!(o.status.success(), "{}", text(&o));
    let old: Vec<PathBuf> = std::fs::read_dir(&root).unwrap().flatten().map(|e| e.path()).filter(|p| p.to_string_lossy().contains("runs.old-")).collect();
    assert_eq!(old.len(), 1, "{old:?}");
    assert_eq!(snapshot(&old[0]), first, "the first run's files changed");
    let e = ok(&["eval", "--checkpoint", s(&old[0].join("checkpoints/step-00000020.ckpt.safetensors"))]);
    assert!(e.contains("on spirals") && e.contains("at step 20"), "{e}");
    let o = chi_in(&root, &["eval"], &[]);
    let e = text(&o);
    assert!(o.status.success() && e.contains("on xor-noise") && e.contains("at step 30"), "{e}");
    let _ = std::fs::remove_dir_all(&root);
}

/// Every file under `dir` whose name marks an unfinished atomic write (`.NAME.tmp-PID`).
fn temporaries(dir: &Path) -> Vec<PathBuf> {
    snapshot(dir).into_keys().filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().contains(".tmp"))).collect()
}

#[test]
fn a_file_size_limit_is_an_error_that_leaves_no_temporary_file() {
    let root = tmp("fsize");
    let out = root.join("run");
    // The shell's `ulimit -f 8` (8 blocks of 512 bytes) lets the run's small files through and
    // stops the first checkpoint (tens of KiB): the write must fail with an error naming the
    // file, not kill chi with SIGXFSZ half-way through a temporary file.
    let args = ["train", "--out", s(&out), "--steps", "10", "--checkpoint-every", "10", "--hidden", "64", "--quiet", "--no-plots"];
    let o = Command::new("sh").arg("-c").arg("ulimit -f 8 && exec \"$0\" \"$@\"").arg(chi_bin()).args(&args).output().unwrap();
    let t = fails(o, "train under ulimit -f 8", &["step-00000010.ckpt.safetensors", "File too large"]);
    assert!(temporaries(&out).is_empty(), "temporary files left: {:?}\n{t}", temporaries(&out));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_full_stdout_is_an_error_not_a_panic() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else { return };
    let o = Command::new(chi_bin()).args(["train", "--list"]).stdout(full).output().unwrap();
    let t = fails(o, "train --list > /dev/full", &["failed printing to stdout"]);
    assert!(t.contains("No space left"), "{t}");
}

#[test]
fn repetition_and_size_flags_of_every_subcommand_have_ranges() {
    let out = tmp("subflags");
    let o = s(&out);
    let max = "18446744073709551615";
    let cases: &[&[&str]] = &[
        &["--out", o, "reproduce", "ca-nn-xor", "--quick", "--runs", max],
        &["--out", o, "reproduce", "ca-nn-xor", "--quick", "--runs", "0"],
        &["bench", "gemm", "--sizes", "8", "--reps", "0"],
        &["bench", "gemm", "--sizes", "8", "--reps", max],
        &["bench", "tape", "--steps", "10", "--reps", "0"],
        &["bench", "tape", "--steps", "10", "--reps", max],
        &["bench", "tape", "--steps", max, "--reps", "1"],
        &["gradcheck", "--op", "add", "--instances", "0"],
        &["gradcheck", "--op", "add", "--instances", max],
    ];
    for a in cases {
        // The out-of-range flag (the one before the value 0 or 2^64 − 1) and its range are named.
        let at = a.iter().rposition(|x| *x == "0" || *x == max).unwrap();
        fails_with(a, &[a[at - 1], "not in"]);
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn unknown_dataset_and_model_options_are_errors() {
    let out = tmp("options");
    let cfg = out.join("c.toml");
    for (toml, needles) in [
        ("[data.options]\nseq_lenn = 3\n", &["seq_lenn", "spirals"][..]),
        ("[model_options.options]\nembed = 3\n", &["embed", "mlp"][..]),
        // A file given to a synthetic dataset is an error, not silently replaced by spirals.
        ("[data]\npath = \"moons.csv\"\n", &["moons.csv", "spirals", "built-in dataset reads no file"][..]),
        // Keys of a constant schedule (also inside a warmup) and of [block] are checked too.
        ("[schedule]\nkind = \"constant\"\ngamma = 0.5\n", &["gamma"][..]),
        ("[schedule]\nkind = \"warmup\"\nsteps = 2\n[schedule.after]\nkind = \"constant\"\ntotal_steps = 3\n", &["total_steps"][..]),
        ("[block]\nem_steps = 5\nblocks = [[\"hidden\"], [\"output\"]]\nem_step = 3\n", &["em_step"][..]),
        // Block settings that would switch the schedule off, or contradict themselves.
        ("[block]\nem_steps = 5\nblocks = [[\"hidden\"]]\n", &["em_steps, blocks", "would do nothing"][..]),
        ("[block]\nem_steps = 5\n", &["would do nothing"][..]),
        ("[block]\nblocks = [[\"hidden\"], [\"output\"]]\n", &["would do nothing"][..]),
        ("[block]\nem_steps = 5\nblocks = [[], [\"output\"]]\n", &["block 1 is empty"][..]),
        ("[block]\nem_steps = 5\nblocks = [[\"hidden\"], [\"hidden\"]]\n", &["in two blocks"][..]),
    ] {
        std::fs::write(&cfg, toml).unwrap();
        fails_with(&["train", "--out", s(&out.join("run")), "--config", s(&cfg), "--steps", "2"], needles);
    }
    assert!(!out.join("run").join("checkpoints").exists());
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn an_experiment_on_too_small_a_data_set_is_an_error_naming_the_file() {
    let root = tmp("smalldata");
    let data = root.join("data");
    std::fs::create_dir_all(data.join("pang-lee")).unwrap();
    std::fs::write(data.join("pang-lee/reviews.csv"), "").unwrap();
    std::fs::write(data.join("pang-lee/sentences.csv"), "").unwrap();
    let o = chi_in(&root, &["--out", s(&root.join("out")), "reproduce", "ca-bsfe-reviews", "--quick"], &[("CHI_DATA", s(&data))]);
    fails(o, "reproduce ca-bsfe-reviews on empty files", &["reviews.csv", "needs at least"]);
    // Well-formed Fashion-MNIST files (raw IDX) of ten images per split: every class present,
    // but fewer images than one training batch.
    let fm = data.join("fashion-mnist");
    std::fs::create_dir_all(&fm).unwrap();
    for split in ["train", "t10k"] {
        let mut images = [0x803u32, 10, 28, 28].iter().flat_map(|v| v.to_be_bytes()).collect::<Vec<u8>>();
        images.extend((0..10 * 784).map(|i| (i % 251) as u8));
        std::fs::write(fm.join(format!("{split}-images-idx3-ubyte.gz")), images).unwrap();
        let mut labels = [0x801u32, 10].iter().flat_map(|v| v.to_be_bytes()).collect::<Vec<u8>>();
        labels.extend(0..10u8);
        std::fs::write(fm.join(format!("{split}-labels-idx1-ubyte.gz")), labels).unwrap();
    }
    let o = chi_in(&root, &["--out", s(&root.join("out")), "reproduce", "ca-res-fashion", "--quick"], &[("CHI_DATA", s(&data))]);
    fails(o, "reproduce ca-res-fashion on ten images", &["Fashion-MNIST", "needs at least 100 training"]);
    let _ = std::fs::remove_dir_all(&root);
}

/// A folder without a run that holds files a run would write (the user's own `data.json`, a
/// plot) is not taken, with or without `--overwrite`, and is left exactly as it was (no lock
/// file either); other files of the user's may share a run's directory. A run is not written
/// into the text folder it trains on.
#[test]
fn a_users_folder_is_not_written_over_and_a_run_stays_out_of_its_data_folder() {
    let root = tmp("userfolder");
    let proj = root.join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("data.json"), "{\"my\": \"settings\"}").unwrap();
    std::fs::write(proj.join("loss.svg"), "<svg/>").unwrap();
    std::fs::write(proj.join("notes.txt"), "mine").unwrap();
    let before = snapshot(&proj);
    for extra in [&[][..], &["--overwrite"][..]] {
        fails(chi(&train_args(s(&proj), "5", extra)), "a run into the user's folder", &["holds no chi run", "data.json", "loss.svg"]);
        assert_eq!(snapshot(&proj), before, "the user's folder changed");
        assert!(!proj.join(".chi.lock").exists(), "a refused run left its lock file");
        assert_eq!(std::fs::read_dir(&root).unwrap().count(), 1, "--overwrite moved the user's folder");
    }
    // A folder of the user's other files (here a config) is fine.
    let mine = root.join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "mine").unwrap();
    ok(&train_args(s(&mine), "5", &[]));
    assert_eq!(std::fs::read_to_string(mine.join("notes.txt")).unwrap(), "mine");
    // A text folder as data: --out the folder itself or a folder inside it is refused.
    let data = root.join("texts");
    crate::user_data::two_class_text_folder(&data);
    let texts = snapshot(&data);
    for out in [data.clone(), data.join("pos").join("run1")] {
        fails(chi(&["train", "--data", s(&data), "--out", s(&out), "--steps", "3", "--quiet", "--no-plots"]), "a run inside its data folder", &["is inside the data folder"]);
    }
    assert_eq!(snapshot(&data), texts, "the data folder changed");
    assert!(!data.join("pos").join("run1").exists());
    let _ = std::fs::remove_dir_all(&root);
}
