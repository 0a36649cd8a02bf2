//! GloVe (Pennington, Socher and Manning, *GloVe: Global Vectors for Word Representation*).
//!
//! ## Co-occurrence counting
//! Within a sentence, each pair of words `d ≤ window` positions apart adds `1/d` to both
//! `X[i, j]` and `X[j, i]` (the symmetric window with GloVe's distance weighting). Counts are
//! held in a hash map; when it exceeds [`CoocConfig::max_in_memory`] entries it is sorted and
//! written to a temporary file as a run, and at the end all runs are merged (a k-way merge that
//! sums equal pairs). So the counting memory is bounded; the merged matrix is returned in
//! memory, sorted by `(i, j)`.
//!
//! ## Training
//! The loss is the weighted least squares
//! `J = ½ Σ_{X_ij > 0} f(X_ij) (w_i·w̃_j + b_i + b̃_j − log X_ij)²`, `f(x) = min(1, (x/x_max)^α)`,
//! with `x_max = 100` and `α = 0.75` by default. White et al., *Neural Representations of
//! Natural Language*, print it (eq. 3.23) without the square and with a leading minus; the
//! squared form above is the paper's (the ½ is the reference implementation's, and does not
//! move the minimum). Each entry is one AdaGrad step on the rows and biases it touches, as the
//! reference implementation (`glove.c`) takes it: the accumulator starts at 1, is updated after
//! the step, and sums the squares of the *scaled* gradient,
//! `θ ← θ − η g / √G; G ← G + (η g)²`. That is AdaGrad with rate 1 and initial accumulator
//! 1/η², not the textbook `G ← G + g²` (rate η, initial accumulator 1), whose steps shrink 1/η
//! = 20 times faster at η = 0.05. We follow `glove.c` because it is the GloVe users run and
//! compare with; on Brown + SOTU + Shakespeare (x_max 100, 15 epochs, 3 seeds) the two rules
//! differ without one being better: WordSim353 0.168 (`glove.c`) against 0.214 (textbook),
//! analogies 0.034 against 0.019. Entries are shuffled once and split across Hogwild workers.
//! The word vectors are `w + w̃`.
//!
//! ## Across processes
//! [`train_glove_on`] trains on the ranks of a [`chi_nn::dist::Collective`]: each rank takes a
//! share of the shuffled entries and the ranks add up their changes periodically.

use crate::error::{config, WordsError};
use crate::kernels::{dispatch, Kernel, KernelChoice, Scalar, WithKernel};
use crate::vectors::Vectors;
use crate::vocab::{Corpus, Text, Vocab};
use chi_autodiff::Rng;
use std::collections::{BinaryHeap, HashMap};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::time::Instant;

/// GloVe's weighting `f(x) = min(1, (x/x_max)^α)`.
pub fn weight(x: f64, x_max: f64, alpha: f64) -> f64 {
    if x >= x_max {
        1.0
    } else {
        (x / x_max).powf(alpha)
    }
}

/// Options of [`count_cooccurrences`].
#[derive(Clone, Debug, PartialEq)]
pub struct CoocConfig {
    /// Words on each side.
    pub window: usize,
    /// Distinct pairs held in memory before a sorted run is spilled to disk.
    pub max_in_memory: usize,
    /// Where runs are spilled (default: the system temporary directory).
    pub temp_dir: Option<PathBuf>,
}

impl Default for CoocConfig {
    fn default() -> Self {
        CoocConfig { window: 10, max_in_memory: 50_000_000, temp_dir: None }
    }
}

/// A sparse co-occurrence matrix, entries sorted by `(i, j)`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cooccurrences {
    /// `(i, j, X_ij)` with `X_ij > 0`.
    pub entries: Vec<(u32, u32, f64)>,
    /// How many sorted runs were spilled to disk while counting.
    pub spilled_runs: usize,
}

