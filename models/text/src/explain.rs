//! Interpretation of text classifiers from gradients.
//!
//! All attributions are computed on the embedded input `x [1, L, E]` (one document, its words'
//! embedding rows) for a score function `f` mapping a batch of embedded documents `[M, L, E]`
//! to one score each `[M]` (typically a class logit):
//!
//! * **saliency** of word `i`: `Σ_e |∂f/∂x_{i,e}|` — the magnitude of the score's gradient with
//!   respect to the word's embedding, summed over the embedding dimension (Tixier, "Notes on
//!   deep learning for NLP", eq. 5; Li et al. 2016 "Visualizing and understanding neural models
//!   in NLP");
//! * **gradient × input**: `Σ_e x_{i,e} ∂f/∂x_{i,e}` (signed; Shrikumar et al. 2016);
//! * **integrated gradients** (Sundararajan et al. 2017, "Axiomatic attribution for deep
//!   networks") with the all-zero embedding as baseline `x'`:
//!   `IG_i = Σ_e (x − x')_{i,e} ∫₀¹ ∂f/∂x_{i,e}(x' + α(x − x')) dα`, the integral by the
//!   trapezoidal rule over `N` steps. Completeness: `Σ_i IG_i = f(x) − f(x')` up to the
//!   quadrature error, reported as [`IntegratedGradients::completeness_gap`].
//!
//! Gradients come from the engine: the embedded input is the variable of a [`chi_autodiff::grad`]
//! call. Besides attributions the module gives the top n-grams per convolution filter
//! (predictive regions), 2-D PCA of document embeddings, and HTML/JSON rendering.

use crate::cnn::TextCnn;
use crate::error::{Result, TextError};
use crate::vocab::Vocab;
use chi_autodiff::{grad, no_grad, Float, GradOptions, Tensor};
use serde::Serialize;

/// Gradient-based scores of each word of one document.
#[derive(Clone, Debug, Serialize)]
pub struct WordScores {
    /// `f(x)`.
    pub score: f64,
    /// `∂f/∂x`, `[len, E]` row-major (real words only).
    pub gradient: Vec<f64>,
    /// `Σ_e |∂f/∂x_{i,e}|` per word.
    pub saliency: Vec<f64>,
    /// `Σ_e x_{i,e} ∂f/∂x_{i,e}` per word.
    pub grad_x_input: Vec<f64>,
}

fn check_input<T: Float>(op: &'static str, x: &Tensor<T>, len: usize) -> Result<(usize, usize)> {
    if x.rank() != 3 || x.dim(0) != 1 {
        return Err(TextError::Invalid { op, msg: format!("embedded input must be [1, L, E], got {:?}", x.shape()) });
    }
    if len > x.dim(1) {
        return Err(TextError::Length { op, row: 0, length: len, max: x.dim(1) });
    }
    Ok((x.dim(1), x.dim(2)))
}

/// `f` and `∂f/∂x` for a batch `[M, L, E]` of embedded inputs (summing the `M` scores, whose
/// gradients are independent).
fn scores_and_grads<T: Float>(f: &dyn Fn(&Tensor<T>) -> Result<Tensor<T>>, xs: &Tensor<T>) -> Result<(Vec<f64>, Vec<f64>)> {
    let leaf = xs.detach().requires_grad();
    let s = f(&leaf)?;
    if s.numel() != xs.dim(0) {
        return Err(TextError::Shape { op: "explain score function", expected: vec![xs.dim(0)], got: s.shape().to_vec() });
    }
    let g = grad(&[&s.sum()], &[&leaf], None, GradOptions::default())?;
    Ok((s.data().iter().map(|v| v.to_f64()).collect(), g[0].data().iter().map(|v| v.to_f64()).collect()))
}

/// Saliency and gradient × input of the first `len` words of `x [1, L, E]` for the score
/// function `f: [M, L, E] → [M]`.
pub fn saliency<T: Float>(f: &dyn Fn(&Tensor<T>) -> Result<Tensor<T>>, x: &Tensor<T>, len: usize) -> Result<WordScores> {
    let (_, e) = check_input("saliency", x, len)?;
    let (s, g) = scores_and_grads(f, x)?;
    let xv = x.data();
    let gradient = g[..len * e].to_vec();
    let saliency = (0..len).map(|i| g[i * e..(i + 1) * e].iter().map(|v| v.abs()).sum()).collect();
    let grad_x_input = (0..len).map(|i| (0..e).map(|k| g[i * e + k] * xv[i * e + k].to_f64()).sum()).collect();
    Ok(WordScores { score: s[0], gradient, saliency, grad_x_input })
}

