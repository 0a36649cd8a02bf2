//! Using a trained model: `chi eval` (metrics, per-class report, confusion matrix) and
//! `chi predict` (classes and probabilities, or values, for new inputs; for text models the
//! words with the largest saliency |∂score/∂embedding|).
//!
//! A trained model is found from any of: its run directory, a full checkpoint
//! (`checkpoints/step-*.ckpt.safetensors`) or the final weights (`model.safetensors`). The
//! configuration comes from the file's metadata; the data schema (how to read new files, the
//! class names) from `data.json` in the run directory, or from the weights' metadata.

use super::model::{Embedded, ForwardOut, Model};
use super::{registry, Config, Run, DATA_SCHEMA_FILE};
use chi_autodiff::{no_grad, Rng, Tensor};
use chi_nn::checkpoint;
use chi_nn::dataset::{Dataset, Inputs, Split, Targets, Task};
use chi_nn::metrics::argmax;
use chi_nn::optim::Optimizer;
use chi_nn::userdata::DataSchema;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A trained model ready to use.
pub struct Trained {
    /// The run's configuration.
    pub cfg: Config,
    /// How the run read its data (file datasets; `None` for built-in ones).
    pub schema: Option<DataSchema>,
    /// The model with its trained weights.
    pub model: Box<dyn Model>,
    /// The dataset the model was built for: the run's own splits when they could be rebuilt,
    /// otherwise empty splits of the right kind.
    pub dataset: Dataset,
    /// Training steps behind the weights.
    pub step: u64,
    /// The weights file.
    pub weights: PathBuf,
    /// The run directory, when known.
    pub run_dir: Option<PathBuf>,
    /// Whether the weights are a training checkpoint rather than a final model.
    pub checkpoint: bool,
}

/// What a path given to `chi eval` / `chi predict` is.
enum Source {
    Checkpoint(PathBuf),
    Weights(PathBuf),
}

fn find_source(path: &Path) -> Result<(Source, Option<PathBuf>), String> {
    if path.is_dir() {
        let w = path.join("model.safetensors");
        if w.is_file() {
            return Ok((Source::Weights(w), Some(path.to_path_buf())));
        }
        return match checkpoint::latest_checkpoint(&path.join("checkpoints")) {
            Some(c) => Ok((Source::Checkpoint(c), Some(path.to_path_buf()))),
            None => Err(format!("{}: not a run directory (no model.safetensors and no checkpoints/)", path.display())),
        };
    }
    if !path.is_file() {
        let why = if path.exists() { "not a model (a run directory, checkpoint or model.safetensors); it is a device, pipe or socket" } else { "no such file or directory" };
        return Err(format!("{}: {why}", path.display()));
    }
    let parent = path.parent().map(Path::to_path_buf);
    let run_dir = |p: Option<PathBuf>| p.filter(|d| d.join("config.toml").is_file());
    if checkpoint::read_checkpoint_meta(path).is_ok() {
        // RUN/checkpoints/step-*.ckpt.safetensors
        Ok((Source::Checkpoint(path.to_path_buf()), run_dir(parent.and_then(|p| p.parent().map(Path::to_path_buf)))))
    } else {
        Ok((Source::Weights(path.to_path_buf()), run_dir(parent)))
    }
}

/// Reads the metadata of a weights file written by `chi train` (`model.safetensors`).
fn weights_meta(path: &Path) -> Result<BTreeMap<String, String>, String> {
    let bytes = checkpoint::read_safetensors(path).map_err(String::from)?;
    let (meta, _) = checkpoint::unpack::<f32>(path, &bytes).map_err(String::from)?;
    Ok(meta)
}