/// Removes its files when dropped, so an error path leaves no runs behind.
struct Runs(Vec<PathBuf>);
impl Drop for Runs {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

const RECORD: usize = 16;

fn spill(map: &mut HashMap<u64, f64>, dir: &std::path::Path, runs: &mut Runs) -> Result<(), WordsError> {
    let mut v: Vec<(u64, f64)> = map.drain().collect();
    v.sort_unstable_by_key(|e| e.0);
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = dir.join(format!("chi-words-cooc-{}-{n}.run", std::process::id()));
    runs.0.push(path.clone());
    let io = |e: std::io::Error| WordsError::Io { path: path.clone(), message: e.to_string() };
    let mut w = BufWriter::new(std::fs::File::create(&path).map_err(io)?);
    for (k, x) in v {
        w.write_all(&k.to_le_bytes()).map_err(io)?;
        w.write_all(&x.to_le_bytes()).map_err(io)?;
    }
    w.flush().map_err(io)
}

/// Counts weighted co-occurrences of `corpus` (see the module docs).
pub fn count_cooccurrences(corpus: &Corpus, cfg: &CoocConfig) -> Result<Cooccurrences, WordsError> {
    if cfg.window == 0 {
        return Err(config("window", "must be at least 1"));
    }
    if cfg.max_in_memory == 0 {
        return Err(config("max_in_memory", "must be at least 1"));
    }
    let dir = cfg.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
    let mut runs = Runs(Vec::new());
    let mut map: HashMap<u64, f64> = HashMap::new();
    let key = |i: u32, j: u32| ((i as u64) << 32) | j as u64;
    for s in 0..corpus.sentences() {
        let sent = corpus.sentence(s);
        for (p, &wi) in sent.iter().enumerate() {
            for dist in 1..=cfg.window.min(p) {
                let wj = sent[p - dist];
                let x = 1.0 / dist as f64;
                *map.entry(key(wi, wj)).or_insert(0.0) += x;
                *map.entry(key(wj, wi)).or_insert(0.0) += x;
            }
            if map.len() >= cfg.max_in_memory {
                spill(&mut map, &dir, &mut runs)?;
            }
        }
    }
    if runs.0.is_empty() {
        let mut entries: Vec<(u32, u32, f64)> = map.into_iter().map(|(k, x)| ((k >> 32) as u32, k as u32, x)).collect();
        entries.sort_unstable_by_key(|e| (e.0, e.1));
        return Ok(Cooccurrences { entries, spilled_runs: 0 });
    }
    if !map.is_empty() {
        spill(&mut map, &dir, &mut runs)?;
    }
    // k-way merge of the sorted runs.
    let mut readers = Vec::with_capacity(runs.0.len());
    for p in &runs.0 {
        let f = std::fs::File::open(p).map_err(|e| WordsError::Io { path: p.clone(), message: e.to_string() })?;
        readers.push(BufReader::new(f));
    }
    let next = |r: &mut BufReader<std::fs::File>, k: usize| -> Result<Option<(u64, f64)>, WordsError> {
        let mut buf = [0u8; RECORD];
        match r.read_exact(&mut buf) {
            Ok(()) => Ok(Some((u64::from_le_bytes(buf[..8].try_into().unwrap()), f64::from_le_bytes(buf[8..].try_into().unwrap())))),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
            Err(e) => Err(WordsError::Io { path: runs.0[k].clone(), message: e.to_string() }),
        }
    };
    let mut heap = BinaryHeap::new();
    for (k, r) in readers.iter_mut().enumerate() {
        if let Some((key, x)) = next(r, k)? {
            heap.push(std::cmp::Reverse((key, k, x.to_bits())));
        }
    }
    let mut entries: Vec<(u32, u32, f64)> = Vec::new();
    while let Some(std::cmp::Reverse((key, k, xb))) = heap.pop() {
        let x = f64::from_bits(xb);
        match entries.last_mut() {
            Some(last) if ((last.0 as u64) << 32 | last.1 as u64) == key => last.2 += x,
            _ => entries.push(((key >> 32) as u32, key as u32, x)),
        }
        if let Some((key, x)) = next(&mut readers[k], k)? {
            heap.push(std::cmp::Reverse((key, k, x.to_bits())));
        }
    }
    Ok(Cooccurrences { entries, spilled_runs: runs.0.len() })
}

/// Hyperparameters of [`train_glove`].
#[derive(Clone, Debug, PartialEq)]
pub struct GloveConfig {
    /// Vector size.
    pub dim: usize,
    /// Co-occurrence counting.
    pub cooc: CoocConfig,
    /// Words seen fewer times are dropped.
    pub min_count: u64,
    /// `x_max` of the weighting.
    pub x_max: f64,
    /// `α` of the weighting.
    pub alpha: f64,
    /// AdaGrad step size `η`.
    pub eta: f64,
    /// Passes over the co-occurrence entries.
    pub epochs: usize,
    /// Worker threads.
    pub threads: usize,
    /// Seed of initialisation and shuffling.
    pub seed: u64,
    /// Row kernels.
    pub kernel: KernelChoice,
}

impl Default for GloveConfig {
    fn default() -> Self {
        GloveConfig {
            dim: 100,
            cooc: CoocConfig::default(),
            min_count: 5,
            x_max: 100.0,
            alpha: 0.75,
            eta: 0.05,
            epochs: 15,
            threads: 1,
            seed: 1,
            kernel: KernelChoice::Auto,
        }
    }
}

/// GloVe parameters, all `V × dim` (biases `V`), row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct GloveParams<T> {
    /// Vector size.
    pub dim: usize,
    /// Word vectors `w`.
    pub w: Vec<T>,
    /// Context vectors `w̃`.
    pub wc: Vec<T>,
    /// Word biases `b`.
    pub b: Vec<T>,
    /// Context biases `b̃`.
    pub bc: Vec<T>,
    /// AdaGrad accumulators of `w`, `w̃`, `b`, `b̃`.
    pub gw: Vec<T>,
    /// See `gw`.
    pub gwc: Vec<T>,
    /// See `gw`.
    pub gb: Vec<T>,
    /// See `gw`.
    pub gbc: Vec<T>,
}

