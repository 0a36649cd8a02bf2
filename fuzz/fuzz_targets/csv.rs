//! Fuzz target `csv`: see `chi_cli::fuzzing::csv` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_cli::fuzzing::csv(data));
