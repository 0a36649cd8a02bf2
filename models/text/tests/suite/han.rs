//! Hierarchical attention network: whole-model gradcheck, masking, batch independence,
//! learning a planted task.

#![allow(clippy::needless_range_loop)] // index loops mirror the shapes being checked

use crate::common;

use chi_autodiff::{grad, no_grad, GradOptions};
use chi_text::deps::OptimConfig;
use chi_text::han::{Han, HanConfig};
use chi_text::train::{accuracy, fit, predict, Classifier, FitConfig};
use chi_text::vocab::Vocab;
use common::{check_params, perturb, planted_corpus};

fn tiny() -> Han<f64> {
    Han::new(HanConfig { vocab: 6, emb_dim: 3, hidden: 2, attention: 3, classes: 2, seed: 1 }, None).unwrap()
}

fn docs() -> Vec<Vec<Vec<usize>>> {
    vec![vec![vec![1, 2, 3], vec![4]], vec![vec![5, 1]], vec![vec![2], vec![3, 4], vec![]]]
}

#[test]
fn whole_model_gradcheck_float64() {
    let m = tiny();
    let params = m.params();
    perturb(&params, 0.1, 2);
    let d = docs();
    let refs: Vec<&Vec<Vec<usize>>> = d.iter().collect();
    let r = check_params(&params, || m.logits(&refs).unwrap().cross_entropy(&[1, 0, 1]));
    r.unwrap();
}

#[test]
fn padding_gets_zero_attention_and_zero_gradient() {
    let m = tiny();
    perturb(&m.params(), 0.1, 3);
    let d = docs();
    let refs: Vec<&[Vec<usize>]> = d.iter().map(|v| v.as_slice()).collect();
    let b = m.batch(&refs).unwrap();
    assert_eq!(b.word_lengths, [3, 1, 2, 1, 2, 1]);
    assert_eq!((b.max_words, b.max_sentences), (3, 3));
    let x = m.embed(&b).detach().requires_grad();
    let out = m.forward_embedded(&x, &b).unwrap();
    let loss = out.logits.cross_entropy(&[1, 0, 1]);
    let g = grad(&[&loss], &[&x], None, GradOptions::default()).unwrap().remove(0);
    let wa = out.word_attention.data();
    for (i, &l) in b.word_lengths.iter().enumerate() {
        let row = &wa[i * 3..i * 3 + 3];
        assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        for t in 0..3 {
            if t >= l {
                assert_eq!(row[t], 0.0, "sentence {i} padded word {t} has attention {}", row[t]);
                assert!(g.data()[(i * 3 + t) * 3..(i * 3 + t + 1) * 3].iter().all(|&v| v == 0.0), "padded word got gradient");
            } else {
                assert!(row[t] > 0.0 && g.data()[(i * 3 + t) * 3..(i * 3 + t + 1) * 3].iter().any(|&v| v != 0.0));
            }
        }
    }
    let sa = out.sentence_attention.data();
    for (doc, &c) in b.sentence_counts.iter().enumerate() {
        for j in 0..3 {
            assert_eq!(sa[doc * 3 + j] == 0.0, j >= c, "document {doc} sentence {j}");
        }
    }
}

#[test]
fn logits_of_a_document_do_not_depend_on_its_batch() {
    let m = tiny();
    perturb(&m.params(), 0.1, 4);
    let d = docs();
    let alone = no_grad(|| m.forward(&[d[1].as_slice()])).unwrap().logits;
    let all = no_grad(|| m.forward(&[d[0].as_slice(), d[1].as_slice(), d[2].as_slice()])).unwrap().logits;
    for j in 0..2 {
        assert!((alone.data()[j] - all.data()[2 + j]).abs() < 1e-12);
    }
    assert!(m.forward(&[&[vec![6]]]).is_err());
    assert!(no_grad(|| m.forward(&[&[]])).unwrap().logits.all_finite());
}

#[test]
fn learns_a_planted_document_task() {
    // Documents of 2–3 sentences: one planted sentence (first or second) carries the label's
    // cue word, the others are neutral filler the network must learn to ignore.
    let (sents, labels) = planted_corpus(400, 5);
    let (filler, _) = planted_corpus(800, 6);
    let strip = |s: &Vec<String>| s.iter().filter(|w| !["good", "great", "superb", "bad", "awful", "dull"].contains(&w.as_str())).cloned().collect::<Vec<_>>();
    let vocab = Vocab::build(sents.iter().chain(&filler).map(|d| d.as_slice()), 1);
    let docs: Vec<Vec<Vec<usize>>> = sents
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut d = vec![vocab.encode(&strip(&filler[2 * i]))];
            d.insert(i % 2, vocab.encode(s));
            if i % 3 == 0 {
                d.push(vocab.encode(&strip(&filler[2 * i + 1])));
            }
            d
        })
        .collect();
    let m = Han::<f32>::new(HanConfig { vocab: vocab.len(), emb_dim: 16, hidden: 12, attention: 12, classes: 2, seed: 3 }, None).unwrap();
    fit(&m, &docs[..300], &labels[..300], &FitConfig { epochs: 6, batch_size: 20, optim: OptimConfig::adam(0.01), seed: 0, group: Default::default() }).unwrap();
    let acc = accuracy(&predict(&m, &docs[300..], 50).unwrap(), &labels[300..]);
    assert!(acc > 0.9, "held-out accuracy {acc}");
}
