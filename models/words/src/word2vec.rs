//! word2vec: skip-gram and CBOW with negative sampling or hierarchical softmax (Mikolov et al.,
//! *Efficient Estimation of Word Representations in Vector Space* and *Distributed
//! Representations of Words and Phrases and their Compositionality*), trained Hogwild-style.
//!
//! ## The losses
//! With `h` the input vector of a training example (skip-gram: the input row of one context
//! word; CBOW: the mean of the context words' input rows, word2vec's default `cbow_mean = 1`):
//! * negative sampling: `L = −log σ(u_c·h) − Σ_k log σ(−u_{n_k}·h)` for the centre word `c`
//!   and negatives `n_k` drawn from the noise table ([`NoiseTable`]); draws equal to `c` are
//!   skipped, as in word2vec's C code and gensim;
//! * hierarchical softmax: `L = −Σ_i log σ((1 − 2·code_i) · u_{point_i}·h)` along the centre
//!   word's Huffman path ([`Huffman`]).
//!
//! Skip-gram follows word2vec's C code and gensim in letting each *context* word's input
//! vector predict the *centre* word (the pair set is symmetric, so this is the same objective
//! as centre-predicts-context, reordered).
//!
//! Each example is one SGD step: `θ ← θ − α·∂L/∂θ` on the rows it touches, computed by the
//! fused kernels of [`crate::kernels`] with the exact sigmoid (word2vec and gensim read σ from a
//! 1000-entry table and clip at |x| = 6; we do not, so the step is exactly the gradient of `L`,
//! which the tests check against chi's tape). For CBOW, word2vec (and gensim) add the whole
//! error `−α·∂L/∂h` to every context row rather than the gradient share `−α·∂L/∂h / |ctx|`;
//! [`CbowInputUpdate`] selects either.
//!
//! ## Schedule and threads
//! Frequent words are subsampled ([`Vocab::keep_probabilities`]); the window is dynamic (a
//! uniform `b ∈ [0, window)` shrinks it to `window − b` on each side, which weights near
//! words more); the learning rate decays linearly from `alpha` to `min_alpha` over the
//! words of all epochs. `threads` workers each take a contiguous slice of the corpus and update
//! the shared matrices without locks (Hogwild: rows touched by two threads at once may lose an
//! update; word2vec and gensim accept the same races), except for the most contended rows
//! (those of the 1,024 most frequent words, or the 1,024 Huffman nodes nearest the root), which
//! each worker updates in a private copy and merges every 10,000 words (more often on small
//! corpora: at least 256 merges per worker, never closer than 500 words). Each worker draws from its own
//! generator seeded from `seed` and its index, so with one thread training is reproducible
//! bit for bit.

use crate::error::{config, WordsError};
use crate::gate::{Gate, LeaveOnDrop, RankSide, RowMarks};
use crate::huffman::Huffman;
use crate::kernels::{dispatch, Kernel, KernelChoice, Scalar, WithKernel};
use crate::noise::NoiseTable;
use crate::vectors::Vectors;
use crate::vocab::{Corpus, Text, Vocab};
use chi_autodiff::Rng;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Skip-gram or CBOW.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Architecture {
    /// Each context word predicts the centre word.
    SkipGram,
    /// The mean of the context words predicts the centre word.
    Cbow,
}

/// The output layer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Objective {
    /// Negative sampling with `negative` noise words per example from `count^power`.
    NegativeSampling {
        /// Noise words per example (5 is word2vec's default).
        negative: usize,
        /// Exponent of the noise distribution (0.75 standard; White et al. print 2/3).
        power: f64,
    },
    /// Hierarchical softmax over a Huffman tree of the vocabulary.
    HierarchicalSoftmax,
}

/// How CBOW turns the error at the mean `h` into updates of the context rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CbowInputUpdate {
    /// Add the full `−α·∂L/∂h` to every context row (word2vec's C code and gensim).
    #[default]
    Word2vec,
    /// The true SGD step of the mean: `−α·∂L/∂h / |ctx|` per context row.
    Gradient,
}

/// Hyperparameters of [`train`].
#[derive(Clone, Debug, PartialEq)]
pub struct Word2VecConfig {
    /// Skip-gram or CBOW.
    pub arch: Architecture,
    /// Negative sampling or hierarchical softmax.
    pub objective: Objective,
    /// Vector size.
    pub dim: usize,
    /// Maximum window on each side.
    pub window: usize,
    /// Words seen fewer times are dropped.
    pub min_count: u64,
    /// Subsampling threshold (`1e-3` default; 0 disables).
    pub sample: f64,
    /// Passes over the corpus.
    pub epochs: usize,
    /// Initial learning rate; `None` takes gensim's default (0.025 skip-gram, 0.05 CBOW).
    pub alpha: Option<f64>,
    /// Final learning rate.
    pub min_alpha: f64,
    /// Worker threads.
    pub threads: usize,
    /// Seed of initialisation and of every worker's generator.
    pub seed: u64,
    /// CBOW input-row update rule.
    pub cbow_update: CbowInputUpdate,
    /// Row kernels.
    pub kernel: KernelChoice,
    /// Accumulate the training loss (costs one `log` per output row).
    pub compute_loss: bool,
}

