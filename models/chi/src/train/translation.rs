//! `chi train --model seq2seq`: an attention encoder–decoder ([`chi_seq2seq`]) trained on the
//! user's own sentence pairs, and the same run read back by `chi eval` (BLEU, token accuracy,
//! perplexity, error rates and the translations), `chi predict` (a CSV of translations) and
//! `chi translate RUN` (with attention heat maps).
//!
//! **Data.** `--data pairs.tsv` (tab-separated, fields literal: the layout of Tatoeba and Anki
//! exports, `source<TAB>target<TAB>…`) or `--data pairs.csv` (RFC 4180 quoting), the source and
//! target columns chosen by `--text-column` and `--target` (a header name or a 1-based number;
//! default: columns named source/target, else the first two; [`chi_seq2seq::data::read_pairs`]);
//! or two aligned text files, `--data train.en --target train.fr`, one sentence per line. The pairs
//! are shuffled with the run's seed and cut by `--split` (default 0.8,0.1,0.1), unless `--valid`
//! and `--test` name files of their own.
//!
//! **Model** (`--model-option KEY=VALUE`): `cell` lstm | gru | ca-rnn, `attention` bahdanau |
//! luong-dot | luong-general | luong-concat | local-p:D | ca-att-luong | ca-att-bahdanau,
//! `input_feeding`, `attn_dim`, `tokenizer` words | chars (the source; also the target's unless
//! `target_tokenizer` words | chars | spaces says otherwise), and for decoding `beam` and `alpha`;
//! `--embed`, `--hidden` (one size per layer, all equal), `--bidirectional`.
//!
//! **Run directory.** `model.safetensors` (weights, sizes and both vocabularies: what
//! `chi translate` loads), `seq2seq.json` (these settings: how `chi eval` rebuilds the splits),
//! `log.jsonl` (`step`, `loss` per step), `eval.jsonl` (validation token accuracy), `summary.json`
//! (the test metrics), `loss.svg/.png`, and `checkpoints/` (the newest two of every
//! `--checkpoint-every` steps, 500 by default, and the last). The directory is owned as
//! `chi train` owns its runs ([`super::rundir`]); `--resume` continues a stopped run from its
//! newest checkpoint with its own settings (`--steps` may extend it), and ends bit-identical to
//! a run that never stopped.

use super::cli::{EvalArgs, PredictArgs, TrainArgs};
use super::rundir;
use chi_autodiff::Rng;
use chi_nn::checkpoint;
use chi_nn::optim::{OptimConfig, OptimKind};
use chi_seq2seq::data::{read_pairs, read_parallel, tokenize, PairColumns};
use chi_seq2seq::experiment::{evaluate_pairs, train_and_evaluate, Checkpoints, Corpus, Pair, TrainOptions};
use chi_seq2seq::model::{AttentionKind, CellKind, Seq2SeqConfig};
use chi_seq2seq::{Tokenizer, Translator};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The model name that selects this path in `chi train`.
pub const MODEL_NAME: &str = "seq2seq";

/// The settings file of a sequence-to-sequence run.
pub const SETTINGS_FILE: &str = rundir::SEQ2SEQ_SETTINGS_FILE;

/// Largest input line accepted by `chi translate` and `chi predict` (characters); longer lines
/// are an error naming the line.
pub const MAX_LINE_CHARS: usize = 10_000;

/// Largest decoding beam.
const MAX_BEAM: usize = 100;

fn default_checkpoint_every() -> u64 {
    500
}

/// Everything a sequence-to-sequence run was made with: enough to rebuild its splits.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Settings {
    /// The pairs file, or the source file of two aligned files (absolute).
    pub data: String,
    /// The target file of two aligned files (absolute), when the data is two files.
    pub target_file: Option<String>,
    /// Validation pairs in their own file (absolute).
    pub valid: Option<String>,
    /// Test pairs in their own file (absolute).
    pub test: Option<String>,
    /// Source column (name or 1-based number).
    pub source_column: Option<String>,
    /// Target column (name or 1-based number).
    pub target_column: Option<String>,
    /// Whether line 1 names the columns (`None`: detected).
    pub header: Option<bool>,
    /// `tab` or `comma`.
    pub separator: String,
    /// Train, validation, test fractions of one file.
    pub split: [f64; 3],
    /// Seed of the split, the initialisation and the batches.
    pub seed: u64,
    /// How sources are split: `words` (lower-cased words and punctuation) or `chars`.
    pub tokenizer: String,
    /// How targets are split: `words`, `chars`, or `spaces` (at whitespace, case kept: phoneme
    /// strings, pre-tokenised text).
    pub target_tokenizer: String,
    /// Training pairs longer than this many tokens on either side are left out; held-out pairs
    /// longer than [`EVAL_LEN_FACTOR`] times it are left out of evaluations.
    pub max_len: usize,
    /// Most vocabulary entries per side (0: every training token).
    pub max_vocab: usize,
    /// Training steps.
    pub steps: u64,
    /// Pairs per step.
    pub batch_size: usize,
    /// Optimiser name.
    pub optim: String,
    /// Learning rate.
    pub lr: f64,
    /// Momentum (SGD, RMSProp).
    pub momentum: f64,
    /// Weight decay.
    pub weight_decay: Option<f64>,
    /// Global gradient-norm clip (`None`: off).
    pub clip_norm: Option<f64>,
    /// Validation accuracy every this many steps.
    pub eval_every: u64,
    /// A full checkpoint every this many steps (and at the end).
    #[serde(default = "default_checkpoint_every")]
    pub checkpoint_every: u64,
    /// Beam width of the test and of `chi predict` (1: greedy).
    pub beam: usize,
    /// Length normalisation of the beam score.
    pub alpha: f64,
    /// FNV-1a hash of the data files' bytes (data, aligned target, validation, test), hex: a
    /// split is rebuilt only from the same data (empty: not recorded, not checked).
    #[serde(default)]
    pub data_fingerprint: String,
    /// Cell: lstm, gru, ca-rnn.
    pub cell: String,
    /// Attention name (`local-p:D` with its half-window).
    pub attention: String,
    /// Embedding size.
    pub embed: usize,
    /// Hidden size of every layer.
    pub hidden: usize,
    /// Layers of encoder and decoder.
    pub layers: usize,
    /// Bidirectional encoder.
    pub bidirectional: bool,
    /// Luong's input feeding.
    pub input_feeding: bool,
    /// Width of the additive and concat scores.
    pub attn_dim: usize,
}

