//! `chi translate MODEL`: translates lines (stdin or `--input FILE`) with a sequence-to-sequence
//! model trained by `chi train --model seq2seq` (its run directory) or saved by `chi reproduce
//! nmt-attention | nmt-cells | g2p-cmudict` (their `models/*.safetensors`), by beam search; `--heatmap DIR` also draws each line's attention as
//! an SVG with the tokens on the axes.

use chi_seq2seq::{attention_svg, Translator};
use clap::Args;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};

/// `chi translate MODEL [--beam N] [--alpha A] [--max-len N] [--input FILE] [--heatmap DIR]`.
#[derive(Args, Debug, Clone)]
pub struct TranslateArgs {
    /// A run directory of `chi train --model seq2seq`, or a model file saved by a seq2seq
    /// experiment (`runs/reproduce/nmt-*/models/*.safetensors`).
    pub model: PathBuf,
    /// Beam width, 1 to 100 (1 = greedy).
    #[arg(long, default_value_t = 5)]
    pub beam: usize,
    /// Length normalisation, 0 to 5: hypotheses ranked by log-probability / length^alpha.
    #[arg(long, default_value_t = 0.0)]
    pub alpha: f64,
    /// Most output tokens per line, 1 to 1000.
    #[arg(long, default_value_t = 100)]
    pub max_len: usize,
    /// Read lines from this file instead of standard input (`-`: standard input).
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Write one attention heat map per line (`DIR/line-0001.svg`, …), replacing the maps of
    /// an earlier translation there once every line is translated.
    #[arg(long)]
    pub heatmap: Option<PathBuf>,
}

pub use crate::train::translation::MAX_LINE_CHARS;

/// Most bytes read for one line: [`MAX_LINE_CHARS`] characters of up to 4 UTF-8 bytes each,
/// plus a `\r` before the newline.
const MAX_LINE_BYTES: usize = 4 * MAX_LINE_CHARS + 1;

/// What [`read_line_bounded`] found.
#[derive(Debug, PartialEq)]
enum LineRead {
    /// A line is in the buffer (without its `\n` or `\r\n`).
    Line,
    /// The line holds more than the byte limit; the rest of it was not read.
    TooLong,
    /// The input is exhausted.
    End,
}

/// Reads the next line into `buf`, reading at most `max_bytes + 1` bytes, so that input without
/// newlines (such as `/dev/zero`) is refused after a bounded read instead of exhausting memory.
fn read_line_bounded(r: &mut impl BufRead, buf: &mut Vec<u8>, max_bytes: usize) -> std::io::Result<LineRead> {
    buf.clear();
    let n = r.by_ref().take(max_bytes as u64 + 1).read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(LineRead::End);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
    } else if buf.len() > max_bytes {
        return Ok(LineRead::TooLong);
    }
    Ok(LineRead::Line)
}

