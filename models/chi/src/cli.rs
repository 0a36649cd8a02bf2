//! Command-line interface of the `chi` program: argument types and dispatch.

use clap::{Args, Parser, Subcommand};

/// chi: tape-based reverse-mode autodiff with hand-written kernels.
#[derive(Parser, Debug)]
#[command(name = "chi", version, about)]
pub struct Cli {
    /// Random seed for initialisation, shuffling and dropout.
    #[arg(long, global = true, default_value_t = 0)]
    pub seed: u64,
    /// Worker threads for kernels (default: all cores; at most 8 × the cores).
    #[arg(long, global = true)]
    pub threads: Option<usize>,
    /// Output directory for logs, plots and checkpoints.
    #[arg(long, global = true, default_value = "runs")]
    pub out: std::path::PathBuf,
    /// Treat subnormal numbers as zero on every thread (x86 flush-to-zero and denormals-are-zero,
    /// as PyTorch's `torch.set_flush_denormal(True)`). Off by default: it changes results below
    /// 1.2e-38 (f32) / 2.2e-308 (f64). On CPUs that take a microcode assist per subnormal operand
    /// (Intel's) it speeds up runs whose values fall that low (gradients fading through many time
    /// steps, a saturated softmax): 4× for one LSTM benchmark, nothing measurable for a healthy
    /// run (BENCHMARKS.md, "Subnormal numbers on the Intel Xeon").
    #[arg(long, global = true)]
    pub flush_denormals: bool,
    /// What to do (default: `reproduce`, the paper's built-in experiments).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Train a model on a dataset (flags or a TOML config), with logs, plots and checkpoints.
    Train(crate::train::cli::TrainArgs),
    /// Evaluate a trained model (run directory, checkpoint or model.safetensors) on a split or a labelled file.
    Eval(crate::train::cli::EvalArgs),
    /// Predict with a trained model for new inputs (CSV rows, texts, arrays), as CSV.
    Predict(crate::train::cli::PredictArgs),
    /// Explain a trained text model's decisions word by word (saliency, gradient × input, integrated gradients).
    Explain(crate::explain::ExplainArgs),
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
    /// Translate lines with a trained sequence-to-sequence model (beam search, attention heat maps).
    Translate(crate::translate::TranslateArgs),
    /// Word vectors: train (word2vec, GloVe), evaluate, nearest neighbours.
    Embed(crate::embed::EmbedArgs),
    /// Several processes on MPI: check that data-parallel training gives the single-process
    /// answer, and measure all-reduce (run under `mpirun -n K`).
    Dist(crate::dist::DistArgs),
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
    check_limit_env()?;
    chi_kernels::simd::check_simd_env()?;
    if let Some(n) = cli.threads {
        check_threads(n)?;
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .map_err(|e| format!("could not start {n} threads: {e}"))?;
    }
    if cli.flush_denormals {
        // After the pool exists: this sets the calling thread and every rayon worker (the
        // kernels' partner thread takes the caller's setting with each job).
        chi_kernels::fpmode::set_flush_denormals(true);
    }
    if let Some(w) = crate::dist::world().filter(|w| w.size() > 1) {
        // K copies of a one-process command would race for the same output files.
        if !runs_on_several(&cli.command) {
            return Err(format!(
                "this command runs in one process; of {} processes started by mpirun, only `chi train`, `chi reproduce`, \
                 `chi embed train` and `chi dist` run on several",
                w.size()
            ));
        }
    }
    match cli.command {
        Some(Command::Bench(b)) => match b.which {
            BenchWhich::Gemm(a) => crate::bench::gemm::run(&a),
            BenchWhich::Tape(a) => crate::bench::tape::run(&a),
        },
        Some(Command::Train(a)) => crate::train::translation::train_command(&a, cli.seed, &cli.out),
        Some(Command::Eval(a)) => crate::train::translation::eval_command(&a, &cli.out),
        Some(Command::Predict(a)) => crate::train::translation::predict_command(&a),
        Some(Command::Explain(a)) => crate::explain::run(&a),
        Some(Command::Reproduce(a)) => crate::reproduce::run(&a, cli.seed, &cli.out).map(|_| ()),
        Some(Command::Gradcheck(a)) => crate::gradcheck::run_cli(&a, cli.seed),
        Some(Command::Graph(a)) => crate::graph::run(&a, &cli.out),
        Some(Command::Teach(a)) => crate::teach::run(&a, &cli.out),
        Some(Command::Translate(a)) => crate::translate::run(&a),
        Some(Command::Embed(a)) => crate::embed::run(&a, cli.seed, cli.threads),
        Some(Command::Dist(a)) => crate::dist::run(&a),
        // The README's main job: every built-in reproduction, full size.
        None => crate::reproduce::run(&crate::reproduce::ReproduceArgs::default(), cli.seed, &cli.out).map(|_| ()),
    }
}

