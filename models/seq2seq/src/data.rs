//! Parallel data: English–Spanish Bible verses read from SWORD zText modules by our own reader,
//! CMUdict pronunciations for grapheme-to-phoneme, and any user corpus as two aligned text
//! files.
//!
//! **SWORD zText** (the format of the Debian `sword-text-*` packages): per testament
//! (`ot`, `nt`) three files —
//! * `.bzs`: the block index, 12 bytes per block: `u32` offset into `.bzz`, `u32` compressed
//!   size, `u32` uncompressed size (little-endian);
//! * `.bzv`: the verse index, 10 bytes per entry: `u32` block, `u32` offset in the uncompressed
//!   block, `u16` size — one entry per versification slot (module and testament headings, then
//!   per book a heading, per chapter a heading, then the verses);
//! * `.bzz`: the zlib-compressed blocks. With `BlockType=BOOK` (both modules used here) a block is
//!   one book, so the block number names the book.
//!
//! Entries carry OSIS markup; we drop every tag (and the text of `<note>` elements) and collapse
//! whitespace. Two modules with the same versification align slot by slot.

use crate::error::Seq2SeqError;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Largest file any reader here accepts (the biggest real input, the Old Testament `.bzz`, is
/// about 2 MB; CMUdict 3.6 MB).
pub const MAX_FILE_BYTES: u64 = 256 << 20;

fn read_bounded(path: &Path) -> Result<Vec<u8>, Seq2SeqError> {
    let err = |m: String| Seq2SeqError::Data(format!("{}: {m}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| err(e.to_string()))?;
    if !meta.is_file() {
        return Err(err("not a regular file".into()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(err(format!("{} bytes is more than the {MAX_FILE_BYTES}-byte limit", meta.len())));
    }
    std::fs::read(path).map_err(|e| err(e.to_string()))
}

/// One slot of a SWORD module.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Block (= book, for book-blocked modules) the entry lives in.
    pub block: u32,
    /// The raw OSIS text (empty for empty slots).
    pub osis: String,
}

/// Reads every slot of one testament (`"ot"` or `"nt"`) of a zText module directory.
pub fn read_ztext(dir: &Path, testament: &str) -> Result<Vec<Entry>, Seq2SeqError> {
    let file = |ext: &str| dir.join(format!("{testament}.{ext}"));
    let (bzs_p, bzv_p, bzz_p) = (file("bzs"), file("bzv"), file("bzz"));
    let (bzs, bzv, bzz) = (read_bounded(&bzs_p)?, read_bounded(&bzv_p)?, read_bounded(&bzz_p)?);
    let bad = |p: &PathBuf, m: String| Seq2SeqError::Data(format!("{}: {m}", p.display()));
    if bzs.len() % 12 != 0 {
        return Err(bad(&bzs_p, format!("{} bytes is not a whole number of 12-byte block records", bzs.len())));
    }
    if bzv.len() % 10 != 0 {
        return Err(bad(&bzv_p, format!("{} bytes is not a whole number of 10-byte verse records", bzv.len())));
    }
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let blocks: Vec<(usize, usize, usize)> = (0..bzs.len() / 12).map(|i| (u32_at(&bzs, 12 * i) as usize, u32_at(&bzs, 12 * i + 4) as usize, u32_at(&bzs, 12 * i + 8) as usize)).collect();
    let mut cache: Vec<Option<Vec<u8>>> = vec![None; blocks.len()];
    let mut out = Vec::with_capacity(bzv.len() / 10);
    for i in 0..bzv.len() / 10 {
        let (b, off, size) = (u32_at(&bzv, 10 * i), u32_at(&bzv, 10 * i + 4) as usize, u16::from_le_bytes([bzv[10 * i + 8], bzv[10 * i + 9]]) as usize);
        if size == 0 {
            out.push(Entry { block: b, osis: String::new() });
            continue;
        }
        let bi = b as usize;
        let &(zoff, zlen, ulen) = blocks.get(bi).ok_or_else(|| bad(&bzv_p, format!("entry {i} names block {b}, but the block index has {}", blocks.len())))?;
        if cache[bi].is_none() {
            let end = zoff.checked_add(zlen).filter(|&e| e <= bzz.len()).ok_or_else(|| bad(&bzs_p, format!("block {b} ({zoff}+{zlen}) runs past the end of {} bytes", bzz.len())))?;
            if ulen as u64 > MAX_FILE_BYTES {
                return Err(bad(&bzs_p, format!("block {b} claims {ulen} uncompressed bytes")));
            }
            let mut data = Vec::with_capacity(ulen);
            flate2::read::ZlibDecoder::new(&bzz[zoff..end]).take(ulen as u64 + 1).read_to_end(&mut data).map_err(|e| bad(&bzz_p, format!("block {b}: {e}")))?;
            if data.len() != ulen {
                return Err(bad(&bzz_p, format!("block {b} inflates to {} bytes, the index says {ulen}", data.len())));
            }
            cache[bi] = Some(data);
        }
        let data = cache[bi].as_ref().expect("just filled");
        let text = off.checked_add(size).and_then(|e| data.get(off..e)).ok_or_else(|| bad(&bzv_p, format!("entry {i} ({off}+{size}) runs past block {b} of {} bytes", data.len())))?;
        out.push(Entry { block: b, osis: String::from_utf8_lossy(text).into_owned() });
    }
    Ok(out)
}

/// The plain text of an OSIS fragment: `<note>` elements dropped with their content, every
/// other tag dropped, whitespace collapsed, the paragraph mark `¶` removed.
pub fn strip_osis(osis: &str) -> String {
    let mut out = String::with_capacity(osis.len());
    let mut rest = osis;
    let mut in_note = 0usize;
    while let Some(lt) = rest.find('<') {
        if in_note == 0 {
            out.push_str(&rest[..lt]);
        }
        let Some(gt) = rest[lt..].find('>') else { break };
        let tag = &rest[lt..lt + gt + 1];
        if tag.starts_with("<note") && !tag.ends_with("/>") {
            in_note += 1;
        } else if tag.starts_with("</note") {
            in_note = in_note.saturating_sub(1);
        }
        rest = &rest[lt + gt + 1..];
    }
    if in_note == 0 {
        out.push_str(rest);
    }
    out.replace('¶', " ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An aligned pair of verses.
#[derive(Clone, Debug, PartialEq)]
pub struct VersePair {
    /// `"ot"` or `"nt"`.
    pub testament: &'static str,
    /// The block number: for a book-blocked module the book (in the Debian modules block 0 holds
    /// the module headings, so books are 1–39 in `ot` and 1–27 in `nt`).
    pub book: u32,
    /// Slot index within the testament.
    pub slot: usize,
    /// Source-side text.
    pub src: String,
    /// Target-side text.
    pub tgt: String,
}

/// Aligns two zText modules of the same versification slot by slot (both testaments), keeping
/// the verse slots where both texts are non-empty. Skipped: the module and testament headings
/// (slots 0–1), book headings (the slot opening a `type="book"` division) and chapter headings
/// (slots whose source text is empty once stripped). (`osisID=` also ends in `sID=`: the test
/// looks for the attribute ` sID="`.)
pub fn align_modules(src_dir: &Path, tgt_dir: &Path) -> Result<Vec<VersePair>, Seq2SeqError> {
    let mut pairs = Vec::new();
    for testament in ["ot", "nt"] {
        let (a, b) = (read_ztext(src_dir, testament)?, read_ztext(tgt_dir, testament)?);
        if a.len() != b.len() {
            return Err(Seq2SeqError::Data(format!(
                "{} and {}: {testament} has {} slots in one and {} in the other (different versifications?)",
                src_dir.display(),
                tgt_dir.display(),
                a.len(),
                b.len()
            )));
        }
        for (slot, (x, y)) in a.iter().zip(&b).enumerate().skip(2) {
            let opens_book = |s: &str| s.split('<').any(|t| t.contains("type=\"book\"") && t.contains(" sID=\""));
            if opens_book(&x.osis) || opens_book(&y.osis) {
                continue;
            }
            let (s, t) = (strip_osis(&x.osis), strip_osis(&y.osis));
            if !s.is_empty() && !t.is_empty() {
                pairs.push(VersePair { testament, book: x.block, slot, src: s, tgt: t });
            }
        }
    }
    Ok(pairs)
}

/// The fixed held-out books of the Bible experiments (block numbers of the Debian modules):
/// validation = Ruth (OT 8) and Philippians (NT 11), test = Jonah (OT 32), Ephesians (NT 10) and
/// Colossians (NT 12); training = every other book. Whole books are held out so that test verses
/// do not share chapters (and their near-duplicate phrasing) with training verses.
pub const VALID_BOOKS: [(&str, u32); 2] = [("ot", 8), ("nt", 11)];
/// See [`VALID_BOOKS`].
pub const TEST_BOOKS: [(&str, u32); 3] = [("ot", 32), ("nt", 10), ("nt", 12)];

/// Splits aligned verses into (train, validation, test) by book ([`VALID_BOOKS`],
/// [`TEST_BOOKS`]).
pub fn split_by_book(pairs: Vec<VersePair>) -> (Vec<VersePair>, Vec<VersePair>, Vec<VersePair>) {
    let (mut train, mut valid, mut test) = (Vec::new(), Vec::new(), Vec::new());
    for p in pairs {
        let key = (p.testament, p.book);
        if VALID_BOOKS.contains(&key) {
            valid.push(p);
        } else if TEST_BOOKS.contains(&key) {
            test.push(p);
        } else {
            train.push(p);
        }
    }
    (train, valid, test)
}

/// Lower-cases and splits text into word and punctuation tokens (a letter/digit run, an
/// apostrophe inside a word kept, every other non-space character alone).
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let inner_apostrophe = c == '\'' && !cur.is_empty() && chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
        if c.is_alphanumeric() || inner_apostrophe {
            cur.extend(c.to_lowercase());
        } else {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// One CMUdict entry: a word's letters and its phonemes (stress digits kept, as ARPAbet has
/// them: `AH0`, `EY1`).
#[derive(Clone, Debug, PartialEq)]
pub struct Pronunciation {
    /// The word as listed (lower case; alternates such as `read(2)` lose their suffix).
    pub word: String,
    /// Its phonemes.
    pub phonemes: Vec<String>,
}

/// Reads CMUdict's `cmudict.dict` (`word PH1 PH2 …` per line, `#` comments after the
/// phonemes). With `first_only`, alternate pronunciations (`word(2)`) are skipped so that each
/// word has one target. Errors name the line.
pub fn read_cmudict(path: &Path, first_only: bool) -> Result<Vec<Pronunciation>, Seq2SeqError> {
    let bytes = read_bounded(path)?;
    let text = std::str::from_utf8(&bytes).map_err(|e| Seq2SeqError::Data(format!("{}: not UTF-8 text ({e})", path.display())))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split(" #").next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut parts = line.split_whitespace();
        let word = parts.next().expect("non-empty line");
        let phonemes: Vec<String> = parts.map(String::from).collect();
        if phonemes.is_empty() {
            return Err(Seq2SeqError::Data(format!("{}:{}: word {word:?} has no phonemes", path.display(), n + 1)));
        }
        if let Some(p) = phonemes.iter().find(|p| !p.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())) {
            return Err(Seq2SeqError::Data(format!("{}:{}: {p:?} is not an ARPAbet phoneme", path.display(), n + 1)));
        }
        let (base, alternate) = match word.find('(') {
            Some(i) if word.ends_with(')') => (&word[..i], true),
            _ => (word, false),
        };
        if first_only && alternate {
            continue;
        }
        out.push(Pronunciation { word: base.to_string(), phonemes });
    }
    if out.is_empty() {
        return Err(Seq2SeqError::Data(format!("{}: no entries", path.display())));
    }
    Ok(out)
}

/// Reads a user parallel corpus: two text files with one sentence per line, line `i` of one
/// translating line `i` of the other. Blank lines must match blank lines; pairs with a blank side
/// are an error naming the line (silently dropping them would shift nothing, but hides broken
/// alignment more often than not).
pub fn read_parallel(src: &Path, tgt: &Path) -> Result<Vec<(String, String)>, Seq2SeqError> {
    let read = |p: &Path| -> Result<String, Seq2SeqError> {
        let b = read_bounded(p)?;
        if b.contains(&0) {
            return Err(Seq2SeqError::Data(format!("{}: has NUL bytes: a binary file, not text", p.display())));
        }
        let t = String::from_utf8(b).map_err(|e| Seq2SeqError::Data(format!("{}: not UTF-8 text ({e})", p.display())))?;
        // A byte-order mark (what some editors save first) is not part of the first sentence.
        Ok(t.strip_prefix('\u{feff}').map(str::to_string).unwrap_or(t))
    };
    let (a, b) = (read(src)?, read(tgt)?);
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    if la.len() != lb.len() {
        return Err(Seq2SeqError::Data(format!("{} has {} lines but {} has {}: the files must align line by line", src.display(), la.len(), tgt.display(), lb.len())));
    }
    let mut out = Vec::with_capacity(la.len());
    for (i, (x, y)) in la.iter().zip(&lb).enumerate() {
        let (x, y) = (x.trim(), y.trim());
        if x.is_empty() != y.is_empty() {
            return Err(Seq2SeqError::Data(format!("line {}: one side is blank ({} / {})", i + 1, src.display(), tgt.display())));
        }
        if !x.is_empty() {
            out.push((x.to_string(), y.to_string()));
        }
    }
    if out.is_empty() {
        return Err(Seq2SeqError::Data(format!("{} / {}: no sentence pairs", src.display(), tgt.display())));
    }
    Ok(out)
}

/// Which columns of a pairs file hold the source and the target, and how it is laid out.
#[derive(Clone, Debug, PartialEq)]
pub struct PairColumns {
    /// Source column: a header name or a 1-based number (default: a column named `source`,
    /// `src` or `input`, else column 1).
    pub source: Option<String>,
    /// Target column: a header name or a 1-based number (default: a column named `target`,
    /// `tgt`, `output` or `translation`, else column 2).
    pub target: Option<String>,
    /// Whether line 1 names the columns (default: when it holds the named columns, or both
    /// chosen fields are one of the names above).
    pub header: Option<bool>,
    /// Field separator: `b'\t'` (tab-separated, fields taken literally, quotes and all, as
    /// Tatoeba and Anki files have them) or `b','` (CSV with RFC 4180 quoting).
    pub sep: u8,
}

impl Default for PairColumns {
    /// Columns and header detected, tab-separated.
    fn default() -> Self {
        PairColumns { source: None, target: None, header: None, sep: b'\t' }
    }
}

/// Header names taken as the source column when none is given.
const SOURCE_NAMES: [&str; 3] = ["source", "src", "input"];
/// Header names taken as the target column when none is given.
const TARGET_NAMES: [&str; 4] = ["target", "tgt", "output", "translation"];

/// The sentence pairs of a pairs file, and the notes a user should see (the header decision,
/// extra columns left unread).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PairsFile {
    /// `(source, target)` texts, trimmed, in file order; rows blank on both sides are skipped.
    pub pairs: Vec<(String, String)>,
    /// The line (1-based) each pair starts on, for messages.
    pub lines: Vec<usize>,
    /// What was decided about the file, one sentence each.
    pub notes: Vec<String>,
}

/// Reads sentence pairs from a CSV or tab-separated file: one pair per row, the source and target
/// in two of its columns ([`PairColumns`]); other columns (a Tatoeba file's attribution) are
/// left unread. A row without the chosen columns, or blank on one side only, is an error naming
/// its line (a shifted or broken row would otherwise train on wrong pairs).
pub fn read_pairs(path: &Path, cols: &PairColumns) -> Result<PairsFile, Seq2SeqError> {
    let err = |m: String| Seq2SeqError::Data(format!("{}: {m}", path.display()));
    let bytes = read_bounded(path)?;
    if bytes.contains(&0) {
        return Err(err("has NUL bytes: a binary file, not text".into()));
    }
    let records: Vec<(usize, Vec<String>)> = if cols.sep == b'\t' {
        let text = String::from_utf8(bytes).map_err(|e| err(format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to())))?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| (i + 1, l.trim_end_matches('\r').split('\t').map(str::to_string).collect()))
            .collect()
    } else {
        let recs = chi_nn::data::csv_from_bytes_with(&bytes, cols.sep).map_err(|e| Seq2SeqError::Data(e.with_path(path).to_string()))?;
        recs.into_iter().filter(|r| !r.fields.iter().all(|f| f.trim().is_empty())).map(|r| (r.line, r.fields)).collect()
    };
    let Some((_, first)) = records.first() else {
        return Err(err("holds no rows".into()));
    };
    let lower: Vec<String> = first.iter().map(|f| f.trim().to_lowercase()).collect();
    let by_name = |given: &str| lower.iter().position(|f| *f == given.trim().to_lowercase());
    let by_number = |given: &str| given.trim().parse::<usize>().ok().filter(|&n| n >= 1).map(|n| n - 1);
    let known = |names: &[&str]| lower.iter().position(|f| names.contains(&f.as_str()));
    // A given name that line 1 holds makes line 1 a header; so do the usual names. A column
    // number is not a name, even when line 1 holds it as text.
    let named = [&cols.source, &cols.target].iter().any(|c| c.as_deref().is_some_and(|c| by_number(c).is_none() && by_name(c).is_some()));
    let usual = known(&SOURCE_NAMES).is_some() && known(&TARGET_NAMES).is_some();
    let header = cols.header.unwrap_or(named || usual);
    let pick = |given: &Option<String>, names: &[&str], default: usize, role: &str| -> Result<usize, Seq2SeqError> {
        if let Some(n) = given.as_deref().and_then(|g| g.trim().parse::<i64>().ok()).filter(|&n| n < 1) {
            return Err(err(format!("the {role} column number {n}: columns are numbered from 1")));
        }
        match given {
            Some(g) => match (header.then(|| by_name(g)).flatten(), by_number(g)) {
                (Some(i), _) => Ok(i),
                (None, Some(i)) => Ok(i),
                (None, None) if header => Err(err(format!("no {role} column named {g:?} (line 1 has {})", first.iter().map(|f| format!("{:?}", f.trim())).collect::<Vec<_>>().join(", ")))),
                (None, None) => Err(err(format!("the {role} column {g:?} is a name, but line 1 is read as data (give --header yes, or a column number)"))),
            },
            None => Ok(if header { known(names).unwrap_or(default) } else { default }),
        }
    };
    let src = pick(&cols.source, &SOURCE_NAMES, 0, "source")?;
    let tgt = pick(&cols.target, &TARGET_NAMES, 1, "target")?;
    if src == tgt {
        return Err(err(format!("the source and target are the same column ({})", src + 1)));
    }
    let mut out = PairsFile::default();
    let width = first.len();
    out.notes.push(if header {
        format!("line 1 names the columns; source {:?}, target {:?}", first.get(src).map_or("", |s| s.trim()), first.get(tgt).map_or("", |s| s.trim()))
    } else {
        let how = if cols.header.is_some() { "" } else { ": give --header yes if it names the columns" };
        format!("line 1 is data (no header{how}); source column {}, target column {}", src + 1, tgt + 1)
    });
    if width > 2 {
        out.notes.push(format!("{} other column(s) left unread", width.saturating_sub(2)));
    }
    for (line, fields) in records.into_iter().skip(header as usize) {
        let (Some(s), Some(t)) = (fields.get(src), fields.get(tgt)) else {
            let sep = if cols.sep == b'\t' { "tab" } else { "comma" };
            return Err(err(format!("line {line}: {} {sep}-separated field(s), the source and target need {}", fields.len(), src.max(tgt) + 1)));
        };
        let (s, t) = (s.trim(), t.trim());
        if s.is_empty() != t.is_empty() {
            return Err(err(format!("line {line}: the {} is blank but the {} is not", if s.is_empty() { "source" } else { "target" }, if s.is_empty() { "target" } else { "source" })));
        }
        if !s.is_empty() {
            out.pairs.push((s.to_string(), t.to_string()));
            out.lines.push(line);
        }
    }
    if out.pairs.is_empty() {
        return Err(err("holds no sentence pairs".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// Writes a two-book module: slots = [module heading, testament heading, book 1 heading,
    /// chapter heading, verse, verse, book 2 heading, chapter heading, verse].
    fn write_module(dir: &Path, verses: [&str; 3]) {
        let b1 = format!("<div type=\"book\" sID=\"b1\"/>Title<chapter sID=\"c1\"/>{}{}", verses[0], verses[1]);
        let b2 = format!("<div sID=\"b2\" type=\"book\"/>Two<chapter sID=\"c2\"/>{}", verses[2]);
        let (z1, z2) = (zlib(b1.as_bytes()), zlib(b2.as_bytes()));
        let mut bzs = Vec::new();
        for (off, z, u) in [(0usize, &z1, b1.len()), (z1.len(), &z2, b2.len())] {
            bzs.extend((off as u32).to_le_bytes());
            bzs.extend((z.len() as u32).to_le_bytes());
            bzs.extend((u as u32).to_le_bytes());
        }
        let mut bzz = z1.clone();
        bzz.extend(&z2);
        let t1 = "<div type=\"book\" sID=\"b1\"/>Title".len();
        let c1 = "<chapter sID=\"c1\"/>".len();
        let t2 = "<div sID=\"b2\" type=\"book\"/>Two".len();
        let c2 = "<chapter sID=\"c2\"/>".len();
        let (v0, v1, v2) = (verses[0].len(), verses[1].len(), verses[2].len());
        let slots: [(u32, usize, usize); 9] = [(0, 0, 0), (0, 0, 0), (0, 0, t1), (0, t1, c1), (0, t1 + c1, v0), (0, t1 + c1 + v0, v1), (1, 0, t2), (1, t2, c2), (1, t2 + c2, v2)];
        let mut bzv = Vec::new();
        for (b, o, s) in slots {
            bzv.extend(b.to_le_bytes());
            bzv.extend((o as u32).to_le_bytes());
            bzv.extend((s as u16).to_le_bytes());
        }
        std::fs::create_dir_all(dir).unwrap();
        for t in ["ot", "nt"] {
            std::fs::write(dir.join(format!("{t}.bzs")), &bzs).unwrap();
            std::fs::write(dir.join(format!("{t}.bzv")), &bzv).unwrap();
            std::fs::write(dir.join(format!("{t}.bzz")), &bzz).unwrap();
        }
    }

    #[test]
    fn ztext_round_trip_and_alignment() {
        let root = std::env::temp_dir().join(format!("chi-s2s-ztext-{}", std::process::id()));
        let (en, es) = (root.join("en"), root.join("es"));
        write_module(&en, ["In the <w lemma=\"x\">beginning</w>.", "¶ And <note>a footnote</note>light.", "Amen."]);
        write_module(&es, ["En el principio.", "", "Amén."]);
        let e = read_ztext(&en, "ot").unwrap();
        assert_eq!(e.len(), 9);
        assert_eq!(strip_osis(&e[5].osis), "And light.");
        let pairs = align_modules(&en, &es).unwrap();
        // Per testament: verse 2 is empty in Spanish, so 2 pairs each.
        assert_eq!(pairs.len(), 4);
        assert_eq!((pairs[0].src.as_str(), pairs[0].tgt.as_str(), pairs[0].book), ("In the beginning.", "En el principio.", 0));
        assert_eq!((pairs[1].src.as_str(), pairs[1].book, pairs[1].slot), ("Amen.", 1, 8));
        // Damage: a truncated compressed file names the file and block.
        let bzz = std::fs::read(en.join("nt.bzz")).unwrap();
        std::fs::write(en.join("nt.bzz"), &bzz[..bzz.len() - 5]).unwrap();
        let err = read_ztext(&en, "nt").unwrap_err().to_string();
        assert!(err.contains("nt.bzs") && err.contains("block 1") && err.contains("runs past"), "{err}");
        std::fs::write(en.join("nt.bzv"), [0u8; 7]).unwrap();
        assert!(read_ztext(&en, "nt").unwrap_err().to_string().contains("10-byte verse records"));
        std::fs::remove_dir_all(&root).ok();
    }

    #[test]
    fn tokenizer_and_cmudict_and_parallel_files() {
        assert_eq!(tokenize("And God said, Let there be light: and there's light."), ["and", "god", "said", ",", "let", "there", "be", "light", ":", "and", "there's", "light", "."]);
        assert_eq!(tokenize("¡Él dijo 'sí'!"), ["¡", "él", "dijo", "'", "sí", "'", "!"]);
        let root = std::env::temp_dir().join(format!("chi-s2s-files-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let d = root.join("cmu.dict");
        std::fs::write(&d, "abc EY1 B IY1 S IY1\nread R IY1 D\nread(2) R EH1 D # past\n").unwrap();
        let p = read_cmudict(&d, true).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[1].phonemes, ["R", "IY1", "D"]);
        assert_eq!(read_cmudict(&d, false).unwrap()[2].word, "read");
        std::fs::write(&d, "abc EY1\nbad\n").unwrap();
        assert!(read_cmudict(&d, true).unwrap_err().to_string().contains("cmu.dict:2: word \"bad\" has no phonemes"));
        std::fs::write(&d, "abc ey1\n").unwrap();
        assert!(read_cmudict(&d, true).unwrap_err().to_string().contains("not an ARPAbet phoneme"));
        let (a, b) = (root.join("a.txt"), root.join("b.txt"));
        std::fs::write(&a, "hello\n\nworld\n").unwrap();
        std::fs::write(&b, "hola\n\nmundo\n").unwrap();
        assert_eq!(read_parallel(&a, &b).unwrap().len(), 2);
        std::fs::write(&b, "hola\nmundo\n").unwrap();
        assert!(read_parallel(&a, &b).unwrap_err().to_string().contains("must align line by line"));
        std::fs::write(&a, "\u{feff}hello\n\nworld\n").unwrap();
        std::fs::write(&b, "hola\n\nmundo\n").unwrap();
        assert_eq!(read_parallel(&a, &b).unwrap()[0].0, "hello", "the byte-order mark is not text");
        std::fs::write(&b, "ho\0la\n\nmundo\n").unwrap();
        assert!(read_parallel(&a, &b).unwrap_err().to_string().contains("NUL bytes"));
        std::fs::write(&a, "hello\n\nworld\n").unwrap();
        std::fs::write(&b, "hola\nx\nmundo\n").unwrap();
        assert!(read_parallel(&a, &b).unwrap_err().to_string().contains("line 2: one side is blank"));
        assert!(read_parallel(&root, &b).unwrap_err().to_string().contains("not a regular file"));
        std::fs::remove_dir_all(&root).ok();
    }

    #[test]
    fn pairs_files_with_and_without_headers() {
        let root = std::env::temp_dir().join(format!("chi-s2s-pairs-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let f = root.join("p.tsv");
        let tab = |source: Option<&str>, target: Option<&str>, header: Option<bool>| PairColumns { source: source.map(String::from), target: target.map(String::from), header, sep: b'\t' };
        // Tatoeba's layout: no header, a third column of attribution, quotes taken literally.
        std::fs::write(&f, "\u{feff}Go.\tVa !\tCC-BY 2.0\n\"Run!\" he said.\t« Cours ! », dit-il.\tCC-BY 2.0\r\n\n").unwrap();
        let p = read_pairs(&f, &tab(None, None, None)).unwrap();
        assert_eq!(p.pairs, [("Go.".to_string(), "Va !".to_string()), ("\"Run!\" he said.".into(), "« Cours ! », dit-il.".into())]);
        assert_eq!(p.lines, [1, 2]);
        assert!(p.notes[0].contains("no header") && p.notes[1].contains("1 other column"), "{:?}", p.notes);
        // Columns by number, either way round.
        let p = read_pairs(&f, &tab(Some("2"), Some("1"), None)).unwrap();
        assert_eq!(p.pairs[0], ("Va !".to_string(), "Go.".to_string()));
        // A header with the usual names, in any order and case.
        std::fs::write(&f, "id\tTarget\tSource\n7\thola\thello\n").unwrap();
        let p = read_pairs(&f, &tab(None, None, None)).unwrap();
        assert_eq!(p.pairs, [("hello".to_string(), "hola".to_string())]);
        assert_eq!(p.lines, [2]);
        // Named columns make line 1 a header; a name line 1 lacks is an error listing its fields.
        std::fs::write(&f, "en\tes\nhello\thola\n").unwrap();
        assert_eq!(read_pairs(&f, &tab(Some("en"), Some("es"), None)).unwrap().pairs.len(), 1);
        let e = read_pairs(&f, &tab(Some("en"), Some("fr"), Some(true))).unwrap_err().to_string();
        assert!(e.contains("no target column named \"fr\"") && e.contains("\"es\""), "{e}");
        let e = read_pairs(&f, &tab(Some("fr"), None, Some(false))).unwrap_err().to_string();
        assert!(e.contains("line 1 is read as data"), "{e}");
        assert!(read_pairs(&f, &tab(Some("2"), Some("2"), None)).unwrap_err().to_string().contains("same column"));
        assert!(read_pairs(&f, &tab(Some("0"), None, None)).unwrap_err().to_string().contains("source column number 0: columns are numbered from 1"));
        assert!(read_pairs(&f, &tab(None, Some("-1"), None)).unwrap_err().to_string().contains("target column number -1"));
        // Broken rows are errors naming their line.
        std::fs::write(&f, "a\tb\nc\n").unwrap();
        assert!(read_pairs(&f, &tab(None, None, None)).unwrap_err().to_string().contains("line 2: 1 tab-separated field(s)"));
        std::fs::write(&f, "a\tb\n\t d\n").unwrap();
        assert!(read_pairs(&f, &tab(None, None, None)).unwrap_err().to_string().contains("line 2: the source is blank"));
        std::fs::write(&f, "\n \n").unwrap();
        assert!(read_pairs(&f, &tab(None, None, None)).unwrap_err().to_string().contains("holds no rows"));
        std::fs::write(&f, "a\0\tb\n").unwrap();
        assert!(read_pairs(&f, &tab(None, None, None)).unwrap_err().to_string().contains("binary"));
        std::fs::write(&f, b"a\tb\xff\n").unwrap();
        assert!(read_pairs(&f, &tab(None, None, None)).unwrap_err().to_string().contains("not UTF-8"));
        // CSV keeps RFC 4180 quoting: a comma inside quotes is text.
        let c = root.join("p.csv");
        std::fs::write(&c, "source,target\n\"Yes, sir.\",\"Oui, monsieur.\"\n").unwrap();
        let p = read_pairs(&c, &PairColumns { sep: b',', ..PairColumns::default() }).unwrap();
        // A column number is not a name, even when line 1 holds it as text.
        std::fs::write(&f, "1\t2\nx\ty\n").unwrap();
        assert_eq!(read_pairs(&f, &tab(Some("1"), Some("2"), None)).unwrap().pairs.len(), 2);
        assert_eq!(p.pairs, [("Yes, sir.".to_string(), "Oui, monsieur.".to_string())]);
        std::fs::write(&c, "a,\"b\n").unwrap();
        assert!(read_pairs(&c, &PairColumns { sep: b',', ..PairColumns::default() }).unwrap_err().to_string().contains("unterminated"));
        std::fs::remove_dir_all(&root).ok();
    }
}