impl Default for Settings {
    /// `chi train --model seq2seq`'s defaults, with no data.
    fn default() -> Self {
        Settings {
            data: String::new(),
            target_file: None,
            valid: None,
            test: None,
            source_column: None,
            target_column: None,
            header: None,
            separator: "tab".into(),
            split: [0.8, 0.1, 0.1],
            seed: 0,
            tokenizer: "words".into(),
            target_tokenizer: "words".into(),
            max_len: 50,
            max_vocab: 20_000,
            steps: 2000,
            batch_size: 32,
            optim: "adam".into(),
            lr: 0.001,
            momentum: 0.0,
            weight_decay: None,
            clip_norm: Some(5.0),
            eval_every: 200,
            checkpoint_every: default_checkpoint_every(),
            beam: 5,
            alpha: 0.0,
            data_fingerprint: String::new(),
            cell: "lstm".into(),
            attention: "luong-general".into(),
            embed: 64,
            hidden: 128,
            layers: 1,
            bidirectional: false,
            input_feeding: false,
            attn_dim: 64,
        }
    }
}

impl Settings {
    fn cell_kind(&self) -> Result<CellKind, String> {
        CellKind::from_name(&self.cell).ok_or_else(|| format!("cell {:?} is not one of lstm, gru, ca-rnn", self.cell))
    }

    fn attention_kind(&self) -> Result<AttentionKind, String> {
        let a = self.attention.as_str();
        // Bare `local-p` takes the half-window the experiments use.
        match AttentionKind::from_spec(if a == "local-p" { "local-p:2" } else { a }) {
            Some(AttentionKind::LocalP { d }) if !(1..=1000).contains(&d) => Err(format!("attention {a:?}: the half-window D of local-p:D is a whole number 1..=1000")),
            Some(k) => Ok(k),
            None if a.starts_with("local-p:") => Err(format!("attention {a:?}: the half-window D of local-p:D is a whole number 1..=1000")),
            None => Err(format!("attention {a:?} is not one of bahdanau, luong-dot, luong-general, luong-concat, local-p:D, ca-att-luong, ca-att-bahdanau")),
        }
    }

    /// The target side's tokens of `text`.
    fn target_tokens(&self, text: &str) -> Result<Vec<String>, String> {
        match self.target_tokenizer.as_str() {
            "words" => Ok(tokenize(text)),
            "chars" => Ok(Tokenizer::Chars.apply(text)),
            "spaces" => Ok(text.split_whitespace().map(str::to_string).collect()),
            other => Err(format!("target_tokenizer {other:?} is not one of words, chars, spaces")),
        }
    }

    /// The text of target tokens: characters concatenated (word boundaries as spaces), other
    /// tokens joined by spaces.
    fn target_text(&self, tokens: &[String]) -> String {
        text_of(tokens, &self.target_tokenizer)
    }

    fn tokenizer_kind(&self) -> Result<Tokenizer, String> {
        match self.tokenizer.as_str() {
            "words" => Ok(Tokenizer::Words),
            "chars" => Ok(Tokenizer::Chars),
            other => Err(format!("tokenizer {other:?} is not one of words, chars")),
        }
    }

    /// The model's configuration (vocabulary sizes are filled in from the data).
    pub fn model_config(&self) -> Result<Seq2SeqConfig, String> {
        Ok(Seq2SeqConfig {
            src_vocab: 0,
            tgt_vocab: 0,
            emb: self.embed,
            hidden: self.hidden,
            layers: self.layers,
            bidirectional: self.bidirectional,
            cell: self.cell_kind()?,
            attention: self.attention_kind()?,
            input_feeding: self.input_feeding,
            attn_dim: self.attn_dim,
        })
    }

    fn columns(&self) -> PairColumns {
        PairColumns { source: self.source_column.clone(), target: self.target_column.clone(), header: self.header, sep: if self.separator == "comma" { b',' } else { b'\t' } }
    }

    /// The options of training and of the test evaluation.
    fn train_options(&self) -> Result<TrainOptions, String> {
        let name: OptimKind = self.optim.parse().map_err(|e| format!("optimiser {:?}: {e}", self.optim))?;
        let optim = OptimConfig { name, lr: self.lr, momentum: self.momentum, weight_decay: self.weight_decay, ..OptimConfig::default() };
        optim.validate().map_err(String::from)?;
        let cap = (self.max_vocab > 0).then_some(self.max_vocab);
        Ok(TrainOptions {
            steps: self.steps,
            batch: self.batch_size,
            optim,
            clip_norm: self.clip_norm,
            eval_every: self.eval_every,
            eval_pairs: 500,
            max_len: self.max_len,
            src_vocab_cap: cap,
            tgt_vocab_cap: cap,
            topk: vec![1, 5],
            beam: self.beam,
            alpha: self.alpha,
            decode_pairs: usize::MAX,
            seed: self.seed,
            save_to: None,
            save_extra: BTreeMap::new(),
            tokenizer: self.tokenizer_kind()?,
            checkpoints: None,
        })
    }

    /// Checks every value before any data is read.
    fn validate(&self) -> Result<(), String> {
        self.model_config()?;
        self.train_options()?;
        self.target_tokens("")?;
        if !matches!(self.separator.as_str(), "tab" | "comma") {
            return Err(format!("separator {:?} is not one of tab, comma", self.separator));
        }
        let range = |name: &str, v: usize, lo: usize, hi: usize| if (lo..=hi).contains(&v) { Ok(()) } else { Err(format!("{name} {v} is out of range {lo}..={hi}")) };
        range("--steps", self.steps.min(usize::MAX as u64) as usize, 1, 100_000_000)?;
        range("--batch-size", self.batch_size, 1, 100_000)?;
        range("--max-len", self.max_len, 1, 10_000)?;
        range("beam", self.beam, 1, MAX_BEAM)?;
        range("--embed", self.embed, 1, 1 << 16)?;
        range("--hidden", self.hidden, 1, 1 << 16)?;
        range("layers (entries of --hidden)", self.layers, 1, 16)?;
        range("attn_dim", self.attn_dim, 1, 1 << 16)?;
        range("--eval-every", self.eval_every.min(usize::MAX as u64) as usize, 1, usize::MAX)?;
        range("--checkpoint-every", self.checkpoint_every.min(usize::MAX as u64) as usize, 1, usize::MAX)?;
        if !self.alpha.is_finite() || !(0.0..=5.0).contains(&self.alpha) {
            return Err(format!("alpha {} is out of range 0..=5", self.alpha));
        }
        if let Some(c) = self.clip_norm {
            if !(c.is_finite() && c > 0.0) {
                return Err(format!("--clip-norm {c} must be a positive number"));
            }
        }
        let s = self.split;
        if s.iter().any(|f| !(f.is_finite() && (0.0..=1.0).contains(f))) || (s.iter().sum::<f64>() - 1.0).abs() > 1e-6 || s[0] <= 0.0 {
            return Err(format!("--split {s:?}: three fractions in 0..=1 summing to 1, the first above 0"));
        }
        if self.test.is_none() && s[2] == 0.0 {
            return Err("--split gives the test no pairs; give it a share or --test FILE".into());
        }
        let probe = Seq2SeqConfig { src_vocab: 5, tgt_vocab: 5, ..self.model_config()? };
        probe.validate().map_err(|e| e.to_string())
    }
}

