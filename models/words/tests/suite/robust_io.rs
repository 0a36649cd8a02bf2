//! Word2vec text files from outside: header sizes are bounded before anything is allocated,
//! and saving over an existing file is all-or-nothing.

use chi_words::io::{parse_word2vec_text, save_word2vec_text};
use chi_words::{Vectors, WordsError};
use std::path::Path;

fn parse_err(text: &str) -> String {
    match parse_word2vec_text(text.as_bytes(), Path::new("v.txt")) {
        Err(e @ WordsError::Format { line: Some(1), .. }) => e.to_string(),
        other => panic!("{text:?}: expected an error on the header line, got {other:?}"),
    }
}

#[test]
fn oversized_headers_are_refused_before_allocating() {
    // V × D far beyond the per-tensor limit (the file holds one short row).
    let e = parse_err("1000000000 1000000000\ncat 1 2\n");
    assert!(e.starts_with("v.txt:1: header") && e.contains("limit"), "{e}");
    // A dimension whose product with V overflows, and one that is too large on its own.
    let e = parse_err("1 18446744073709551615\ncat 1 2 3\n");
    assert!(e.contains("limit"), "{e}");
    let e = parse_err("0 18446744073709551615\n");
    assert!(e.contains("word2vec vector:") && e.contains("limit"), "{e}");
    let e = chi_nn::limits::with_max_tensor_elements(5, || parse_err("3 2\na 1 2\nb 3 4\nc 5 6\n"));
    assert!(e.contains("limit of 5"), "{e}");
    // Within the limit, a header announcing more rows than the file holds is still refused,
    // without reserving room for what it announces.
    let e = parse_word2vec_text(b"16000 16000\ncat 1 2\n", Path::new("v.txt")).unwrap_err().to_string();
    assert!(e.contains("has 2 values, the header says 16000"), "{e}");
    let v = parse_word2vec_text(b"2 2\na 1 2\nb 3 4\n", Path::new("v.txt")).unwrap();
    assert_eq!((v.len(), v.dim()), (2, 2));
}

#[test]
fn a_failed_save_leaves_the_existing_file_intact() {
    let dir = std::env::temp_dir().join(format!("chi-words-robust-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("vectors.txt");
    let good = Vectors::new(vec!["a".into(), "b".into()], 2, vec![1.0, 2.0, 3.0, 4.0]).unwrap();
    save_word2vec_text(&good, &path).unwrap();
    let before = std::fs::read(&path).unwrap();
    // The second word cannot be written in this format, so the save fails part-way through.
    let bad = Vectors::new(vec!["c".into(), "d e".into()], 2, vec![5.0, 6.0, 7.0, 8.0]).unwrap();
    let e = save_word2vec_text(&bad, &path).unwrap_err().to_string();
    assert!(e.contains("vectors.txt") && e.contains("whitespace"), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "the failed save changed the existing file");
    let leftovers: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers, ["vectors.txt"], "temporary files left behind");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_corpus_folder_is_read_through_its_subfolders_once_and_in_order() {
    use chi_words::vocab::Text;
    let root = std::env::temp_dir().join(format!("chi-words-corpus-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("b/deeper")).unwrap();
    std::fs::create_dir_all(root.join(".hidden")).unwrap();
    std::fs::write(root.join("a.txt"), "one two\n").unwrap();
    std::fs::write(root.join("b/deeper/c.txt"), "five six\n").unwrap();
    std::fs::write(root.join("b/b.txt"), "three four\n").unwrap();
    std::fs::write(root.join(".hidden/x.txt"), "never\n").unwrap();
    // A link back to the top, which must not be followed round and round.
    std::os::unix::fs::symlink(&root, root.join("b/deeper/loop")).unwrap();
    let t = Text::read(&root, false).unwrap();
    assert_eq!(t.tokens, ["one", "two", "three", "four", "five", "six"]);
    assert_eq!(t.sentences(), 3);
    std::fs::write(root.join("b/deeper/c.txt"), "five\nsix\0seven\n").unwrap();
    let e = Text::read(&root, false).unwrap_err().to_string();
    assert!(e.ends_with("c.txt:2: holds a NUL byte (a binary file?)"), "{e}");
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn an_endless_corpus_is_refused_at_the_file_limit() {
    // Checked in a child process, which alone sees the lowered limit.
    if std::env::var_os("CHI_WORDS_CHILD").is_some() {
        let e = chi_words::vocab::Text::read(Path::new("/dev/zero"), false).unwrap_err().to_string();
        assert!(e.starts_with("/dev/zero: gives more than the 65536-byte limit"), "{e}");
        let e = chi_words::io::load_word2vec_text(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(e.starts_with("/dev/zero: gives more than the 65536-byte limit"), "{e}");
        return;
    }
    if !Path::new("/dev/zero").exists() {
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "robust_io::an_endless_corpus_is_refused_at_the_file_limit", "--nocapture"])
        .env("CHI_WORDS_CHILD", "1")
        .env(chi_nn::limits::MAX_FILE_BYTES_ENV, "65536")
        .output()
        .unwrap();
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}
