//! `chi explain`: why a trained text model decides as it does, word by word, from its
//! gradients — saliency Σ_d |∂score/∂e_td| (Tixier's notes, eq. 5), gradient × input and
//! integrated gradients with their completeness check, and the model's own attention for the
//! HAN — as a shaded HTML page, the same shading as a PNG, and a JSON of the numbers.

use crate::train::infer::{self, Attribution};
use chi_nn::dataset::{Split, Targets, Task};
use chi_nn::metrics::argmax;
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;

/// `chi explain RUN --text "…"` or `--input FILE`.
#[derive(Args, Debug, Clone)]
pub struct ExplainArgs {
    /// The trained text model: a run directory, a checkpoint or a `model.safetensors`.
    pub model: PathBuf,
    /// A text to explain (repeatable).
    #[arg(long)]
    pub text: Vec<String>,
    /// A file with one text per line (`-`: standard input); a CSV/TSV file or a folder is read as
    /// the model reads its data (a CSV's text column; in a folder, one text per file, sub-folders
    /// included). Texts longer than the model's maximum length are explained over their first
    /// words, with a warning.
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Explain this class instead of the predicted one.
    #[arg(long)]
    pub class: Option<String>,
    /// Integrated-gradients steps (midpoint rule), 1 to 10000.
    #[arg(long, default_value_t = 64, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10_000))]
    pub steps: usize,
    /// Directory for explain.html and explain.json (default: RUN/explain, or ./explain).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Also find, for every filter of a text CNN, the K n-grams of the training texts it
    /// responds to most (ngrams.json; the filters the output layer weighs most are printed), 1 to 100.
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100))]
    pub ngrams: Option<usize>,
    /// Also project the training texts' representations before the output layer to 2-D by PCA,
    /// at initialisation and after training, coloured by label (pca.png, pca.json).
    #[arg(long)]
    pub pca: bool,
}

/// Texts the n-gram and PCA analyses read at most (the first ones of the training split).
const MAX_ANALYSED_TEXTS: usize = 5000;

/// The training split's token sequences (at most [`MAX_ANALYSED_TEXTS`]) and their classes.
fn training_texts(t: &infer::Trained) -> Result<(Vec<Vec<usize>>, Vec<usize>, usize), String> {
    let chi_nn::dataset::Inputs::Tokens { seqs, vocab } = &t.dataset.train.inputs else {
        return Err("--ngrams and --pca need a text model".into());
    };
    if seqs.is_empty() {
        return Err("the run's training texts could not be read again (--ngrams and --pca analyse them)".into());
    }
    let n = seqs.len().min(MAX_ANALYSED_TEXTS);
    let classes = match &t.dataset.train.targets {
        Targets::Classes(c) => c[..n].to_vec(),
        Targets::Values(_) => vec![0; n],
    };
    Ok((seqs[..n].to_vec(), classes, *vocab))
}

fn token_split(seqs: Vec<Vec<usize>>, vocab: usize) -> Split {
    let n = seqs.len();
    Split { inputs: chi_nn::dataset::Inputs::Tokens { seqs, vocab }, targets: Targets::Classes(vec![0; n]) }
}

/// One filter's n-grams and how strongly the output layer reads it.
#[derive(Clone, Debug, Serialize)]
pub struct FilterReport {
    /// Filter width (n-gram length).
    pub width: usize,
    /// Index among the filters of its width.
    pub filter: usize,
    /// The output layer's weight on this filter, per class.
    pub head_weights: Vec<f64>,
    /// `(n-gram, activation)`, best first.
    pub top: Vec<(String, f64)>,
}

/// The vocabulary of a model trained on texts, or why `--ngrams` cannot run on it.
fn ngram_vocabulary(t: &infer::Trained) -> Result<&chi_nn::userdata::Vocab, String> {
    let schema = t.schema.as_ref().ok_or("--ngrams needs a text model trained on files")?;
    match &schema.encoder {
        chi_nn::dataset::Encoder::Text { vocab, .. } => Ok(vocab),
        _ => Err("--ngrams needs a text model".into()),
    }
}

/// Why `--ngrams` cannot run on a model without convolution filters.
fn no_filters(t: &infer::Trained) -> String {
    format!("--ngrams needs a convolutional text model (text-cnn); this run trained {}", t.cfg.model)
}

/// Why `--pca` cannot run on a model without a representation before its output layer.
fn no_features(t: &infer::Trained) -> String {
    format!("--pca needs a model with a representation before its output layer (text-cnn); this run trained {}", t.cfg.model)
}