/// Whether `chi train`'s flags select this path: `--model seq2seq`, or `--resume` without
/// `--model` in a seq2seq run's directory (it says what it is).
pub fn selected(args: &TrainArgs, out: &Path) -> bool {
    !args.list && (args.model.as_deref() == Some(MODEL_NAME) || (args.resume && args.model.is_none() && out.join(SETTINGS_FILE).is_file()))
}

/// `chi train`: this path when [`selected`], else the classic one.
pub fn train_command(args: &TrainArgs, seed: u64, out: &Path) -> Result<(), String> {
    if selected(args, out) {
        run_train(args, seed, out)
    } else {
        super::cli::run_train(args, seed, out)
    }
}

/// `chi eval`: [`run_eval`] for a seq2seq model, a clear error for a seq2seq checkpoint or an
/// unfinished run, else the classic evaluation.
pub fn eval_command(args: &EvalArgs, out: &Path) -> Result<(), String> {
    let path = args.checkpoint.clone().or_else(|| args.model.clone()).unwrap_or_else(|| out.to_path_buf());
    if let Some(w) = seq2seq_weights(&path) {
        if args.target.is_some() && args.data.is_none() {
            return Err("--target is the aligned target file of --data; give --data too".into());
        }
        return run_eval(&w, args);
    }
    if let Some(m) = unfinished_seq2seq(&path) {
        return Err(m);
    }
    super::cli::run_eval(args, out)
}

/// `chi predict`: [`run_predict`] for a seq2seq model, else the classic predictions.
pub fn predict_command(args: &PredictArgs) -> Result<(), String> {
    if let Some(w) = seq2seq_weights(&args.model) {
        return run_predict(&w, args);
    }
    if let Some(m) = unfinished_seq2seq(&args.model) {
        return Err(m);
    }
    super::cli::run_predict(args)
}

/// The flags of `chi train` that a sequence-to-sequence run does not read: refused, naming
/// each, rather than silently ignored.
fn unused_flags(a: &TrainArgs) -> Vec<&'static str> {
    given(&[
        (a.config.is_some(), "--config"),
        (a.dataset.is_some(), "--dataset"),
        (a.features.is_some(), "--features"),
        (a.task.is_some(), "--task"),
        (a.min_count.is_some(), "--min-count"),
        (a.pretrained.is_some(), "--pretrained"),
        (a.schedule.is_some(), "--schedule"),
        (a.em_steps.is_some(), "--em-steps"),
        (a.em_blocks.is_some(), "--em-blocks"),
        (a.dropout.is_some(), "--dropout"),
        (a.log_format.as_deref().is_some_and(|f| f != "jsonl"), "--log-format csv"),
        (a.local_sgd.is_some(), "--local-sgd"),
        (a.bucket_kib.is_some(), "--bucket-kib"),
        (a.no_overlap, "--no-overlap"),
    ])
}

