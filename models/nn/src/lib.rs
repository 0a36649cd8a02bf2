//! # chi-nn
//!
//! chi's model library, built on the [`chi_autodiff`] engine:
//!
//! | module | what |
//! |---|---|
//! | [`params`] | [`Param`], [`ParamStore`] (named, grouped, freezable tensors) and initialisers |
//! | [`layers`] | every layer: linear, embeddings, convolutions, recurrent cells and runners, attention, normalisation, dropout |
//! | [`optim`] | optimisers (SGD, momentum, Adagrad, Adam, …) with their state in checkpoints |
//! | [`schedule`] | learning-rate schedules and block-coordinate freezing |
//! | [`metrics`] | accuracy, F1 and friends |
//! | [`checkpoint`] | safetensors weights and full checkpoints (atomic, checksummed) |
//! | [`data`] | loaders for the real datasets (IDX, npy, CSV, GloVe, Lee, reviews, word-similarity pairs) |
//! | [`dataset`] | the in-memory dataset, splits, built-in synthetic datasets and the seeded batcher |
//! | [`error`] | [`NnError`], the error type of every fallible function |
//! | [`limits`] | the maximum tensor size for sizes that come from outside input |
//! | [`gradcheck`](mod@gradcheck) | whole-model float64 gradient checks |
//!
//! It depends on no command-line, plotting, progress-bar or image crate: the `chi` program adds
//! those.

#![warn(missing_docs)]

pub mod checkpoint;
pub mod data;
pub mod dataset;
pub mod error;
pub mod gradcheck;
pub mod limits;
pub mod layers;
pub mod metrics;
pub mod optim;
pub mod params;
pub mod schedule;

pub use error::NnError;
pub use params::{init, Param, ParamStore};
