//! Command-line arguments of `chi train` and `chi eval`, and their run functions.

use super::{fmt_metrics, train, Config, TrainOptions};
use chi_nn::checkpoint;
use chi_nn::optim::OptimKind;
use clap::Args;
use std::path::{Path, PathBuf};

/// `chi train`: train a registered model on a registered dataset.
#[derive(Args, Debug, Clone, Default)]
pub struct TrainArgs {
    /// TOML config file (flags override its values). Relative paths in it are read from the
    /// file's folder; those of flags from the working directory.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Model: mlp (tabular or images), cnn, ca-cnn (images), bow, ca-bsfe, text-cnn, han, rcnn, lstm,
    /// gru, ca-rnn (text and token sequences), seq2seq (sentence pairs: translation); see --list.
    /// Default: mlp, or bow for texts.
    #[arg(long)]
    pub model: Option<String>,
    /// Built-in dataset: fashion-mnist, mnist (fetched), spirals, xor-noise, surface, first-token
    /// (synthetic); `file` reads `[data] path`. See --list; --data takes a name or your own file.
    #[arg(long, conflicts_with = "data")]
    pub dataset: Option<String>,
    /// Your data: a file or folder (CSV/TSV, a folder of class folders of text files, token
    /// lines, .npy, IDX) or a registered dataset's name (fashion-mnist, mnist, spirals, …).
    #[arg(long)]
    pub data: Option<String>,
    /// Target column of a CSV/TSV (default: a column named label, target, class or y), or the
    /// label file of .npy / IDX inputs; with --model seq2seq, the target-language column or the
    /// aligned target file.
    #[arg(long)]
    pub target: Option<String>,
    /// Feature columns of a CSV/TSV, comma-separated; a name holding a comma in double quotes,
    /// as in the header: `--features 'a,"x,y"'` (default: all but the target).
    #[arg(long)]
    pub features: Option<String>,
    /// Text column of a CSV/TSV (text classification; detected when there is one text column);
    /// with --model seq2seq, the source-language column.
    #[arg(long)]
    pub text_column: Option<String>,
    /// Task: classification or regression (default: decided from the target's values).
    #[arg(long)]
    pub task: Option<String>,
    /// File format: csv, tsv, folder, lines, npy, idx (default: from the path).
    #[arg(long)]
    pub format: Option<String>,
    /// Whether line 1 of a CSV/TSV names the columns: yes or no (default: detected; a line of
    /// numbers only is read as data).
    #[arg(long, value_parser = parse_yes_no, value_name = "yes|no")]
    pub header: Option<bool>,
    /// Train,validation,test fractions of one file (default 0.8,0.1,0.1), seeded and stratified.
    #[arg(long)]
    pub split: Option<String>,
    /// Validation file (instead of a share of --data).
    #[arg(long)]
    pub valid: Option<String>,
    /// Test file (instead of a share of --data).
    #[arg(long)]
    pub test: Option<String>,
    /// Text: most vocabulary entries (default 20000; 0 = no limit).
    #[arg(long)]
    pub max_vocab: Option<usize>,
    /// Text: fewest occurrences of a vocabulary entry (default 1).
    #[arg(long)]
    pub min_count: Option<usize>,
    /// Text: most tokens kept per text (default 400; 5000 for the averaging models bow and
    /// ca-bsfe, whose cost grows with the tokens but has no padding).
    #[arg(long)]
    pub max_len: Option<usize>,
    /// Text models: embedding size.
    #[arg(long)]
    pub embed: Option<usize>,
    /// Text models: pretrained word vectors (GloVe .txt, or .npy with words.txt beside it).
    #[arg(long)]
    pub pretrained: Option<String>,
    /// Recurrent and RCNN models: read each text in both directions.
    #[arg(long)]
    pub bidirectional: bool,
    /// Any model option, KEY=VALUE (VALUE as JSON, else as text), e.g. `channels=[16,32]`.
    #[arg(long = "model-option", value_name = "KEY=VALUE")]
    pub model_option: Vec<String>,
    /// Training steps.
    #[arg(long)]
    pub steps: Option<u64>,
    /// Mini-batch size.
    #[arg(long)]
    pub batch_size: Option<usize>,
    /// Optimiser: sgd, adagrad, rmsprop, adam, adamw (default adagrad with --lr 0.1; ca-rnn:
    /// adagrad with --lr 0.01, see --list). Named without --lr, it gets its own rate: adam and
    /// adamw 0.001, sgd and rmsprop 0.01, adagrad 0.1 (ca-rnn 0.01).
    #[arg(long)]
    pub optim: Option<OptimKind>,
    /// Learning rate (default: the optimiser's, see --optim).
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
    /// Under `mpirun -n K`: local SGD — each process steps on its own shard and the parameters
    /// are averaged every this many steps (default: gradients averaged every step).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub local_sgd: Option<u64>,
    /// Under `mpirun -n K`: gradients travel in buckets of about this many KiB (default 1024).
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=(1 << 20)))]
    pub bucket_kib: Option<usize>,
    /// Under `mpirun -n K`: exchange gradients after backward instead of during it.
    #[arg(long)]
    pub no_overlap: bool,
}

