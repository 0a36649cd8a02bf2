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
    /// Learning-rate schedule: constant | step:EVERY:GAMMA | exp:GAMMA | `cosine:TOTAL[:MIN]`,
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
    /// Resume the run in OUT from its latest checkpoint (its config is used; --steps may extend
    /// the run; any other flag that changes the config is an error).
    #[arg(long)]
    pub resume: bool,
    /// Start a new run even if OUT holds one: the old run is moved aside to `OUT.old-<time>`.
    #[arg(long, conflicts_with = "resume")]
    pub overwrite: bool,
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

/// One command-line flag that sets a configuration value: its name, the value as given, how
/// it changes a [`Config`], and how to show the value it sets.
struct Override {
    flag: &'static str,
    given: String,
    apply: Box<dyn Fn(&mut Config)>,
    show: fn(&Config) -> String,
}

/// `--hidden`: comma-separated positive sizes (e.g. `64,64`).
pub fn parse_hidden(v: &str) -> Result<Vec<usize>, String> {
    let sizes: Vec<usize> = v
        .split(',')
        .map(|h| h.trim().parse::<usize>().map_err(|_| format!("bad --hidden {v:?}: expected comma-separated positive sizes, e.g. 64,64")))
        .collect::<Result<_, _>>()?;
    if sizes.contains(&0) {
        return Err(format!("bad --hidden {v:?}: sizes must be at least 1"));
    }
    Ok(sizes)
}

/// `--em-blocks`: blocks separated by `,`, the groups of a block by `/` (e.g. `hidden/output,embedding`).
pub fn parse_em_blocks(v: &str) -> Result<Vec<Vec<String>>, String> {
    let blocks: Vec<Vec<String>> = v.split(',').map(|b| b.split('/').map(|g| g.trim().to_string()).collect()).collect();
    if blocks.iter().flatten().any(|g| g.is_empty()) {
        return Err(format!("bad --em-blocks {v:?}: empty group name (blocks are separated by ',', groups by '/')"));
    }
    Ok(blocks)
}

/// `--log-format`: `jsonl` (or `json`) or `csv`.
pub fn parse_log_format(v: &str) -> Result<super::log::LogFormat, String> {
    match v {
        "jsonl" | "json" => Ok(super::log::LogFormat::Jsonl),
        "csv" => Ok(super::log::LogFormat::Csv),
        _ => Err(format!("bad --log-format {v:?} (jsonl or csv)")),
    }
}

/// The configuration flags given on the command line (all but `--config`, `--steps` and the
/// run-time switches), parsed.
fn overrides(args: &TrainArgs) -> Result<Vec<Override>, String> {
    let mut o: Vec<Override> = Vec::new();
    macro_rules! flag {
        ($name:literal, $val:expr, $given:expr, |$c:ident, $v:ident| $apply:expr, |$s:ident| $show:expr) => {
            if let Some($v) = $val {
                o.push(Override {
                    flag: $name,
                    given: $given,
                    apply: Box::new(move |$c: &mut Config| $apply),
                    show: |$s: &Config| $show,
                });
            }
        };
    }
    flag!("--model", args.model.clone(), args.model.clone().unwrap_or_default(), |c, v| c.model = v.clone(), |c| c.model.clone());
    flag!("--dataset", args.dataset.clone(), args.dataset.clone().unwrap_or_default(), |c, v| c.dataset = v.clone(), |c| c.dataset.clone());
    flag!("--batch-size", args.batch_size, format!("{:?}", args.batch_size.unwrap_or_default()), |c, v| c.batch_size = v, |c| c.batch_size.to_string());
    flag!("--optim", args.optim, args.optim.map(|k| format!("{k:?}")).unwrap_or_default(), |c, v| c.optim.name = v, |c| format!("{:?}", c.optim.name));
    flag!("--lr", args.lr, args.lr.unwrap_or_default().to_string(), |c, v| c.optim.lr = v, |c| c.optim.lr.to_string());
    flag!("--momentum", args.momentum, args.momentum.unwrap_or_default().to_string(), |c, v| c.optim.momentum = v, |c| c.optim.momentum.to_string());
    flag!("--weight-decay", args.weight_decay, args.weight_decay.unwrap_or_default().to_string(), |c, v| c.optim.weight_decay = Some(v), |c| format!("{:?}", c.optim.weight_decay));
    let schedule = args.schedule.as_deref().map(chi_nn::schedule::LrSchedule::parse).transpose().map_err(String::from)?;
    flag!("--schedule", schedule, args.schedule.clone().unwrap_or_default(), |c, v| c.schedule = v.clone(), |c| format!("{:?}", c.schedule));
    flag!("--clip-norm", args.clip_norm, args.clip_norm.unwrap_or_default().to_string(), |c, v| c.clip_norm = Some(v), |c| format!("{:?}", c.clip_norm));
    flag!("--em-steps", args.em_steps, args.em_steps.unwrap_or_default().to_string(), |c, v| c.block.em_steps = v, |c| c.block.em_steps.to_string());
    let blocks = args.em_blocks.as_deref().map(parse_em_blocks).transpose()?;
    flag!("--em-blocks", blocks, args.em_blocks.clone().unwrap_or_default(), |c, v| c.block.blocks = v.clone(), |c| format!("{:?}", c.block.blocks));
    let hidden = args.hidden.as_deref().map(parse_hidden).transpose()?;
    flag!("--hidden", hidden, args.hidden.clone().unwrap_or_default(), |c, v| c.model_options.hidden = v.clone(), |c| format!("{:?}", c.model_options.hidden));
    flag!("--dropout", args.dropout, args.dropout.unwrap_or_default().to_string(), |c, v| c.model_options.dropout = v, |c| c.model_options.dropout.to_string());
    flag!("--eval-every", args.eval_every, args.eval_every.unwrap_or_default().to_string(), |c, v| c.eval_every = v, |c| c.eval_every.to_string());
    flag!("--checkpoint-every", args.checkpoint_every, args.checkpoint_every.unwrap_or_default().to_string(), |c, v| c.checkpoint_every = v, |c| c.checkpoint_every.to_string());
    let format = args.log_format.as_deref().map(parse_log_format).transpose()?;
    flag!("--log-format", format, args.log_format.clone().unwrap_or_default(), |c, v| c.log_format = v, |c| c.log_format.ext().to_string());
    Ok(o)
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
    if let Some(v) = args.steps {
        c.steps = v;
    }
    for o in overrides(args)? {
        (o.apply)(&mut c);
    }
    c.validate()?;
    Ok(c)
}

