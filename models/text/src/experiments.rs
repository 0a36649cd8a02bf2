//! Experiment functions: plain inputs in, plain result structs out (no files, no printing), so
//! a command-line front end can run them and write their JSON.
//!
//! * [`text_cnn_sentences`]: k-fold cross-validation of Kim's CNN (any of rand / static /
//!   non-static) beside a bag-of-words logistic regression on the same folds.
//! * [`pos_tagging`]: the most-frequent-tag baseline and neural taggers on a train/test split,
//!   with accuracy overall and on out-of-vocabulary words and throughput.

use crate::brown::TaggedTokens;
use crate::cnn::{EmbeddingMode, TextCnn, TextCnnConfig};
use crate::deps::{init, BagMode, EmbeddingBag, Embeddings, Param, ParamStore};
use crate::error::{Result, TextError};
use crate::tagger::{predict_all, tag_accuracy, train_tagger, Lexicon, MostFrequentTag, NeuralTagger, TagAccuracy, TaggerConfig, TaggerFit};
use crate::train::{accuracy, fit, predict, Classifier, FitConfig};
use crate::vocab::{pretrained_matrix, Vocab};
use chi_autodiff::{Float, Rng, Tensor};
use serde::Serialize;
use std::time::Instant;

/// Bag-of-words logistic regression: `logits = Σ_{w ∈ set(doc)} W[w] + b` (binary word-presence
/// features; `W [vocab, classes]` and `b` start at zero). L2 regularisation comes from the
/// optimiser's weight decay. Parameters: `bow.weight`, `bow.bias`.
pub struct BowLogReg<T: Float> {
    /// All parameters.
    pub store: ParamStore<T>,
    bag: EmbeddingBag<T>,
    bias: Param<T>,
    vocab: usize,
}

impl<T: Float> BowLogReg<T> {
    /// A zero-initialised model over `vocab` word ids and `classes` classes.
    pub fn new(vocab: usize, classes: usize) -> Self {
        let mut store = ParamStore::new();
        let bag = EmbeddingBag::new(&mut store, "bow", "bow", vocab, classes, BagMode::Sum, false, &mut Rng::new(0));
        bag.weight.set_values(vec![T::ZERO; vocab * classes]);
        let bias = store.add("bow.bias", "bow", init::zeros(&[classes]));
        BowLogReg { store, bag, bias, vocab }
    }
}

impl<T: Float> Classifier<T> for BowLogReg<T> {
    type Input = Vec<usize>;
    fn logits(&self, inputs: &[&Vec<usize>]) -> Result<Tensor<T>> {
        let bags: Vec<Vec<usize>> = inputs
            .iter()
            .map(|d| {
                let mut v = (*d).clone();
                v.sort_unstable();
                v.dedup();
                v
            })
            .collect();
        if let Some(&bad) = bags.iter().flatten().find(|&&i| i >= self.vocab) {
            return Err(TextError::Id { op: "BowLogReg", id: bad, count: self.vocab });
        }
        Ok(self.bag.forward_bags(&bags).add(&self.bias.get()))
    }
    fn params(&self) -> Vec<Param<T>> {
        self.store.params().to_vec()
    }
    fn set_training(&self, _on: bool) {}
}

/// Stratified `k`-fold split: returns the test indices of each fold (each class's examples are
/// shuffled with `seed` and dealt round-robin, so folds have near-equal class proportions).
pub fn stratified_folds(labels: &[usize], k: usize, seed: u64) -> Result<Vec<Vec<usize>>> {
    if k < 2 || k > labels.len() {
        return Err(TextError::Invalid { op: "stratified_folds", msg: format!("cannot make {k} folds of {} examples", labels.len()) });
    }
    let classes = labels.iter().copied().max().map_or(0, |m| m + 1);
    let mut rng = Rng::new(seed);
    let mut folds = vec![Vec::new(); k];
    let mut next = 0;
    for c in 0..classes {
        let mut idx: Vec<usize> = (0..labels.len()).filter(|&i| labels[i] == c).collect();
        rng.shuffle(&mut idx);
        for i in idx {
            folds[next % k].push(i);
            next += 1;
        }
    }
    for f in &mut folds {
        f.sort_unstable();
    }
    Ok(folds)
}

/// Mean and sample standard deviation (`n − 1`; 0 for a single value).
pub fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n.max(1.0);
    let var = if v.len() > 1 { v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (m, var.sqrt())
}

