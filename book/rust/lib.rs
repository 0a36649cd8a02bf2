//! # The chi book, as tests
//!
//! Each chapter of the book (`book/src/*.md`) is included here as the documentation of a module,
//! so `cargo test -p chi-book` runs every Rust block of every chapter as a doctest, without
//! mdBook. The exercises' checker and reference solutions are in [`exercises`].

#[doc = include_str!("../src/ch01-scalar.md")]
pub mod ch01_scalar {}
#[doc = include_str!("../src/ch02-tape.md")]
pub mod ch02_tape {}
#[doc = include_str!("../src/ch03-broadcasting.md")]
pub mod ch03_broadcasting {}
#[doc = include_str!("../src/ch04-matmul.md")]
pub mod ch04_matmul {}
#[doc = include_str!("../src/ch05-softmax-ce.md")]
pub mod ch05_softmax_ce {}
#[doc = include_str!("../src/ch06-bptt.md")]
pub mod ch06_bptt {}
#[doc = include_str!("../src/ch07-attention.md")]
pub mod ch07_attention {}
#[doc = include_str!("../src/ch08-higher-order.md")]
pub mod ch08_higher_order {}
#[doc = include_str!("../src/ch09-gradcheck.md")]
pub mod ch09_gradcheck {}
#[doc = include_str!("../src/ch10-gemm.md")]
pub mod ch10_gemm {}
#[doc = include_str!("../src/ch11-context-aware.md")]
pub mod ch11_context_aware {}
#[doc = include_str!("../src/exercises.md")]
pub mod exercises_guide {}

#[path = "../exercises/mod.rs"]
pub mod exercises;
