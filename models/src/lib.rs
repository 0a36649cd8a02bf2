//! # chi-models
//!
//! Layers, optimisers, the context-aware model family, data loaders, experiments and the `chi`
//! command-line program.

pub mod bench;
pub mod cli;
pub mod gradcheck;
pub mod nn;
pub mod params;