/// Cross-validated accuracy of one model.
#[derive(Clone, Debug, Serialize)]
pub struct CvResult {
    /// "cnn-rand", "cnn-static", "cnn-non-static" or "bow-logreg".
    pub model: String,
    /// Test accuracy of each fold.
    pub fold_accuracy: Vec<f64>,
    /// Mean over folds.
    pub mean: f64,
    /// Sample standard deviation over folds.
    pub std: f64,
    /// Wall-clock seconds of training and testing, summed over folds.
    pub seconds: f64,
}

/// Settings of [`text_cnn_sentences`].
#[derive(Clone, Debug)]
pub struct TextCnnSentencesConfig {
    /// Number of folds (Kim: 10).
    pub folds: usize,
    /// Run only the first this many folds (all if `None`; quick variants use 1–2).
    pub max_folds: Option<usize>,
    /// CNN variants to run.
    pub modes: Vec<EmbeddingMode>,
    /// CNN hyperparameters (its `vocab`, `emb_dim` (with pretrained vectors), `mode` and
    /// `seed` are set per fold and variant).
    pub cnn: TextCnnConfig,
    /// CNN training.
    pub cnn_fit: FitConfig,
    /// Logistic-regression training (set the optimiser's weight decay for L2).
    pub bow_fit: FitConfig,
    /// Words seen fewer times in a training fold map to the unknown word.
    pub min_count: usize,
    /// Seed of the folds and models.
    pub seed: u64,
}

impl TextCnnSentencesConfig {
    /// Kim's CNN settings (three variants) trained with Adam (Kim used Adadelta), 10 folds.
    pub fn standard() -> Self {
        let mut bow_optim = crate::deps::OptimConfig::adam(0.01);
        bow_optim.weight_decay = Some(1e-4);
        TextCnnSentencesConfig {
            folds: 10,
            max_folds: None,
            modes: vec![EmbeddingMode::Random, EmbeddingMode::Static, EmbeddingMode::NonStatic],
            cnn: TextCnnConfig::kim(0, 50, 2, EmbeddingMode::Random),
            cnn_fit: FitConfig { epochs: 10, batch_size: 50, optim: crate::deps::OptimConfig::adam(1e-3), seed: 0, group: Default::default() },
            bow_fit: FitConfig { epochs: 20, batch_size: 50, optim: bow_optim, seed: 0, group: Default::default() },
            min_count: 1,
            seed: 0,
        }
    }
}

/// Results of [`text_cnn_sentences`].
#[derive(Clone, Debug, Serialize)]
pub struct TextCnnSentencesResult {
    /// Number of sentences.
    pub examples: usize,
    /// Folds run.
    pub folds_run: usize,
    /// Folds of the split.
    pub folds: usize,
    /// Fraction of fold-vocabulary words found in the pretrained vectors (mean over folds), if
    /// vectors were given.
    pub pretrained_coverage: Option<f64>,
    /// One entry per model.
    pub models: Vec<CvResult>,
}

/// K-fold cross-validation of the text CNN variants and a bag-of-words logistic regression on
/// the same stratified folds. `docs` are token lists, `labels` class ids; `vectors` are needed
/// for the static and non-static variants (their dimension overrides `cfg.cnn.emb_dim`).
pub fn text_cnn_sentences(docs: &[Vec<String>], labels: &[usize], vectors: Option<&Embeddings>, cfg: &TextCnnSentencesConfig) -> Result<TextCnnSentencesResult> {
    let op = "text_cnn_sentences";
    if docs.len() != labels.len() {
        return Err(TextError::Shape { op, expected: vec![docs.len()], got: vec![labels.len()] });
    }
    if vectors.is_none() && cfg.modes.iter().any(|&m| m != EmbeddingMode::Random) {
        return Err(TextError::Invalid { op, msg: "static and non-static variants need pretrained vectors".into() });
    }
    let folds = stratified_folds(labels, cfg.folds, cfg.seed)?;
    let run = cfg.max_folds.unwrap_or(cfg.folds).min(cfg.folds);
    let mut names: Vec<String> = cfg.modes.iter().map(|m| format!("cnn-{}", m.name())).collect();
    names.push("bow-logreg".into());
    let mut accs = vec![Vec::new(); names.len()];
    let mut secs = vec![0.0; names.len()];
    let mut coverage = Vec::new();
    for (f, test) in folds.iter().enumerate().take(run) {
        let mut fold_models: Vec<CvModel> = cfg.modes.iter().map(|&m| CvModel::Cnn(m)).collect();
        fold_models.push(CvModel::BowLogReg);
        for (j, m) in fold_models.into_iter().enumerate() {
            let r = cv_fold(docs, labels, vectors, cfg, test, f, m)?;
            accs[j].push(r.accuracy);
            secs[j] += r.seconds;
            if j == 0 {
                coverage.extend(r.coverage);
            }
        }
    }
    let models = names
        .into_iter()
        .zip(accs)
        .zip(secs)
        .map(|((model, fold_accuracy), seconds)| {
            let (mean, std) = mean_std(&fold_accuracy);
            CvResult { model, fold_accuracy, mean, std, seconds }
        })
        .collect();
    Ok(TextCnnSentencesResult {
        examples: docs.len(),
        folds_run: run,
        folds: cfg.folds,
        pretrained_coverage: (!coverage.is_empty()).then(|| mean_std(&coverage).0),
        models,
    })
}

