//! The integration tests of this crate, compiled as one test binary: every file here is a module.
//! One binary compiles the library's generic code once instead of once per file, which is most
//! of the test build's time. Tests that need a process of their own (a global allocator, the
//! global thread pool, the SIMD level or FTZ/DAZ of every thread, a cargo feature) stay beside
//! this folder as separate binaries.

mod api_misuse;
mod checkpoint;
mod data;
mod data_parallel;
mod fused_cells;
mod layers;
mod mlp_csv;
mod state_dict;
mod torch_interop;
mod trainer;
