//! Sequence taggers: the most-frequent-tag baseline and neural taggers made of
//!
//! * word features: a word embedding (words seen fewer than `min_count` times in training
//!   share the unknown-word row, so that row is trained), a 3-letter suffix embedding and a
//!   4-way shape embedding (lower / Capitalised / UPPER / other) — the last two give
//!   out-of-vocabulary words something to go on;
//! * an encoder: none (each position sees only its own word), a BiLSTM, or a bidirectional
//!   CA-RNN;
//! * a head: per-position softmax, or a linear-chain [`crate::crf`] over the emission scores
//!   `Linear(encoder output) [B, T, K]` (BiLSTM-CRF: Huang, Xu & Yu 2015; Lample et al. 2016).
//!
//! Losses are per token (the CRF's sentence log-likelihoods are summed and divided by the
//! number of tokens) so the two heads train at comparable learning rates.

use crate::brown::TaggedTokens;
use crate::crf::Crf;
use crate::deps::{Bidirectional, CaRnnCell, CaRnnConfig, Embedding, Linear, LstmCell, OptimConfig, Optimizer, Param, ParamStore};
use crate::error::{Result, TextError};
use crate::vocab::Vocab;
use chi_autodiff::{no_grad, Float, Rng, Tensor};
use std::collections::HashMap;
use std::rc::Rc;

/// Word, suffix and tag inventories of a training set.
#[derive(Clone, Debug)]
pub struct Lexicon {
    /// Lower-cased words seen at least `min_count` times (id 0: unknown).
    pub words: Vocab,
    /// Every word seen in training at all (for the out-of-vocabulary accuracy).
    pub seen: std::collections::HashSet<String>,
    /// Lower-cased 3-letter suffixes (id 0: unknown).
    pub suffixes: Vocab,
    /// Tag names; a tag's id is its index.
    pub tags: Vec<String>,
}

fn suffix(w: &str) -> String {
    let lw = w.to_lowercase();
    let chars: Vec<char> = lw.chars().collect();
    chars[chars.len().saturating_sub(3)..].iter().collect()
}

fn shape(w: &str) -> usize {
    let mut cs = w.chars();
    match cs.next() {
        Some(c) if c.is_lowercase() => 0,
        Some(c) if c.is_uppercase() && w.chars().skip(1).all(|c| !c.is_alphabetic() || c.is_lowercase()) => 1,
        Some(c) if c.is_uppercase() => 2,
        _ => 3,
    }
}

impl Lexicon {
    /// Builds the inventories from training sentences.
    pub fn build(train: &[TaggedTokens], min_count: usize) -> Lexicon {
        let lower: Vec<Vec<String>> = train.iter().map(|s| s.words.iter().map(|w| w.to_lowercase()).collect()).collect();
        let words = Vocab::build(lower.iter().map(|s| s.as_slice()), min_count);
        let sufs: Vec<Vec<String>> = train.iter().map(|s| s.words.iter().map(|w| suffix(w)).collect()).collect();
        let suffixes = Vocab::build(sufs.iter().map(|s| s.as_slice()), min_count);
        let mut tags: Vec<String> = Vec::new();
        for s in train {
            for t in &s.tags {
                if !tags.contains(t) {
                    tags.push(t.clone());
                }
            }
        }
        let seen = train.iter().flat_map(|s| s.words.iter().cloned()).collect();
        Lexicon { words, seen, suffixes, tags }
    }
    /// Tag ids of a sentence (an unseen tag is an error).
    pub fn tag_ids(&self, s: &TaggedTokens) -> Result<Vec<usize>> {
        s.tags
            .iter()
            .map(|t| self.tags.iter().position(|x| x == t).ok_or_else(|| TextError::Invalid { op: "Lexicon::tag_ids", msg: format!("tag {t:?} was not seen in training") }))
            .collect()
    }
}

