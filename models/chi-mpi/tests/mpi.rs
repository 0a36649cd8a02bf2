//! `mpirun -n 2 chi-mpi …` on this machine (`-p chi-mpi --features mpi`; `scripts/install-mpi.sh`
//! installs Open MPI): data-parallel training gives the single-process answer, a killed rank ends
//! the job in bounded time with the rank named, and the run resumes from its last checkpoint.
//! Skipped with a message when `mpirun` is absent.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod mpi_common;
use mpi_common::{mpirun, mpirun_present, run, CHI};

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

/// `mpirun -n 2 chi-mpi train --batch-size B` against `chi train --batch-size 2B`: the same model
/// in float32 up to rounding, MLP (Adam) and LSTM (SGD). Float32 gradients of a batch of 32 and
/// of two halves differ in the last bits; Adagrad's first steps, `g / √(g² + ε)`, turn that into
/// a visible difference for gradients that nearly cancel, so the LSTM case uses SGD (the float64
/// check above has no such limit). Its tolerance is set by rounding alone: the same
/// single-process LSTM run built with two summation orders of the same products (the fused
/// sequence adding its inputs before or after `h·W_hh`) ends 4.1e-4 apart after these 60 steps at
/// lr 0.5, while training on one rank's half of each batch alone ends 0.44 away.
#[test]
fn chi_train_two_ranks_equal_one_process_with_the_doubled_batch() {
    if !mpirun_present() {
        return;
    }
    for (model, dataset, steps, optim, tol) in [("mlp", "spirals", "200", "adam", 1e-4), ("lstm", "first-token", "60", "sgd", 1e-3)] {
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

/// The numbers of every unit record in `dir/units`, by file and key, decoded from their hex bits.
fn unit_numbers(dir: &Path) -> Vec<(String, Vec<f64>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir.join("units")).unwrap() {
        let path = e.unwrap().path();
        let rec: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        for (k, v) in rec["body"]["nums"].as_object().unwrap() {
            let xs = v.as_array().unwrap().iter().map(|x| f64::from_bits(u64::from_str_radix(x.as_str().unwrap(), 16).unwrap())).collect();
            out.push((format!("{}:{k}", path.file_name().unwrap().to_string_lossy()), xs));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Largest relative difference between two sets of unit numbers (same files, keys and lengths).
fn largest_relative_difference(a: &[(String, Vec<f64>)], b: &[(String, Vec<f64>)]) -> f64 {
    assert_eq!(a.iter().map(|x| &x.0).collect::<Vec<_>>(), b.iter().map(|x| &x.0).collect::<Vec<_>>());
    let mut worst = 0.0f64;
    for ((k, x), (_, y)) in a.iter().zip(b) {
        assert_eq!(x.len(), y.len(), "{k}");
        for (p, q) in x.iter().zip(y) {
            worst = worst.max((p - q).abs() / p.abs().max(1e-12));
        }
    }
    worst
}

/// `mpirun -n 2 chi-mpi reproduce ca-bsfe-synthetic` (float64, batches of 16 split 8 + 8) against
/// one process: the same units with the same numbers to 1e-12 (a different summation order of
/// float64 gradients), rank 0 alone writing them; `--resume` under mpirun reuses every unit.
#[test]
fn reproduce_on_two_ranks_gives_the_one_process_numbers() {
    if !mpirun_present() {
        return;
    }
    let (one, two) = (tmp("repro-one"), tmp("repro-two"));
    let mut c = Command::new(CHI);
    c.args(["--out", one.to_str().unwrap(), "reproduce", "ca-bsfe-synthetic", "--quick", "--json"]);
    let single = run(c);
    let mut c = mpirun(2);
    c.args(["--out", two.to_str().unwrap(), "reproduce", "ca-bsfe-synthetic", "--quick", "--json"]);
    let double = run(c);
    assert!(String::from_utf8_lossy(&double.stderr).contains("trained data-parallel on 2 processes"));
    // One table, from rank 0.
    assert_eq!(String::from_utf8_lossy(&single.stdout).lines().count(), String::from_utf8_lossy(&double.stdout).lines().count());
    let sub = |d: &Path| d.join("reproduce").join("ca-bsfe-synthetic");
    let (a, b) = (unit_numbers(&sub(&one)), unit_numbers(&sub(&two)));
    assert!(!a.is_empty());
    let worst = largest_relative_difference(&a, &b);
    assert!(worst < 1e-12, "largest relative difference {worst:e}");
    // The rank count is part of a unit's configuration: a one-process record is not reused by two ranks…
    let mut c = mpirun(2);
    c.args(["--out", one.to_str().unwrap(), "reproduce", "ca-bsfe-synthetic", "--quick", "--json", "--resume"]);
    let o = run(c);
    assert!(String::from_utf8_lossy(&o.stderr).contains("reused 0 of"), "{}", String::from_utf8_lossy(&o.stderr));
    // …and a two-rank record is, by two ranks, with the same table.
    let mut c = mpirun(2);
    c.args(["--out", two.to_str().unwrap(), "reproduce", "ca-bsfe-synthetic", "--quick", "--json", "--resume"]);
    let again = run(c);
    let err = String::from_utf8_lossy(&again.stderr);
    let n = std::fs::read_dir(sub(&two).join("units")).unwrap().count();
    assert!(err.contains(&format!("reused {n} of {n} units, ran 0")), "{err}");
    assert_eq!(again.stdout, double.stdout);
    let _ = std::fs::remove_dir_all(&one);
    let _ = std::fs::remove_dir_all(&two);
}

/// Experiments beyond the trainer's: `ca-att-synthetic` (float64, the trainer with shards cut
/// from a sampled batch) gives one process's numbers to 1e-12; `rationales` (a training loop of
/// chi-rcnn's own, REINFORCE masks drawn per rank) runs on two ranks with its rank-count unit
/// records and one table.
#[test]
fn reproduce_loops_of_their_own_on_two_ranks() {
    if !mpirun_present() {
        return;
    }
    let (one, two) = (tmp("own-one"), tmp("own-two"));
    let mut c = Command::new(CHI);
    c.args(["--out", one.to_str().unwrap(), "reproduce", "ca-att-synthetic", "--quick", "--json"]);
    run(c);
    let mut c = mpirun(2);
    c.args(["--out", two.to_str().unwrap(), "reproduce", "ca-att-synthetic", "--quick", "--json"]);
    run(c);
    let sub = |d: &Path, e: &str| d.join("reproduce").join(e);
    let worst = largest_relative_difference(&unit_numbers(&sub(&one, "ca-att-synthetic")), &unit_numbers(&sub(&two, "ca-att-synthetic")));
    assert!(worst < 1e-12, "largest relative difference {worst:e}");
    let mut c = mpirun(2);
    c.args(["--out", two.to_str().unwrap(), "reproduce", "rationales", "--quick", "--json"]);
    let o = run(c);
    assert!(String::from_utf8_lossy(&o.stderr).contains("trained data-parallel on 2 processes"), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = String::from_utf8_lossy(&o.stdout).lines().filter(|l| l.contains("\"experiment\":\"rationales\"")).count();
    assert!(rows > 0, "rank 0 prints the table");
    let units = std::fs::read_dir(sub(&two, "rationales").join("units")).unwrap().count();
    assert!(units > 0);
    for e in std::fs::read_dir(sub(&two, "rationales").join("units")).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        assert!(text.contains("ranks=2"), "a unit record names its rank count");
    }
    let _ = std::fs::remove_dir_all(&one);
    let _ = std::fs::remove_dir_all(&two);
}

/// The tagger and the RCNN language model (float32 loops of their own, no random masks) on the
/// Brown corpus, two ranks against one process: the same numbers up to float32 rounding.
/// Skipped without the corpus.
#[test]
fn reproduce_brown_loops_on_two_ranks_when_data_is_present() {
    if !mpirun_present() {
        return;
    }
    let data = std::env::var_os("CHI_DATA").map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data"));
    if !data.join("brown").exists() {
        eprintln!("skipped: no Brown corpus under {} (scripts/fetch-data.sh)", data.display());
        return;
    }
    for e in ["pos-brown", "rcnn-lm"] {
        let (one, two) = (tmp(&format!("{e}-one")), tmp(&format!("{e}-two")));
        let mut c = Command::new(CHI);
        c.env("CHI_DATA", &data).args(["--out", one.to_str().unwrap(), "reproduce", e, "--quick", "--json"]);
        run(c);
        let mut c = mpirun(2);
        c.env("CHI_DATA", &data).args(["--out", two.to_str().unwrap(), "reproduce", e, "--quick", "--json"]);
        run(c);
        let sub = |d: &Path| d.join("reproduce").join(e);
        let (a, b) = (unit_numbers(&sub(&one)), unit_numbers(&sub(&two)));
        // Throughputs are timings, not results.
        let keep = |v: Vec<(String, Vec<f64>)>| v.into_iter().filter(|(k, _)| !k.contains("tokens_per_s")).collect::<Vec<_>>();
        let worst = largest_relative_difference(&keep(a), &keep(b));
        // Accuracies move in steps of one token in 9,119; perplexities by float32 rounding.
        assert!(worst < 1e-3, "{e}: largest relative difference {worst:e}");
        let _ = std::fs::remove_dir_all(&one);
        let _ = std::fs::remove_dir_all(&two);
    }
}

/// The rationale model on the Pang & Lee reviews (a loop of its own whose generator samples
/// masks per rank) on two ranks: it runs, rank 0 alone prints the table, and its unit records
/// name the rank count. Skipped without the reviews and GloVe.
#[test]
fn reproduce_rationales_reviews_on_two_ranks_when_data_is_present() {
    if !mpirun_present() {
        return;
    }
    let data = std::env::var_os("CHI_DATA").map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data"));
    if !data.join("pang-lee").exists() || !data.join("glove").exists() {
        eprintln!("skipped: no Pang & Lee reviews or GloVe under {} (scripts/fetch-data.sh)", data.display());
        return;
    }
    let out = tmp("rationales-reviews-two");
    let mut c = mpirun(2);
    c.env("CHI_DATA", &data).args(["--out", out.to_str().unwrap(), "reproduce", "rationales-reviews", "--quick", "--json"]);
    let o = run(c);
    assert!(String::from_utf8_lossy(&o.stderr).contains("trained data-parallel on 2 processes"));
    let units = out.join("reproduce").join("rationales-reviews").join("units");
    let mut n = 0;
    for e in std::fs::read_dir(&units).unwrap() {
        assert!(std::fs::read_to_string(e.unwrap().path()).unwrap().contains("ranks=2"));
        n += 1;
    }
    assert!(n >= 3, "search units and the final run");
    assert!(out.join("reproduce").join("rationales-reviews").join("rationales.html").exists());
    let _ = std::fs::remove_dir_all(&out);
}

/// Full-batch experiments run in one process only, and say so.
#[test]
fn reproduce_refuses_full_batch_experiments_on_several_ranks() {
    if !mpirun_present() {
        return;
    }
    let out = tmp("repro-refuse");
    let mut c = mpirun(2);
    c.args(["--out", out.to_str().unwrap(), "reproduce", "ca-rnn-synthetic", "--quick"]);
    let o = c.output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("ca-rnn-synthetic runs in one process") && err.contains("ca-bsfe-synthetic"), "{err}");
    let _ = std::fs::remove_dir_all(&out);
}

/// A float32 experiment on real data (Fashion-MNIST block features, batches of 100 split 50 + 50):
/// the numbers of one process to float32 rounding. Skipped without the data.
#[test]
fn reproduce_float32_experiment_on_two_ranks_when_data_is_present() {
    if !mpirun_present() {
        return;
    }
    let data = std::env::var_os("CHI_DATA").map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data"));
    if !data.join("fashion-mnist").exists() {
        eprintln!("skipped: no Fashion-MNIST under {} (scripts/fetch-data.sh)", data.display());
        return;
    }
    let (one, two) = (tmp("repro32-one"), tmp("repro32-two"));
    let mut c = Command::new(CHI);
    c.env("CHI_DATA", &data).args(["--out", one.to_str().unwrap(), "reproduce", "ca-res-tabular", "--quick", "--json"]);
    run(c);
    let mut c = mpirun(2);
    c.env("CHI_DATA", &data).args(["--out", two.to_str().unwrap(), "reproduce", "ca-res-tabular", "--quick", "--json"]);
    run(c);
    let sub = |d: &Path| d.join("reproduce").join("ca-res-tabular");
    let worst = largest_relative_difference(&unit_numbers(&sub(&one)), &unit_numbers(&sub(&two)));
    // Accuracies move in steps of 1/500: a difference of one image would be 2e-3 relative.
    assert!(worst < 1e-3, "largest relative difference {worst:e}");
    let _ = std::fs::remove_dir_all(&one);
    let _ = std::fs::remove_dir_all(&two);
}

/// The NMT experiment (float32 LSTM encoder-decoder, Bible verses; skipped without them) on two
/// ranks: batches of 8 pairs split 4 + 4, gradients weighted by each share's target tokens (the
/// loss is a mean per token). The softmax-attention variants end within 1e-5 of one process
/// (measured: ≤ 5e-7). The CA-ATT variants are checked to run: after 20 Adagrad steps their
/// float32 rounding differences have grown to a few per cent of the quick metrics (Adagrad's
/// first steps, g / √(g² + ε), turn last-bit differences of near-zero gradients into full steps).
#[test]
fn reproduce_nmt_on_two_ranks_when_data_is_present() {
    if !mpirun_present() {
        return;
    }
    if let Err(e) = chi_nn::data::require(chi_nn::data::Dataset::Bible) {
        eprintln!("skipped: {e}");
        return;
    }
    let (one, two) = (tmp("nmt-one"), tmp("nmt-two"));
    let mut c = Command::new(CHI);
    c.args(["--threads", "1", "--out", one.to_str().unwrap(), "reproduce", "nmt-attention", "--quick", "--runs", "1", "--json"]);
    run(c);
    let mut c = mpirun(2);
    c.args(["--threads", "1", "--out", two.to_str().unwrap(), "reproduce", "nmt-attention", "--quick", "--runs", "1", "--json"]);
    run(c);
    let sub = |d: &Path| d.join("reproduce").join("nmt-attention");
    // Timings differ between runs by nature.
    let keep = |v: Vec<(String, Vec<f64>)>| -> Vec<(String, Vec<f64>)> { v.into_iter().filter(|(k, _)| !k.contains("per_sec")).collect() };
    let (a, b) = (keep(unit_numbers(&sub(&one))), keep(unit_numbers(&sub(&two))));
    let softmax = |v: &[(String, Vec<f64>)]| -> Vec<(String, Vec<f64>)> { v.iter().filter(|(k, _)| !k.starts_with("ca-att")).cloned().collect() };
    let (sa, sb) = (softmax(&a), softmax(&b));
    assert!(sa.len() > 10 && sa.len() < a.len(), "{} of {} values are softmax-attention ones", sa.len(), a.len());
    let worst = largest_relative_difference(&sa, &sb);
    assert!(worst < 1e-5, "largest relative difference {worst:e}");
    assert_eq!(a.len(), b.len());
    assert!(b.iter().all(|(_, v)| v.iter().all(|x| x.is_finite())));
    let _ = std::fs::remove_dir_all(&one);
    let _ = std::fs::remove_dir_all(&two);
}
