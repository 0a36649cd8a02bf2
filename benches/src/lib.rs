//! Shared helpers for chi benchmarks.