/// Integrated-gradient attributions of one document.
#[derive(Clone, Debug, Serialize)]
pub struct IntegratedGradients {
    /// `IG_i` per word.
    pub attributions: Vec<f64>,
    /// `f(x)`.
    pub score: f64,
    /// `f(x')` at the zero baseline.
    pub baseline_score: f64,
    /// Quadrature steps `N`.
    pub steps: usize,
    /// `|Σ_i IG_i − (f(x) − f(x'))|` (the quadrature error; attributions of padding positions,
    /// if any, are included in the sum).
    pub completeness_gap: f64,
}

/// Integrated gradients of the first `len` words of `x [1, L, E]` against the all-zero
/// embedding baseline, with `steps ≥ 1` trapezoidal steps (`steps + 1` gradient evaluations,
/// batched `chunk` at a time).
pub fn integrated_gradients<T: Float>(
    f: &dyn Fn(&Tensor<T>) -> Result<Tensor<T>>,
    x: &Tensor<T>,
    len: usize,
    steps: usize,
    chunk: usize,
) -> Result<IntegratedGradients> {
    let (l, e) = check_input("integrated_gradients", x, len)?;
    if steps == 0 {
        return Err(TextError::Invalid { op: "integrated_gradients", msg: "steps must be ≥ 1".into() });
    }
    let xv: Vec<f64> = x.data().iter().map(|v| v.to_f64()).collect();
    let n = l * e;
    let mut avg = vec![0.0; n];
    let (mut f0, mut f1) = (0.0, 0.0);
    let alphas: Vec<usize> = (0..=steps).collect();
    for ks in alphas.chunks(chunk.max(1)) {
        let mut data = Vec::with_capacity(ks.len() * n);
        for &k in ks {
            let a = k as f64 / steps as f64;
            data.extend(xv.iter().map(|&v| T::from_f64(a * v)));
        }
        let (s, g) = scores_and_grads(f, &Tensor::from_vec(data, &[ks.len(), l, e]))?;
        for (m, &k) in ks.iter().enumerate() {
            let w = if k == 0 || k == steps { 0.5 } else { 1.0 } / steps as f64;
            for (a, gv) in avg.iter_mut().zip(&g[m * n..(m + 1) * n]) {
                *a += w * gv;
            }
            if k == 0 {
                f0 = s[m];
            }
            if k == steps {
                f1 = s[m];
            }
        }
    }
    let per_pos: Vec<f64> = (0..l).map(|i| (0..e).map(|c| xv[i * e + c] * avg[i * e + c]).sum()).collect();
    let total: f64 = per_pos.iter().sum();
    Ok(IntegratedGradients {
        attributions: per_pos[..len].to_vec(),
        score: f1,
        baseline_score: f0,
        steps,
        completeness_gap: (total - (f1 - f0)).abs(),
    })
}

/// The score function of class `class` of a text CNN for documents of length `len`:
/// `[M, L, E] → [M]` logits (the model should be in evaluation mode).
pub fn cnn_score_fn<T: Float>(model: &TextCnn<T>, class: usize, len: usize) -> impl Fn(&Tensor<T>) -> Result<Tensor<T>> + '_ {
    move |x: &Tensor<T>| {
        let m = x.dim(0);
        let logits = model.logits_embedded(x, &vec![len; m])?;
        Ok(logits.narrow(1, class, 1).reshape(&[m]))
    }
}

/// Everything [`explain_cnn`] computes for one document.
#[derive(Clone, Debug, Serialize)]
pub struct Explanation {
    /// The words.
    pub words: Vec<String>,
    /// The explained class.
    pub class: usize,
    /// The predicted class.
    pub predicted: usize,
    /// Softmax probabilities of every class.
    pub probabilities: Vec<f64>,
    /// Saliency and gradient × input.
    pub gradients: WordScores,
    /// Integrated gradients.
    pub integrated: IntegratedGradients,
}

