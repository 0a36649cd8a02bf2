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
//! * whatever plots and curves the experiment writes into its directory ([`Ctx::dir`]).
//!
//! Built-in experiments need no download and are what `chi reproduce` (and `cargo run
//! --release` with no arguments) runs. Real-data experiments (issue 6) list the datasets they
//! need in [`Experiment::data`] and are run only when named.
//!
//! # Adding an experiment
//! Write `reproduce/my_exp.rs` with `pub fn run(ctx: &Ctx) -> Result<Report, String>`, add a
//! `mod` line and an [`Experiment`] entry in [`registry`]. Use [`Ctx::runs`] and [`Ctx::quick`]
//! to size the work (`--quick` must keep the whole built-in set under two minutes), and
//! [`Ctx::run_seed`] for each run's seed so results are deterministic.

mod att_synthetic;
mod bsfe_reviews;
mod bsfe_synthetic;
mod cnn_mnist;
mod nn_surface;
mod nn_xor;
mod res_fashion;
mod rnn_synthetic;
mod sem_lee;
mod util;

use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `chi reproduce [NAME…] [--quick] [--runs N] [--json]`.
#[derive(Args, Debug, Clone, Default)]
pub struct ReproduceArgs {
    /// Experiments to run (default: every built-in one; `--list` shows all).
    pub names: Vec<String>,
    /// Small, fast variants (the whole built-in set in under two minutes).
    #[arg(long)]
    pub quick: bool,
    /// Repetitions with different seeds (default: each experiment's own, as in the paper).
    #[arg(long)]
    pub runs: Option<usize>,
    /// Print one JSON object per result row instead of a table.
    #[arg(long)]
    pub json: bool,
    /// List the experiments and exit.
    #[arg(long)]
    pub list: bool,
}

/// What an experiment gets to run with.
#[derive(Clone, Debug)]
pub struct Ctx {
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
}

impl Ctx {
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
}

/// Every experiment, built-in ones first.
pub fn registry() -> Vec<Experiment> {
    vec![
        Experiment {
            name: "ca-rnn-synthetic",
            title: "CA-RNN vs LSTM vs GRU on the paper's 2-sentence validation task (Sec. 4.4.1)",
            data: &[],
            runs: 10,
            quick_runs: 3,
            run: rnn_synthetic::run,
        },
        Experiment {
            name: "ca-nn-xor",
            title: "CA-NN vs 1- and 2-hidden-layer NNs on the four XOR points (Sec. 4.5.1, Fig. 15)",
            data: &[],
            runs: 10,
            quick_runs: 2,
            run: nn_xor::run,
        },
        Experiment {
            name: "ca-nn-surface",
            title: "CA-NN single vs stacked on z = x·exp(−x²−y²) from 1% of an 81×81 grid (Sec. 4.5.1, Fig. 16)",
            data: &[],
            runs: 10,
            quick_runs: 2,
            run: nn_surface::run,
        },
        Experiment {
            name: "ca-bsfe-synthetic",
            title: "CA-BSFE vs averaging on a planted bag-of-features task with known χ̃ (Sec. 3.2)",
            data: &[],
            runs: 5,
            quick_runs: 1,
            run: bsfe_synthetic::run,
        },
        Experiment {
            name: "ca-att-synthetic",
            title: "CA-ATT vs softmax (Bahdanau, Luong) attention when 0, 1 or several inputs are relevant (Sec. 3.3)",
            data: &[],
            runs: 5,
            quick_runs: 1,
            run: att_synthetic::run,
        },
        Experiment {
            name: "ca-sem-lee",
            title: "CA-SEM vs SIF vs averaging, GloVe 6B 50d, Lee document similarity (Sec. 4.1 stand-in)",
            data: &["gensim", "glove"],
            runs: 1,
            quick_runs: 1,
            run: sem_lee::run,
        },
        Experiment {
            name: "ca-bsfe-reviews",
            title: "CA-BSFE vs averaging, with/without em_steps, Pang & Lee reviews and sentences, 10-fold CV (Sec. 4.2)",
            data: &["pang-lee"],
            runs: 1,
            quick_runs: 1,
            run: bsfe_reviews::run,
        },
        Experiment {
            name: "ca-cnn-mnist",
            title: "CA-CNN vs CNN (one conv layer + hidden 128), MNIST 10k and Fashion-MNIST, kernels 4/8/12, σ-maps (Sec. 4.6)",
            data: &["mnist", "fashion-mnist"],
            runs: 1,
            quick_runs: 1,
            run: cnn_mnist::run,
        },
        Experiment {
            name: "ca-res-fashion",
            title: "CA-RES vs plain CNN vs ResNet blocks (conv + hidden 512), Fashion-MNIST as the CIFAR stand-in (Sec. 4.7)",
            data: &["fashion-mnist"],
            runs: 1,
            quick_runs: 1,
            run: res_fashion::run,
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

/// Writes `results.json` for one experiment (atomically: temporary file + rename).
fn write_record(dir: &Path, name: &str, ctx: &Ctx, rep: &Report, secs: f64) -> Result<(), String> {
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
        "runs": ctx.runs,
        "seed": ctx.seed,
        "wall_time_s": secs,
        "chi_version": env!("CARGO_PKG_VERSION"),
        "data": rep.data,
        "config": config,
        "rows": rows,
        "notes": rep.notes,
        "files": rep.files,
    });
    let path = dir.join("results.json");
    let tmp = dir.join("results.json.tmp");
    let text = serde_json::to_string_pretty(&rec).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::write(&tmp, text + "\n").map_err(|e| format!("{}: cannot write: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("{}: cannot rename into place: {e}", path.display()))
}

/// Runs the named experiments (or all built-in ones), printing the table or JSON lines.
/// Returns the reports, for tests.
pub fn run(args: &ReproduceArgs, seed: u64, out: &Path) -> Result<Vec<(String, Report)>, String> {
    let reg = registry();
    if args.list {
        for e in &reg {
            let data = if e.data.is_empty() { "built-in".to_string() } else { format!("needs: {}", e.data.join(", ")) };
            println!("{:<20} {} ({data})", e.name, e.title);
        }
        return Ok(Vec::new());
    }
    let chosen: Vec<&Experiment> = if args.names.is_empty() {
        reg.iter().filter(|e| is_builtin(e)).collect()
    } else {
        let mut v = Vec::new();
        for n in &args.names {
            match reg.iter().find(|e| e.name == n) {
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
    let progress = !args.json && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut results = Vec::new();
    for e in chosen {
        let dir = out.join("reproduce").join(e.name);
        std::fs::create_dir_all(&dir).map_err(|err| format!("{}: cannot create: {err}", dir.display()))?;
        let runs = args.runs.unwrap_or(if args.quick { e.quick_runs } else { e.runs });
        let ctx = Ctx { quick: args.quick, runs, seed, dir: dir.clone(), progress };
        if !args.json {
            eprintln!("chi reproduce: {} — {} ({} run{}{})", e.name, e.title, runs, if runs == 1 { "" } else { "s" }, if args.quick { ", quick" } else { "" });
        }
        let t0 = Instant::now();
        let rep = (e.run)(&ctx).map_err(|err| format!("{}: {err}", e.name))?;
        let secs = t0.elapsed().as_secs_f64();
        write_record(&dir, e.name, &ctx, &rep, secs)?;
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
    fn unknown_experiment_is_an_error() {
        let args = ReproduceArgs { names: vec!["nope".into()], ..Default::default() };
        let err = run(&args, 0, &std::env::temp_dir()).unwrap_err();
        assert!(err.contains("unknown experiment 'nope'"), "{err}");
    }
}
