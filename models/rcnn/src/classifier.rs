//! The RCNN text classifier of the thesis's sentiment experiments (§2.5.2, Appendix B.2):
//! stacked RCNN layers, each layer's outputs pooled over the words, the pools concatenated and
//! read by a linear layer.
//!
//! ```text
//! x_t      = E[token_t]                                      embedding              [B, T, E]
//! h^1      = RCNN_1(dropout(x)),  h^l = RCNN_l(dropout(h^{l−1}))                    [B, T, H_l]
//! p^l      = pool_t dropout(h^l)  (mean over the words by default; max, or last)    [B, H_l]
//! logits   = [p^1; …; p^L] · W + b                                                  [B, outputs]
//! ```
//!
//! The thesis's classifier (3 layers of 200, 2-gram multiplicative maps, ReLU, mean pooling,
//! dropout on the input and output of each layer, Adam at 0.001) is this model with those
//! settings. A bidirectional classifier runs a second stack on each text read backwards and
//! pools its layers too (the thesis's generators read both ways; its classifier does not).
//!
//! Padding never changes a text's logits: each layer carries its state over the padded steps
//! ([`RcnnLayer::forward`] with lengths) and the pools read only a text's own words.

use crate::deps::{reverse_padded, Dropout, Embedding, Linear, ParamStore};
use crate::error::{RcnnError, Result};
use crate::layer::{pool, Pooling, RcnnConfig, RcnnLayer};
use chi_autodiff::{Float, Rng, Tensor};

/// Sizes and settings of an [`RcnnClassifier`] (the embedding is built by the caller, so it can
/// hold pretrained vectors).
#[derive(Clone, Debug, PartialEq)]
pub struct ClassifierConfig {
    /// The layer settings (n-gram order, feature map, aggregation, decay, activation, …);
    /// `input` and `hidden` are set per layer from the embedding width and `hidden`.
    pub layer: RcnnConfig,
    /// Hidden size of each stacked layer (at least one).
    pub hidden: Vec<usize>,
    /// Outputs of the head (classes, or 1 for binary and regression tasks).
    pub outputs: usize,
    /// Pooling over the words of each layer's outputs.
    pub pooling: Pooling,
    /// Also read each text backwards with a second stack.
    pub bidirectional: bool,
    /// Dropout probability on the embeddings and on each layer's outputs while training, in
    /// `[0, 1)`.
    pub dropout: f64,
}

/// Embedding → stacked RCNN layers → per-layer pooling → linear head (see the module docs).
/// It keeps handles to parameters that live in the [`ParamStore`] given at construction:
/// `{prefix}.l{i}.*` (forward stack), `{prefix}.r{i}.*` (backward stack), `head.*`.
pub struct RcnnClassifier<T: Float> {
    embedding: Embedding<T>,
    layers: Vec<RcnnLayer<T>>,
    /// The backward stack of a bidirectional classifier (empty otherwise).
    rev: Vec<RcnnLayer<T>>,
    head: Linear<T>,
    dropout: Dropout,
    cfg: ClassifierConfig,
}

