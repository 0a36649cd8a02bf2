//! `chi reproduce`: the paper's experiments, run on chi, side by side with the paper's numbers.
//!
//! Each experiment is one module with a `run(&Ctx) -> Result<Report, String>` function and one
//! entry in [`registry`]. An experiment repeats its work `ctx.runs` times with seeds
//! `ctx.seed + r` and reports rows of `(metric, model, paper value, one value per run)`;
//! this module turns them into the printed table (mean ± sample std over runs) or JSON lines,
//! and writes per-experiment records to `OUT/reproduce/NAME/`:
//!
//! * `results.json`: the rows with every per-run value, the notes, the configuration (runs,
//!   quick, seed), the data versions used and the wall time;
//! * whatever plots and curves the experiment writes into its directory ([`Ctx::dir`]);
//! * `units/KEY.json`: one record per finished unit of work (a model variant × run, or a
//!   cross-validation fold) with every number the experiment aggregates or plots, written
//!   atomically as soon as the unit finishes. `chi reproduce NAME --resume` reuses the valid
//!   records and runs only the missing units, giving the same final table; a corrupt or
//!   mismatched record is ignored with a warning naming the file (see [`units`]).
//!
//! Long training loops show a progress bar (experiment, unit i/n, step/total, loss, elapsed,
//! ETA) when stderr is a terminal and `--json` is not given ([`Ctx::bar`]).
//!
//! `--runs N` sets the repetitions of experiments whose runs are seeded repetitions. Two
//! experiments have no such repetitions and ignore it with a warning ([`Experiment::fixed_runs`]):
//! `ca-sem-lee` is deterministic (one run) and `ca-bsfe-reviews` reports one value per
//! cross-validation fold; their `results.json` records the truthful count (1; the folds).
//!
//! Built-in experiments need no download and are what `chi reproduce` (and `cargo run
//! --release` with no arguments) runs. Real-data experiments list the datasets they
//! need in [`Experiment::data`] and are run only when named.
//!
//! # Adding an experiment
//! Write `reproduce/my_exp.rs` with `pub fn run(ctx: &Ctx) -> Result<Report, String>`, add a
//! `mod` line and an [`Experiment`] entry in [`registry`]. Use [`Ctx::runs`] and [`Ctx::quick`]
//! to size the work (`--quick` must keep the whole built-in set under two minutes), and
//! [`Ctx::run_seed`] for each run's seed so results are deterministic. Run each independent
//! unit of work (a model variant × run) through [`Ctx::unit`], so it is recorded and
//! `--resume` can skip it, and show long training loops with [`Ctx::bar`].
//!
//! # Several processes
//! `mpirun -n K chi-mpi reproduce NAME` trains the mini-batch experiments data-parallel (those with
//! an [`Experiment::batch`]; see [`ranks`]): every rank runs the same units in the same order,
//! each training step's global batch is split over the ranks and their gradients averaged, and
//! rank 0 alone writes the experiment directory and prints the table.

mod att_synthetic;
mod bsfe_long;
mod bsfe_reviews;
mod ca_compare;
mod text_cnn_sentences;
mod bsfe_synthetic;
mod cnn_mnist;
mod cnn_sweep;
mod han_reviews;
mod judge;
mod nn_surface;
mod nn_xor;
pub mod options;
mod pos_brown;
pub mod ranks;
mod rationales;
mod rationales_reviews;
mod rcnn_lm;
mod rcnn_sentiment;
mod res_fashion;
mod res_sweep;
mod rnn_synthetic;
mod sem_lee;
mod seq2seq_nmt;
pub mod units;
mod util;
mod word_vectors;

