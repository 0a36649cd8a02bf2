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
    /// with step ≤ `keep_until` and append.
    pub fn open(path: &Path, format: LogFormat, columns: &[&str], keep_until: Option<u64>) -> Result<Logger, String> {
        let err = |e: std::io::Error| format!("{}: {e}", path.display());
        let mut kept = String::new();
        if let (Some(k), Ok(old)) = (keep_until, std::fs::read_to_string(path)) {
            for line in old.lines() {
                match line_step(line) {
                    Some(s) if s > k => {}
                    _ => {
                        kept.push_str(line);
                        kept.push('\n');
                    }
                }
            }
        }
        let mut out = BufWriter::new(OpenOptions::new().create(true).write(true).truncate(true).open(path).map_err(err)?);
        if kept.is_empty() && format == LogFormat::Csv {
            kept = columns.join(",") + "\n";
        }
        out.write_all(kept.as_bytes()).map_err(err)?;
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
    for line in text.lines() {
        if line.starts_with('{') {
            let v: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("{}: {e}", path.display()))?;
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
