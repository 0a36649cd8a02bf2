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
    /// A file with one text per line.
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
    let (inputs, words) = schema.encode_texts(&refs).map_err(String::from)?;
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

/// For each text, the three attributions (and the model's attention, if it has one) as
/// shaded words: what the HTML page and the PNG show.
fn shaded(ex: &[TextExplanation]) -> Vec<chi_text::explain::ShadedText> {
    use chi_text::explain::ShadedText;
    let mut docs = Vec::new();
    for e in ex {
        let p = e.probabilities.iter().copied().fold(f64::NAN, f64::max);
        docs.push(ShadedText { caption: format!("“{}” — predicted {} (p = {p:.3}); saliency for {}", e.text, e.predicted, e.class), words: e.words.clone(), scores: e.saliency.clone() });
        docs.push(ShadedText { caption: "gradient × input".into(), words: e.words.clone(), scores: e.grad_x_input.clone() });
        docs.push(ShadedText {
            caption: format!(
                "integrated gradients ({} steps; Σ = {:.4}, f(x) − f(0) = {:.4})",
                e.steps,
                e.integrated_gradients.iter().sum::<f64>(),
                e.score - e.baseline_score
            ),
            words: e.words.clone(),
            scores: e.integrated_gradients.clone(),
        });
        if let Some(a) = &e.attention {
            docs.push(ShadedText { caption: "the model's attention (word × sentence weight)".into(), words: e.words.clone(), scores: a.clone() });
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
    // Captions quote the text; keep them to one line of the picture.
    let captions: Vec<String> = docs
        .iter()
        .map(|d| {
            let c: Vec<char> = d.caption.chars().collect();
            if c.len() > 110 {
                c[..109].iter().chain(['…'].iter()).collect()
            } else {
                d.caption.clone()
            }
        })
        .collect();
    let parts: Vec<crate::train::plot::ShadedWords<'_>> = docs.iter().zip(&captions).map(|(d, c)| crate::train::plot::ShadedWords { caption: c, words: &d.words, scores: &d.scores }).collect();
    crate::train::plot::shaded_text(path, title, &parts)
}

/// Runs `chi explain`.
pub fn run(args: &ExplainArgs) -> Result<(), String> {
    let mut texts = args.text.clone();
    if let Some(p) = &args.input {
        let bytes = std::fs::read(p).map_err(|e| format!("{}: cannot read: {e}", p.display()))?;
        if chi_nn::userdata::text::looks_binary(&bytes) {
            return Err(format!("{}: looks like a binary file, not text", p.display()));
        }
        texts.extend(String::from_utf8_lossy(&bytes).lines().filter(|l| !l.trim().is_empty()).map(String::from));
    }
    if texts.is_empty() {
        return Err("nothing to explain: give --text \"…\" or --input FILE".into());
    }
    let t = infer::load_trained(&args.model, false)?;
    let ex = explain(&t, &texts, args.class.as_deref(), args.steps)?;
    let dir = args.dir.clone().unwrap_or_else(|| t.run_dir.as_ref().map_or_else(|| PathBuf::from("explain"), |d| d.join("explain")));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
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
        let top: Vec<String> = top.iter().take(3).map(|(w, v)| format!("{w} {v:+.3}")).collect();
        println!(
            "{:?}: predicted {}; class {} — top integrated gradients: {} (Σ IG − (f(x) − f(0)) = {:.2e})",
            e.text,
            e.predicted,
            e.class,
            top.join(", "),
            e.completeness_error
        );
    }
    println!("wrote {}, {} and {}", dir.join("explain.html").display(), dir.join("explain.png").display(), dir.join("explain.json").display());
    Ok(())
}
