//! Fuzz target `unit_record`: see `chi_cli::fuzzing::unit_record` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_cli::fuzzing::unit_record(data));
