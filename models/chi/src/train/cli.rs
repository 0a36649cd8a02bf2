//! Command-line arguments of `chi train` and `chi eval`, and their run functions.

use super::{evaluate_checkpoint, fmt_metrics, train, Config, TrainOptions};
use chi_nn::checkpoint;
use chi_nn::optim::OptimKind;
use clap::Args;
use std::path::{Path, PathBuf};

/// `chi train`: train a registered model on a registered dataset.
#[derive(Args, Debug, Clone, Default)]
pub struct TrainArgs {
    /// TOML config file (flags override its values).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Model name: mlp (dense inputs), or lstm, gru, ca-rnn (token sequences, e.g.
    /// --dataset first-token); see --list.
    #[arg(long)]
    pub model: Option<String>,
    /// Dataset name: spirals, xor-noise, surface (dense) or first-token (sequences); see --list.
    #[arg(long)]
    pub dataset: Option<String>,
    /// Training steps.
    #[arg(long)]
    pub steps: Option<u64>,
    /// Mini-batch size.
    #[arg(long)]
    pub batch_size: Option<usize>,
    /// Optimiser: sgd, adagrad, rmsprop, adam, adamw.
    #[arg(long)]
    pub optim: Option<OptimKind>,
    /// Learning rate.
    #[arg(long)]
    pub lr: Option<f64>,
    /// Momentum (SGD, RMSProp).
    #[arg(long)]
    pub momentum: Option<f64>,
    /// Weight decay.
    #[arg(long)]
    pub weight_decay: Option<f64>,
    /// Learning-rate schedule: constant | step:EVERY:GAMMA | exp:GAMMA | cosine:TOTAL[:MIN],
    /// optionally prefixed by warmup:STEPS, (e.g. warmup:100,cosine:5000).
    #[arg(long)]
    pub schedule: Option<String>,
    /// Clip gradients to this global norm.
    #[arg(long)]
    pub clip_norm: Option<f64>,
    /// Block-coordinate training: steps per block.
    #[arg(long)]
    pub em_steps: Option<u64>,
    /// Block-coordinate blocks: groups separated by '/', blocks by ',' (e.g. "chi,embedding").
    #[arg(long)]
    pub em_blocks: Option<String>,
    /// Hidden sizes, comma-separated (e.g. 64,64): MLP layers, or stacked recurrent layers.
    #[arg(long)]
    pub hidden: Option<String>,
    /// Dropout probability.
    #[arg(long)]
    pub dropout: Option<f64>,
    /// Evaluate every N steps.
    #[arg(long)]
    pub eval_every: Option<u64>,
    /// Checkpoint every N steps.
    #[arg(long)]
    pub checkpoint_every: Option<u64>,
    /// Log format: jsonl or csv.
    #[arg(long)]
    pub log_format: Option<String>,
    /// Resume from the latest checkpoint in OUT/checkpoints (its config is used; --steps may
    /// extend the run).
    #[arg(long)]
    pub resume: bool,
    /// Hide the progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Skip plots.
    #[arg(long)]
    pub no_plots: bool,
    /// List the registered models and datasets and exit.
    #[arg(long)]
    pub list: bool,
}

/// `chi eval`: load a full checkpoint and report its metrics.
#[derive(Args, Debug, Clone, Default)]
pub struct EvalArgs {
    /// Checkpoint file (default: the latest in OUT/checkpoints).
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// Split: test or train.
    #[arg(long, default_value = "test")]
    pub split: String,
}