/// `--ngrams K`: every filter's top n-grams over the training texts, written to ngrams.json;
/// prints the filters whose output weights differ most between classes.
fn ngram_report(t: &infer::Trained, k: usize, dir: &std::path::Path) -> Result<Vec<FilterReport>, String> {
    let words = ngram_vocabulary(t)?;
    let (docs, _, vocab) = training_texts(t)?;
    let Some((widths, probe)) = t.model.filter_maps(&token_split(vec![docs[0].clone()], vocab), &[0]) else {
        return Err(no_filters(t));
    };
    let nf = probe.first().map_or(0, |m| m.dim(2));
    let maps_of = |batch: &[&[usize]]| -> chi_text::Result<Vec<chi_autodiff::Tensor<f32>>> {
        let split = token_split(batch.iter().map(|s| s.to_vec()).collect(), vocab);
        let idx: Vec<usize> = (0..batch.len()).collect();
        Ok(t.model.filter_maps(&split, &idx).map(|(_, m)| m).unwrap_or_default())
    };
    let found = chi_text::explain::top_ngrams_with(&maps_of, &widths, nf, words.words(), &docs, k).map_err(|e| e.to_string())?;
    let head = t.model.store().params().iter().find(|p| p.name() == "head.weight").map(|p| (p.shape(), p.get().to_vec()));
    let reports: Vec<FilterReport> = found
        .into_iter()
        .enumerate()
        .map(|(i, f)| {
            let head_weights = match &head {
                // chi's Linear keeps its weight as [in, out]: row i holds feature i's weights.
                Some((shape, w)) if shape.len() == 2 && shape[0] == widths.len() * nf => w[i * shape[1]..(i + 1) * shape[1]].iter().map(|&v| v as f64).collect(),
                _ => Vec::new(),
            };
            FilterReport { width: f.width, filter: f.filter, head_weights, top: f.top }
        })
        .collect();
    let json = serde_json::to_string_pretty(&reports).map_err(|e| e.to_string())?;
    chi_nn::checkpoint::atomic_write(&dir.join("ngrams.json"), json.as_bytes())?;
    // With one logit (a binary task) the weight's sign says which class a filter favours.
    let spread = |r: &FilterReport| match r.head_weights.len() {
        1 => r.head_weights[0].abs(),
        _ => r.head_weights.iter().copied().fold(f64::NEG_INFINITY, f64::max) - r.head_weights.iter().copied().fold(f64::INFINITY, f64::min),
    };
    let mut order: Vec<&FilterReport> = reports.iter().filter(|r| !r.head_weights.is_empty()).collect();
    order.sort_by(|a, b| spread(b).total_cmp(&spread(a)));
    let names = infer::class_names(t, reports.first().map_or(0, |r| r.head_weights.len()).max(2));
    for r in order.iter().take(5) {
        let class = if r.head_weights.len() == 1 { usize::from(r.head_weights[0] > 0.0) } else { argmax(&r.head_weights) };
        let favours = names.get(class).cloned().unwrap_or_default();
        let grams: Vec<String> = r.top.iter().take(3).map(|(g, v)| format!("\"{g}\" {v:.2}")).collect();
        println!("filter {}-gram #{} (the output layer reads it for {favours}): {}", r.width, r.filter, grams.join(", "));
    }
    Ok(reports)
}

/// The 2-D PCA of the representations before the output layer, at initialisation and trained.
#[derive(Clone, Debug, Serialize)]
pub struct PcaReport {
    /// Texts projected.
    pub texts: usize,
    /// Variance explained by the two axes, at initialisation.
    pub explained_at_init: [f64; 2],
    /// Variance explained by the two axes, trained.
    pub explained_trained: [f64; 2],
    /// Projected points at initialisation.
    pub at_init: Vec<[f64; 2]>,
    /// Projected points, trained.
    pub trained: Vec<[f64; 2]>,
    /// The class of each text.
    pub classes: Vec<usize>,
}

