//! The Brown corpus in its NLTK `word/tag` form, and a reduced universal-style tag set.
//!
//! Each file (`ca01` … `cr09`; the second letter is the genre) holds one sentence per
//! non-blank line, tokens separated by whitespace, each token `word/tag` split at its **last**
//! `/` (words may contain `/`, as in `1/2/cd`). Tags are lower case, e.g. `at`, `np-tl`,
//! `vbd`, `nn$`, `ppss+md`, `fw-in`, `*`.
//!
//! [`universal_tag`] maps a Brown tag to twelve coarse classes in the spirit of Petrov, Das &
//! McDonald (2012), "A universal part-of-speech tagset":
//!
//! | class | Brown tags (after normalisation) |
//! |---|---|
//! | `NOUN` | `nn*`, `np*`, `nr*` (common, proper, adverbial nouns; possessives included) |
//! | `VERB` | `vb*`, `be*`, `do*`, `hv*`, `md` |
//! | `ADJ`  | `jj*`, `od` (ordinals) |
//! | `ADV`  | `rb*`, `rn`, `ql*`, `wrb`, `abl`, `*` (not) |
//! | `PRON` | `pp*`, `wp*` |
//! | `DET`  | `at`, `ap`, `abn`, `abx`, `dt*`, `wdt`, `ex` |
//! | `ADP`  | `in` |
//! | `NUM`  | `cd` |
//! | `CONJ` | `cc`, `cs` |
//! | `PRT`  | `to`, `rp` |
//! | `.`    | punctuation: `.` `,` `:` `(` `)` `--` `` ` `` `'` and the quote tags |
//! | `X`    | everything else (`uh`, `nil`, unknown tags) |
//!
//! Normalisation first removes the title/headline/cited suffixes `-tl`, `-hl`, `-nc`, the
//! foreign-word prefix `fw-`, and keeps the first part of a contraction (`ppss+md` → `ppss`;
//! `*` alone stays the negation tag, `bez*` → `bez`).

use crate::error::{Result, TextError};

/// One tagged sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaggedTokens {
    /// The words as written.
    pub words: Vec<String>,
    /// Their tags (as in the file, or mapped).
    pub tags: Vec<String>,
}

/// Parses one Brown file: every non-blank line is a sentence of `word/tag` tokens.
pub fn parse_brown(text: &str) -> Result<Vec<TaggedTokens>> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut s = TaggedTokens { words: Vec::new(), tags: Vec::new() };
        for tok in line.split_whitespace() {
            let Some(cut) = tok.rfind('/') else {
                return Err(TextError::Parse { line: n + 1, msg: format!("token {tok:?} has no '/tag'") });
            };
            let (w, t) = (&tok[..cut], &tok[cut + 1..]);
            if w.is_empty() || t.is_empty() {
                return Err(TextError::Parse { line: n + 1, msg: format!("token {tok:?} has an empty word or tag") });
            }
            s.words.push(w.to_string());
            s.tags.push(t.to_ascii_lowercase());
        }
        if !s.words.is_empty() {
            out.push(s);
        }
    }
    Ok(out)
}

/// The corpus files of a Brown directory, `c[a-r]NN` (the second letter is the genre), sorted
/// by name; an error if there are none.
pub fn brown_files(dir: &std::path::Path) -> Result<Vec<std::path::PathBuf>> {
    let is_brown = |n: &str| n.len() == 4 && n.starts_with('c') && n.as_bytes()[1].is_ascii_lowercase() && n[2..].bytes().all(|b| b.is_ascii_digit());
    let paths = crate::dir::files("brown_files", dir, is_brown)?;
    if paths.is_empty() {
        return Err(TextError::Invalid { op: "brown_files", msg: format!("{}: no c[a-r]NN files (scripts/fetch-data.sh --only brown)", dir.display()) });
    }
    Ok(paths)
}

/// Reads and parses one Brown file.
pub fn load_brown_file(path: impl AsRef<std::path::Path>) -> Result<Vec<TaggedTokens>> {
    let bytes = chi_nn::limits::read_file(path.as_ref())?;
    let text = String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    parse_brown(&text)
}

/// The normalised Brown tag (see the module docs).
pub fn normalize_tag(tag: &str) -> String {
    let mut t = tag.to_ascii_lowercase();
    if t == "*" {
        return t;
    }
    if let Some(rest) = t.strip_prefix("fw-") {
        t = rest.to_string();
    }
    if let Some(p) = t.find('+') {
        t.truncate(p);
    }
    loop {
        let before = t.len();
        for suf in ["-tl", "-hl", "-nc"] {
            if let Some(rest) = t.strip_suffix(suf) {
                t = rest.to_string();
            }
        }
        if t.len() == before {
            break;
        }
    }
    if t.len() > 1 {
        if let Some(rest) = t.strip_suffix('*') {
            t = rest.to_string();
        }
    }
    t
}

/// The universal-style class of a Brown tag (see the module docs).
pub fn universal_tag(tag: &str) -> &'static str {
    let t = normalize_tag(tag);
    let t = t.as_str();
    let starts = |p: &str| t.starts_with(p);
    match t {
        "*" | "rn" | "wrb" | "abl" | "wql" => "ADV",
        "md" => "VERB",
        "od" | "jj" | "jjr" | "jjs" | "jjt" => "ADJ",
        "at" | "ap" | "ap$" | "abn" | "abx" | "wdt" | "ex" => "DET",
        "in" => "ADP",
        "cd" | "cd$" => "NUM",
        // Nominal pronouns ("anyone", "nothing") and their possessives.
        "pn" | "pn$" => "PRON",
        "cc" | "cs" => "CONJ",
        "to" | "rp" => "PRT",
        "." | "," | ":" | "(" | ")" | "--" | "`" | "'" | "``" | "''" | "'''" => ".",
        _ if starts("nn") || starts("np") || starts("nr") => "NOUN",
        _ if starts("vb") || starts("be") || starts("do") || starts("hv") => "VERB",
        _ if starts("jj") => "ADJ",
        _ if starts("rb") || starts("ql") => "ADV",
        _ if starts("pp") || starts("wp") => "PRON",
        _ if starts("dt") => "DET",
        _ => "X",
    }
}

/// The twelve universal-style classes, in a fixed order.
pub const UNIVERSAL_TAGS: [&str; 12] = ["NOUN", "VERB", "ADJ", "ADV", "PRON", "DET", "ADP", "NUM", "CONJ", "PRT", ".", "X"];

/// A sentence with its tags mapped by [`universal_tag`].
pub fn to_universal(s: &TaggedTokens) -> TaggedTokens {
    TaggedTokens { words: s.words.clone(), tags: s.tags.iter().map(|t| universal_tag(t).to_string()).collect() }
}