impl<T: Scalar> GloveParams<T> {
    /// GloVe's initialisation: every value uniform in `[−0.5/d, 0.5/d)`, accumulators 1.
    pub fn init(vocab: usize, dim: usize, rng: &mut Rng) -> GloveParams<T> {
        let mut u = |n: usize| (0..n).map(|_| T::from_f64((rng.next_f64() - 0.5) / dim as f64)).collect::<Vec<T>>();
        let (w, wc, b, bc) = (u(vocab * dim), u(vocab * dim), u(vocab), u(vocab));
        GloveParams { dim, w, wc, b, bc, gw: vec![T::ONE; vocab * dim], gwc: vec![T::ONE; vocab * dim], gb: vec![T::ONE; vocab], gbc: vec![T::ONE; vocab] }
    }

    /// Number of words.
    pub fn vocab(&self) -> usize {
        self.b.len()
    }
}

/// Raw pointers to the parameters, shared by the Hogwild workers.
#[derive(Clone, Copy)]
struct Ptrs<T> {
    w: *mut T,
    wc: *mut T,
    b: *mut T,
    bc: *mut T,
    gw: *mut T,
    gwc: *mut T,
    gb: *mut T,
    gbc: *mut T,
}
// SAFETY: Hogwild sharing, as in word2vec: unsynchronised float updates of the same row may be
// lost, which AdaGrad SGD tolerates; every access is in bounds.
unsafe impl<T: Send> Send for Ptrs<T> {}
unsafe impl<T: Send> Sync for Ptrs<T> {}

