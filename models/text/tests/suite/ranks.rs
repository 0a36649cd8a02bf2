//! The training loops of this crate on several ranks ([`chi_nn::dist::ThreadGroup`]: ranks as
//! threads, the protocol `mpirun` runs): `fit` and `train_tagger` with K ranks take the steps of
//! one process with the whole batch (float64, to 1e-12), including batches that leave a rank
//! without examples; a model with dropout draws other masks on each rank while the ranks'
//! parameters stay equal.

use chi_autodiff::Rng;
use chi_nn::dist::{Group, ThreadGroup};
use chi_text::brown::TaggedTokens;
use chi_text::cnn::{EmbeddingMode, TextCnn, TextCnnConfig};
use chi_text::deps::OptimConfig;
use chi_text::experiments::BowLogReg;
use chi_text::tagger::{train_tagger, EncoderKind, HeadKind, Lexicon, NeuralTagger, TaggerConfig, TaggerFit};
use chi_text::train::{fit, Classifier, FitConfig};
use std::rc::Rc;

/// Runs `f` on each of `k` thread ranks, in rank order.
fn on_ranks<R: Send + 'static>(k: usize, f: impl Fn(Group) -> R + Send + Sync + 'static) -> Vec<R> {
    ThreadGroup::run_each(k, move |m| f(Group::new(Rc::new(m))))
}

fn assert_close(a: &[Vec<f64>], b: &[Vec<f64>], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().flatten().zip(b.iter().flatten()) {
        assert!((x - y).abs() <= tol, "{what}: {x} vs {y}");
    }
}

/// Documents of word ids whose class is whether word 0 or word 1 occurs more often.
fn documents(n: usize) -> (Vec<Vec<usize>>, Vec<usize>) {
    let mut rng = Rng::new(5);
    let docs: Vec<Vec<usize>> = (0..n).map(|_| (0..3 + rng.below(6)).map(|_| rng.below(12)).collect()).collect();
    let labels = docs.iter().map(|d| usize::from(d.iter().filter(|&&w| w == 1).count() > d.iter().filter(|&&w| w == 0).count())).collect();
    (docs, labels)
}

fn bow_on(group: Group, batch: usize) -> (Vec<Vec<f64>>, Vec<f64>) {
    let (docs, labels) = documents(53);
    let m = BowLogReg::<f64>::new(12, 2);
    // Plain SGD: Adam's first steps, g/√(g²+ε), would magnify last-bit differences of
    // near-zero gradients (the sums run in another order on several ranks) above 1e-12.
    let cfg = FitConfig { epochs: 3, batch_size: batch, optim: OptimConfig::sgd(0.5), seed: 4, group };
    let log = fit(&m, &docs, &labels, &cfg).unwrap();
    (m.params().iter().map(|p| p.get().to_vec()).collect(), log.epoch_loss)
}

#[test]
fn fit_on_three_ranks_takes_the_single_process_steps() {
    // 53 documents in batches of 10: shares 4/3/3 and, for the last batch of 3, one each.
    let (single, loss) = bow_on(Group::one(), 10);
    for (params, ranked_loss) in on_ranks(3, |g| bow_on(g, 10)) {
        assert_close(&params, &single, 1e-12, "parameters");
        assert_close(&[ranked_loss], &[loss.clone()], 1e-12, "epoch losses");
    }
    // Batches of 2 over 3 ranks: rank 2 never has an example, and the steps are still exact.
    let (single, _) = bow_on(Group::one(), 2);
    for (params, _) in on_ranks(3, |g| bow_on(g, 2)) {
        assert_close(&params, &single, 1e-12, "parameters, empty shares");
    }
}

fn sentences() -> Vec<TaggedTokens> {
    let mut rng = Rng::new(9);
    let words = ["the", "a", "dog", "cat", "runs", "sees"];
    let tags = ["D", "D", "N", "N", "V", "V"];
    (0..30)
        .map(|_| {
            let len = 1 + rng.below(6);
            let ids: Vec<usize> = (0..len).map(|_| rng.below(6)).collect();
            TaggedTokens { words: ids.iter().map(|&i| words[i].to_string()).collect(), tags: ids.iter().map(|&i| tags[i].to_string()).collect() }
        })
        .collect()
}

fn tagger_on(group: Group, head: HeadKind) -> (Vec<Vec<f64>>, Vec<f64>) {
    let train = sentences();
    let lex = Lexicon::build(&train, 1);
    let cfg = TaggerConfig { word_dim: 4, suffix_dim: 2, shape_dim: 2, hidden: 4, encoder: EncoderKind::BiLstm, head, seed: 2 };
    let m = NeuralTagger::<f64>::new(cfg, lex).unwrap();
    let fit = TaggerFit { epochs: 2, batch_size: 7, optim: OptimConfig::adam(0.02), clip: 0.5, seed: 3, group };
    let losses = train_tagger(&m, &train, &fit).unwrap();
    (m.params().iter().map(|p| p.get().to_vec()).collect(), losses)
}

#[test]
fn tagger_on_two_ranks_takes_the_single_process_steps_weighted_by_tokens() {
    // Sentences of 1–6 words: the shares hold different numbers of tokens, and the clip at 0.5
    // acts on the averaged gradient.
    for head in [HeadKind::Softmax, HeadKind::Crf] {
        let (single, loss) = tagger_on(Group::one(), head);
        for (params, ranked_loss) in on_ranks(2, move |g| tagger_on(g, head)) {
            assert_close(&params, &single, 1e-12, "tagger parameters");
            assert_close(&[ranked_loss], &[loss.clone()], 1e-12, "tagger losses");
        }
    }
}

#[test]
fn dropout_masks_differ_by_rank_while_parameters_stay_equal() {
    let run = |group: Group| {
        let (docs, labels) = documents(40);
        let cfg = TextCnnConfig { vocab: 12, emb_dim: 4, widths: vec![1, 2], filters: 3, classes: 2, dropout: 0.5, max_norm: Some(3.0), mode: EmbeddingMode::Random, seed: 6 };
        let m = TextCnn::<f64>::new(cfg, None).unwrap();
        fit(&m, &docs, &labels, &FitConfig { epochs: 2, batch_size: 8, optim: OptimConfig::adam(0.05), seed: 1, group }).unwrap();
        m.params().iter().map(|p| p.get().to_vec()).collect::<Vec<_>>()
    };
    let single = run(Group::one());
    let ranked = on_ranks(2, run);
    assert_eq!(ranked[0], ranked[1], "ranks apply the same averaged update");
    let far = ranked[0].iter().flatten().zip(single.iter().flatten()).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(far > 1e-6, "each rank draws its own masks, so the run is not one process's ({far:e})");
}
