//! # chi-nn
//!
//! chi's model library, built on the [`chi_autodiff`] engine:
//!
//! | module | what |
//! |---|---|
//! | [`module`] | the [`Module`] and [`Parameterized`] traits, [`Sequential`] |
//! | [`activation`] | [`Activation`], the one activation enum |
//! | [`state_dict`] | PyTorch-layout state dicts as safetensors |
//! | [`params`] | [`Param`], [`ParamStore`] (named, grouped, freezable tensors) and initialisers |
//! | [`layers`] | every layer: linear, embeddings, convolutions, recurrent cells and runners, attention, normalisation, dropout |
//! | [`optim`] | optimisers (SGD, momentum, Adagrad, Adam, …) with their state in checkpoints |
//! | [`schedule`] | learning-rate schedules and block-coordinate freezing |
//! | [`trainer`] | [`Trainer`](trainer::Trainer), the one training loop, with callbacks for logging, evaluation and checkpoints |
//! | [`dist`] | data-parallel training: collectives, sharding, bucketed gradient averaging overlapped with backward, local SGD |
//! | [`metrics`] | accuracy, F1 and friends |
//! | [`checkpoint`] | safetensors weights and full checkpoints (atomic, checksummed) |
//! | [`data`] | loaders for the real datasets (IDX, npy, CSV, GloVe, Lee, reviews, word-similarity pairs) |
//! | [`data::loader`] | [`DataLoader`] (seeded shuffle, batches, `drop_last`) and numeric CSV files |
//! | [`dataset`] | the in-memory dataset, splits, built-in synthetic datasets and the seeded batcher |
//! | [`userdata`] | datasets from the user's files (CSV/TSV, text folders, token lines, npy, IDX): splits, preprocessing, [`userdata::DataSchema`] |
//! | [`error`] | [`NnError`], the error type of every fallible function |
//! | [`limits`] | the maximum tensor size for sizes that come from outside input |
//! | [`gradcheck`](mod@gradcheck) | whole-model float64 gradient checks |
//!
//! It depends on no command-line, plotting, progress-bar or image crate: the `chi` program adds
//! those.
//!
//! ## References
//!
//! - **\[CAML\]** Yun Zeng, *Context Aware Machine Learning*.
//! - **\[Tixier\]** Antoine J.-P. Tixier, *Notes on Deep Learning for NLP* (2018).
//! - **\[White\]** Lyndon White, Roberto Togneri, Wei Liu, Mohammed Bennamoun, *Neural
//!   Representations of Natural Language* (Springer, 2019).

#![warn(missing_docs)]

pub mod activation;
pub mod checkpoint;
pub mod data;
pub mod dataset;
pub mod dist;
pub mod error;
pub mod files;
pub mod gradcheck;
pub mod limits;
pub mod layers;
pub mod metrics;
pub mod module;
pub mod optim;
pub mod params;
pub mod schedule;
pub mod state_dict;
pub mod stats;
pub mod trainer;
pub mod userdata;

pub use error::NnError;
pub use activation::Activation;
pub use data::loader::{DataLoader, TensorDataset};
pub use layers::{Conv1dText, Conv2d, Dropout, Embedding, LayerNorm, Linear, MaxPool1d, MaxPool2d};
pub use module::{Layout, Module, Parameterized, Sequential};
pub use optim::{OptimConfig, Optimizer};
pub use params::{init, manual_seed, Init, Param, ParamStore};
pub use state_dict::StateDict;