/// The names of the flags given.
fn given(flags: &[(bool, &'static str)]) -> Vec<&'static str> {
    flags.iter().filter(|f| f.0).map(|f| f.1).collect()
}

fn absolute(p: &str) -> String {
    std::fs::canonicalize(p).map(|c| c.display().to_string()).unwrap_or_else(|_| p.to_string())
}

/// The settings of `chi train --model seq2seq` from its flags.
pub fn settings_of(a: &TrainArgs, seed: u64) -> Result<Settings, String> {
    let unused = unused_flags(a);
    if !unused.is_empty() {
        return Err(format!("--model seq2seq does not take {}", unused.join(", ")));
    }
    let data = a.data.clone().ok_or("--model seq2seq needs --data: a file of sentence pairs (TSV or CSV), or a source file with --target naming its aligned target file")?;
    match std::fs::metadata(&data) {
        Ok(m) if m.is_file() => {}
        Ok(m) if m.is_dir() => return Err(format!("--data {data}: is a folder: give a file of sentence pairs")),
        Ok(_) => return Err(format!("--data {data}: not a regular file (a device, pipe or socket): give a file of sentence pairs")),
        Err(e) => return Err(format!("--data {data}: {e}")),
    }
    // `--target` is a column number when it is a number, else the aligned target file when a
    // file of that name exists, else a column name.
    let target_is_number = a.target.as_deref().is_some_and(|t| t.trim().parse::<i64>().is_ok());
    let target_file = a.target.as_deref().filter(|t| !target_is_number && Path::new(t).is_file()).map(absolute);
    for (flag, f) in [("--valid", &a.valid), ("--test", &a.test)] {
        if let Some(f) = f {
            match std::fs::metadata(f) {
                Ok(m) if m.is_file() => {}
                Ok(_) => return Err(format!("{flag} {f}: not a regular file (a folder, device, pipe or socket): give a file of sentence pairs")),
                Err(e) => return Err(format!("{flag} {f}: {e}")),
            }
        }
    }
    let two_files = target_file.is_some();
    if let Some(t) = a.target.as_deref().filter(|_| !two_files && !target_is_number) {
        let path_like = t.contains('/') || t.contains(std::path::MAIN_SEPARATOR) || [".txt", ".tsv", ".csv"].iter().any(|e| t.to_ascii_lowercase().ends_with(e));
        if path_like {
            return Err(format!("--target {t}: no such file (an aligned target file must exist; a target column is named without a path)"));
        }
    }
    let ext = Path::new(&data).extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    let separator = match (a.format.as_deref(), ext.as_deref()) {
        (Some("csv"), _) => "comma",
        (Some("tsv"), _) => "tab",
        (Some(f), _) => return Err(format!("--format {f}: --model seq2seq reads csv or tsv (or two aligned files: --data SRC --target TGT)")),
        (None, Some("csv")) => "comma",
        (None, _) => "tab",
    };
    if target_file.is_some() && (a.text_column.is_some() || a.header.is_some() || a.format.is_some()) {
        return Err("--text-column, --header and --format choose columns of one pairs file; with two aligned files (--data SRC --target TGT) every line is a sentence".into());
    }
    let d = Settings::default();
    let (hidden, layers) = match a.hidden.as_deref() {
        None => (d.hidden, d.layers),
        Some(h) => {
            let sizes = super::cli::parse_hidden(h)?;
            match sizes.first() {
                Some(&first) if sizes.iter().all(|&s| s == first) => (first, sizes.len()),
                Some(_) => return Err(format!("--hidden {h}: a seq2seq model's layers share one size (e.g. 128,128 for two layers of 128)")),
                None => return Err("--hidden needs at least one size".into()),
            }
        }
    };
    // Named without --lr, an optimiser gets its own rate (Adam's is the default's 0.001).
    let optim = a.optim.unwrap_or(OptimKind::Adam);
    let steps = a.steps.unwrap_or(d.steps);
    let split = match a.split.as_deref() {
        Some(s) => {
            let v = super::cli::parse_split(s)?;
            [v[0], v[1], v[2]]
        }
        None => d.split,
    };
    let mut s = Settings {
        data: absolute(&data),
        target_file,
        valid: a.valid.as_deref().map(absolute),
        test: a.test.as_deref().map(absolute),
        source_column: a.text_column.clone(),
        target_column: a.target.clone().filter(|_| !two_files),
        header: a.header,
        separator: separator.to_string(),
        split,
        seed,
        target_tokenizer: String::new(),
        max_len: a.max_len.unwrap_or(d.max_len),
        max_vocab: a.max_vocab.unwrap_or(d.max_vocab),
        steps,
        batch_size: a.batch_size.unwrap_or(d.batch_size),
        optim: format!("{optim:?}").to_lowercase(),
        lr: a.lr.unwrap_or(optim.default_lr()),
        momentum: a.momentum.unwrap_or(d.momentum),
        weight_decay: a.weight_decay,
        clip_norm: a.clip_norm.or(d.clip_norm),
        eval_every: a.eval_every.unwrap_or((steps / 10).max(1)),
        checkpoint_every: a.checkpoint_every.unwrap_or(d.checkpoint_every),
        embed: a.embed.unwrap_or(d.embed),
        hidden,
        layers,
        bidirectional: a.bidirectional,
        ..d
    };
    for kv in &a.model_option {
        let (k, v) = kv.split_once('=').ok_or_else(|| format!("bad --model-option {kv:?}: expected KEY=VALUE"))?;
        let (k, v) = (k.trim(), v.trim());
        let num = |v: &str| v.parse::<usize>().map_err(|_| format!("--model-option {k}={v}: a whole number"));
        let flag = |v: &str| v.parse::<bool>().map_err(|_| format!("--model-option {k}={v}: true or false"));
        match k {
            "cell" => s.cell = v.to_string(),
            "attention" => s.attention = v.to_string(),
            "tokenizer" => s.tokenizer = v.to_string(),
            "target_tokenizer" => s.target_tokenizer = v.to_string(),
            "input_feeding" => s.input_feeding = flag(v)?,
            "bidirectional" => s.bidirectional = flag(v)?,
            "attn_dim" => s.attn_dim = num(v)?,
            "beam" => s.beam = num(v)?,
            "alpha" => s.alpha = v.parse().map_err(|_| format!("--model-option alpha={v}: a number"))?,
            other => return Err(format!("--model-option {other}: --model seq2seq takes cell, attention, input_feeding, attn_dim, tokenizer, target_tokenizer, beam, alpha")),
        }
    }
    if s.target_tokenizer.is_empty() {
        s.target_tokenizer = s.tokenizer.clone();
    }
    s.validate()?;
    s.data_fingerprint = fingerprint(&s)?;
    Ok(s)
}

/// Held-out pairs longer than this many times `--max-len` tokens on a side are left out of
/// evaluations (decoding stops at 4 × `--max-len` tokens anyway; a one-megabyte line would
/// otherwise take gigabytes of teacher-forced logits).
pub const EVAL_LEN_FACTOR: usize = 4;

/// The FNV-1a hash of the bytes of every data file `s` names.
fn fingerprint(s: &Settings) -> Result<String, String> {
    let mut h = super::files::Fnv1a::default();
    for f in std::iter::once(&s.data).chain(&s.target_file).chain(&s.valid).chain(&s.test) {
        let n = super::files::hash_file(Path::new(f), &mut h)?;
        h.update(&n.to_le_bytes());
    }
    Ok(format!("{:016x}", h.finish()))
}

/// Refuses to rebuild `s`'s splits from data that changed since the run was trained.
fn check_fingerprint(s: &Settings, what: &str) -> Result<(), String> {
    let now = fingerprint(s)?;
    if !s.data_fingerprint.is_empty() && now != s.data_fingerprint {
        return Err(format!("{}: the data changed since the run was trained (fingerprint {now}, the run's {}), so {what}", s.data, s.data_fingerprint));
    }
    Ok(())
}

/// Leaves out of `pairs` those longer than [`EVAL_LEN_FACTOR`] × `max_len` tokens on a side,
/// with a note naming `what`.
fn bounded(pairs: Vec<Pair>, max_len: usize, what: &str, notes: &mut Vec<String>) -> Vec<Pair> {
    let limit = EVAL_LEN_FACTOR * max_len;
    let n = pairs.len();
    let kept: Vec<Pair> = pairs.into_iter().filter(|p| p.0.len() <= limit && p.1.len() <= limit).collect();
    if kept.len() < n {
        notes.push(format!("{} of {n} {what} pairs have more than {limit} tokens on a side ({EVAL_LEN_FACTOR} × --max-len) and are left out of the evaluation", n - kept.len()));
    }
    kept
}

/// Refuses, before anything is allocated or written, a model whose training would not fit in
/// the memory available: parameters with their gradients and Adam's two moments (16 bytes
/// each), and a step's output logits with their gradients and softmax (`batch × max_len ×
/// target vocabulary`, about 12 bytes each).
fn check_memory(s: &Settings, c: &Corpus) -> Result<(), String> {
    let kept: Vec<&Pair> = c.train.iter().filter(|p| p.0.len() <= s.max_len && p.1.len() <= s.max_len).collect();
    let vocab = |side: fn(&Pair) -> &Vec<String>| {
        let distinct: std::collections::HashSet<&str> = kept.iter().flat_map(|p| side(p).iter().map(String::as_str)).collect();
        4 + if s.max_vocab > 0 { distinct.len().min(s.max_vocab) } else { distinct.len() }
    };
    let cfg = Seq2SeqConfig { src_vocab: vocab(|p| &p.0).max(5), tgt_vocab: vocab(|p| &p.1).max(5), ..s.model_config()? };
    cfg.validate().map_err(|e| e.to_string())?;
    let params = cfg.min_parameter_count();
    // A step's targets are at most the longest kept one (and `</s>`).
    let longest = kept.iter().map(|p| p.1.len()).max().unwrap_or(0) + 1;
    let logits = (s.batch_size as u128) * (longest as u128) * cfg.tgt_vocab as u128;
    chi_nn::limits::check_elements("a step's output logits", &[s.batch_size * longest, cfg.tgt_vocab]).map_err(|e| format!("{e}; give a smaller --batch-size, --max-len or --max-vocab"))?;
    let need = 16 * params + 12 * logits;
    if let Some(have) = chi_nn::files::machine_memory() {
        if need > have as u128 {
            return Err(format!(
                "this model needs about {:.1} GB to train ({params} parameters with gradients and Adam's moments, {logits} logits a step with vocabularies {} and {}), more than the {:.1} GB available; give a smaller --hidden, --embed, --max-vocab, --batch-size or --max-len",
                need as f64 / 1e9,
                cfg.src_vocab,
                cfg.tgt_vocab,
                have as f64 / 1e9
            ));
        }
    }
    Ok(())
}

/// The tokenised pairs of one file of `s`'s layout (or of `s`'s two aligned files).
fn read_tokenised(s: &Settings, file: &Path, target_file: Option<&Path>, notes: &mut Vec<String>) -> Result<Vec<Pair>, String> {
    let raw = match target_file {
        Some(t) => {
            notes.push(format!("two aligned files: sources from {}, targets from {}", file.display(), t.display()));
            read_parallel(file, t).map_err(|e| e.to_string())?
        }
        None => {
            let p = read_pairs(file, &s.columns()).map_err(|e| e.to_string())?;
            notes.extend(p.notes.into_iter().map(|n| format!("{}: {n}", file.display())));
            p.pairs
        }
    };
    let tok = s.tokenizer_kind()?;
    raw.iter().map(|(a, b)| Ok((tok.apply(a), s.target_tokens(b)?))).collect()
}

/// The train, validation and test pairs of a run's settings: the same seed gives the same splits.
pub fn corpus(s: &Settings, notes: &mut Vec<String>) -> Result<Corpus, String> {
    let mut all = read_tokenised(s, Path::new(&s.data), s.target_file.as_deref().map(Path::new), notes)?;
    let mut rng = Rng::new(s.seed ^ 0x5e95_2_5e9);
    rng.shuffle(&mut all);
    let n = all.len();
    let share = |f: f64| if f > 0.0 { ((f * n as f64).round() as usize).max(1) } else { 0 };
    let n_test = if s.test.is_some() { 0 } else { share(s.split[2]) };
    let n_valid = if s.valid.is_some() { 0 } else { share(s.split[1]) };
    if n_test + n_valid >= n {
        return Err(format!("{}: {n} pair(s) cannot be split {:?} with training pairs left; give more pairs, or --valid and --test files", s.data, s.split));
    }
    let test: Vec<Pair> = all.drain(n - n_test..).collect();
    let valid: Vec<Pair> = all.drain(all.len() - n_valid..).collect();
    let mut c = Corpus { train: all, valid, test };
    if let Some(v) = &s.valid {
        c.valid = read_tokenised(s, Path::new(v), None, notes)?;
    }
    if let Some(t) = &s.test {
        c.test = read_tokenised(s, Path::new(t), None, notes)?;
    }
    c.valid = bounded(std::mem::take(&mut c.valid), s.max_len, "validation", notes);
    c.test = bounded(std::mem::take(&mut c.test), s.max_len, "test", notes);
    let long = c.train.iter().filter(|p| p.0.len() > s.max_len || p.1.len() > s.max_len).count();
    if long > 0 {
        notes.push(format!("{long} of {} training pairs have more than --max-len {} tokens on a side and are left out", c.train.len(), s.max_len));
    }
    Ok(c)
}

/// Lines, each ended by a newline.
fn json_lines<'a>(rows: impl Iterator<Item = &'a String>) -> String {
    rows.map(|r| format!("{r}\n")).collect()
}

/// Lines of a JSON-lines log up to and including `step` (what a run resumed from a checkpoint
/// of that step keeps), as written; a line cut short by a kill does not parse and goes.
fn rows_up_to(path: &Path, step: u64) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter(|l| serde_json::from_str::<serde_json::Value>(l).ok().is_some_and(|r| r["step"].as_u64().is_some_and(|s| s <= step)))
        .map(str::to_string)
        .collect()
}

/// The flags `--resume` takes besides `--steps`: every other one would change the run.
fn flags_besides_steps(a: &TrainArgs) -> Vec<&'static str> {
    given(&[
        (a.data.is_some(), "--data"),
        (a.target.is_some(), "--target"),
        (a.text_column.is_some(), "--text-column"),
        (a.format.is_some(), "--format"),
        (a.header.is_some(), "--header"),
        (a.split.is_some(), "--split"),
        (a.valid.is_some(), "--valid"),
        (a.test.is_some(), "--test"),
        (a.max_vocab.is_some(), "--max-vocab"),
        (a.max_len.is_some(), "--max-len"),
        (a.embed.is_some(), "--embed"),
        (a.hidden.is_some(), "--hidden"),
        (a.bidirectional, "--bidirectional"),
        (!a.model_option.is_empty(), "--model-option"),
        (a.batch_size.is_some(), "--batch-size"),
        (a.optim.is_some(), "--optim"),
        (a.lr.is_some(), "--lr"),
        (a.momentum.is_some(), "--momentum"),
        (a.weight_decay.is_some(), "--weight-decay"),
        (a.clip_norm.is_some(), "--clip-norm"),
        (a.eval_every.is_some(), "--eval-every"),
        (a.checkpoint_every.is_some(), "--checkpoint-every"),
    ])
}