impl<T: Scalar> Ptrs<T> {
    fn of(p: &mut GloveParams<T>) -> Ptrs<T> {
        Ptrs {
            w: p.w.as_mut_ptr(),
            wc: p.wc.as_mut_ptr(),
            b: p.b.as_mut_ptr(),
            bc: p.bc.as_mut_ptr(),
            gw: p.gw.as_mut_ptr(),
            gwc: p.gwc.as_mut_ptr(),
            gb: p.gb.as_mut_ptr(),
            gbc: p.gbc.as_mut_ptr(),
        }
    }
}

/// One fused AdaGrad step on entry `(i, j, x)`; returns `½ f(x) diff²` before the step.
///
/// # Safety
/// `i`, `j` must be rows of the parameters behind `p`.
#[inline(always)]
unsafe fn glove_entry<T: Scalar, K: Kernel>(p: Ptrs<T>, d: usize, i: usize, j: usize, x: f64, x_max: f64, alpha: f64, eta: T) -> f64 {
    use std::slice::from_raw_parts_mut as rows;
    let wi = rows(p.w.add(i * d), d);
    let wj = rows(p.wc.add(j * d), d);
    let gi = rows(p.gw.add(i * d), d);
    let gj = rows(p.gwc.add(j * d), d);
    let diff = K::dot(wi, wj).to_f64() + (*p.b.add(i)).to_f64() + (*p.bc.add(j)).to_f64() - x.ln();
    let fdiff = weight(x, x_max, alpha) * diff;
    // η·f·diff: every step and every accumulator increment below carries the learning rate.
    let fd = eta * T::from_f64(fdiff);
    for k in 0..d {
        let (a, c) = (wi[k], wj[k]);
        let (ga, gc) = (fd * c, fd * a);
        wi[k] = a - ga * recip_sqrt(gi[k]);
        wj[k] = c - gc * recip_sqrt(gj[k]);
        gi[k] += ga * ga;
        gj[k] += gc * gc;
    }
    *p.b.add(i) = *p.b.add(i) - fd * recip_sqrt(*p.gb.add(i));
    *p.bc.add(j) = *p.bc.add(j) - fd * recip_sqrt(*p.gbc.add(j));
    *p.gb.add(i) += fd * fd;
    *p.gbc.add(j) += fd * fd;
    0.5 * fdiff * diff
}

#[inline(always)]
fn recip_sqrt<T: Scalar>(x: T) -> T {
    T::ONE / x.sqrt()
}

/// One GloVe AdaGrad step on a frozen entry `(i, j, x)` (exposed to check the fused update
/// against the tape). Returns the entry's loss `½ f(x) diff²` before the step.
pub fn glove_step<T: Scalar>(p: &mut GloveParams<T>, i: u32, j: u32, x: f64, x_max: f64, alpha: f64, eta: T, kernel: KernelChoice) -> Result<f64, WordsError> {
    let v = p.vocab();
    if i as usize >= v || j as usize >= v {
        return Err(config("ids", format!("entry ({i}, {j}) is outside a vocabulary of {v}")));
    }
    if !(x > 0.0 && x.is_finite()) {
        return Err(config("x", format!("co-occurrence {x} must be positive and finite")));
    }
    struct Step<T> {
        p: Ptrs<T>,
        d: usize,
        i: usize,
        j: usize,
        x: f64,
        x_max: f64,
        alpha: f64,
        eta: T,
    }
    impl<T: Scalar> WithKernel for Step<T> {
        type Out = f64;
        fn run<K: Kernel>(self, _k: K) -> f64 {
            // SAFETY: ids checked above.
            unsafe { glove_entry::<T, K>(self.p, self.d, self.i, self.j, self.x, self.x_max, self.alpha, self.eta) }
        }
    }
    let d = p.dim;
    Ok(dispatch(kernel, Step { p: Ptrs::of(p), d, i: i as usize, j: j as usize, x, x_max, alpha, eta }))
}

