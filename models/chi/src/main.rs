//! The `chi` command-line program. Each subcommand lives in its own module of `chi_cli::cli`.

use clap::Parser;
use chi_cli::cli::{Cli, run};

/// mimalloc serves the many small, short-lived allocations of a tape faster than glibc (see
/// `chi_cli::allocator`).
#[global_allocator]
static GLOBAL: chi_cli::allocator::MiMalloc = chi_cli::allocator::MiMalloc;

fn main() {
    // Reuse freed tensor memory instead of re-faulting it every step (see the module docs): the
    // mimalloc setting for Rust allocations, the glibc one for any C library's.
    chi_cli::allocator::keep_freed_memory();
    chi_autodiff::malloc::keep_freed_memory();
    chi_cli::cli::default_sigpipe();
    chi_cli::cli::output_errors_are_not_panics();
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("chi: error: {e}");
        std::process::exit(1);
    }
}
