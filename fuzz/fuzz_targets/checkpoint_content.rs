//! Fuzz target `checkpoint_content`: see `chi_cli::fuzzing::checkpoint_content` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_cli::fuzzing::checkpoint_content(data));
