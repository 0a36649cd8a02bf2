//! Several processes on MPI: `mpirun -n K chi train …` trains data-parallel (see
//! [`chi_nn::dist`] for the algorithm), and `chi dist check` / `chi dist bench` check and measure
//! an installation.
//!
//! MPI is behind the `mpi` cargo feature (Open MPI and its headers, and libclang for the
//! bindings: `scripts/install-mpi.sh`); the default build needs none of it. A chi started by a
//! launcher (`mpirun`, `mpiexec`, `srun` with PMI) as one of several processes initialises MPI in
//! [`init`]; a chi built without the feature refuses to run as one of several, rather than
//! train K unrelated copies into one directory.
//!
//! Faults: a rank that fails calls `MPI_Abort` ([`abort`]), which ends every rank; a rank that
//! dies (killed, crashed) is noticed by `mpirun`, which ends the others and names the rank. No
//! rank waits forever in a collective for a peer that is gone.

use chi_nn::dist::{check, Buf, Collective, DataParallel, Solo};
use clap::{Args, Subcommand};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

thread_local! {
    static WORLD: RefCell<Option<Rc<dyn Collective>>> = const { RefCell::new(None) };
}

/// The number of processes a launcher started, from the environment it sets (Open MPI's
/// `mpirun`, MPICH/Hydra and Slurm's PMI, PMIx).
pub fn launched_size() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"].iter().find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// Keeps MPI initialised while it lives; dropping it finalises MPI. Held by `main`.
#[derive(Default)]
pub struct Guard {
    #[cfg(feature = "mpi")]
    universe: Option<mpi::environment::Universe>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        WORLD.with(|w| w.borrow_mut().take());
        #[cfg(feature = "mpi")]
        drop(self.universe.take());
    }
}

/// Starts MPI when this process is one of several started by a launcher.
pub fn init() -> Result<Guard, String> {
    let Some(k) = launched_size().filter(|&k| k > 1) else { return Ok(Guard::default()) };
    #[cfg(feature = "mpi")]
    {
        let _ = k;
        let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled).ok_or("MPI was already initialised")?;
        let world = universe.world();
        WORLD.with(|w| *w.borrow_mut() = Some(Rc::new(mpi_comm::MpiComm { world })));
        Ok(Guard { universe: Some(universe) })
    }
    #[cfg(not(feature = "mpi"))]
    Err(format!(
        "chi was started as one of {k} processes (by mpirun or a similar launcher), but this chi was built without MPI: \
         build it with `cargo build --release --features mpi` (scripts/install-mpi.sh installs Open MPI)"
    ))
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
    #[cfg(feature = "mpi")]
    if world().is_some() {
        use mpi::traits::Communicator;
        mpi::topology::SimpleCommunicator::world().abort(code);
    }
    std::process::exit(code)
}

#[cfg(feature = "mpi")]
mod mpi_comm {
    //! [`Collective`] on an MPI communicator.
    use super::*;
    use chi_nn::dist::Pending;
    use mpi::collective::CommunicatorCollectives;
    use mpi::datatype::PartitionMut;
    use mpi::ffi;
    use mpi::raw::AsRaw;
    use mpi::topology::{Communicator, SimpleCommunicator};
    use mpi::traits::Root;
    use std::os::raw::{c_int, c_void};

    pub(super) struct MpiComm {
        pub(super) world: SimpleCommunicator,
    }

    /// A running `MPI_Iallreduce`: the send copy and the result buffer stay here until it ends.
    struct MpiPending {
        _send: Buf,
        recv: Buf,
        req: ffi::MPI_Request,
        done: bool,
    }

    fn raw_parts(b: &mut Buf) -> (*mut c_void, c_int, ffi::MPI_Datatype) {
        // SAFETY: reads the addresses of MPI's predefined datatype handles.
        let (ptr, len, ty) = unsafe {
            match b {
                Buf::F32(v) => (v.as_mut_ptr() as *mut c_void, v.len(), ffi::RSMPI_FLOAT),
                Buf::F64(v) => (v.as_mut_ptr() as *mut c_void, v.len(), ffi::RSMPI_DOUBLE),
            }
        };
        let len = c_int::try_from(len).unwrap_or_else(|_| panic!("all-reduce of {len} elements: MPI counts are 32-bit; use smaller buckets"));
        (ptr, len, ty)
    }