/// `--pca`: writes pca.png and pca.json.
fn pca_report(t: &infer::Trained, dir: &std::path::Path) -> Result<PcaReport, String> {
    let (docs, classes, vocab) = training_texts(t)?;
    let split = token_split(docs, vocab);
    let n = split.len();
    let features = |m: &dyn crate::train::model::Model| -> Result<Vec<Vec<f64>>, String> {
        let mut rows = Vec::with_capacity(n);
        for start in (0..n).step_by(64) {
            let idx: Vec<usize> = (start..(start + 64).min(n)).collect();
            let z = m.features(&split, &idx).ok_or_else(|| no_features(t))?;
            let f = z.dim(1);
            rows.extend(z.to_vec().chunks(f).map(|r| r.iter().map(|&v| v as f64).collect::<Vec<f64>>()));
        }
        Ok(rows)
    };
    let trained = chi_text::explain::pca_2d(&features(t.model.as_ref())?).map_err(|e| e.to_string())?;
    // The run's own initialisation: the model as it was before its first step.
    let mut init = crate::train::RunStreams::new(t.cfg.seed).init;
    let fresh = crate::train::registry::build_model(&crate::train::registry::model_entry(&t.cfg.model)?, &t.cfg.model_options, &t.dataset, &mut init)?;
    let at_init = chi_text::explain::pca_2d(&features(fresh.as_ref())?).map_err(|e| e.to_string())?;
    let k = classes.iter().copied().max().map_or(1, |m| m + 1);
    let names = infer::class_names(t, k);
    let title = format!("{}: representations before the output layer, first two principal components", t.cfg.model);
    let init_title = format!("at initialisation ({:.0} % + {:.0} % of variance)", 100.0 * at_init.explained[0], 100.0 * at_init.explained[1]);
    let trained_title = format!("after {} steps ({:.0} % + {:.0} %)", t.step, 100.0 * trained.explained[0], 100.0 * trained.explained[1]);
    let panels = [
        crate::train::plot::ScatterPanel { title: &init_title, points: &at_init.coords, classes: &classes },
        crate::train::plot::ScatterPanel { title: &trained_title, points: &trained.coords, classes: &classes },
    ];
    let tmp = dir.join(".pca.png.tmp.png");
    crate::train::plot::scatter_panels(&tmp, &title, "PC 1", "PC 2", &names, &panels)?;
    std::fs::rename(&tmp, dir.join("pca.png")).map_err(|e| format!("{}: cannot write: {e}", dir.join("pca.png").display()))?;
    let report = PcaReport { texts: n, explained_at_init: at_init.explained, explained_trained: trained.explained, at_init: at_init.coords, trained: trained.coords, classes };
    let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    chi_nn::checkpoint::atomic_write(&dir.join("pca.json"), json.as_bytes())?;
    println!("PCA of {n} training texts: {init_title}; {trained_title}");
    Ok(report)
}

/// The explanation of one text.
#[derive(Clone, Debug, Serialize)]
pub struct TextExplanation {
    /// The text as given.
    pub text: String,
    /// Its tokens.
    pub words: Vec<String>,
    /// Class probabilities (empty for regression).
    pub probabilities: Vec<f64>,
    /// The predicted class.
    pub predicted: String,
    /// The class explained.
    pub class: String,
    /// Σ_d |∂score/∂e_td| per word.
    pub saliency: Vec<f64>,
    /// e_t · ∂score/∂e_t per word.
    pub grad_x_input: Vec<f64>,
    /// Integrated gradients per word.
    pub integrated_gradients: Vec<f64>,
    /// The explained score (logit or value) at the text.
    pub score: f64,
    /// The score with every word vector zero (the integrated-gradients baseline).
    pub baseline_score: f64,
    /// Σ integrated gradients − (score − baseline_score): the completeness error.
    pub completeness_error: f64,
    /// Integrated-gradients steps.
    pub steps: usize,
    /// The model's own attention weight of each word, for models with attention (the HAN:
    /// word weight × sentence weight, summing to 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attention: Option<Vec<f64>>,
}

