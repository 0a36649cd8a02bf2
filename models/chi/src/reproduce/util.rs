//! Small helpers shared by the experiments: curve files (CSV + SVG + PNG), one-metric
//! evaluation results for the trainer, and mean curves over runs.

use super::Ctx;
use crate::train::plot::{line_plot, LinePlot};
use chi_nn::data::ImageSet;
use chi_autodiff::Tensor;
use chi_nn::trainer::Metrics;
use std::fmt::Write as _;

/// A named curve: `(legend, points)`.
pub type Series = (String, Vec<(f64, f64)>);

/// Writes `series` as `{stem}.csv` (columns `series,x,y`; atomically), `{stem}.svg` (labelled)
/// and `{stem}.png` into the experiment directory; returns the file names written.
pub fn write_curves(ctx: &Ctx, stem: &str, title: &str, x_label: &str, y_label: &str, log_y: bool, series: &[Series]) -> Result<Vec<String>, String> {
    let mut csv = String::from("series,x,y\n");
    for (name, pts) in series {
        for (x, y) in pts {
            let _ = writeln!(csv, "{name},{x},{y}");
        }
    }
    let csv_name = format!("{stem}.csv");
    chi_nn::checkpoint::atomic_write(&ctx.path(&csv_name), csv.as_bytes())?;
    let mut files = vec![csv_name];
    for ext in ["svg", "png"] {
        let f = format!("{stem}.{ext}");
        line_plot(&ctx.path(&f), &LinePlot { title, x_label, y_label, log_y, series })?;
        files.push(f);
    }
    Ok(files)
}

/// Mean over runs of curves sampled at the same x values (`curves[run][i] = (x, y)`).
pub fn mean_curve(curves: &[Vec<(f64, f64)>]) -> Vec<(f64, f64)> {
    let Some(first) = curves.first() else { return Vec::new() };
    (0..first.len())
        .map(|i| {
            let ys: Vec<f64> = curves.iter().filter_map(|c| c.get(i).map(|p| p.1)).collect();
            (first[i].0, ys.iter().sum::<f64>() / ys.len() as f64)
        })
        .collect()
}

/// The result of an evaluation that measures one thing (`name = value`).
pub fn metric(name: &str, value: f64) -> Metrics {
    Metrics::from([(name.to_string(), value)])
}

/// Images `idx` of `set` as a `[len, 1, rows, cols]` batch, and their labels.
pub fn image_batch(set: &ImageSet, idx: &[usize]) -> (Tensor<f32>, Vec<usize>) {
    let px = set.rows * set.cols;
    let mut v = Vec::with_capacity(idx.len() * px);
    for &i in idx {
        v.extend_from_slice(&set.pixels[i * px..(i + 1) * px]);
    }
    (Tensor::from_vec(v, &[idx.len(), 1, set.rows, set.cols]), idx.iter().map(|&i| set.labels[i] as usize).collect())
}

/// Checks that an image experiment's (possibly subsampled) splits are large enough to run: at
/// least one training batch of `batch` examples and 8 test examples (the σ-map figures show 8),
/// so a small or truncated data file is an error naming the data set instead of a panic.
pub fn check_image_splits(what: &str, train: usize, test: usize, batch: usize) -> Result<(), String> {
    if train < batch || test < 8 {
        return Err(format!("{what}: {train} training and {test} test images (after subsampling); the experiment needs at least {batch} training and 8 test images"));
    }
    Ok(())
}

/// The Pang & Lee polarity data (reviews, sentences) with its directory, and GloVe 6B 50d:
/// what the text experiments on that data read.
pub struct PangLeeGlove {
    /// The data directory (for error messages naming `reviews.csv` / `sentences.csv`).
    pub dir: std::path::PathBuf,
    /// The 1,500 full reviews.
    pub reviews: Vec<chi_nn::data::LabeledText>,
    /// The 4,000 review sentences.
    pub sentences: Vec<chi_nn::data::LabeledText>,
    /// The word vectors.
    pub vectors: chi_nn::data::Embeddings,
}

/// Loads [`PangLeeGlove`] (errors say which dataset to fetch).
pub fn pang_lee_and_glove() -> Result<PangLeeGlove, String> {
    use chi_nn::data::{self, Dataset};
    let dir = data::require(Dataset::PangLee)?;
    let (reviews, sentences) = data::load_pang_lee(&dir).map_err(|e| e.to_string())?;
    let vectors = data::load_glove_dir(data::require(Dataset::Glove)?).map_err(|e| e.to_string())?;
    Ok(PangLeeGlove { dir, reviews, sentences, vectors })
}

/// The 4,000 sentences tokenised, with labels 0 (negative) and 1 (positive); an error naming
/// `sentences.csv` unless both polarities and at least `min` sentences are there.
pub fn polarity_sentences(d: &PangLeeGlove, min: usize) -> Result<(Vec<Vec<String>>, Vec<usize>), String> {
    let docs: Vec<Vec<String>> = d.sentences.iter().map(|t| chi_text::vocab::tokenize(&t.text)).collect();
    let labels: Vec<usize> = d.sentences.iter().map(|t| (t.label > 0) as usize).collect();
    if !(labels.contains(&0) && labels.contains(&1)) || docs.len() < min {
        return Err(format!("{}: need both polarities and at least {min} sentences", d.dir.join("sentences.csv").display()));
    }
    Ok((docs, labels))
}

/// Token-id rows embedded with a fixed table `[V, d]` into `[rows, T, d]`, zero past each row's
/// end (`T` = the longest row, at least 1), and each row's length (an empty row counts as 1).
pub fn embed_fixed(table: &Tensor<f32>, rows: &[&Vec<usize>]) -> (Tensor<f32>, Vec<usize>) {
    let d = table.dim(1);
    let t = rows.iter().map(|r| r.len()).max().unwrap_or(1).max(1);
    let mut v = vec![0f32; rows.len() * t * d];
    let tab = table.data();
    for (b, r) in rows.iter().enumerate() {
        for (p, &w) in r.iter().enumerate() {
            v[(b * t + p) * d..(b * t + p + 1) * d].copy_from_slice(&tab[w * d..(w + 1) * d]);
        }
    }
    (Tensor::from_vec(v, &[rows.len(), t, d]), rows.iter().map(|r| r.len().max(1)).collect())
}
