//! The real Brown corpus, when fetched (`scripts/fetch-data.sh --only brown`; skipped with that
//! message otherwise): every one of its 500 files parses as `word/tag` sentences, and the token
//! count is the corpus's published 1,161,192, and every tag but interjections maps to a
//! universal class.

use chi_text::brown::{load_brown_file, normalize_tag, universal_tag};

#[test]
fn the_whole_brown_corpus_parses_with_its_published_token_count() {
    let dir = match chi_nn::data::require(chi_nn::data::Dataset::Brown) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let files = chi_text::brown::brown_files(&dir).unwrap();
    assert_eq!(files.len(), 500, "{}", dir.display());
    let (mut tokens, mut sentences) = (0usize, 0usize);
    let mut unmapped = std::collections::BTreeSet::new();
    for f in &files {
        let s = load_brown_file(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        sentences += s.len();
        for sent in &s {
            tokens += sent.words.len();
            for t in &sent.tags {
                if universal_tag(&normalize_tag(t)) == "X" {
                    unmapped.insert(normalize_tag(t));
                }
            }
        }
    }
    assert_eq!(tokens, 1_161_192, "tokens in {} files", files.len());
    assert!(sentences > 50_000, "{sentences} sentences");
    // Only interjections and the untagged `nil` are "other", as in Petrov et al.'s Brown mapping.
    assert_eq!(unmapped.iter().map(String::as_str).collect::<Vec<_>>(), ["nil", "uh"], "Brown tags mapped to X");
    eprintln!("Brown: {tokens} tokens, {sentences} sentences; tags mapped to X: {unmapped:?}");
}