    impl Pending for MpiPending {
        fn test(&mut self) -> bool {
            if !self.done {
                let mut flag: c_int = 0;
                let mut status = std::mem::MaybeUninit::<ffi::MPI_Status>::uninit();
                // SAFETY: `req` is the live request of this reduction.
                unsafe { ffi::MPI_Test(&mut self.req, &mut flag, status.as_mut_ptr()) };
                self.done = flag != 0;
            }
            self.done
        }
        fn wait(mut self: Box<Self>) -> Buf {
            self.finish();
            std::mem::replace(&mut self.recv, Buf::F64(Vec::new()))
        }
    }

    impl MpiPending {
        fn finish(&mut self) {
            if !self.done {
                let mut status = std::mem::MaybeUninit::<ffi::MPI_Status>::uninit();
                // SAFETY: `req` is the live request of this reduction; its buffers are ours.
                unsafe { ffi::MPI_Wait(&mut self.req, status.as_mut_ptr()) };
                self.done = true;
            }
        }
    }

    impl Drop for MpiPending {
        // MPI may still write into `recv`: never free it under a running reduction.
        fn drop(&mut self) {
            self.finish();
        }
    }

    impl Collective for MpiComm {
        fn rank(&self) -> usize {
            self.world.rank() as usize
        }
        fn size(&self) -> usize {
            self.world.size() as usize
        }
        fn start_all_reduce_sum(&self, buf: Buf) -> Box<dyn Pending> {
            // SAFETY: reads MPI's predefined null request.
            let null = unsafe { ffi::RSMPI_REQUEST_NULL };
            let mut p = Box::new(MpiPending { recv: buf.clone(), _send: buf, req: null, done: false });
            let (sp, n, ty) = raw_parts(&mut p._send);
            let (rp, _, _) = raw_parts(&mut p.recv);
            // SAFETY: both buffers hold `n` elements of `ty` and live in `p` until the request
            // completes (`MpiPending` waits before dropping them); the handles are MPI's.
            unsafe { ffi::MPI_Iallreduce(sp, rp, n, ty, ffi::RSMPI_SUM, self.world.as_raw(), &mut p.req) };
            p
        }
        fn broadcast_bytes(&self, bytes: &mut Vec<u8>, root: usize) {
            let root = self.world.process_at_rank(root as i32);
            let mut len = bytes.len() as u64;
            root.broadcast_into(&mut len);
            bytes.resize(len as usize, 0);
            // An empty byte Vec's dangling pointer is 0x1, which is Open MPI's MPI_IN_PLACE.
            if len > 0 {
                root.broadcast_into(&mut bytes[..]);
            }
        }
        fn all_gather_bytes(&self, mine: &[u8]) -> Vec<Vec<u8>> {
            let k = self.size();
            let mut lens = vec![0i32; k];
            let n = i32::try_from(mine.len()).expect("all-gather of more than 2 GiB");
            self.world.all_gather_into(&n, &mut lens[..]);
            let displs: Vec<i32> = lens.iter().scan(0i32, |acc, &l| {
                let d = *acc;
                *acc += l;
                Some(d)
            }).collect();
            let total: usize = lens.iter().map(|&l| l as usize).sum();
            // Allocated buffers even when empty: an empty byte slice's dangling pointer is 0x1,
            // which is Open MPI's MPI_IN_PLACE.
            let mut all = Vec::with_capacity(total.max(1));
            all.resize(total, 0u8);
            let mut send = Vec::with_capacity(mine.len().max(1));
            send.extend_from_slice(mine);
            {
                let mut part = PartitionMut::new(&mut all[..], &lens[..], &displs[..]);
                self.world.all_gather_varcount_into(&send[..], &mut part);
            }
            lens.iter().zip(&displs).map(|(&l, &d)| all[d as usize..(d + l) as usize].to_vec()).collect()
        }
    }
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
    if !(a.tolerance >= 0.0) {
        return Err(format!("--tolerance {} must be a non-negative number", a.tolerance));
    }
    let (rank, k) = (comm.rank(), comm.size());
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
