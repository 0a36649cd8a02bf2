//! Outside input to `chi embed`, `chi translate`, `chi teach` and `chi graph`: oversized
//! word-vector headers and endless input lines are clear errors, and output files are replaced
//! atomically, so a failed write leaves the previous file intact.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn chi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chi")).args(args).output().unwrap_or_else(|e| panic!("cannot run chi {args:?}: {e}"))
}

/// Runs chi with a file-size limit of 1 KiB, so that any file it writes beyond that fails.
fn chi_with_small_file_limit(args: &[&str]) -> Output {
    Command::new("bash")
        .args(["-c", "ulimit -f 1 && exec \"$@\"", "bash", env!("CARGO_BIN_EXE_chi")])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run chi {args:?} under ulimit: {e}"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chi-robust-words-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn oversized_word2vec_headers_are_errors_naming_the_file() {
    let d = temp_dir("headers");
    for (k, text) in ["1000000000 1000000000\ncat 1 2\n", "1 18446744073709551615\ncat 1 2 3\n", "0 18446744073709551615\n"].into_iter().enumerate() {
        let path = d.join(format!("v{k}.txt"));
        std::fs::write(&path, text).unwrap();
        let o = chi(&["embed", "neighbours", s(&path), "cat"]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{text:?}: {e}");
        assert!(e.contains(&format!("v{k}.txt:1: header")) && e.contains("limit"), "{text:?}: {e}");
    }
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn translate_refuses_an_endless_line_without_reading_it_all() {
    use chi_seq2seq::{Seq2Seq, Seq2SeqConfig, Tokenizer, Translator, Vocab};
    let d = temp_dir("translate");
    let words = |w: &str| w.split(' ').map(String::from).collect::<Vec<_>>();
    let src_vocab = Vocab::build([words("the cat").as_slice()], None);
    let tgt_vocab = Vocab::build([words("el gato").as_slice()], None);
    let cfg = Seq2SeqConfig { src_vocab: src_vocab.len(), tgt_vocab: tgt_vocab.len(), emb: 4, hidden: 4, attn_dim: 4, ..Seq2SeqConfig::default() };
    let model = d.join("m.safetensors");
    Translator { model: Seq2Seq::new(&cfg, 1).unwrap(), src_vocab, tgt_vocab, tokenizer: Tokenizer::Words }.save(&model).unwrap();
    // A directory without a model is named as such, not reported as an unreadable file.
    let o = chi(&["translate", s(&d), "--input", "/dev/zero"]);
    assert!(stderr(&o).contains("is a directory without a model.safetensors: give a run directory of chi train --model seq2seq, or the model's .safetensors file"), "{}", stderr(&o));
    let o = chi(&["translate", s(&model), "--input", "/dev/zero"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("/dev/zero: line 1 is longer than 10000 characters"), "{e}");
    // Ordinary lines, with Windows line ends, still translate.
    let input = d.join("in.txt");
    std::fs::write(&input, "the cat\r\n\r\ncat").unwrap();
    let o = chi(&["translate", s(&model), "--input", s(&input), "--beam", "1", "--max-len", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 3);
    // A NUL byte marks a binary file, refused with its line as explain and the data readers do.
    std::fs::write(&input, b"the cat\nthe\0cat\n").unwrap();
    let o = chi(&["translate", s(&model), "--input", s(&input)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("in.txt: line 2 has a NUL byte: a binary file, not text"), "{}", stderr(&o));
    std::fs::remove_dir_all(&d).ok();
}

/// Runs `args` (which write `out`) under a file-size limit and checks that `out`, which held
/// older contents, still holds them.
fn assert_failed_write_keeps(out: &Path, args: &[&str]) {
    let old = "contents that must survive a failed write\n";
    std::fs::write(out, old).unwrap();
    let o = chi_with_small_file_limit(args);
    assert!(!o.status.success(), "chi {args:?} wrote more than 1 KiB under the limit: {}", stderr(&o));
    assert_eq!(std::fs::read_to_string(out).unwrap(), old, "chi {args:?} destroyed the existing {}", out.display());
}

#[test]
fn failed_writes_leave_existing_outputs_intact() {
    let d = temp_dir("atomic");
    let page = d.join("page.html");
    assert_failed_write_keeps(&page, &["teach", "mlp", "-o", s(&page)]);
    let graphs = d.join("graphs");
    std::fs::create_dir_all(&graphs).unwrap();
    assert_failed_write_keeps(&graphs.join("graph-mlp.dot"), &["graph", "mlp", "--out", s(&graphs), "--values", "--grads"]);

    let corpus = d.join("corpus.txt");
    let sentence = "the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat\n";
    std::fs::write(&corpus, sentence.repeat(40)).unwrap();
    let vectors = d.join("vectors.txt");
    assert_failed_write_keeps(&vectors, &["embed", "train", "--corpus", s(&corpus), "--vectors-out", s(&vectors), "--dim", "20", "--epochs", "1", "--quiet"]);

    let data = d.join("data");
    std::fs::create_dir_all(data.join("shakespeare")).unwrap();
    let play = "To be, or not to be, that is the question.\n\nWhether 'tis nobler in the mind to suffer the slings and arrows.\n\n".repeat(40);
    std::fs::write(data.join("shakespeare").join("hamlet_gut.txt"), play).unwrap();
    let text = d.join("corpus-out.txt");
    assert_failed_write_keeps(&text, &["embed", "corpus", "--corpus", "shakespeare", "--data", s(&data), "--out", s(&text)]);
    std::fs::remove_dir_all(&d).ok();
}

/// A word whose vector is zero has no cosine neighbours: an error saying so, not an empty list;
/// `--vectors-out` in a missing directory is refused before any training.
#[test]
fn zero_vectors_and_unwritable_outputs_are_errors() {
    let d = temp_dir("zero");
    let v = d.join("v.txt");
    std::fs::write(&v, "3 2\ncat 0 0\ndog 1 0\nfox 0 1\n").unwrap();
    let o = chi(&["embed", "neighbours", s(&v), "cat"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("\"cat\" has a zero vector"), "{}", stderr(&o));
    let corpus = d.join("corpus.txt");
    std::fs::write(&corpus, "the quick brown fox jumps over the lazy dog\n".repeat(20)).unwrap();
    let o = chi(&["embed", "train", "--corpus", s(&corpus), "--vectors-out", s(&corpus), "--dim", "8", "--epochs", "1", "--quiet"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("is the corpus"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&corpus).unwrap(), "the quick brown fox jumps over the lazy dog\n".repeat(20));
    let out = d.join("missing").join("vectors.txt");
    let o = chi(&["embed", "train", "--corpus", s(&corpus), "--vectors-out", s(&out), "--dim", "8", "--epochs", "1", "--quiet"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--vectors-out") && stderr(&o).contains("cannot write"), "{}", stderr(&o));
    std::fs::remove_dir_all(&d).ok();
}