impl Default for Word2VecConfig {
    fn default() -> Self {
        Word2VecConfig {
            arch: Architecture::SkipGram,
            objective: Objective::NegativeSampling { negative: 5, power: 0.75 },
            dim: 100,
            window: 5,
            min_count: 5,
            sample: 1e-3,
            epochs: 5,
            alpha: None,
            min_alpha: 1e-4,
            threads: 1,
            seed: 1,
            cbow_update: CbowInputUpdate::Word2vec,
            kernel: KernelChoice::Auto,
            compute_loss: false,
        }
    }
}

impl Word2VecConfig {
    /// The initial learning rate in effect.
    pub fn start_alpha(&self) -> f64 {
        self.alpha.unwrap_or(match self.arch {
            Architecture::SkipGram => 0.025,
            Architecture::Cbow => 0.05,
        })
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), WordsError> {
        if self.dim == 0 {
            return Err(config("dim", "must be at least 1"));
        }
        if self.window == 0 {
            return Err(config("window", "must be at least 1"));
        }
        if self.threads == 0 {
            return Err(config("threads", "must be at least 1"));
        }
        if !(self.sample >= 0.0 && self.sample.is_finite()) {
            return Err(config("sample", format!("{} is not a finite non-negative number", self.sample)));
        }
        let a = self.start_alpha();
        if !(a > 0.0 && a.is_finite()) || !(self.min_alpha >= 0.0 && self.min_alpha <= a) {
            return Err(config("alpha", format!("need 0 ≤ min_alpha ({}) ≤ alpha ({a}), alpha > 0", self.min_alpha)));
        }
        if let Objective::NegativeSampling { negative, power } = self.objective {
            if negative == 0 {
                return Err(config("negative", "must be at least 1 (use hierarchical softmax for none)"));
            }
            if !power.is_finite() {
                return Err(config("power", format!("{power} is not finite")));
            }
        }
        Ok(())
    }
}

/// What a training run did.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainStats {
    /// Wall time of the training loop (vocabulary and corpus encoding excluded).
    pub seconds: f64,
    /// Corpus words processed over all epochs (before subsampling); when training as one of
    /// several ranks ([`crate::dist`]), this rank's words.
    pub words: u64,
    /// Words kept by subsampling and trained on.
    pub effective_words: u64,
    /// `words / seconds`.
    pub words_per_sec: f64,
    /// Output-layer rows updated (dot products taken).
    pub updates: u64,
    /// Mean loss per example (NaN unless `compute_loss`).
    pub mean_loss: f64,
}

/// A progress report from a running trainer (sent by worker 0 about every 10,000 words).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Corpus words processed so far, all workers.
    pub words_done: u64,
    /// Words the run will process.
    pub words_total: u64,
    /// Current learning rate.
    pub alpha: f64,
    /// Seconds since training started.
    pub seconds: f64,
    /// Mean loss per example of worker 0 since the last report (NaN unless `compute_loss`).
    pub loss: f64,
}

/// A trained word2vec model.
#[derive(Clone, Debug)]
pub struct Word2Vec {
    /// The vocabulary.
    pub vocab: Vocab,
    /// Vector size.
    pub dim: usize,
    /// Input vectors (the word vectors), `V × dim`, row-major.
    pub input: Vec<f32>,
    /// Output vectors: `V × dim` (negative sampling) or `(V − 1) × dim` (HS inner nodes).
    pub output: Vec<f32>,
    /// The configuration trained with.
    pub config: Word2VecConfig,
}

impl Word2Vec {
    /// The word vectors (input rows).
    pub fn vectors(&self) -> Vectors {
        Vectors::new(self.vocab.words.clone(), self.dim, self.input.clone()).expect("consistent shapes")
    }
}

/// One example's output targets.
#[derive(Clone, Copy, Debug)]
pub enum Targets<'a> {
    /// Negative sampling: `ids[0]` is the positive (centre) word, the rest are negatives.
    Negative(&'a [u32]),
    /// Hierarchical softmax: the inner nodes and branch bits of the centre word's path.
    Path {
        /// Inner nodes, root first.
        points: &'a [u32],
        /// Branch bits.
        codes: &'a [u8],
    },
}

impl<'a> Targets<'a> {
    /// The rows of the output matrix the example updates.
    pub fn output_rows(self) -> &'a [u32] {
        match self {
            Targets::Negative(ids) => ids,
            Targets::Path { points, .. } => points,
        }
    }
}

impl Targets<'_> {
    fn max_row(&self) -> Option<u32> {
        match self {
            Targets::Negative(ids) => ids.iter().copied().max(),
            Targets::Path { points, .. } => points.iter().copied().max(),
        }
    }
}

/// `−log σ(x)`, stable for large |x|.
#[inline]
fn neg_log_sigmoid(x: f64) -> f64 {
    (-x).max(0.0) + (-x.abs()).exp().ln_1p()
}

/// The output half of one example: for each target row `u` with label `y` (1 for the positive
/// word or a 0-bit, 0 otherwise), `g = α·(y − σ(u·h))`, `e += g·u`, `u += g·h`, row after row
/// as in word2vec. Afterwards `e` holds `−α·∂L/∂h`. Returns the example's loss when `LOSS`.
///
/// When the rows are distinct (always on a Huffman path; for negative sampling unless the same
/// noise word was drawn twice) a row's update changes no other row's dot product, so all the
/// dot products are taken first, then all the sigmoids, then all the updates. The result is the
/// same, bit for bit, as row after row, but the sigmoids no longer wait one behind the other on
/// each row's update.
///
/// # Safety
/// `out` must hold every target row, none of which overlaps `h` or `e`.
#[inline(always)]
unsafe fn output_step<T: Scalar, K: Kernel, const LOSS: bool>(h: &[T], out: Rows<T>, d: usize, t: Targets, alpha: T, e: &mut [T]) -> f64 {
    match t {
        Targets::Negative(ids) => output_rows_step::<T, K, LOSS>(h, out, d, ids, |k| k == 0, alpha, e),
        Targets::Path { points, codes } => output_rows_step::<T, K, LOSS>(h, out, d, points, |k| codes[k] == 0, alpha, e),
    }
}

