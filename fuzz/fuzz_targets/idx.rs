//! Fuzz target `idx`: see `chi_cli::fuzzing::idx` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_cli::fuzzing::idx(data));
