//! Text for the classifiers: the tokenizer, the vocabulary and the readers of text that real
//! files hold (UTF-8 or not).

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// How raw text becomes tokens. Saved with a run, so evaluation and prediction tokenize new
/// text exactly as training did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tokenizer {
    /// Lower-case before splitting.
    pub lowercase: bool,
    /// Split off punctuation as tokens of its own (`"don't stop!"` → `don't`, `stop`, `!`);
    /// otherwise split on white space only (pre-tokenized input such as token sequences).
    pub split_punctuation: bool,
    /// Keep at most this many tokens of a text (the rest are dropped).
    pub max_len: usize,
}

impl Default for Tokenizer {
    fn default() -> Self {
        Tokenizer { lowercase: true, split_punctuation: true, max_len: 400 }
    }
}

impl Tokenizer {
    /// The tokens of `text`: runs of letters, digits and apostrophes are words; with
    /// `split_punctuation` every other non-space character is a token of its own.
    pub fn tokenize(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = String::new();
        let flush = |cur: &mut String, out: &mut Vec<String>| {
            if !cur.is_empty() {
                out.push(std::mem::take(cur));
            }
        };
        for c in text.chars() {
            if out.len() >= self.max_len {
                break;
            }
            if c.is_whitespace() {
                flush(&mut cur, &mut out);
            } else if !self.split_punctuation || c.is_alphanumeric() || c == '\'' {
                if self.lowercase {
                    cur.extend(c.to_lowercase());
                } else {
                    cur.push(c);
                }
            } else {
                flush(&mut cur, &mut out);
                out.push(c.to_string());
            }
        }
        flush(&mut cur, &mut out);
        out.truncate(self.max_len);
        out
    }
    /// Whether `text` has more tokens than [`Tokenizer::tokenize`] keeps (it is cut): the
    /// text is tokenized one token further.
    pub fn cuts(&self, text: &str) -> bool {
        Tokenizer { max_len: self.max_len.saturating_add(1), ..self.clone() }.tokenize(text).len() > self.max_len
    }
}

/// The unknown-token id of every [`Vocab`].
pub const UNK_ID: usize = 0;
/// The unknown token.
pub const UNK: &str = "<unk>";

/// Token ↔ id. Id [`UNK_ID`] is `<unk>`; the others are sorted by decreasing training count
/// (ties by first occurrence), so `max_size` keeps the most frequent tokens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "Vec<String>", into = "Vec<String>")]
pub struct Vocab {
    words: Vec<String>,
    index: HashMap<String, usize>,
}

impl From<Vec<String>> for Vocab {
    fn from(words: Vec<String>) -> Self {
        let mut words = words;
        if words.first().map(String::as_str) != Some(UNK) {
            words.insert(0, UNK.to_string());
        }
        let index = words.iter().enumerate().map(|(i, w)| (w.clone(), i)).collect();
        Vocab { words, index }
    }
}

impl From<Vocab> for Vec<String> {
    fn from(v: Vocab) -> Self {
        v.words
    }
}

impl Vocab {
    /// The tokens of `docs` that occur at least `min_count` times, the `max_size − 1` most
    /// frequent of them (`max_size` counts `<unk>`; 0 means no limit).
    pub fn build<D: IntoIterator<Item = W>, W: AsRef<str>>(docs: impl IntoIterator<Item = D>, min_count: usize, max_size: usize) -> Vocab {
        // Each distinct word is copied once, so the documents can be made one at a time.
        let mut counts: HashMap<String, (usize, usize)> = HashMap::new();
        for d in docs {
            for w in d {
                let w = w.as_ref();
                match counts.get_mut(w) {
                    Some(e) => e.0 += 1,
                    None => {
                        let next = counts.len();
                        counts.insert(w.to_string(), (1, next));
                    }
                }
            }
        }
        let mut kept: Vec<(String, usize, usize)> =
            counts.into_iter().filter(|(w, (c, _))| *c >= min_count.max(1) && w != UNK).map(|(w, (c, first))| (w, c, first)).collect();
        kept.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
        if max_size > 0 {
            kept.truncate(max_size.saturating_sub(1));
        }
        Vocab::from(kept.into_iter().map(|(w, _, _)| w).collect::<Vec<_>>())
    }
    /// Number of ids, `<unk>` included.
    pub fn len(&self) -> usize {
        self.words.len()
    }
    /// Never true: `<unk>` is always there.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }
    /// The id of `word` ([`UNK_ID`] when unknown).
    pub fn id(&self, word: &str) -> usize {
        self.index.get(word).copied().unwrap_or(UNK_ID)
    }
    /// The token of an id.
    pub fn word(&self, id: usize) -> &str {
        self.words.get(id).map_or(UNK, String::as_str)
    }
    /// The tokens by id.
    pub fn words(&self) -> &[String] {
        &self.words
    }
    /// The ids of `tokens`.
    pub fn encode(&self, tokens: &[String]) -> Vec<usize> {
        tokens.iter().map(|w| self.id(w)).collect()
    }
}