/// Explains `texts` with the trained model `t`.
pub fn explain(t: &infer::Trained, texts: &[String], class: Option<&str>, steps: usize) -> Result<Vec<TextExplanation>, String> {
    let schema = t.schema.as_ref().ok_or("chi explain needs a text model trained on files (chi train --data FOLDER_OR_CSV)")?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (inputs, words, cut) = schema.encode_texts(&refs).map_err(String::from)?;
    let cut: Vec<usize> = cut.iter().enumerate().filter(|(_, &c)| c).map(|(i, _)| i + 1).collect();
    if let Some(&first) = cut.first() {
        let max = words[first - 1].len();
        let which = if cut.len() == 1 { format!("text {first} is") } else { format!("{} texts (the first: text {first}) are", cut.len()) };
        eprintln!("chi: warning: {which} longer than the {max} words the model reads; only the first {max} are explained");
    }
    let n = inputs.len();
    let task = t.dataset.task;
    let split = Split { inputs, targets: if task == Task::Regression { Targets::Values(vec![0.0; n]) } else { Targets::Classes(vec![0; n]) } };
    let probs = infer::outputs(t.model.as_ref(), task, &split, 64);
    let names = if task == Task::Regression { Vec::new() } else { infer::class_names(t, probs.first().map_or(0, |p| p.len())) };
    let wanted = match class {
        None => None,
        Some(c) => Some(
            names
                .iter()
                .position(|n| n == c)
                .or_else(|| schema.classes.iter().position(|n| n == c))
                .ok_or_else(|| format!("--class {c:?} is not a class of the model ({})", names.join(", ")))?,
        ),
    };
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let predicted = if task == Task::Regression { 0 } else { argmax(&probs[i]) };
        let c = wanted.unwrap_or(predicted);
        let saliency = infer::token_attribution(t.model.as_ref(), task, &split, i, c, Attribution::Saliency)?;
        let gxi = infer::token_attribution(t.model.as_ref(), task, &split, i, c, Attribution::GradTimesInput)?;
        let (ig, fx, f0) = infer::integrated_gradients(t.model.as_ref(), task, &split, i, c, steps)?;
        // A regression model's output is its standardised prediction: the score, the baseline
        // and every attribution are given in the target's own units, as `chi predict` gives it.
        let sd = infer::target_sd(t);
        let in_units = |v: Vec<f64>| -> Vec<f64> { v.into_iter().map(|x| x * sd).collect() };
        let (saliency, gxi, ig) = (in_units(saliency), in_units(gxi), in_units(ig));
        let un = |z: f64| if task == Task::Regression { schema.unscale(z) } else { z };
        let (fx, f0) = (un(fx), un(f0));
        let name = |k: usize| names.get(k).cloned().unwrap_or_else(|| "value".into());
        out.push(TextExplanation {
            text: texts[i].clone(),
            words: words[i].clone(),
            probabilities: if task == Task::Regression { Vec::new() } else { probs[i].clone() },
            predicted: name(predicted),
            class: name(c),
            saliency,
            grad_x_input: gxi,
            completeness_error: ig.iter().sum::<f64>() - (fx - f0),
            integrated_gradients: ig,
            score: fx,
            baseline_score: f0,
            steps,
            attention: t.model.attention(&split, i),
        });
    }
    Ok(out)
}

/// Most characters of a text shown in a caption or on the terminal, and of a word on the page
/// and in the picture; `explain.json` keeps them whole.
const SHOWN_TEXT_CHARS: usize = 300;
const SHOWN_WORD_CHARS: usize = 60;

/// `s`, cut to its first `max` characters and an ellipsis when longer: a pasted log line or an
/// encoded blob can be one token of megabytes, which the picture would lay out glyph by glyph.
fn shown(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_string(),
    }
}

/// For each text, the three attributions (and the model's attention, if it has one) as
/// shaded words: what the HTML page and the PNG show (long texts and words cut, [`shown`]).
fn shaded(ex: &[TextExplanation]) -> Vec<chi_text::explain::ShadedText> {
    use chi_text::explain::ShadedText;
    let mut docs = Vec::new();
    for e in ex {
        let p = e.probabilities.iter().copied().fold(f64::NAN, f64::max);
        let words: Vec<String> = e.words.iter().map(|w| shown(w, SHOWN_WORD_CHARS)).collect();
        let text = shown(&e.text, SHOWN_TEXT_CHARS);
        docs.push(ShadedText { caption: format!("“{text}” — predicted {} (p = {p:.3}); saliency for {}", e.predicted, e.class), words: words.clone(), scores: e.saliency.clone() });
        docs.push(ShadedText { caption: "gradient × input".into(), words: words.clone(), scores: e.grad_x_input.clone() });
        docs.push(ShadedText {
            caption: format!(
                "integrated gradients ({} steps; Σ = {:.4}, f(x) − f(0) = {:.4})",
                e.steps,
                e.integrated_gradients.iter().sum::<f64>(),
                e.score - e.baseline_score
            ),
            words: words.clone(),
            scores: e.integrated_gradients.clone(),
        });
        if let Some(a) = &e.attention {
            docs.push(ShadedText { caption: "the model's attention (word × sentence weight)".into(), words: words.clone(), scores: a.clone() });
        }
    }
    docs
}