/// `chi eval`: a trained model's metrics on a split of its dataset or on a labelled file.
#[derive(Args, Debug, Clone, Default)]
pub struct EvalArgs {
    /// The trained model: a run directory, a checkpoint or a `model.safetensors` (default: the
    /// run in --out).
    pub model: Option<PathBuf>,
    /// Checkpoint file (the same as giving it as MODEL).
    #[arg(long, conflicts_with = "model")]
    pub checkpoint: Option<PathBuf>,
    /// Split of the run's own dataset: test, valid or train.
    #[arg(long, default_value = "test")]
    pub split: String,
    /// A labelled file or folder to evaluate on instead, read as the training data was.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Label file of array inputs (.npy, IDX) given with --data.
    #[arg(long)]
    pub target: Option<PathBuf>,
    /// Where to write report.json, confusion.csv and the confusion heat maps (default: RUN/eval-SPLIT
    /// for a split, RUN/eval-file-STEM for --data STEM.csv, RUN/eval-file-STEM-2, … for another
    /// file of the same stem, each with -step-N appended for a checkpoint of step N; without a
    /// run directory, no files).
    #[arg(long)]
    pub report: Option<PathBuf>,
}

/// `chi predict`: predictions of a trained model for new, unlabelled inputs.
#[derive(Args, Debug, Clone, Default)]
pub struct PredictArgs {
    /// The trained model: a run directory, a checkpoint or a `model.safetensors`.
    pub model: PathBuf,
    /// The inputs: CSV rows (without or with the target column), a text file (one text per
    /// line), a folder of text files, token lines, or an array file — of the training data's kind;
    /// `-` reads standard input.
    #[arg(long)]
    pub input: PathBuf,
    /// Write the CSV here (default: standard output).
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Text models: add the K words with the largest |∂score/∂embedding| to each row.
    #[arg(long, default_value_t = 0, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=1000))]
    pub saliency: usize,
    /// How --saliency ranks words: saliency (|∂score/∂embedding|) or grad-times-input
    /// (embedding · ∂score/∂embedding, the word's signed contribution).
    /// (default saliency).
    #[arg(long, value_enum)]
    pub attribution: Option<super::infer::Attribution>,
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

/// `--split`: three comma-separated fractions that add up to 1 (e.g. `0.8,0.1,0.1`).
pub fn parse_split(v: &str) -> Result<Vec<f64>, String> {
    let f: Vec<f64> = v
        .split(',')
        .map(|x| x.trim().parse::<f64>().map_err(|_| format!("bad --split {v:?}: expected three fractions train,valid,test, e.g. 0.8,0.1,0.1")))
        .collect::<Result<_, _>>()?;
    if f.len() != 3 || f.iter().any(|x| !x.is_finite() || *x < 0.0) || f[0] <= 0.0 || (f.iter().sum::<f64>() - 1.0).abs() > 1e-6 {
        return Err(format!("bad --split {v:?}: three fractions >= 0 (training > 0) that add up to 1, e.g. 0.8,0.1,0.1"));
    }
    Ok(f)
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
    // A registered name picks that dataset; anything else is the user's file or folder.
    let data = args.data.clone().map(|d| match super::registry::dataset_entry(&d) {
        Ok(e) if e.name != super::registry::FILE_DATASET => (d, None),
        _ => (super::registry::FILE_DATASET.to_string(), Some(d)),
    });
    flag!("--data", data, args.data.clone().unwrap_or_default(), |c, v| { c.dataset = v.0.clone(); c.data.path = v.1.clone(); }, |c| c.data.path.clone().unwrap_or_else(|| c.dataset.clone()));
    flag!("--target", args.target.clone(), args.target.clone().unwrap_or_default(), |c, v| c.data.target = Some(v.clone()), |c| format!("{:?}", c.data.target));
    let features = args.features.as_deref().map(split_feature_list);
    flag!("--features", features, args.features.clone().unwrap_or_default(), |c, v| c.data.features = Some(v.clone()), |c| format!("{:?}", c.data.features));
    flag!("--text-column", args.text_column.clone(), args.text_column.clone().unwrap_or_default(), |c, v| c.data.text_column = Some(v.clone()), |c| format!("{:?}", c.data.text_column));
    if let Some(t) = args.task.as_deref() {
        if !matches!(t, "classification" | "regression") {
            return Err(format!("bad --task {t:?} (classification or regression)"));
        }
    }
    flag!("--task", args.task.clone(), args.task.clone().unwrap_or_default(), |c, v| c.data.task = Some(v.clone()), |c| format!("{:?}", c.data.task));
    if let Some(f) = args.format.as_deref() {
        chi_nn::userdata::Format::parse(f).map_err(|e| format!("bad --format: {e}"))?;
    }
    flag!("--header", args.header, if args.header == Some(true) { "yes" } else { "no" }.to_string(), |c, v| c.data.header = Some(v), |c| format!("{:?}", c.data.header));
    flag!("--format", args.format.clone(), args.format.clone().unwrap_or_default(), |c, v| c.data.format = Some(v.clone()), |c| format!("{:?}", c.data.format));
    let split = args.split.as_deref().map(parse_split).transpose()?;
    flag!("--split", split, args.split.clone().unwrap_or_default(), |c, v| c.data.split = Some(v.clone()), |c| format!("{:?}", c.data.split));
    flag!("--valid", args.valid.clone(), args.valid.clone().unwrap_or_default(), |c, v| c.data.valid_path = Some(v.clone()), |c| format!("{:?}", c.data.valid_path));
    flag!("--test", args.test.clone(), args.test.clone().unwrap_or_default(), |c, v| c.data.test_path = Some(v.clone()), |c| format!("{:?}", c.data.test_path));
    flag!("--max-vocab", args.max_vocab, args.max_vocab.unwrap_or_default().to_string(), |c, v| c.data.max_vocab = Some(v), |c| format!("{:?}", c.data.max_vocab));
    flag!("--min-count", args.min_count, args.min_count.unwrap_or_default().to_string(), |c, v| c.data.min_count = Some(v), |c| format!("{:?}", c.data.min_count));
    flag!("--max-len", args.max_len, args.max_len.unwrap_or_default().to_string(), |c, v| c.data.max_len = Some(v), |c| format!("{:?}", c.data.max_len));
    let mut opts: Vec<(String, serde_json::Value)> = Vec::new();
    if let Some(e) = args.embed {
        opts.push(("embed".into(), e.into()));
    }
    if let Some(p) = &args.pretrained {
        opts.push(("pretrained".into(), p.clone().into()));
    }
    if args.bidirectional {
        opts.push(("bidirectional".into(), true.into()));
    }
    for kv in &args.model_option {
        let (k, v) = kv.split_once('=').ok_or_else(|| format!("bad --model-option {kv:?}: expected KEY=VALUE"))?;
        let v = serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.to_string()));
        opts.push((k.trim().to_string(), v));
    }
    for (k, v) in opts {
        let key = k.clone();
        flag!("--model-option", Some(v.clone()), format!("{k}={v}"), |c, v| { c.model_options.options.insert(key.clone(), v.clone()); }, |c| serde_json::Value::Object(c.model_options.options.clone()).to_string());
    }
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
        Some(p) => paths_from_config_folder(Config::load(p)?, p),
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
    let source = if args.features.is_some() { "--features" } else { "[data] features" };
    check_features(c.data.features.as_deref(), source)?;
    let file_keys: Option<toml::Table> = match &args.config {
        Some(p) => super::rundir::read_config_text(p)?.parse::<toml::Table>().ok(),
        None => None,
    };
    let in_file = |key: &str| file_keys.as_ref().is_some_and(|t| t.contains_key(key));
    // Without a model named, texts get a text model (the bag of words, the quickest to train);
    // tables and arrays keep the multi-layer perceptron.
    if args.model.is_none() && !in_file("model") && c.dataset == super::registry::FILE_DATASET {
        if chi_nn::userdata::input_kind(&c.data).map_err(|e| e.to_string())? == chi_nn::userdata::DataKind::Text {
            c.model = DEFAULT_TEXT_MODEL.into();
        }
    }
    // The averaging models read (nearly) whole texts unless told otherwise: the default cut at 400
    // tokens, there for the sequence models' time and padding, dropped the end of most movie
    // reviews (where the verdict usually is) and cost a bag of words 9 points of accuracy.
    if c.data.max_len.is_none() && c.dataset == super::registry::FILE_DATASET && AVERAGING_TEXT_MODELS.contains(&c.model.as_str()) {
        c.data.max_len = Some(AVERAGING_MAX_LEN);
    }
    // A model's own default optimiser, unless the flags or the config file choose one.
    let optim_in_file = in_file("optim");
    if args.optim.is_none() && args.lr.is_none() && !optim_in_file {
        // Only the rule and the rate: --momentum or --weight-decay given with it still apply.
        if let Some(o) = super::registry::model_entry(&c.model).ok().and_then(|e| e.optim) {
            c.optim.name = o.name;
            c.optim.lr = o.lr;
        }
    }
    // An optimiser chosen without a rate (by --optim, or by a config file's [optim] name without
    // lr) gets a rate that suits it: the model's own if the model defaults to that optimiser,
    // else the optimiser's usual one. Adagrad's 0.1 kept for Adam made training diverge.
    let optim_key = |key: &str| file_keys.as_ref().and_then(|t| t.get("optim")).and_then(|o| o.as_table()).is_some_and(|o| o.contains_key(key));
    if args.lr.is_none() && !optim_key("lr") && (args.optim.is_some() || optim_key("name")) {
        let model_optim = super::registry::model_entry(&c.model).ok().and_then(|e| e.optim).filter(|o| o.name == c.optim.name);
        c.optim.lr = model_optim.map_or(c.optim.name.default_lr(), |o| o.lr);
        if args.optim.is_some() {
            eprintln!("note: --optim {} without --lr: learning rate {}, its default (--lr sets another)", format!("{:?}", c.optim.name).to_lowercase(), super::fmt_rate(c.optim.lr));
        }
    }
    c.validate()?;
    Ok(c)
}

