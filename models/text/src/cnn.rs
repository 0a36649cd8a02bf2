//! Convolutional sentence classifier of Kim (2014), "Convolutional Neural Networks for Sentence
//! Classification":
//!
//! ```text
//! x_i ∈ ℝ^E                    word embeddings (random, or pretrained: frozen = static,
//!                              fine-tuned = non-static)
//! c_{h,i} = ReLU(w_h · x_{i:i+h−1} + b_h)       every window of h words, filters of width h
//! ĉ_h = max_i c_{h,i}                           1-max pooling over the valid windows
//! z = [ĉ_3; ĉ_4; ĉ_5]                           the document embedding (penultimate layer)
//! logits = W · dropout(z) + b                   optional max-norm: ‖W_{:,c}‖₂ ≤ s after each step
//! ```
//!
//! Sentences of a batch are padded with zero vectors to the longest one (and to at least the
//! widest filter). Only windows starting inside the sentence are pooled (a sentence shorter
//! than a filter has one window, padded with zeros), so a sentence's logits do not depend on
//! what else is in its batch.

use crate::deps::{Activation, Conv1dText, Dropout, Embedding, Linear, Param, ParamStore};
use crate::error::{Result, TextError};
use crate::train::Classifier;
use chi_autodiff::{Float, Rng, Tensor};
use std::rc::Rc;

/// How the word embeddings are obtained and trained (Kim's CNN-rand / -static / -non-static).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum EmbeddingMode {
    /// Random `U(−0.25, 0.25)` vectors, trained.
    Random,
    /// Pretrained vectors, frozen.
    Static,
    /// Pretrained vectors, fine-tuned.
    NonStatic,
}

impl EmbeddingMode {
    /// "rand", "static" or "non-static".
    pub fn name(self) -> &'static str {
        match self {
            EmbeddingMode::Random => "rand",
            EmbeddingMode::Static => "static",
            EmbeddingMode::NonStatic => "non-static",
        }
    }
}

/// Hyperparameters of a [`TextCnn`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct TextCnnConfig {
    /// Vocabulary size (ids `0..vocab`).
    pub vocab: usize,
    /// Embedding size `E`.
    pub emb_dim: usize,
    /// Filter widths (Kim: 3, 4, 5).
    pub widths: Vec<usize>,
    /// Filters per width (Kim: 100).
    pub filters: usize,
    /// Number of classes.
    pub classes: usize,
    /// Dropout probability on the penultimate layer (Kim: 0.5).
    pub dropout: f64,
    /// Max-norm `s` of each class's output weight vector (Kim: 3), or none.
    pub max_norm: Option<f64>,
    /// Embedding mode.
    pub mode: EmbeddingMode,
    /// Seed of the initialisation and of the dropout masks.
    pub seed: u64,
}

impl TextCnnConfig {
    /// Kim's settings: widths 3/4/5 × 100 filters, dropout 0.5, max-norm 3.
    pub fn kim(vocab: usize, emb_dim: usize, classes: usize, mode: EmbeddingMode) -> Self {
        TextCnnConfig { vocab, emb_dim, widths: vec![3, 4, 5], filters: 100, classes, dropout: 0.5, max_norm: Some(3.0), mode, seed: 0 }
    }
}

/// Kim's text CNN (see the module docs). Parameters: `emb.weight`, `conv.w{h}`, `conv.b{h}`,
/// `out.weight`, `out.bias`.
pub struct TextCnn<T: Float> {
    /// All parameters.
    pub store: ParamStore<T>,
    /// The word embeddings.
    pub embedding: Embedding<T>,
    /// The filters (one weight `[n_f, E, h]` and bias per width).
    pub conv: Conv1dText<T>,
    /// The output layer `[F, classes]`.
    pub out: Linear<T>,
    dropout: Dropout,
    cfg: TextCnnConfig,
}