/// The HTML page: for each text, the three attributions as shaded words.
pub fn html(title: &str, ex: &[TextExplanation]) -> Result<String, String> {
    chi_text::explain::render_html(title, &shaded(ex)).map_err(|e| e.to_string())
}

/// The same shaded words as a PNG (or SVG) picture, drawn by chi itself.
pub fn picture(path: &std::path::Path, title: &str, ex: &[TextExplanation]) -> Result<(), String> {
    let docs = shaded(ex);
    let parts: Vec<crate::train::plot::ShadedWords<'_>> = docs.iter().map(|d| crate::train::plot::ShadedWords { caption: &d.caption, words: &d.words, scores: &d.scores }).collect();
    crate::train::plot::shaded_text(path, title, &parts)
}

/// The text of `--input PATH`; `-` reads standard input. Bounded as any input file
/// ([`chi_nn::limits::read_file`]: an endless stream is an error at the limit), refused as
/// binary when its first 8 KiB hold a NUL byte, and refused with its line where it is not UTF-8
/// (as translate refuses it, rather than explained as replacement characters the model has never
/// seen). A leading byte-order mark (what some editors save first) is not part of the first text.
fn read_input(p: &std::path::Path) -> Result<String, String> {
    let binary = |h: &[u8]| if chi_nn::userdata::text::looks_binary(h) { Err("looks like a binary file (it has NUL bytes), not text".to_string()) } else { Ok(()) };
    let stdin = p == std::path::Path::new("-");
    let read = if stdin { chi_nn::limits::read_stream_checked(std::io::stdin().lock(), binary) } else { chi_nn::limits::read_file_checked(p, binary) };
    let name = if stdin { "standard input".to_string() } else { p.display().to_string() };
    let bytes = read.map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("{name}: no such file or directory"),
        _ if e.raw_os_error().is_none() => format!("{name}: {e}"),
        _ => format!("{name}: cannot read: {e}"),
    })?;
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(&bytes);
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = 1 + bytes[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count();
        format!("{name}: line {line} is not UTF-8")
    })?;
    Ok(text.to_string())
}

/// Whether the model can do what `--ngrams` and `--pca` ask, tried on one training text.
fn check_analyses(t: &infer::Trained, args: &ExplainArgs) -> Result<(), String> {
    if args.ngrams.is_none() && !args.pca {
        return Ok(());
    }
    let (docs, _, vocab) = training_texts(t)?;
    let one = token_split(vec![docs[0].clone()], vocab);
    if args.ngrams.is_some() {
        ngram_vocabulary(t)?;
        if t.model.filter_maps(&one, &[0]).is_none() {
            return Err(no_filters(t));
        }
    }
    if args.pca && t.model.features(&one, &[0]).is_none() {
        return Err(no_features(t));
    }
    Ok(())
}

