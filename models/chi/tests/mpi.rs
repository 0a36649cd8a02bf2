//! `mpirun -n 2 chi …` on this machine (built with `--features mpi`; `scripts/install-mpi.sh`
//! installs Open MPI): data-parallel training gives the single-process answer, a killed rank ends
//! the job in bounded time with the rank named, and the run resumes from its last checkpoint.
//! Skipped with a message when `mpirun` is absent.
#![cfg(feature = "mpi")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const CHI: &str = env!("CARGO_BIN_EXE_chi");

fn mpirun_present() -> bool {
    let ok = Command::new("mpirun").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: mpirun not found (scripts/install-mpi.sh installs Open MPI)");
    }
    ok
}

fn mpirun(n: usize) -> Command {
    let mut c = Command::new("mpirun");
    // Open MPI refuses root without these (CI containers run as root).
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c.args(["-n", &n.to_string(), "--oversubscribe", CHI]);
    c
}

fn run(mut c: Command) -> Output {
    let o = c.output().expect("start");
    assert!(o.status.success(), "{c:?} failed:\n{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    o
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chi-mpi-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The tensors of a safetensors file (F32), by name.
fn tensors(path: &Path) -> Vec<(String, Vec<f32>)> {
    let b = std::fs::read(path).unwrap();
    let n = u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
    let h: serde_json::Value = serde_json::from_slice(&b[8..8 + n]).unwrap();
    let mut out: Vec<(String, Vec<f32>)> = h
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| *k != "__metadata__")
        .map(|(k, v)| {
            assert_eq!(v["dtype"], "F32");
            let (s, e) = (v["data_offsets"][0].as_u64().unwrap() as usize, v["data_offsets"][1].as_u64().unwrap() as usize);
            (k.clone(), b[8 + n + s..8 + n + e].chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn max_diff(a: &Path, b: &Path) -> f64 {
    let (a, b) = (tensors(a), tensors(b));
    assert_eq!(a.len(), b.len());
    a.iter().zip(&b).flat_map(|((ka, x), (kb, y))| {
        assert_eq!(ka, kb);
        x.iter().zip(y).map(|(p, q)| (p - q).abs() as f64)
    })
    .fold(0.0, f64::max)
}

#[test]
fn one_process_commands_refuse_to_run_as_several() {
    if !mpirun_present() {
        return;
    }
    let mut c = mpirun(2);
    c.args(["gradcheck"]);
    let o = c.output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("runs in one process"), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn float64_check_two_and_three_ranks() {
    if !mpirun_present() {
        return;
    }
    for n in [2, 3] {
        let mut c = mpirun(n);
        c.args(["dist", "check", "--steps", "25"]);
        let o = run(c);
        let text = String::from_utf8_lossy(&o.stdout);
        assert_eq!(text.matches("largest parameter difference").count(), 2, "{text}");
        assert!(text.contains(&format!("{n} rank(s)")), "{text}");
    }
}

/// `mpirun -n 2 chi train --batch-size B` against `chi train --batch-size 2B`: the same model
/// in float32 up to rounding, MLP (Adam) and LSTM (SGD). Float32 gradients of a batch of 32 and
/// of two halves differ in the last bits; Adagrad's first steps, `g / √(g² + ε)`, turn that into
/// a visible difference for gradients that nearly cancel, so the LSTM case uses SGD (the float64
/// check above has no such limit).
#[test]
fn chi_train_two_ranks_equal_one_process_with_the_doubled_batch() {
    if !mpirun_present() {
        return;
    }
    for (model, dataset, steps, optim, tol) in [("mlp", "spirals", "200", "adam", 1e-4), ("lstm", "first-token", "60", "sgd", 2e-4)] {
        let (one, two) = (tmp(&format!("{model}-1")), tmp(&format!("{model}-2")));
        let args = |out: &Path, batch: &str| -> Vec<String> {
            ["train", "--model", model, "--dataset", dataset, "--steps", steps, "--optim", optim, "--lr", if optim == "sgd" { "0.5" } else { "0.01" }, "--batch-size", batch, "--quiet", "--no-plots", "--out"]
                .iter()
                .map(|s| s.to_string())
                .chain([out.display().to_string()])
                .collect()
        };
        let mut c = Command::new(CHI);
        c.args(args(&one, "32"));
        run(c);
        let mut c = mpirun(2);
        c.args(args(&two, "16"));
        let o = run(c);
        // Rank 0 alone reports and writes.
        assert_eq!(String::from_utf8_lossy(&o.stdout).matches("trained ").count(), 1);
        let d = max_diff(&one.join("model.safetensors"), &two.join("model.safetensors"));
        assert!(d <= tol, "{model}: 2 ranks × 16 vs 1 × 32 differ by {d:e}");
        let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(two.join("summary.json")).unwrap()).unwrap();
        assert_eq!(summary["ranks"], 2);
        let dist: serde_json::Value = serde_json::from_slice(&std::fs::read(two.join("dist.json")).unwrap()).unwrap();
        let share = dist["comm_share"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&share) && dist["steps"].as_u64().unwrap() > 0, "{dist}");
        let _ = std::fs::remove_dir_all(&one);
        let _ = std::fs::remove_dir_all(&two);
    }
}

/// The pid of the process of this job with `OMPI_COMM_WORLD_RANK=rank` (found by a marker in
/// its environment).
fn pid_of_rank(marker: &str, rank: usize) -> Option<u32> {
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(env) = std::fs::read(e.path().join("environ")) else { continue };
        let vars: Vec<&[u8]> = env.split(|&b| b == 0).collect();
        let has = |s: &str| vars.iter().any(|v| *v == s.as_bytes());
        if has(&format!("CHI_MPI_TEST={marker}")) && has(&format!("OMPI_COMM_WORLD_RANK={rank}")) {
            return Some(pid);
        }
    }
    None
}

#[test]
fn a_killed_rank_ends_the_job_naming_it_and_the_run_resumes() {
    if !mpirun_present() {
        return;
    }
    let out = tmp("kill");
    let marker = format!("{}-kill", std::process::id());
    let train = |n: usize, steps: &str, resume: bool| {
        let mut c = mpirun(n);
        c.env("CHI_MPI_TEST", &marker);
        c.args(["train", "--model", "mlp", "--dataset", "spirals", "--steps", steps, "--batch-size", "16", "--checkpoint-every", "500", "--quiet", "--no-plots", "--out"]);
        c.arg(&out);
        if resume {
            c.arg("--resume");
        }
        c
    };
    let mut job = train(2, "60000", false).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // Wait for a checkpoint, then kill rank 1.
    let t0 = Instant::now();
    let ckdir = out.join("checkpoints");
    while std::fs::read_dir(&ckdir).map_or(0, |d| d.count()) == 0 {
        assert!(t0.elapsed() < Duration::from_secs(120), "no checkpoint after 120 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = pid_of_rank(&marker, 1).expect("rank 1 is running");
    Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
    let killed = Instant::now();
    let status = loop {
        if let Some(s) = job.try_wait().unwrap() {
            break s;
        }
        assert!(killed.elapsed() < Duration::from_secs(60), "the job still runs 60 s after rank 1 was killed");
        std::thread::sleep(Duration::from_millis(50));
    };
    let o = job.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!status.success());
    assert!(err.contains("rank 1"), "mpirun's message names the rank:\n{err}");
    eprintln!("job ended {:.1} s after the kill", killed.elapsed().as_secs_f64());
    // The last checkpoint is whole: a single process resumes from it and finishes (a different K).
    let o = run(train(1, "61000", true));
    assert!(String::from_utf8_lossy(&o.stdout).contains("trained mlp"));
    assert!(out.join("model.safetensors").exists());
    let _ = std::fs::remove_dir_all(&out);
}

/// A run stopped at a checkpoint and resumed with the same K ends bitwise where an uninterrupted
/// run ends, dropout included (its masks depend only on seed, rank and step).
#[test]
fn resume_with_the_same_ranks_is_bitwise_an_uninterrupted_run() {
    if !mpirun_present() {
        return;
    }
    let (whole, parts) = (tmp("whole"), tmp("parts"));
    let train = |out: &Path, steps: &str, resume: bool| {
        let mut c = mpirun(2);
        c.args(["train", "--model", "mlp", "--dataset", "spirals", "--dropout", "0.2", "--steps", steps, "--batch-size", "8", "--checkpoint-every", "50", "--quiet", "--no-plots", "--out"]);
        c.arg(out);
        if resume {
            c.arg("--resume");
        }
        run(c);
    };
    train(&whole, "150", false);
    train(&parts, "100", false);
    train(&parts, "150", true);
    assert_eq!(max_diff(&whole.join("model.safetensors"), &parts.join("model.safetensors")), 0.0);
    let _ = std::fs::remove_dir_all(&whole);
    let _ = std::fs::remove_dir_all(&parts);
}