/// Accuracy of predicted tags, overall and on out-of-vocabulary words (words not seen in
/// training).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct TagAccuracy {
    /// Fraction of tokens tagged correctly.
    pub overall: f64,
    /// Fraction of out-of-vocabulary tokens tagged correctly (NaN if there are none).
    pub oov: f64,
    /// Number of tokens.
    pub tokens: usize,
    /// Number of out-of-vocabulary tokens.
    pub oov_tokens: usize,
}

/// Scores predicted tag ids against gold sentences.
pub fn tag_accuracy(lex: &Lexicon, gold: &[TaggedTokens], predicted: &[Vec<usize>]) -> Result<TagAccuracy> {
    let (mut ok, mut n, mut ok_oov, mut n_oov) = (0usize, 0usize, 0usize, 0usize);
    for (s, p) in gold.iter().zip(predicted) {
        if p.len() != s.words.len() {
            return Err(TextError::Shape { op: "tag_accuracy", expected: vec![s.words.len()], got: vec![p.len()] });
        }
        for ((w, t), &pi) in s.words.iter().zip(&s.tags).zip(p) {
            let right = lex.tags.get(pi) == Some(t);
            n += 1;
            ok += usize::from(right);
            if !lex.seen.contains(w) {
                n_oov += 1;
                ok_oov += usize::from(right);
            }
        }
    }
    if gold.len() != predicted.len() {
        return Err(TextError::Shape { op: "tag_accuracy", expected: vec![gold.len()], got: vec![predicted.len()] });
    }
    Ok(TagAccuracy {
        overall: ok as f64 / n.max(1) as f64,
        oov: if n_oov == 0 { f64::NAN } else { ok_oov as f64 / n_oov as f64 },
        tokens: n,
        oov_tokens: n_oov,
    })
}

/// The baseline: each known word gets the tag it had most often in training (ties: the tag
/// seen first); an unknown word gets the most frequent tag among words seen once in training
/// (the usual proxy for unknown words), falling back to the most frequent tag overall.
#[derive(Clone, Debug)]
pub struct MostFrequentTag {
    by_word: HashMap<String, usize>,
    unknown: usize,
}

impl MostFrequentTag {
    /// Counts tags in the training sentences.
    pub fn train(lex: &Lexicon, train: &[TaggedTokens]) -> Result<Self> {
        let k = lex.tags.len();
        let mut counts: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut total = vec![0usize; k];
        for s in train {
            for (w, t) in s.words.iter().zip(lex.tag_ids(s)?) {
                counts.entry(w.as_str()).or_insert_with(|| vec![0; k])[t] += 1;
                total[t] += 1;
            }
        }
        let argmax = |c: &[usize]| c.iter().enumerate().fold(0, |b, (i, &v)| if v > c[b] { i } else { b });
        let mut hapax = vec![0usize; k];
        for c in counts.values() {
            if c.iter().sum::<usize>() == 1 {
                hapax[argmax(c)] += 1;
            }
        }
        let unknown = if hapax.iter().any(|&v| v > 0) { argmax(&hapax) } else { argmax(&total) };
        Ok(MostFrequentTag { by_word: counts.into_iter().map(|(w, c)| (w.to_string(), argmax(&c))).collect(), unknown })
    }
    /// Tags a sentence.
    pub fn predict(&self, words: &[String]) -> Vec<usize> {
        words.iter().map(|w| self.by_word.get(w).copied().unwrap_or(self.unknown)).collect()
    }
}

/// The encoder of a [`NeuralTagger`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum EncoderKind {
    /// No context: each position's emissions come from its own word features.
    None,
    /// A bidirectional LSTM.
    BiLstm,
    /// A bidirectional context-aware RNN (CA-RNN cells).
    CaRnn,
}

/// The output head of a [`NeuralTagger`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum HeadKind {
    /// Independent softmax per position.
    Softmax,
    /// Linear-chain CRF, Viterbi decoding.
    Crf,
}