/// [`output_step`] over the target rows `rows`, `label(k)` saying whether row `k` has label 1.
///
/// # Safety
/// As [`output_step`].
#[inline(always)]
unsafe fn output_rows_step<T: Scalar, K: Kernel, const LOSS: bool>(
    h: &[T],
    out: Rows<T>,
    d: usize,
    rows: &[u32],
    label: impl Fn(usize) -> bool,
    alpha: T,
    e: &mut [T],
) -> f64 {
    const CHUNK: usize = 64;
    let row = |r: u32| std::slice::from_raw_parts_mut(out.row(r), d);
    let mut loss = 0.0;
    let mut gradient = |k: usize, f: T| {
        let y = label(k);
        if LOSS {
            let f = f.to_f64();
            loss += neg_log_sigmoid(if y { f } else { -f });
        }
        (if y { T::ONE } else { T::ZERO } - f.sigmoid()) * alpha
    };
    let distinct = rows.iter().enumerate().all(|(k, r)| !rows[..k].contains(r));
    if !distinct {
        for (k, &r) in rows.iter().enumerate() {
            let u = row(r);
            let g = gradient(k, K::dot(h, u));
            K::update(g, h, u, e);
        }
        return loss;
    }
    let mut g = [T::ZERO; CHUNK];
    for (c, chunk) in rows.chunks(CHUNK).enumerate() {
        for (gk, &r) in g.iter_mut().zip(chunk) {
            *gk = K::dot(h, row(r));
        }
        for (k, gk) in g.iter_mut().enumerate().take(chunk.len()) {
            *gk = gradient(c * CHUNK + k, *gk);
        }
        for (&gk, &r) in g.iter().zip(chunk) {
            K::update(gk, h, row(r), e);
        }
    }
    loss
}

fn check_rows(what: &'static str, len: usize, d: usize, max_row: Option<u32>) -> Result<(), WordsError> {
    if d == 0 || len % d != 0 {
        return Err(config("dim", format!("{what} has {len} values, not a multiple of dim {d}")));
    }
    if let Some(m) = max_row {
        if m as usize >= len / d {
            return Err(config("ids", format!("row {m} is out of range for {what} of {} rows", len / d)));
        }
    }
    Ok(())
}

/// One skip-gram SGD step on a frozen example: the input row `context` predicts `targets`.
/// Updates `input[context]` and the target rows of `output` in place and returns the loss
/// before the step. `input` and `output` are row-major with `dim` columns.
pub fn skipgram_step<T: Scalar>(
    input: &mut [T],
    output: &mut [T],
    dim: usize,
    context: u32,
    targets: Targets,
    alpha: T,
    kernel: KernelChoice,
) -> Result<f64, WordsError> {
    check_rows("input", input.len(), dim, Some(context))?;
    check_rows("output", output.len(), dim, targets.max_row())?;
    struct Step<'a, T> {
        input: &'a mut [T],
        output: &'a mut [T],
        dim: usize,
        context: u32,
        targets: Targets<'a>,
        alpha: T,
    }
    impl<T: Scalar> WithKernel for Step<'_, T> {
        type Out = f64;
        fn run<K: Kernel>(self, _k: K) -> f64 {
            let d = self.dim;
            let mut e = vec![T::ZERO; d];
            let h = &mut self.input[self.context as usize * d..][..d];
            // SAFETY: targets were bounds-checked; `output` is a distinct slice from `h` and `e`.
            let loss = unsafe { output_step::<T, K, true>(h, Rows::plain(self.output.as_mut_ptr(), d), d, self.targets, self.alpha, &mut e) };
            K::axpy(T::ONE, &e, h);
            loss
        }
    }
    Ok(dispatch(kernel, Step { input, output, dim, context, targets, alpha }))
}

/// One CBOW SGD step on a frozen example: the mean of the input rows `context` predicts
/// `targets`. Returns the loss before the step.
#[allow(clippy::too_many_arguments)]
pub fn cbow_step<T: Scalar>(
    input: &mut [T],
    output: &mut [T],
    dim: usize,
    context: &[u32],
    targets: Targets,
    alpha: T,
    update: CbowInputUpdate,
    kernel: KernelChoice,
) -> Result<f64, WordsError> {
    if context.is_empty() {
        return Err(config("context", "CBOW needs at least one context word"));
    }
    check_rows("input", input.len(), dim, context.iter().copied().max())?;
    check_rows("output", output.len(), dim, targets.max_row())?;
    struct Step<'a, T> {
        input: &'a mut [T],
        output: &'a mut [T],
        dim: usize,
        context: &'a [u32],
        targets: Targets<'a>,
        alpha: T,
        update: CbowInputUpdate,
    }
    impl<T: Scalar> WithKernel for Step<'_, T> {
        type Out = f64;
        fn run<K: Kernel>(self, _k: K) -> f64 {
            let d = self.dim;
            let mut h = vec![T::ZERO; d];
            let mut e = vec![T::ZERO; d];
            // SAFETY: ids bounds-checked; `h`, `e` are local buffers.
            unsafe { cbow_core::<T, K, true>(Rows::plain(self.input.as_mut_ptr(), d), Rows::plain(self.output.as_mut_ptr(), d), d, self.context, self.targets, self.alpha, self.update, &mut h, &mut e) }
        }
    }
    Ok(dispatch(kernel, Step { input, output, dim, context, targets, alpha, update }))
}