/// A model of the sentence-classification cross-validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CvModel {
    /// The text CNN with this embedding mode.
    Cnn(EmbeddingMode),
    /// The bag-of-words logistic regression.
    BowLogReg,
}

impl CvModel {
    /// `cnn-rand`, `cnn-static`, `cnn-non-static` or `bow-logreg`.
    pub fn name(self) -> String {
        match self {
            CvModel::Cnn(m) => format!("cnn-{}", m.name()),
            CvModel::BowLogReg => "bow-logreg".into(),
        }
    }
}

/// One fold of one model: its test accuracy, seconds, and the share of the fold's vocabulary
/// with a pretrained vector (when vectors are given).
#[derive(Clone, Debug)]
pub struct FoldResult {
    /// Test accuracy.
    pub accuracy: f64,
    /// Wall-clock seconds of training and testing.
    pub seconds: f64,
    /// Pretrained-vector coverage of the fold's vocabulary.
    pub coverage: Option<f64>,
}

/// Trains `model` on every example outside `test` (fold number `f`, which seeds it) and
/// returns its accuracy on `test`: the unit of [`text_cnn_sentences`], so a caller can run
/// (and resume) folds one at a time.
pub fn cv_fold(docs: &[Vec<String>], labels: &[usize], vectors: Option<&Embeddings>, cfg: &TextCnnSentencesConfig, test: &[usize], f: usize, model: CvModel) -> Result<FoldResult> {
    let classes = labels.iter().copied().max().map_or(0, |m| m + 1).max(2);
    let mut is_test = vec![false; docs.len()];
    test.iter().for_each(|&i| is_test[i] = true);
    let train: Vec<usize> = (0..docs.len()).filter(|&i| !is_test[i]).collect();
    let vocab = Vocab::build(train.iter().map(|&i| docs[i].as_slice()), cfg.min_count);
    let enc = |idx: &[usize]| -> Vec<Vec<usize>> { idx.iter().map(|&i| vocab.encode(&docs[i])).collect() };
    let (xtr, xte) = (enc(&train), enc(test));
    let ytr: Vec<usize> = train.iter().map(|&i| labels[i]).collect();
    let yte: Vec<usize> = test.iter().map(|&i| labels[i]).collect();
    let seed = cfg.seed.wrapping_mul(1000).wrapping_add(f as u64);
    let pre = vectors.map(|v| {
        let (m, hits) = pretrained_matrix(&vocab, v, &mut Rng::new(seed ^ 0xe3b));
        (m, v.dim, hits as f64 / vocab.len() as f64)
    });
    let t0 = Instant::now();
    let accuracy = match model {
        CvModel::Cnn(mode) => {
            if mode != EmbeddingMode::Random && pre.is_none() {
                return Err(TextError::Invalid { op: "cv_fold", msg: "static and non-static variants need pretrained vectors".into() });
            }
            let emb_dim = pre.as_ref().map_or(cfg.cnn.emb_dim, |p| p.1);
            let c = TextCnnConfig { vocab: vocab.len(), emb_dim, classes, mode, seed, ..cfg.cnn.clone() };
            let net = TextCnn::<f32>::new(c, pre.as_ref().map(|p| p.0.as_slice()))?;
            fit(&net, &xtr, &ytr, &FitConfig { seed, ..cfg.cnn_fit.clone() })?;
            accuracy(&predict(&net, &xte, 100)?, &yte)
        }
        CvModel::BowLogReg => {
            let bow = BowLogReg::<f32>::new(vocab.len(), classes);
            fit(&bow, &xtr, &ytr, &FitConfig { seed, ..cfg.bow_fit.clone() })?;
            accuracy(&predict(&bow, &xte, 500)?, &yte)
        }
    };
    Ok(FoldResult { accuracy, seconds: t0.elapsed().as_secs_f64(), coverage: pre.map(|p| p.2) })
}

