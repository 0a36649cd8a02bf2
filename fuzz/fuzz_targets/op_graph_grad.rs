//! Fuzz target `op_graph_grad`: see `chi_cli::fuzzing::op_graph_grad` for what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chi_cli::fuzzing::op_graph_grad(data));
