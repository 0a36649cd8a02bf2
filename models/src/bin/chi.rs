//! The `chi` command-line program. Each subcommand lives in its own module of `chi_models::cli`.

use clap::Parser;
use chi_models::cli::{Cli, run};

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("chi: error: {e}");
        std::process::exit(1);
    }
}