/// Hyperparameters of a [`NeuralTagger`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct TaggerConfig {
    /// Word embedding size.
    pub word_dim: usize,
    /// Suffix embedding size (0: no suffix feature).
    pub suffix_dim: usize,
    /// Shape embedding size (0: no shape feature).
    pub shape_dim: usize,
    /// Hidden size per direction.
    pub hidden: usize,
    /// Encoder.
    pub encoder: EncoderKind,
    /// Head.
    pub head: HeadKind,
    /// Seed of the initialisation.
    pub seed: u64,
}

enum Encoder<T: Float> {
    None,
    Lstm(Bidirectional<LstmCell<T>>),
    Ca(Bidirectional<CaRnnCell<T>>),
}

/// A neural tagger (see the module docs). Parameters: `word.weight`, `suffix.weight`,
/// `shape.weight`, `enc.fwd.*`, `enc.bwd.*`, `emit.*`, `crf.*`.
pub struct NeuralTagger<T: Float> {
    /// All parameters.
    pub store: ParamStore<T>,
    /// The inventories the tagger was built for.
    pub lexicon: Lexicon,
    word: Embedding<T>,
    suffix: Option<Embedding<T>>,
    shape: Option<Embedding<T>>,
    encoder: Encoder<T>,
    emit: Linear<T>,
    /// The CRF head, if any.
    pub crf: Option<Crf<T>>,
    cfg: TaggerConfig,
}

/// A batch of sentences as feature ids, padded to the longest.
struct Features {
    words: Vec<usize>,
    suffixes: Vec<usize>,
    shapes: Vec<usize>,
    lengths: Vec<usize>,
    time: usize,
}