/// CBOW example on raw matrices: `h` and `e` are scratch of length `d`.
///
/// # Safety
/// Every id must be a row of its matrix.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn cbow_core<T: Scalar, K: Kernel, const LOSS: bool>(
    input: Rows<T>,
    output: Rows<T>,
    d: usize,
    context: &[u32],
    targets: Targets,
    alpha: T,
    update: CbowInputUpdate,
    h: &mut [T],
    e: &mut [T],
) -> f64 {
    h.fill(T::ZERO);
    e.fill(T::ZERO);
    for &c in context {
        K::axpy(T::ONE, std::slice::from_raw_parts(input.row(c), d), h);
    }
    let inv = T::from_f64(1.0 / context.len() as f64);
    for x in h.iter_mut() {
        *x = *x * inv;
    }
    let loss = output_step::<T, K, LOSS>(h, output, d, targets, alpha, e);
    let scale = match update {
        CbowInputUpdate::Word2vec => T::ONE,
        CbowInputUpdate::Gradient => inv,
    };
    for &c in context {
        K::axpy(scale, e, std::slice::from_raw_parts_mut(input.row(c), d));
    }
    loss
}

/// Row lookup in a matrix of `d`-long rows, some of which (`hot`) may live in a worker-private
/// copy ([`HotRows`]).
#[derive(Clone, Copy)]
pub(crate) struct Rows<T> {
    base: *mut T,
    d: usize,
    hot_lo: u32,
    hot_len: u32,
    hot: *mut T,
}

impl<T> Rows<T> {
    /// The matrix at `base`, every row in place.
    fn plain(base: *mut T, d: usize) -> Rows<T> {
        Rows { base, d, hot_lo: 0, hot_len: 0, hot: std::ptr::null_mut() }
    }

    /// Start of row `r`.
    ///
    /// # Safety
    /// `r` must be a row of the matrix.
    #[inline(always)]
    unsafe fn row(self, r: u32) -> *mut T {
        let k = r.wrapping_sub(self.hot_lo);
        if k < self.hot_len {
            self.hot.add(k as usize * self.d)
        } else {
            self.base.add(r as usize * self.d)
        }
    }
}

/// How many of the most contended rows of each matrix a worker copies when several share them.
/// With 64, two-thread skip-gram with negative sampling on Brown + SOTU + Shakespeare still took
/// 7–8 s in some runs and 2.8 s in others (noise words beyond the top 64 are drawn often enough
/// to keep cache lines moving between the cores); with 1,024 every run took 2.6–2.9 s. The
/// copies cost 2 × 1,024 × d floats per matrix and worker.
const HOT_ROWS: u32 = 1024;

/// The rows every example competes for: the most frequent words' input rows (the vocabulary is
/// sorted by count) and, at the output, the most frequent words' rows for negative sampling or
/// the inner nodes nearest the root for hierarchical softmax (the Huffman construction numbers
/// them last).
fn hot_ranges(cfg: &Word2VecConfig, v: usize, out_rows: usize) -> (std::ops::Range<u32>, std::ops::Range<u32>) {
    let input = 0..HOT_ROWS.min(v as u32);
    let n = HOT_ROWS.min(out_rows as u32);
    let output = match cfg.objective {
        Objective::HierarchicalSoftmax => out_rows as u32 - n..out_rows as u32,
        Objective::NegativeSampling { .. } => 0..n,
    };
    (input, output)
}

/// A worker's private copy of the hot rows of one shared matrix.
///
/// Under Hogwild every worker writes the rows of the most frequent words (and the root of the
/// Huffman tree) many times per sentence; with two workers on two cores each such write moves
/// the row's cache lines from one core to the other, and skip-gram with hierarchical softmax
/// ran no faster on two threads than on one. So each worker updates its own copy of those rows
/// and, every [`merge_interval`] words, adds what it changed to the shared rows (one worker at a
/// time) and takes the result as its new copy: the sum of all workers' changes, as a
/// synchronous step would give, only later. The other rows stay Hogwild. With one worker the
/// range is empty and training is word2vec's, bit for bit.
struct HotRows {
    /// The shared matrix.
    shared: *mut f32,
    range: std::ops::Range<u32>,
    d: usize,
    /// The worker's rows.
    local: Vec<f32>,
    /// The shared rows as of the last merge.
    base: Vec<f32>,
}

impl HotRows {
    /// Copies the rows `range` of the shared matrix at `shared`.
    ///
    /// # Safety
    /// `range` must be rows of that matrix.
    unsafe fn new(shared: *mut f32, range: std::ops::Range<u32>, d: usize) -> HotRows {
        let n = (range.end - range.start) as usize * d;
        let base = std::slice::from_raw_parts(shared.add(range.start as usize * d), n).to_vec();
        HotRows { shared, range, d, local: base.clone(), base }
    }

    /// Row lookup in the shared matrix that finds the hot rows in this copy.
    fn rows(&mut self) -> Rows<f32> {
        Rows { base: self.shared, d: self.d, hot_lo: self.range.start, hot_len: self.range.end - self.range.start, hot: self.local.as_mut_ptr() }
    }

