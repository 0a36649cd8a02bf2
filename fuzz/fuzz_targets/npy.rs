//! Fuzz target `npy`: see `chi_models::fuzzing::npy` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_models::fuzzing::npy(data));
