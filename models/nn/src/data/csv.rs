//! CSV (RFC 4180): comma-separated fields, optionally in double quotes; inside quotes `""` is a
//! quote and commas / newlines are literal. Records end with `\n` or `\r\n`. A UTF-8 BOM at the
//! start is skipped; blank lines are skipped. Fields must be UTF-8.
//!
//! Strict where RFC 4180 is: a quote inside an unquoted field, text after a closing quote and an
//! unterminated quote are errors (with line and column).

use super::error::{parse_file, strip_bom, DataError, Location, Result};
use std::path::Path;

/// One CSV record and the line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvRecord {
    /// 1-based line where the record starts.
    pub line: usize,
    /// The fields, unquoted.
    pub fields: Vec<String>,
}

/// Parses CSV text held in memory (comma separator).
pub fn csv_from_bytes(bytes: &[u8]) -> Result<Vec<CsvRecord>> {
    csv_from_bytes_with(bytes, b',')
}

/// Parses CSV-like text with another single-byte separator (e.g. `b'\t'` for TSV with quoting).
pub fn csv_from_bytes_with(bytes: &[u8], sep: u8) -> Result<Vec<CsvRecord>> {
    let b = strip_bom(bytes);
    let mut out = Vec::new();
    let mut i = 0usize;
    let mut line = 1usize;
    let mut line_start = 0usize;
    let n = b.len();
    let col = |i: usize, ls: usize| i - ls + 1;
    let utf8 = |raw: Vec<u8>, l: usize, c: usize| -> Result<String> {
        String::from_utf8(raw).map_err(|e| {
            DataError::new(Location::LineCol(l, c), format!("invalid UTF-8 in field (at byte {} of the field)", e.utf8_error().valid_up_to()))
        })
    };
    while i < n {
        // Start of a record.
        let rec_line = line;
        let mut fields = Vec::new();
        // Blank line.
        if b[i] == b'\n' || (b[i] == b'\r' && b.get(i + 1) == Some(&b'\n')) {
            i += if b[i] == b'\r' { 2 } else { 1 };
            line += 1;
            line_start = i;
            continue;
        }
        loop {
            // Start of a field.
            let (fl, fc) = (line, col(i, line_start));
            let mut raw = Vec::new();
            if i < n && b[i] == b'"' {
                i += 1;
                loop {
                    if i >= n {
                        return Err(DataError::new(
                            Location::LineCol(fl, fc),
                            format!("unterminated quoted field (opened here, file ends at line {line})"),
                        ));
                    }
                    match b[i] {
                        b'"' if b.get(i + 1) == Some(&b'"') => {
                            raw.push(b'"');
                            i += 2;
                        }
                        b'"' => {
                            i += 1;
                            break;
                        }
                        c => {
                            if c == b'\n' {
                                line += 1;
                                line_start = i + 1;
                            }
                            raw.push(c);
                            i += 1;
                        }
                    }
                }
                // After the closing quote: separator, end of record or end of input.
                match b.get(i) {
                    None | Some(b'\n') => {}
                    Some(b'\r') if b.get(i + 1) == Some(&b'\n') => {}
                    Some(&c) if c == sep => {}
                    Some(&c) => {
                        return Err(DataError::new(
                            Location::LineCol(line, col(i, line_start)),
                            format!("unexpected {} after a closing quote (expected separator or end of line){}", show(c), separator_hint(c, sep)),
                        ))
                    }
                }
            } else {
                while i < n && b[i] != sep && b[i] != b'\n' && !(b[i] == b'\r' && b.get(i + 1) == Some(&b'\n')) {
                    if b[i] == b'"' {
                        return Err(DataError::new(
                            Location::LineCol(line, col(i, line_start)),
                            "quote inside an unquoted field (quote the whole field and double inner quotes)",
                        ));
                    }
                    raw.push(b[i]);
                    i += 1;
                }
            }
            fields.push(utf8(raw, fl, fc)?);
            match b.get(i) {
                Some(&c) if c == sep => {
                    i += 1;
                }
                Some(b'\r') => {
                    i += 2;
                    line += 1;
                    line_start = i;
                    break;
                }
                Some(b'\n') => {
                    i += 1;
                    line += 1;
                    line_start = i;
                    break;
                }
                _ => break,
            }
        }
        out.push(CsvRecord { line: rec_line, fields });
    }
    Ok(out)
}

/// What to add when `c`, found where the separator `sep` should be, is another common
/// separator: quoted fields of a file separated by it fail here, before its header could be
/// read as one column.
fn separator_hint(c: u8, sep: u8) -> String {
    let Some(name) = separator_name(c) else { return String::new() };
    let reads = if sep == b'\t' { "tabs (it reads this file as .tsv; commas in .csv files)" } else { "commas (tabs in .tsv files)" };
    format!(". Is the file {name}-separated? chi reads {reads}")
}

/// The name of a common field separator (`;`, `|`, tab, `,`), for messages that ask whether a
/// file is separated by it.
pub(crate) fn separator_name(c: u8) -> Option<&'static str> {
    match c {
        b';' => Some("semicolon"),
        b'|' => Some("pipe"),
        b'\t' => Some("tab"),
        b',' => Some("comma"),
        _ => None,
    }
}

fn show(c: u8) -> String {
    if c.is_ascii_graphic() {
        format!("'{}'", c as char)
    } else {
        format!("byte 0x{c:02x}")
    }
}

/// Reads a CSV file.
pub fn load_csv(path: impl AsRef<Path>) -> Result<Vec<CsvRecord>> {
    parse_file(path.as_ref(), csv_from_bytes)
}