    /// Adds this worker's changes since the last merge to the shared rows and copies them back.
    fn sync(&mut self, lock: &Mutex<()>) {
        if self.local.is_empty() {
            return;
        }
        let _one_at_a_time = lock.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: the range was checked against the matrix in `new`; under the lock no other
        // worker merges, and the rows are outside every worker's Hogwild writes.
        let s = unsafe { std::slice::from_raw_parts_mut(self.shared.add(self.range.start as usize * self.d), self.local.len()) };
        for ((sv, lv), bv) in s.iter_mut().zip(&mut self.local).zip(&mut self.base) {
            *sv += *lv - *bv;
            *lv = *sv;
            *bv = *sv;
        }
    }
}

/// A `d`-long scratch row starting on a 64-byte boundary. The error row `e` is stored and
/// reloaded for every output row of an example; where it sat 16 bytes off a 32-byte boundary
/// its 256-bit stores straddled cache lines and could not forward to the loads that follow, and
/// skip-gram with hierarchical softmax ran 45 % slower (the offset depended on what else the
/// program had allocated before).
struct AlignedRow {
    buf: Vec<f32>,
    start: usize,
    d: usize,
}

impl AlignedRow {
    fn new(d: usize) -> AlignedRow {
        let buf = vec![0f32; d + 16];
        let start = buf.as_ptr().align_offset(64).min(16);
        AlignedRow { buf, start, d }
    }

    fn row(&mut self) -> &mut [f32] {
        &mut self.buf[self.start..self.start + self.d]
    }
}

/// A matrix shared by the Hogwild workers.
#[derive(Clone, Copy)]
pub(crate) struct Shared<T>(pub(crate) *mut T);
// SAFETY: Hogwild training deliberately lets workers write rows of the same matrices without
// synchronisation; a race can only lose or mix float updates of one row, which SGD tolerates
// (Recht et al., *Hogwild!*). Every access stays within the matrix bounds.
unsafe impl<T: Send> Send for Shared<T> {}
unsafe impl<T: Send> Sync for Shared<T> {}

/// Everything a worker reads.
struct Job<'a> {
    cfg: &'a Word2VecConfig,
    corpus: &'a Corpus,
    keep: Vec<u32>,
    huffman: Option<&'a Huffman>,
    noise: Option<&'a NoiseTable>,
    input: Shared<f32>,
    output: Shared<f32>,
    /// Rows of the input and output matrices each worker keeps a private copy of
    /// ([`HotRows`]); empty with one worker or across ranks.
    hot_input: std::ops::Range<u32>,
    hot_output: std::ops::Range<u32>,
    /// Serialises the workers' merges of their hot rows.
    hot_lock: Mutex<()>,
    /// Words a worker processes between merges of its hot rows ([`merge_interval`]).
    merge_every: u64,
    words_done: &'a AtomicU64,
    words_total: u64,
    start: Instant,
    progress: Option<&'a (dyn Fn(&Progress) + Sync)>,
    /// The rank's side of training across ranks (`None` in a single process).
    dist: Option<&'a RankLink<'a>>,
}

/// What workers of one rank share with the rank's coordinator when training across ranks
/// ([`crate::dist`]).
pub(crate) struct RankLink<'a> {
    /// Where workers stop for the averages.
    pub(crate) gate: &'a Gate,
    /// Rows each worker touched since the last average, one set per worker.
    pub(crate) marks: &'a [RowMarks],
    /// Offset of this rank's first worker in the global worker numbering (seeds the generators).
    pub(crate) first_worker: usize,
}

#[derive(Default)]
struct WorkerStats {
    effective: u64,
    updates: u64,
    loss: f64,
    examples: u64,
}

struct Worker<'a, 'b> {
    job: &'b Job<'a>,
    /// Index among this process's workers (worker 0 reports progress).
    index: usize,
    sentences: std::ops::Range<usize>,
}

impl WithKernel for Worker<'_, '_> {
    type Out = WorkerStats;
    #[inline(always)]
    fn run<K: Kernel>(self, _k: K) -> WorkerStats {
        if self.job.cfg.compute_loss {
            worker::<K, true>(self.job, self.index, self.sentences)
        } else {
            worker::<K, false>(self.job, self.index, self.sentences)
        }
    }
}

/// How many words a worker processes between learning-rate updates.
const ALPHA_EVERY: u64 = 10_000;

/// Words a worker processes between merges of its hot rows ([`HotRows`]), when each worker has
/// `per_worker` words to process over all epochs: [`ALPHA_EVERY`] on large corpora, but at least
/// 256 merges per worker, and never fewer than 500 words apart.
///
/// Between merges the workers do not see each other's changes to the hot rows; on a small
/// vocabulary every row is hot. With 10,000 words between merges, two workers training CBOW on a
/// 12,000-word corpus (24 words, 5 epochs) merged three times each, so each trained most of a
/// model alone, and the sum of their changes came out much worse than one thread's (mean
/// within-group similarity 0.78–0.92 against 0.97). Only corpora below 2.56 million words per
/// worker merge more often than every 10,000 words; the gensim comparison (3.75 million tokens,
/// one epoch, two workers) merges every 7,327. A merge reads or writes `3 × hot rows × dim`
/// floats per matrix, about 600,000 at 1,024 rows of 100: estimated (not measured) at a tenth of
/// the work of 500 skip-gram words and under 1 % of 7,327.
fn merge_interval(per_worker: u64) -> u64 {
    (per_worker / 256).clamp(500, ALPHA_EVERY)
}