use clap::Args;
use options::OptionSpec;
use std::collections::BTreeMap;
use std::cell::Cell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `chi reproduce [NAME…] [--quick] [--runs N] [--json] [--resume]`.
#[derive(Args, Debug, Clone, Default)]
pub struct ReproduceArgs {
    /// Experiments to run (default: every built-in one; `--list` shows all).
    pub names: Vec<String>,
    /// Small, fast variants (the whole built-in set in under two minutes).
    #[arg(long)]
    pub quick: bool,
    /// Repetitions with different seeds (default: each experiment's own, as in the paper), 1 to 1000.
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1000))]
    pub runs: Option<usize>,
    /// Print one JSON object per result row instead of a table.
    #[arg(long)]
    pub json: bool,
    /// List the experiments and exit.
    #[arg(long)]
    pub list: bool,
    /// Reuse the finished units of work (model variant × run, or CV fold) recorded in
    /// `OUT/reproduce/NAME/units/` by an earlier run with the same configuration, and run only
    /// the rest. A corrupt or mismatched record is ignored with a warning naming the file, and
    /// its unit runs again.
    #[arg(long)]
    pub resume: bool,
    /// Sets an option an experiment leaves open (a choice its paper does not fix), e.g.
    /// `--set hidden=16 --set optimizer=adam`; repeatable. `--list` shows each experiment's.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

/// What an experiment gets to run with.
#[derive(Clone, Debug)]
pub struct Ctx {
    /// The experiment's name (labels progress bars and unit records).
    pub name: String,
    /// Small variant for CI (`--quick`).
    pub quick: bool,
    /// Number of repetitions.
    pub runs: usize,
    /// Base seed (`--seed`); run `r` uses [`Ctx::run_seed`]`(r)`.
    pub seed: u64,
    /// This experiment's output directory (created before `run` is called).
    pub dir: PathBuf,
    /// Whether to show progress on stderr (off for `--json` and non-terminals).
    pub progress: bool,
    /// `--resume`: reuse valid unit records ([`Ctx::unit`]).
    pub resume: bool,
    /// Units the experiment said it will run ([`Ctx::plan_units`]; 0: unknown).
    units_planned: Cell<usize>,
    /// Units run in this invocation.
    units_ran: Cell<usize>,
    /// Units taken from their records.
    units_reused: Cell<usize>,
    /// The processes training together under `mpirun` (one process: none).
    group: chi_nn::dist::Group,
    /// The options given by `--set` ([`options`]).
    options: BTreeMap<String, String>,
}

impl Ctx {
    /// A context for experiment `name` writing into `dir`, with no units counted yet.
    pub fn new(name: &str, dir: PathBuf, quick: bool, runs: usize, seed: u64, progress: bool, resume: bool) -> Ctx {
        Ctx {
            name: name.to_string(),
            quick,
            runs,
            seed,
            dir,
            progress,
            resume,
            units_planned: Cell::new(0),
            units_ran: Cell::new(0),
            units_reused: Cell::new(0),
            group: chi_nn::dist::Group::one(),
            options: BTreeMap::new(),
        }
    }
    /// Seed of repetition `r`.
    pub fn run_seed(&self, r: usize) -> u64 {
        self.seed.wrapping_add(r as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(r as u64)
    }
    /// A path inside this experiment's output directory.
    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }
    /// A progress line on stderr (only when [`Ctx::progress`]).
    pub fn log(&self, msg: &str) {
        if self.progress {
            eprintln!("  {msg}");
        }
    }
}

/// One result row: a metric of one model, over runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Metric name, e.g. `"test error"`, `"accuracy"`, `"pearson"`.
    pub metric: String,
    /// Model name, e.g. `"CA-RNN"`.
    pub model: String,
    /// The paper's reported value, if it reports one.
    pub paper: Option<f64>,
    /// chi's value in each run.
    pub values: Vec<f64>,
}

impl Row {
    /// A row.
    pub fn new(metric: &str, model: &str, paper: Option<f64>, values: Vec<f64>) -> Row {
        Row { metric: metric.into(), model: model.into(), paper, values }
    }
    /// Mean over runs (NaN if there are none).
    pub fn mean(&self) -> f64 {
        if self.values.is_empty() {
            return f64::NAN;
        }
        self.values.iter().sum::<f64>() / self.values.len() as f64
    }
    /// Sample standard deviation over runs (n − 1 denominator; 0 for a single run).
    pub fn std(&self) -> f64 {
        let n = self.values.len();
        if n < 2 {
            return 0.0;
        }
        let m = self.mean();
        (self.values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1) as f64).sqrt()
    }
}

