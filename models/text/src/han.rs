//! Hierarchical attention network (Yang et al. 2016, "Hierarchical attention networks for
//! document classification"):
//!
//! ```text
//! word level      h_{it} = BiGRU(x_{i1..iT_i})_t               per sentence i
//!                 u_{it} = tanh(W_w h_{it} + b_w)
//!                 α_{it} = softmax_t(u_{it}ᵀ u_w)                learned word context u_w
//!                 s_i    = Σ_t α_{it} h_{it}
//! sentence level  h_i = BiGRU(s_1..s_L)_i,  u_i = tanh(W_s h_i + b_s)
//!                 α_i = softmax_i(u_iᵀ u_s),  v = Σ_i α_i h_i     learned sentence context u_s
//! logits = W_c v + b_c
//! ```
//!
//! Ragged input: each sentence runs only over its own words and each document only over its
//! own sentences; padded words and sentences get attention weight exactly 0 and no gradient.
//! An empty sentence is read as the single unknown word (id 0), an empty document as one such
//! sentence.

use crate::deps::{Bidirectional, Embedding, GruCell, GruVariant, Linear, Param, ParamStore, SelfAttention};
use crate::error::{Result, TextError};
use crate::train::Classifier;
use chi_autodiff::{Float, Rng, Tensor};
use std::rc::Rc;

/// Hyperparameters of a [`Han`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct HanConfig {
    /// Vocabulary size.
    pub vocab: usize,
    /// Embedding size.
    pub emb_dim: usize,
    /// Hidden size of each GRU direction (Yang et al.: 50).
    pub hidden: usize,
    /// Attention size (Yang et al.: 100).
    pub attention: usize,
    /// Number of classes.
    pub classes: usize,
    /// Seed of the initialisation.
    pub seed: u64,
}

/// A document batch laid out for the network.
#[derive(Clone, Debug)]
pub struct HanBatch {
    /// Word ids of every sentence, `[N, W]` row-major (0 past each sentence's length).
    pub ids: Vec<usize>,
    /// Words per sentence (`N` entries, each ≥ 1).
    pub word_lengths: Vec<usize>,
    /// Sentences per document (`B` entries, each ≥ 1); the sentences of document `b` are rows
    /// `Σ_{b'<b} n_{b'} …` of `ids`.
    pub sentence_counts: Vec<usize>,
    /// Padded words per sentence `W`.
    pub max_words: usize,
    /// Padded sentences per document `S`.
    pub max_sentences: usize,
}

/// What a forward pass returns.
pub struct HanOutput<T: Float> {
    /// `[B, classes]`.
    pub logits: Tensor<T>,
    /// Word attention `α_{it}`, `[N, W]` (0 at padding).
    pub word_attention: Tensor<T>,
    /// Sentence attention `α_i`, `[B, S]` (0 at padding).
    pub sentence_attention: Tensor<T>,
}

/// The hierarchical attention network (see the module docs). Parameters: `emb.weight`,
/// `word.fwd.*`, `word.bwd.*`, `word_att.*`, `sent.fwd.*`, `sent.bwd.*`, `sent_att.*`, `out.*`.
pub struct Han<T: Float> {
    /// All parameters.
    pub store: ParamStore<T>,
    /// Word embeddings.
    pub embedding: Embedding<T>,
    word_rnn: Bidirectional<GruCell<T>>,
    word_att: SelfAttention<T>,
    sent_rnn: Bidirectional<GruCell<T>>,
    sent_att: SelfAttention<T>,
    out: Linear<T>,
    cfg: HanConfig,
}

