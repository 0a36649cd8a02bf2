//! # chi (the program)
//!
//! The `chi` command-line program as a library, so its integration tests and the fuzz targets
//! can call it: the CLI ([`cli`]), training runs ([`train`]), the paper reproductions
//! ([`reproduce`]), gradient checks ([`gradcheck`]), graphs ([`graph`]), benchmarks ([`mod@bench`]),
//! the allocator of chi's programs ([`allocator`]) and the fuzzing entry points ([`fuzzing`]).
//!
//! The models themselves live in library crates that depend on none of this: [`chi_nn`] (layers,
//! optimisers, data, checkpoints) and [`chi_ca`] (the context-aware family).

pub mod allocator;
pub mod bench;
pub mod cli;
pub mod dist;
pub mod embed;
pub mod explain;
pub mod fuzzing;
pub mod gradcheck;
pub mod graph;
pub mod reproduce;
pub mod teach;
pub mod train;
pub mod translate;