impl<T: Float> RcnnClassifier<T> {
    /// Builds the layers and the head in `store` (group `rcnn` for the layers, `output` for the
    /// head) on top of `embedding`.
    pub fn new(store: &mut ParamStore<T>, prefix: &str, embedding: Embedding<T>, cfg: &ClassifierConfig, rng: &mut Rng) -> Result<Self> {
        let bad = |field: &'static str, reason: String| Err(RcnnError::Config { field, reason });
        if cfg.hidden.is_empty() || cfg.hidden.contains(&0) {
            return bad("hidden", format!("one positive size per layer is needed, got {:?}", cfg.hidden));
        }
        if cfg.outputs == 0 {
            return bad("outputs", "the head needs at least one output".into());
        }
        if !(0.0..1.0).contains(&cfg.dropout) {
            return bad("dropout", format!("{} is not in [0, 1)", cfg.dropout));
        }
        let stack = |store: &mut ParamStore<T>, tag: &str, rng: &mut Rng| -> Result<Vec<RcnnLayer<T>>> {
            let mut input = embedding.dim();
            let mut out = Vec::with_capacity(cfg.hidden.len());
            for (l, &h) in cfg.hidden.iter().enumerate() {
                let lc = RcnnConfig { input, hidden: h, ..cfg.layer.clone() };
                out.push(RcnnLayer::new(store, &format!("{prefix}.{tag}{l}"), "rcnn", lc, rng)?);
                input = h;
            }
            Ok(out)
        };
        let layers = stack(store, "l", rng)?;
        let rev = if cfg.bidirectional { stack(store, "r", rng)? } else { Vec::new() };
        let head = Linear::in_store(store, "head", "output", Self::features_of(cfg), cfg.outputs, true, rng);
        Ok(RcnnClassifier { embedding, layers, rev, head, dropout: Dropout::with_seed(cfg.dropout, 0), cfg: cfg.clone() })
    }

    /// Width of the pooled representation the head reads: every layer's hidden size, twice
    /// when bidirectional.
    fn features_of(cfg: &ClassifierConfig) -> usize {
        cfg.hidden.iter().sum::<usize>() * if cfg.bidirectional { 2 } else { 1 }
    }

    /// The configuration.
    pub fn config(&self) -> &ClassifierConfig {
        &self.cfg
    }

    /// The embedding table.
    pub fn embedding(&self) -> &Embedding<T> {
        &self.embedding
    }

