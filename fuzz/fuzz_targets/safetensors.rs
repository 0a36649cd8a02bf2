//! Fuzz target `safetensors`: see `chi_models::fuzzing::safetensors` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_models::fuzzing::safetensors(data));
