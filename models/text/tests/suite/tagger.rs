//! Taggers: the Brown reader and tag mapping, a planted task on which the CRF's transitions
//! matter, the neural taggers learning it, whole-model gradchecks.

use crate::common;

use chi_autodiff::{Rng};
use chi_text::brown::{normalize_tag, parse_brown, to_universal, universal_tag, TaggedTokens, UNIVERSAL_TAGS};
use chi_text::deps::OptimConfig;
use chi_text::tagger::{
    predict_all, tag_accuracy, train_tagger, EncoderKind, HeadKind, Lexicon, MostFrequentTag, NeuralTagger, TaggerConfig, TaggerFit,
};
use chi_text::TextError;
use common::{check_params, perturb};

#[test]
fn brown_reader_and_universal_mapping() {
    let text = "\n\n\tThe/at Fulton/np-tl County/nn-tl Grand/jj-tl Jury/nn-tl said/vbd 1/2/cd ``/`` it's/pps+bez n't/* ./.\n\n\tHe/pps ran/vbd ./.\n";
    let s = parse_brown(text).unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].words[6], "1/2");
    assert_eq!(s[0].tags[6], "cd");
    assert_eq!(s[1].words, ["He", "ran", "."]);
    let u = to_universal(&s[0]);
    assert_eq!(u.tags, ["DET", "NOUN", "NOUN", "ADJ", "NOUN", "VERB", "NUM", ".", "PRON", "ADV", "."]);
    assert_eq!(normalize_tag("fw-nn-tl"), "nn");
    assert_eq!(normalize_tag("bez*"), "bez");
    assert_eq!(normalize_tag("ppss+md"), "ppss");
    for (t, u) in [("md", "VERB"), ("hvd", "VERB"), ("wdt", "DET"), ("wps", "PRON"), ("in", "ADP"), ("cs", "CONJ"), ("to", "PRT"), ("od", "ADJ"), ("uh", "X"), ("ql", "ADV"), ("nns$", "NOUN")] {
        assert_eq!(universal_tag(t), u, "{t}");
        assert!(UNIVERSAL_TAGS.contains(&u));
    }
    assert!(matches!(parse_brown("ok/uh broken\n"), Err(TextError::Parse { line: 1, .. })));
    assert!(matches!(parse_brown("a/\n"), Err(TextError::Parse { .. })));
}

/// Tags cycle D → N → V → D …; "run" and "walk" are both nouns and verbs, so a tagger that
/// sees one word at a time cannot tell them apart, while the transitions can.
fn planted(n: usize, seed: u64, oov: bool) -> Vec<TaggedTokens> {
    let d = ["the", "a"];
    let nn = ["dog", "cat", "run", "walk"];
    let vb = ["run", "walk", "sees", "eats"];
    let new_nouns = ["Zorp", "Blick", "Fremble"];
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| {
            let len = 3 + rng.below(7);
            let mut s = TaggedTokens { words: vec![], tags: vec![] };
            for i in 0..len {
                let (w, t) = match i % 3 {
                    0 => (d[rng.below(2)].to_string(), "D"),
                    1 if oov && rng.below(4) == 0 => (new_nouns[rng.below(3)].to_string(), "N"),
                    1 => (nn[rng.below(4)].to_string(), "N"),
                    _ => (vb[rng.below(4)].to_string(), "V"),
                };
                s.words.push(w);
                s.tags.push(t.to_string());
            }
            s
        })
        .collect()
}

fn cfg(encoder: EncoderKind, head: HeadKind) -> TaggerConfig {
    TaggerConfig { word_dim: 8, suffix_dim: 4, shape_dim: 2, hidden: 8, encoder, head, seed: 1 }
}

fn fit_cfg(epochs: usize) -> TaggerFit {
    TaggerFit { epochs, batch_size: 16, optim: OptimConfig::adam(0.03), clip: 5.0, seed: 0, group: Default::default() }
}