/// Bytes that look like a binary file rather than text: a NUL byte in the first 8 KiB (as
/// `git` and `grep` decide).
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8192)].contains(&0)
}

/// Decodes UTF-16 text that starts with its byte-order mark (`FF FE` little-endian, `FE FF`
/// big-endian); `None` without one. Unpaired surrogates become U+FFFD (the flag says so), as
/// does an odd last byte.
pub fn decode_utf16(bytes: &[u8]) -> Option<(String, bool)> {
    let little = match bytes {
        [0xFF, 0xFE, ..] => true,
        [0xFE, 0xFF, ..] => false,
        _ => return None,
    };
    let body = &bytes[2..];
    let units = body.chunks_exact(2).map(|p| if little { u16::from_le_bytes([p[0], p[1]]) } else { u16::from_be_bytes([p[0], p[1]]) });
    let mut lossy = body.len() % 2 == 1;
    let mut text: String = char::decode_utf16(units)
        .map(|c| {
            c.unwrap_or_else(|_| {
                lossy = true;
                char::REPLACEMENT_CHARACTER
            })
        })
        .collect();
    if body.len() % 2 == 1 {
        text.push(char::REPLACEMENT_CHARACTER);
    }
    Some((text, lossy))
}

/// Decodes text that may not be UTF-8 (old mail, web pages in Latin-1): invalid bytes become
/// U+FFFD. Returns the text and whether anything was replaced.
pub fn decode_lossy(bytes: &[u8]) -> (String, bool) {
    match String::from_utf8_lossy(bytes) {
        std::borrow::Cow::Borrowed(s) => (s.to_string(), false),
        std::borrow::Cow::Owned(s) => (s, true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_with_a_byte_order_mark_is_decoded() {
        let le: Vec<u8> = [0xFF, 0xFE].into_iter().chain("a,b\né\n".encode_utf16().flat_map(u16::to_le_bytes)).collect();
        assert_eq!(decode_utf16(&le), Some(("a,b\né\n".to_string(), false)));
        let be: Vec<u8> = [0xFE, 0xFF].into_iter().chain("x😀".encode_utf16().flat_map(u16::to_be_bytes)).collect();
        assert_eq!(decode_utf16(&be), Some(("x😀".to_string(), false)));
        // A lone surrogate and an odd last byte are replaced, and said to be.
        assert_eq!(decode_utf16(&[0xFF, 0xFE, 0x00, 0xD8, 0x41, 0x00, 0x42]), Some(("\u{FFFD}A\u{FFFD}".to_string(), true)));
        assert_eq!(decode_utf16(b"plain"), None);
    }

    #[test]
    fn tokenizer_splits_punctuation_lowercases_and_truncates() {
        let t = Tokenizer::default();
        assert_eq!(t.tokenize("Don't STOP, now!"), ["don't", "stop", ",", "now", "!"]);
        let raw = Tokenizer { lowercase: false, split_punctuation: false, max_len: 3 };
        assert_eq!(raw.tokenize("A b,c  d e"), ["A", "b,c", "d"]);
        assert!(t.tokenize("  \n\t").is_empty());
    }

    #[test]
    fn vocab_keeps_the_most_frequent_and_maps_unknowns() {
        let docs: Vec<Vec<String>> = vec!["a b b c c c".split(' ').map(String::from).collect(), vec!["d".into()]];
        let v = Vocab::build(docs.iter().map(|d| d.as_slice()), 1, 3);
        assert_eq!(v.words(), [UNK, "c", "b"]);
        assert_eq!(v.encode(&["c".into(), "a".into(), "zzz".into()]), [1, 0, 0]);
        let v2 = Vocab::build(docs.iter().map(|d| d.as_slice()), 2, 0);
        assert_eq!(v2.words(), [UNK, "c", "b"]);
        let json = serde_json::to_string(&v).unwrap();
        assert_eq!(serde_json::from_str::<Vocab>(&json).unwrap(), v);
    }

    #[test]
    fn binary_and_lossy_text_are_told_apart() {
        assert!(looks_binary(b"ab\0cd"));
        assert!(!looks_binary("héllo".as_bytes()));
        let (s, lossy) = decode_lossy(b"caf\xe9");
        assert!(lossy && s.starts_with("caf") && s.ends_with('\u{FFFD}'));
    }
}
