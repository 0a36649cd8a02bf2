//! The `chi` command-line program (one process; `chi-mpi` is the same program on MPI). Each
//! subcommand lives in its own module of `chi_cli::cli`.

/// mimalloc serves the many small, short-lived allocations of a tape faster than glibc (see
/// `chi_cli::allocator`).
#[global_allocator]
static GLOBAL: chi_cli::allocator::MiMalloc = chi_cli::allocator::MiMalloc;

fn main() {
    chi_cli::cli::main(None)
}
