//! Fuzz target `glove_txt`: see `chi_cli::fuzzing::glove_txt` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_cli::fuzzing::glove_txt(data));