/// Saliency, gradient × input and integrated gradients (`ig_steps`) of a text CNN for the
/// tokens `words` and class `class` (the predicted class if `None`). Puts the model in
/// evaluation mode.
pub fn explain_cnn<T: Float>(model: &TextCnn<T>, vocab: &Vocab, words: &[String], class: Option<usize>, ig_steps: usize) -> Result<Explanation> {
    model.set_training(false);
    if words.is_empty() {
        return Err(TextError::Invalid { op: "explain_cnn", msg: "no words to explain".into() });
    }
    let ids = vocab.encode(words);
    let (x, _) = no_grad(|| model.embed(&[ids.as_slice()]))?;
    let logits = no_grad(|| model.logits_embedded(&x, &[ids.len()]))?;
    let lv: Vec<f64> = logits.data().iter().map(|v| v.to_f64()).collect();
    let m = lv.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let z: f64 = lv.iter().map(|v| (v - m).exp()).sum();
    let probabilities: Vec<f64> = lv.iter().map(|v| (v - m).exp() / z).collect();
    let predicted = logits.argmax_axis(1)[0];
    let class = class.unwrap_or(predicted);
    if class >= lv.len() {
        return Err(TextError::Id { op: "explain_cnn", id: class, count: lv.len() });
    }
    let f = cnn_score_fn(model, class, ids.len());
    let gradients = saliency(&f, &x, ids.len())?;
    let integrated = integrated_gradients(&f, &x, ids.len(), ig_steps, 64)?;
    Ok(Explanation { words: words.to_vec(), class, predicted, probabilities, gradients, integrated })
}

/// The n-grams that most activate one convolution filter.
#[derive(Clone, Debug, Serialize)]
pub struct FilterNgrams {
    /// Filter width `h` (n-gram length).
    pub width: usize,
    /// Index of the filter among those of its width.
    pub filter: usize,
    /// `(n-gram, activation)`, best first, distinct n-grams.
    pub top: Vec<(String, f64)>,
}

/// For every filter of a text CNN, the `k` distinct n-grams of `docs` with the highest
/// activation (Tixier's "predictive regions"; a window reaching past a document's end is
/// shown with `_` for the zero padding).
pub fn top_ngrams<T: Float>(model: &TextCnn<T>, vocab: &Vocab, docs: &[Vec<usize>], k: usize) -> Result<Vec<FilterNgrams>> {
    model.set_training(false);
    let maps_of = |refs: &[&[usize]]| {
        no_grad(|| -> Result<Vec<Tensor<T>>> {
            let (x, lengths) = model.embed(refs)?;
            model.feature_maps(&x, &lengths)
        })
    };
    top_ngrams_with(&maps_of, &model.config().widths, model.config().filters, &vocab.words, docs, k)
}

/// [`top_ngrams`] for any convolutional text model: `maps_of` gives, for a batch of
/// documents, one activation map `[batch, regions, filters]` per width of `widths` (region `i`
/// is the window starting at word `i`); `words[id]` names a word id.
pub fn top_ngrams_with<T: Float>(maps_of: &dyn Fn(&[&[usize]]) -> Result<Vec<Tensor<T>>>, widths: &[usize], nf: usize, words: &[String], docs: &[Vec<usize>], k: usize) -> Result<Vec<FilterNgrams>> {
    let mut best: Vec<Vec<(String, f64)>> = vec![Vec::new(); widths.len() * nf];
    for batch in docs.chunks(64) {
        let refs: Vec<&[usize]> = batch.iter().map(|d| d.as_slice()).collect();
        let maps = maps_of(&refs)?;
        if maps.len() != widths.len() || maps.iter().any(|m| m.rank() != 3 || m.dim(0) != batch.len() || m.dim(2) != nf) {
            return Err(TextError::Invalid { op: "top_ngrams", msg: format!("expected {} maps [{}, regions, {nf}]", widths.len(), batch.len()) });
        }
        for (wi, (m, &h)) in maps.iter().zip(widths).enumerate() {
            let p = m.dim(1);
            let d = m.data();
            for (r, doc) in batch.iter().enumerate() {
                let valid = (doc.len() + 1).saturating_sub(h).max(1);
                for i in 0..valid.min(p) {
                    let gram = || (i..i + h).map(|j| doc.get(j).and_then(|&id| words.get(id)).map_or("_", String::as_str)).collect::<Vec<_>>().join(" ");
                    for f in 0..nf {
                        let v = d[(r * p + i) * nf + f].to_f64();
                        let list = &mut best[wi * nf + f];
                        if list.len() == k && v <= list[k - 1].1 {
                            continue;
                        }
                        let g = gram();
                        match list.iter().position(|(s, _)| *s == g) {
                            Some(pos) if list[pos].1 >= v => continue,
                            Some(pos) => {
                                list.remove(pos);
                            }
                            None => {}
                        }
                        let at = list.iter().position(|(_, a)| *a < v).unwrap_or(list.len());
                        list.insert(at, (g, v));
                        list.truncate(k);
                    }
                }
            }
        }
    }
    Ok(best
        .into_iter()
        .enumerate()
        .map(|(i, top)| FilterNgrams { width: widths[i / nf], filter: i % nf, top })
        .collect())
}