#[inline(always)]
fn worker<K: Kernel, const LOSS: bool>(job: &Job, index: usize, sentences: std::ops::Range<usize>) -> WorkerStats {
    let cfg = job.cfg;
    let d = cfg.dim;
    let start_alpha = cfg.start_alpha();
    // Workers are numbered across ranks so that no two draw the same stream.
    let global_index = index + job.dist.map_or(0, |l| l.first_worker);
    let mut rng = Rng::new(cfg.seed ^ (global_index as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F));
    let marks = job.dist.map(|l| &l.marks[index]);
    let mut st = WorkerStats::default();
    let mut alpha = start_alpha as f32;
    let mut local = 0u64; // words since the last update of the shared counter
    let mut since_merge = 0u64; // words since the last merge of the hot rows
    let mut kept: Vec<u32> = Vec::with_capacity(crate::vocab::MAX_SENTENCE_LEN);
    let mut targets: Vec<u32> = Vec::new();
    let mut ctx: Vec<u32> = Vec::with_capacity(2 * cfg.window);
    let (mut h_buf, mut e_buf) = (AlignedRow::new(d), AlignedRow::new(d));
    let (h, e) = (h_buf.row(), e_buf.row());
    let (mut report_loss, mut report_n) = (0.0f64, 0u64);
    let (input, output) = (job.input.0, job.output.0);
    // SAFETY: the hot ranges lie inside the matrices (`Job::hot_input`, `Job::hot_output`).
    let (mut hot_in, mut hot_out) = unsafe { (HotRows::new(input, job.hot_input.clone(), d), HotRows::new(output, job.hot_output.clone(), d)) };
    'epochs: for _epoch in 0..cfg.epochs {
        for s in sentences.clone() {
            let sent = job.corpus.sentence(s);
            kept.clear();
            for &w in sent {
                let k = job.keep[w as usize];
                if k == u32::MAX || (rng.next_u64() as u32) < k {
                    kept.push(w);
                }
            }
            st.effective += kept.len() as u64;
            for i in 0..kept.len() {
                let centre = kept[i];
                let b = rng.below(cfg.window);
                let reach = cfg.window - b;
                let lo = i.saturating_sub(reach);
                let hi = (i + reach + 1).min(kept.len());
                // The output targets of this centre word.
                let t = match cfg.objective {
                    Objective::HierarchicalSoftmax => {
                        let hf = job.huffman.expect("huffman tree built for HS");
                        Targets::Path { points: &hf.points[centre as usize], codes: &hf.codes[centre as usize] }
                    }
                    Objective::NegativeSampling { .. } => Targets::Negative(&[]),
                };
                let draw_negatives = |targets: &mut Vec<u32>, rng: &mut Rng| {
                    if let Objective::NegativeSampling { negative, .. } = cfg.objective {
                        targets.clear();
                        targets.push(centre);
                        let noise = job.noise.expect("noise table built for NS");
                        for _ in 0..negative {
                            let n = noise.sample(rng);
                            if n != centre {
                                targets.push(n);
                            }
                        }
                    }
                };
                match cfg.arch {
                    Architecture::SkipGram => {
                        for j in lo..hi {
                            if j == i {
                                continue;
                            }
                            draw_negatives(&mut targets, &mut rng);
                            let tt = match t {
                                Targets::Negative(_) => Targets::Negative(&targets),
                                p => p,
                            };
                            let c = kept[j] as usize;
                            if let Some(m) = marks {
                                m.mark_input(c as u32);
                                m.mark_output(tt.output_rows());
                            }
                            e.fill(0.0);
                            // SAFETY: ids come from the vocabulary, rows are in bounds; input and
                            // output are different matrices and `e` is local.
                            unsafe {
                                let hrow = std::slice::from_raw_parts_mut(hot_in.rows().row(c as u32), d);
                                let l = output_step::<f32, K, LOSS>(hrow, hot_out.rows(), d, tt, alpha, e);
                                K::axpy(1.0, e, hrow);
                                if LOSS {
                                    st.loss += l;
                                    report_loss += l;
                                    report_n += 1;
                                }
                            }
                            st.examples += 1;
                            st.updates += tt.output_rows().len() as u64;
                        }
                    }
                    Architecture::Cbow => {
                        ctx.clear();
                        ctx.extend(kept[lo..i].iter().chain(&kept[i + 1..hi]));
                        if ctx.is_empty() {
                            continue;
                        }
                        draw_negatives(&mut targets, &mut rng);
                        let tt = match t {
                            Targets::Negative(_) => Targets::Negative(&targets),
                            p => p,
                        };
                        if let Some(m) = marks {
                            for &c in &ctx {
                                m.mark_input(c);
                            }
                            m.mark_output(tt.output_rows());
                        }
                        // SAFETY: as above.
                        let l = unsafe { cbow_core::<f32, K, LOSS>(hot_in.rows(), hot_out.rows(), d, &ctx, tt, alpha, cfg.cbow_update, h, e) };
                        if LOSS {
                            st.loss += l;
                            report_loss += l;
                            report_n += 1;
                        }
                        st.examples += 1;
                        st.updates += tt.output_rows().len() as u64;
                    }
                }
            }
            local += sent.len() as u64;
            since_merge += sent.len() as u64;
            if since_merge >= job.merge_every {
                hot_in.sync(&job.hot_lock);
                hot_out.sync(&job.hot_lock);
                since_merge = 0;
            }
            if local >= ALPHA_EVERY {
                let done = job.words_done.fetch_add(local, Ordering::Relaxed) + local;
                local = 0;
                // Across ranks the schedule follows the estimated progress of all ranks.
                let done = job.dist.map_or(done, |l| l.gate.global_words(done));
                let frac = done as f64 / (job.words_total + 1) as f64;
                alpha = (start_alpha - (start_alpha - cfg.min_alpha) * frac).max(cfg.min_alpha) as f32;
                if index == 0 {
                    if let Some(p) = job.progress {
                        p(&Progress {
                            words_done: done,
                            words_total: job.words_total,
                            alpha: alpha as f64,
                            seconds: job.start.elapsed().as_secs_f64(),
                            loss: if LOSS && report_n > 0 { report_loss / report_n as f64 } else { f64::NAN },
                        });
                        report_loss = 0.0;
                        report_n = 0;
                    }
                }
            }
            if let Some(l) = job.dist {
                if !l.gate.after_sentence(sent.len() as u64) {
                    break 'epochs;
                }
            }
        }
    }
    hot_in.sync(&job.hot_lock);
    hot_out.sync(&job.hot_lock);
    job.words_done.fetch_add(local, Ordering::Relaxed);
    st
}

