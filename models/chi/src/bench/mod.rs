//! Benchmarks runnable from the `chi` program (criterion benches live in the `benches` crate).
pub mod gemm;
pub mod tape;
