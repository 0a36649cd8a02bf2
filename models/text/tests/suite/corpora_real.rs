//! The real State of the Union and Shakespeare corpora, when fetched
//! (`scripts/fetch-data.sh --only sotu --only shakespeare`; each test is skipped with that
//! message otherwise): their published sizes — 233 addresses 1790–2021 of about 1.79M words,
//! 42 works of about 905k words — and their tokenised sentences.

use chi_nn::data::{require, Dataset};
use chi_text::corpora::{document_sentences, load_shakespeare, load_sotu, sotu_year};

fn dir_or_skip(d: Dataset) -> Option<std::path::PathBuf> {
    match require(d) {
        Ok(p) => Some(p),
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

#[test]
fn state_of_the_union_has_233_addresses_and_1_79m_words() {
    let Some(dir) = dir_or_skip(Dataset::Sotu) else { return };
    let docs = load_sotu(&dir).unwrap();
    assert_eq!(docs.len(), 233, "{}", dir.display());
    assert_eq!(sotu_year(&docs[0]), Some(1790));
    assert_eq!(sotu_year(docs.last().unwrap()), Some(2021));
    let words: usize = docs.iter().map(|d| d.word_count()).sum();
    // The package's own description: 1.79M words; 1,794,884 whitespace-separated in 0.2.3.
    assert_eq!(words, 1_794_884);
    let s = document_sentences(&docs);
    let tokens: usize = s.iter().map(Vec::len).sum();
    // Measured with this tokenisation: 66,111 sentences, 1,813,394 words (hyphenated words split).
    assert!((60_000..75_000).contains(&s.len()), "{} sentences", s.len());
    assert!((1_750_000..1_850_000).contains(&tokens), "{tokens} tokens");
    assert!(s.iter().flatten().all(|w| w.chars().any(char::is_alphanumeric) && *w == w.to_lowercase()));
    eprintln!("SOTU: {} addresses, {words} words, {} sentences, {tokens} tokens", docs.len(), s.len());
}

#[test]
fn shakespeare_has_42_works_and_905k_words() {
    let Some(dir) = dir_or_skip(Dataset::Shakespeare) else { return };
    let docs = load_shakespeare(&dir).unwrap();
    assert_eq!(docs.len(), 42, "{}", dir.display());
    assert!(docs.iter().any(|d| d.name == "hamlet_gut") && docs.iter().any(|d| d.name == "sonnets_gut"));
    assert!(docs.iter().all(|d| !d.text.to_ascii_lowercase().contains("project gutenberg")), "a Gutenberg header or footer is left");
    let words: usize = docs.iter().map(|d| d.word_count()).sum();
    assert_eq!(words, 905_018);
    let s = document_sentences(&docs);
    let tokens: usize = s.iter().map(Vec::len).sum();
    // Measured with this tokenisation: 97,573 sentences, 913,887 words (hyphenated words split).
    assert!((90_000..105_000).contains(&s.len()), "{} sentences", s.len());
    assert!((880_000..940_000).contains(&tokens), "{tokens} tokens");
    eprintln!("Shakespeare: {} works, {words} words, {} sentences, {tokens} tokens", docs.len(), s.len());
}

#[test]
fn brown_sentences_keep_the_words_of_the_tagged_corpus() {
    let Some(dir) = dir_or_skip(Dataset::Brown) else { return };
    let s = chi_text::corpora::brown_sentences(&dir).unwrap();
    let tokens: usize = s.iter().map(Vec::len).sum();
    // 1,161,192 tagged tokens, of which punctuation is dropped and hyphenated words are split.
    assert!((950_000..1_100_000).contains(&tokens), "{tokens} tokens");
    assert!(s.len() > 50_000, "{} sentences", s.len());
    eprintln!("Brown: {} sentences, {tokens} tokens", s.len());
}
