//! word2vec text I/O and the evaluation measures.

use chi_words::eval::{evaluate_analogies, evaluate_pairs, parse_analogies, parse_word_pairs, spearman};
use chi_words::io::{load_word2vec_text, parse_word2vec_text, save_word2vec_text, write_word2vec_text};
use chi_words::{Vectors, WordsError};
use std::path::Path;

fn vecs() -> Vectors {
    let words = ["king", "queen", "man", "woman", "apple"].map(String::from).to_vec();
    #[rustfmt::skip]
    let data = vec![
        1.0, 1.0, 0.0,   // king   = royal + male
        1.0, 0.0, 1.0,   // queen  = royal + female
        0.0, 1.0, 0.0,   // man
        0.0, 0.0, 1.0,   // woman
        -1.0, 0.2, 0.1,  // apple
    ];
    Vectors::new(words, 3, data).unwrap()
}

#[test]
fn word2vec_text_round_trip() {
    let v = vecs();
    let path = std::env::temp_dir().join(format!("chi-words-io-{}.txt", std::process::id()));
    save_word2vec_text(&v, &path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("5 3\nking 1.000000 1.000000 0.000000\n"));
    let back = load_word2vec_text(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(back, v);
    let mut buf = Vec::new();
    let bad = Vectors::new(vec!["two words".into()], 1, vec![0.0]).unwrap();
    assert!(write_word2vec_text(&bad, &mut buf).is_err());
}

fn err(text: &str) -> WordsError {
    parse_word2vec_text(text.as_bytes(), Path::new("v.txt")).unwrap_err()
}

#[test]
fn bad_vector_files_name_file_line_and_problem() {
    let cases: [(&str, Option<usize>, &str); 9] = [
        ("", None, "empty file"),
        ("2\n", Some(1), "two integers"),
        ("x 3\n", Some(1), "word count"),
        ("1 0\n", Some(1), "dimension is 0"),
        ("2 2\na 1 2\nb 1\n", Some(3), "has 1 values, the header says 2"),
        ("1 2\na 1 zz\n", Some(2), "\"zz\", is not a number"),
        ("1 2\na 1 2\nb 3 4\n", Some(3), "more than the 1 vectors"),
        ("3 2\na 1 2\n", None, "announces 3 vectors, the file holds 1"),
        ("3 1\na 1\nb 2\n\na 3\n", Some(5), "\"a\" appears again (first on line 2)"),
    ];
    for (text, line, what) in cases {
        match err(text) {
            WordsError::Format { path, line: l, message } => {
                assert_eq!(path, Path::new("v.txt"));
                assert_eq!(l, line, "{text:?}: {message}");
                assert!(message.contains(what), "{text:?}: {message}");
            }
            e => panic!("{text:?}: unexpected {e:?}"),
        }
    }
    assert!(matches!(err("1 1\na NaN\n"), WordsError::Format { line: Some(2), .. }));
    let shown = err("2 2\na 1 2\nb 1\n").to_string();
    assert!(shown.starts_with("v.txt:3: "), "{shown}");
    assert!(matches!(load_word2vec_text(Path::new("/nonexistent/v.txt")), Err(WordsError::Io { .. })));
    assert!(parse_word2vec_text(&[0xff, 0xfe, b'\n'], Path::new("v.txt")).is_err());
}

#[test]
fn spearman_matches_hand_computed_values() {
    assert!((spearman(&[1.0, 2.0, 3.0, 4.0], &[10.0, 20.0, 30.0, 40.0]) - 1.0).abs() < 1e-12);
    assert!((spearman(&[1.0, 2.0, 3.0, 4.0], &[4.0, 3.0, 2.0, 1.0]) + 1.0).abs() < 1e-12);
    // With ties: ranks x = [1.5, 1.5, 3, 4], y = [1, 3, 2, 4]; centred, Σxy = 3, Σx² = 4.5, Σy² = 5.
    assert!((spearman(&[1.0, 1.0, 2.0, 3.0], &[1.0, 3.0, 2.0, 4.0]) - 3.0 / 22.5f64.sqrt()).abs() < 1e-12);
}

#[test]
fn word_pairs_and_analogies() {
    let pairs = parse_word_pairs("# comment\nWord 1\tWord 2\tHuman (mean)\nking\tqueen\t8.5\nKing\tman\t6\nking\tapple\t1\nking\tdragon\t3\n", Path::new("p.tsv")).unwrap();
    assert_eq!(pairs.len(), 4);
    let s = evaluate_pairs(&vecs(), &pairs, 300_000);
    assert_eq!((s.covered, s.missing), (3, 1));
    // cos(king,queen) = 0.5, cos(king,man) = 0.707, cos(king,apple) < 0: ranks 2,3,1 vs 3,2,1.
    assert!((s.spearman - 0.5).abs() < 1e-12, "{}", s.spearman);
    assert!(parse_word_pairs("a\tb\tnot-a-number\nc\td\tx\n", Path::new("p.tsv")).is_err());
    // A mistyped score on the first row is that row's error, not a header dropped in silence.
    for bad in ["5x", "nan", "-"] {
        let e = parse_word_pairs(&format!("w1\tw2\t{bad}\nw3\tw4\t6\nw5\tw6\t7\n"), Path::new("p.tsv")).unwrap_err().to_string();
        assert!(e.starts_with("p.tsv:1:") && e.contains("is not a finite number"), "{bad}: {e}");
    }
    assert_eq!(parse_word_pairs("word1 word2 SimLex999\nw3 w4 6\nw5 w6 7\n", Path::new("p.txt")).unwrap().len(), 2);
    let qs = parse_analogies(": gender\nman king woman queen\nwoman queen man king\nman king woman dragon\n: other\nman woman king queen\n", Path::new("q.txt")).unwrap();
    let a = evaluate_analogies(&vecs(), &qs, 300_000);
    assert_eq!((a.covered, a.missing), (3, 1));
    // woman − man + king = (1, 0, 1) = queen; the other two are answered by the same offset.
    assert_eq!(a.correct, 3, "{a:?}");
    assert_eq!(a.sections, vec![("gender".to_string(), 2, 2), ("other".to_string(), 1, 1)]);
    // A question whose answer is not the 3CosAdd winner is counted wrong.
    let wrong = parse_analogies(": x
man king woman apple
", Path::new("q.txt")).unwrap();
    assert_eq!(evaluate_analogies(&vecs(), &wrong, 300_000).correct, 0);
    // Restricting the vocabulary to the first 3 rows leaves no complete question.
    assert_eq!(evaluate_analogies(&vecs(), &qs, 3).covered, 0);
    let e = parse_analogies("a b c\n", Path::new("q.txt")).unwrap_err();
    assert!(e.to_string().contains("q.txt:1"));
}

#[test]
fn nearest_neighbours() {
    let v = vecs();
    let nn = v.nearest("king", 2).unwrap();
    assert_eq!(nn[0].0, "man");
    assert!((nn[0].1 - 0.5f64.sqrt()).abs() < 1e-6);
    assert!(v.nearest("dragon", 2).is_none());
}