/// What an experiment reports.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Result rows.
    pub rows: Vec<Row>,
    /// Free-text findings (printed under the table and stored in `results.json`), e.g. where
    /// chi differs from the paper, the stand-in dataset used, the words with the highest χ̃.
    pub notes: Vec<String>,
    /// Files written (plots, curves), relative to the experiment directory.
    pub files: Vec<String>,
    /// Data versions used (`"fashion-mnist: Debian 0.0~git…"`), for real-data experiments.
    pub data: Vec<String>,
    /// Extra configuration worth recording (hyperparameters), as `(key, value)`.
    pub config: Vec<(String, String)>,
    /// The number of values per row when it is not [`Ctx::runs`] (e.g. one per CV fold), for
    /// experiments that ignore `--runs` ([`Experiment::fixed_runs`]).
    pub runs: Option<usize>,
}

/// One registered experiment.
pub struct Experiment {
    /// Name used on the command line.
    pub name: &'static str,
    /// One-line description with the paper section.
    pub title: &'static str,
    /// Datasets it needs from `scripts/fetch-data.sh` (empty: built-in).
    pub data: &'static [&'static str],
    /// Repetitions of a full run (the paper's number where it gives one).
    pub runs: usize,
    /// Repetitions under `--quick`.
    pub quick_runs: usize,
    /// The experiment.
    pub run: fn(&Ctx) -> Result<Report, String>,
    /// Why `--runs` does not apply, for experiments without seeded repetitions (they run
    /// [`Experiment::runs`] / [`Experiment::quick_runs`] times whatever `--runs` says).
    pub fixed_runs: Option<&'static str>,
    /// The smallest global mini-batch of its training steps (full or `--quick`), for
    /// experiments that run data-parallel under `mpirun -n K` (K ≤ this). `None`: one process
    /// only (full-batch training, or no training to divide).
    pub batch: Option<usize>,
    /// The choices it leaves to `--set KEY=VALUE` ([`options`]).
    pub options: &'static [OptionSpec],
}

/// The smaller of two batch sizes (for experiments with several training loops).
const fn smaller(a: usize, b: usize) -> usize {
    if a < b {
        a
    } else {
        b
    }
}