/// Loads a trained model from a run directory, a checkpoint or `model.safetensors`. With
/// `rebuild_data`, the run's own dataset is rebuilt from its configuration (the same seed
/// gives the same splits); otherwise only its schema is needed.
pub fn load_trained(path: &Path, rebuild_data: bool) -> Result<Trained, String> {
    let (source, run_dir) = find_source(path)?;
    let (cfg_json, step, schema_meta, weights) = match &source {
        Source::Checkpoint(p) => {
            let m = checkpoint::read_checkpoint_meta(p).map_err(String::from)?;
            (m.config.clone(), m.step, m.extra.get("data_schema").cloned(), p.clone())
        }
        Source::Weights(p) => {
            let m = weights_meta(p)?;
            let cfg = m.get("config").cloned().ok_or_else(|| {
                format!("{}: has no run configuration in its metadata (not written by chi train); pass the run directory or a checkpoint", p.display())
            })?;
            // Absent in weights written by hand; present, it must be a step count.
            let step = match m.get("step") {
                None => 0,
                Some(s) => s.parse::<u64>().ok().filter(|&n| n <= chi_nn::checkpoint::MAX_STEP).ok_or_else(|| format!("{}: bad step {s:?} in its metadata (a whole number of training steps)", p.display()))?,
            };
            (cfg, step, m.get("data_schema").cloned(), p.clone())
        }
    };
    let cfg: Config = serde_json::from_str(&cfg_json).map_err(|e| format!("{}: bad config in metadata: {e}", weights.display()))?;
    cfg.validate().map_err(|e| format!("{}: bad config in metadata: {e}", weights.display()))?;
    // The schema and where it was read from, for messages. The copy in the weights' checksummed
    // metadata is the model's own: a run directory's data.json (which weights copied into
    // another run's folder would find there, or an edit could change) is read only for weights
    // that carry none, and a data.json that disagrees with the model's copy is named.
    let data_json = run_dir.as_ref().map(|d| d.join(DATA_SCHEMA_FILE)).filter(|f| f.is_file());
    let (schema_text, schema_origin) = match (data_json, schema_meta) {
        (Some(f), Some(m)) => {
            let theirs = chi_nn::limits::read_file(&f).ok().and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
            if theirs != serde_json::from_str::<serde_json::Value>(&m).ok() {
                eprintln!(
                    "chi: warning: {} differs from the data schema saved in {} (edited, or another run's); the model's own is used",
                    f.display(),
                    weights.display()
                );
            }
            (Some(m), format!("{} (the data schema in its metadata)", weights.display()))
        }
        (Some(f), None) => (Some(chi_nn::limits::read_file(&f).map(|b| String::from_utf8_lossy(&b).into_owned()).map_err(|e| format!("{}: cannot read: {e}", f.display()))?), f.display().to_string()),
        (None, m) => (m, format!("{} (the data schema in its metadata)", weights.display())),
    };
    let schema: Option<DataSchema> = schema_text.as_deref().map(|t| serde_json::from_str(t).map_err(|e| format!("{schema_origin}: bad data schema: {e}"))).transpose()?;
    if cfg.dataset == registry::FILE_DATASET && schema.is_none() {
        return Err(format!("{}: the run trained on a file but its data.json is missing; pass the run directory", weights.display()));
    }
    let shapes = checkpoint::read_tensor_shapes(&weights)?;
    super::check_checkpoint_shapes(&cfg, &weights, &shapes)?;
    if let Some(s) = &schema {
        s.validate().map_err(|e| format!("{schema_origin}: {e}"))?;
        check_schema_fits(s, &schema_origin, &weights, super::held_values(&shapes))?;
    }
    let (dataset, model) = if rebuild_data || schema.is_none() {
        let run = Run::new(&cfg).map_err(|e| {
            let data_gone = cfg.dataset == registry::FILE_DATASET && cfg.data.path.as_deref().is_some_and(|p| !Path::new(p).exists());
            if data_gone {
                format!("{e}\n(the run's training data could not be read again, and its splits are needed here: restore the file, or with `chi eval` evaluate on another file with --data FILE)")
            } else {
                format!("{}: the run cannot be rebuilt from its configuration: {e}", weights.display())
            }
        })?;
        // The splits are rebuilt from the data file; they are the run's only if the file, read
        // again, gives the preprocessing the model was trained with.
        if let (Some(saved), Some(fresh)) = (&schema_text, run.dataset.schema.as_deref()) {
            if !super::same_schema(fresh, saved) {
                return Err(format!(
                    "{}: the run's data ({}), read again, gives another preprocessing than the run's ({schema_origin}): the data changed since training, or the run was made by a chi whose rules for reading files differ, so its splits cannot be rebuilt; evaluate on a file with --data FILE (read with the run's own preprocessing)",
                    weights.display(),
                    cfg.data.path.as_deref().unwrap_or("?")
                ));
            }
        }
        (run.dataset, run.model)
    } else {
        let s = schema.as_ref().expect("schema");
        let ds = s.empty_dataset(&cfg.dataset);
        // The run's own initialisation stream; the weights are then loaded over it.
        let mut init = super::RunStreams::new(cfg.seed).init;
        let options = without_pretrained(&cfg.model_options, &shapes);
        let model = registry::build_model(&registry::model_entry(&cfg.model)?, &options, &ds, &mut init).map_err(|e| format!("{}: the model cannot be built from its configuration: {e}", weights.display()))?;
        (ds, model)
    };
    match &source {
        Source::Checkpoint(p) => {
            let mut optim = Optimizer::try_new(cfg.optim.clone())?;
            checkpoint::load_checkpoint(p, model.store().params(), &mut optim).map_err(String::from)?;
        }
        Source::Weights(p) => {
            checkpoint::load_params(p, model.store().params()).map_err(String::from)?;
        }
    }
    let checkpoint = matches!(source, Source::Checkpoint(_));
    Ok(Trained { cfg, schema, model, dataset, step, weights, run_dir, checkpoint })
}

/// Model outputs of a whole split, one row per example: class probabilities (softmax, or
/// `[1 − p, p]` for a binary logit) or the regressed value.
pub fn outputs(model: &dyn Model, task: Task, split: &Split, batch: usize) -> Vec<Vec<f64>> {
    outputs_with_log_probs(model, task, split, batch).0
}

/// [`outputs`], and for a classifier the log-probability of every class per example, computed
/// from the logits (`log_softmax`, `log σ`), so a loss taken from them is the training loss
/// even where a probability rounds to 0 (empty rows for regression).
pub fn outputs_with_log_probs(model: &dyn Model, task: Task, split: &Split, batch: usize) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let n = split.len();
    let mut rng = Rng::new(0); // no dropout in evaluation
    let (mut rows, mut logs) = (Vec::with_capacity(n), Vec::with_capacity(n));
    no_grad(|| {
        let mut s = 0;
        while s < n {
            let idx: Vec<usize> = (s..(s + batch).min(n)).collect();
            let o = model.forward(split, &idx, false, &mut rng).output;
            let (r, l) = output_rows(task, &o, idx.len());
            rows.extend(r);
            logs.extend(l);
            s += batch;
        }
    });
    (rows, logs)
}

/// `ln σ(z)` without overflow.
fn log_sigmoid(z: f64) -> f64 {
    -((-z).max(0.0) + (-z.abs()).exp().ln_1p())
}

fn output_rows(task: Task, o: &Tensor<f32>, b: usize) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let rows = |v: Vec<f32>, w: usize| -> Vec<Vec<f64>> { v.chunks(w.max(1)).map(|r| r.iter().map(|&x| x as f64).collect()).collect() };
    match task {
        Task::Classification { classes } => {
            let z = o.reshape(&[b, classes]);
            (rows(z.softmax(-1).to_vec(), classes), rows(z.log_softmax(-1).to_vec(), classes))
        }
        Task::Binary => o
            .to_vec()
            .iter()
            .map(|&z| {
                let (z, p) = (z as f64, 1.0 / (1.0 + (-(z as f64)).exp()));
                (vec![1.0 - p, p], vec![log_sigmoid(-z), log_sigmoid(z)])
            })
            .unzip(),
        Task::Regression => (o.to_vec().iter().map(|&v| vec![v as f64]).collect(), vec![Vec::new(); b]),
    }
}

/// Per-class figures of a classification report.
#[derive(Clone, Debug, Serialize)]
pub struct ClassReport {
    /// Class name.
    pub class: String,
    /// Of the examples predicted as this class, the share that are.
    pub precision: f64,
    /// Of the examples of this class, the share predicted as it.
    pub recall: f64,
    /// Harmonic mean of precision and recall.
    pub f1: f64,
    /// Examples of this class.
    pub support: u64,
}

/// Everything `chi eval` reports.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Examples evaluated.
    pub examples: usize,
    /// Accuracy, macro-F1 (the mean F1 over the classes in the true or predicted labels, as
    /// scikit-learn's default), support-weighted F1, loss (classification); MSE, MAE, R², Pearson
    /// (regression).
    pub metrics: BTreeMap<String, f64>,
    /// Per class (classification).
    pub per_class: Vec<ClassReport>,
    /// Class names, in confusion-matrix order.
    pub classes: Vec<String>,
    /// `confusion[true][predicted]` counts.
    pub confusion: Vec<Vec<u64>>,
}

