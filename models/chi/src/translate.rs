//! `chi translate MODEL`: translates lines (stdin or `--input FILE`) with a sequence-to-sequence
//! model saved by `chi reproduce nmt-attention | nmt-cells | g2p-cmudict` (their
//! `models/*.safetensors`), by beam search; `--heatmap DIR` also draws each line's attention as
//! an SVG with the tokens on the axes.

use chi_seq2seq::{attention_svg, Translator};
use clap::Args;
use std::io::{BufRead, Write};
use std::path::PathBuf;

/// `chi translate MODEL [--beam N] [--alpha A] [--max-len N] [--input FILE] [--heatmap DIR]`.
#[derive(Args, Debug, Clone)]
pub struct TranslateArgs {
    /// A model file saved by a seq2seq experiment (`runs/reproduce/nmt-*/models/*.safetensors`).
    pub model: PathBuf,
    /// Beam width (1 = greedy).
    #[arg(long, default_value_t = 5)]
    pub beam: usize,
    /// Length normalisation: hypotheses ranked by log-probability / length^alpha.
    #[arg(long, default_value_t = 0.0)]
    pub alpha: f64,
    /// Most output tokens per line.
    #[arg(long, default_value_t = 100)]
    pub max_len: usize,
    /// Read lines from this file instead of standard input.
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Write one attention heat map per line (`DIR/line-0001.svg`, …).
    #[arg(long)]
    pub heatmap: Option<PathBuf>,
}

/// Largest input line accepted (characters); longer lines are an error naming the line.
pub const MAX_LINE_CHARS: usize = 10_000;

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
    let t = Translator::load(&a.model).map_err(|e| e.to_string())?;
    if let Some(d) = &a.heatmap {
        std::fs::create_dir_all(d).map_err(|e| format!("--heatmap {}: {e}", d.display()))?;
    }
    let reader: Box<dyn BufRead> = match &a.input {
        Some(p) => Box::new(std::io::BufReader::new(std::fs::File::open(p).map_err(|e| format!("{}: {e}", p.display()))?)),
        None => Box::new(std::io::stdin().lock()),
    };
    let what = a.input.as_ref().map_or("standard input".to_string(), |p| p.display().to_string());
    let mut out = std::io::stdout().lock();
    for (n, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| format!("{what}: line {}: {e}", n + 1))?;
        if line.chars().count() > MAX_LINE_CHARS {
            return Err(format!("{what}: line {} is longer than {MAX_LINE_CHARS} characters", n + 1));
        }
        if line.trim().is_empty() {
            writeln!(out).map_err(|e| e.to_string())?;
            continue;
        }
        let tr = t.translate(&line, a.beam, a.alpha, a.max_len).map_err(|e| format!("{what}: line {}: {e}", n + 1))?;
        writeln!(out, "{}", tr.output.join(" ")).map_err(|e| e.to_string())?;
        if let Some(d) = &a.heatmap {
            let p = d.join(format!("line-{:04}.svg", n + 1));
            chi_nn::checkpoint::atomic_write(&p, attention_svg(&tr, &line).as_bytes()).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}