/// The settings and starting checkpoint of `chi train --model seq2seq --resume` in `out`
/// (`None`: the run already finished).
fn resume_settings(a: &TrainArgs, out: &Path) -> Result<Option<(Settings, Option<(u64, PathBuf)>)>, String> {
    let unused = unused_flags(a);
    let others = flags_besides_steps(a);
    if !unused.is_empty() || !others.is_empty() {
        let all: Vec<&str> = unused.into_iter().chain(others).collect();
        return Err(format!("--resume continues the run with its own settings ({}); only --steps may change, not {}", out.join(SETTINGS_FILE).display(), all.join(", ")));
    }
    let f = out.join(SETTINGS_FILE);
    if !f.is_file() {
        return Err(format!("--resume: {} holds no seq2seq run (no {SETTINGS_FILE})", out.display()));
    }
    let text = rundir::read_config_text(&f)?;
    let mut s: Settings = serde_json::from_str(&text).map_err(|e| format!("{}: not a seq2seq run's settings: {e}", f.display()))?;
    if let Some(steps) = a.steps {
        s.steps = steps;
    }
    s.validate().map_err(|e| format!("{}: {e}", f.display()))?;
    let last = checkpoint::list_checkpoints(&out.join("checkpoints")).pop();
    // Finished means trained, saved and tested at these steps: a run stopped during its final
    // test (an extended one still holds the shorter run's summary) resumes from its last
    // checkpoint, trains no step, and saves and tests.
    let summary_steps = std::fs::read_to_string(out.join("summary.json")).ok().and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok()).and_then(|v| v["steps"].as_u64());
    let finished = summary_steps == Some(s.steps) && out.join("model.safetensors").is_file();
    match &last {
        Some((step, _)) if *step > s.steps => {
            return Err(format!("the run in {} has a checkpoint of step {step}, past --steps {}: a run cannot be shortened", out.display(), s.steps));
        }
        Some((step, _)) if *step == s.steps && finished => {
            println!("the run in {} already finished at step {step} of {}; nothing to do (pass --steps N with N > {step} to extend it)", out.display(), s.steps);
            return Ok(None);
        }
        Some((step, _)) => eprintln!("chi: resuming the run in {} from step {step}", out.display()),
        None => eprintln!("chi: resuming the run in {} from step 0 (it stopped before its first checkpoint)", out.display()),
    }
    Ok(Some((s, last)))
}

