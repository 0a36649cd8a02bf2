//! Quick variants of the experiment functions on small synthetic corpora.

use crate::common;

use chi_autodiff::Rng;
use chi_text::brown::TaggedTokens;
use chi_text::cnn::{EmbeddingMode, TextCnnConfig};
use chi_text::deps::{Embeddings, OptimConfig};
use chi_text::experiments::{mean_std, pos_tagging, split_documents, stratified_folds, text_cnn_sentences, TextCnnSentencesConfig};
use chi_text::tagger::{EncoderKind, HeadKind, TaggerConfig, TaggerFit};
use chi_text::train::FitConfig;
use common::planted_corpus;

#[test]
fn folds_are_stratified_and_partition_the_data() {
    let labels: Vec<usize> = (0..103).map(|i| usize::from(i % 3 == 0)).collect();
    let folds = stratified_folds(&labels, 10, 1).unwrap();
    let mut all: Vec<usize> = folds.iter().flatten().copied().collect();
    all.sort_unstable();
    assert_eq!(all, (0..103).collect::<Vec<_>>());
    for f in &folds {
        assert!(f.len() == 10 || f.len() == 11);
        let pos = f.iter().filter(|&&i| labels[i] == 1).count();
        assert!((3..=4).contains(&pos), "{pos} positives in a fold");
    }
    assert!(stratified_folds(&labels, 1, 0).is_err());
    let (m, s) = mean_std(&[1.0, 2.0, 3.0]);
    assert!((m - 2.0).abs() < 1e-12 && (s - 1.0).abs() < 1e-12);
    let (tr, te) = split_documents(10, 0.2, 3).unwrap();
    assert_eq!((tr.len(), te.len()), (8, 2));
    assert!(te.iter().all(|i| !tr.contains(i)));
}

#[test]
fn text_cnn_sentences_quick_variant() {
    let (docs, labels) = planted_corpus(400, 31);
    // Pretrained vectors that already separate the cue words (and know half the fillers).
    let words = ["good", "great", "superb", "bad", "awful", "dull", "the", "movie", "was", "a", "plot", "and"];
    let mut rng = Rng::new(2);
    let mut vectors = Vec::new();
    for (i, _) in words.iter().enumerate() {
        let sign = if i < 3 { 1.0 } else if i < 6 { -1.0 } else { 0.0 };
        vectors.push(sign as f32);
        vectors.extend((0..7).map(|_| (0.3 * rng.normal()) as f32));
    }
    let emb = Embeddings::new(words.iter().map(|w| w.to_string()).collect(), 8, vectors).unwrap();
    let cfg = TextCnnSentencesConfig {
        folds: 5,
        max_folds: Some(2),
        modes: vec![EmbeddingMode::Random, EmbeddingMode::Static, EmbeddingMode::NonStatic],
        cnn: TextCnnConfig { filters: 8, ..TextCnnConfig::kim(0, 8, 2, EmbeddingMode::Random) },
        cnn_fit: FitConfig { epochs: 6, batch_size: 25, optim: OptimConfig::adam(0.01), seed: 0, group: Default::default() },
        bow_fit: FitConfig { epochs: 10, batch_size: 25, optim: OptimConfig::adam(0.05), seed: 0, group: Default::default() },
        min_count: 1,
        seed: 4,
    };
    let r = text_cnn_sentences(&docs, &labels, Some(&emb), &cfg).unwrap();
    assert_eq!((r.folds_run, r.folds, r.examples), (2, 5, 400));
    assert!(r.pretrained_coverage.unwrap() > 0.4);
    let names: Vec<&str> = r.models.iter().map(|m| m.model.as_str()).collect();
    assert_eq!(names, ["cnn-rand", "cnn-static", "cnn-non-static", "bow-logreg"]);
    for m in &r.models {
        assert_eq!(m.fold_accuracy.len(), 2);
        assert!(m.mean > 0.9, "{}: {:?}", m.model, m.fold_accuracy);
    }
    let json = chi_text::explain::to_json(&r).unwrap();
    assert!(json.contains("\"bow-logreg\""));
    let no_vectors = TextCnnSentencesConfig { modes: vec![EmbeddingMode::Static], ..cfg };
    assert!(text_cnn_sentences(&docs, &labels, None, &no_vectors).is_err());
}

#[test]
fn pos_tagging_quick_variant() {
    let mut rng = Rng::new(5);
    let pairs = [("the", "D"), ("a", "D"), ("dog", "N"), ("cat", "N"), ("runs", "V"), ("sees", "V")];
    let make = |rng: &mut Rng| {
        let mut s = TaggedTokens { words: vec![], tags: vec![] };
        for i in 0..(3 + rng.below(6)) {
            let (w, t) = pairs[(i % 3) * 2 + rng.below(2)];
            s.words.push(w.into());
            s.tags.push(t.into());
        }
        s
    };
    let train: Vec<TaggedTokens> = (0..80).map(|_| make(&mut rng)).collect();
    let test: Vec<TaggedTokens> = (0..20).map(|_| make(&mut rng)).collect();
    let taggers: Vec<TaggerConfig> = [(EncoderKind::BiLstm, HeadKind::Softmax), (EncoderKind::BiLstm, HeadKind::Crf)]
        .iter()
        .map(|&(encoder, head)| TaggerConfig { word_dim: 6, suffix_dim: 0, shape_dim: 0, hidden: 6, encoder, head, seed: 1 })
        .collect();
    let fit = TaggerFit { epochs: 8, batch_size: 10, optim: OptimConfig::adam(0.03), clip: 5.0, seed: 0, group: Default::default() };
    let r = pos_tagging(&train, &test, &taggers, &fit, 1).unwrap();
    assert_eq!(r.tags, 3);
    assert_eq!(r.models.len(), 3);
    assert_eq!(r.models[0].model, "most-frequent");
    assert_eq!(r.models[1].model, "bilstm-softmax");
    for m in &r.models {
        assert!(m.test.overall > 0.99, "{}: {:?}", m.model, m.test);
        assert!(m.train_tokens_per_sec > 0.0 && m.decode_tokens_per_sec > 0.0);
    }
    assert_eq!(r.models[2].epoch_loss.len(), 8);
}