/// Refuses a global `--seed` or `--out` given on the command line to a subcommand that does not
/// read it: `chi --seed 3 eval …` or `chi translate M --out dir` would otherwise run as if the flag
/// were not there, and the user would look for a different result or for files that were never
/// written. (Both flags have defaults, so only the parsed matches can tell that one was given.)
pub fn check_global_flags_used(command: &Option<Command>, matches: &clap::ArgMatches) -> Result<(), String> {
    let given = |id: &str| matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
    let Some(c) = command else { return Ok(()) };
    let (name, seed, out): (&str, bool, Option<&str>) = match c {
        Command::Train(_) => ("train", true, None),
        Command::Reproduce(_) => ("reproduce", true, None),
        // `eval` reads --out only to find the run when no model is named.
        Command::Eval(a) if a.model.is_some() || a.checkpoint.is_some() => ("eval", false, Some("it evaluates the model named (--out finds the run when none is)")),
        Command::Eval(_) => ("eval", false, None),
        Command::Graph(_) => ("graph", false, None),
        Command::Teach(_) => ("teach", false, None),
        Command::Gradcheck(_) => ("gradcheck", true, Some("it prints its results (--json for JSON lines)")),
        Command::Predict(_) => ("predict", false, Some("it prints CSV, or writes --output FILE")),
        Command::Explain(_) => ("explain", false, Some("it writes to --dir, by default the run's explain/ folder")),
        Command::Translate(_) => ("translate", false, Some("it prints translations, and writes heat maps to --heatmap DIR")),
        Command::Bench(_) => ("bench", false, Some("it prints its results (--json FILE writes them)")),
        Command::Dist(_) => ("dist", false, Some("it prints its results")),
        Command::Embed(a) => match a.which {
            crate::embed::EmbedWhich::Train(_) => ("embed train", true, Some("it writes --vectors-out FILE")),
            crate::embed::EmbedWhich::Corpus(_) => ("embed corpus", false, None),
            _ => ("embed", false, Some("it prints its results")),
        },
    };
    if given("seed") && !seed {
        let why = if matches!(c, Command::Graph(_) | Command::Teach(_)) { "its examples' weights are fixed" } else { "it draws no random numbers" };
        return Err(format!("--seed does not change `chi {name}`: {why}"));
    }
    if let Some(instead) = out {
        if given("out") {
            return Err(format!("--out is not used by `chi {name}`: {instead}"));
        }
    }
    Ok(())
}

/// The commands that run as one of several processes (`mpirun -n K chi-mpi …`): the others would
/// race K copies of themselves for the same output files.
fn runs_on_several(c: &Option<Command>) -> bool {
    match c {
        Some(Command::Train(_) | Command::Dist(_) | Command::Reproduce(_)) => true,
        Some(Command::Embed(a)) => matches!(a.which, crate::embed::EmbedWhich::Train(_)),
        _ => false,
    }
}

/// Most worker threads `--threads` accepts per core: more only adds scheduling overhead (and
/// `--threads 10000` spends seconds starting threads for a millisecond job).
pub const MAX_THREADS_PER_CORE: usize = 8;

/// Checks `--threads N`: 1 ≤ N ≤ [`MAX_THREADS_PER_CORE`] × the cores.
pub fn check_threads(n: usize) -> Result<(), String> {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let max = MAX_THREADS_PER_CORE * cores;
    if n == 0 || n > max {
        return Err(format!("--threads {n} is out of range: 1 to {max} ({MAX_THREADS_PER_CORE} × {cores} cores)"));
    }
    Ok(())
}

/// Checks the size-limit overrides `CHI_MAX_TENSOR_ELEMENTS`, `CHI_MAX_FILE_BYTES` and
/// `CHI_MEMORY_LIMIT` when they are set: the library falls back to the default limit on a value that is not a positive
/// integer, so a mistyped override (`4e9`, `0`, `-1`) would otherwise be ignored without a word.
pub fn check_limit_env() -> Result<(), String> {
    let vars = [
        (chi_nn::limits::MAX_TENSOR_ELEMENTS_ENV, "the most elements one tensor may have"),
        (chi_nn::limits::MAX_FILE_BYTES_ENV, "the most bytes read from one input file"),
        (chi_nn::limits::MEMORY_LIMIT_ENV, "the most memory, in bytes, that chi's size checks let it use"),
    ];
    for (name, what) in vars {
        match std::env::var_os(name) {
            // Empty counts as unset, as for `CHI_DATA`.
            None => {}
            Some(v) if v.is_empty() => {}
            Some(v) => match v.to_str().and_then(|s| s.trim().parse::<u64>().ok()) {
                Some(n) if n > 0 => {}
                _ => return Err(format!("{name}={} is not a positive whole number ({what})", v.to_string_lossy())),
            },
        }
    }
    Ok(())
}

