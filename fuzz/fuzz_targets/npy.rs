//! Fuzz target `npy`: see `chi_cli::fuzzing::npy` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_cli::fuzzing::npy(data));