/// Document embeddings (the penultimate layer `z`) of a text CNN in evaluation mode.
pub fn document_embeddings<T: Float>(model: &TextCnn<T>, docs: &[Vec<usize>]) -> Result<Vec<Vec<f64>>> {
    model.set_training(false);
    let mut out = Vec::with_capacity(docs.len());
    for batch in docs.chunks(64) {
        let refs: Vec<&[usize]> = batch.iter().map(|d| d.as_slice()).collect();
        let z = no_grad(|| -> Result<Tensor<T>> {
            let (x, lengths) = model.embed(&refs)?;
            model.features(&x, &lengths)
        })?;
        let f = z.dim(1);
        out.extend(z.data().chunks(f).map(|r| r.iter().map(|v| v.to_f64()).collect()));
    }
    Ok(out)
}

/// A 2-D principal-component projection.
#[derive(Clone, Debug, Serialize)]
pub struct Pca2 {
    /// Projected points (centred data on the first two principal axes).
    pub coords: Vec<[f64; 2]>,
    /// The two principal axes (unit vectors).
    pub axes: [Vec<f64>; 2],
    /// Fraction of the total variance each axis explains.
    pub explained: [f64; 2],
}

/// Projects `rows` (all the same length ≥ 1) on their first two principal components, found by
/// power iteration on `XᵀX` with deflation (deterministic start; 500 iterations).
pub fn pca_2d(rows: &[Vec<f64>]) -> Result<Pca2> {
    let op = "pca_2d";
    let d = rows.first().map_or(0, |r| r.len());
    if rows.len() < 2 || d == 0 || rows.iter().any(|r| r.len() != d) {
        return Err(TextError::Invalid { op, msg: format!("need ≥ 2 rows of one positive length, got {} rows", rows.len()) });
    }
    let n = rows.len();
    let mean: Vec<f64> = (0..d).map(|j| rows.iter().map(|r| r[j]).sum::<f64>() / n as f64).collect();
    let x: Vec<Vec<f64>> = rows.iter().map(|r| r.iter().zip(&mean).map(|(a, m)| a - m).collect()).collect();
    let total: f64 = x.iter().flatten().map(|v| v * v).sum();
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(p, q)| p * q).sum::<f64>();
    let mut axes: Vec<Vec<f64>> = Vec::new();
    let mut explained = [0.0; 2];
    for (c, ex) in explained.iter_mut().enumerate() {
        let mut v: Vec<f64> = (0..d).map(|j| 1.0 + ((j * 7 + c * 13) % 11) as f64 / 11.0).collect();
        let mut lambda = 0.0;
        for _ in 0..500 {
            // w = Xᵀ(X v), with earlier axes projected out.
            let xv: Vec<f64> = x.iter().map(|r| dot(r, &v)).collect();
            let mut w = vec![0.0; d];
            for (r, s) in x.iter().zip(&xv) {
                for (wj, rj) in w.iter_mut().zip(r) {
                    *wj += s * rj;
                }
            }
            for a in &axes {
                let p = dot(&w, a);
                for (wj, aj) in w.iter_mut().zip(a) {
                    *wj -= p * aj;
                }
            }
            let norm = dot(&w, &w).sqrt();
            if norm == 0.0 {
                break;
            }
            lambda = dot(&w, &v);
            v = w.into_iter().map(|t| t / norm).collect();
        }
        *ex = if total > 0.0 { lambda / total } else { 0.0 };
        axes.push(v);
    }
    let coords = x.iter().map(|r| [dot(r, &axes[0]), dot(r, &axes[1])]).collect();
    let second = axes.pop().unwrap_or_default();
    let first = axes.pop().unwrap_or_default();
    Ok(Pca2 { coords, axes: [first, second], explained })
}