/// The model options to rebuild a trained model with, its weights to be loaded over it: a model
/// whose embedding pretrained vectors initialised (`pretrained = FILE`) needs only the
/// embedding's width, which the weights give, not the vectors file, which may have moved since.
fn without_pretrained(options: &super::model::ModelConfig, shapes: &BTreeMap<String, Vec<usize>>) -> super::model::ModelConfig {
    let mut o = options.clone();
    if o.options.contains_key("pretrained") {
        if let Some(&dim) = shapes.get("embedding.weight").and_then(|s| s.get(1)) {
            o.options.remove("pretrained");
            o.options.insert("embed".into(), dim.into());
        }
    }
    o
}

/// A classifier's output layer holds at least one value per class, so a schema naming more
/// classes than the weights file holds values is inconsistent with it; checked before the model
/// is sized from the schema. `held`: the values in `weights`.
fn check_schema_fits(s: &DataSchema, origin: &str, weights: &Path, held: u128) -> Result<(), String> {
    let classes = s.classes.len() as u128;
    if matches!(s.task, Task::Classification { .. }) && classes > held {
        return Err(format!("{origin}: names {classes} classes, but {} holds only {held} parameter values: the schema does not belong to these weights", weights.display()));
    }
    Ok(())
}

/// Classification report from true classes and predicted probabilities. The loss is the mean
/// negative log-probability of the true class: taken from `log_probs` when given (as the model's
/// logits give them, so it equals the training loss), else from `probs` (infinite where a
/// probability is 0; NaN outputs give a NaN loss, not a finite one).
pub fn classification_report(y: &[usize], probs: &[Vec<f64>], log_probs: Option<&[Vec<f64>]>, names: &[String]) -> Report {
    let k = names.len();
    let mut confusion = vec![vec![0u64; k]; k];
    let mut nll = 0.0;
    for (i, (t, p)) in y.iter().zip(probs).enumerate() {
        let pred = argmax(p);
        confusion[*t][pred] += 1;
        nll -= match log_probs {
            Some(l) => l[i][*t],
            None => p[*t].ln(),
        };
    }
    let n = y.len();
    let mut per_class = Vec::new();
    for c in 0..k {
        let tp = confusion[c][c] as f64;
        let predicted: u64 = (0..k).map(|r| confusion[r][c]).sum();
        let support: u64 = confusion[c].iter().sum();
        let precision = if predicted > 0 { tp / predicted as f64 } else { 0.0 };
        let recall = if support > 0 { tp / support as f64 } else { 0.0 };
        let f1 = if precision + recall > 0.0 { 2.0 * precision * recall / (precision + recall) } else { 0.0 };
        per_class.push(ClassReport { class: names[c].clone(), precision, recall, f1, support });
    }
    let correct: u64 = (0..k).map(|c| confusion[c][c]).sum();
    let mut metrics = BTreeMap::new();
    metrics.insert("accuracy".into(), correct as f64 / n.max(1) as f64);
    // Macro-F1 as scikit-learn's default `f1_score(average="macro")`: the mean over every class
    // that occurs in the true or the predicted labels. A class the model predicts but that has
    // no true example counts with F1 0, so wrong predictions of it lower the score; a class
    // that occurs in neither is left out.
    let occurring: Vec<f64> = (0..k).filter(|&c| per_class[c].support > 0 || confusion.iter().any(|row| row[c] > 0)).map(|c| per_class[c].f1).collect();
    metrics.insert("macro_f1".into(), occurring.iter().sum::<f64>() / occurring.len().max(1) as f64);
    metrics.insert("weighted_f1".into(), per_class.iter().map(|c| c.f1 * c.support as f64).sum::<f64>() / n.max(1) as f64);
    metrics.insert("loss".into(), nll / n.max(1) as f64);
    Report { examples: n, metrics, per_class, classes: names.to_vec(), confusion }
}

/// Regression report: MSE, MAE, R² and Pearson's r.
///
/// R² and Pearson's r are NaN (undefined) for fewer than two examples or targets that are all
/// equal, also when mapping the targets back to their units left them a few rounding errors
/// apart (a spread below 1e-12 of their magnitude).
pub fn regression_report(y: &[f64], pred: &[f64]) -> Report {
    let n = y.len().max(1) as f64;
    let mean = chi_nn::metrics::mean(y);
    let sse: f64 = y.iter().zip(pred).map(|(a, b)| (a - b).powi(2)).sum();
    let sst: f64 = y.iter().map(|a| (a - mean).powi(2)).sum();
    let big = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let varies = y.len() >= 2 && sst > n * (1e-12 * big).powi(2);
    let mut metrics = BTreeMap::new();
    metrics.insert("mse".into(), chi_nn::metrics::mse(pred, y));
    metrics.insert("mae".into(), y.iter().zip(pred).map(|(a, b)| (a - b).abs()).sum::<f64>() / n);
    metrics.insert("r2".into(), if varies { 1.0 - sse / sst } else { f64::NAN });
    metrics.insert("pearson".into(), if varies { chi_nn::metrics::pearson(pred, y) } else { f64::NAN });
    Report { examples: y.len(), metrics, per_class: Vec::new(), classes: Vec::new(), confusion: Vec::new() }
}


/// An error naming the first example whose model outputs are not finite: weights that are finite
/// but huge (a run that diverged) overflow to infinity and NaN in the forward pass, and a class
/// or a score read from those would be printed as a result.
pub fn check_finite_outputs(t: &Trained, rows: &[Vec<f64>], names: impl Fn(usize) -> String) -> Result<(), String> {
    match rows.iter().position(|r| r.iter().any(|v| !v.is_finite())) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{}: the model's outputs for {} are not finite ({:?}): its weights overflow in the forward pass (a run that diverged?)",
            t.weights.display(),
            names(i),
            rows[i]
        )),
    }
}

/// The report of a model on a labelled split; an error if an output is not finite
/// ([`check_finite_outputs`]).
pub fn evaluate_report(t: &Trained, split: &Split) -> Result<Report, String> {
    let (probs, log_probs) = outputs_with_log_probs(t.model.as_ref(), t.dataset.task, split, 256);
    check_finite_outputs(t, &probs, |i| format!("example {}", i + 1))?;
    Ok(match t.dataset.task {
        Task::Regression => {
            let un = |z: f64| t.schema.as_ref().map_or(z, |s| s.unscale(z));
            let y: Vec<f64> = (0..split.len()).map(|i| un(split.targets.value(i))).collect();
            regression_report(&y, &probs.iter().map(|r| un(r[0])).collect::<Vec<_>>())
        }
        task => {
            let k = if let Task::Classification { classes } = task { classes } else { 2 };
            let names = class_names(t, k);
            let y: Vec<usize> = (0..split.len()).map(|i| split.targets.class(i)).collect();
            classification_report(&y, &probs, Some(&log_probs), &names)
        }
    })
}

