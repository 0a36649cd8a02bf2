//! # chi-kernels
//!
//! Dense CPU kernels for chi, with no knowledge of autodiff. Every kernel works on plain slices
//! (`&[T]` for `T` = `f32` or `f64`), checks its arguments with a message naming the kernel and
//! the sizes, and is tested against a naive float64 reference.
//!
//! | module | what |
//! |---|---|
//! | [`gemm`] | `C ← α·op(A)·op(B) + β·C`, strided; batched GEMM; GEMV |
//! | [`elementwise`] | unary/binary maps, broadcasting, derivatives, fused updates |
//! | [`reduce`] | sum/max/argmax along an axis, softmax, log-softmax, log-sum-exp |
//! | [`conv`] | im2col/col2im (1-D, 2-D), max-pooling with argmax |
//! | [`gather`] | embedding row gather, scatter-add of rows |
//! | [`layout`] | permutation (general transpose) |
//! | [`rnn`] | pointwise passes of fused LSTM and GRU steps |
//! | [`fpmode`] | flush denormals to zero |
//! | [`threads`] | the number of threads kernels use: [`set_num_threads`], [`with_threads`] |
//! | [`team`] | low-latency fork-join of small work: the caller and a spinning partner thread |
//! | [`simd`] | which instruction set the elementwise/reduction kernels use (chosen at run time) |

#![warn(missing_docs)]

pub mod conv;
pub mod elementwise;
pub mod fpmode;
pub mod gather;
pub mod gemm;
pub mod layout;
pub mod rnn;
mod parallel;
mod real;
pub mod reduce;
pub mod simd;
pub mod team;
pub mod threads;
#[cfg(target_arch = "x86_64")]
mod simd_avx2;
#[cfg(target_arch = "x86_64")]
mod simd_avx512;
mod simd_math;

pub use real::Real;
pub use threads::{set_num_threads, with_threads};