/// Resolves the run configuration from the file, the flags and the global `--seed` (which
/// overrides the file's seed when non-zero, and is used as is without a file).
pub fn resolve_config(args: &TrainArgs, seed: u64) -> Result<Config, String> {
    let mut c = match &args.config {
        Some(p) => Config::load(p)?,
        None => Config::default(),
    };
    if args.config.is_none() || seed != 0 {
        c.seed = seed;
    }
    if let Some(v) = &args.model {
        c.model = v.clone();
    }
    if let Some(v) = &args.dataset {
        c.dataset = v.clone();
    }
    if let Some(v) = args.steps {
        c.steps = v;
    }
    if let Some(v) = args.batch_size {
        c.batch_size = v;
    }
    if let Some(v) = args.optim {
        c.optim.name = v;
    }
    if let Some(v) = args.lr {
        c.optim.lr = v;
    }
    if let Some(v) = args.momentum {
        c.optim.momentum = v;
    }
    if let Some(v) = args.weight_decay {
        c.optim.weight_decay = Some(v);
    }
    if let Some(v) = &args.schedule {
        c.schedule = chi_nn::schedule::LrSchedule::parse(v)?;
    }
    if let Some(v) = args.clip_norm {
        c.clip_norm = Some(v);
    }
    if let Some(v) = args.em_steps {
        c.block.em_steps = v;
    }
    if let Some(v) = &args.em_blocks {
        c.block.blocks = v.split(',').map(|b| b.split('/').map(|g| g.trim().to_string()).collect()).collect();
    }
    if let Some(v) = &args.hidden {
        c.model_options.hidden = v.split(',').map(|h| h.trim().parse().map_err(|_| format!("bad --hidden {v:?}"))).collect::<Result<_, _>>()?;
    }
    if let Some(v) = args.dropout {
        c.model_options.dropout = v;
    }
    if let Some(v) = args.eval_every {
        c.eval_every = v;
    }
    if let Some(v) = args.checkpoint_every {
        c.checkpoint_every = v;
    }
    if let Some(v) = &args.log_format {
        c.log_format = match v.as_str() {
            "jsonl" | "json" => super::log::LogFormat::Jsonl,
            "csv" => super::log::LogFormat::Csv,
            _ => return Err(format!("bad --log-format {v:?} (jsonl or csv)")),
        };
    }
    c.validate()?;
    Ok(c)
}

/// Runs `chi train`.
pub fn run_train(args: &TrainArgs, seed: u64, out: &Path) -> Result<(), String> {
    if args.list {
        println!("models:");
        for m in super::registry::MODELS {
            println!("  {:<12} {}", m.name, m.about);
        }
        println!("datasets:");
        for d in super::registry::DATASETS {
            println!("  {:<12} {}", d.name, d.about);
        }
        return Ok(());
    }
    let mut cfg = resolve_config(args, seed)?;
    if args.resume {
        if let Some(latest) = checkpoint::latest_checkpoint(&out.join("checkpoints")) {
            let meta = checkpoint::read_checkpoint_meta(&latest)?;
            let mut saved: Config = serde_json::from_str(&meta.config).map_err(|e| format!("{}: bad config: {e}", latest.display()))?;
            if let Some(s) = args.steps {
                saved.steps = s;
            }
            eprintln!("resuming from {} (step {})", latest.display(), meta.step);
            cfg = saved;
        } else {
            eprintln!("no checkpoint in {}; starting fresh", out.join("checkpoints").display());
        }
    }
    let opts = TrainOptions { progress: !args.quiet, resume: args.resume, stop_after: None, plots: !args.no_plots };
    let s = train(&cfg, out, &opts)?;
    println!("trained {} on {} for {} steps (seed {}): test {}", cfg.model, cfg.dataset, s.step, cfg.seed, fmt_metrics(&s.test));
    println!("outputs in {} (checkpoint {})", out.display(), s.checkpoint.display());
    Ok(())
}

/// Runs `chi eval`.
pub fn run_eval(args: &EvalArgs, out: &Path) -> Result<(), String> {
    let path = match &args.checkpoint {
        Some(p) => p.clone(),
        None => checkpoint::latest_checkpoint(&out.join("checkpoints"))
            .ok_or_else(|| format!("no checkpoint in {}; pass --checkpoint", out.join("checkpoints").display()))?,
    };
    let (cfg, step, m) = evaluate_checkpoint(&path, &args.split)?;
    println!("{} on {} ({} split) at step {step}: {}", cfg.model, cfg.dataset, args.split, fmt_metrics(&m));
    println!("{}", serde_json::json!({ "checkpoint": path.display().to_string(), "step": step, "split": args.split, "metrics": m }));
    Ok(())
}