/// The class names of a trained model: from its data schema, else `0`, `1`, ….
pub fn class_names(t: &Trained, k: usize) -> Vec<String> {
    match &t.schema {
        Some(s) if s.classes.len() == k => s.class_names(),
        _ => (0..k).map(|c| c.to_string()).collect(),
    }
}

/// The report as a text table: metrics, then per class, then the confusion matrix (of the most
/// frequent classes, with the others summed, above [`MAX_SHOWN_CLASSES`]; said in its heading).
pub fn report_text(r: &Report) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "{} examples: {}", r.examples, super::fmt_metrics(&r.metrics));
    if r.per_class.is_empty() {
        return s;
    }
    let shown = shown_confusion(r);
    let other_w = if shown.kept.is_some() { OTHER_CLASSES.chars().count() } else { 0 };
    let w = r.classes.iter().enumerate().map(|(i, c)| format!("{i} {c}").chars().count()).max().unwrap_or(5).max(other_w).clamp(5, 28);
    let _ = writeln!(s, "\n{:<w$}  precision  recall     f1  support", "class");
    for c in &r.per_class {
        let _ = writeln!(s, "{:<w$}  {:>9.4}  {:>6.4}  {:>5.4}  {:>7}", truncate(&c.class, w), c.precision, c.recall, c.f1, c.support);
    }
    match &shown.kept {
        None => {
            let _ = writeln!(s, "\nconfusion matrix (rows: true class, columns: predicted)");
        }
        Some(kept) => {
            let _ = writeln!(
                s,
                "\nconfusion matrix of the {} most frequent of the {} classes, the others summed as {OTHER_CLASSES:?} \
                 (rows: true class, columns: predicted); every class is in confusion.csv and report.json of the report (--report DIR)",
                kept.len(),
                r.classes.len()
            );
        }
    }
    // Columns are headed by class number (`…` for the other classes).
    let heads: Vec<String> = match &shown.kept {
        None => (0..r.classes.len()).map(|c| c.to_string()).collect(),
        Some(kept) => kept.iter().map(|c| c.to_string()).chain(["…".to_string()]).collect(),
    };
    let cw = shown.counts.iter().flatten().map(|v| v.to_string().len()).chain(heads.iter().map(|h| h.chars().count())).max().unwrap_or(1).max(3);
    let _ = write!(s, "{:<w$}", "");
    for h in &heads {
        let _ = write!(s, " {:>cw$}", h);
    }
    let _ = writeln!(s);
    for (i, row) in shown.counts.iter().enumerate() {
        let name = match &shown.kept {
            None => format!("{i} {}", r.classes[i]),
            Some(kept) => kept.get(i).map_or_else(|| OTHER_CLASSES.to_string(), |&c| format!("{c} {}", r.classes[c])),
        };
        let _ = write!(s, "{:<w$}", truncate(&name, w));
        for v in row {
            let _ = write!(s, " {:>cw$}", v);
        }
        let _ = writeln!(s);
    }
    s
}

/// Most classes whose confusion matrix is printed and drawn whole. A matrix of more (up to a
/// thousand classes, a million cells) floods the terminal and makes a picture of megabytes in
/// which nothing can be read; `confusion.csv` and `report.json` keep every cell.
pub const MAX_SHOWN_CLASSES: usize = 30;

/// The name of the row and column that sum the classes left out of a shown confusion matrix.
pub const OTHER_CLASSES: &str = "(other classes)";

/// A confusion matrix as it is printed and drawn.
struct ShownConfusion {
    /// `None`: every class, in order. `Some`: the class numbers kept, in order; the last row
    /// and column of `counts` then sum the others.
    kept: Option<Vec<usize>>,
    names: Vec<String>,
    counts: Vec<Vec<u64>>,
}

/// The report's confusion matrix whole when it has at most [`MAX_SHOWN_CLASSES`] classes; else
/// the `MAX_SHOWN_CLASSES − 1` classes of most true examples (ties: most predicted, then first),
/// in class order, and one more row and column summing the others, so every example is still
/// counted once.
fn shown_confusion(r: &Report) -> ShownConfusion {
    let k = r.classes.len();
    if k <= MAX_SHOWN_CLASSES || r.confusion.len() != k {
        return ShownConfusion { kept: None, names: r.classes.clone(), counts: r.confusion.clone() };
    }
    let support = |c: usize| r.confusion[c].iter().map(|&v| v as u128).sum::<u128>();
    let predicted = |c: usize| r.confusion.iter().map(|row| row.get(c).copied().unwrap_or(0) as u128).sum::<u128>();
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&a, &b| support(b).cmp(&support(a)).then(predicted(b).cmp(&predicted(a))).then(a.cmp(&b)));
    let mut kept = order[..MAX_SHOWN_CLASSES - 1].to_vec();
    kept.sort_unstable();
    let mut slot = vec![kept.len(); k];
    for (i, &c) in kept.iter().enumerate() {
        slot[c] = i;
    }
    let n = kept.len() + 1;
    let mut counts = vec![vec![0u64; n]; n];
    for (t, row) in r.confusion.iter().enumerate() {
        for (p, &v) in row.iter().enumerate() {
            let cell = &mut counts[slot[t]][slot[p]];
            *cell = cell.saturating_add(v);
        }
    }
    let names = kept.iter().map(|&c| r.classes[c].clone()).chain([OTHER_CLASSES.to_string()]).collect();
    ShownConfusion { kept: Some(kept), names, counts }
}

fn truncate(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        s.to_string()
    } else {
        s.chars().take(w - 1).collect::<String>() + "…"
    }
}

