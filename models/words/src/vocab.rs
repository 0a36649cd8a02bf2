//! Vocabulary and corpus: tokens to ids, frequency cut-off, and frequent-word subsampling.

use crate::error::WordsError;
use std::collections::HashMap;
use std::path::Path;

/// Longest sentence a trainer sees; longer lines are cut into pieces of this length, as
/// gensim's `LineSentence` does (its `MAX_WORDS_IN_BATCH`).
pub const MAX_SENTENCE_LEN: usize = 10_000;

/// Memory a token of a [`Text`] takes at most, counted before reading a corpus: its `String`
/// (24 bytes) and the allocation holding its characters (a short word's smallest block, 16–32
/// bytes depending on the allocator).
pub const TOKEN_BYTES: usize = 56;

/// Deepest folder nesting a corpus directory is read to.
const MAX_CORPUS_DEPTH: usize = 32;

/// The regular files under `dir`, sorted by path, hidden names (`.git`, `.DS_Store`) skipped;
/// a folder reached twice through links is read once.
fn corpus_files(dir: &Path) -> Result<Vec<std::path::PathBuf>, WordsError> {
    type Seen = std::collections::HashSet<std::path::PathBuf>;
    fn walk(root: &Path, dir: &Path, depth: usize, seen: &mut Seen, out: &mut Vec<std::path::PathBuf>) -> Result<(), WordsError> {
        let io = |e: std::io::Error| WordsError::Io { path: dir.to_path_buf(), message: e.to_string() };
        let mut entries: Vec<std::path::PathBuf> = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let entry = entry.map_err(io)?;
            if !entry.file_name().to_string_lossy().starts_with('.') {
                entries.push(entry.path());
            }
        }
        entries.sort();
        for p in entries {
            if p.is_file() {
                out.push(p);
            } else if p.is_dir() {
                if !seen.insert(std::fs::canonicalize(&p).map_err(io)?) {
                    continue;
                }
                if depth >= MAX_CORPUS_DEPTH {
                    return Err(WordsError::Io { path: root.to_path_buf(), message: format!("folders nested deeper than {MAX_CORPUS_DEPTH} levels ({})", p.display()) });
                }
                walk(root, &p, depth + 1, seen, out)?;
            }
        }
        Ok(())
    }
    let mut seen = Seen::new();
    seen.insert(std::fs::canonicalize(dir).map_err(|e| WordsError::Io { path: dir.to_path_buf(), message: e.to_string() })?);
    let mut out = Vec::new();
    walk(dir, dir, 0, &mut seen, &mut out)?;
    Ok(out)
}

/// Tokenised text: sentences of word strings, before any vocabulary is applied.
///
/// A sentence is a line of text; tokens are separated by whitespace. Context windows never
/// cross a sentence boundary.
#[derive(Clone, Debug, Default)]
pub struct Text {
    /// All tokens, sentence after sentence.
    pub tokens: Vec<String>,
    /// `tokens[ends[i-1]..ends[i]]` is sentence `i`.
    pub ends: Vec<usize>,
}

impl Text {
    /// Splits `text` into sentences (lines) and tokens (whitespace); optionally lower-cases.
    pub fn from_str(text: &str, lowercase: bool) -> Text {
        let mut t = Text::default();
        for line in text.lines() {
            let start = t.tokens.len();
            for w in line.split_whitespace() {
                t.tokens.push(if lowercase { w.to_lowercase() } else { w.to_string() });
                if t.tokens.len() - t.ends.last().copied().unwrap_or(0) == MAX_SENTENCE_LEN {
                    t.ends.push(t.tokens.len());
                }
            }
            if t.tokens.len() > start && t.ends.last() != Some(&t.tokens.len()) {
                t.ends.push(t.tokens.len());
            }
        }
        t
    }

    /// Reads a UTF-8 text file, or every regular file in a directory tree (sorted by path,
    /// hidden names skipped), as [`Text::from_str`] does.
    ///
    /// Bounded before anything is kept: each file, and all files together, at most
    /// [`chi_nn::limits::max_file_bytes`] read (an endless stream such as `/dev/zero` is an
    /// error, not an out-of-memory kill), and the tokens' memory (about [`TOKEN_BYTES`] each)
    /// within what the machine has available.
    pub fn read(path: &Path, lowercase: bool) -> Result<Text, WordsError> {
        let files = if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) { corpus_files(path)? } else { vec![path.to_path_buf()] };
        let limit = chi_nn::limits::max_file_bytes();
        let (mut total, mut texts) = (0u64, Vec::with_capacity(files.len()));
        for f in files {
            let bytes = chi_nn::limits::read_file(&f).map_err(|e| WordsError::Io { path: f.clone(), message: e.to_string() })?;
            total += bytes.len() as u64;
            if total > limit {
                return Err(WordsError::Io {
                    path: path.to_path_buf(),
                    message: format!("its files hold more than {limit} bytes, the limit of one input (set {} to raise it)", chi_nn::limits::MAX_FILE_BYTES_ENV),
                });
            }
            let s = String::from_utf8(bytes).map_err(|e| WordsError::Format {
                path: f.clone(),
                line: None,
                message: format!("not UTF-8 (first bad byte at offset {})", e.utf8_error().valid_up_to()),
            })?;
            // NUL is not whitespace: it would end up inside a word, and in the vectors file.
            if let Some(at) = s.find('\0') {
                return Err(WordsError::Format { path: f.clone(), line: Some(s[..at].matches('\n').count() + 1), message: "holds a NUL byte (a binary file?)".into() });
            }
            texts.push(s);
        }
        let tokens: usize = texts.iter().map(|s| s.split_whitespace().count()).sum();
        chi_nn::limits::check_total_bytes(&format!("corpus {}", path.display()), &format!("{tokens} tokens"), tokens as u128 * TOKEN_BYTES as u128)
            .map_err(|e| WordsError::Io { path: path.to_path_buf(), message: e.to_string() })?;
        let mut out = Text { tokens: Vec::with_capacity(tokens), ends: Vec::new() };
        for s in texts {
            let t = Text::from_str(&s, lowercase);
            let base = out.tokens.len();
            out.tokens.extend(t.tokens);
            out.ends.extend(t.ends.into_iter().map(|e| e + base));
        }
        if out.tokens.is_empty() {
            return Err(WordsError::EmptyCorpus);
        }
        Ok(out)
    }

    /// Number of sentences.
    pub fn sentences(&self) -> usize {
        self.ends.len()
    }
}