impl<T: Float> Han<T> {
    /// A new network; `pretrained` (`[vocab, emb_dim]` row-major) initialises the embeddings.
    pub fn new(cfg: HanConfig, pretrained: Option<&[f64]>) -> Result<Self> {
        let op = "Han::new";
        Self::check(op, &cfg)?;
        let mut rng = Rng::new(cfg.seed);
        let mut store = ParamStore::new();
        let embedding = Embedding::in_store(&mut store, "emb", "emb", cfg.vocab, cfg.emb_dim, false, &mut rng);
        match pretrained {
            Some(m) if m.len() == cfg.vocab * cfg.emb_dim => embedding.weight.set_values(m.iter().map(|&v| T::from_f64(v)).collect()),
            Some(m) => return Err(TextError::Shape { op, expected: vec![cfg.vocab * cfg.emb_dim], got: vec![m.len()] }),
            None => {}
        }
        Self::build(store, embedding, cfg, &mut rng)
    }
    /// A network around an embedding the caller made in `store` (e.g. under another name, or
    /// from its own pretrained vectors); the recurrent, attention and output parameters are
    /// added to `store`, which the network then owns. The embedding must be `[cfg.vocab,
    /// cfg.emb_dim]`.
    pub fn with_embedding(store: ParamStore<T>, embedding: Embedding<T>, cfg: HanConfig) -> Result<Self> {
        let op = "Han::with_embedding";
        Self::check(op, &cfg)?;
        if embedding.weight.shape() != [cfg.vocab, cfg.emb_dim] {
            return Err(TextError::Shape { op, expected: vec![cfg.vocab, cfg.emb_dim], got: embedding.weight.shape() });
        }
        let mut rng = Rng::new(cfg.seed);
        Self::build(store, embedding, cfg, &mut rng)
    }
    fn check(op: &'static str, cfg: &HanConfig) -> Result<()> {
        if cfg.vocab == 0 || cfg.emb_dim == 0 || cfg.hidden == 0 || cfg.attention == 0 || cfg.classes == 0 {
            return Err(TextError::Invalid { op, msg: format!("every size must be positive: {cfg:?}") });
        }
        // Sizes that cannot fit in memory are refused before anything is allocated.
        for (what, dims) in [("Han embedding", [cfg.vocab, cfg.emb_dim]), ("Han word GRU", [cfg.emb_dim.max(cfg.hidden.saturating_mul(2)), cfg.hidden.saturating_mul(3)]), ("Han attention", [cfg.hidden.saturating_mul(2), cfg.attention])] {
            chi_nn::limits::check_fits_memory(what, &dims).map_err(|e| TextError::Invalid { op, msg: e.to_string() })?;
        }
        Ok(())
    }
    fn build(mut store: ParamStore<T>, embedding: Embedding<T>, cfg: HanConfig, rng: &mut Rng) -> Result<Self> {
        let (h, a) = (cfg.hidden, cfg.attention);
        let gru = |store: &mut ParamStore<T>, name: &str, input: usize, rng: &mut Rng| GruCell::new(store, name, "han", input, h, GruVariant::ResetBeforeMatmul, rng);
        let wf = gru(&mut store, "word.fwd", cfg.emb_dim, rng);
        let wb = gru(&mut store, "word.bwd", cfg.emb_dim, rng);
        let word_att = SelfAttention::new(&mut store, "word_att", "han", 2 * h, a, rng);
        let sf = gru(&mut store, "sent.fwd", 2 * h, rng);
        let sb = gru(&mut store, "sent.bwd", 2 * h, rng);
        let sent_att = SelfAttention::new(&mut store, "sent_att", "han", 2 * h, a, rng);
        let out = Linear::in_store(&mut store, "out", "han", 2 * h, cfg.classes, true, rng);
        Ok(Han {
            store,
            embedding,
            word_rnn: Bidirectional::new(wf, wb),
            word_att,
            sent_rnn: Bidirectional::new(sf, sb),
            sent_att,
            out,
            cfg,
        })
    }
    /// The configuration.
    pub fn config(&self) -> &HanConfig {
        &self.cfg
    }
    /// Lays out a batch of documents (each a list of sentences of word ids).
    pub fn batch(&self, docs: &[&[Vec<usize>]]) -> Result<HanBatch> {
        let unk = [vec![0usize]];
        let docs: Vec<&[Vec<usize>]> = docs.iter().map(|d| if d.is_empty() { &unk[..] } else { *d }).collect();
        let max_words = docs.iter().flat_map(|d| d.iter().map(|s| s.len().max(1))).max().unwrap_or(1);
        let max_sentences = docs.iter().map(|d| d.len()).max().unwrap_or(1);
        let mut ids = Vec::new();
        let mut word_lengths = Vec::new();
        for d in &docs {
            for s in d.iter() {
                if let Some(&bad) = s.iter().find(|&&i| i >= self.cfg.vocab) {
                    return Err(TextError::Id { op: "Han::batch", id: bad, count: self.cfg.vocab });
                }
                let mut row = s.clone();
                if row.is_empty() {
                    row.push(0);
                }
                word_lengths.push(row.len());
                row.resize(max_words, 0);
                ids.extend(row);
            }
        }
        Ok(HanBatch { ids, word_lengths, sentence_counts: docs.iter().map(|d| d.len()).collect(), max_words, max_sentences })
    }
    /// The embedded words `[N, W, E]`, zero past each sentence's length.
    pub fn embed(&self, b: &HanBatch) -> Tensor<T> {
        let (n, w, e) = (b.word_lengths.len(), b.max_words, self.cfg.emb_dim);
        let mask: Vec<T> = b.word_lengths.iter().flat_map(|&l| (0..w).map(move |t| if t < l { T::ONE } else { T::ZERO })).collect();
        self.embedding.weight.get().gather_rows(Rc::new(b.ids.clone()), &[n, w, e]).mul(&Tensor::from_vec(mask, &[n, w, 1]))
    }
    /// The forward pass from embedded words `x [N, W, E]`.
    pub fn forward_embedded(&self, x: &Tensor<T>, b: &HanBatch) -> Result<HanOutput<T>> {
        let (n, w, e) = (b.word_lengths.len(), b.max_words, self.cfg.emb_dim);
        if x.shape() != [n, w, e] {
            return Err(TextError::Shape { op: "Han::forward_embedded", expected: vec![n, w, e], got: x.shape().to_vec() });
        }
        let word_mask: Vec<bool> = b.word_lengths.iter().flat_map(|&l| (0..w).map(move |t| t < l)).collect();
        let hw = self.word_rnn.forward(x, Some(&b.word_lengths)).outputs; // [N, W, 2H]
        let wa = self.word_att.forward(&hw, Some(&word_mask)); // s [N, 2H]
        // Sentence vectors into [B, S, 2H]; padded slots take row 0 and are then zeroed.
        let (nb, s, d) = (b.sentence_counts.len(), b.max_sentences, 2 * self.cfg.hidden);
        let mut rows = Vec::with_capacity(nb * s);
        let mut sent_mask = Vec::with_capacity(nb * s);
        let mut first = 0;
        for &c in &b.sentence_counts {
            for j in 0..s {
                rows.push(if j < c { first + j } else { 0 });
                sent_mask.push(j < c);
            }
            first += c;
        }
        let keep: Vec<T> = sent_mask.iter().map(|&k| if k { T::ONE } else { T::ZERO }).collect();
        let sv = wa.context.gather_rows(Rc::new(rows), &[nb, s, d]).mul(&Tensor::from_vec(keep, &[nb, s, 1]));
        let hs = self.sent_rnn.forward(&sv, Some(&b.sentence_counts)).outputs;
        let sa = self.sent_att.forward(&hs, Some(&sent_mask));
        Ok(HanOutput { logits: self.out.forward(&sa.context), word_attention: wa.weights, sentence_attention: sa.weights })
    }
    /// The forward pass of a batch of documents.
    pub fn forward(&self, docs: &[&[Vec<usize>]]) -> Result<HanOutput<T>> {
        let b = self.batch(docs)?;
        self.forward_embedded(&self.embed(&b), &b)
    }
}

impl<T: Float> Classifier<T> for Han<T> {
    type Input = Vec<Vec<usize>>;
    fn logits(&self, inputs: &[&Vec<Vec<usize>>]) -> Result<Tensor<T>> {
        let docs: Vec<&[Vec<usize>]> = inputs.iter().map(|d| d.as_slice()).collect();
        Ok(self.forward(&docs)?.logits)
    }
    fn params(&self) -> Vec<Param<T>> {
        self.store.params().iter().filter(|p| !p.is_frozen()).cloned().collect()
    }
    fn set_training(&self, _on: bool) {}
}