/// Writes `report.json`, `confusion.csv` and the heat maps `confusion.svg` / `.png` into `dir`.
/// The heat maps of more than [`MAX_SHOWN_CLASSES`] classes show the most frequent ones and
/// the others summed, as [`report_text`] prints them; the title says so.
pub fn write_report(dir: &Path, title: &str, r: &Report) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
    let mut written = Vec::new();
    let json = dir.join("report.json");
    checkpoint::atomic_write(&json, serde_json::to_string_pretty(r).map_err(|e| e.to_string())?.as_bytes())?;
    written.push(json);
    if !r.confusion.is_empty() {
        let mut csv = String::from("true\\predicted");
        for c in &r.classes {
            csv.push(',');
            csv.push_str(&csv_field(c));
        }
        csv.push('\n');
        for (i, row) in r.confusion.iter().enumerate() {
            csv.push_str(&csv_field(&r.classes[i]));
            for v in row {
                csv.push_str(&format!(",{v}"));
            }
            csv.push('\n');
        }
        let p = dir.join("confusion.csv");
        checkpoint::atomic_write(&p, csv.as_bytes())?;
        written.push(p);
        let shown = shown_confusion(r);
        let title = match &shown.kept {
            None => title.to_string(),
            Some(kept) => format!("{title}: the {} most frequent of {} classes (all in confusion.csv)", kept.len(), r.classes.len()),
        };
        for ext in ["svg", "png"] {
            let p = dir.join(format!("confusion.{ext}"));
            super::plot::confusion_heatmap(&p, &title, &shown.names, &shown.counts)?;
            written.push(p);
        }
    }
    Ok(written)
}

/// A CSV field, quoted when it holds a comma, quote or line break.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

// ------------------------------------------------------------------------------ predict

/// Predictions for unlabelled inputs.
pub struct Predictions {
    /// One id per input (`file:line`, a file path, `… example N`).
    pub ids: Vec<String>,
    /// Class probabilities per input, or the value.
    pub outputs: Vec<Vec<f64>>,
    /// For text models with saliency: the top words and their |∂score/∂embedding| per input.
    pub salient: Option<Vec<Vec<(String, f64)>>>,
    /// Loader warnings.
    pub warnings: Vec<String>,
}

/// How a word's part in a prediction is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Attribution {
    /// Σ_d |∂score/∂e_td|: how strongly the score reacts to the word's vector (the saliency
    /// map of Simonyan et al., summed over the embedding dimensions as in Tixier's notes, eq. 5).
    /// Uniform over the words of a bag-of-words model, whose score sees only their mean.
    #[default]
    Saliency,
    /// e_t · ∂score/∂e_t: the word's first-order contribution to the score (signed; the words
    /// pushing most towards the predicted class come first).
    GradTimesInput,
}

/// The standard deviation the model's regression targets were divided by in training (1 for
/// classification and unscaled targets): a gradient of the model's output times it is the
/// gradient of the prediction in the target's own units.
pub fn target_sd(t: &Trained) -> f64 {
    match (&t.schema, t.dataset.task) {
        (Some(s), Task::Regression) => s.target_scale.map_or(1.0, |(_, sd)| sd),
        _ => 1.0,
    }
}

/// Predicts for the inputs at `input` (see [`DataSchema::encode_unlabelled`]); with
/// `saliency = k > 0` also finds each text's `k` top words by `method`.
pub fn predict(t: &Trained, input: &Path, saliency: usize, method: Attribution) -> Result<Predictions, String> {
    let schema = t.schema.as_ref().ok_or_else(|| {
        format!("model trained on the built-in dataset {:?}: chi predict needs a model trained on files (--data PATH), which knows how to read new inputs", t.cfg.dataset)
    })?;
    let (inputs, ids, warnings) = schema.encode_unlabelled(input).map_err(String::from)?;
    if let Inputs::Tokens { seqs, .. } = &inputs {
        if saliency > 0 && seqs.iter().any(|s| s.is_empty()) {
            return Err("an input has no tokens".into());
        }
    }
    let n = inputs.len();
    let targets = if t.dataset.task == Task::Regression { Targets::Values(vec![0.0; n]) } else { Targets::Classes(vec![0; n]) };
    let split = Split { inputs, targets };
    let mut outs = outputs(t.model.as_ref(), t.dataset.task, &split, 256);
    check_finite_outputs(t, &outs, |i| ids.get(i).map_or_else(|| format!("input {}", i + 1), |id| id.to_string()))?;
    if t.dataset.task == Task::Regression {
        for r in &mut outs {
            r[0] = schema.unscale(r[0]);
        }
    }
    let salient = if saliency > 0 {
        let Inputs::Tokens { seqs, .. } = &split.inputs else {
            return Err("--saliency is for text models (its inputs are word embeddings)".into());
        };
        let vocab = schema.vocab().ok_or("--saliency needs a text model")?;
        let mut all = Vec::with_capacity(n);
        let sd = target_sd(t);
        for i in 0..n {
            let class = if t.dataset.task == Task::Regression { 0 } else { argmax(&outs[i]) };
            let scores: Vec<f64> = token_attribution(t.model.as_ref(), t.dataset.task, &split, i, class, method)?.iter().map(|s| s * sd).collect();
            let mut words: Vec<(String, f64)> = seqs[i].iter().zip(scores).map(|(&id, s)| (vocab.word(id).to_string(), s)).collect();
            words.sort_by(|a, b| b.1.total_cmp(&a.1));
            let mut seen = std::collections::HashSet::new();
            words.retain(|(w, _)| seen.insert(w.clone()));
            words.truncate(saliency);
            all.push(words);
        }
        Some(all)
    } else {
        None
    };
    Ok(Predictions { ids, outputs: outs, salient, warnings })
}

/// The built-in models that return their embedding lookups ([`ForwardOut::embedded`]) and have
/// an `embedding.weight` table, so that saliency, gradient × input and integrated gradients
/// work on them (`ca-bsfe` sums gated word vectors without a lookup and is not among them).
pub const SALIENCY_MODELS: &[&str] = &["bow", "text-cnn", "han", "rcnn", "lstm", "gru", "ca-rnn"];

/// The built-in models with saliency, for messages: `a, b, … or z`.
fn saliency_models() -> String {
    match SALIENCY_MODELS.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => SALIENCY_MODELS.join(", "),
    }
}