/// Splits documents (each a list of sentences) into train and test by document with a seeded
/// shuffle; returns the document indices of each side (the split to save with the results).
pub fn split_documents(n_docs: usize, test_fraction: f64, seed: u64) -> Result<(Vec<usize>, Vec<usize>)> {
    if !(0.0..1.0).contains(&test_fraction) || n_docs < 2 {
        return Err(TextError::Invalid { op: "split_documents", msg: format!("cannot split {n_docs} documents with test fraction {test_fraction}") });
    }
    let mut idx: Vec<usize> = (0..n_docs).collect();
    Rng::new(seed).shuffle(&mut idx);
    let n_test = ((n_docs as f64 * test_fraction).round() as usize).clamp(1, n_docs - 1);
    let mut test = idx[..n_test].to_vec();
    let mut train = idx[n_test..].to_vec();
    test.sort_unstable();
    train.sort_unstable();
    Ok((train, test))
}

/// One tagger's result in [`pos_tagging`].
#[derive(Clone, Debug, Serialize)]
pub struct TaggerResult {
    /// "most-frequent", or "{encoder}-{head}".
    pub model: String,
    /// Test accuracy.
    pub test: TagAccuracy,
    /// Mean per-token training loss per epoch (empty for the baseline).
    pub epoch_loss: Vec<f64>,
    /// Training tokens per second (tokens × epochs / seconds).
    pub train_tokens_per_sec: f64,
    /// Decoding tokens per second on the test set.
    pub decode_tokens_per_sec: f64,
}

/// Results of [`pos_tagging`].
#[derive(Clone, Debug, Serialize)]
pub struct PosTaggingResult {
    /// Number of tags.
    pub tags: usize,
    /// Training tokens.
    pub train_tokens: usize,
    /// Test tokens.
    pub test_tokens: usize,
    /// One entry per model, the baseline first.
    pub models: Vec<TaggerResult>,
}

/// Trains the most-frequent-tag baseline and every tagger configuration in `taggers` on
/// `train`, and scores them on `test` (overall and out-of-vocabulary accuracy, throughput).
pub fn pos_tagging(train: &[TaggedTokens], test: &[TaggedTokens], taggers: &[TaggerConfig], fit_cfg: &TaggerFit, min_count: usize) -> Result<PosTaggingResult> {
    let lex = Lexicon::build(train, min_count);
    // Tags that occur only in the test set cannot be predicted; keep them as errors by
    // scoring against the lexicon's tag names (an unseen tag never matches).
    let train_tokens: usize = train.iter().map(|s| s.words.len()).sum();
    let test_tokens: usize = test.iter().map(|s| s.words.len()).sum();
    let mut models = Vec::new();
    let t0 = Instant::now();
    let base = MostFrequentTag::train(&lex, train)?;
    let train_s = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let pred: Vec<Vec<usize>> = test.iter().map(|s| base.predict(&s.words)).collect();
    let dec_s = t0.elapsed().as_secs_f64();
    models.push(TaggerResult {
        model: "most-frequent".into(),
        test: tag_accuracy(&lex, test, &pred)?,
        epoch_loss: vec![],
        train_tokens_per_sec: train_tokens as f64 / train_s.max(1e-9),
        decode_tokens_per_sec: test_tokens as f64 / dec_s.max(1e-9),
    });
    for c in taggers {
        let m = NeuralTagger::<f32>::new(c.clone(), lex.clone())?;
        let t0 = Instant::now();
        let epoch_loss = train_tagger(&m, train, fit_cfg)?;
        let train_s = t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        let pred = predict_all(&m, test, 64)?;
        let dec_s = t0.elapsed().as_secs_f64();
        let name = format!("{:?}-{:?}", c.encoder, c.head).to_lowercase();
        models.push(TaggerResult {
            model: name,
            test: tag_accuracy(&lex, test, &pred)?,
            epoch_loss,
            train_tokens_per_sec: (train_tokens * fit_cfg.epochs) as f64 / train_s.max(1e-9),
            decode_tokens_per_sec: test_tokens as f64 / dec_s.max(1e-9),
        });
    }
    Ok(PosTaggingResult { tags: lex.tags.len(), train_tokens, test_tokens, models })
}