/// One shaded document of an HTML page.
#[derive(Clone, Debug, Serialize)]
pub struct ShadedText {
    /// A heading (e.g. "saliency, class positive (p = 0.93)").
    pub caption: String,
    /// The words.
    pub words: Vec<String>,
    /// One score per word; the background of word `i` is red (positive) or blue (negative) with
    /// opacity `|score_i| / max_j |score_j|`.
    pub scores: Vec<f64>,
}

fn escape(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '&' => "&amp;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&#39;".to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// A self-contained HTML page (no scripts, no external resources) with each document's words
/// shaded by their scores; each word's exact score is in its `title` (hover) and a
/// `data-score` attribute.
pub fn render_html(title: &str, docs: &[ShadedText]) -> Result<String> {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>");
    h.push_str(&escape(title));
    h.push_str("</title>\n<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;line-height:2}\
        span.w{padding:0.15em 0.2em;margin:0 0.05em;border-radius:0.2em}h2{font-size:1em;margin-bottom:0}</style></head><body>\n<h1>");
    h.push_str(&escape(title));
    h.push_str("</h1>\n<p>Red: positive score, blue: negative; opacity ∝ |score| (normalised per document).</p>\n");
    for d in docs {
        if d.words.len() != d.scores.len() {
            return Err(TextError::Shape { op: "render_html", expected: vec![d.words.len()], got: vec![d.scores.len()] });
        }
        let m = d.scores.iter().map(|v| v.abs()).fold(0.0, f64::max);
        h.push_str("<h2>");
        h.push_str(&escape(&d.caption));
        h.push_str("</h2>\n<p class=\"doc\">");
        for (w, &s) in d.words.iter().zip(&d.scores) {
            let a = if m > 0.0 && s.is_finite() { s.abs() / m } else { 0.0 };
            let rgb = if s >= 0.0 { "220,40,40" } else { "40,90,220" };
            h.push_str(&format!(
                "<span class=\"w\" style=\"background:rgba({rgb},{a:.3})\" title=\"{s:.4e}\" data-score=\"{s:e}\">{}</span> ",
                escape(w)
            ));
        }
        h.push_str("</p>\n");
    }
    h.push_str("</body></html>\n");
    Ok(h)
}

/// The HTML page of an [`Explanation`]: saliency, gradient × input and integrated gradients.
pub fn explanation_html(e: &Explanation, class_names: &[String]) -> Result<String> {
    let name = |c: usize| class_names.get(c).cloned().unwrap_or_else(|| c.to_string());
    let p = e.probabilities.get(e.class).copied().unwrap_or(f64::NAN);
    let docs = [
        ShadedText { caption: format!("saliency Σ|∂f/∂x|, class {} (p = {p:.3})", name(e.class)), words: e.words.clone(), scores: e.gradients.saliency.clone() },
        ShadedText { caption: "gradient × input".into(), words: e.words.clone(), scores: e.gradients.grad_x_input.clone() },
        ShadedText {
            caption: format!(
                "integrated gradients ({} steps; Σ = {:.4}, f(x) − f(0) = {:.4})",
                e.integrated.steps,
                e.integrated.attributions.iter().sum::<f64>(),
                e.integrated.score - e.integrated.baseline_score
            ),
            words: e.words.clone(),
            scores: e.integrated.attributions.clone(),
        },
    ];
    render_html(&format!("Why {}? (predicted {})", name(e.class), name(e.predicted)), &docs)
}

/// Any serialisable result as pretty JSON.
pub fn to_json<S: Serialize>(value: &S) -> Result<String> {
    serde_json::to_string_pretty(value).map_err(|e| TextError::Invalid { op: "to_json", msg: e.to_string() })
}
