//! How the Hogwild workers of one rank stop for the averages of [`crate::dist`]: the rows each
//! worker touched since the last average ([`RowMarks`]) and the gate where workers wait while
//! the rank's coordinator averages ([`Gate`]). The word2vec trainer sees the coordinator only
//! through [`RankSide`], so it does not depend on how the ranks talk.

use crate::error::WordsError;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Condvar, Mutex, MutexGuard};

/// What the word2vec trainer needs from the rank it trains as.
pub(crate) trait RankSide {
    /// This rank, `0..K`.
    fn rank(&self) -> usize;
    /// The sentences this rank trains on.
    fn shard(&self) -> Range<usize>;
    /// Where this rank's workers stop for averages.
    fn gate(&self) -> &Gate;
    /// Makes the averages while the workers train, then the missing ones and the final one.
    ///
    /// # Safety
    /// `input`/`output` point to matrices of `in_len`/`out_len` floats that the workers write
    /// only between averages (they are stopped at the gate or finished during one).
    unsafe fn run(&self, marks: &[RowMarks], input: *mut f32, in_len: usize, output: *mut f32, out_len: usize, d: usize) -> Result<(), WordsError>;
}

// ------------------------------------------------------------------------------ touched rows

/// 64-bit words of a bitset of `rows` bits.
pub(crate) fn words_for(rows: usize) -> usize {
    rows.div_ceil(64)
}

/// The rows one worker touched since the last average: one bit per row of each matrix. Only
/// its worker sets bits, only the coordinator (while the worker waits at the gate) reads and
/// clears them, so plain loads and stores suffice.
pub(crate) struct RowMarks {
    input: Vec<AtomicU64>,
    output: Vec<AtomicU64>,
}

#[inline(always)]
fn set_bit(bits: &[AtomicU64], row: u32) {
    let w = &bits[row as usize >> 6];
    let m = 1u64 << (row & 63);
    let v = w.load(Relaxed);
    if v & m == 0 {
        w.store(v | m, Relaxed);
    }
}

impl RowMarks {
    pub(crate) fn new(input_rows: usize, output_rows: usize) -> RowMarks {
        RowMarks {
            input: (0..words_for(input_rows)).map(|_| AtomicU64::new(0)).collect(),
            output: (0..words_for(output_rows)).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Marks a row of the input matrix.
    #[inline(always)]
    pub(crate) fn mark_input(&self, row: u32) {
        set_bit(&self.input, row);
    }

    /// Marks rows of the output matrix (an example's negative-sampling rows or tree nodes).
    #[inline(always)]
    pub(crate) fn mark_output(&self, rows: &[u32]) {
        for &r in rows {
            set_bit(&self.output, r);
        }
    }

    /// ORs the marks into `input` / `output` and clears them.
    pub(crate) fn drain_into(&self, input: &mut [u64], output: &mut [u64]) {
        for (mine, all) in [(&self.input, input), (&self.output, output)] {
            for (a, b) in mine.iter().zip(all.iter_mut()) {
                *b |= a.load(Relaxed);
                a.store(0, Relaxed);
            }
        }
    }
}

// ------------------------------------------------------------------------------ the gate

pub(crate) struct GateState {
    /// Workers still training.
    pub(crate) active: usize,
    /// Workers waiting for the current average.
    pub(crate) parked: usize,
    /// Bumped at each release.
    pub(crate) generation: u64,
}

/// Where a rank's workers stop for averages. A worker that passes the next threshold of
/// trained words raises the request; every worker stops at its next sentence end; the
/// coordinator averages once all running workers have stopped, then releases them.
pub(crate) struct Gate {
    pub(crate) state: Mutex<GateState>,
    pub(crate) workers: Condvar,
    pub(crate) coordinator: Condvar,
    pub(crate) request: AtomicBool,
    pub(crate) failed: AtomicBool,
    /// Corpus words of finished sentences, this rank.
    pub(crate) counted: AtomicU64,
    /// `counted` at which the next average is due.
    pub(crate) next: AtomicU64,
    pub(crate) ranks: u64,
    /// All ranks' words at the last average.
    pub(crate) synced_global: AtomicU64,
    /// This rank's words at the last average.
    pub(crate) synced_local: AtomicU64,
}

impl Gate {
    pub(crate) fn new(ranks: u64, first: u64) -> Gate {
        Gate {
            state: Mutex::new(GateState { active: 0, parked: 0, generation: 0 }),
            workers: Condvar::new(),
            coordinator: Condvar::new(),
            request: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            counted: AtomicU64::new(0),
            next: AtomicU64::new(first),
            ranks,
            synced_global: AtomicU64::new(0),
            synced_local: AtomicU64::new(0),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers the workers about to start.
    pub(crate) fn start(&self, workers: usize) {
        self.lock().active = workers;
    }

    /// The estimated words of all ranks when this rank has done `local`: the exact total at the
    /// last average plus `K ×` this rank's words since. With one rank, `local` itself.
    pub(crate) fn global_words(&self, local: u64) -> u64 {
        let (g, l) = (self.synced_global.load(Relaxed) as i128, self.synced_local.load(Relaxed) as i128);
        (g + self.ranks as i128 * (local as i128 - l)).clamp(0, u64::MAX as i128) as u64
    }

    /// Called by a worker after each sentence of `words` corpus words; stops it while an
    /// average is due. Returns `false` when training must end (the coordinator failed).
    #[inline]
    pub(crate) fn after_sentence(&self, words: u64) -> bool {
        let c = self.counted.fetch_add(words, Relaxed) + words;
        if c >= self.next.load(Relaxed) {
            self.request.store(true, Relaxed);
        }
        if self.request.load(Relaxed) || self.failed.load(Relaxed) {
            return self.park();
        }
        true
    }

    pub(crate) fn park(&self) -> bool {
        let mut st = self.lock();
        if self.failed.load(Relaxed) {
            return false;
        }
        let gen = st.generation;
        st.parked += 1;
        self.coordinator.notify_one();
        while st.generation == gen {
            st = self.workers.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        !self.failed.load(Relaxed)
    }

    pub(crate) fn leave(&self) {
        let mut st = self.lock();
        st.active -= 1;
        self.coordinator.notify_one();
    }

    /// Lets the stopped workers go on.
    pub(crate) fn release(&self, st: &mut GateState) {
        self.request.store(false, Relaxed);
        st.parked = 0;
        st.generation += 1;
        self.workers.notify_all();
    }
}

/// Takes a worker off the gate when it ends, normally or by panic.
pub(crate) struct LeaveOnDrop<'a>(pub(crate) &'a Gate);

impl Drop for LeaveOnDrop<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