/// Settings as a checkpoint records them: all but the step count, which `--resume --steps`
/// may change.
fn checkpoint_config(s: &Settings) -> Result<String, String> {
    serde_json::to_string(&Settings { steps: 0, ..s.clone() }).map_err(|e| e.to_string())
}

/// Runs `chi train --model seq2seq`.
pub fn run_train(a: &TrainArgs, seed: u64, out: &Path) -> Result<(), String> {
    if crate::dist::world().is_some_and(|c| c.size() > 1) {
        return Err("--model seq2seq trains in one process; run it without mpirun".into());
    }
    let (s, from) = if a.resume {
        match resume_settings(a, out)? {
            Some(r) => r,
            None => return Ok(()),
        }
    } else {
        (settings_of(a, seed)?, None)
    };
    if a.resume {
        check_fingerprint(&s, "the run cannot be resumed on it")?;
    }
    let mut notes = Vec::new();
    let c = corpus(&s, &mut notes)?;
    for n in &notes {
        eprintln!("chi: {n}");
    }
    check_memory(&s, &c)?;
    let _lock = rundir::prepare(out, a.resume, a.overwrite)?;
    let settings_json = serde_json::to_string_pretty(&s).map_err(|e| e.to_string())?;
    rundir::write_atomic(&out.join(SETTINGS_FILE), &format!("{settings_json}\n"))?;
    let model_path = out.join("model.safetensors");
    let start = from.as_ref().map_or(0, |f| f.0);
    let eval_path = out.join("eval.jsonl");
    let checkpoints = Checkpoints { dir: out.join("checkpoints"), every: s.checkpoint_every, keep: 2, config: checkpoint_config(&s)?, resume_from: from.map(|f| f.1), eval_log: Some(eval_path.clone()) };
    let save_extra = [("target_tokenizer".to_string(), s.target_tokenizer.clone())].into_iter().collect();
    let opts = TrainOptions { save_to: Some(model_path.clone()), save_extra, checkpoints: Some(checkpoints), ..s.train_options()? };
    let cfg = s.model_config()?;
    eprintln!("chi: {} training, {} validation, {} test pairs", c.train.len(), c.valid.len(), c.test.len());
    let bar = super::progress::Progress::new(s.steps, start, !a.quiet);
    // The log keeps the steps up to the checkpoint resumed from: those after it are trained again.
    let log_path = out.join("log.jsonl");
    let kept_log = if a.resume { rows_up_to(&log_path, start) } else { Vec::new() };
    let kept_evals = if a.resume { rows_up_to(&eval_path, start) } else { Vec::new() };
    rundir::write_atomic(&log_path, &json_lines(kept_log.iter()))?;
    rundir::write_atomic(&eval_path, &json_lines(kept_evals.iter()))?;
    let file = std::fs::OpenOptions::new().append(true).open(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let mut log = std::io::BufWriter::new(file);
    let mut log_err = None;
    let outcome = train_and_evaluate(&cfg, &c, &opts, &mut |step, loss| {
        if step % 10 == 0 || step == s.steps {
            bar.update(step, format!("loss {loss:.4}"));
        }
        if let Err(e) = writeln!(log, "{}", serde_json::json!({ "step": step, "loss": loss })) {
            log_err.get_or_insert(e);
        }
        // On disk before the checkpoint of this step is written: a resumed run finds every
        // step up to its checkpoint in the log.
        if step % s.checkpoint_every == 0 || step == s.steps {
            if let Err(e) = log.flush() {
                log_err.get_or_insert(e);
            }
        }
    });
    bar.finish();
    if let Some(e) = log_err.or_else(|| log.flush().err()) {
        return Err(format!("{}: {e}", log_path.display()));
    }
    let o = outcome.map_err(|e| e.to_string())?;
    let summary = serde_json::json!({
        "model": MODEL_NAME,
        "data": s.data,
        "steps": s.steps,
        "seed": s.seed,
        "train_pairs": o.train_pairs,
        "valid_pairs": c.valid.len(),
        "test_pairs": c.test.len(),
        "src_vocab": o.src_vocab,
        "tgt_vocab": o.tgt_vocab,
        "parameters": o.parameters,
        "train_seconds": o.train_seconds,
        "target_tokens_per_second": o.tokens_per_sec,
        "test": o.test,
    });
    rundir::write_atomic(&out.join("summary.json"), &format!("{}\n", serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?))?;
    if !a.no_plots {
        let rows = rows_up_to(&log_path, s.steps);
        let parsed = rows.iter().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok());
        let loss: Vec<(f64, f64)> = parsed.filter_map(|r| Some((r["step"].as_f64()?, r["loss"].as_f64()?))).collect();
        let series = [("loss".to_string(), loss)];
        for ext in ["svg", "png"] {
            let p = super::plot::LinePlot { title: "training loss (mean NLL per target token)", x_label: "step", y_label: "loss", log_y: false, series: &series };
            if let Err(e) = super::plot::line_plot(&out.join(format!("loss.{ext}")), &p) {
                eprintln!("chi: warning: loss.{ext} not drawn: {e}");
            }
        }
    }
    println!("trained seq2seq on {} for {} steps (seed {}): test {}", s.data, s.steps, s.seed, super::fmt_metrics(&o.test));
    println!("outputs in {} (chi translate {} translates lines)", out.display(), out.display());
    Ok(())
}

