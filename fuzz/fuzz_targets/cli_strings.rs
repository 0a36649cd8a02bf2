//! Fuzz target `cli_strings`: see `chi_cli::fuzzing::cli_strings` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_cli::fuzzing::cli_strings(data));
