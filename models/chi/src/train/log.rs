//! Per-step logs as CSV or JSON lines, resumable (rows after a checkpoint are dropped on
//! resume so a resumed run's log equals an uninterrupted one's).

use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Log file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One JSON object per line.
    #[default]
    Jsonl,
    /// Comma-separated values with a header line.
    Csv,
}

impl LogFormat {
    /// File extension.
    pub fn ext(self) -> &'static str {
        match self {
            LogFormat::Jsonl => "jsonl",
            LogFormat::Csv => "csv",
        }
    }
}

/// A log value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// An integer.
    Int(u64),
    /// A real number (written with full round-trip precision).
    Num(f64),
    /// Text.
    Text(String),
}

impl Value {
    fn json(&self) -> serde_json::Value {
        match self {
            Value::Int(v) => serde_json::json!(v),
            Value::Num(v) if v.is_finite() => serde_json::json!(v),
            Value::Num(v) => serde_json::json!(v.to_string()),
            Value::Text(s) => serde_json::json!(s),
        }
    }
    fn csv(&self) -> String {
        match self {
            Value::Int(v) => v.to_string(),
            Value::Num(v) => format!("{v:?}"),
            Value::Text(s) if s.contains([',', '"', '\n']) => format!("\"{}\"", s.replace('"', "\"\"")),
            Value::Text(s) => s.clone(),
        }
    }
}

/// An append-only log with fixed columns; the first column is the step.
pub struct Logger {
    path: PathBuf,
    format: LogFormat,
    columns: Vec<String>,
    out: BufWriter<File>,
}

