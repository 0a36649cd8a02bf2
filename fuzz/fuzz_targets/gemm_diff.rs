//! Fuzz target `gemm_diff`: see `chi_cli::fuzzing::gemm_diff` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_cli::fuzzing::gemm_diff(data));
