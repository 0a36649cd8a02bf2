//! Several processes on MPI: `mpirun -n K chi-mpi train …` trains data-parallel (see
//! [`chi_nn::dist`] for the algorithm), and `chi dist check` / `chi dist bench` check and measure
//! an installation.
//!
//! This library holds no MPI code: the `chi-mpi` program (models/chi-mpi, built with its `mpi`
//! feature; Open MPI, its headers and libclang come from `scripts/install-mpi.sh`) is this same
//! program with an MPI [`Starter`], which [`init`] calls when the process is one of several. So
//! the default build needs no MPI, and turning MPI on recompiles one small crate instead of this
//! one. A `chi` without a starter refuses to run as one of several processes rather than train K
//! unrelated copies into one directory.
//!
//! Faults: a rank that fails calls the starter's abort (`MPI_Abort`, through [`abort`]), which
//! ends every rank; a rank that dies (killed, crashed) is noticed by `mpirun`, which ends the
//! others and names the rank. No rank waits forever in a collective for a peer that is gone.

use chi_nn::dist::{check, Buf, Collective, DataParallel, Solo};
use clap::{Args, Subcommand};
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Instant;

thread_local! {
    static WORLD: RefCell<Option<Rc<dyn Collective>>> = const { RefCell::new(None) };
    static ABORT: Cell<Option<fn(i32) -> !>> = const { Cell::new(None) };
}

/// The number of processes a launcher started, from the environment it sets (Open MPI's
/// `mpirun`, MPICH/Hydra and Slurm's PMI, PMIx).
pub fn launched_size() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"].iter().find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// What an MPI start-up hands to this library: the group of processes, how to end all of them,
/// and whatever must stay alive until the program ends (MPI's environment, finalised when it
/// drops).
pub struct Started {
    /// All processes of the job.
    pub world: Rc<dyn Collective>,
    /// Ends every rank with this exit code (`MPI_Abort`).
    pub abort: fn(i32) -> !,
    /// Dropped after `world`, when the program ends.
    pub keep: Box<dyn Any>,
}

/// Starts MPI in a process that a launcher started as one of several (the `chi-mpi` program
/// provides one).
pub type Starter = fn() -> Result<Started, String>;

/// Keeps MPI initialised while it lives; dropping it finalises MPI. Held by [`crate::cli::main`].
#[derive(Default)]
pub struct Guard {
    keep: Option<Box<dyn Any>>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        // The communicator goes before the environment that finalises MPI.
        WORLD.with(|w| w.borrow_mut().take());
        ABORT.with(|a| a.set(None));
        drop(self.keep.take());
    }
}

/// Starts MPI (with `starter`) when this process is one of several started by a launcher.
pub fn init(starter: Option<Starter>) -> Result<Guard, String> {
    let Some(k) = launched_size().filter(|&k| k > 1) else { return Ok(Guard::default()) };
    let Some(start) = starter else {
        return Err(format!(
            "chi was started as one of {k} processes (by mpirun or a similar launcher), but this program has no MPI: \
             run `chi-mpi` instead (`cargo build --release -p chi-mpi --features mpi`; scripts/install-mpi.sh installs Open MPI)"
        ));
    };
    let s = start()?;
    WORLD.with(|w| *w.borrow_mut() = Some(s.world));
    ABORT.with(|a| a.set(Some(s.abort)));
    Ok(Guard { keep: Some(s.keep) })
}

/// The group of processes, when there are several.
pub fn world() -> Option<Rc<dyn Collective>> {
    WORLD.with(|w| w.borrow().clone())
}

/// This process's rank (0 without MPI).
pub fn rank() -> usize {
    world().map_or(0, |w| w.rank())
}

/// Ends every rank: on one rank's error the others must not wait for it in a collective.
pub fn abort(code: i32) -> ! {
    if world().is_some() {
        if let Some(abort) = ABORT.with(|a| a.get()) {
            abort(code);
        }
    }
    std::process::exit(code)
}

// ---------------------------------------------------------------------------------- the CLI

/// `chi dist …`
#[derive(Args, Debug)]
pub struct DistArgs {
    /// What to do.
    #[command(subcommand)]
    pub which: DistWhich,
}

/// `chi dist` subcommands.
#[derive(Subcommand, Debug)]
pub enum DistWhich {
    /// Train a float64 MLP and an LSTM data-parallel on every rank and in one process with the
    /// whole batch; fail unless the parameters agree to --tolerance.
    Check(CheckArgs),
    /// All-reduce latency and bandwidth against message size.
    Bench(DistBenchArgs),
}

/// `chi dist check`
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Examples per rank per step.
    #[arg(long, default_value_t = 8, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=4096))]
    pub batch_size: usize,
    /// Steps.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub steps: u64,
    /// Largest difference allowed.
    #[arg(long, default_value_t = 1e-12)]
    pub tolerance: f64,
    /// Gradient buckets of this many bytes (small values give many messages).
    #[arg(long, default_value_t = 256, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=(1 << 30)))]
    pub bucket_bytes: usize,
}

