//! Fuzz target `text_formats`: see `chi_cli::fuzzing::text_formats` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_cli::fuzzing::text_formats(data));
