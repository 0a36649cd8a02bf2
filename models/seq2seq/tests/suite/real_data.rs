//! The real corpora, when fetched (`scripts/fetch-data.sh --only bible --only cmudict`); each
//! test says so and passes when its data is absent.

use chi_seq2seq::data::{align_modules, read_cmudict, split_by_book, tokenize};

#[test]
fn kjv_and_reina_valera_align_verse_by_verse() {
    let dir = chi_nn::data::data_dir().join("bible");
    if !dir.join("kjv").join("nt.bzv").is_file() {
        eprintln!("skipped: {} is missing; run scripts/fetch-data.sh --only bible", dir.display());
        return;
    }
    let pairs = align_modules(&dir.join("kjv"), &dir.join("rv1909")).unwrap();
    eprintln!("{} aligned verse pairs", pairs.len());
    // KJV versification has 31,102 verses; a handful are empty in one translation.
    assert_eq!(pairs.len(), 31_084);
    assert_eq!(pairs[0].src, "In the beginning God created the heaven and the earth.");
    assert!(pairs[0].tgt.starts_with("EN el principio crió Dios los cielos y la tierra"), "{}", pairs[0].tgt);
    let last = pairs.last().unwrap();
    assert!(last.src.starts_with("The grace of our Lord Jesus Christ"), "{}", last.src);
    assert!(pairs.iter().all(|p| !p.src.contains('<') && !p.tgt.contains('<')));
    let (train, valid, test) = split_by_book(pairs);
    eprintln!("split: train {} valid {} test {}", train.len(), valid.len(), test.len());
    // Ruth 85 + Philippians 104 = 189; Jonah 48 + Ephesians 155 + Colossians 95 = 298 KJV
    // verses, one of which has an empty side in these modules.
    assert_eq!((valid.len(), test.len()), (189, 297));
    assert_eq!(train.len() + valid.len() + test.len(), 31_084);
    assert!(test.iter().any(|p| p.src.starts_with("Now the word of the LORD came unto Jonah")));
    assert_eq!(tokenize(&train[0].src)[..4], ["in", "the", "beginning", "god"]);
}

#[test]
fn cmudict_reads_every_entry() {
    let path = chi_nn::data::data_dir().join("cmudict").join("cmudict.dict");
    if !path.is_file() {
        eprintln!("skipped: {} is missing; run scripts/fetch-data.sh --only cmudict", path.display());
        return;
    }
    let all = read_cmudict(&path, false).unwrap();
    assert_eq!(all.len(), 135_166);
    let first = read_cmudict(&path, true).unwrap();
    eprintln!("{} words with one pronunciation each", first.len());
    assert!(first.len() < all.len() && first.len() > 120_000);
    let cat = first.iter().find(|p| p.word == "cat").unwrap();
    assert_eq!(cat.phonemes, ["K", "AE1", "T"]);
}