/// Every experiment, built-in ones first.
pub fn registry() -> Vec<Experiment> {
    vec![
        Experiment {
            name: "ca-rnn-synthetic",
            title: "CA-RNN vs LSTM vs GRU on the paper's 2-sentence validation task (Sec. 4.4.1)",
            data: &[],
            runs: 400,
            quick_runs: 3,
            run: rnn_synthetic::run,
            fixed_runs: None,
            batch: None,
            options: rnn_synthetic::OPTIONS,
        },
        Experiment {
            name: "ca-rnn-sweep",
            title: "CA-RNN vs GRU vs LSTM on the Sec. 4.4.1 task over sizes, optimisers, learning rates, init scales and both peephole forms: how often the paper's ranking holds",
            data: &[],
            runs: 100,
            quick_runs: 3,
            run: rnn_synthetic::run_sweep,
            fixed_runs: None,
            batch: None,
            options: rnn_synthetic::SWEEP_OPTIONS,
        },
        Experiment {
            name: "ca-nn-xor",
            title: "CA-NN vs 1- and 2-hidden-layer NNs on the four XOR points (Sec. 4.5.1, Fig. 15)",
            data: &[],
            runs: 50,
            quick_runs: 2,
            run: nn_xor::run,
            fixed_runs: None,
            batch: None,
            options: &[],
        },
        Experiment {
            name: "ca-nn-surface",
            title: "CA-NN single vs stacked on z = x·exp(−x²−y²) from 1% of an 81×81 grid (Sec. 4.5.1, Fig. 16)",
            data: &[],
            runs: 30,
            quick_runs: 2,
            run: nn_surface::run,
            fixed_runs: None,
            batch: None,
            options: &[],
        },
        Experiment {
            name: "ca-bsfe-synthetic",
            title: "CA-BSFE vs averaging on a planted bag-of-features task with known χ̃ (Sec. 3.2)",
            data: &[],
            runs: 10,
            quick_runs: 1,
            run: bsfe_synthetic::run,
            fixed_runs: None,
            batch: Some(bsfe_synthetic::BATCH),
            options: &[],
        },
        Experiment {
            name: "ca-att-synthetic",
            title: "CA-ATT vs softmax (Bahdanau, Luong) attention when 0, 1 or several inputs are relevant (Sec. 3.3)",
            data: &[],
            runs: 5,
            quick_runs: 1,
            run: att_synthetic::run,
            fixed_runs: None,
            batch: Some(att_synthetic::BATCH),
            options: &[],
        },
        Experiment {
            name: "rationales",
            title: "Rationale generator (independent, dependent) vs attention on a synthetic 3-aspect task with planted spans, Table 3.3's precision and selection rate (Lei 2017, §3.4.1)",
            data: &[],
            runs: 5,
            quick_runs: 1,
            run: rationales::run,
            fixed_runs: None,
            batch: Some(rationales::BATCH),
            options: &[],
        },
        Experiment {
            name: "ca-sem-lee",
            title: "CA-SEM vs SIF vs averaging, GloVe 6B 50d, Lee document similarity (Sec. 4.1 stand-in)",
            data: &["gensim", "glove"],
            runs: 1,
            quick_runs: 1,
            run: sem_lee::run,
            fixed_runs: Some("deterministic (no random choices), so it runs once"),
            batch: None,
            options: &[],
        },
        Experiment {
            name: "ca-bsfe-reviews",
            title: "CA-BSFE vs averaging, with/without em_steps, Pang & Lee reviews and sentences, 10-fold CV (Sec. 4.2)",
            data: &["pang-lee"],
            runs: 1,
            quick_runs: 1,
            run: bsfe_reviews::run,
            fixed_runs: Some("it reports one value per cross-validation fold (10; 2 under --quick), fold f seeded with run seed f"),
            batch: Some(bsfe_reviews::BATCH),
            options: &[],
        },
        Experiment {
            name: "ca-bsfe-long",
            title: "CA-BSFE vs averaging trained long, with/without em_steps, Pang & Lee reviews + sentences pooled, curves over steps (Sec. 4.2, Figs. 8-10)",
            data: &["pang-lee"],
            runs: 5,
            quick_runs: 2,
            run: bsfe_long::run,
            fixed_runs: None,
            batch: Some(bsfe_reviews::BATCH),
            options: &[],
        },
        Experiment {
            name: "ca-cnn-mnist",
            title: "CA-CNN vs CNN (one conv layer + hidden 128), MNIST 10k and Fashion-MNIST, kernels 4/8/12, σ-maps (Sec. 4.6)",
            data: &["mnist", "fashion-mnist"],
            runs: 3,
            quick_runs: 1,
            run: cnn_mnist::run,
            fixed_runs: None,
            batch: Some(cnn_mnist::BATCH),
            options: &[],
        },
        Experiment {
            name: "ca-res-fashion",
            title: "CA-RES vs plain CNN vs ResNet blocks (conv + hidden 512), Fashion-MNIST as the CIFAR stand-in (Sec. 4.7)",
            data: &["fashion-mnist"],
            runs: 3,
            quick_runs: 1,
            run: res_fashion::run,
            fixed_runs: None,
            batch: Some(res_fashion::BATCH),
            options: &[],
        },
        Experiment {
            name: "ca-cnn-depth",
            title: "CA-CNN vs CNN over output depths 4/8/16/32 (8×8 kernel), Fashion-MNIST full test set, 5 seeds, paired tests (Sec. 4.6.2, Fig. 17)",
            data: &["fashion-mnist"],
            runs: 5,
            quick_runs: 2,
            run: cnn_sweep::run_depth,
            fixed_runs: None,
            batch: Some(cnn_sweep::BATCH),
            options: cnn_sweep::DEPTH_OPTIONS,
        },
        Experiment {
            name: "ca-cnn-stacked",
            title: "stacked CA-CNN (4 and 16 layers) with and without em_steps, and a 16-layer CNN, Fashion-MNIST 14×14, 5 seeds (Sec. 4.6.3, Fig. 19b)",
            data: &["fashion-mnist"],
            runs: 5,
            quick_runs: 2,
            run: cnn_sweep::run_stacked,
            fixed_runs: None,
            batch: Some(cnn_sweep::BATCH),
            options: cnn_sweep::STACKED_OPTIONS,
        },
        Experiment {
            name: "ca-res-sweep",
            title: "conv CA-RES: Eq. 42 vs the chain block vs ResNet, tuples (l, n_v, n_σ, b), kernels 3/5, Fashion-MNIST full test set, 5 seeds (Sec. 4.7, Fig. 20)",
            data: &["fashion-mnist"],
            runs: 5,
            quick_runs: 2,
            run: res_sweep::run_conv,
            fixed_runs: None,
            batch: Some(cnn_sweep::BATCH),
            options: res_sweep::CONV_OPTIONS,
        },
        Experiment {
            name: "ca-res-tabular",
            title: "dense CA-RES (Eq. 42) vs ResNet vs MLP blocks on 49 tabular block features of Fashion-MNIST, 10 seeds (Sec. 3.5.2)",
            data: &["fashion-mnist"],
            runs: 10,
            quick_runs: 2,
            run: res_sweep::run_tabular,
            fixed_runs: None,
            batch: Some(res_sweep::TABULAR_BATCH),
            options: &[],
        },
        Experiment {
            name: "text-cnn-sentences",
            title: "Kim's text CNN (rand, static, non-static GloVe) vs bag of words, Pang & Lee 4,000 sentences, 10-fold CV [Tixier §5.2]",
            data: &["pang-lee", "glove"],
            runs: 1,
            quick_runs: 1,
            run: text_cnn_sentences::run,
            fixed_runs: Some("it reports one value per cross-validation fold (10; 2 under --quick)"),
            // The CNN and BoW folds step on 50 sentences (`TextCnnSentencesConfig::standard`).
            batch: Some(smaller(bsfe_reviews::BATCH, 50)),
            options: &[],
        },
        Experiment {
            name: "han-reviews",
            title: "hierarchical attention network vs text CNN vs averaging, Pang & Lee 1,500 reviews, 10-fold CV; attention vs saliency [Tixier §7.2.2]",
            data: &["pang-lee", "glove"],
            runs: 1,
            quick_runs: 1,
            run: han_reviews::run,
            fixed_runs: Some("it reports one value per cross-validation fold (10; 2 under --quick)"),
            batch: Some(smaller(han_reviews::BATCH, bsfe_reviews::BATCH)),
            options: &[],
        },
        Experiment {
            name: "pos-brown",
            title: "part-of-speech taggers on the Brown corpus: most frequent tag, BiLSTM-softmax, BiLSTM-CRF, CA-RNN-CRF, universal and Brown tags [Tixier §7; CAML §2.4]",
            data: &["brown"],
            runs: 3,
            quick_runs: 1,
            run: pos_brown::run,
            fixed_runs: None,
            batch: Some(pos_brown::BATCH),
            options: &[],
        },
        Experiment {
            name: "rcnn-lm",
            title: "Word-level LM on Brown: RCNN λ constant / learned / adaptive vs LSTM vs CNN at equal parameter count, held-out perplexity (Lei 2017, §2.5.1, Table 2.4)",
            data: &["brown"],
            runs: 3,
            quick_runs: 1,
            run: rcnn_lm::run,
            fixed_runs: None,
            batch: Some(rcnn_lm::BATCH),
            options: &[],
        },
        Experiment {
            name: "rcnn-sentiment",
            title: "RCNN (λ 0.5, adaptive) vs CNN vs LSTM, Pang & Lee 4,000 sentences, fixed GloVe 50d, 10-fold CV (Lei 2017, §2.5.2, Table 2.6)",
            data: &["pang-lee", "glove"],
            runs: 1,
            quick_runs: 1,
            run: rcnn_sentiment::run,
            fixed_runs: Some("it reports one value per cross-validation fold (10; 2 under --quick), fold f seeded with run seed f"),
            batch: Some(rcnn_sentiment::BATCH),
            options: &[],
        },
        Experiment {
            name: "rationales-reviews",
            title: "Rationales on the Pang & Lee reviews: accuracy from the kept words, selection rate, random-word control, HTML of example rationales (Lei 2017, Ch. 3)",
            data: &["pang-lee", "glove"],
            runs: 3,
            quick_runs: 1,
            run: rationales_reviews::run,
            fixed_runs: None,
            batch: Some(rationales_reviews::BATCH),
            options: rationales_reviews::OPTIONS,
        },
        Experiment {
            name: "nmt-attention",
            title: "EN→ES Bible verses: Bahdanau, Luong, local-p and CA-ATT (Luong / Bahdanau χ) attention, LSTM encoder-decoder (Sec. 4.3.2, Fig. 12)",
            data: &["bible"],
            runs: 3,
            quick_runs: 1,
            run: seq2seq_nmt::run_attention,
            fixed_runs: None,
            batch: Some(seq2seq_nmt::SMALLEST_BATCH),
            options: seq2seq_nmt::OPTIONS,
        },
        Experiment {
            name: "nmt-cells",
            title: "EN→ES Bible verses: LSTM vs GRU vs CA-RNN encoder-decoders with Luong attention (Sec. 4.4.2, Fig. 14)",
            data: &["bible"],
            runs: 3,
            quick_runs: 1,
            run: seq2seq_nmt::run_cells,
            fixed_runs: None,
            batch: Some(seq2seq_nmt::SMALLEST_BATCH),
            options: seq2seq_nmt::OPTIONS,
        },
        Experiment {
            name: "g2p-cmudict",
            title: "CMUdict grapheme-to-phoneme: LSTM vs GRU vs CA-RNN (bi-encoder, Luong attention), word and phoneme error rates",
            data: &["cmudict"],
            runs: 3,
            quick_runs: 1,
            run: seq2seq_nmt::run_g2p,
            fixed_runs: None,
            batch: Some(seq2seq_nmt::SMALLEST_BATCH),
            options: seq2seq_nmt::OPTIONS,
        },
        Experiment {
            name: "word-vectors",
            title: "word2vec (SGNS, CBOW, SG-HS) and GloVe on Brown + SOTU + Shakespeare vs gensim 4.4 and pretrained GloVe: WordSim353, SimLex-999, analogies [White ch. 3]",
            data: &["brown", "sotu", "shakespeare", "gensim", "glove"],
            runs: 3,
            quick_runs: 1,
            run: word_vectors::run,
            fixed_runs: None,
            batch: None,
            options: &[],
        },
    ]
}

