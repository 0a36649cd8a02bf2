//! # chi-models
//!
//! Layers, optimisers, the context-aware model family, data loaders, experiments and the `chi`
//! command-line program.

pub mod allocator;
pub mod bench;
pub mod cli;
pub mod data;
pub mod fuzzing;
pub mod gradcheck;
pub mod graph;
pub mod nn;
pub mod params;
pub mod reproduce;

/// Whole-model gradient-check cases contributed by model families (see
/// [`gradcheck::model_registry`]).
pub fn model_gradcheck_cases() -> Vec<gradcheck::ModelCase> {
    ca::gradcheck_cases()
}
pub mod checkpoint;
pub mod optim;
pub mod train;
pub mod ca;
