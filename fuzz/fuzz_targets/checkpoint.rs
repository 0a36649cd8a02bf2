//! Fuzz target `checkpoint`: see `chi_cli::fuzzing::checkpoint` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_cli::fuzzing::checkpoint(data));