/// Whether `name` is a heat map's file name as `chi translate` writes it (`line-0007.svg`).
fn is_heatmap_name(name: &str) -> bool {
    name.strip_prefix("line-").and_then(|r| r.strip_suffix(".svg")).is_some_and(|n| n.len() >= 4 && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Removes the heat maps an earlier translation left in `dir`, so that the folder shows this
/// input's lines only (a shorter input, or a blank line, would otherwise leave another text's
/// maps beside the new ones); other files are left alone. Returns how many were removed.
fn remove_old_heatmaps(dir: &Path) -> Result<usize, String> {
    let mut removed = 0;
    for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())? {
        let entry = entry.map_err(|e| e.to_string())?;
        // A link under a map's name is removed itself (never written through to its target).
        let kind = entry.file_type().map_err(|e| e.to_string())?;
        if (kind.is_file() || kind.is_symlink()) && entry.file_name().to_str().is_some_and(is_heatmap_name) {
            std::fs::remove_file(entry.path()).map_err(|e| format!("{}: {e}", entry.path().display()))?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Runs `chi translate`.
pub fn run(a: &TranslateArgs) -> Result<(), String> {
    if !(1..=100).contains(&a.beam) {
        return Err(format!("--beam {} is out of range 1..=100", a.beam));
    }
    if !(1..=1000).contains(&a.max_len) {
        return Err(format!("--max-len {} is out of range 1..=1000", a.max_len));
    }
    if !a.alpha.is_finite() || !(0.0..=5.0).contains(&a.alpha) {
        return Err(format!("--alpha {} is out of range 0..=5", a.alpha));
    }
    // A run directory of `chi train --model seq2seq` holds its model.
    let model = if a.model.is_dir() && a.model.join("model.safetensors").is_file() { a.model.join("model.safetensors") } else { a.model.clone() };
    if model.is_dir() {
        return Err(format!("{} is a directory without a model.safetensors: give a run directory of chi train --model seq2seq, or the model's .safetensors file", a.model.display()));
    }
    if let Some(d) = &a.heatmap {
        crate::train::rundir::check_new_name("--heatmap", d)?;
        if d.exists() && !d.is_dir() {
            return Err(format!("--heatmap {} is a file; name a folder for the heat maps", d.display()));
        }
        let named_like_a_map = |p: &Path| p.file_name().and_then(|n| n.to_str()).is_some_and(is_heatmap_name);
        if let Some(p) = a.input.as_deref().filter(|p| named_like_a_map(p) && crate::train::rundir::lies_within(p, d)) {
            return Err(format!("--input {} is one of the heat maps --heatmap {} would replace; read it from elsewhere", p.display(), d.display()));
        }
    }
    let t = Translator::load(&model).map_err(|e| e.to_string())?;
    let target_tokenizer = crate::train::translation::target_tokenizer_of(&model);

    let mut reader: Box<dyn BufRead> = match a.input.as_deref() {
        Some(p) if p != Path::new("-") => Box::new(std::io::BufReader::new(std::fs::File::open(p).map_err(|e| format!("{}: {e}", p.display()))?)),
        _ => Box::new(std::io::stdin().lock()),
    };
    let what = a.input.as_ref().filter(|p| p.as_path() != Path::new("-")).map_or("standard input".to_string(), |p| p.display().to_string());
    let mut out = std::io::stdout().lock();
    let mut buf = Vec::new();
    // The maps are kept until every line is translated: a run that fails half-way replaces no
    // earlier translation's maps.
    let mut maps = Vec::new();
    for n in 0usize.. {
        let too_long = || format!("{what}: line {} is longer than {MAX_LINE_CHARS} characters", n + 1);
        let line = match read_line_bounded(&mut reader, &mut buf, MAX_LINE_BYTES).map_err(|e| format!("{what}: line {}: {e}", n + 1))? {
            LineRead::End => break,
            LineRead::TooLong => return Err(too_long()),
            // NUL bytes mean a binary file, refused as explain and the data readers refuse it.
            LineRead::Line if buf.contains(&0) => return Err(format!("{what}: line {} has a NUL byte: a binary file, not text", n + 1)),
            LineRead::Line => std::str::from_utf8(&buf).map_err(|_| format!("{what}: line {} is not UTF-8", n + 1))?.to_string(),
        };
        // A byte-order mark (what some editors save first) is not part of the first line.
        let line = if n == 0 { line.strip_prefix('\u{feff}').map(str::to_string).unwrap_or(line) } else { line };
        if line.chars().count() > MAX_LINE_CHARS {
            return Err(too_long());
        }
        if line.trim().is_empty() {
            writeln!(out).map_err(|e| e.to_string())?;
            continue;
        }
        let tr = t.translate(&line, a.beam, a.alpha, a.max_len).map_err(|e| format!("{what}: line {}: {e}", n + 1))?;
        writeln!(out, "{}", crate::train::translation::text_of(&tr.output, &target_tokenizer)).map_err(|e| e.to_string())?;
        if a.heatmap.is_some() {
            maps.push((format!("line-{:04}.svg", n + 1), attention_svg(&tr, &line)));
        }
    }
    if let Some(d) = &a.heatmap {
        std::fs::create_dir_all(d).map_err(|e| format!("--heatmap {}: {e}", d.display()))?;
        let old = remove_old_heatmaps(d).map_err(|e| format!("--heatmap {}: {e}", d.display()))?;
        if old > 0 {
            eprintln!("chi: --heatmap {}: replaced {old} heat maps of an earlier translation", d.display());
        }
        for (name, svg) in maps {
            chi_nn::checkpoint::atomic_write(&d.join(name), svg.as_bytes()).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_earlier_translations_heat_maps_are_removed_and_nothing_else() {
        let d = std::env::temp_dir().join(format!("chi-heatmaps-{}", std::process::id()));
        std::fs::create_dir_all(d.join("line-0005.svg")).unwrap(); // a folder: not a map
        // A link under a map's name: the link goes, its target stays.
        let target = std::env::temp_dir().join(format!("chi-heatmap-target-{}", std::process::id()));
        std::fs::write(&target, "the user's").unwrap();
        std::os::unix::fs::symlink(&target, d.join("line-0007.svg")).unwrap();
        for f in ["line-0001.svg", "line-0012.svg", "line-12345.svg", "line-1.svg", "line-00a1.svg", "notes.txt", "line-0003.png"] {
            std::fs::write(d.join(f), "x").unwrap();
        }
        assert_eq!(remove_old_heatmaps(&d).unwrap(), 4);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "the user's");
        std::fs::remove_file(&target).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, ["line-0003.png", "line-0005.svg", "line-00a1.svg", "line-1.svg", "notes.txt"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn endless_lines_are_refused_after_a_bounded_read() {
        let mut endless = std::io::BufReader::new(std::io::repeat(0));
        let mut buf = Vec::new();
        assert_eq!(read_line_bounded(&mut endless, &mut buf, 100).unwrap(), LineRead::TooLong);
        assert_eq!(buf.len(), 101);
        let mut lines = std::io::Cursor::new(&b"ab\r\n\ncd"[..]);
        let mut got = Vec::new();
        while read_line_bounded(&mut lines, &mut buf, 3).unwrap() == LineRead::Line {
            got.push(String::from_utf8(buf.clone()).unwrap());
        }
        assert_eq!(got, ["ab", "", "cd"]);
        let mut long = std::io::Cursor::new(&b"abc\n"[..]);
        assert_eq!(read_line_bounded(&mut long, &mut buf, 2).unwrap(), LineRead::TooLong);
    }
}
