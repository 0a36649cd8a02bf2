//! Fuzz target `train_config`: see `chi_cli::fuzzing::train_config` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_cli::fuzzing::train_config(data));
