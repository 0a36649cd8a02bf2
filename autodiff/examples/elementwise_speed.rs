//! The elementwise forward + backward workload of `examples/shared/elementwise_workload.rs`,
//! timed inside the workspace; `scripts/outside-crate.sh` times the same code from a crate
//! outside the workspace and prints the ratio.
//! `cargo run --release -p chi-autodiff --example elementwise_speed`
include!("shared/elementwise_workload.rs");

fn main() {
    println!("{{\"seconds\": {:.6}, \"simd\": \"{}\"}}", elementwise_seconds(30), format!("{:?}", chi_kernels::simd::simd_level()));
}