/// The attribution of each token `t` of example `i` to the chosen class's logit (or the
/// value): with `g_t` = ∂score/∂e_t summed over every lookup of the token (a bidirectional
/// model looks each token up twice), Σ_d |g_td| ([`Attribution::Saliency`]) or e_t · g_t
/// ([`Attribution::GradTimesInput`]).
pub fn token_attribution(model: &dyn Model, task: Task, split: &Split, i: usize, class: usize, method: Attribution) -> Result<Vec<f64>, String> {
    let n = match &split.inputs {
        Inputs::Tokens { seqs, .. } => seqs[i].len(),
        _ => return Err("saliency needs token inputs".into()),
    };
    let ForwardOut { output, embedded, .. } = model.forward(split, &[i], false, &mut Rng::new(0));
    if embedded.is_empty() {
        return Err(format!("this model does not expose its word embeddings; saliency and chi explain need {}", saliency_models()));
    }
    for e in &embedded {
        e.tensor.retain_grad();
    }
    let cols = output.numel();
    let pick = if task == Task::Regression || cols == 1 { 0 } else { class };
    let onehot: Vec<f32> = (0..cols).map(|c| if c == pick { 1.0 } else { 0.0 }).collect();
    output.reshape(&[cols]).mul(&Tensor::from_vec(onehot, &[cols])).sum().backward();
    // Each lookup's gradient and values, copied once (not once per token).
    let lookups: Vec<(&Embedded, Vec<f32>, Vec<f32>)> =
        embedded.iter().filter_map(|e| Some((e, e.tensor.grad()?.to_vec(), e.tensor.to_vec()))).collect();
    let dim = embedded[0].tensor.shape().last().copied().unwrap_or(0);
    let mut scores = Vec::with_capacity(n);
    for t in 0..n {
        let mut g = vec![0.0f64; dim];
        for (e, grad, _) in &lookups {
            let row = e.row(0, t, n) * dim;
            g.iter_mut().zip(&grad[row..row + dim]).for_each(|(a, &b)| *a += b as f64);
        }
        scores.push(match method {
            Attribution::Saliency => g.iter().map(|x| x.abs()).sum::<f64>(),
            Attribution::GradTimesInput => match lookups.first() {
                Some((e, _, values)) => {
                    let row = e.row(0, t, n) * dim;
                    values[row..row + dim].iter().zip(&g).map(|(&a, b)| a as f64 * b).sum()
                }
                None => 0.0,
            },
        });
    }
    for p in model.store().params() {
        p.zero_grad();
    }
    Ok(scores)
}

/// The score a class's attribution explains: its logit (or the regressed value) for
/// example `i`.
fn score(model: &dyn Model, task: Task, split: &Split, i: usize, class: usize) -> f64 {
    no_grad(|| {
        let o = model.forward(split, &[i], false, &mut Rng::new(0)).output.to_vec();
        o[if task == Task::Regression || o.len() == 1 { 0 } else { class }] as f64
    })
}

/// Integrated gradients (Sundararajan et al.) of example `i`'s class score along the straight
/// path from the all-zero embedding to the real one, with `steps` midpoint-rule steps: per
/// token `IG_t = e_t · mean_k ∂score/∂e_t (α_k e)`, `α_k = (k − ½)/steps`. The path is made by
/// scaling the model's `embedding.weight` table by α (every lookup is then α·e_t); the table
/// is restored afterwards. Returns the attributions, the score at the input and at the
/// baseline: by completeness Σ_t IG_t ≈ f(x) − f(0), with an error that shrinks as 1/steps².
pub fn integrated_gradients(model: &dyn Model, task: Task, split: &Split, i: usize, class: usize, steps: usize) -> Result<(Vec<f64>, f64, f64), String> {
    let table = model
        .store()
        .params()
        .iter()
        .find(|p| p.name() == "embedding.weight")
        .cloned()
        .ok_or_else(|| format!("integrated gradients needs a model with an `embedding.weight` table ({})", saliency_models()))?;
    let n = match &split.inputs {
        Inputs::Tokens { seqs, .. } => seqs[i].len(),
        _ => return Err("integrated gradients needs token inputs".into()),
    };
    let steps = steps.max(1);
    let original = table.get().to_vec();
    let mut total = vec![0.0f64; n];
    let result = (|| -> Result<(f64, f64), String> {
        table.set_values(vec![0.0; original.len()]);
        let f0 = score(model, task, split, i, class);
        for k in 0..steps {
            let alpha = (k as f64 + 0.5) / steps as f64;
            table.set_values(original.iter().map(|w| (alpha * *w as f64) as f32).collect());
            let gi = token_attribution(model, task, split, i, class, Attribution::GradTimesInput)?;
            // At α the looked-up vector is α·e_t, so (α·e_t)·g / α = e_t·g.
            for (a, v) in total.iter_mut().zip(gi) {
                *a += v / alpha / steps as f64;
            }
        }
        table.set_values(original.clone());
        Ok((score(model, task, split, i, class), f0))
    })();
    table.set_values(original);
    let (fx, f0) = result?;
    Ok((total, fx, f0))
}

