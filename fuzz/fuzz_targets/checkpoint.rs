//! Fuzz target `checkpoint`: see `chi_models::fuzzing::checkpoint` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_models::fuzzing::checkpoint(data));