    /// Runs a batch of token sequences (each at least one token): the logits `[B, outputs]`,
    /// the pooled representation the head reads `[B, features]`, and the embedding lookup
    /// `[B, T, E]` (zero-padded right to the longest text; its gradient is the words'
    /// saliency). `train` enables dropout, drawn from `rng`.
    pub fn forward(&self, seqs: &[&[usize]], train: bool, rng: &mut Rng) -> Result<(Tensor<T>, Tensor<T>, Tensor<T>)> {
        let b = seqs.len();
        let lengths: Vec<usize> = seqs.iter().map(|s| s.len()).collect();
        if b == 0 || lengths.contains(&0) {
            return Err(RcnnError::Lengths { op: "RcnnClassifier::forward", reason: format!("a batch of texts of at least one token each is needed, got lengths {lengths:?}") });
        }
        let time = *lengths.iter().max().expect("b ≥ 1");
        let mut ids = vec![0usize; b * time];
        for (r, s) in seqs.iter().enumerate() {
            ids[r * time..r * time + s.len()].copy_from_slice(s);
        }
        let e = self.embedding.forward_shaped(&ids, &[b, time]);
        let x = self.dropout.forward_rng(&e, train, rng);
        let mut pools = Vec::with_capacity(self.layers.len() + self.rev.len());
        let reversed = (!self.rev.is_empty()).then(|| reverse_padded(&x, Some(&lengths)));
        for (stack, input) in [(&self.layers, Some(x)), (&self.rev, reversed)] {
            let Some(mut h) = input else { continue };
            for layer in stack.iter() {
                h = self.dropout.forward_rng(&layer.forward(&h, Some(&lengths))?, train, rng);
                pools.push(pool(&h, Some(&lengths), self.cfg.pooling)?);
            }
        }
        let features = if pools.len() == 1 { pools.pop().expect("one pool") } else { Tensor::concat(&pools, 1) };
        Ok((self.head.forward(&features), features, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layer::Decay;

    fn tiny(bidirectional: bool, pooling: Pooling, decay: Decay) -> (ParamStore<f64>, RcnnClassifier<f64>) {
        let mut store = ParamStore::new();
        let mut rng = Rng::new(5);
        let emb = Embedding::in_store(&mut store, "embedding", "embedding", 7, 3, false, &mut rng);
        let layer = RcnnConfig { decay, ..RcnnConfig::new(3, 4) };
        let cfg = ClassifierConfig { layer, hidden: vec![4, 3], outputs: 2, pooling, bidirectional, dropout: 0.0 };
        let net = RcnnClassifier::new(&mut store, "rcnn", emb, &cfg, &mut rng).unwrap();
        crate::deps::perturb(&store, &mut Rng::new(6));
        (store, net)
    }

    /// A text's logits do not depend on the texts batched with it (padding is invisible), for
    /// every pooling, both directions and each decay kind.
    #[test]
    fn a_padded_batch_gives_each_text_its_own_logits() {
        for bi in [false, true] {
            for pooling in [Pooling::Mean, Pooling::Max, Pooling::Last] {
                for decay in [Decay::Constant(0.5), Decay::Learned(0.3), Decay::AdaptiveX, Decay::AdaptiveXH] {
                    let (_s, net) = tiny(bi, pooling, decay);
                    let (long, short): (&[usize], &[usize]) = (&[1, 5, 2, 6, 3], &[4, 2]);
                    let mut rng = Rng::new(0);
                    let both = net.forward(&[long, short], false, &mut rng).unwrap().0.to_vec();
                    let l = net.forward(&[long], false, &mut rng).unwrap().0.to_vec();
                    let s = net.forward(&[short], false, &mut rng).unwrap().0.to_vec();
                    for (x, y) in both.iter().zip(l.iter().chain(&s)) {
                        assert!((x - y).abs() < 1e-12, "{bi} {pooling:?} {decay:?}: batched {both:?}, alone {l:?} {s:?}");
                    }
                }
            }
        }
    }

    /// The head reads every layer's pool: `[B, ΣH]`, doubled when bidirectional; the mean pool
    /// of the first layer equals the mean of its outputs over the text's words.
    #[test]
    fn the_head_reads_every_layers_pool() {
        let (_s, net) = tiny(false, Pooling::Mean, Decay::Constant(0.5));
        let seq: &[usize] = &[1, 2, 3];
        let (logits, feats, e) = net.forward(&[seq], false, &mut Rng::new(0)).unwrap();
        assert_eq!((logits.shape(), feats.shape(), e.shape()), (&[1, 2][..], &[1, 7][..], &[1, 3, 3][..]));
        let h1 = net.layers[0].forward(&e, None).unwrap().mean_axis(1, false).to_vec();
        assert!(feats.to_vec()[..4].iter().zip(&h1).all(|(a, b)| (a - b).abs() < 1e-14), "{:?} vs {h1:?}", feats.to_vec());
        let (_s, bi) = tiny(true, Pooling::Max, Decay::Constant(0.5));
        assert_eq!(bi.forward(&[seq], false, &mut Rng::new(0)).unwrap().1.shape(), &[1, 14]);
    }

    /// An empty batch, an empty text and bad settings are errors naming the problem.
    #[test]
    fn empty_texts_and_bad_settings_are_errors() {
        let (_s, net) = tiny(false, Pooling::Mean, Decay::Constant(0.5));
        let e = net.forward(&[&[1, 2], &[]], false, &mut Rng::new(0)).unwrap_err().to_string();
        assert!(e.contains("at least one token") && e.contains("[2, 0]"), "{e}");
        assert!(net.forward(&[], false, &mut Rng::new(0)).is_err());
        let mut store = ParamStore::<f64>::new();
        let mut rng = Rng::new(1);
        let emb = Embedding::in_store(&mut store, "embedding", "embedding", 4, 2, false, &mut rng);
        let cfg = ClassifierConfig { layer: RcnnConfig::new(2, 2), hidden: vec![2, 0], outputs: 2, pooling: Pooling::Mean, bidirectional: false, dropout: 0.0 };
        let e = RcnnClassifier::new(&mut store, "rcnn", emb, &cfg, &mut rng).err().unwrap().to_string();
        assert!(e.contains("hidden") && e.contains("[2, 0]"), "{e}");
    }
}