/// Splits the sentences `range` into `n` contiguous ranges of about equal word counts.
pub(crate) fn split_sentences(corpus: &Corpus, range: std::ops::Range<usize>, n: usize) -> Vec<std::ops::Range<usize>> {
    let base = if range.start == 0 { 0 } else { corpus.ends[range.start - 1] };
    let total = if range.is_empty() { 0 } else { corpus.ends[range.end - 1] - base };
    let mut out = Vec::with_capacity(n);
    let mut start = range.start;
    for t in 1..=n {
        let goal = base + total * t / n;
        let end = if t == n { range.end } else { start + corpus.ends[start..range.end].partition_point(|&e| e <= goal) };
        out.push(start..end);
        start = end;
    }
    out
}

/// Words of the sentences `range`.
pub(crate) fn range_words(corpus: &Corpus, range: &std::ops::Range<usize>) -> u64 {
    if range.is_empty() {
        return 0;
    }
    let base = if range.start == 0 { 0 } else { corpus.ends[range.start - 1] };
    (corpus.ends[range.end - 1] - base) as u64
}

/// Builds the vocabulary of `text` and trains (see [`train_corpus`]).
pub fn train(text: &Text, cfg: &Word2VecConfig) -> Result<(Word2Vec, TrainStats), WordsError> {
    cfg.validate()?;
    let vocab = Vocab::build(text, cfg.min_count)?;
    let corpus = Corpus::encode(text, &vocab);
    train_corpus(vocab, &corpus, cfg, None)
}

/// Trains word2vec on an encoded corpus. `progress`, if given, is called by worker 0 about
/// every 10,000 words.
pub fn train_corpus(
    vocab: Vocab,
    corpus: &Corpus,
    cfg: &Word2VecConfig,
    progress: Option<&(dyn Fn(&Progress) + Sync)>,
) -> Result<(Word2Vec, TrainStats), WordsError> {
    train_impl(vocab, corpus, cfg, progress, None)
}

/// Checks the corpus against the vocabulary (and `cfg`).
pub(crate) fn check_inputs(vocab: &Vocab, corpus: &Corpus, cfg: &Word2VecConfig) -> Result<(), WordsError> {
    cfg.validate()?;
    if corpus.ids.is_empty() {
        return Err(WordsError::EmptyCorpus);
    }
    if let Some(&m) = corpus.ids.iter().max() {
        if m as usize >= vocab.len() {
            return Err(config("corpus", format!("word id {m} is outside the vocabulary of {}", vocab.len())));
        }
    }
    Ok(())
}

/// Rows of the output matrix for `cfg` and a vocabulary of `v` words.
pub(crate) fn output_rows(cfg: &Word2VecConfig, v: usize) -> usize {
    match cfg.objective {
        Objective::HierarchicalSoftmax => v.saturating_sub(1).max(1),
        Objective::NegativeSampling { .. } => v,
    }
}

