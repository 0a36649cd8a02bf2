//! `mpirun -n 2 chi embed train` on this machine (built with `--features mpi`): the ranks train
//! word2vec on shards of a corpus with periodic averaging, rank 0 alone writes the vectors, the
//! vectors learn a planted structure, and a run repeats bit for bit. Skipped with a message when
//! `mpirun` is absent.
#![cfg(feature = "mpi")]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Output;

mod mpi_common;
use mpi_common::{mpirun, mpirun_present, run};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chi-mpi-words-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Four groups of six words; a sentence draws its eight words from one group, so words of a
/// group share contexts and words of different groups never co-occur. A fixed linear
/// congruential generator keeps the file the same on every run.
fn planted_corpus(path: &Path) -> Vec<Vec<String>> {
    let groups: Vec<Vec<String>> = (0..4).map(|g| (0..6).map(|k| format!("g{g}w{k}")).collect()).collect();
    let mut state: u64 = 12345;
    let mut next = |n: usize| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((state >> 33) % n as u64) as usize
    };
    let mut text = String::new();
    for _ in 0..3000 {
        let g = next(groups.len());
        let words: Vec<&str> = (0..8).map(|_| groups[g][next(6)].as_str()).collect();
        text.push_str(&words.join(" "));
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
    groups
}

/// Vectors of a word2vec text file.
fn load(path: &Path) -> HashMap<String, Vec<f64>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<usize> = lines.next().unwrap().split_whitespace().map(|x| x.parse().unwrap()).collect();
    let map: HashMap<String, Vec<f64>> = lines
        .map(|l| {
            let mut f = l.split_whitespace();
            let w = f.next().unwrap().to_string();
            (w, f.map(|x| x.parse().unwrap()).collect())
        })
        .collect();
    assert_eq!(map.len(), header[0]);
    assert!(map.values().all(|v| v.len() == header[1] && v.iter().all(|x| x.is_finite())));
    map
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let n = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (n(a) * n(b))
}

fn train(dir: &Path, corpus: &Path, out: &str, extra: &[&str]) -> Output {
    let mut c = mpirun(2);
    c.current_dir(dir);
    c.args(["--seed", "3", "embed", "train", "--model", "sgns", "--corpus"]).arg(corpus);
    c.args(["--dim", "20", "--window", "3", "--min-count", "1", "--epochs", "5", "--quiet", "--vectors-out", out]);
    c.args(extra);
    run(c)
}

#[test]
fn two_ranks_train_word_vectors_that_rank_zero_alone_writes() {
    if !mpirun_present() {
        return;
    }
    let dir = tmp("train");
    let corpus = dir.join("planted.txt");
    let groups = planted_corpus(&corpus);
    let out_dir = dir.join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let o = train(&out_dir, &corpus, "vectors.txt", &["--sync-words", "5000"]);
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout.matches("wrote ").count(), 1, "rank 0 alone reports writing:\n{stdout}");
    assert!(stderr.contains("2 ranks, averaging every 5000 words"), "{stderr}");
    let files: Vec<String> = std::fs::read_dir(&out_dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(files, ["vectors.txt"], "one output file");
    // Same-group similarity beats cross-group similarity, and each group's first word has its
    // nearest neighbour in its own group.
    let v = load(&out_dir.join("vectors.txt"));
    assert_eq!(v.len(), 24);
    let (mut same, mut ns, mut diff, mut nd) = (0.0, 0, 0.0, 0);
    for (gi, g) in groups.iter().enumerate() {
        for (hi, h) in groups.iter().enumerate() {
            for a in g {
                for b in h {
                    if a != b {
                        let s = cosine(&v[a], &v[b]);
                        if gi == hi {
                            (same, ns) = (same + s, ns + 1);
                        } else {
                            (diff, nd) = (diff + s, nd + 1);
                        }
                    }
                }
            }
        }
    }
    let (same, diff) = (same / ns as f64, diff / nd as f64);
    assert!(same > diff + 0.3, "same-group {same:.3}, cross-group {diff:.3}");
    for g in &groups {
        let best = v.keys().filter(|w| *w != &g[0]).max_by(|a, b| cosine(&v[&g[0]], &v[*a]).total_cmp(&cosine(&v[&g[0]], &v[*b]))).unwrap();
        assert!(g.contains(best), "{} nearest {best}", g[0]);
    }
    // One thread per rank and a deterministic average: a second run writes the same file.
    train(&out_dir, &corpus, "again.txt", &["--sync-words", "5000"]);
    assert_eq!(std::fs::read(out_dir.join("vectors.txt")).unwrap(), std::fs::read(out_dir.join("again.txt")).unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn glove_and_bad_periods_are_refused_on_several_ranks() {
    if !mpirun_present() {
        return;
    }
    let dir = tmp("refuse");
    let corpus = dir.join("planted.txt");
    planted_corpus(&corpus);
    for (extra, message) in [(&["--model", "glove"][..], "GloVe does not train on several processes"), (&["--sync-words", "10"][..], "--sync-words 10 is out of range")] {
        let mut c = mpirun(2);
        c.current_dir(&dir);
        c.args(["embed", "train", "--corpus"]).arg(&corpus).args(["--quiet", "--vectors-out", "v.txt"]).args(extra);
        let o = c.output().unwrap();
        assert!(!o.status.success());
        assert!(String::from_utf8_lossy(&o.stderr).contains(message), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(!dir.join("v.txt").exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