impl<T: Float> TextCnn<T> {
    /// A new model. `pretrained` (row-major `[vocab, emb_dim]`, e.g. from
    /// [`crate::vocab::pretrained_matrix`]) is required for the static and non-static modes and
    /// ignored by the random one.
    pub fn new(cfg: TextCnnConfig, pretrained: Option<&[f64]>) -> Result<Self> {
        let op = "TextCnn::new";
        if cfg.widths.is_empty() || cfg.widths.contains(&0) || cfg.filters == 0 || cfg.classes == 0 || cfg.vocab == 0 || cfg.emb_dim == 0 {
            return Err(TextError::Invalid { op, msg: format!("every size must be positive: {cfg:?}") });
        }
        if !(0.0..1.0).contains(&cfg.dropout) {
            return Err(TextError::Invalid { op, msg: format!("dropout {} is not in [0, 1)", cfg.dropout) });
        }
        // Sizes that cannot fit in memory are refused before anything is allocated.
        let widest = cfg.widths.iter().copied().max().unwrap_or(1);
        for (what, dims) in [("TextCnn embedding", [cfg.vocab, cfg.emb_dim, 1]), ("TextCnn filters", [cfg.filters, cfg.emb_dim, widest]), ("TextCnn output", [cfg.filters.saturating_mul(cfg.widths.len()), cfg.classes, 1])] {
            chi_nn::limits::check_fits_memory(what, &dims).map_err(|e| TextError::Invalid { op, msg: e.to_string() })?;
        }
        // A negative bound would flip the output weights' sign at every step, a NaN one switch
        // the constraint off, and 0 zero the output layer.
        if let Some(m) = cfg.max_norm.filter(|m| !(m.is_finite() && *m > 0.0)) {
            return Err(TextError::Invalid { op, msg: format!("max_norm {m} must be finite and > 0 (None for no constraint)") });
        }
        let mut rng = Rng::new(cfg.seed);
        let mut store = ParamStore::new();
        let embedding = Embedding::in_store(&mut store, "emb", "emb", cfg.vocab, cfg.emb_dim, false, &mut rng);
        let table: Vec<f64> = match (cfg.mode, pretrained) {
            (EmbeddingMode::Random, _) => (0..cfg.vocab * cfg.emb_dim).map(|_| rng.uniform(-0.25, 0.25)).collect(),
            (_, Some(m)) if m.len() == cfg.vocab * cfg.emb_dim => m.to_vec(),
            (_, Some(m)) => return Err(TextError::Shape { op, expected: vec![cfg.vocab * cfg.emb_dim], got: vec![m.len()] }),
            (_, None) => return Err(TextError::Invalid { op, msg: format!("mode {} needs pretrained vectors", cfg.mode.name()) }),
        };
        embedding.weight.set_values(table.into_iter().map(T::from_f64).collect());
        embedding.weight.set_frozen(cfg.mode == EmbeddingMode::Static);
        let conv = Conv1dText::in_store(&mut store, "conv", "conv", cfg.emb_dim, &cfg.widths, cfg.filters, Activation::Relu, &mut rng);
        let out = Linear::in_store(&mut store, "out", "out", conv.out_features(), cfg.classes, true, &mut rng);
        let dropout = Dropout::with_seed(cfg.dropout, cfg.seed ^ 0x5eed);
        Ok(TextCnn { store, embedding, conv, out, dropout, cfg })
    }
    /// The configuration.
    pub fn config(&self) -> &TextCnnConfig {
        &self.cfg
    }
    /// The padded length of a batch whose longest sentence has `max_len` words.
    pub fn padded_len(&self, max_len: usize) -> usize {
        max_len.max(*self.cfg.widths.iter().max().unwrap_or(&1))
    }
    /// Embeds a batch of id sequences: `[B, L, E]` (zero rows past each length) and the lengths.
    pub fn embed(&self, batch: &[&[usize]]) -> Result<(Tensor<T>, Vec<usize>)> {
        let lengths: Vec<usize> = batch.iter().map(|s| s.len()).collect();
        let l = self.padded_len(lengths.iter().copied().max().unwrap_or(0));
        let (b, e) = (batch.len(), self.cfg.emb_dim);
        let mut ids = vec![0usize; b * l];
        let mut mask = vec![T::ZERO; b * l];
        for (r, s) in batch.iter().enumerate() {
            for (i, &id) in s.iter().enumerate() {
                if id >= self.cfg.vocab {
                    return Err(TextError::Id { op: "TextCnn::embed", id, count: self.cfg.vocab });
                }
                ids[r * l + i] = id;
                mask[r * l + i] = T::ONE;
            }
        }
        let x = self.embedding.weight.get().gather_rows(Rc::new(ids), &[b, l, e]).mul(&Tensor::from_vec(mask, &[b, l, 1]));
        Ok((x, lengths))
    }
    /// The feature maps `c_{h,i}`, one `[B, P_h, n_f]` per width (`P_h = L − h + 1`), after the
    /// ReLU, zero at windows that start past a sentence (Tixier's predictive regions).
    pub fn feature_maps(&self, x: &Tensor<T>, lengths: &[usize]) -> Result<Vec<Tensor<T>>> {
        let op = "TextCnn::feature_maps";
        let (b, e) = (lengths.len(), self.cfg.emb_dim);
        if x.rank() != 3 || x.dim(0) != b || x.dim(2) != e || x.dim(1) < self.padded_len(0) {
            return Err(TextError::Shape { op, expected: vec![b, self.padded_len(0).max(x.dim(1)), e], got: x.shape().to_vec() });
        }
        let l = x.dim(1);
        if let Some((row, &len)) = lengths.iter().enumerate().find(|(_, &len)| len > l) {
            return Err(TextError::Length { op, row, length: len, max: l });
        }
        let rows = x.reshape(&[b * l, e]);
        let nf = self.cfg.filters;
        Ok(self
            .conv
            .filters
            .iter()
            .map(|(h, w, bias)| {
                let h = *h;
                let p = l - h + 1;
                // Window (n, i) is rows n·L + i … n·L + i + h − 1: h·E contiguous numbers.
                let ids: Vec<usize> = (0..b).flat_map(|n| (0..p).flat_map(move |i| (0..h).map(move |r| n * l + i + r))).collect();
                let windows = rows.gather_rows(Rc::new(ids), &[b * p * h, e]).reshape(&[b * p, h * e]);
                // W [n_f, E, h] → [h, E, n_f] → [h·E, n_f]: row r·E + c holds W[:, c, r].
                let wt = w.get().permute(&[2, 1, 0]).reshape(&[h * e, nf]);
                let valid: Vec<T> = lengths
                    .iter()
                    .flat_map(|&len| (0..p).map(move |i| if i < (len + 1).saturating_sub(h).max(1) { T::ONE } else { T::ZERO }))
                    .collect();
                // ReLU ≥ 0, so zeroing invalid windows leaves the max over the valid ones.
                windows.matmul(&wt).add(&bias.get()).relu().reshape(&[b, p, nf]).mul(&Tensor::from_vec(valid, &[b, p, 1]))
            })
            .collect())
    }
    /// The document embeddings `z [B, F]` (the penultimate layer, before dropout).
    pub fn features(&self, x: &Tensor<T>, lengths: &[usize]) -> Result<Tensor<T>> {
        let maps = self.feature_maps(x, lengths)?;
        let pooled: Vec<Tensor<T>> = maps.iter().map(|m| m.max_axis(1, false)).collect();
        Ok(Tensor::concat(&pooled, 1))
    }
    /// Logits `[B, classes]` from embedded input `x [B, L, E]` (dropout in training mode).
    pub fn logits_embedded(&self, x: &Tensor<T>, lengths: &[usize]) -> Result<Tensor<T>> {
        Ok(self.out.forward(&self.dropout.forward(&self.features(x, lengths)?)))
    }
    /// Logits `[B, classes]` of a batch of id sequences.
    pub fn forward(&self, batch: &[&[usize]]) -> Result<Tensor<T>> {
        let (x, lengths) = self.embed(batch)?;
        self.logits_embedded(&x, &lengths)
    }
    /// Rescales every class's output weight vector (a column of `out.weight`) whose L2 norm
    /// exceeds the configured max-norm back to it. A no-op without max-norm.
    pub fn apply_max_norm(&self) {
        let Some(s) = self.cfg.max_norm else { return };
        let (fin, c) = (self.conv.out_features(), self.cfg.classes);
        self.out.weight.update(|w| {
            for j in 0..c {
                let n = (0..fin).map(|i| w[i * c + j].to_f64().powi(2)).sum::<f64>().sqrt();
                if n > s {
                    let k = T::from_f64(s / n);
                    for i in 0..fin {
                        w[i * c + j] *= k;
                    }
                }
            }
        });
    }
    /// Training (dropout on) or evaluation mode.
    pub fn set_training(&self, on: bool) {
        self.dropout.set_training(on);
    }
}

impl<T: Float> Classifier<T> for TextCnn<T> {
    type Input = Vec<usize>;
    fn logits(&self, inputs: &[&Vec<usize>]) -> Result<Tensor<T>> {
        let batch: Vec<&[usize]> = inputs.iter().map(|v| v.as_slice()).collect();
        self.forward(&batch)
    }
    fn params(&self) -> Vec<Param<T>> {
        self.store.params().iter().filter(|p| !p.is_frozen()).cloned().collect()
    }
    fn set_training(&self, on: bool) {
        TextCnn::set_training(self, on)
    }
    fn after_step(&self) {
        self.apply_max_norm()
    }
    fn reseed_masks(&self, seed: u64) {
        self.dropout.reseed(seed ^ 0x5eed)
    }
}