/// What a GloVe run did.
#[derive(Clone, Debug, PartialEq)]
pub struct GloveStats {
    /// Seconds spent counting co-occurrences.
    pub count_seconds: f64,
    /// Seconds spent training.
    pub train_seconds: f64,
    /// Non-zero co-occurrence entries.
    pub entries: usize,
    /// Entries processed per second of training (all epochs).
    pub entries_per_sec: f64,
    /// Sorted runs spilled to disk while counting.
    pub spilled_runs: usize,
    /// Mean `½ f diff²` per entry in each epoch.
    pub epoch_loss: Vec<f64>,
}

/// A trained GloVe model.
#[derive(Clone, Debug)]
pub struct Glove {
    /// The vocabulary.
    pub vocab: Vocab,
    /// The parameters.
    pub params: GloveParams<f32>,
}

impl Glove {
    /// The word vectors `w + w̃`.
    pub fn vectors(&self) -> Vectors {
        let data = self.params.w.iter().zip(&self.params.wc).map(|(a, b)| a + b).collect();
        Vectors::new(self.vocab.words.clone(), self.params.dim, data).expect("consistent shapes")
    }
}

struct Epoch<'a> {
    p: Ptrs<f32>,
    d: usize,
    entries: &'a [(u32, u32, f64)],
    cfg: &'a GloveConfig,
}

impl WithKernel for Epoch<'_> {
    type Out = f64;
    fn run<K: Kernel>(self, _k: K) -> f64 {
        let eta = self.cfg.eta as f32;
        let mut loss = 0.0;
        for &(i, j, x) in self.entries {
            // SAFETY: entries come from the encoded corpus, ids are below the vocabulary size.
            loss += unsafe { glove_entry::<f32, K>(self.p, self.d, i as usize, j as usize, x, self.cfg.x_max, self.cfg.alpha, eta) };
        }
        loss
    }
}

/// Builds the vocabulary, counts co-occurrences and trains GloVe.
pub fn train_glove(text: &Text, cfg: &GloveConfig) -> Result<(Glove, GloveStats), WordsError> {
    train_glove_on(&chi_nn::dist::Solo, text, cfg, u64::MAX).map(|(g, s, _)| (g, s))
}

/// What one rank of [`train_glove_on`] exchanged.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GloveComm {
    /// Ranks in the group.
    pub ranks: usize,
    /// Exchanges made (all epochs).
    pub exchanges: u64,
    /// Bytes this rank contributed to the exchanges.
    pub bytes_sent: u64,
    /// Seconds spent in exchanges (arithmetic, transfer and waiting for the other ranks).
    pub seconds: f64,
}

/// The exchange period used when none is given. On Brown + SOTU + Shakespeare (dim 100, window
/// 10, 15 epochs, 2 ranks, 3 seeds) it scored above one process on WordSim353, SimLex-999 and
/// the analogies, where exchanging once per epoch lost 0.9 analogy points (BENCHMARKS.md,
/// "GloVe across ranks").
pub const DEFAULT_SYNC_ENTRIES: u64 = 1_000_000;

/// Entries per rank between exchanges: `sync_entries`, at most the largest share (once per epoch).
fn period_of(sync_entries: u64, largest_share: usize) -> usize {
    usize::try_from(sync_entries).unwrap_or(usize::MAX).clamp(1, largest_share.max(1))
}

