//! The `chi-mpi` program: `chi` (see `chi_cli::cli::main`) with an MPI start-up, so that
//! `mpirun -n K chi-mpi train …` runs K ranks that train data-parallel (see `chi_nn::dist`).
//! Started without a launcher it is the one-process `chi`.
//!
//! What lives here is MPI's side only: initialising and finalising it, `MPI_Abort`, and
//! [`Collective`] on the world communicator (non-blocking all-reduce, broadcast and all-gather of
//! bytes). Everything else is the `chi` library, compiled once for both programs.

use chi_cli::dist::Started;
use chi_nn::dist::{Buf, Collective, Pending};
use mpi::collective::CommunicatorCollectives;
use mpi::datatype::PartitionMut;
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::Root;
use std::os::raw::{c_int, c_void};
use std::rc::Rc;

/// The same allocator as `chi` (see `chi_cli::allocator`).
#[global_allocator]
static GLOBAL: chi_cli::allocator::MiMalloc = chi_cli::allocator::MiMalloc;

fn main() {
    chi_cli::cli::main(Some(start))
}

/// Initialises MPI (threads funnelled through the main thread: only it calls MPI).
fn start() -> Result<Started, String> {
    let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled).ok_or("MPI was already initialised")?;
    let world = universe.world();
    Ok(Started { world: Rc::new(MpiComm { world }), abort, keep: Box::new(universe) })
}

/// `MPI_Abort` on the world communicator: ends every rank.
fn abort(code: i32) -> ! {
    SimpleCommunicator::world().abort(code)
}

/// [`Collective`] on an MPI communicator.
struct MpiComm {
    world: SimpleCommunicator,
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
