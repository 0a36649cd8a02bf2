//! Fuzz target `user_data`: see `chi_cli::fuzzing::user_data` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_cli::fuzzing::user_data(data));