/// Runs `chi explain`.
pub fn run(args: &ExplainArgs) -> Result<(), String> {
    if args.text.iter().any(|t| t.trim().is_empty()) {
        return Err("--text is empty: give the text to explain".into());
    }
    let mut texts = args.text.clone();
    // A CSV (or a folder) is read as the model reads new files: a CSV's text column, not its
    // raw lines with the header and the labels.
    let tabular = |p: &std::path::Path| matches!(chi_nn::dataset::Format::infer(p), Ok(chi_nn::dataset::Format::Csv | chi_nn::dataset::Format::Tsv | chi_nn::dataset::Format::Folder));
    let by_schema = args.input.as_deref().filter(|p| tabular(p));
    if let Some(p) = args.input.as_deref().filter(|p| !tabular(p)) {
        let text = read_input(p)?;
        let before = texts.len();
        texts.extend(text.lines().filter(|l| !l.trim().is_empty()).map(String::from));
        if texts.len() == before && args.ngrams.is_none() && !args.pca {
            return Err(format!("{}: no text to explain (the file is empty or blank)", p.display()));
        }
    }
    if texts.is_empty() && by_schema.is_none() && args.ngrams.is_none() && !args.pca {
        return Err("nothing to explain: give --text \"…\" or --input FILE (or --ngrams K / --pca)".into());
    }
    // The n-gram and PCA analyses read the training texts again.
    if crate::train::translation::seq2seq_weights(&args.model).is_some() {
        return Err(format!("{} is a seq2seq model: chi translate {} --heatmap DIR draws the attention of each output word over the source", args.model.display(), args.model.display()));
    }
    let t = infer::load_trained(&args.model, args.ngrams.is_some() || args.pca)?;
    if let Some(kind) = t.schema.as_ref().map(|sc| sc.kind).filter(|k| *k != chi_nn::dataset::DataKind::Text) {
        return Err(format!("{}: chi explain explains text models word by word; this {} model was trained on {} data", args.model.display(), t.cfg.model, kind.name()));
    }
    if let Some(p) = by_schema {
        let schema = t.schema.as_ref().ok_or_else(|| format!("{}: a CSV or folder is read by the model's data schema, and this model was not trained on files; give one text per line", p.display()))?;
        let (found, _) = schema.read_texts(p).map_err(|e| e.to_string())?;
        if found.is_empty() && texts.is_empty() {
            return Err(format!("{}: no text to explain", p.display()));
        }
        texts.extend(found);
    }
    // Every analysis asked for is checked possible before any file is written: a refused flag
    // after the pages of the others would leave a half-finished output.
    check_analyses(&t, args)?;
    let names = ["explain.html", "explain.png", "explain.json", "ngrams.json", "pca.png", "pca.json"];
    if let Some(dir) = &args.dir {
        // An earlier explain wrote at least one of its JSON files (a list of texts, or an object).
        let ours = |d: &std::path::Path| ["explain.json", "ngrams.json", "pca.json"].iter().any(|n| crate::train::rundir::json_with_keys(&d.join(n), &[]));
        crate::train::rundir::check_output_dir("--dir", dir, &t.cfg.data, args.input.as_deref(), &names, ours)?;
    }
    let dir = args.dir.clone().unwrap_or_else(|| t.run_dir.as_ref().map_or_else(|| PathBuf::from("explain"), |d| d.join("explain")));
    // An input that is one of the files about to be written would be lost with the first of them.
    if let Some(p) = args.input.as_deref() {
        if names.iter().any(|n| chi_nn::checkpoint::same_file(p, &dir.join(n))) {
            return Err(format!("--input {} is one of the files chi explain writes in {}; read it from elsewhere, or give another --dir", p.display(), dir.display()));
        }
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
    if !texts.is_empty() {
        explain_texts(&t, args, &texts, &dir)?;
    }
    if let Some(k) = args.ngrams {
        ngram_report(&t, k, &dir)?;
        println!("wrote {}", dir.join("ngrams.json").display());
    }
    if args.pca {
        pca_report(&t, &dir)?;
        println!("wrote {} and {}", dir.join("pca.png").display(), dir.join("pca.json").display());
    }
    Ok(())
}

/// The pages of `texts`: explain.html, explain.png and explain.json in `dir`.
fn explain_texts(t: &infer::Trained, args: &ExplainArgs, texts: &[String], dir: &std::path::Path) -> Result<(), String> {
    let ex = explain(t, texts, args.class.as_deref(), args.steps)?;
    let page = html(&format!("chi explain: {} ({})", t.cfg.model, t.weights.display()), &ex)?;
    chi_nn::checkpoint::atomic_write(&dir.join("explain.html"), page.as_bytes())?;
    // The picture is drawn to a temporary name and renamed, like every other output.
    let tmp = dir.join(".explain.png.tmp.png");
    picture(&tmp, &format!("chi explain: {}", t.cfg.model), &ex)?;
    std::fs::rename(&tmp, dir.join("explain.png")).map_err(|e| format!("{}: cannot write: {e}", dir.join("explain.png").display()))?;
    let json = serde_json::to_string_pretty(&ex).map_err(|e| e.to_string())?;
    chi_nn::checkpoint::atomic_write(&dir.join("explain.json"), json.as_bytes())?;
    for e in &ex {
        let mut top: Vec<(&String, f64)> = e.words.iter().zip(e.integrated_gradients.iter().copied()).collect();
        top.sort_by(|a, b| b.1.total_cmp(&a.1));
        let top: Vec<String> = top.iter().take(3).map(|(w, v)| format!("{} {v:+.3}", shown(w, SHOWN_WORD_CHARS))).collect();
        println!(
            "{:?}: predicted {}; class {} — top integrated gradients: {} (Σ IG − (f(x) − f(0)) = {:.2e})",
            shown(&e.text, SHOWN_TEXT_CHARS),
            e.predicted,
            e.class,
            top.join(", "),
            e.completeness_error
        );
    }
    println!("wrote {}, {} and {}", dir.join("explain.html").display(), dir.join("explain.png").display(), dir.join("explain.json").display());
    Ok(())
}