/// Text models that average their word vectors, whose default `--max-len` is [`AVERAGING_MAX_LEN`].
pub const AVERAGING_TEXT_MODELS: &[&str] = &["bow", "ca-bsfe"];

/// The default `--max-len` of the [`AVERAGING_TEXT_MODELS`] (the others keep the tokenizer's 400):
/// longer than nearly every review or e-mail, and a batch of 32 such texts holds 160,000 word
/// vectors (41 MB at 64 numbers each), so a stray huge file cannot exhaust memory.
pub const AVERAGING_MAX_LEN: usize = 5000;

/// The model `chi train --data` uses on texts when no model is named.
pub const DEFAULT_TEXT_MODEL: &str = "bow";

/// The column names of `--features a,b,"x,y"`: split at commas outside double quotes (a
/// column whose name holds a comma is quoted, as in the CSV header), trimmed, quotes removed
/// (`""` inside quotes is one `"`).
pub fn split_feature_list(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut chars) = (false, list.chars().peekable());
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur).trim().to_string()),
            c => cur.push(c),
        }
    }
    out.push(cur.trim().to_string());
    out
}

/// The feature columns of a new run name each column once and no empty name: a duplicate would
/// encode the column twice, an empty name (`a,,b`) selects nothing the user meant. `source`
/// names where the list came from, for the message.
pub fn check_features(features: Option<&[String]>, source: &str) -> Result<(), String> {
    let Some(list) = features else { return Ok(()) };
    if list.is_empty() || list.iter().any(|f| f.is_empty()) {
        return Err(format!("{source} has an empty column name ({:?}); name each feature column, separated by commas", list.join(",")));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = list.iter().find(|f| !seen.insert(f.as_str())) {
        return Err(format!("{source} names the column {dup:?} more than once; name each feature column once"));
    }
    Ok(())
}

/// Lays the keys of `top` over `base`, table by table (a table whose `kind` differs, a
/// schedule of another kind, replaces the other whole).
fn lay_over(base: &mut serde_json::Value, top: &serde_json::Value) {
    match (base, top) {
        (serde_json::Value::Object(b), serde_json::Value::Object(t)) if t.get("kind").is_none() || t.get("kind") == b.get("kind") => {
            for (k, v) in t {
                match b.get_mut(k) {
                    Some(slot) => lay_over(slot, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, t) => *b = t.clone(),
    }
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
    let mut file_steps = None;
    if let Some(p) = &args.config {
        // The file is checked as any config (unknown keys, types, ranges name the file), then
        // compared on the keys it names only: a config needs only what differs from the defaults,
        // and one that says `steps = 60` asks for nothing but more steps. Its keys are laid over
        // the run's configuration; paths compare as the run stored them (absolute, see
        // `absolute_paths`).
        let text = super::rundir::read_config_text(p)?;
        let own = paths_from_config_folder(Config::from_toml(&text).map_err(|e| format!("{}: {e}", p.display()))?, p);
        let raw: toml::Value = toml::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))?;
        let mut raw = serde_json::to_value(&raw).map_err(|e| format!("{}: {e}", p.display()))?;
        take_adjusted_paths(&mut raw, &serde_json::to_value(&own).map_err(|e| e.to_string())?);
        let mut merged = serde_json::to_value(&base).map_err(|e| e.to_string())?;
        lay_over(&mut merged, &raw);
        let file = absolute_paths(serde_json::from_value::<Config>(merged).map_err(|e| format!("{}: {e}", p.display()))?);
        if raw.get("steps").is_some() {
            file_steps = Some(file.steps);
        }
        if !file.same_run_as(&base) {
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
        // A relative `--data` (or `--test`, …) naming the run's file is the same file: the run
        // stored the absolute path, so the starting command repeated with `--resume` resumes.
        if absolute_paths(c) != base {
            return conflict(o.flag, &o.given, &(o.show)(&base));
        }
    }
    // The stored configuration first, so that its errors name the file they come from.
    base.validate().map_err(|e| format!("{}: bad run configuration: {e}", whence.display()))?;
    let mut cfg = base;
    if let Some(s) = args.steps.or(file_steps) {
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
        let r = super::registry::snapshot();
        println!("models (and the data each takes):");
        for m in &r.models {
            let fits: Vec<&str> = m.fits.iter().map(|k| k.name()).collect();
            let optim = m.optim.as_ref().map_or_else(String::new, |o| format!(" [default optimiser: {} lr {}]", format!("{:?}", o.name).to_lowercase(), o.lr));
            println!("  {:<10} {:<16} {}{optim}", m.name, fits.join(", "), m.about);
        }
        println!("  {:<10} {:<16} {}", "seq2seq", "sentence pairs", "attention encoder–decoder translating your pairs file (TSV/CSV, or --data SRC --target TGT); chi translate, eval (BLEU) and predict take the run");
        println!("datasets (--data NAME, or --data PATH for your own file or folder):");
        for d in &r.datasets {
            println!("  {:<14} {}", d.name, d.about);
        }
        return Ok(());
    }
    let opts = TrainOptions {
        progress: !args.quiet,
        resume: args.resume,
        stop_after: None,
        plots: !args.no_plots,
        overwrite: args.overwrite,
        local_sgd: args.local_sgd,
        bucket_bytes: args.bucket_kib.map(|k| k.saturating_mul(1024)),
        no_overlap: args.no_overlap,
    };
    // Several processes: rank 0 decides (and reads the run directory); the others follow.
    let comm = crate::dist::world().filter(|c| c.size() > 1);
    if let Some(c) = comm.as_ref().filter(|c| c.rank() != 0) {
        if super::distributed::follow_announcement(&**c)? {
            train(&Config::default(), out, &opts)?;
        }
        return Ok(());
    }
    let decided = decide_config(args, seed, out);
    if let Some(c) = &comm {
        super::distributed::announce(&**c, &decided.as_ref().map(|c| c.is_some()).map_err(|e| e.clone()));
    }
    let Some(cfg) = decided? else { return Ok(()) };
    let s = train(&cfg, out, &opts)?;
    let data = cfg.data.path.clone().unwrap_or_else(|| cfg.dataset.clone());
    println!("trained {} on {data} for {} steps (seed {}): test {}", cfg.model, s.step, cfg.seed, fmt_metrics(&s.test));
    if let Some((k, v)) = s.test.iter().find(|(k, v)| !v.is_finite() && !super::UNDEFINED_OK.contains(&k.as_str())) {
        return Err(format!("the test metric {k} is {v}: the run's outputs are in {} but its result is not a number", out.display()));
    }
    super::note_undefined(&s.test, "test and validation splits");
    println!("outputs in {} (checkpoint {})", out.display(), s.checkpoint.display());
    Ok(())
}

/// The configuration of `chi train`: from the flags, or from the run directory with
/// `--resume` (`None`: the run already finished, nothing to do).
fn decide_config(args: &TrainArgs, seed: u64, out: &Path) -> Result<Option<Config>, String> {
    if !args.resume {
        return resolve_config(args, seed).map(|c| Some(absolute_paths(c)));
    }
    let (cfg, step) = resume_config(args, seed, out)?;
    match step {
        Some(s) if super::rundir::is_finished(out, s, cfg.steps) => {
            println!(
                "the run in {} already finished at step {s} of {}; nothing to do (pass --steps N with N > {s} to extend it)",
                out.display(),
                cfg.steps
            );
            return Ok(None);
        }
        Some(s) => eprintln!("resuming the run in {} from step {s}", out.display()),
        None => eprintln!("resuming the run in {} from step 0 (it stopped before its first checkpoint) with its config.toml", out.display()),
    }
    Ok(Some(cfg))
}

/// Runs `chi eval`.
pub fn run_eval(args: &EvalArgs, out: &Path) -> Result<(), String> {
    use super::infer;
    let path = args.checkpoint.clone().or_else(|| args.model.clone()).unwrap_or_else(|| out.to_path_buf());
    if args.target.is_some() && args.data.is_none() {
        return Err("--target is the label file of --data; give --data too".into());
    }
    let t = infer::load_trained(&path, args.data.is_none())?;
    let (split, what, mut warnings) = match &args.data {
        Some(d) => {
            let schema = t.schema.as_ref().ok_or_else(|| {
                format!("the model was trained on the built-in dataset {:?}; --data needs a model trained on files (chi train --data PATH)", t.cfg.dataset)
            })?;
            let (input, stdin) = input_path(d)?;
            let (split, w) = schema.encode_labelled(&input, args.target.as_deref()).map_err(String::from)?;
            // `file-` keeps a file's report apart from a split's (`--data DIR/test.csv` would
            // otherwise write into the `--split test` report's directory).
            let stem = if stdin { "stdin".into() } else { d.file_stem().map_or("data".into(), |s| s.to_string_lossy().to_string()) };
            (split, if stdin { "standard input".into() } else { format!("file {}", d.display()) }, (w, format!("file-{stem}")))
        }
        None => {
            let s = match args.split.as_str() {
                "test" => t.dataset.test.clone(),
                "train" => t.dataset.train.clone(),
                "valid" => t.dataset.valid.clone().ok_or_else(|| format!("dataset {:?} has no validation split (test or train)", t.cfg.dataset))?,
                other => return Err(format!("unknown split {other:?} (test, valid or train)")),
            };
            (s, format!("{} split", args.split), (Vec::new(), args.split.clone()))
        }
    };
    for w in &warnings.0 {
        eprintln!("warning: {w}");
    }
    // The report's directory is checked before the evaluation, so a bad --report costs nothing.
    // A checkpoint's report goes beside the final model's, not over it: `eval-SPLIT-step-N`.
    if t.checkpoint && t.run_dir.is_some() {
        warnings.1 = format!("{}-step-{}", warnings.1, t.step);
    }
    let dir = match (&args.report, &t.run_dir, &args.data) {
        (Some(dir), _, _) => {
            let names = ["report.json", "confusion.csv", "confusion.svg", "confusion.png"];
            let ours = |d: &Path| super::rundir::json_with_keys(&d.join("report.json"), &["examples", "metrics", "classes", "confusion"]);
            super::rundir::check_output_dir("--report", dir, &t.cfg.data, args.data.as_deref(), &names, ours)?;
            Some(dir.clone())
        }
        (None, Some(run), Some(d)) => Some(file_report_dir(run, &warnings.1, d)?),
        (None, Some(run), None) => Some(run.join(format!("eval-{}", warnings.1))),
        (None, None, _) => None,
    };
    let r = infer::evaluate_report(&t, &split)?;
    let data = t.cfg.data.path.clone().unwrap_or_else(|| t.cfg.dataset.clone());
    println!("{} on {data} ({what}) at step {}: {}", t.cfg.model, t.step, fmt_metrics(&r.metrics));
    print!("{}", infer::report_text(&r));
    if let Some(dir) = dir {
        let title = format!("{} on {data} ({what}), step {}", t.cfg.model, t.step);
        // The run's own folder may be read-only: say where else the report can go.
        let files = infer::write_report(&dir, &title, &r).map_err(|e| if args.report.is_none() { format!("{e} (give --report DIR to write the report elsewhere)") } else { e })?;
        println!("wrote {}", files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", "));
    }
    if let Some((k, v)) = r.metrics.iter().find(|(k, v)| !v.is_finite() && !super::UNDEFINED_OK.contains(&k.as_str())) {
        return Err(format!("{}: the {what} metric {k} is {v}, not a number", t.weights.display()));
    }
    super::note_undefined(&r.metrics, &what);
    Ok(())
}

/// The file that names the data file a `RUN/eval-file-STEM*` report was made from.
const REPORT_SOURCE: &str = "source.txt";

/// The report directory in `run` for `chi eval --data FILE`: `eval-NAME` (NAME = `file-STEM`)
/// when it is new or holds the report of the same file, else the first of `eval-NAME-2`,
/// `eval-NAME-3`, … that is. Files of one stem in different folders thus keep their own reports
/// instead of replacing each other's; a directory made before its source was recorded is left
/// alone. The directory is created and its source recorded before it is returned.
pub(crate) fn file_report_dir(run: &Path, name: &str, data: &Path) -> Result<PathBuf, String> {
    // The same file however it is named on the command line (relative, through a link);
    // standard input is its own source.
    let source = std::fs::canonicalize(data).unwrap_or_else(|_| data.to_path_buf()).display().to_string();
    for i in 1..=1000 {
        let dir = run.join(if i == 1 { format!("eval-{name}") } else { format!("eval-{name}-{i}") });
        let recorded = dir.join(REPORT_SOURCE);
        if dir.exists() {
            match std::fs::read_to_string(&recorded) {
                Ok(s) if s.trim_end_matches('\n') == source => return Ok(dir),
                _ => continue,
            }
        }
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
        checkpoint::atomic_write(&recorded, format!("{source}\n").as_bytes())?;
        return Ok(dir);
    }
    Err(format!("{}: 1000 report directories eval-{name}* already hold other files' reports; give --report DIR", run.display()))
}

/// Runs `chi predict`.
pub fn run_predict(args: &PredictArgs) -> Result<(), String> {
    use super::infer;
    if let Some(o) = &args.output {
        // Replacing the inputs by their predictions would lose them.
        if super::rundir::lies_within(o, &args.input) {
            return Err(format!("--output {} is the input file or inside the input folder; write the predictions elsewhere", o.display()));
        }
    }
    let t = infer::load_trained(&args.model, false)?;
    if let Some(o) = &args.output {
        if is_run_file(o, &t.weights, t.run_dir.as_deref()) {
            return Err(format!("--output {} is a file of the model's run; write the predictions elsewhere", o.display()));
        }
        // The model's training, validation and test data (a CSV, a file in a text folder, a
        // label file) are the user's too.
        for (role, d) in super::files::data_sources(&t.cfg.data) {
            if super::rundir::lies_within(o, std::path::Path::new(&d)) {
                let what = if role == "data" { "training data".to_string() } else { format!("{role} data") };
                return Err(format!("--output {} is the model's {what} ({d}); write the predictions elsewhere", o.display()));
            }
        }
        super::rundir::check_text_output("--output", o)?;
    }
    if args.attribution.is_some() && args.saliency == 0 {
        return Err("--attribution chooses how --saliency ranks words; give --saliency K too".into());
    }
    let (input, stdin) = input_path(&args.input)?;
    let mut p = infer::predict(&t, &input, args.saliency, args.attribution.unwrap_or(infer::Attribution::Saliency))?;
    if stdin {
        // Rows read from standard input are named `stdin:LINE`, not after the device file.
        let dev = input.display().to_string();
        for id in &mut p.ids {
            if let Some(rest) = id.strip_prefix(&dev) {
                *id = format!("stdin{rest}");
            }
        }
    }
    for w in &p.warnings {
        eprintln!("warning: {w}");
    }
    let csv = infer::predictions_csv(&t, &p);
    match &args.output {
        Some(o) => {
            checkpoint::atomic_write(o, csv.as_bytes())?;
            eprintln!("wrote {} predictions to {}", p.ids.len(), o.display());
        }
        None => print!("{csv}"),
    }
    Ok(())
}

/// The file to read `--input PATH` from, and whether it is standard input: `-` names standard
/// input, read through `/dev/stdin` so that it is read exactly like a file (a pipe has no
/// name, so its format is the training data's).
pub fn input_path(p: &Path) -> Result<(PathBuf, bool), String> {
    if p != Path::new("-") {
        return Ok((p.to_path_buf(), false));
    }
    let dev = Path::new("/dev/stdin");
    if cfg!(unix) && dev.exists() {
        Ok((dev.to_path_buf(), true))
    } else {
        Err("--input -: standard input cannot be read as a file on this system; save the inputs to a file and give its path".into())
    }
}

/// Whether `out` would replace a file the model's run needs: its weights, or one of the run's
/// own files ([`super::rundir::run_of`]: config, logs, `data.json`, checkpoints). Other files,
/// such as predictions written into the run directory, may be.
fn is_run_file(out: &Path, weights: &Path, run_dir: Option<&Path>) -> bool {
    super::rundir::same_file(out, weights) || run_dir.zip(super::rundir::run_of(out)).is_some_and(|(d, r)| super::rundir::same_file(d, &r))
}

/// A run's configuration is read again later (by `eval`, `predict`, `explain`, `--resume`) from
/// wherever the user then stands, so the files it names relative to the current directory are
/// stored as absolute paths. Names that are not existing files (column names in `target`) and
/// paths that are not valid UTF-8 are kept as written.
fn absolute_paths(mut cfg: Config) -> Config {
    for_each_path(&mut cfg, |s| {
        let p = Path::new(s.as_str());
        if p.is_relative() && p.exists() {
            if let Some(a) = std::path::absolute(p).ok().and_then(|a| a.to_str().map(str::to_string)) {
                *s = a;
            }
        }
    });
    cfg
}

/// `cfg`, read from the config file `file`, with its relative paths taken from the file's
/// folder (as Cargo reads paths in `Cargo.toml`): a config keeps working from any working
/// directory and beside the data it names. Paths given by flags stay relative to the working
/// directory.
fn paths_from_config_folder(mut cfg: Config, file: &Path) -> Config {
    let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) else { return cfg };
    let rebase = |s: &mut String| {
        if Path::new(s.as_str()).is_relative() {
            if let Some(j) = dir.join(s.as_str()).to_str() {
                *s = j.to_string();
            }
        }
    };
    let d = &mut cfg.data;
    for s in [&mut d.path, &mut d.valid_path, &mut d.test_path].into_iter().flatten() {
        rebase(s);
    }
    // A target is a column name unless it names a label file (arrays); the data may come from
    // a flag, so only a file that exists beside the config is taken as one.
    for s in [&mut d.target, &mut d.valid_target, &mut d.test_target].into_iter().flatten() {
        if Path::new(s.as_str()).is_relative() && dir.join(s.as_str()).is_file() {
            rebase(s);
        }
    }
    if let Some(serde_json::Value::String(s)) = cfg.model_options.options.get_mut("pretrained") {
        rebase(s);
    }
    cfg
}

/// Calls `f` on every file path of `cfg`: the data, validation and test files, the label
/// files of arrays, and a model's `pretrained` vectors.
fn for_each_path(cfg: &mut Config, mut f: impl FnMut(&mut String)) {
    let d = &mut cfg.data;
    // For tables and texts `target` is a column; for arrays it is the label file.
    let table = d.format.as_deref().is_some_and(|f| matches!(f, "csv" | "tsv" | "folder" | "lines"))
        || d.path.as_deref().is_some_and(|p| {
            let l = p.to_ascii_lowercase();
            [".csv", ".tsv", ".txt"].iter().any(|e| l.ends_with(e)) || Path::new(p).is_dir()
        });
    let targets = [&mut d.target, &mut d.valid_target, &mut d.test_target].into_iter().filter(|_| !table);
    for s in [&mut d.path, &mut d.valid_path, &mut d.test_path].into_iter().chain(targets).flatten() {
        f(s);
    }
    if let Some(serde_json::Value::String(s)) = cfg.model_options.options.get_mut("pretrained") {
        f(s);
    }
}

/// The string leaves of `raw` (a config file's own keys) replaced by those of `adjusted` (the
/// same file with its paths resolved) where they differ.
fn take_adjusted_paths(raw: &mut serde_json::Value, adjusted: &serde_json::Value) {
    if let (Some(r), Some(a)) = (raw.as_object_mut(), adjusted.as_object()) {
        for (k, v) in r.iter_mut() {
            match (v, a.get(k)) {
                (v @ serde_json::Value::Object(_), Some(av)) => take_adjusted_paths(v, av),
                (v @ serde_json::Value::String(_), Some(av @ serde_json::Value::String(_))) => *v = av.clone(),
                _ => {}
            }
        }
    }
}

/// `yes`/`no` (also `true`/`false`) for a flag that overrides a detected yes-or-no.
fn parse_yes_no(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "yes" | "true" => Ok(true),
        "no" | "false" => Ok(false),
        _ => Err(format!("{s:?} is neither yes nor no")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(model: &str) -> TrainArgs {
        TrainArgs { model: Some(model.into()), ..TrainArgs::default() }
    }

    /// `--model ca-rnn` takes its own optimiser unless `--optim`, `--lr` or a config file's
    /// `[optim]` chooses one; other flags of the optimiser still apply; other models keep the
    /// general default.
    #[test]
    fn a_model_default_optimiser_applies_only_when_none_is_chosen() {
        let ca = resolve_config(&args("ca-rnn"), 0).unwrap().optim;
        assert_eq!((ca.name, ca.lr), (OptimKind::Adagrad, 0.01));
        let gru = resolve_config(&args("gru"), 0).unwrap().optim;
        assert_eq!((gru.name, gru.lr), (OptimKind::Adagrad, 0.1));
        let lr = resolve_config(&TrainArgs { lr: Some(0.05), ..args("ca-rnn") }, 0).unwrap().optim;
        assert_eq!((lr.name, lr.lr), (OptimKind::Adagrad, 0.05));
        let adam = resolve_config(&TrainArgs { optim: Some(OptimKind::Adam), ..args("ca-rnn") }, 0).unwrap().optim;
        assert_eq!((adam.name, adam.lr), (OptimKind::Adam, 1e-3));
        // An optimiser named without a rate gets its own rate; the model's if it is the model's.
        let named = |m: &str, o: OptimKind| resolve_config(&TrainArgs { optim: Some(o), ..args(m) }, 0).unwrap().optim.lr;
        assert_eq!((named("mlp", OptimKind::Adamw), named("mlp", OptimKind::Sgd), named("mlp", OptimKind::Rmsprop)), (1e-3, 1e-2, 1e-2));
        assert_eq!((named("mlp", OptimKind::Adagrad), named("ca-rnn", OptimKind::Adagrad)), (0.1, 0.01));
        let both = resolve_config(&TrainArgs { optim: Some(OptimKind::Adam), lr: Some(0.2), ..args("mlp") }, 0).unwrap().optim;
        assert_eq!((both.name, both.lr), (OptimKind::Adam, 0.2));
        let wd = resolve_config(&TrainArgs { weight_decay: Some(0.001), ..args("ca-rnn") }, 0).unwrap().optim;
        assert_eq!((wd.lr, wd.weight_decay), (0.01, Some(0.001)));
        let dir = std::env::temp_dir().join(format!("chi-cli-optim-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (with, without) = (dir.join("with.toml"), dir.join("without.toml"));
        std::fs::write(&with, "model = \"ca-rnn\"\n[optim]\nname = \"adagrad\"\nlr = 0.1\n").unwrap();
        std::fs::write(&without, "model = \"ca-rnn\"\nsteps = 7\n").unwrap();
        let adam_file = dir.join("adam.toml");
        std::fs::write(&adam_file, "model = \"mlp\"\n[optim]\nname = \"adam\"\n").unwrap();
        let from = |p: &Path| resolve_config(&TrainArgs { config: Some(p.to_path_buf()), ..TrainArgs::default() }, 0).unwrap().optim.lr;
        assert_eq!((from(&with), from(&without), from(&adam_file)), (0.1, 0.01, 1e-3));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The averaging text models read up to 5000 tokens of a file's texts unless told otherwise;
    /// the sequence models keep the tokenizer's 400; built-in datasets read no file and get none.
    #[test]
    fn averaging_text_models_read_longer_texts_by_default() {
        assert_eq!(resolve_config(&TrainArgs { dataset: Some("first-token".into()), ..args("bow") }, 0).unwrap().data.max_len, None);
        let file = Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/data/reviews").display().to_string());
        let max_len = |m: &str, l: Option<usize>| resolve_config(&TrainArgs { max_len: l, data: file.clone(), ..args(m) }, 0).unwrap().data.max_len;
        assert_eq!((max_len("bow", None), max_len("ca-bsfe", None)), (Some(AVERAGING_MAX_LEN), Some(AVERAGING_MAX_LEN)));
        assert_eq!((max_len("bow", Some(300)), max_len("lstm", None), max_len("text-cnn", None)), (Some(300), None, None));
        assert_eq!(chi_nn::userdata::Tokenizer::default().max_len, 400);
    }

    #[test]
    fn header_flag_takes_yes_or_no_and_sets_the_data_table() {
        assert_eq!((parse_yes_no("yes"), parse_yes_no(" No "), parse_yes_no("true")), (Ok(true), Ok(false), Ok(true)));
        assert!(parse_yes_no("maybe").unwrap_err().contains("neither yes nor no"));
        let dir = std::env::temp_dir().join(format!("chi-header-flag-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let csv = dir.join("my.csv");
        std::fs::write(&csv, "x,label\n1,a\n2,b\n3,a\n").unwrap();
        let data = Some(csv.display().to_string());
        for h in [true, false] {
            let c = resolve_config(&TrainArgs { data: data.clone(), header: Some(h), ..TrainArgs::default() }, 0).unwrap();
            assert_eq!(c.data.header, Some(h));
        }
        let c = resolve_config(&TrainArgs { data, ..TrainArgs::default() }, 0).unwrap();
        assert_eq!(c.data.header, None, "detected unless given");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn feature_lists_name_each_column_once() {
        let list = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(check_features(Some(&list(&["x", "z"])), "--features").is_ok());
        assert_eq!(split_feature_list(" a, b ,\"x,y\", \"say \"\"hi\"\"\""), ["a", "b", "x,y", "say \"hi\""]);
        assert_eq!(split_feature_list("größe (cm),日本 語"), ["größe (cm)", "日本 語"]);
        assert!(check_features(None, "--features").is_ok());
        let e = check_features(Some(&list(&["x", "z", "x"])), "--features").unwrap_err();
        assert!(e.contains("--features") && e.contains("\"x\" more than once"), "{e}");
        let e = check_features(Some(&list(&["x", ""])), "[data] features").unwrap_err();
        assert!(e.contains("[data] features") && e.contains("empty column name"), "{e}");
        let e = resolve_config(&TrainArgs { data: Some("spirals".into()), features: Some("a, b,a".into()), ..TrainArgs::default() }, 0).unwrap_err();
        assert!(e.contains("\"a\" more than once"), "{e}");
    }
}

