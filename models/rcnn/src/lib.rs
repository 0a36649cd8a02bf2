//! # chi-rcnn
//!
//! Recurrent convolution (RCNN) and rationale models from *Interpretable Neural Models for
//! Natural Language Processing* (Tao Lei, MIT, 2017), with exact oracles for every gradient.
//!
//! * [`scan`]: the non-consecutive n-gram dynamic program, fused ([`scan::scan_fused`], one op
//!   with a hand-written backward) and composed ([`scan::scan_composed`], the reference).
//! * [`brute`]: brute-force `O(Lⁿ)` sums over n-grams and the string kernel (Theorem 1).
//! * [`layer`]: [`RcnnLayer`] with every variant of Tables 2.1–2.2, stacks, bidirectional, pooling.
//! * [`classifier`]: [`RcnnClassifier`], the thesis's sentence classifier (stacked layers, each
//!   pooled over the words, a linear head); `chi train --model rcnn`.
//! * [`rationale`]: generator (independent or dependent), encoder, cost, doubly stochastic
//!   gradient with an optional moving-average baseline.
//! * [`checks`]: tiny gradient-check instances and the REINFORCE self-check for a front end.
//! * [`experiments`]: language-model comparison and the synthetic rationale task, as functions
//!   returning result structs.
//! * [`oracle`]: exact expectations over all `2^L` masks and [`oracle::check_estimator`], a
//!   z-test of any score-function gradient estimator against the exact gradient.
//!
//! ```
//! use chi_autodiff::{Rng, Tensor};
//! use chi_rcnn::{deps::ParamStore, RcnnConfig, RcnnLayer};
//! let mut rng = Rng::new(0);
//! let mut store = ParamStore::<f32>::new();
//! let layer = RcnnLayer::new(&mut store, "rcnn", "model", RcnnConfig::new(4, 8), &mut rng).unwrap();
//! let x = Tensor::randn(&[2, 5, 4], &mut rng);
//! let h = layer.forward(&x, Some(&[5, 3])).unwrap();
//! assert_eq!(h.shape(), &[2, 5, 8]);
//! ```

#![warn(missing_docs)]

pub mod brute;
pub mod checks;
pub mod classifier;
pub mod deps;
pub mod error;
pub mod experiments;
pub mod layer;
pub mod oracle;
pub mod rationale;
pub mod scan;

pub use classifier::{ClassifierConfig, RcnnClassifier};
pub use error::{RcnnError, Result};
pub use layer::{lengths_mask, pool, Activation, BiRcnn, Decay, OutputOf, Pooling, Rcnn, RcnnConfig, RcnnLayer, ScanImpl};
pub use oracle::{check_estimator, exact_expectation, reinforce_variance, BaselineVariance, EnumerableDistribution, EstimatorCheck, EstimatorCheckOptions, RationaleDistribution};
pub use rationale::{Encoder, Generator, GeneratorKind, MovingAverage, RationaleConfig, RationaleModel, SurrogateStep};
pub use scan::{scan_composed, scan_fused, Aggregation, FeatureMap, ScanSpec};