/// The configuration of a resumed run: the directory's (see [`super::rundir::resume_point`]),
/// with `--steps` applied. Any other flag, `--config` file or non-zero `--seed` that would
/// change it is an error naming the flag and both values.
pub fn resume_config(args: &TrainArgs, seed: u64, out: &Path) -> Result<(Config, Option<u64>), String> {
    let point = super::rundir::resume_point(out)?;
    let base = point.config;
    let whence = point.checkpoint.as_ref().map_or_else(|| out.join("config.toml"), |c| c.0.clone());
    let conflict = |flag: &str, given: &str, theirs: &str| {
        Err(format!(
            "{flag} {given} conflicts with the resumed run's value {theirs} (from {}); drop the flag to resume, or start a new run (another --out, or --overwrite)",
            whence.display()
        ))
    };
    if seed != 0 && seed != base.seed {
        return conflict("--seed", &seed.to_string(), &base.seed.to_string());
    }
    if let Some(p) = &args.config {
        let file = Config::load(p)?;
        let same = |a: &Config, b: &Config| Config { steps: 0, seed: 0, ..a.clone() } == Config { steps: 0, seed: 0, ..b.clone() };
        if !same(&file, &base) {
            return Err(format!(
                "--config {} differs from the resumed run's configuration (from {}): {}; drop --config to resume",
                p.display(),
                whence.display(),
                super::config_diff(&base, &file)
            ));
        }
    }
    for o in overrides(args)? {
        let mut c = base.clone();
        (o.apply)(&mut c);
        if c != base {
            return conflict(o.flag, &o.given, &(o.show)(&base));
        }
    }
    let mut cfg = base;
    if let Some(s) = args.steps {
        cfg.steps = s;
    }
    cfg.validate()?;
    if let Some((path, step)) = &point.checkpoint {
        if *step > cfg.steps {
            return Err(format!("{}: the run is at step {step}, beyond --steps {}; pass --steps {step} or more", path.display(), cfg.steps));
        }
    }
    Ok((cfg, point.checkpoint.map(|c| c.1)))
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
    let cfg = if args.resume {
        let (cfg, step) = resume_config(args, seed, out)?;
        match step {
            Some(s) if super::rundir::is_finished(out, s, cfg.steps) => {
                println!(
                    "the run in {} already finished at step {s} of {}; nothing to do (pass --steps N with N > {s} to extend it)",
                    out.display(),
                    cfg.steps
                );
                return Ok(());
            }
            Some(s) => eprintln!("resuming the run in {} from step {s}", out.display()),
            None => eprintln!("resuming the run in {} from step 0 (it stopped before its first checkpoint) with its config.toml", out.display()),
        }
        cfg
    } else {
        resolve_config(args, seed)?
    };
    let opts = TrainOptions { progress: !args.quiet, resume: args.resume, stop_after: None, plots: !args.no_plots, overwrite: args.overwrite };
    let s = train(&cfg, out, &opts)?;
    println!("trained {} on {} for {} steps (seed {}): test {}", cfg.model, cfg.dataset, s.step, cfg.seed, fmt_metrics(&s.test));
    if let Some((k, v)) = s.test.iter().find(|(_, v)| !v.is_finite()) {
        return Err(format!("the test metric {k} is {v}: the run's outputs are in {} but its result is not a number", out.display()));
    }
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
    if let Some((k, v)) = m.iter().find(|(_, v)| !v.is_finite()) {
        return Err(format!("{}: the {} metric {k} is {v}, not a number", path.display(), args.split));
    }
    Ok(())
}
