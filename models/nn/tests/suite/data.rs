//! Data loaders on small fixtures written by the tests themselves: every format parses its valid
//! fixture to the expected values, and malformed input is an error naming the file and the
//! line / byte where it went wrong. Then the real datasets, when fetched (skipped with a message
//! naming the fetch command otherwise).

use chi_nn::data::{self, DataError, Dataset, Location};
use std::io::Write;
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("chi-test-data-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[track_caller]
fn assert_err_at(r: Result<impl std::fmt::Debug, DataError>, path: &Path, want: &str) {
    let e = r.expect_err("malformed input was accepted");
    let s = e.to_string();
    assert_eq!(e.path, path, "{s}");
    assert!(s.starts_with(&path.display().to_string()), "error does not name the file: {s}");
    assert!(s.contains(want), "error {s:?} does not mention {want:?}");
}

fn idx_bytes(ty: u8, dims: &[u32], body: &[u8]) -> Vec<u8> {
    let mut v = vec![0, 0, ty, dims.len() as u8];
    for d in dims {
        v.extend(d.to_be_bytes());
    }
    v.extend(body);
    v
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[test]
fn idx_images_and_labels_raw_and_gzip() {
    let pixels: Vec<u8> = (0..2 * 2 * 3).map(|i| (i * 20) as u8).collect();
    let raw = idx_bytes(0x08, &[2, 2, 3], &pixels);
    for (name, bytes) in [("img.idx", raw.clone()), ("img.idx.gz", gzip(&raw))] {
        let p = write(name, &bytes);
        let im = data::load_idx_images(&p).unwrap();
        assert_eq!((im.n, im.rows, im.cols), (2, 2, 3));
        assert_eq!(im.pixels[1], 20.0 / 255.0);
        assert_eq!(im.pixels[11], 220.0 / 255.0);
    }
    let p = write("lab.idx.gz", &gzip(&idx_bytes(0x08, &[3], &[7, 0, 9])));
    assert_eq!(data::load_idx_labels(&p).unwrap(), vec![7, 0, 9]);
    // Malformed: bad magic, truncated body, a header claiming far more data than there is.
    let p = write("bad-magic.idx", &[1, 0, 8, 1, 0, 0, 0, 1, 5]);
    assert_err_at(data::load_idx_labels(&p), &p, "magic");
    let p = write("short.idx", &raw[..raw.len() - 1]);
    assert!(data::load_idx_images(&p).unwrap_err().to_string().starts_with(&p.display().to_string()));
    let p = write("huge.idx.gz", &gzip(&idx_bytes(0x08, &[60000, 28, 28], &[1, 2, 3])));
    let e = data::load_idx_images(&p).unwrap_err();
    assert_eq!(e.path, p, "{e}");
}

#[test]
fn mnist_json_digits() {
    let p = write("3.json", format!("{{\"data\":[{}]}}", vec!["0.5"; 784 * 2].join(",")).as_bytes());
    let v = data::load_mnist_json(&p).unwrap();
    assert_eq!(v.len(), 1568);
    // Re-quantised to the original byte: round(0.5 · 255) / 255 = 128/255.
    assert!(v.iter().all(|x| *x == 128.0 / 255.0), "{}", v[0]);
    let p = write("bad.json", b"{\"data\":[0.1, x]}");
    assert_err_at(data::load_mnist_json(&p), &p, "byte");
    let p = write("ragged.json", b"{\"data\":[0.1,0.2]}");
    assert!(data::load_mnist_json(&p).is_err(), "784 does not divide 2 numbers");
}

#[test]
fn csv_quoting_and_errors() {
    let p = write("t.csv", "\u{feff}a,\"b, with comma\",\"say \"\"hi\"\"\"\n\n\"multi\nline\",x,y\r\n".as_bytes());
    let r = data::load_csv(&p).unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].fields, ["a", "b, with comma", "say \"hi\""]);
    assert_eq!(r[1].fields, ["multi\nline", "x", "y"]);
    assert_eq!(r[1].line, 3);
    let p = write("open.csv", b"a,b\n\"never closed,c\n");
    assert_err_at(data::load_csv(&p), &p, "line 2");
    let p = write("after.csv", b"\"a\"b,c\n");
    assert_err_at(data::load_csv(&p), &p, "line 1");
    let e = data::load_csv(&p).unwrap_err().to_string();
    assert!(!e.contains("separated"), "{e}");
    // Quoted fields of a semicolon-separated file: the error asks about the separator.
    let p = write("semi.csv", b"\"a\";\"b\"\n\"1\";\"2\"\n");
    let e = data::load_csv(&p).unwrap_err().to_string();
    assert!(e.contains("line 1, column 4") && e.contains("unexpected ';'") && e.contains("Is the file semicolon-separated? chi reads commas"), "{e}");
}

