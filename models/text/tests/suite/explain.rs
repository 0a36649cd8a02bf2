//! Gradient-based interpretation: saliency against direct gradients and finite differences,
//! integrated-gradients completeness, predictive n-grams, PCA, HTML/JSON.

use crate::common;

use chi_autodiff::{grad, no_grad, GradOptions, Rng, Tensor};
use chi_text::cnn::{EmbeddingMode, TextCnn, TextCnnConfig};
use chi_text::deps::OptimConfig;
use chi_text::explain::{
    cnn_score_fn, document_embeddings, explain_cnn, explanation_html, integrated_gradients, pca_2d, render_html, saliency, to_json, top_ngrams,
    ShadedText,
};
use chi_text::train::{fit, FitConfig};
use chi_text::vocab::Vocab;
use common::{perturb, planted_corpus};

fn model() -> TextCnn<f64> {
    let cfg = TextCnnConfig { vocab: 12, emb_dim: 4, widths: vec![2, 3], filters: 3, classes: 2, dropout: 0.5, max_norm: None, mode: EmbeddingMode::Random, seed: 5 };
    let m = TextCnn::new(cfg, None).unwrap();
    perturb(m.store.params(), 0.2, 6);
    m.set_training(false);
    m
}

/// Saliency equals |∂score/∂E[id]| summed over the embedding dimension, where the gradient is
/// taken by the engine with respect to the embedding table (rows of distinct ids), with respect
/// to the embedded input as an intermediate, and by central differences.
#[test]
fn saliency_equals_gradient_with_respect_to_embedding_rows() {
    let m = model();
    let ids = vec![3usize, 7, 1, 9, 4];
    let class = 1;
    let (x, _) = no_grad(|| m.embed(&[&ids])).unwrap();
    let f = cnn_score_fn(&m, class, ids.len());
    let s = saliency(&f, &x, ids.len()).unwrap();
    // (a) gradient with respect to the embedding table (a parameter).
    let table = m.embedding.weight.get();
    let score = m.forward(&[&ids]).unwrap().narrow(1, class, 1).sum();
    let g_table = grad(&[&score], &[&table], None, GradOptions::default()).unwrap().remove(0);
    // (b) gradient with respect to the embedded input as an intermediate of the graph.
    let (xi, lens) = m.embed(&[&ids]).unwrap();
    let score2 = m.logits_embedded(&xi, &lens).unwrap().narrow(1, class, 1).sum();
    let g_x = grad(&[&score2], &[&xi], None, GradOptions::default()).unwrap().remove(0);
    assert!((s.score - score.item()).abs() < 1e-12);
    let e = 4;
    for (i, &id) in ids.iter().enumerate() {
        let row: Vec<f64> = g_table.data()[id * e..(id + 1) * e].to_vec();
        let want: f64 = row.iter().map(|v| v.abs()).sum();
        assert!((s.saliency[i] - want).abs() < 1e-12, "word {i}: saliency {} vs table gradient {want}", s.saliency[i]);
        for k in 0..e {
            assert!((s.gradient[i * e + k] - g_x.data()[i * e + k]).abs() < 1e-12);
            // (c) central differences on the embedding row.
            let h = 1e-6;
            let at = |d: f64| {
                let mut v = x.to_vec();
                v[i * e + k] += d;
                no_grad(|| f(&Tensor::from_vec(v, x.shape()))).unwrap().item()
            };
            let fd = (at(h) - at(-h)) / (2.0 * h);
            assert!((fd - s.gradient[i * e + k]).abs() < 1e-6, "word {i} dim {k}: fd {fd} vs {}", s.gradient[i * e + k]);
        }
        let gxi: f64 = (0..e).map(|k| s.gradient[i * e + k] * x.data()[i * e + k]).sum();
        assert!((s.grad_x_input[i] - gxi).abs() < 1e-12);
    }
    // Saliency is not the same for every word (the test would be vacuous otherwise).
    assert!(s.saliency.iter().any(|&v| (v - s.saliency[0]).abs() > 1e-6));
}

/// Completeness: Σ IG = f(x) − f(0). Exact for a linear score, O(1/N²) for a smooth one, and
/// within 1 % of |f(x) − f(0)| (plus 1e-3) for the piecewise-linear CNN at N = 300.
#[test]
fn integrated_gradients_completeness() {
    let mut rng = Rng::new(3);
    let x = Tensor::<f64>::randn(&[1, 5, 4], &mut rng);
    let w = Tensor::<f64>::randn(&[1, 5, 4], &mut rng);
    // Linear: exact, and IG_i = Σ_e w x.
    let lin = |xs: &Tensor<f64>| Ok(xs.mul(&w).sum_axes(&[1, 2], false));
    let ig = integrated_gradients(&lin, &x, 5, 3, 2).unwrap();
    assert!(ig.completeness_gap < 1e-12);
    for i in 0..5 {
        let want: f64 = (0..4).map(|k| x.data()[i * 4 + k] * w.data()[i * 4 + k]).sum();
        assert!((ig.attributions[i] - want).abs() < 1e-12);
    }
    // Smooth: the trapezoidal error falls like 1/N².
    let smooth = |xs: &Tensor<f64>| Ok(xs.mul(&w).sum_axes(&[1, 2], false).tanh().add(&xs.square().sum_axes(&[1, 2], false).mul_scalar(0.1).softplus()));
    let g10 = integrated_gradients(&smooth, &x, 5, 10, 64).unwrap().completeness_gap;
    let g100 = integrated_gradients(&smooth, &x, 5, 100, 64).unwrap().completeness_gap;
    assert!(g100 < 1e-4 && g100 < g10 / 20.0, "gaps {g10} (N=10) and {g100} (N=100)");
    // The CNN (ReLU and max pooling).
    let m = model();
    let ids = vec![3usize, 7, 1, 9, 4, 2];
    let (xe, _) = no_grad(|| m.embed(&[&ids])).unwrap();
    let f = cnn_score_fn(&m, 0, ids.len());
    let ig = integrated_gradients(&f, &xe, ids.len(), 300, 64).unwrap();
    let delta = ig.score - ig.baseline_score;
    assert!(ig.completeness_gap <= 0.01 * delta.abs() + 1e-3, "gap {} for Δf = {delta}", ig.completeness_gap);
    assert!(integrated_gradients(&f, &xe, ids.len(), 0, 8).is_err());
}