/// The weights file of a sequence-to-sequence model named by `path` (a run directory holding
/// one, or the file itself), or `None` when `path` is something else.
pub fn seq2seq_weights(path: &Path) -> Option<PathBuf> {
    let w = if path.is_dir() { path.join("model.safetensors") } else { path.to_path_buf() };
    if !w.is_file() {
        return None;
    }
    (metadata(&w)?["format"].as_str() == Some("chi-seq2seq-1")).then_some(w)
}

/// The metadata of a safetensors file, reading only its header (its length, then its JSON): a
/// classifier's large checkpoint costs nothing here, and a damaged file is left to the loader's
/// messages.
fn metadata(w: &Path) -> Option<serde_json::Value> {
    use std::io::Read;
    let mut f = std::fs::File::open(w).ok()?;
    let mut len = [0u8; 8];
    f.read_exact(&mut len).ok()?;
    let len = u64::from_le_bytes(len);
    if len > 256 << 20 {
        return None;
    }
    let mut header = Vec::new();
    f.take(len).read_to_end(&mut header).ok()?;
    let mut header: serde_json::Value = serde_json::from_slice(&header).ok()?;
    Some(header["__metadata__"].take())
}

/// How a seq2seq model file's targets were split (`words`, `chars`, `spaces`), as `chi train`
/// records it; `None` for a model saved without it (`chi reproduce`'s).
pub fn saved_target_tokenizer(weights: &Path) -> Option<String> {
    let t = metadata(weights)?[format!("{}target_tokenizer", chi_seq2seq::translator::EXTRA_PREFIX)].as_str()?.to_string();
    matches!(t.as_str(), "words" | "chars" | "spaces").then_some(t)
}

/// The text of tokens split by `tokenizer`: characters concatenated (word boundaries as
/// spaces), other tokens joined by spaces.
pub fn text_of(tokens: &[String], tokenizer: &str) -> String {
    if tokenizer == "chars" {
        chi_seq2seq::translator::join_chars(tokens)
    } else {
        tokens.join(" ")
    }
}

/// How the model in `weights` splits its targets: as saved, else `words` (a model saved by
/// `chi reproduce`, whose outputs are joined by spaces).
pub fn target_tokenizer_of(weights: &Path) -> String {
    saved_target_tokenizer(weights).unwrap_or_else(|| "words".to_string())
}

/// What to say when `path` is a seq2seq run's checkpoint, or its directory before the final
/// model exists: checkpoints are for `--resume`, which also finishes such a run.
pub fn unfinished_seq2seq(path: &Path) -> Option<String> {
    let run = if path.is_dir() { path.to_path_buf() } else { path.parent()?.parent()?.to_path_buf() };
    if !run.join(SETTINGS_FILE).is_file() || (path.is_dir() && run.join("model.safetensors").is_file()) {
        return None;
    }
    let finish = format!("chi --out {} train --resume finishes the run (from its newest checkpoint), then chi eval {} evaluates it", run.display(), run.display());
    Some(if path.is_dir() { format!("{}: a seq2seq run without its final model (it stopped before the end); {finish}", path.display()) } else { format!("{}: a seq2seq run's checkpoint, kept for --resume; {finish}", path.display()) })
}

/// The settings beside a seq2seq weights file, when it lies in its run directory.
fn settings_beside(weights: &Path) -> Result<Option<(Settings, PathBuf)>, String> {
    let Some(dir) = weights.parent() else { return Ok(None) };
    let f = dir.join(SETTINGS_FILE);
    if !f.is_file() {
        return Ok(None);
    }
    let text = rundir::read_config_text(&f)?;
    let s: Settings = serde_json::from_str(&text).map_err(|e| format!("{}: not a seq2seq run's settings: {e}", f.display()))?;
    s.validate().map_err(|e| format!("{}: {e}", f.display()))?;
    Ok(Some((s, dir.to_path_buf())))
}