/// Whether an experiment runs without downloaded data.
pub fn is_builtin(e: &Experiment) -> bool {
    e.data.is_empty()
}

/// Formats a number for the table: 4 significant decimals, or scientific when tiny/huge.
fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e5).contains(&a) {
        format!("{v:.3e}")
    } else {
        format!("{v:.4}")
    }
}

/// JSON number or `null` (JSON has no NaN/inf).
fn json_num(v: f64) -> serde_json::Value {
    serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// The `--json` line of one row.
pub fn row_json(experiment: &str, row: &Row) -> serde_json::Value {
    serde_json::json!({
        "experiment": experiment,
        "metric": row.metric,
        "model": row.model,
        "paper": row.paper.map_or(serde_json::Value::Null, json_num),
        "chi_mean": json_num(row.mean()),
        "chi_std": json_num(row.std()),
        "runs": row.values.len(),
    })
}

/// The results table (Markdown, so it pastes into the README).
pub fn table(results: &[(String, Report)]) -> String {
    let mut s = String::from("| experiment | metric | model | paper | chi (mean ± std) | runs |\n|---|---|---|---|---|---|\n");
    for (name, rep) in results {
        for r in &rep.rows {
            let paper = r.paper.map_or("—".to_string(), fmt_num);
            s += &format!("| {name} | {} | {} | {paper} | {} ± {} | {} |\n", r.metric, r.model, fmt_num(r.mean()), fmt_num(r.std()), r.values.len());
        }
    }
    s
}

/// Writes `results.json` for one experiment (atomically: temporary file, fsync, rename).
fn write_record(dir: &Path, name: &str, ctx: &Ctx, rep: &Report, secs: f64, fixed_runs: Option<&str>) -> Result<(), String> {
    let rows: Vec<serde_json::Value> = rep
        .rows
        .iter()
        .map(|r| {
            let mut v = row_json(name, r);
            v["values"] = serde_json::Value::Array(r.values.iter().map(|&x| json_num(x)).collect());
            v
        })
        .collect();
    let config: serde_json::Map<String, serde_json::Value> =
        rep.config.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect();
    let rec = serde_json::json!({
        "experiment": name,
        "quick": ctx.quick,
        "runs": rep.runs.unwrap_or(ctx.runs),
        "runs_note": fixed_runs.map_or(serde_json::Value::Null, |r| serde_json::Value::String(format!("--runs does not apply: {r}"))),
        "seed": ctx.seed,
        "options": ctx.options(),
        "resume": ctx.resume,
        "units": { "ran": ctx.units_ran.get(), "reused": ctx.units_reused.get() },
        "wall_time_s": secs,
        "chi_version": env!("CARGO_PKG_VERSION"),
        "data": rep.data,
        "config": config,
        "rows": rows,
        "notes": rep.notes,
        "files": rep.files,
    });
    let path = dir.join("results.json");
    let text = serde_json::to_string_pretty(&rec).map_err(|e| format!("{}: {e}", path.display()))?;
    chi_nn::checkpoint::atomic_write(&path, (text + "\n").as_bytes()).map_err(String::from)
}

/// Runs the named experiments (or all built-in ones), printing the table or JSON lines.
/// Returns the reports, for tests.
pub fn run(args: &ReproduceArgs, seed: u64, out: &Path) -> Result<Vec<(String, Report)>, String> {
    let reg = registry();
    // Under `mpirun -n K`: rank 0 writes and prints, every rank trains (see [`ranks`]).
    let comm = crate::dist::world().filter(|c| c.size() > 1);
    let lead = comm.as_ref().is_none_or(|c| c.rank() == 0);
    if args.list {
        // --list prints the catalogue; what would select or configure a run does nothing here.
        if !args.names.is_empty() || !args.set.is_empty() {
            return Err("--list prints every experiment and its options; give it alone (without experiment names or --set)".into());
        }
        for e in reg.iter().filter(|_| lead) {
            let data = if e.data.is_empty() { "built-in".to_string() } else { format!("needs: {}", e.data.join(", ")) };
            println!("{:<20} {} ({data})", e.name, e.title);
            for o in e.options {
                println!("{:<20}   --set {}=…: {}", "", o.key, o.help);
            }
        }
        return Ok(Vec::new());
    }
    let chosen: Vec<&Experiment> = if args.names.is_empty() {
        reg.iter().filter(|e| is_builtin(e)).collect()
    } else {
        let mut v = Vec::new();
        for n in &args.names {
            match reg.iter().find(|e| e.name == n) {
                // Named twice: run once (a second run would redo the first into the same directory).
                Some(e) if v.iter().any(|c: &&Experiment| c.name == e.name) => {}
                Some(e) => v.push(e),
                None => {
                    let names: Vec<&str> = reg.iter().map(|e| e.name).collect();
                    return Err(format!("unknown experiment '{n}'; known: {}", names.join(", ")));
                }
            }
        }
        v
    };
    if args.runs == Some(0) {
        return Err("--runs must be at least 1".into());
    }
    if let Some(c) = &comm {
        chosen.iter().try_for_each(|e| ranks::check(e, c.size()))?;
    }
    let opts = options::parse(&args.set, &chosen)?;
    let progress = lead && !args.json && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let private = comm.as_ref().filter(|_| !lead).map(|c| ranks::private_dir(c.rank()));
    let mut results = Vec::new();
    for e in chosen {
        let dir = private.as_ref().unwrap_or(&out.to_path_buf()).join("reproduce").join(e.name);
        std::fs::create_dir_all(&dir).map_err(|err| format!("{}: cannot create: {err}", dir.display()))?;
        // One `chi reproduce` per experiment directory at a time (see `train::rundir`).
        let _lock = if lead { Some(crate::train::rundir::RunLock::acquire(&dir)?) } else { None };
        crate::train::rundir::remove_stale_temps(&dir.join(units::UNIT_DIR));
        let own_runs = if args.quick { e.quick_runs } else { e.runs };
        let runs = match (e.fixed_runs, args.runs) {
            (Some(why), Some(_)) => {
                if lead {
                    eprintln!("chi reproduce: warning: {} ignores --runs: {why}", e.name);
                }
                own_runs
            }
            (Some(_), None) => own_runs,
            (None, r) => r.unwrap_or(own_runs),
        };
        let ctx = Ctx::new(e.name, dir.clone(), args.quick, runs, seed, progress, args.resume).with_group(comm.clone()).with_options(opts.clone());
        if lead && !args.json {
            let reps = match e.fixed_runs {
                Some(why) => format!("--runs does not apply: {why}"),
                None => format!("{runs} run{}", if runs == 1 { "" } else { "s" }),
            };
            eprintln!("chi reproduce: {} — {} ({reps}{}{})", e.name, e.title, if args.quick { ", quick" } else { "" }, if args.resume { ", resuming" } else { "" });
        }
        let t0 = Instant::now();
        let rep = (e.run)(&ctx).map_err(|err| format!("{}: {err}", e.name))?;
        let secs = t0.elapsed().as_secs_f64();
        write_record(&dir, e.name, &ctx, &rep, secs, e.fixed_runs)?;
        if !lead {
            results.push((e.name.to_string(), rep));
            continue;
        }
        if let Some(c) = &comm {
            eprintln!("chi reproduce: {}: trained data-parallel on {} processes", e.name, c.size());
        }
        if args.resume {
            let (reused, ran) = (ctx.units_reused.get(), ctx.units_ran.get());
            if reused + ran == 0 {
                eprintln!("chi reproduce: {}: resume: this experiment has no resumable units; it ran in full", e.name);
            } else {
                eprintln!("chi reproduce: {}: resume: reused {reused} of {} units, ran {ran}", e.name, reused + ran);
            }
        }
        let stdout = std::io::stdout();
        let mut o = stdout.lock();
        if args.json {
            for r in &rep.rows {
                writeln!(o, "{}", row_json(e.name, r)).map_err(|err| err.to_string())?;
            }
        } else {
            eprintln!("  done in {secs:.1} s; records in {}", dir.display());
        }
        results.push((e.name.to_string(), rep));
    }
    if let Some(p) = &private {
        let _ = std::fs::remove_dir_all(p);
        return Ok(results);
    }
    if !args.json {
        println!("{}", table(&results));
        for (name, rep) in &results {
            for n in &rep.notes {
                println!("- {name}: {n}");
            }
        }
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_sample_std() {
        let r = Row::new("m", "x", None, vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(r.mean(), 2.5);
        assert!((r.std() - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(Row::new("m", "x", None, vec![7.0]).std(), 0.0);
    }

    #[test]
    fn json_line_has_required_keys() {
        let r = Row::new("test error", "CA-RNN", Some(0.126), vec![0.1, 0.2]);
        let v = row_json("ca-rnn-synthetic", &r);
        for k in ["experiment", "metric", "model", "paper", "chi_mean", "chi_std", "runs"] {
            assert!(v.get(k).is_some(), "missing {k}");
        }
        assert_eq!(v["runs"], 2);
        let r = Row::new("m", "x", None, vec![f64::NAN]);
        assert!(row_json("e", &r)["paper"].is_null());
        assert!(row_json("e", &r)["chi_mean"].is_null());
    }

    #[test]
    fn experiments_without_seeded_repetitions_record_their_true_count() {
        let reg = registry();
        let fixed: Vec<&str> = reg.iter().filter(|e| e.fixed_runs.is_some()).map(|e| e.name).collect();
        assert_eq!(fixed, ["ca-sem-lee", "ca-bsfe-reviews", "text-cnn-sentences", "han-reviews", "rcnn-sentiment"]);
        let dir = std::env::temp_dir().join(format!("chi-reproduce-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ctx = Ctx::new("x", dir.clone(), true, 7, 1, false, false);
        ctx.units_ran.set(3);
        let read = || serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
        let mut rep = Report { rows: vec![Row::new("m", "x", None, vec![1.0; 10])], runs: Some(10), ..Default::default() };
        write_record(&dir, "x", &ctx, &rep, 0.5, Some("one value per fold")).unwrap();
        let v = read();
        assert_eq!(v["runs"], 10, "the folds, not ctx.runs");
        assert!(v["runs_note"].as_str().unwrap().contains("one value per fold"));
        assert_eq!(v["units"]["ran"], 3);
        rep.runs = None;
        write_record(&dir, "x", &ctx, &rep, 0.5, None).unwrap();
        let v = read();
        assert_eq!(v["runs"], 7);
        assert!(v["runs_note"].is_null());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn unknown_experiment_is_an_error() {
        let args = ReproduceArgs { names: vec!["nope".into()], ..Default::default() };
        let err = run(&args, 0, &std::env::temp_dir()).unwrap_err();
        assert!(err.contains("unknown experiment 'nope'"), "{err}");
    }
}