#[test]
fn explanation_html_and_json_of_a_trained_model() {
    let (docs, labels) = planted_corpus(300, 21);
    let vocab = Vocab::build(docs.iter().map(|d| d.as_slice()), 1);
    let ids: Vec<Vec<usize>> = docs.iter().map(|d| vocab.encode(d)).collect();
    let cfg = TextCnnConfig { filters: 8, seed: 4, ..TextCnnConfig::kim(vocab.len(), 12, 2, EmbeddingMode::Random) };
    let m = TextCnn::<f64>::new(cfg, None).unwrap();
    let before = document_embeddings(&m, &ids).unwrap();
    fit(&m, &ids, &labels, &FitConfig { epochs: 6, batch_size: 20, optim: OptimConfig::adam(0.01), seed: 2, group: Default::default() }).unwrap();
    let words: Vec<String> = "the plot was <superb> and the actor".split(' ').map(String::from).collect();
    let mut words2 = words.clone();
    words2[3] = "superb".into();
    let e = explain_cnn(&m, &vocab, &words2, None, 100).unwrap();
    assert_eq!(e.predicted, 1);
    // The cue word carries the largest saliency and integrated gradient.
    let argmax = |v: &[f64]| v.iter().enumerate().fold(0, |b, (i, &x)| if x > v[b] { i } else { b });
    assert_eq!(argmax(&e.gradients.saliency), 3, "{:?}", e.gradients.saliency);
    assert_eq!(argmax(&e.integrated.attributions), 3, "{:?}", e.integrated.attributions);
    let html = explanation_html(&e, &["negative".into(), "positive".into()]).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
    assert_eq!(html.matches("<span class=\"w\"").count(), 3 * words.len());
    let page = render_html("t", &[ShadedText { caption: "c".into(), words: words.clone(), scores: vec![1.0; words.len()] }]).unwrap();
    assert!(page.contains("&lt;superb&gt;") && !page.contains("<superb>"));
    assert!(render_html("t", &[ShadedText { caption: "c".into(), words: words.clone(), scores: vec![1.0] }]).is_err());
    let json: serde_json::Value = serde_json::from_str(&to_json(&e).unwrap()).unwrap();
    assert_eq!(json["gradients"]["saliency"].as_array().unwrap().len(), words.len());
    // Predictive n-grams: one list per filter, sorted, distinct, of the filter's width; some
    // filter's best n-gram contains a cue word.
    let grams = top_ngrams(&m, &vocab, &ids, 5).unwrap();
    assert_eq!(grams.len(), 3 * 8);
    let cues = ["good", "great", "superb", "bad", "awful", "dull"];
    for g in &grams {
        assert!(g.top.windows(2).all(|w| w[0].1 >= w[1].1));
        assert!(g.top.iter().all(|(s, _)| s.split(' ').count() == g.width));
        let mut names: Vec<&String> = g.top.iter().map(|(s, _)| s).collect();
        names.dedup();
        assert_eq!(names.len(), g.top.len());
    }
    assert!(grams.iter().any(|g| g.top.first().is_some_and(|(s, _)| s.split(' ').any(|w| cues.contains(&w)))));
    // Document embeddings: after training, the first principal axis separates the classes better.
    let after = document_embeddings(&m, &ids).unwrap();
    let sep = |rows: &[Vec<f64>]| {
        let p = pca_2d(rows).unwrap();
        let mean = |c: usize| {
            let v: Vec<f64> = p.coords.iter().zip(&labels).filter(|(_, &y)| y == c).map(|(x, _)| x[0]).collect();
            v.iter().sum::<f64>() / v.len() as f64
        };
        let sd = (p.coords.iter().map(|x| x[0] * x[0]).sum::<f64>() / p.coords.len() as f64).sqrt();
        (mean(1) - mean(0)).abs() / sd
    };
    assert!(sep(&after) > sep(&before), "separation before {} after {}", sep(&before), sep(&after));
}

#[test]
fn pca_finds_the_principal_axis() {
    let mut rng = Rng::new(8);
    let rows: Vec<Vec<f64>> = (0..200)
        .map(|_| {
            let t = 3.0 * rng.normal();
            let s = 0.5 * rng.normal();
            vec![t + 0.01 * rng.normal(), t + 0.01 * rng.normal(), s, 0.01 * rng.normal()]
        })
        .collect();
    let p = pca_2d(&rows).unwrap();
    let a = &p.axes[0];
    assert!((a[0].abs() - 0.5f64.sqrt()).abs() < 1e-2 && (a[1].abs() - 0.5f64.sqrt()).abs() < 1e-2 && a[2].abs() < 0.05, "{a:?}");
    assert!(p.axes[1][2].abs() > 0.99, "{:?}", p.axes[1]);
    assert!(p.explained[0] > 0.9 && p.explained[0] + p.explained[1] <= 1.0 + 1e-9);
    assert!(pca_2d(&rows[..1]).is_err());
}
