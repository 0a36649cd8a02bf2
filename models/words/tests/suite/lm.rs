//! Neural language models: gradcheck of their losses, and held-out perplexity on a planted
//! second-order Markov language, against the unigram baseline.

use chi_autodiff::{gradcheck, GradcheckOptions, Rng, Tensor};
use chi_words::lm::{unigram_perplexity, LmTrainConfig, LmVocab, Nplm, RnnLm};
use chi_words::vocab::Text;

/// Sentences where each word is one of two successors fixed by the previous two words.
fn markov_text(sentences: usize, seed: u64) -> Text {
    let v = 16usize;
    let mut table = Rng::new(99);
    let succ: Vec<[usize; 2]> = (0..(v + 1) * (v + 1)).map(|_| [table.below(v), table.below(v)]).collect();
    let mut rng = Rng::new(seed);
    let mut s = String::new();
    for _ in 0..sentences {
        let (mut a, mut b) = (v, v); // v stands for "before the start"
        for _ in 0..6 + rng.below(5) {
            let w = succ[a * (v + 1) + b][rng.below(2)];
            s.push_str(&format!("w{w} "));
            a = b;
            b = w;
        }
        s.push('\n');
    }
    Text::from_str(&s, false)
}

#[test]
fn lm_vocab_has_specials_first_and_maps_unknown_words() {
    let t = Text::from_str("a b a c\na b\n", false);
    let v = LmVocab::build(&t, 2).unwrap();
    assert_eq!(&v.vocab.words[..3], &["<s>", "</s>", "<unk>"]);
    assert_eq!(v.len(), 5);
    let e = v.encode(&t);
    assert_eq!(e[0], vec![v.vocab.id("a").unwrap() as usize, v.vocab.id("b").unwrap() as usize, v.vocab.id("a").unwrap() as usize, 2, 1]);
}

#[test]
fn lm_losses_pass_gradcheck() {
    let mut rng = Rng::new(3);
    let (vocab, d, h, n) = (7, 3, 4, 2);
    let r = |s: &[usize], rng: &mut Rng| Tensor::<f64>::rand_uniform(s, -0.7, 0.7, rng);
    let xs = [r(&[vocab, d], &mut rng), r(&[n * d, h], &mut rng), r(&[1, h], &mut rng), r(&[h, vocab], &mut rng), r(&[1, vocab], &mut rng), r(&[n * d, vocab], &mut rng)];
    let ctx = [1usize, 4, 0, 0, 6, 6];
    let tgt = [3usize, 1, 5];
    let nplm = |x: &[Tensor<f64>]| {
        let m = Nplm { context: n, bypass: true, c: x[0].clone(), u: x[1].clone(), b: x[2].clone(), v: x[3].clone(), k: x[4].clone(), w: Some(x[5].clone()) };
        m.logits(&ctx).cross_entropy(&tgt)
    };
    assert!(gradcheck(nplm, &xs, &GradcheckOptions::default()).unwrap().passed);
    let ys = [r(&[vocab, h], &mut rng), r(&[h, h], &mut rng), r(&[h, vocab], &mut rng)];
    let sents: [&[usize]; 3] = [&[3, 4, 1], &[5, 1], &[2, 6, 6, 1]];
    let rnn = |x: &[Tensor<f64>]| RnnLm { c: x[0].clone(), u: x[1].clone(), v: x[2].clone() }.nll(&sents);
    assert!(gradcheck(rnn, &ys, &GradcheckOptions::default()).unwrap().passed);
}

#[test]
fn rnn_batch_nll_equals_sum_of_single_sentences() {
    let m = RnnLm::<f64>::new(9, 5, 2).unwrap();
    let sents: [&[usize]; 3] = [&[3, 4, 1], &[5, 1], &[2, 6, 8, 7, 1]];
    let batch = m.nll(&sents).item();
    let single: f64 = sents.iter().map(|s| m.nll(&[s]).item()).sum();
    assert!((batch - single).abs() < 1e-10, "{batch} vs {single}");
}

#[test]
fn neural_lms_beat_the_unigram_baseline_on_held_out_text() {
    let train_t = markov_text(500, 1);
    let test_t = markov_text(60, 2);
    let vocab = LmVocab::build(&train_t, 1).unwrap();
    let (train, test) = (vocab.encode(&train_t), vocab.encode(&test_t));
    let unigram = unigram_perplexity(vocab.len(), &train, &test);
    for bypass in [false, true] {
        let mut m = Nplm::<f32>::new(vocab.len(), 2, 8, 32, bypass, 5).unwrap();
        let before = m.perplexity(&test);
        let losses = m.train(&train, &LmTrainConfig { epochs: 12, lr: 0.5, batch: 16, seed: 1 });
        let after = m.perplexity(&test);
        assert!(losses.last().unwrap() < &losses[0]);
        eprintln!("trigram NPLM bypass={bypass}: held-out perplexity {after:.3} (untrained {before:.2}, unigram {unigram:.2})");
        // The true conditional entropy is ≤ ln 2 per word (two successors), plus </s>.
        assert!(after < 0.4 * unigram, "trigram NPLM (bypass {bypass}): {after:.2} vs unigram {unigram:.2} (untrained {before:.2})");
    }
    let mut r = RnnLm::<f32>::new(vocab.len(), 32, 5).unwrap();
    let before = r.perplexity(&test);
    r.train(&train, &LmTrainConfig { epochs: 15, lr: 1.0, batch: 8, seed: 1 });
    let after = r.perplexity(&test);
    eprintln!("RNN LM: held-out perplexity {after:.3} (untrained {before:.2}, unigram {unigram:.2})");
    assert!(after < 0.6 * unigram, "RNN LM: {after:.2} vs unigram {unigram:.2} (untrained {before:.2})");
}

/// Language models whose tables cannot fit in memory are an error, not an abort.
#[test]
fn language_models_too_large_for_memory_are_errors() {
    let e = RnnLm::<f32>::new(1 << 40, 1 << 10, 0).err().expect("refused").to_string();
    assert!(e.contains("rnnlm embedding") && e.contains("memory"), "{e}");
    let e = Nplm::<f32>::new(10, 1 << 33, 1 << 33, 2, false, 0).err().expect("refused").to_string();
    assert!(e.contains("nplm") && e.contains("memory"), "{e}");
}
