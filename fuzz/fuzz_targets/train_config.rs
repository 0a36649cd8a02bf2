//! Fuzz target `train_config`: see `chi_models::fuzzing::train_config` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_models::fuzzing::train_config(data));