/// GloVe as one rank of `comm` (every rank calls it with the same text and configuration);
/// returns the model every rank then holds, the statistics (losses are global) and this rank's
/// communication. With [`chi_nn::dist::Solo`] it is [`train_glove`].
///
/// Every rank builds the vocabulary and counts the co-occurrences of the whole text (counting is
/// not divided: it is a fraction of one epoch's training on the corpora here), and all draw the
/// same initial parameters and the same shuffle of the entries. In each epoch rank `r` trains
/// on its contiguous `1/K` of the shuffled entries with its own Hogwild threads, and every
/// `sync_entries` entries per rank (`u64::MAX`: once per epoch) the ranks **add up their changes**:
/// each sends `θ − θ₀` for every parameter and AdaGrad accumulator since the last exchange
/// (`θ₀`, identical on all ranks), and all set `θ ← θ₀ + Σ_r (θ_r − θ₀)`. Each entry is trained
/// by one rank per epoch, so, unlike averaging, every update keeps its full size and every
/// squared gradient enters the accumulators, as in one process whose Hogwild workers read
/// rows up to one period old. The exchange is one dense all-reduce of the whole model and its
/// accumulators (`4 · V · (d + 1)` values).
pub fn train_glove_on(comm: &dyn chi_nn::dist::Collective, text: &Text, cfg: &GloveConfig, sync_entries: u64) -> Result<(Glove, GloveStats, GloveComm), WordsError> {
    if cfg.dim == 0 || cfg.threads == 0 || cfg.epochs == 0 {
        return Err(config("dim/threads/epochs", "must each be at least 1"));
    }
    if !(cfg.x_max > 0.0 && cfg.eta > 0.0 && cfg.alpha.is_finite()) {
        return Err(config("x_max/eta/alpha", "x_max and eta must be positive, alpha finite"));
    }
    if sync_entries == 0 {
        return Err(config("sync_entries", "must be at least 1 entry (u64::MAX: once per epoch)"));
    }
    let vocab = Vocab::build(text, cfg.min_count)?;
    let corpus = Corpus::encode(text, &vocab);
    let t0 = Instant::now();
    let cooc = count_cooccurrences(&corpus, &cfg.cooc)?;
    if cooc.entries.is_empty() {
        // Nothing to fit: the vectors would stay their random start, written as if learned.
        return Err(config(
            "corpus",
            format!(
                "no co-occurrences: none of its {} words kept (min_count {}) has another within a window of {} in the same sentence; word vectors need a larger corpus",
                corpus.ids.len(),
                cfg.min_count,
                cfg.cooc.window
            ),
        ));
    }
    let count_seconds = t0.elapsed().as_secs_f64();
    let mut rng = Rng::new(cfg.seed);
    let mut params = GloveParams::<f32>::init(vocab.len(), cfg.dim, &mut rng);
    let mut entries = cooc.entries;
    rng.shuffle(&mut entries);
    let (k, rank) = (comm.size(), comm.rank());
    let mine = chi_nn::dist::shard(&entries, rank, k);
    let largest = entries.len().div_ceil(k.max(1));
    // One process: a single period, so the threads split the entries exactly as they always did.
    let period = if k == 1 { largest.max(1) } else { period_of(sync_entries, largest) };
    let periods = largest.div_ceil(period).max(1);
    let mut base = (k > 1).then(|| params.clone());
    let mut stats_comm = GloveComm { ranks: k, ..GloveComm::default() };
    let t1 = Instant::now();
    let mut epoch_loss = Vec::with_capacity(cfg.epochs);
    for _ in 0..cfg.epochs {
        let mut loss = 0.0;
        for q in 0..periods {
            let part = &mine[(q * period).min(mine.len())..((q + 1) * period).min(mine.len())];
            loss += hogwild_epoch(&mut params, part, cfg);
            if let Some(base) = base.as_mut() {
                let t = Instant::now();
                stats_comm.bytes_sent += add_up_changes(comm, &mut params, base);
                stats_comm.exchanges += 1;
                stats_comm.seconds += t.elapsed().as_secs_f64();
            }
        }
        if k > 1 {
            loss = comm.all_reduce_sum(chi_nn::dist::Buf::F64(vec![loss])).into_vec::<f64>()[0];
        }
        epoch_loss.push(loss / entries.len().max(1) as f64);
    }
    let train_seconds = t1.elapsed().as_secs_f64();
    let stats = GloveStats {
        count_seconds,
        train_seconds,
        entries: entries.len(),
        entries_per_sec: (entries.len() * cfg.epochs) as f64 / train_seconds.max(1e-9),
        spilled_runs: cooc.spilled_runs,
        epoch_loss,
    };
    Ok((Glove { vocab, params }, stats, stats_comm))
}

