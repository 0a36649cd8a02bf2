//! The integration tests of this crate, compiled as one test binary: every file here is a module.
//! One binary compiles the library's generic code once instead of once per file, which is most
//! of the test build's time. Tests that need a process of their own (a global allocator, the
//! global thread pool, the SIMD level or FTZ/DAZ of every thread, a cargo feature) stay beside
//! this folder as separate binaries.

mod ca_sweeps;
mod cli;
mod context_aware_stats;
mod embed;
mod explain_browser;
mod fuzz_regressions;
mod reliability;
mod reproduce;
mod reproduce_options;
mod robust_words;
mod seq2seq_reproduce;
mod seq2seq_train;
mod teach_browser;
mod train;
mod user_data;
mod user_data_more;
mod user_runs;
mod word_vectors;
