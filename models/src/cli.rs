//! Command-line interface of the `chi` program: argument types and dispatch.

use clap::{Args, Parser, Subcommand};

/// chi: tape-based reverse-mode autodiff with hand-written kernels.
#[derive(Parser, Debug)]
#[command(name = "chi", version, about)]
pub struct Cli {
    /// Random seed for initialisation, shuffling and dropout.
    #[arg(long, global = true, default_value_t = 0)]
    pub seed: u64,
    /// Worker threads for kernels (default: all cores).
    #[arg(long, global = true)]
    pub threads: Option<usize>,
    /// Output directory for logs, plots and checkpoints.
    #[arg(long, global = true, default_value = "runs")]
    pub out: std::path::PathBuf,
    /// What to do (default: `reproduce`... until experiments exist, `bench gemm`).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Benchmarks: kernels side by side with their peers.
    Bench(BenchArgs),
}

/// `chi bench ...`
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Which benchmark.
    #[command(subcommand)]
    pub which: BenchWhich,
}

/// Benchmarks available from the command line.
#[derive(Subcommand, Debug)]
pub enum BenchWhich {
    /// GEMM: chi vs matrixmultiply, GFLOPS and % of the measured FMA ceiling.
    Gemm(crate::bench::gemm::GemmBenchArgs),
}

/// Sets up the global thread pool, then runs the chosen subcommand.
pub fn run(cli: Cli) -> Result<(), String> {
    if let Some(n) = cli.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .map_err(|e| format!("could not start {n} threads: {e}"))?;
    }
    match cli.command {
        Some(Command::Bench(b)) => match b.which {
            BenchWhich::Gemm(a) => crate::bench::gemm::run(&a),
        },
        None => crate::bench::gemm::run(&crate::bench::gemm::GemmBenchArgs::default_job()),
    }
}
