//! # chi-words
//!
//! Word vectors trained by chi, after White et al., *Neural Representations of Natural
//! Language*, chapter 3:
//!
//! * [`word2vec`]: skip-gram and CBOW with negative sampling ([`noise`]) or hierarchical
//!   softmax ([`huffman`]), frequent-word subsampling, dynamic windows, linear learning-rate
//!   decay, Hogwild threads; [`dist`]: the same across the ranks of a
//!   [`chi_nn::dist::Collective`] (MPI processes) by periodic averaging of the touched rows;
//! * [`glove`]: co-occurrence counting (memory-bounded, spilling sorted runs to disk) and the
//!   weighted least-squares fit with AdaGrad;
//! * [`kernels`]: the fused row kernels of both hot loops (AVX2+FMA chosen at run time, with a
//!   portable fallback);
//! * [`tape`]: the same losses written with chi's differentiable tensor ops, against which the
//!   fused updates are tested and which pass gradcheck;
//! * [`lm`]: the neural trigram / NPLM (with bypass) and Mikolov RNN language models, held-out
//!   perplexity;
//! * [`eval`]: word-pair Spearman ρ (WordSim353, SimLex-999), 3CosAdd analogies;
//!   [`vectors`]: nearest neighbours; [`io`]: the word2vec text format.
//!
//! ```
//! use chi_words::{vocab::Text, word2vec::{self, Word2VecConfig}};
//! let text = Text::from_str("the cat sat on the mat\nthe dog sat on the rug\n", false);
//! let cfg = Word2VecConfig { dim: 8, min_count: 1, epochs: 2, ..Default::default() };
//! let (model, stats) = word2vec::train(&text, &cfg).unwrap();
//! assert_eq!(model.vectors().len(), 7);
//! assert!(stats.words == 24);
//! ```

#![warn(missing_docs)]

pub mod dist;
pub mod error;
pub mod eval;
mod gate;
pub mod glove;
pub mod huffman;
pub mod io;
pub mod kernels;
pub mod lm;
pub mod noise;
pub mod tape;
pub mod vectors;
pub mod vocab;
pub mod word2vec;

pub use error::WordsError;
pub use vectors::Vectors;