/// The trainer, in one process (`dist` = `None`) or as one rank of several, whose
/// coordinator then runs on the calling thread while the workers train.
pub(crate) fn train_impl(
    vocab: Vocab,
    corpus: &Corpus,
    cfg: &Word2VecConfig,
    progress: Option<&(dyn Fn(&Progress) + Sync)>,
    dist: Option<&dyn RankSide>,
) -> Result<(Word2Vec, TrainStats), WordsError> {
    check_inputs(&vocab, corpus, cfg)?;
    let (v, d) = (vocab.len(), cfg.dim);
    // word2vec's initialisation: input rows uniform in [−0.5/d, 0.5/d), output rows zero.
    // Across ranks every rank draws the same matrices from the shared seed.
    let mut init = Rng::new(cfg.seed);
    let mut input: Vec<f32> = (0..v * d).map(|_| ((init.next_f64() - 0.5) / d as f64) as f32).collect();
    let huffman = matches!(cfg.objective, Objective::HierarchicalSoftmax).then(|| Huffman::build(&vocab.counts));
    let noise = match cfg.objective {
        Objective::NegativeSampling { power, .. } => Some(NoiseTable::new(&vocab.counts, power)),
        Objective::HierarchicalSoftmax => None,
    };
    let out_rows = output_rows(cfg, v);
    let mut output = vec![0f32; out_rows * d];
    // Keep probabilities as u32 thresholds; u32::MAX means "always keep".
    let keep: Vec<u32> = vocab
        .keep_probabilities(cfg.sample)
        .into_iter()
        .map(|p| if p >= 1.0 { u32::MAX } else { (p * 4_294_967_296.0) as u32 })
        .collect();
    let words_done = AtomicU64::new(0);
    // The schedule runs over the whole corpus whatever the number of ranks.
    let words_total = corpus.ids.len() as u64 * cfg.epochs as u64;
    let shard = dist.map_or(0..corpus.sentences(), |c| c.shard());
    let threads = cfg.threads.min(shard.len()).max(1);
    let ranges = split_sentences(corpus, shard.clone(), threads);
    let marks: Vec<RowMarks> = match dist {
        Some(_) => (0..threads).map(|_| RowMarks::new(v, out_rows)).collect(),
        None => Vec::new(),
    };
    let link = dist.map(|c| RankLink { gate: c.gate(), marks: &marks, first_worker: c.rank() * cfg.threads });
    let (hot_input, hot_output) = if threads > 1 && dist.is_none() { hot_ranges(cfg, v, out_rows) } else { (0..0, 0..0) };
    let start = Instant::now();
    let (input_ptr, output_ptr) = (Shared(input.as_mut_ptr()), Shared(output.as_mut_ptr()));
    let job = Job {
        cfg,
        corpus,
        keep,
        huffman: huffman.as_ref(),
        noise: noise.as_ref(),
        input: input_ptr,
        output: output_ptr,
        hot_input,
        hot_output,
        hot_lock: Mutex::new(()),
        merge_every: merge_interval(words_total / threads as u64),
        words_done: &words_done,
        words_total,
        start,
        progress,
        dist: link.as_ref(),
    };
    let stats: Vec<WorkerStats> = match dist {
        None if threads == 1 => vec![dispatch(cfg.kernel, Worker { job: &job, index: 0, sentences: ranges[0].clone() })],
        None => std::thread::scope(|s| {
            let handles: Vec<_> = ranges
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let (job, r) = (&job, r.clone());
                    s.spawn(move || dispatch(cfg.kernel, Worker { job, index: i, sentences: r }))
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("word2vec worker panicked")).collect()
        }),
        Some(coord) => {
            coord.gate().start(threads);
            let (stats, outcome) = std::thread::scope(|s| {
                let handles: Vec<_> = ranges
                    .iter()
                    .enumerate()
                    .map(|(i, r)| {
                        let (job, r, gate) = (&job, r.clone(), coord.gate());
                        s.spawn(move || {
                            // Leaves the gate even when the worker panics, so the coordinator
                            // does not wait for it.
                            let _leave = LeaveOnDrop(gate);
                            dispatch(cfg.kernel, Worker { job, index: i, sentences: r })
                        })
                    })
                    .collect();
                // SAFETY: the coordinator touches the matrices only while every worker is
                // stopped at the gate or finished.
                let outcome = unsafe { coord.run(&marks, input_ptr.0, input.len(), output_ptr.0, output.len(), d) };
                let stats: Vec<WorkerStats> = handles.into_iter().map(|h| h.join().expect("word2vec worker panicked")).collect();
                (stats, outcome)
            });
            outcome?;
            stats
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    let effective_words: u64 = stats.iter().map(|s| s.effective).sum();
    let examples: u64 = stats.iter().map(|s| s.examples).sum();
    let loss: f64 = stats.iter().map(|s| s.loss).sum();
    let words = range_words(corpus, &shard) * cfg.epochs as u64;
    let st = TrainStats {
        seconds,
        words,
        effective_words,
        words_per_sec: words as f64 / seconds.max(1e-9),
        updates: stats.iter().map(|s| s.updates).sum(),
        mean_loss: if cfg.compute_loss && examples > 0 { loss / examples as f64 } else { f64::NAN },
    };
    Ok((Word2Vec { vocab, dim: d, input, output, config: cfg.clone() }, st))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two workers' merges leave the shared rows at the start plus both workers' changes, each
    /// worker's copy equal to the shared rows, and the rows outside the range untouched.
    #[test]
    fn hot_row_merges_add_every_workers_changes() {
        let d = 3;
        let mut shared: Vec<f32> = (0..5 * d).map(|k| k as f32).collect();
        let start = shared.clone();
        let lock = Mutex::new(());
        let p = shared.as_mut_ptr();
        // SAFETY: rows 1..3 of a 5-row matrix.
        let (mut a, mut b) = unsafe { (HotRows::new(p, 1..3, d), HotRows::new(p, 1..3, d)) };
        // SAFETY: row 1 and row 2 are in the hot range, row 4 is a plain row of the matrix.
        unsafe {
            assert_eq!(a.rows().row(4), p.add(4 * d));
            *a.rows().row(1) += 10.0;
            *b.rows().row(1) += 100.0;
            *b.rows().row(2).add(2) -= 1.0;
            // Before any merge the shared matrix has not moved.
            assert_eq!(*p.add(d), start[d]);
        }
        a.sync(&lock);
        b.sync(&lock);
        a.sync(&lock);
        let mut expect = start.clone();
        expect[d] += 110.0;
        expect[2 * d + 2] -= 1.0;
        assert_eq!(shared, expect);
        assert_eq!(a.local, expect[d..3 * d]);
        assert_eq!(b.local, expect[d..3 * d]);
    }
}