/// The whole `chi` program: settings, argument parsing, MPI when started as one of several
/// processes (`starter`: the `chi-mpi` program passes one, `chi` none), the subcommand, and the
/// exit status (returns only on success).
pub fn main(starter: Option<crate::dist::Starter>) {
    // Reuse freed tensor memory instead of re-faulting it every step (see `crate::allocator`):
    // the mimalloc setting for Rust allocations, the glibc one for any C library's; and keep
    // large op outputs for reuse, so that they are not cleared before being overwritten
    // (`chi_autodiff::pool::cache_large_buffers`; with mimalloc it takes no page faults).
    crate::allocator::keep_freed_memory();
    chi_autodiff::malloc::keep_freed_memory();
    chi_autodiff::pool::cache_large_buffers(true);
    default_sigpipe();
    file_size_limit_is_an_error();
    output_errors_are_not_panics();
    let matches = <Cli as clap::CommandFactory>::command().get_matches();
    let cli = <Cli as clap::FromArgMatches>::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if let Err(e) = check_global_flags_used(&cli.command, &matches) {
        eprintln!("chi: error: {e}");
        std::process::exit(2);
    }
    // A bad GEMM blocking override would make the first matrix product panic: report it here.
    if let Err(e) = chi_kernels::gemm::check_blocking_env() {
        eprintln!("chi: error: {e}");
        std::process::exit(2);
    }
    // Under `mpirun -n K` (K > 1): MPI, finalised when `mpi` drops before the exit.
    let mpi = match crate::dist::init(starter) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("chi: error: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = run(cli) {
        match crate::dist::world() {
            // The other ranks may be waiting for this one in a collective: end them all.
            Some(w) => {
                eprintln!("chi: error on rank {} of {}: {e}", w.rank(), w.size());
                crate::dist::abort(1);
            }
            None => {
                eprintln!("chi: error: {e}");
                std::process::exit(1);
            }
        }
    }
    drop(mpi);
}

/// Lets a write to a closed pipe (`chi … | head`) end the program quietly, as it does for other
/// Unix tools, instead of `println!` panicking on `EPIPE`: restores the default action of
/// `SIGPIPE`, which the Rust runtime sets to "ignore".
pub fn default_sigpipe() {
    // SIGPIPE is 13 on Linux, the BSDs and macOS; 0 is SIG_DFL.
    set_signal_disposition(13, 0);
}

/// Makes a write past the shell's file-size limit (`ulimit -f`) fail with an error (`EFBIG`,
/// "File too large") instead of killing the process with `SIGXFSZ`: killed, chi would stop
/// without a word and leave the temporary file of an atomic write behind; with the error, the
/// writer removes its temporary file and chi names the file it could not write.
pub fn file_size_limit_is_an_error() {
    // SIGXFSZ is 25 on Linux (every architecture), the BSDs and macOS; 1 is SIG_IGN.
    set_signal_disposition(25, 1);
}

/// Sets the disposition of signal `signum` to `SIG_DFL` (0) or `SIG_IGN` (1); nothing off Unix.
fn set_signal_disposition(signum: i32, disposition: usize) {
    #[cfg(unix)]
    {
        extern "C" {
            fn signal(signum: i32, handler: usize) -> usize;
        }
        // SAFETY: sets a default or "ignore" disposition for one signal before any thread
        // starts; no handler code runs in this process.
        unsafe {
            signal(signum, disposition);
        }
    }
    #[cfg(not(unix))]
    let _ = (signum, disposition);
}

/// Makes a failed write to stdout or stderr (`chi … > /dev/full`, a closed terminal) end the
/// program with an error message and exit status 1 instead of a panic: `println!` panics when
/// the write fails, and there is no caller to return an error to. Other panics keep the default
/// report.
pub fn output_errors_are_not_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info.to_string();
        if let Some(at) = text.find("failed printing to std") {
            use std::io::Write;
            // stderr may be the stream that failed: its own error is ignored.
            let _ = writeln!(std::io::stderr(), "chi: error: {}", &text[at..]);
            std::process::exit(1);
        }
        default(info);
    }));
}
