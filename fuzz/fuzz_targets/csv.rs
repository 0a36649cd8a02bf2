//! Fuzz target `csv`: see `chi_models::fuzzing::csv` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_models::fuzzing::csv(data));