#[test]
fn polarity_csv() {
    let p = write("pl.csv", b"\"1\",\"a fine film .\"\n\"-1\",\"a dull one .\nsecond line\"\n");
    let r = data::load_polarity_csv(&p).unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!((r[0].label, r[1].label), (1, -1));
    assert_eq!(r[1].class(), 0);
    assert!(r[1].text.contains("second line"));
    let p = write("pl-bad.csv", b"\"1\",\"ok\"\n\"2\",\"label two?\"\n");
    assert_err_at(data::load_polarity_csv(&p), &p, "line 2");
}

#[test]
fn glove_text_and_npy_fortran_order() {
    let p = write("g.txt", b"the 0.1 0.2 0.3\ncat -1 0 1\n");
    let e = data::load_glove_txt(&p).unwrap();
    assert_eq!((e.len(), e.dim), (2, 3));
    assert_eq!(e.get("cat").unwrap(), &[-1.0, 0.0, 1.0]);
    let p = write("g-bad.txt", b"the 0.1 0.2 0.3\ncat -1 0\n");
    assert_err_at(data::load_glove_txt(&p), &p, "line 2");
    // A word given twice, and a word2vec header that disagrees with the rows, are refused (as
    // chi-words' loader refuses them), not resolved silently.
    let p = write("g-dup.txt", b"good 0.1 0.2 0.3\nbad 1 2 3\ngood 0.3 0.2 0.1\n");
    assert_err_at(data::load_glove_txt(&p), &p, "line 3");
    assert!(data::load_glove_txt(&p).unwrap_err().to_string().contains("'good' appears again (first on line 1)"));
    let p = write("g-count.txt", b"5 3\ngood 0.1 0.2 0.3\n");
    assert!(data::load_glove_txt(&p).unwrap_err().to_string().contains("the header announces 5 vectors of dimension 3, the file holds 1 of dimension 3"));
    let p = write("g-header.txt", b"2 3\ngood 0.1 0.2 0.3\nbad 1 2 3\n");
    assert_eq!(data::load_glove_txt(&p).unwrap().len(), 2);
    // A (2, 3) f32 matrix stored in Fortran (column-major) order.
    let header = "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }";
    let mut h = header.to_string();
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    npy.extend((h.len() as u16).to_le_bytes());
    npy.extend(h.as_bytes());
    for v in [1.0f32, 4.0, 2.0, 5.0, 3.0, 6.0] {
        npy.extend(v.to_le_bytes());
    }
    let pn = write("m.npy", &npy);
    let pw = write("m.words", b"a\nb\n");
    let e = data::load_glove_npy(&pn, &pw).unwrap();
    assert_eq!(e.get("a").unwrap(), &[1.0, 2.0, 3.0]);
    assert_eq!(e.get("b").unwrap(), &[4.0, 5.0, 6.0]);
    let pn2 = write("short.npy", &npy[..npy.len() - 4]);
    assert_err_at(data::load_glove_npy(&pn2, &pw), &pn2, "");
    let pw3 = write("three.words", b"a\nb\nc\n");
    assert!(data::load_glove_npy(&pn, &pw3).is_err(), "3 words for 2 rows");
}

#[test]
fn word_pairs_in_all_three_layouts() {
    let p = write("ws.tsv", b"# comment\ntiger\tcat\t7.35\nbook\tpaper\t7.46\n");
    let r = data::load_word_pairs(&p).unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!((r[0].a.as_str(), r[0].b.as_str(), r[0].score), ("tiger", "cat", 7.35));
    let p = write("sl.txt", b"word1\tword2\tPOS\tSimLex999\tconc(w1)\nold\tnew\tA\t1.58\t2.72\n");
    assert_eq!(data::load_word_pairs(&p).unwrap()[0].score, 1.58);
    let p = write("comb.csv", b"Word 1,Word 2,Human (mean)\nlove,sex,6.77\n");
    assert_eq!(data::load_word_pairs(&p).unwrap()[0].b, "sex");
    let p = write("ws-bad.tsv", b"tiger\tcat\t7.35\nbook\tpaper\tseven\n");
    assert_err_at(data::load_word_pairs(&p), &p, "line 2");
}