/// The predictions as CSV: `input,predicted` then `p_<class>` columns (classification) or
/// `input,<target>` (regression), and `salient_words` when computed.
pub fn predictions_csv(t: &Trained, p: &Predictions) -> String {
    let mut s = String::from("input");
    let regression = t.dataset.task == Task::Regression;
    let k = p.outputs.first().map_or(0, |r| r.len());
    let names = class_names(t, if regression { 0 } else { k });
    if regression {
        let target = t.schema.as_ref().and_then(|s| s.target.clone()).unwrap_or_else(|| "value".into());
        s.push_str(&format!(",{}", csv_field(&target)));
    } else {
        s.push_str(",predicted");
        for n in &names {
            s.push_str(&format!(",{}", csv_field(&format!("p_{n}"))));
        }
    }
    if p.salient.is_some() {
        s.push_str(",salient_words");
    }
    s.push('\n');
    for (i, row) in p.outputs.iter().enumerate() {
        s.push_str(&csv_field(&p.ids[i]));
        if regression {
            s.push_str(&format!(",{}", row[0]));
        } else {
            s.push_str(&format!(",{}", csv_field(&names[argmax(row)])));
            for v in row {
                s.push_str(&format!(",{v:.6}"));
            }
        }
        if let Some(sal) = &p.salient {
            let words: Vec<String> = sal[i].iter().map(|(w, v)| format!("{w} ({v:.3})")).collect();
            s.push_str(&format!(",{}", csv_field(&words.join("; "))));
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_report_matches_hand_counts() {
        // true: 0 0 1 1 2; predicted: 0 1 1 1 0
        let y = [0, 0, 1, 1, 2];
        let p = |c: usize| (0..3).map(|i| if i == c { 0.8 } else { 0.1 }).collect::<Vec<f64>>();
        let probs = vec![p(0), p(1), p(1), p(1), p(0)];
        let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let r = classification_report(&y, &probs, None, &names);
        assert_eq!(r.confusion, vec![vec![1, 1, 0], vec![0, 2, 0], vec![1, 0, 0]]);
        assert!((r.metrics["accuracy"] - 0.6).abs() < 1e-12);
        // a: P 1/2, R 1/2; b: P 2/3, R 1; c: P 0, R 0.
        assert!((r.per_class[0].f1 - 0.5).abs() < 1e-12);
        assert!((r.per_class[1].f1 - 0.8).abs() < 1e-12);
        assert_eq!(r.per_class[2].f1, 0.0);
        // Every class occurs in the true labels: scikit-learn's f1_score(average="macro") gives
        // (0.5 + 0.8 + 0) / 3.
        assert!((r.metrics["macro_f1"] - 1.3 / 3.0).abs() < 1e-12);
        assert!((r.metrics["loss"] - (-(0.8f64.ln()) * 3.0 - 0.1f64.ln() * 2.0) / 5.0).abs() < 1e-12);
        let text = report_text(&r);
        assert!(text.contains("confusion matrix") && text.contains("2 c"), "{text}");
    }

    /// A report of many classes prints and draws the confusion of the most frequent ones, the
    /// others summed into one row and column, and says so; confusion.csv keeps every class. Up
    /// to the limit the matrix is whole.
    #[test]
    fn the_confusion_of_many_classes_is_shown_for_the_most_frequent_and_written_whole() {
        let k = 200;
        let names: Vec<String> = (0..k).map(|c| format!("c{c}")).collect();
        // Class c has c % 7 + 1 examples, half predicted right, half as class 0.
        let (mut y, mut probs) = (Vec::new(), Vec::new());
        for c in 0..k {
            for j in 0..c % 7 + 1 {
                y.push(c);
                let pred = if j % 2 == 0 { c } else { 0 };
                probs.push((0..k).map(|i| if i == pred { 0.9 } else { 0.1 / (k - 1) as f64 }).collect::<Vec<f64>>());
            }
        }
        let r = classification_report(&y, &probs, None, &names);
        let text = report_text(&r);
        assert!(
            text.contains(&format!("confusion matrix of the {} most frequent of the 200 classes, the others summed as \"(other classes)\"", MAX_SHOWN_CLASSES - 1))
                && text.contains("every class is in confusion.csv and report.json of the report (--report DIR)"),
            "{text}"
        );
        let matrix: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("confusion matrix")).skip(1).collect();
        assert_eq!(matrix.len(), MAX_SHOWN_CLASSES + 1, "a header and one row per shown class:\n{text}");
        assert!(matrix.iter().all(|l| l.chars().count() < 250), "{text}");
        assert!(matrix.last().unwrap().starts_with("(other classes)"), "{text}");
        // Every example is counted once in the shown matrix.
        let shown = shown_confusion(&r);
        assert_eq!(shown.counts.iter().flatten().sum::<u64>(), y.len() as u64);
        assert_eq!(shown.names.len(), MAX_SHOWN_CLASSES);
        // Kept: the 28 classes of 7 examples (c % 7 == 6), then the first of those of 6.
        let kept = shown.kept.as_ref().unwrap();
        assert!(kept[0] == 5 && kept[1..].iter().all(|c| c % 7 == 6), "{kept:?}");
        let dir = std::env::temp_dir().join(format!("chi-infer-many-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        write_report(&dir, "many", &r).unwrap();
        let csv = std::fs::read_to_string(dir.join("confusion.csv")).unwrap();
        assert_eq!(csv.lines().count(), k + 1, "confusion.csv holds every class");
        let svg = std::fs::read_to_string(dir.join("confusion.svg")).unwrap();
        assert!(svg.len() < 1_000_000 && svg.contains("most frequent of 200 classes") && svg.contains("(other classes)"), "{} bytes", svg.len());
        let _ = std::fs::remove_dir_all(&dir);
        // At the limit the matrix is whole.
        let few: Vec<String> = names[..MAX_SHOWN_CLASSES].to_vec();
        let r = classification_report(&[0, 1], &[vec![1.0; MAX_SHOWN_CLASSES], vec![1.0; MAX_SHOWN_CLASSES]], None, &few);
        let text = report_text(&r);
        assert!(text.contains("confusion matrix (rows: true class, columns: predicted)") && !text.contains("other classes"), "{text}");
    }

    /// The loss comes from the log-probabilities when given: a true class whose probability
    /// rounds to 0 counts with its real log-probability (the report floored it at 1e-300 and
    /// gave 690.8 where training had logged 1e30), and NaN outputs give a NaN loss.
    #[test]
    fn the_loss_is_the_logits_loss_not_a_floored_one() {
        let names: Vec<String> = ["a", "b"].iter().map(|s| s.to_string()).collect();
        let r = classification_report(&[0, 1], &[vec![0.0, 1.0], vec![0.0, 1.0]], Some(&[vec![-2000.0, 0.0], vec![-2000.0, 0.0]]), &names);
        assert_eq!(r.metrics["loss"], 1000.0);
        let r = classification_report(&[0], &[vec![0.0, 1.0]], None, &names);
        assert_eq!(r.metrics["loss"], f64::INFINITY);
        let r = classification_report(&[0], &[vec![f64::NAN, f64::NAN]], Some(&[vec![f64::NAN, f64::NAN]]), &names);
        assert!(r.metrics["loss"].is_nan());
        assert!((log_sigmoid(-1000.0) + 1000.0).abs() < 1e-9 && (log_sigmoid(3.0) - (1.0 / (1.0 + (-3.0f64).exp())).ln()).abs() < 1e-15);
    }

    /// Macro-F1 averages over the classes in the true *or* the predicted labels, as
    /// scikit-learn's default: f1_score([0, 0, 1, 1], [0, 1, 1, 2], average="macro") averages
    /// a (P 1, R 1/2, F1 2/3), b (P 1/2, R 1/2, F1 1/2) and c (predicted once, never true: F1 0)
    /// to 7/18 ≈ 0.3889. Class d occurs in neither and is left out. Averaging over the true
    /// classes only would give 7/12 ≈ 0.5833 and hide the wrong predictions of c.
    #[test]
    fn macro_f1_counts_classes_that_are_only_predicted() {
        let y = [0, 0, 1, 1];
        let p = |c: usize| (0..4).map(|i| if i == c { 0.7 } else { 0.1 }).collect::<Vec<f64>>();
        let probs = vec![p(0), p(1), p(1), p(2)];
        let names: Vec<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
        let r = classification_report(&y, &probs, None, &names);
        assert_eq!((r.per_class[2].support, r.per_class[2].f1), (0, 0.0));
        assert!((r.metrics["macro_f1"] - 7.0 / 18.0).abs() < 1e-12, "macro_f1 {}", r.metrics["macro_f1"]);
        // Support-weighted F1 is unchanged by classes without true examples: (2·2/3 + 2·1/2) / 4.
        assert!((r.metrics["weighted_f1"] - 7.0 / 12.0).abs() < 1e-12, "weighted_f1 {}", r.metrics["weighted_f1"]);
    }

    #[test]
    fn regression_report_of_a_perfect_and_a_mean_predictor() {
        let y = [1.0, 2.0, 3.0, 4.0];
        let r = regression_report(&y, &y);
        assert_eq!(r.metrics["mse"], 0.0);
        assert_eq!(r.metrics["r2"], 1.0);
        let r = regression_report(&y, &[2.5; 4]);
        assert!(r.metrics["r2"].abs() < 1e-12);
        assert!((r.metrics["mae"] - 1.0).abs() < 1e-12);
    }

    fn tiny_text(model: &str) -> (Box<dyn Model>, Split) {
        use chi_nn::dataset::{Dataset, Inputs, Targets};
        let split = Split { inputs: Inputs::Tokens { seqs: vec![vec![3, 1, 4, 5, 2, 6], vec![2, 7]], vocab: 8 }, targets: Targets::Classes(vec![0, 1]) };
        let ds = Dataset { name: "t".into(), task: Task::Classification { classes: 2 }, train: split.clone(), valid: None, test: split.clone(), schema: None };
        // Hidden sizes only for the models that have them (the others refuse the setting).
        let hidden = if ["text-cnn", "ca-bsfe", "han"].contains(&model) { crate::train::ModelConfig::default().hidden } else { vec![4] };
        let cfg = crate::train::ModelConfig { hidden, ..Default::default() };
        let entry = crate::train::registry::model_entry(model).unwrap();
        let m = crate::train::registry::build_model(&entry, &cfg, &ds, &mut Rng::new(5)).unwrap();
        // Generic values: zero biases would leave ReLUs and gates at special points.
        let mut rng = Rng::new(6);
        for p in m.store().params() {
            let v: Vec<f32> = p.get().to_vec().iter().map(|x| x + rng.uniform(-0.3, 0.3) as f32).collect();
            p.set_values(v);
        }
        (m, split)
    }

    /// Saliency is the engine's gradient of the class logit with respect to the embedding rows
    /// (each token of the text occurs once, so its row's gradient is its own), summed in |·|.
    #[test]
    fn saliency_equals_the_gradient_of_the_embedding_rows() {
        for model in ["text-cnn", "gru", "lstm", "han", "rcnn"] {
            let (m, split) = tiny_text(model);
            let sal = token_attribution(m.as_ref(), Task::Classification { classes: 2 }, &split, 0, 1, Attribution::Saliency).unwrap();
            let out = m.forward(&split, &[0], false, &mut Rng::new(0)).output;
            out.reshape(&[2]).mul(&Tensor::from_vec(vec![0.0, 1.0], &[2])).sum().backward();
            let table = m.store().params().iter().find(|p| p.name() == "embedding.weight").cloned().unwrap();
            let g = table.grad().unwrap().to_vec();
            let e = g.len() / 8;
            for (t, &id) in [3usize, 1, 4, 5, 2, 6].iter().enumerate() {
                let want: f64 = g[id * e..(id + 1) * e].iter().map(|v| v.abs() as f64).sum();
                assert!((sal[t] - want).abs() <= 1e-6 * want.max(1e-3), "{model} token {t}: saliency {} vs engine {want}", sal[t]);
            }
            for p in m.store().params() {
                p.zero_grad();
            }
        }
    }

    /// Completeness of integrated gradients: Σ_t IG_t = f(x) − f(0) up to the quadrature error,
    /// and the embedding table is left as it was.
    #[test]
    fn integrated_gradients_are_complete_and_restore_the_table() {
        for model in ["bow", "text-cnn", "gru", "han", "rcnn"] {
            let (m, split) = tiny_text(model);
            let table = m.store().params().iter().find(|p| p.name() == "embedding.weight").cloned().unwrap();
            let before = table.get().to_vec();
            let task = Task::Classification { classes: 2 };
            let (ig, fx, f0) = integrated_gradients(m.as_ref(), task, &split, 0, 0, 200).unwrap();
            let err = ig.iter().sum::<f64>() - (fx - f0);
            assert!(err.abs() <= 1e-3 * (fx - f0).abs().max(1.0), "{model}: Σ IG {} vs f(x) − f(0) {} (error {err})", ig.iter().sum::<f64>(), fx - f0);
            assert_eq!(table.get().to_vec(), before, "{model}: the embedding table was not restored");
            assert!((fx - score(m.as_ref(), task, &split, 0, 0)).abs() < 1e-9);
        }
    }

    /// [`SALIENCY_MODELS`] is exactly the registered text models whose forward pass returns its
    /// embedding lookups and which have an embedding table, and the error for the others names
    /// them all.
    #[test]
    fn the_saliency_model_list_matches_the_models() {
        use chi_nn::userdata::DataKind;
        let text_models: Vec<String> = crate::train::registry::snapshot().models.iter().filter(|m| m.fits.contains(&DataKind::Text)).map(|m| m.name.clone()).collect();
        for name in SALIENCY_MODELS {
            assert!(text_models.iter().any(|m| m == name), "{name} is not a registered text model");
        }
        for name in &text_models {
            let (m, split) = tiny_text(name);
            let exposes = !m.forward(&split, &[0], false, &mut Rng::new(0)).embedded.is_empty();
            let table = m.store().params().iter().any(|p| p.name() == "embedding.weight");
            assert_eq!(exposes && table, SALIENCY_MODELS.contains(&name.as_str()), "{name}: exposes its embeddings: {exposes}, has a table: {table}");
            if !exposes {
                let e = token_attribution(m.as_ref(), Task::Classification { classes: 2 }, &split, 0, 0, Attribution::Saliency).unwrap_err();
                assert!(SALIENCY_MODELS.iter().all(|s| e.contains(s)), "{e}");
            }
        }
    }

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("plain"), "plain");
    }
}