/// One pass of `cfg.threads` Hogwild workers over `entries` (split into contiguous parts);
/// returns the summed loss.
fn hogwild_epoch(params: &mut GloveParams<f32>, entries: &[(u32, u32, f64)], cfg: &GloveConfig) -> f64 {
    let p = Ptrs::of(params);
    let threads = cfg.threads.min(entries.len()).max(1);
    let chunk = entries.len().div_ceil(threads).max(1);
    if threads == 1 {
        dispatch(cfg.kernel, Epoch { p, d: cfg.dim, entries, cfg })
    } else {
        std::thread::scope(|s| {
            let hs: Vec<_> = entries.chunks(chunk).map(|c| s.spawn(move || dispatch(cfg.kernel, Epoch { p, d: cfg.dim, entries: c, cfg }))).collect();
            hs.into_iter().map(|h| h.join().expect("GloVe worker panicked")).sum()
        })
    }
}

/// The eight arrays of the parameters, in a fixed order.
fn arrays(p: &mut GloveParams<f32>) -> [&mut Vec<f32>; 8] {
    [&mut p.w, &mut p.wc, &mut p.b, &mut p.bc, &mut p.gw, &mut p.gwc, &mut p.gb, &mut p.gbc]
}

/// `θ ← θ₀ + Σ_r (θ_r − θ₀)` for every array, then `θ₀ ← θ`; returns the bytes sent.
fn add_up_changes(comm: &dyn chi_nn::dist::Collective, params: &mut GloveParams<f32>, base: &mut GloveParams<f32>) -> u64 {
    let mut delta = Vec::new();
    for (cur, old) in arrays(params).into_iter().zip(arrays(base)) {
        delta.extend(cur.iter().zip(old.iter()).map(|(c, o)| c - o));
    }
    let bytes = (delta.len() * std::mem::size_of::<f32>()) as u64;
    let sum: Vec<f32> = comm.all_reduce_sum(chi_nn::dist::Buf::F32(delta)).into_vec();
    let mut off = 0;
    for (cur, old) in arrays(params).into_iter().zip(arrays(base)) {
        for (o, d) in old.iter_mut().zip(&sum[off..off + cur.len()]) {
            *o += d;
        }
        cur.copy_from_slice(old);
        off += cur.len();
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use chi_nn::dist::ThreadGroup;

    #[test]
    fn an_exchange_adds_every_ranks_change_to_the_common_start() {
        let start = GloveParams::<f32>::init(4, 3, &mut Rng::new(1));
        let handles: Vec<_> = ThreadGroup::new(3)
            .into_iter()
            .map(|m| {
                let start = start.clone();
                std::thread::spawn(move || {
                    let (mut p, mut base) = (start.clone(), start);
                    // Rank r moves word r's vector by r + 1 and its accumulator by 10 (r + 1).
                    let r = chi_nn::dist::Collective::rank(&m);
                    p.w[3 * r] += (r + 1) as f32;
                    p.gb[r] += 10.0 * (r + 1) as f32;
                    let bytes = add_up_changes(&m, &mut p, &mut base);
                    assert_eq!(bytes, 4 * (2 * 4 * 3 + 2 * 4 + 2 * 4 * 3 + 2 * 4) as u64);
                    assert_eq!(p, base, "the start of the next period is the exchanged model");
                    p
                })
            })
            .collect();
        let mut want = start.clone();
        for r in 0..3 {
            want.w[3 * r] += (r + 1) as f32;
            want.gb[r] += 10.0 * (r + 1) as f32;
        }
        for h in handles {
            assert_eq!(h.join().unwrap(), want);
        }
    }
}
