//! Fuzz target `safetensors`: see `chi_cli::fuzzing::safetensors` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_cli::fuzzing::safetensors(data));