#[test]
fn crf_transitions_resolve_what_emissions_cannot() {
    let train = planted(300, 1, false);
    let test = planted(100, 2, false);
    let lex = Lexicon::build(&train, 1);
    let base = MostFrequentTag::train(&lex, &train).unwrap();
    let base_acc = tag_accuracy(&lex, &test, &test.iter().map(|s| base.predict(&s.words)).collect::<Vec<_>>()).unwrap();
    let mut accs = Vec::new();
    for head in [HeadKind::Softmax, HeadKind::Crf] {
        let m = NeuralTagger::<f32>::new(cfg(EncoderKind::None, head), lex.clone()).unwrap();
        let losses = train_tagger(&m, &train, &fit_cfg(15)).unwrap();
        assert!(losses.last().unwrap() < &losses[0]);
        accs.push(tag_accuracy(&lex, &test, &predict_all(&m, &test, 32).unwrap()).unwrap().overall);
    }
    assert!(base_acc.overall < 0.9, "the task is not ambiguous enough: baseline {}", base_acc.overall);
    assert!(accs[0] < 0.9, "context-free softmax should be stuck on ambiguous words: {}", accs[0]);
    assert!(accs[1] > 0.99, "context-free CRF accuracy {}", accs[1]);
}

#[test]
fn recurrent_taggers_learn_the_planted_task_including_oov_words() {
    let train = planted(300, 3, false);
    let test = planted(80, 4, true);
    let lex = Lexicon::build(&train, 2);
    for (enc, head) in [(EncoderKind::BiLstm, HeadKind::Softmax), (EncoderKind::BiLstm, HeadKind::Crf), (EncoderKind::CaRnn, HeadKind::Crf)] {
        let m = NeuralTagger::<f32>::new(cfg(enc, head), lex.clone()).unwrap();
        train_tagger(&m, &train, &fit_cfg(12)).unwrap();
        let acc = tag_accuracy(&lex, &test, &predict_all(&m, &test, 32).unwrap()).unwrap();
        assert!(acc.oov_tokens > 10);
        assert!(acc.overall > 0.97 && acc.oov > 0.9, "{enc:?}/{head:?}: {acc:?}");
    }
}

#[test]
fn whole_model_gradcheck_float64() {
    let train = planted(4, 5, false);
    let lex = Lexicon::build(&train, 1);
    let tags: Vec<Vec<usize>> = train.iter().map(|s| lex.tag_ids(s).unwrap()).collect();
    let sents: Vec<&[String]> = train.iter().map(|s| s.words.as_slice()).collect();
    for (enc, head) in [(EncoderKind::BiLstm, HeadKind::Crf), (EncoderKind::CaRnn, HeadKind::Crf), (EncoderKind::BiLstm, HeadKind::Softmax)] {
        let c = TaggerConfig { word_dim: 2, suffix_dim: 2, shape_dim: 1, hidden: 2, encoder: enc, head, seed: 2 };
        let m = NeuralTagger::<f64>::new(c, lex.clone()).unwrap();
        perturb(&m.params(), 0.1, 3);
        let r = check_params(&m.params(), || m.loss(&sents, &tags).unwrap());
        r.unwrap_or_else(|r| panic!("{enc:?}/{head:?}: {r:?}"));
    }
}

#[test]
fn accuracy_counts_oov_words() {
    let train = vec![TaggedTokens { words: vec!["a".into(), "b".into()], tags: vec!["X".into(), "Y".into()] }];
    let lex = Lexicon::build(&train, 1);
    let gold = vec![TaggedTokens { words: vec!["a".into(), "c".into(), "d".into()], tags: vec!["X".into(), "Y".into(), "X".into()] }];
    let acc = tag_accuracy(&lex, &gold, &[vec![0, 1, 1]]).unwrap();
    assert_eq!((acc.tokens, acc.oov_tokens), (3, 2));
    assert!((acc.overall - 2.0 / 3.0).abs() < 1e-12 && (acc.oov - 0.5).abs() < 1e-12);
    assert!(tag_accuracy(&lex, &gold, &[vec![0]]).is_err());
    let mft = MostFrequentTag::train(&lex, &train).unwrap();
    assert_eq!(mft.predict(&gold[0].words)[0], 0);
}
