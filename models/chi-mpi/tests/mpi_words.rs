//! `mpirun -n 2 chi-mpi embed train` on this machine (`-p chi-mpi --features mpi`): the ranks train
//! word2vec on shards of a corpus with periodic averaging (GloVe on shares of the co-occurrence
//! entries, adding up their changes), rank 0 alone writes the vectors, the
//! vectors learn a planted structure, and a run repeats bit for bit. Skipped with a message when
//! `mpirun` is absent.

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

/// Writes the planted corpus of [`chi_words::eval::planted_corpus`] to `path`; returns its groups.
fn planted_corpus(path: &Path) -> Vec<Vec<String>> {
    let (text, groups) = chi_words::eval::planted_corpus(12345, 3000);
    std::fs::write(path, text).unwrap();
    groups
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
    let v = chi_words::io::load_word2vec_text(&out_dir.join("vectors.txt")).unwrap();
    assert_eq!(v.len(), 24);
    let (same, diff) = chi_words::eval::group_separation(&groups, |a, b| v.similarity(a, b).unwrap());
    assert!(same > diff + 0.3, "same-group {same:.3}, cross-group {diff:.3}");
    for g in &groups {
        let nn = v.nearest(&g[0], 1).unwrap();
        assert!(g.contains(&nn[0].0), "{} nearest {}", g[0], nn[0].0);
    }
    // One thread per rank and a deterministic average: a second run writes the same file.
    train(&out_dir, &corpus, "again.txt", &["--sync-words", "5000"]);
    assert_eq!(std::fs::read(out_dir.join("vectors.txt")).unwrap(), std::fs::read(out_dir.join("again.txt")).unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

/// GloVe on two ranks: each trains half of the co-occurrence entries and they add up their
/// changes; rank 0 alone writes, the vectors learn the planted groups, and a run repeats bit
/// for bit.
#[test]
fn two_ranks_train_glove_that_rank_zero_alone_writes() {
    if !mpirun_present() {
        return;
    }
    let dir = tmp("glove");
    let corpus = dir.join("planted.txt");
    let groups = planted_corpus(&corpus);
    let run_glove = |out: &str| {
        let mut c = mpirun(2);
        c.current_dir(&dir);
        c.args(["--seed", "3", "embed", "train", "--model", "glove", "--corpus"]).arg(&corpus);
        c.args(["--dim", "16", "--window", "4", "--min-count", "1", "--epochs", "20", "--quiet", "--sync-entries", "10000", "--vectors-out", out]);
        run(c)
    };
    let o = run_glove("glove.txt");
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout.matches("wrote ").count(), 1, "rank 0 alone reports writing:\n{stdout}");
    assert!(stderr.contains("2 ranks, each on 1/2 of the entries"), "{stderr}");
    let v = chi_words::io::load_word2vec_text(&dir.join("glove.txt")).unwrap();
    let (same, diff) = chi_words::eval::group_separation(&groups, |a, b| v.similarity(a, b).unwrap());
    assert!(same > diff + 0.3, "same-group {same:.3}, cross-group {diff:.3}");
    run_glove("again.txt");
    assert_eq!(std::fs::read(dir.join("glove.txt")).unwrap(), std::fs::read(dir.join("again.txt")).unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_periods_are_refused_on_several_ranks() {
    if !mpirun_present() {
        return;
    }
    let dir = tmp("refuse");
    let corpus = dir.join("planted.txt");
    planted_corpus(&corpus);
    for (extra, message) in [
        (&["--model", "glove", "--sync-words", "5000"][..], "GloVe's is --sync-entries"),
        (&["--model", "glove", "--sync-entries", "10"][..], "--sync-entries 10 is out of range"),
        (&["--sync-entries", "20000"][..], "word2vec's is --sync-words"),
        (&["--sync-words", "10"][..], "--sync-words 10 is out of range"),
    ] {
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
