//! The `chi` command-line program. Each subcommand lives in its own module of `chi_models::cli`.

use clap::Parser;
use chi_models::cli::{Cli, run};

fn main() {
    // Reuse freed tensor memory instead of re-faulting it every step (see the module docs).
    chi_autodiff::malloc::keep_freed_memory();
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("chi: error: {e}");
        std::process::exit(1);
    }
}