impl<T: Float> NeuralTagger<T> {
    /// A new tagger for `lexicon`.
    pub fn new(cfg: TaggerConfig, lexicon: Lexicon) -> Result<Self> {
        if cfg.word_dim == 0 || lexicon.tags.is_empty() || (cfg.encoder != EncoderKind::None && cfg.hidden == 0) {
            return Err(TextError::Invalid { op: "NeuralTagger::new", msg: format!("sizes must be positive and tags non-empty: {cfg:?}") });
        }
        let mut rng = Rng::new(cfg.seed);
        let mut store = ParamStore::new();
        let k = lexicon.tags.len();
        let word = Embedding::in_store(&mut store, "word", "tagger", lexicon.words.len(), cfg.word_dim, false, &mut rng);
        let scale = |e: &Embedding<T>, s: f64| e.weight.update(|v| v.iter_mut().for_each(|x| *x *= T::from_f64(s)));
        scale(&word, 0.1);
        let suffix = (cfg.suffix_dim > 0).then(|| Embedding::in_store(&mut store, "suffix", "tagger", lexicon.suffixes.len(), cfg.suffix_dim, false, &mut rng));
        let shape = (cfg.shape_dim > 0).then(|| Embedding::in_store(&mut store, "shape", "tagger", 4, cfg.shape_dim, false, &mut rng));
        for e in suffix.iter().chain(&shape) {
            scale(e, 0.1);
        }
        let input = cfg.word_dim + cfg.suffix_dim + cfg.shape_dim;
        let h = cfg.hidden;
        let encoder = match cfg.encoder {
            EncoderKind::None => Encoder::None,
            EncoderKind::BiLstm => Encoder::Lstm(Bidirectional::new(
                LstmCell::new(&mut store, "enc.fwd", "tagger", input, h, false, &mut rng),
                LstmCell::new(&mut store, "enc.bwd", "tagger", input, h, false, &mut rng),
            )),
            EncoderKind::CaRnn => Encoder::Ca(Bidirectional::new(
                CaRnnCell::new(&mut store, "enc.fwd", input, h, CaRnnConfig::default(), &mut rng),
                CaRnnCell::new(&mut store, "enc.bwd", input, h, CaRnnConfig::default(), &mut rng),
            )),
        };
        let enc_out = if cfg.encoder == EncoderKind::None { input } else { 2 * h };
        let emit = Linear::in_store(&mut store, "emit", "tagger", enc_out, k, true, &mut rng);
        let crf = (cfg.head == HeadKind::Crf).then(|| Crf::new(&mut store, "crf", "tagger", k, &mut rng));
        Ok(NeuralTagger { store, lexicon, word, suffix, shape, encoder, emit, crf, cfg })
    }
    /// The configuration.
    pub fn config(&self) -> &TaggerConfig {
        &self.cfg
    }
    /// The trainable parameters.
    pub fn params(&self) -> Vec<Param<T>> {
        self.store.params().to_vec()
    }
    fn features(&self, sents: &[&[String]]) -> Result<Features> {
        if let Some(row) = sents.iter().position(|s| s.is_empty()) {
            return Err(TextError::Length { op: "NeuralTagger", row, length: 0, max: 0 });
        }
        let time = sents.iter().map(|s| s.len()).max().unwrap_or(0);
        let n = sents.len() * time;
        let (mut words, mut suffixes, mut shapes) = (vec![0; n], vec![0; n], vec![0; n]);
        for (r, s) in sents.iter().enumerate() {
            for (i, w) in s.iter().enumerate() {
                words[r * time + i] = self.lexicon.words.id(&w.to_lowercase());
                suffixes[r * time + i] = self.lexicon.suffixes.id(&suffix(w));
                shapes[r * time + i] = shape(w);
            }
        }
        Ok(Features { words, suffixes, shapes, lengths: sents.iter().map(|s| s.len()).collect(), time })
    }
    /// Emission scores `[B, T, K]` of a batch of sentences and their lengths.
    pub fn emissions(&self, sents: &[&[String]]) -> Result<(Tensor<T>, Vec<usize>)> {
        let f = self.features(sents)?;
        let shape_bt = [sents.len(), f.time];
        let mut parts = vec![self.word.forward_shaped(&f.words, &shape_bt)];
        if let Some(e) = &self.suffix {
            parts.push(e.forward_shaped(&f.suffixes, &shape_bt));
        }
        if let Some(e) = &self.shape {
            parts.push(e.forward_shaped(&f.shapes, &shape_bt));
        }
        let x = if parts.len() == 1 { parts.remove(0) } else { Tensor::concat(&parts, 2) };
        let h = match &self.encoder {
            Encoder::None => x,
            Encoder::Lstm(b) => b.forward(&x, Some(&f.lengths)).outputs,
            Encoder::Ca(b) => b.forward(&x, Some(&f.lengths)).outputs,
        };
        Ok((self.emit.forward(&h), f.lengths))
    }
    /// Per-token training loss of tagged sentences (tag ids from the lexicon).
    pub fn loss(&self, sents: &[&[String]], tags: &[Vec<usize>]) -> Result<Tensor<T>> {
        let (em, lengths) = self.emissions(sents)?;
        let tokens: usize = lengths.iter().sum();
        match &self.crf {
            Some(crf) => Ok(crf.loss(&em, tags, &lengths)?.mul_scalar(sents.len() as f64 / tokens as f64)),
            None => {
                let (b, t, k) = (em.dim(0), em.dim(1), em.dim(2));
                let mut rows = Vec::with_capacity(tokens);
                let mut gold = Vec::with_capacity(tokens);
                for (r, (&l, y)) in lengths.iter().zip(tags).enumerate() {
                    if y.len() < l {
                        return Err(TextError::Shape { op: "NeuralTagger::loss", expected: vec![l], got: vec![y.len()] });
                    }
                    if let Some(&bad) = y[..l].iter().find(|&&v| v >= k) {
                        return Err(TextError::Id { op: "NeuralTagger::loss", id: bad, count: k });
                    }
                    rows.extend((0..l).map(|i| r * t + i));
                    gold.extend_from_slice(&y[..l]);
                }
                Ok(em.reshape(&[b * t, k]).gather_rows(Rc::new(rows), &[tokens, k]).cross_entropy(&gold))
            }
        }
    }
    /// Predicted tag ids (Viterbi with a CRF head, per-position argmax otherwise).
    pub fn predict(&self, sents: &[&[String]]) -> Result<Vec<Vec<usize>>> {
        let (em, lengths) = no_grad(|| self.emissions(sents))?;
        match &self.crf {
            Some(crf) => crf.decode(&em, &lengths),
            None => {
                let t = em.dim(1);
                let am = em.argmax_axis(2);
                Ok(lengths.iter().enumerate().map(|(r, &l)| am[r * t..r * t + l].to_vec()).collect())
            }
        }
    }
}

