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
    /// What to do (default: `reproduce`, the paper's built-in experiments).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Train a model on a dataset (flags or a TOML config), with logs, plots and checkpoints.
    Train(crate::train::cli::TrainArgs),
    /// Evaluate a checkpoint on a dataset split.
    Eval(crate::train::cli::EvalArgs),
    /// Run the paper's experiments and print paper vs chi.
    Reproduce(crate::reproduce::ReproduceArgs),
    /// Benchmarks: kernels side by side with their peers.
    Bench(BenchArgs),
    /// Gradient checks of every differentiable op (or of a whole model) against finite differences.
    Gradcheck(crate::gradcheck::GradcheckArgs),
    /// Draw the tape of a built-in example as Graphviz DOT (SVG/PNG if `dot` is installed).
    Graph(crate::graph::GraphArgs),
    /// Write a self-contained HTML page that steps through a tape forward and backward.
    Teach(crate::teach::TeachArgs),
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
    /// Per-op overhead of the tape: a chain of scalar ops, forward + backward.
    Tape(crate::bench::tape::TapeBenchArgs),
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
            BenchWhich::Tape(a) => crate::bench::tape::run(&a),
        },
        Some(Command::Train(a)) => crate::train::cli::run_train(&a, cli.seed, &cli.out),
        Some(Command::Eval(a)) => crate::train::cli::run_eval(&a, &cli.out),
        Some(Command::Reproduce(a)) => crate::reproduce::run(&a, cli.seed, &cli.out).map(|_| ()),
        Some(Command::Gradcheck(a)) => crate::gradcheck::run_cli(&a),
        Some(Command::Graph(a)) => crate::graph::run(&a, &cli.out),
        Some(Command::Teach(a)) => crate::teach::run(&a, &cli.out),
        // The README's main job: every built-in reproduction, full size.
        None => crate::reproduce::run(&crate::reproduce::ReproduceArgs::default(), cli.seed, &cli.out).map(|_| ()),
    }
}
