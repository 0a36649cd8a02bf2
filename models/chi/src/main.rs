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
    // A bad GEMM blocking override would make the first matrix product panic: report it here.
    if let Err(e) = chi_kernels::gemm::check_blocking_env() {
        eprintln!("chi: error: {e}");
        std::process::exit(2);
    }
    // Under `mpirun -n K` (K > 1): MPI, finalised when `mpi` drops at the end of main.
    let mpi = match chi_cli::dist::init() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("chi: error: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = run(cli) {
        match chi_cli::dist::world() {
            // The other ranks may be waiting for this one in a collective: end them all.
            Some(w) => {
                eprintln!("chi: error on rank {} of {}: {e}", w.rank(), w.size());
                chi_cli::dist::abort(1);
            }
            None => {
                eprintln!("chi: error: {e}");
                std::process::exit(1);
            }
        }
    }
    drop(mpi);
}