/// Options of [`train_tagger`].
#[derive(Clone, Debug)]
pub struct TaggerFit {
    /// Passes over the training set.
    pub epochs: usize,
    /// Sentences per step.
    pub batch_size: usize,
    /// Optimiser.
    pub optim: OptimConfig,
    /// Global gradient-norm clip (0: none).
    pub clip: f64,
    /// Seed of the shuffling.
    pub seed: u64,
    /// The processes training runs on ([`crate::deps::Group::one`] by default): with several
    /// ranks, each takes its share of every batch's sentences and the gradients are averaged
    /// weighted by tokens, which is the single-process step up to rounding.
    pub group: crate::deps::Group,
}

/// Trains a tagger; returns the mean per-token loss of each epoch (over every rank's tokens).
pub fn train_tagger<T: Float>(model: &NeuralTagger<T>, train: &[TaggedTokens], cfg: &TaggerFit) -> Result<Vec<f64>> {
    let tags: Vec<Vec<usize>> = train.iter().map(|s| model.lexicon.tag_ids(s)).collect::<Result<_>>()?;
    let mut opt = Optimizer::try_new(cfg.optim.clone()).map_err(|msg| TextError::Invalid { op: "train_tagger", msg: msg.to_string() })?;
    let params = model.params();
    let group = &cfg.group;
    let mut sync = crate::deps::GradSync::new(group, &params);
    let mut rng = Rng::new(cfg.seed);
    let mut order: Vec<usize> = (0..train.len()).collect();
    let mut losses = Vec::with_capacity(cfg.epochs);
    for _ in 0..cfg.epochs {
        rng.shuffle(&mut order);
        let (mut total, mut tokens) = (0.0, 0usize);
        for chunk in order.chunks(cfg.batch_size.max(1)) {
            let mine = group.shard(chunk);
            let sents: Vec<&[String]> = mine.iter().map(|&i| train[i].words.as_slice()).collect();
            let y: Vec<Vec<usize>> = mine.iter().map(|&i| tags[i].clone()).collect();
            let n: usize = sents.iter().map(|s| s.len()).sum();
            let global_n: usize = chunk.iter().map(|&i| train[i].words.len()).sum();
            for p in &params {
                p.zero_grad();
            }
            let loss = if n == 0 { Tensor::scalar(T::ZERO) } else { model.loss(&sents, &y)? };
            let (mean, mut g) = sync.backward(&loss, n as f64)?;
            total += mean * global_n as f64;
            tokens += global_n;
            if cfg.clip > 0.0 {
                g.clip_global_norm(cfg.clip);
            }
            opt.step(&params, &g);
        }
        losses.push(total / tokens.max(1) as f64);
    }
    Ok(losses)
}

/// Tags every sentence, `batch` at a time.
pub fn predict_all<T: Float>(model: &NeuralTagger<T>, sents: &[TaggedTokens], batch: usize) -> Result<Vec<Vec<usize>>> {
    let mut out = Vec::with_capacity(sents.len());
    for chunk in sents.chunks(batch.max(1)) {
        let s: Vec<&[String]> = chunk.iter().map(|x| x.words.as_slice()).collect();
        out.extend(model.predict(&s)?);
    }
    Ok(out)
}