impl Logger {
    /// Opens `path`. Fresh runs (`keep_until = None`) truncate it; resumed runs keep the rows
    /// with step ≤ `keep_until` and append. The kept rows are written back *atomically*
    /// (temporary file and rename) before the file is opened for appending, so a crash at any
    /// point leaves either the old log or the truncated one, never a partial one. A torn last
    /// line (no final newline, or not a row: a write cut short by a crash) is dropped with a
    /// warning on stderr naming the file. A damaged line before the last cannot come from an
    /// interrupted append: it is an error naming the file and the line, and the log is left as
    /// it was. A missing log of a run past step 0 is started again with a warning that the
    /// earlier rows are gone.
    pub fn open(path: &Path, format: LogFormat, columns: &[&str], keep_until: Option<u64>) -> Result<Logger, String> {
        let err = |e: std::io::Error| format!("{}: {e}", path.display());
        if let Some(k) = keep_until {
            let old = match std::fs::read(path) {
                Ok(b) => Some(String::from_utf8_lossy(&b).into_owned()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(err(e)),
            };
            let mut kept = String::new();
            match old {
                Some(old) => {
                    let (rows, torn) = split_rows(&old, format);
                    let fields = rows.first().map(|h| csv_fields(h));
                    for (i, line) in rows.iter().enumerate() {
                        let header = format == LogFormat::Csv && i == 0;
                        let step = line_step(line).filter(|_| format == LogFormat::Jsonl || Some(csv_fields(line)) == fields);
                        if step.is_none() && !header && !line.is_empty() {
                            let shown: String = line.chars().take(60).collect();
                            return Err(format!(
                                "{}: line {} is not a row of this log ({shown:?}{}): the file was changed after chi wrote it; restore or delete that line to resume",
                                path.display(),
                                i + 1,
                                if shown.len() < line.len() { "…" } else { "" }
                            ));
                        }
                        if step.is_none_or(|s| s <= k) {
                            kept.push_str(line);
                            kept.push('\n');
                        }
                    }
                    if let Some(t) = torn {
                        eprintln!("chi: warning: {}: dropping a damaged last line ({} bytes) left by an interrupted write", path.display(), t.len());
                    }
                }
                None if k > 0 => eprintln!("chi: warning: {} is missing: it starts again at step {}; the rows of steps 1 to {k} are gone", path.display(), k + 1),
                None => {}
            }
            if format == LogFormat::Csv {
                let header = columns.join(",");
                match kept.lines().next() {
                    None => kept = header + "\n",
                    Some(h) if h == header => {}
                    Some(h) => return Err(format!("{}: the log's columns are {h:?}, this run writes {header:?}; not a log of this run", path.display())),
                }
            }
            chi_nn::checkpoint::atomic_write(path, kept.as_bytes()).map_err(String::from)?;
            let out = BufWriter::new(OpenOptions::new().append(true).open(path).map_err(err)?);
            return Ok(Logger { path: path.to_path_buf(), format, columns: columns.iter().map(|c| c.to_string()).collect(), out });
        }
        let mut out = BufWriter::new(OpenOptions::new().create(true).write(true).truncate(true).open(path).map_err(err)?);
        if format == LogFormat::Csv {
            out.write_all((columns.join(",") + "\n").as_bytes()).map_err(err)?;
        }
        Ok(Logger { path: path.to_path_buf(), format, columns: columns.iter().map(|c| c.to_string()).collect(), out })
    }
    /// Appends a row (values in column order).
    pub fn row(&mut self, values: &[Value]) -> Result<(), String> {
        assert_eq!(values.len(), self.columns.len(), "Logger::row: {} values for {} columns", values.len(), self.columns.len());
        let line = match self.format {
            LogFormat::Csv => values.iter().map(|v| v.csv()).collect::<Vec<_>>().join(","),
            LogFormat::Jsonl => {
                let mut m = serde_json::Map::new();
                for (c, v) in self.columns.iter().zip(values) {
                    m.insert(c.clone(), v.json());
                }
                serde_json::Value::Object(m).to_string()
            }
        };
        writeln!(self.out, "{line}").map_err(|e| format!("{}: {e}", self.path.display()))
    }
    /// Flushes buffered rows to the file.
    pub fn flush(&mut self) -> Result<(), String> {
        self.out.flush().map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

/// The complete lines of a log's text, and its torn last line if any: a last line without a
/// newline, or (JSON lines) one that is not a JSON object, or (CSV) one with another number of
/// fields than the header. Earlier damaged lines are kept (they are not the result of an
/// interrupted append).
pub fn split_rows(text: &str, format: LogFormat) -> (Vec<&str>, Option<&str>) {
    let mut rows: Vec<&str> = text.split_inclusive('\n').collect();
    let Some(last) = rows.pop() else { return (Vec::new(), None) };
    let complete = last.ends_with('\n');
    let line = last.trim_end_matches(['\n', '\r']);
    let ok = complete
        && match format {
            LogFormat::Jsonl => serde_json::from_str::<serde_json::Value>(line).map(|v| v.is_object()).unwrap_or(false),
            LogFormat::Csv => rows.is_empty() || rows.first().map(|h| csv_fields(h.trim_end()) == csv_fields(line)).unwrap_or(true),
        };
    let mut out: Vec<&str> = rows.into_iter().map(|l| l.trim_end_matches(['\n', '\r'])).collect();
    if ok {
        out.push(line);
        (out, None)
    } else if line.is_empty() {
        (out, None)
    } else {
        (out, Some(line))
    }
}

/// Number of fields of a CSV line (commas outside double quotes, plus one).
fn csv_fields(line: &str) -> usize {
    let mut quoted = false;
    let mut n = 1;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => n += 1,
            _ => {}
        }
    }
    n
}

/// The step of a log line (`None` for a CSV header or an unparsable line).
fn line_step(line: &str) -> Option<u64> {
    if line.starts_with('{') {
        serde_json::from_str::<serde_json::Value>(line).ok()?.get("step")?.as_u64()
    } else {
        line.split(',').next()?.trim().parse().ok()
    }
}

/// Reads one numeric column of a log written by [`Logger`] (either format), as `(step, value)`.
pub fn read_column(path: &Path, column: &str) -> Result<Vec<(u64, f64)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    let mut header: Option<Vec<String>> = None;
    let n = text.lines().count();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('{') {
            let v: serde_json::Value = match serde_json::from_str(line) {
                Ok(v) => v,
                // A torn last line (interrupted write) is not an error for readers.
                Err(_) if i + 1 == n => continue,
                Err(e) => return Err(format!("{}: line {}: {e}", path.display(), i + 1)),
            };
            if let (Some(s), Some(x)) = (v.get("step").and_then(|s| s.as_u64()), v.get(column).and_then(|x| x.as_f64())) {
                out.push((s, x));
            }
        } else if header.is_none() {
            header = Some(line.split(',').map(|s| s.to_string()).collect());
        } else if let Some(h) = &header {
            let f: Vec<&str> = line.split(',').collect();
            if let (Some(s), Some(i)) = (f.first().and_then(|s| s.parse().ok()), h.iter().position(|c| c == column)) {
                if let Some(x) = f.get(i).and_then(|x| x.parse().ok()) {
                    out.push((s, x));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("chi-log-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn resume_truncates_rows_and_drops_a_torn_line() {
        let d = tmp("torn");
        let p = d.join("log.jsonl");
        std::fs::write(&p, "{\"step\":1,\"loss\":1.0}\n{\"step\":2,\"loss\":0.5}\n{\"step\":3,\"loss\":0.4}\n{\"step\":4,\"lo").unwrap();
        let mut l = Logger::open(&p, LogFormat::Jsonl, &["step", "loss"], Some(2)).unwrap();
        // Truncated on disk before anything is appended.
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"step\":1,\"loss\":1.0}\n{\"step\":2,\"loss\":0.5}\n");
        l.row(&[Value::Int(3), Value::Num(0.25)]).unwrap();
        l.flush().unwrap();
        assert_eq!(read_column(&p, "loss").unwrap(), vec![(1, 1.0), (2, 0.5), (3, 0.25)]);
        // CSV: a last row with a missing field is torn; the header stays.
        let c = d.join("g.csv");
        std::fs::write(&c, "step,t,norm\n1,0,0.5\n2,0").unwrap();
        let text = std::fs::read_to_string(&c).unwrap();
        let (rows, torn) = split_rows(&text, LogFormat::Csv);
        assert_eq!((rows, torn), (vec!["step,t,norm", "1,0,0.5"], Some("2,0")));
        drop(Logger::open(&c, LogFormat::Csv, &["step", "t", "norm"], Some(5)).unwrap());
        assert_eq!(std::fs::read_to_string(&c).unwrap(), "step,t,norm\n1,0,0.5\n");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn resume_refuses_a_damaged_line_before_the_last_and_leaves_the_log() {
        let d = tmp("damaged");
        let p = d.join("log.jsonl");
        let text = "{\"step\":1,\"loss\":1.0}\n{garbage\n{\"step\":3,\"loss\":0.4}\n";
        std::fs::write(&p, text).unwrap();
        let e = Logger::open(&p, LogFormat::Jsonl, &["step", "loss"], Some(3)).err().unwrap();
        assert!(e.contains("line 2 is not a row") && e.contains("{garbage"), "{e}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), text);
        // CSV: a row with a field missing, or a step that is not a number.
        let c = d.join("g.csv");
        for bad in ["step,t,norm\n1,0,0.5\n2,0\n3,0,0.1\n", "step,t,norm\nx,0,0.5\n3,0,0.1\n"] {
            std::fs::write(&c, bad).unwrap();
            let e = Logger::open(&c, LogFormat::Csv, &["step", "t", "norm"], Some(5)).err().unwrap();
            assert!(e.contains("is not a row of this log"), "{e}");
            assert_eq!(std::fs::read_to_string(&c).unwrap(), bad);
        }
        // Gone: started again (the warning is on stderr).
        let gone = d.join("gone.jsonl");
        let mut l = Logger::open(&gone, LogFormat::Jsonl, &["step", "loss"], Some(4)).unwrap();
        l.row(&[Value::Int(5), Value::Num(0.1)]).unwrap();
        l.flush().unwrap();
        assert_eq!(read_column(&gone, "loss").unwrap(), vec![(5, 0.1)]);
        let _ = std::fs::remove_dir_all(&d);
    }
}
