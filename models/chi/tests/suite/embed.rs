//! `chi embed train / eval / neighbours` end to end on the small corpus chi-words ships, and
//! the bad-input cases: each must end with a clear message and exit code 1, never a panic.

use std::path::PathBuf;
use std::process::{Command, Output};

fn chi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chi")).args(args).output().expect("run chi")
}

fn corpus() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../words/data/small_corpus.txt").display().to_string()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chi-embed-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn fails_with(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(err.contains(needle), "expected {needle:?} in {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn train_eval_neighbours_end_to_end() {
    for model in ["sgns", "cbow", "sg-hs", "cbow-hs", "glove"] {
        let out = tmp(&format!("{model}.txt"));
        let o = chi(&["--seed", "2", "embed", "train", "--model", model, "--corpus", &corpus(), "--dim", "16", "--min-count", "2", "--epochs", "3", "--quiet", "--vectors-out", out.to_str().unwrap()]);
        assert!(o.status.success(), "{model}: {}", String::from_utf8_lossy(&o.stderr));
        let text = std::fs::read_to_string(&out).unwrap();
        let header: Vec<usize> = text.lines().next().unwrap().split(' ').map(|s| s.parse().unwrap()).collect();
        assert_eq!(header[1], 16);
        assert!(header[0] > 50, "{model}: vocabulary {}", header[0]);
        assert_eq!(text.lines().count(), header[0] + 1);
        let n = chi(&["embed", "neighbours", out.to_str().unwrap(), "the", "-k", "3"]);
        assert!(n.status.success(), "{}", String::from_utf8_lossy(&n.stderr));
        let lines: Vec<String> = String::from_utf8_lossy(&n.stdout).lines().map(str::to_string).collect();
        assert_eq!(lines.len(), 3);
        assert!(lines.iter().all(|l| !l.ends_with(" the")), "the query is not its own neighbour");
        // Cosines come sorted, best first.
        let cos: Vec<f64> = lines.iter().map(|l| l.split_whitespace().next().unwrap().parse().unwrap()).collect();
        assert!(cos.windows(2).all(|w| w[0] >= w[1]), "{cos:?}");
    }
}

/// A corpus too small to give one training pair (frequent words subsampled away) is an error,
/// not random vectors written with a NaN mean loss and exit status 0.
#[test]
fn a_corpus_without_training_pairs_is_an_error() {
    let (c, v) = (tmp("tiny-corpus.txt"), tmp("tiny.vec"));
    std::fs::write(&c, "a b c a b c a b\nb c a\n").unwrap();
    for model in ["sgns", "cbow", "sg-hs", "cbow-hs"] {
        let o = chi(&["embed", "train", "--model", model, "--corpus", c.to_str().unwrap(), "--dim", "4", "--min-count", "1", "--epochs", "1", "--quiet", "--vectors-out", v.to_str().unwrap()]);
        fails_with(&o, "no training pairs");
        assert!(!v.exists(), "{model}: vectors written");
    }
}

/// `--x-max` reaches GloVe: two cut-offs give different vectors from the same seed.
#[test]
fn glove_x_max_changes_the_vectors() {
    let (a, b) = (tmp("x100.txt"), tmp("x2.txt"));
    for (p, x) in [(&a, "100"), (&b, "2")] {
        let o = chi(&["--seed", "3", "--threads", "1", "embed", "train", "--model", "glove", "--corpus", &corpus(), "--dim", "8", "--min-count", "2", "--epochs", "2", "--x-max", x, "--quiet", "--vectors-out", p.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert_ne!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

#[test]
fn one_thread_training_is_reproducible() {
    let (a, b) = (tmp("r1.txt"), tmp("r2.txt"));
    for p in [&a, &b] {
        let o = chi(&["--seed", "7", "embed", "train", "--model", "sgns", "--corpus", &corpus(), "--dim", "8", "--min-count", "1", "--epochs", "2", "--quiet", "--vectors-out", p.to_str().unwrap()]);
        assert!(o.status.success());
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

#[test]
fn eval_reports_each_benchmark() {
    let v = tmp("eval.txt");
    // Vectors for words of WordSim353 written by hand: the evaluator must cover those pairs.
    std::fs::write(&v, "3 2\ntiger 1 0\ncat 0.9 0.1\ncomputer 0 1\n").unwrap();
    let data = tmp("gensim");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("wordsim353.tsv"), "# Word 1\tWord 2\tHuman (mean)\ntiger\tcat\t7.35\ntiger\tcomputer\t1.0\ncat\tcomputer\t2.0\n").unwrap();
    let o = chi(&["embed", "eval", v.to_str().unwrap(), "--testdata", data.to_str().unwrap()]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(s.contains("WordSim353   Spearman 1.0000"), "{s}");
    assert!(s.contains("SimLex-999   (missing"), "{s}");
    // Constant human scores: no correlation is defined, and it is said rather than printed NaN.
    std::fs::write(data.join("wordsim353.tsv"), "tiger\tcat\t5\ntiger\tcomputer\t5\ncat\tcomputer\t5\n").unwrap();
    let o = chi(&["embed", "eval", v.to_str().unwrap(), "--testdata", data.to_str().unwrap()]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(s.contains("WordSim353   n/a (the human scores or the vectors' similarities are the same for all 3 covered pairs"), "{s}");
    assert!(!s.contains("NaN"), "{s}");
}

#[test]
fn bad_inputs_fail_cleanly() {
    let out = tmp("bad-out.txt");
    let o = out.to_str().unwrap();
    fails_with(&chi(&["embed", "train", "--corpus", "/no/such/corpus", "--vectors-out", o]), "no such file or folder");
    let empty = tmp("empty.txt");
    std::fs::write(&empty, "  \n\n").unwrap();
    fails_with(&chi(&["embed", "train", "--corpus", empty.to_str().unwrap(), "--vectors-out", o]), "no tokens");
    let bin = tmp("binary.bin");
    std::fs::write(&bin, [0u8, 159, 146, 150, 255, 1]).unwrap();
    fails_with(&chi(&["embed", "train", "--corpus", bin.to_str().unwrap(), "--vectors-out", o]), "not UTF-8");
    fails_with(&chi(&["embed", "train", "--corpus", &corpus(), "--dim", "0", "--vectors-out", o]), "--dim 0 is out of range");
    fails_with(&chi(&["embed", "train", "--corpus", &corpus(), "--dim", "100000000", "--vectors-out", o]), "out of range");
    fails_with(&chi(&["embed", "train", "--corpus", &corpus(), "--min-count", "100000", "--vectors-out", o]), "min_count");
    fails_with(&chi(&["embed", "train", "--corpus", &corpus(), "--x-max", "10", "--vectors-out", o]), "--x-max sets GloVe's");
    for model in ["glove", "sg-hs", "cbow-hs"] {
        fails_with(&chi(&["embed", "train", "--model", model, "--corpus", &corpus(), "--negative", "9", "--vectors-out", o]), &format!("{model} has none"));
    }
    fails_with(&chi(&["embed", "train", "--model", "cbow", "--corpus", &corpus(), "--negative", "0", "--vectors-out", o]), "--negative 0 is out of range");
    fails_with(&chi(&["embed", "train", "--model", "glove", "--corpus", &corpus(), "--x-max", "0", "--vectors-out", o]), "--x-max 0 is out of range");
    fails_with(&chi(&["embed", "train", "--model", "glove", "--corpus", &corpus(), "--x-max", "NaN", "--vectors-out", o]), "out of range");
    let bad = tmp("malformed.txt");
    std::fs::write(&bad, "2 3\nfoo 1 2 3\nbar 1 x 3\n").unwrap();
    fails_with(&chi(&["embed", "eval", bad.to_str().unwrap()]), "malformed.txt:3:");
    fails_with(&chi(&["embed", "neighbours", bad.to_str().unwrap(), "foo"]), "malformed.txt:3:");
    // A word whose only other words have zero vectors has no neighbours: said, not an empty list.
    let lonely = tmp("lonely.txt");
    std::fs::write(&lonely, "2 2\nfoo 1 2\nbar 0 0\n").unwrap();
    fails_with(&chi(&["embed", "neighbours", lonely.to_str().unwrap(), "foo"]), "\"foo\" has no neighbours");
    std::fs::write(&bad, "1 2\nfoo 1 2\n").unwrap();
    fails_with(&chi(&["embed", "neighbours", bad.to_str().unwrap(), "qux"]), "\"qux\" is not in the vocabulary");
    fails_with(&chi(&["embed", "neighbours", "/no/such/vectors", "qux"]), "/no/such/vectors");
}

/// `chi embed corpus` writes the named corpora as tokenised sentences (when fetched), `embed
/// train --corpus NAME` reads the same sentences, and unknown names or a data directory without
/// the corpus are clear errors.
#[test]
fn named_corpora_are_written_and_read_as_tokenised_sentences() {
    let empty = tmp("no-data");
    std::fs::create_dir_all(&empty).unwrap();
    let out = tmp("corpus.txt");
    let o = out.to_str().unwrap();
    fails_with(&chi(&["embed", "corpus", "--corpus", "brown+nope", "--out", o]), "expected named corpora joined with '+'");
    fails_with(&chi(&["embed", "corpus", "--corpus", "sotu", "--data", empty.to_str().unwrap(), "--out", o]), "fetch-data.sh --only sotu");
    // A binary file in the way (a model, say) is not replaced by the corpus.
    let model = tmp("corpus-over-model.safetensors");
    std::fs::write(&model, [8u8, 0, 0, 0, 0, 0, 0, 0, b'{', b'}']).unwrap();
    fails_with(&chi(&["embed", "corpus", "--corpus", "sotu", "--data", empty.to_str().unwrap(), "--out", model.to_str().unwrap()]), "exists and is not a text file");
    fails_with(&chi(&["embed", "train", "--corpus", &corpus(), "--vectors-out", model.to_str().unwrap()]), "exists and is not a text file");
    assert_eq!(std::fs::read(&model).unwrap(), [8u8, 0, 0, 0, 0, 0, 0, 0, b'{', b'}']);
    fails_with(&chi(&["embed", "train", "--corpus", "shakespeare", "--data", empty.to_str().unwrap(), "--vectors-out", o]), "fetch-data.sh --only shakespeare");
    if let Err(e) = chi_nn::data::require(chi_nn::data::Dataset::Shakespeare) {
        eprintln!("skipped the real-corpus half: {e}");
        return;
    }
    let r = chi(&["embed", "corpus", "--corpus", "shakespeare", "--out", o]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Measured: 97,573 sentences, 913,887 words (see chi-text's corpora_real test).
    assert_eq!(lines.len(), 97_573);
    assert_eq!(lines.iter().map(|l| l.split(' ').count()).sum::<usize>(), 913_887);
    assert!(text.chars().all(|c| !c.is_uppercase() && c != '.' && c != ','), "lower-cased words only");
    let vecs = tmp("shakespeare-vectors.txt");
    let r = chi(&["embed", "train", "--corpus", "shakespeare", "--model", "cbow", "--dim", "8", "--epochs", "1", "--quiet", "--vectors-out", vecs.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    assert!(err.contains("913887 tokens, 97573 sentences"), "{err}");
}

/// A learning rate that makes word2vec diverge (`--alpha 1` on a small vocabulary) is an error
/// naming the flag, and no vectors are written (they were written as NaN with exit status 0).
#[test]
fn a_diverged_training_is_an_error_and_writes_nothing() {
    let (c, v) = (tmp("diverge-corpus.txt"), tmp("diverge.vec"));
    let words = ["king", "queen", "man", "woman", "prince", "princess", "boy", "girl", "royal", "crown", "the", "a", "of", "and"];
    let mut s = String::new();
    for i in 0..2000usize {
        let line: Vec<&str> = (0..10).map(|j| words[(i * 31 + j * 17 + i * j * 7) % words.len()]).collect();
        s.push_str(&line.join(" "));
        s.push('\n');
    }
    std::fs::write(&c, s).unwrap();
    let o = chi(&["--seed", "1", "--threads", "1", "embed", "train", "--model", "sgns", "--corpus", c.to_str().unwrap(), "--alpha", "1", "--quiet", "--vectors-out", v.to_str().unwrap()]);
    fails_with(&o, "training diverged");
    fails_with(&o, "--alpha (now 1)");
    assert!(!v.exists(), "vectors written");
}

/// `--vectors-out` inside a corpus folder would become part of the next run's corpus: refused.
#[test]
fn vectors_are_not_written_into_the_corpus_folder() {
    let dir = tmp("corpus-dir");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.txt"), "the king and the queen\n".repeat(50)).unwrap();
    std::fs::write(dir.join("b.txt"), "a man and a woman\n".repeat(50)).unwrap();
    let before = std::fs::read(dir.join("b.txt")).unwrap();
    let o = chi(&["embed", "train", "--corpus", dir.to_str().unwrap(), "--dim", "4", "--min-count", "1", "--quiet", "--vectors-out", dir.join("b.txt").to_str().unwrap()]);
    fails_with(&o, "inside the corpus folder");
    assert_eq!(std::fs::read(dir.join("b.txt")).unwrap(), before);
    let _ = std::fs::remove_dir_all(&dir);
}