/// The vocabulary: words seen at least `min_count` times, most frequent first (ties broken by
/// the word, so the order does not depend on hashing).
#[derive(Clone, Debug, PartialEq)]
pub struct Vocab {
    /// Words by id.
    pub words: Vec<String>,
    /// Corpus counts by id (non-increasing).
    pub counts: Vec<u64>,
    index: HashMap<String, u32>,
}

impl Vocab {
    /// Counts the tokens of `text` and keeps the words seen at least `min_count` times.
    pub fn build(text: &Text, min_count: u64) -> Result<Vocab, WordsError> {
        let mut counts: HashMap<&str, u64> = HashMap::new();
        for w in &text.tokens {
            *counts.entry(w.as_str()).or_insert(0) += 1;
        }
        let mut kept: Vec<(&str, u64)> = counts.into_iter().filter(|&(_, c)| c >= min_count.max(1)).collect();
        kept.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        if kept.is_empty() {
            return Err(WordsError::EmptyVocab { min_count });
        }
        Ok(Vocab::from_counts(kept.into_iter().map(|(w, c)| (w.to_string(), c)).collect()))
    }

    /// A vocabulary from `(word, count)` pairs, re-sorted by count (descending) then word.
    pub fn from_counts(mut pairs: Vec<(String, u64)>) -> Vocab {
        pairs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let index = pairs.iter().enumerate().map(|(i, (w, _))| (w.clone(), i as u32)).collect();
        let (words, counts) = pairs.into_iter().unzip();
        Vocab { words, counts, index }
    }

    /// A vocabulary from `(word, count)` pairs in the given order (ids follow it; a repeated
    /// word keeps its first id).
    pub fn from_ordered(pairs: Vec<(String, u64)>) -> Vocab {
        let mut index = HashMap::with_capacity(pairs.len());
        for (i, (w, _)) in pairs.iter().enumerate() {
            index.entry(w.clone()).or_insert(i as u32);
        }
        let (words, counts) = pairs.into_iter().unzip();
        Vocab { words, counts, index }
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether the vocabulary is empty (never true for a built one).
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The id of `word`.
    pub fn id(&self, word: &str) -> Option<u32> {
        self.index.get(word).copied()
    }

    /// Sum of the counts.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Probability of *keeping* each word under frequent-word subsampling with threshold
    /// `sample` (0 disables it), as word2vec's C code and gensim compute it: with
    /// `t = sample · N` (N the total count) and `c` the word's count,
    /// `p_keep = min(1, (√(c / t) + 1) · t / c)`.
    /// (The paper's formula `1 − √(t/f)` is a different, older variant.)
    pub fn keep_probabilities(&self, sample: f64) -> Vec<f64> {
        let total = self.total() as f64;
        self.counts
            .iter()
            .map(|&c| {
                if sample <= 0.0 {
                    return 1.0;
                }
                let t = sample * total;
                let c = c as f64;
                (((c / t).sqrt() + 1.0) * t / c).min(1.0)
            })
            .collect()
    }
}

/// A corpus as word ids: the tokens of a [`Text`] that are in the vocabulary, with sentence
/// boundaries kept (out-of-vocabulary words are dropped before windows are formed, as in
/// word2vec and gensim).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Corpus {
    /// Word ids, sentence after sentence.
    pub ids: Vec<u32>,
    /// `ids[ends[i-1]..ends[i]]` is sentence `i` (empty sentences are dropped).
    pub ends: Vec<usize>,
}

impl Corpus {
    /// Encodes `text` with `vocab`.
    pub fn encode(text: &Text, vocab: &Vocab) -> Corpus {
        let mut c = Corpus::default();
        let mut start = 0;
        for &end in &text.ends {
            let before = c.ids.len();
            c.ids.extend(text.tokens[start..end].iter().filter_map(|w| vocab.id(w)));
            if c.ids.len() > before {
                c.ends.push(c.ids.len());
            }
            start = end;
        }
        c
    }

    /// Number of sentences.
    pub fn sentences(&self) -> usize {
        self.ends.len()
    }

    /// Sentence `i` as a slice of ids.
    pub fn sentence(&self, i: usize) -> &[u32] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.ids[start..self.ends[i]]
    }
}
