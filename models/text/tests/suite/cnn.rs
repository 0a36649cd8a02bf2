//! Kim-style text CNN: shapes, batch independence, embedding modes, max-norm, whole-model
//! gradcheck and learning a planted task.

use crate::common;

use chi_autodiff::{no_grad, Tensor};
use chi_text::cnn::{EmbeddingMode, TextCnn, TextCnnConfig};
use chi_text::train::{accuracy, fit, predict, Classifier, FitConfig};
use chi_text::vocab::{tokenize, Vocab};
use chi_text::deps::OptimConfig;
use common::{check_params, perturb, planted_corpus};

fn tiny(mode: EmbeddingMode, pre: Option<&[f64]>) -> TextCnn<f64> {
    let cfg = TextCnnConfig { vocab: 7, emb_dim: 3, widths: vec![1, 2], filters: 2, classes: 2, dropout: 0.0, max_norm: None, mode, seed: 3 };
    TextCnn::new(cfg, pre).unwrap()
}

#[test]
fn logits_of_a_sentence_do_not_depend_on_its_batch() {
    let cfg = TextCnnConfig { seed: 1, ..TextCnnConfig::kim(20, 8, 3, EmbeddingMode::Random) };
    let m = TextCnn::<f64>::new(cfg, None).unwrap();
    m.set_training(false);
    let a = vec![1usize, 2, 3];
    let b: Vec<usize> = (0..15).collect();
    let alone = no_grad(|| m.forward(&[&a])).unwrap();
    let batched = no_grad(|| m.forward(&[&b, &a, &[4]])).unwrap();
    assert_eq!(batched.shape(), [3, 3]);
    for j in 0..3 {
        assert!((alone.data()[j] - batched.data()[3 + j]).abs() < 1e-12);
    }
    assert!(m.forward(&[&[20]]).is_err(), "id out of range is an error");
    // An empty sentence still has logits.
    assert!(no_grad(|| m.forward(&[&[]])).unwrap().all_finite());
}

#[test]
fn whole_model_gradcheck_float64() {
    let m = tiny(EmbeddingMode::Random, None);
    let params = m.params();
    perturb(&params, 0.1, 4);
    let docs: Vec<Vec<usize>> = vec![vec![1, 2, 3, 4], vec![5, 6], vec![0]];
    let refs: Vec<&Vec<usize>> = docs.iter().collect();
    let r = check_params(&params, || m.logits(&refs).unwrap().cross_entropy(&[0, 1, 1]));
    r.unwrap();
}

#[test]
fn static_embeddings_are_frozen_and_non_static_train() {
    let pre: Vec<f64> = (0..21).map(|i| i as f64 / 10.0).collect();
    let s = tiny(EmbeddingMode::Static, Some(&pre));
    let n = tiny(EmbeddingMode::NonStatic, Some(&pre));
    assert_eq!(s.embedding.weight.to_vec(), pre);
    assert_eq!(n.embedding.weight.to_vec(), pre);
    assert!(s.embedding.weight.is_frozen() && !n.embedding.weight.is_frozen());
    assert!(!s.params().iter().any(|p| p.name() == "emb.weight"));
    let docs = vec![vec![1, 2, 3], vec![4, 5]];
    let cfg = FitConfig { epochs: 3, batch_size: 2, optim: OptimConfig::adam(0.05), seed: 0, group: Default::default() };
    fit(&s, &docs, &[0, 1], &cfg).unwrap();
    fit(&n, &docs, &[0, 1], &cfg).unwrap();
    assert_eq!(s.embedding.weight.to_vec(), pre, "static embeddings changed");
    assert_ne!(n.embedding.weight.to_vec(), pre, "non-static embeddings did not train");
    assert!(TextCnn::<f64>::new(TextCnnConfig { mode: EmbeddingMode::Static, ..s.config().clone() }, None).is_err());
    assert!(TextCnn::<f64>::new(s.config().clone(), Some(&pre[..5])).is_err());
}

#[test]
fn max_norm_bounds_every_class_weight_vector() {
    let cfg = TextCnnConfig { max_norm: Some(0.5), ..TextCnnConfig::kim(10, 4, 2, EmbeddingMode::Random) };
    let m = TextCnn::<f64>::new(cfg, None).unwrap();
    m.out.weight.update(|w| w.iter_mut().for_each(|x| *x *= 10.0));
    m.apply_max_norm();
    let w = m.out.weight.to_vec();
    let f = w.len() / 2;
    for j in 0..2 {
        let n = (0..f).map(|i| w[i * 2 + j].powi(2)).sum::<f64>().sqrt();
        assert!((n - 0.5).abs() < 1e-9, "column {j} has norm {n}");
    }
}

#[test]
fn learns_a_planted_sentiment_task() {
    let (docs, labels) = planted_corpus(600, 11);
    let vocab = Vocab::build(docs.iter().map(|d| d.as_slice()), 1);
    let ids: Vec<Vec<usize>> = docs.iter().map(|d| vocab.encode(d)).collect();
    let cfg = TextCnnConfig { filters: 16, seed: 2, ..TextCnnConfig::kim(vocab.len(), 16, 2, EmbeddingMode::Random) };
    let m = TextCnn::<f32>::new(cfg, None).unwrap();
    let log = fit(&m, &ids[..400], &labels[..400], &FitConfig { epochs: 8, batch_size: 25, optim: OptimConfig::adam(0.01), seed: 1, group: Default::default() }).unwrap();
    assert!(log.epoch_loss.last().unwrap() < &log.epoch_loss[0]);
    let acc = accuracy(&predict(&m, &ids[400..], 64).unwrap(), &labels[400..]);
    assert!(acc > 0.95, "held-out accuracy {acc}");
    assert_eq!(tokenize("Don't stop, it's GREAT!"), ["don't", "stop", ",", "it's", "great", "!"]);
    let _ = Tensor::<f32>::zeros(&[1]);
}

/// A max-norm bound that is negative, NaN or 0 is refused (a negative one flipped the output
/// weights' sign at every step); sizes that cannot fit in memory are an error, not an abort.
#[test]
fn max_norm_and_sizes_out_of_range_are_refused() {
    for m in [-1.0, f64::NAN, 0.0] {
        let cfg = TextCnnConfig { max_norm: Some(m), ..TextCnnConfig::kim(10, 4, 2, EmbeddingMode::Random) };
        let e = TextCnn::<f64>::new(cfg, None).err().expect("refused").to_string();
        assert!(e.contains("max_norm") && e.contains("finite and > 0"), "{m}: {e}");
    }
    let cfg = TextCnnConfig { vocab: 1 << 40, ..TextCnnConfig::kim(10, 300, 2, EmbeddingMode::Random) };
    let e = TextCnn::<f32>::new(cfg, None).err().expect("refused").to_string();
    assert!(e.contains("TextCnn embedding") && e.contains("memory"), "{e}");
}
