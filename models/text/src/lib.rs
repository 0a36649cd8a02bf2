//! # chi-text
//!
//! Text models on the chi engine:
//!
//! * [`crf`]: linear-chain CRF — forward algorithm (fused, with forward–backward as its
//!   backward, and a composed reference), marginals, Viterbi, negative log-likelihood.
//! * [`cnn`]: Kim-style convolutional sentence classifier (random / static / non-static
//!   embeddings, 1-max pooling, dropout, max-norm).
//! * [`explain`]: interpretation from gradients — saliency, gradient × input, integrated
//!   gradients, predictive n-grams, PCA of document embeddings, HTML/JSON rendering.
//! * [`han`]: hierarchical attention network (word and sentence BiGRU + attention).
//! * [`tagger`]: part-of-speech taggers (most-frequent tag, BiLSTM softmax, BiLSTM-CRF,
//!   CA-RNN-CRF), accuracy overall and on out-of-vocabulary words.
//! * [`brown`]: the Brown `word/tag` reader and a reduced universal-style tag set.
//! * [`corpora`]: State of the Union and Shakespeare plain-text readers, and the tokenised
//!   sentences of those and of Brown for word vectors.
//! * [`experiments`]: cross-validated text-CNN vs bag-of-words, POS tagging — plain result structs.
//! * [`train`]: a small training loop ([`train::fit`]) for any [`train::Classifier`].
//! * [`vocab`]: tokenisation, vocabularies, pretrained embedding matrices.
//!
//! Every layer type comes from `chi-nn` (and the CA-RNN cell from `chi-ca`) through [`deps`].

#![warn(missing_docs)]

pub mod brown;
pub mod corpora;
pub mod cnn;
pub mod crf;
pub mod deps;
mod dir;
pub mod error;
pub mod experiments;
pub mod explain;
pub mod han;
pub mod tagger;
pub mod train;
pub mod vocab;

pub use error::{Result, TextError};
