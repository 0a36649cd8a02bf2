//! Fuzz target `run_logs`: see `chi_cli::fuzzing::run_logs` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_cli::fuzzing::run_logs(data));