/// `chi dist bench`
#[derive(Args, Debug)]
pub struct DistBenchArgs {
    /// Largest message, in bytes (sizes double from 8).
    #[arg(long, default_value_t = 1 << 26, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(8..=(1 << 30)))]
    pub max_bytes: usize,
    /// Minimum time per size, in milliseconds.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub ms: u64,
    /// Write the table as JSON here (rank 0).
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
}

/// Runs `chi dist …`.
pub fn run(a: &DistArgs) -> Result<(), String> {
    let comm: Rc<dyn Collective> = world().unwrap_or_else(|| Rc::new(Solo));
    match &a.which {
        DistWhich::Check(c) => run_check(c, comm),
        DistWhich::Bench(b) => run_bench(b, comm),
    }
}

fn run_check(a: &CheckArgs, comm: Rc<dyn Collective>) -> Result<(), String> {
    if !(a.tolerance >= 0.0 && a.tolerance.is_finite()) {
        return Err(format!("--tolerance {} must be a finite non-negative number", a.tolerance));
    }
    let (rank, k) = (comm.rank(), comm.size());
    if k == 1 {
        // One process compared with itself always agrees: say so rather than report a pass.
        eprintln!("chi: warning: dist check runs as one process, which is compared with itself (difference 0 by construction); run it as several: mpirun -n K chi-mpi dist check");
    }
    let n = 5 * k * a.batch_size + k.saturating_sub(1).max(1);
    let mut failed = Vec::new();
    for (name, kind, optim) in [
        ("mlp", check::Kind::Mlp, chi_nn::optim::OptimConfig::adam(0.01)),
        ("lstm", check::Kind::Lstm, chi_nn::optim::OptimConfig::adagrad(0.1)),
    ] {
        // n is not a multiple of the global batch: each epoch ends with unequal shards.
        let p = check::Problem { kind, n, batch: k * a.batch_size, steps: a.steps, optim };
        let r = check::run(&p, DataParallel::new(comm.clone()).bucket_bytes(a.bucket_bytes));
        let worst: Vec<f64> = comm.all_reduce_sum(Buf::F64((0..k).map(|i| if i == rank { r.max_diff } else { 0.0 }).collect())).into_vec();
        let max = worst.iter().cloned().fold(0.0, f64::max);
        if rank == 0 {
            println!(
                "{name}: {k} rank(s) × batch {} vs one process × batch {}, {} steps, {n} examples: largest parameter difference {max:.3e} (training moved parameters by up to {:.3})",
                a.batch_size,
                k * a.batch_size,
                a.steps,
                r.moved
            );
        }
        if max > a.tolerance {
            failed.push(format!("{name}: {max:e} > {}", a.tolerance));
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("data-parallel training differs from one process: {}", failed.join("; ")))
    }
}

fn run_bench(a: &DistBenchArgs, comm: Rc<dyn Collective>) -> Result<(), String> {
    // The report's path is checked before the benchmark, not after it.
    if let Some(p) = a.json.as_deref().filter(|_| comm.rank() == 0) {
        crate::train::rundir::check_text_output("--json", p)?;
    }
    let k = comm.size();
    let mut rows = Vec::new();
    if comm.rank() == 0 {
        println!("all-reduce (sum, f32) over {k} rank(s)\n{:>12} {:>12} {:>14} {:>14}", "bytes", "µs", "algbw GB/s", "busbw GB/s");
    }
    let mut bytes = 8usize;
    while bytes <= a.max_bytes {
        let n = bytes / 4;
        let buf = Buf::F32(vec![1.0; n]);
        // Warm up, then time until the budget is spent; every rank runs the same count (rank
        // 0's decision is broadcast).
        for _ in 0..3 {
            comm.all_reduce_sum(buf.clone());
        }
        let mut reps = 0u64;
        let t0 = Instant::now();
        loop {
            for _ in 0..8 {
                comm.all_reduce_sum(buf.clone());
            }
            reps += 8;
            let mut go = vec![u8::from(t0.elapsed().as_millis() < a.ms as u128)];
            comm.broadcast_bytes(&mut go, 0);
            if go[0] == 0 {
                break;
            }
        }
        let us = t0.elapsed().as_secs_f64() * 1e6 / reps as f64;
        let algbw = bytes as f64 / (us * 1e-6) / 1e9;
        // NCCL's convention: the bytes each rank moves in a ring all-reduce, 2(K−1)/K of the message.
        let busbw = algbw * 2.0 * (k as f64 - 1.0) / k as f64;
        if comm.rank() == 0 {
            println!("{bytes:>12} {us:>12.2} {algbw:>14.3} {busbw:>14.3}");
        }
        rows.push(serde_json::json!({ "bytes": bytes, "us": us, "algbw_gbps": algbw, "busbw_gbps": busbw, "reps": reps }));
        bytes *= 2;
    }
    if let (Some(path), 0) = (&a.json, comm.rank()) {
        let doc = serde_json::json!({ "ranks": k, "op": "allreduce-sum-f32", "rows": rows });
        chi_nn::checkpoint::atomic_write(path, serde_json::to_string_pretty(&doc).unwrap().as_bytes())?;
    }
    Ok(())
}