/// Runs `chi eval` on a sequence-to-sequence model.
pub fn run_eval(weights: &Path, a: &EvalArgs) -> Result<(), String> {
    let t = Translator::load(weights).map_err(|e| e.to_string())?;
    let beside = settings_beside(weights)?;
    let mut notes = Vec::new();
    let (pairs, what, name) = match &a.data {
        Some(d) => {
            // The run's columns, header rule and tokenizers (a model file alone: as saved with
            // it); the separator of the file's extension (.csv, .tsv), else the run's.
            let base = beside.as_ref().map_or_else(|| alone(&t, weights), |b| b.0.clone());
            let ext = d.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
            let separator = match ext.as_deref() {
                Some("csv") => "comma".to_string(),
                Some("tsv") => "tab".to_string(),
                _ => base.separator.clone(),
            };
            // A header is detected in this file afresh: the training file's `--header yes`
            // would drop line 1 of a file without one.
            let layout = Settings { separator, header: None, ..base };
            let pairs = read_tokenised(&layout, d, a.target.as_deref(), &mut notes)?;
            let stem = d.file_stem().map_or("data".into(), |s| s.to_string_lossy().to_string());
            (pairs, format!("file {}", d.display()), format!("file-{stem}"))
        }
        None => {
            let (s, _) = beside.as_ref().ok_or_else(|| format!("{}: no {SETTINGS_FILE} beside it to rebuild its splits; give --data FILE", weights.display()))?;
            check_fingerprint(s, "its splits cannot be rebuilt: evaluate a file with --data FILE")?;
            let c = corpus(s, &mut notes)?;
            let pairs = match a.split.as_str() {
                "test" => c.test,
                "valid" => c.valid,
                "train" => c.train,
                other => return Err(format!("unknown split {other:?} (test, valid or train)")),
            };
            (pairs, format!("{} split", a.split), a.split.clone())
        }
    };
    let s = beside.as_ref().map_or_else(|| alone(&t, weights), |b| b.0.clone());
    let pairs = bounded(pairs, s.max_len, &what, &mut notes);
    for n in &notes {
        eprintln!("chi: {n}");
    }
    let opts = TrainOptions { topk: vec![1, 5], beam: s.beam, alpha: s.alpha, decode_pairs: usize::MAX, max_len: s.max_len, ..TrainOptions::default() };
    let dir = match (&a.report, beside.as_ref().map(|b| &b.1), &a.data) {
        (Some(d), _, _) => Some(d.clone()),
        (None, Some(run), Some(d)) => Some(super::cli::file_report_dir(run, &name, d)?),
        (None, Some(run), None) => Some(run.join(format!("eval-{name}"))),
        (None, None, _) => None,
    };
    if let Some(d) = &dir {
        rundir::check_new_name("--report", d)?;
    }
    let e = evaluate_pairs(&t.model, &t.src_vocab, &t.tgt_vocab, &pairs, &opts).map_err(|e| e.to_string())?;
    println!("seq2seq on {what}: {} pairs: {}", e.pairs, super::fmt_metrics(&e.metrics));
    if let Some(d) = dir {
        std::fs::create_dir_all(&d).map_err(|e| format!("{}: cannot create: {e}", d.display()))?;
        let report = serde_json::json!({ "data": what, "pairs": e.pairs, "decoded": e.decoded, "beam": s.beam, "metrics": e.metrics });
        rundir::write_atomic(&d.join("report.json"), &format!("{}\n", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?))?;
        let mut csv = String::from("source,reference,output\n");
        let kept = pairs.iter().filter(|p| !p.0.is_empty() && !p.1.is_empty());
        for (p, out) in kept.zip(&e.outputs) {
            csv.push_str(&format!("{},{},{}\n", super::infer::csv_field(&text_of(&p.0, &s.tokenizer)), super::infer::csv_field(&s.target_text(&p.1)), super::infer::csv_field(&s.target_text(out))));
        }
        rundir::write_atomic(&d.join("translations.csv"), &csv)?;
        println!("wrote {}, {}", d.join("report.json").display(), d.join("translations.csv").display());
    }
    Ok(())
}

/// The settings of a model file without its run directory: the defaults, with its tokenizers
/// (the target's as saved with it, else the source's).
fn alone(t: &Translator, weights: &Path) -> Settings {
    let tok = if t.tokenizer == Tokenizer::Chars { "chars" } else { "words" };
    // Saved without it (`chi reproduce`'s models): character models are grapheme-to-phoneme
    // ones, whose targets are space-separated phonemes.
    let target = saved_target_tokenizer(weights).unwrap_or_else(|| if tok == "chars" { "spaces" } else { "words" }.to_string());
    Settings { tokenizer: tok.into(), target_tokenizer: target, ..Settings::default() }
}

/// Runs `chi predict` with a sequence-to-sequence model: one CSV row per input line
/// (`line,source,translation`; a blank line gets an empty translation).
pub fn run_predict(weights: &Path, a: &PredictArgs) -> Result<(), String> {
    if a.saliency > 0 || a.attribution.is_some() {
        return Err("--saliency ranks the words of a classifier's input; for a seq2seq model, chi translate MODEL --heatmap DIR draws each output word's attention".into());
    }
    let t = Translator::load(weights).map_err(|e| e.to_string())?;
    let s = settings_beside(weights)?.map_or_else(|| alone(&t, weights), |b| b.0);
    let (input, stdin) = super::cli::input_path(&a.input)?;
    if let Some(o) = &a.output {
        if rundir::lies_within(o, &a.input) {
            return Err(format!("--output {} is the input file or inside the input folder; write the translations elsewhere", o.display()));
        }
        let run_file = |d: &Path| o.parent().is_some_and(|p| checkpoint::same_file(p, d)) && o.file_name().and_then(|n| n.to_str()).is_some_and(|n| rundir::RUN_FILES.contains(&n));
        if checkpoint::same_file(o, weights) || weights.parent().is_some_and(run_file) {
            return Err(format!("--output {} is the model or a file of its run; write the translations elsewhere", o.display()));
        }
        // The run's data files are the user's too.
        let data = [Some(&s.data), s.target_file.as_ref(), s.valid.as_ref(), s.test.as_ref()];
        if let Some(d) = data.into_iter().flatten().find(|d| !d.is_empty() && rundir::lies_within(o, Path::new(d))) {
            return Err(format!("--output {} is the model's data ({d}); write the translations elsewhere", o.display()));
        }
        rundir::check_text_output("--output", o)?;
    }
    let bytes = chi_nn::files::read_file_checked(&input, |h| if h.contains(&0) { Err("has NUL bytes: a binary file, not text".to_string()) } else { Ok(()) })
        .map_err(|e| format!("{}: {e}", a.input.display()))?;
    let text = String::from_utf8(bytes).map_err(|e| format!("{}: not UTF-8 text (byte {})", a.input.display(), e.utf8_error().valid_up_to()))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let name = if stdin { "stdin".to_string() } else { a.input.display().to_string() };
    let mut csv = String::from("line,source,translation\n");
    let mut n = 0;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.chars().count() > MAX_LINE_CHARS {
            return Err(format!("{name}: line {} is longer than {MAX_LINE_CHARS} characters", i + 1));
        }
        let out = if line.trim().is_empty() {
            String::new()
        } else {
            let max = (2 * t.tokenizer.apply(line).len() + 10).min(4 * s.max_len);
            let tokens = t.translate(line, s.beam, s.alpha, max).map_err(|e| format!("{name}: line {}: {e}", i + 1))?.output;
            s.target_text(&tokens)
        };
        csv.push_str(&format!("{},{},{}\n", super::infer::csv_field(&format!("{name}:{}", i + 1)), super::infer::csv_field(line), super::infer::csv_field(&out)));
        n += 1;
    }
    match &a.output {
        Some(o) => {
            checkpoint::atomic_write(o, csv.as_bytes())?;
            eprintln!("wrote {n} translations to {}", o.display());
        }
        None => print!("{csv}"),
    }
    Ok(())
}