#[test]
fn lee_corpus_and_matrix() {
    let p = write("lee.cor", b"first doc .\nsecond \xa3 doc .\n");
    let c = data::load_corpus(&p).unwrap();
    assert_eq!(c[1], "second £ doc .", "a non-UTF-8 line is read as Latin-1");
    let p = write("blank.cor", b"doc\n\nanother\n");
    assert_err_at(data::load_corpus(&p), &p, "line 2");
    let p = write("m.txt", b"1 0.5 0.2\n0 1 0.7\n0 0 1\n");
    let m = data::load_matrix(&p).unwrap();
    assert_eq!(m.upper_pairs(), vec![0.5, 0.2, 0.7]);
    let p = write("m-bad.txt", b"1 0.5\n0 1 0.7\n");
    assert_err_at(data::load_matrix(&p), &p, "line 2");
}

#[test]
fn errors_name_file_and_location() {
    let e = DataError::at_line(4, "bad").with_path(Path::new("x/y.csv"));
    assert_eq!(e.to_string(), "x/y.csv: line 4: bad");
    assert_eq!(e.location, Location::Line(4));
}

// ---------------------------------------------------------------------------------- real data

/// The dataset's directory, or `None` with a message saying how to fetch it.
fn real(d: Dataset) -> Option<PathBuf> {
    match data::require(d) {
        Ok(p) => Some(p),
        Err(msg) => {
            eprintln!("SKIPPED (real data absent): {msg}");
            None
        }
    }
}

#[test]
fn real_mnist_json_has_10000_digits() {
    let Some(dir) = real(Dataset::Mnist) else { return };
    let set = data::load_mnist_json_dir(&dir).unwrap();
    assert_eq!(set.n, 10_000);
    assert_eq!((set.rows, set.cols), (28, 28));
    let mut counts = [0usize; 10];
    set.labels.iter().for_each(|&l| counts[l as usize] += 1);
    assert!(counts.iter().all(|&c| c > 800), "{counts:?}");
}

#[test]
fn real_fashion_mnist_is_60000_plus_10000() {
    let Some(dir) = real(Dataset::FashionMnist) else { return };
    let (train, test) = data::load_mnist_idx_dir(&dir).unwrap();
    assert_eq!((train.n, test.n), (60_000, 10_000));
    assert!(train.pixels.iter().all(|p| (0.0..=1.0).contains(p)));
    assert_eq!(train.labels.iter().filter(|&&l| l == 3).count(), 6000);
}

#[test]
fn real_pang_lee_reviews_and_sentences() {
    let Some(dir) = real(Dataset::PangLee) else { return };
    let (reviews, sentences) = data::load_pang_lee(&dir).unwrap();
    assert_eq!(reviews.len(), 1500);
    assert_eq!(sentences.len(), 4000);
    assert_eq!(reviews.iter().filter(|r| r.label > 0).count(), 750);
    assert_eq!(sentences.iter().filter(|r| r.label > 0).count(), 2000);
}

#[test]
fn real_lee_and_word_pairs_and_glove() {
    let Some(g) = real(Dataset::Gensim) else { return };
    let lee = data::load_lee(&g).unwrap();
    assert_eq!((lee.docs.len(), lee.background.len()), (50, 300));
    assert_eq!(lee.similarity.upper_pairs().len(), 1225);
    assert_eq!(data::load_word_pairs(g.join("wordsim353.tsv")).unwrap().len(), 353);
    assert_eq!(data::load_word_pairs(g.join("simlex999.txt")).unwrap().len(), 999);
    let Some(gl) = real(Dataset::Glove) else { return };
    let emb = data::load_glove_dir(&gl).unwrap();
    assert_eq!((emb.len(), emb.dim), (400_000, 50));
    let ws = data::evaluate_word_pairs(&emb, &data::load_word_pairs(g.join("wordsim353.tsv")).unwrap());
    assert!((ws.spearman - 0.50).abs() < 0.03, "WordSim353 Spearman {}", ws.spearman);
    assert!(emb.similarity("king", "queen").unwrap() > emb.similarity("king", "banana").unwrap());
}
