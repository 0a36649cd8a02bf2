//! word2vec across the ranks of a [`Collective`] (MPI processes, or threads of a
//! [`chi_nn::dist::ThreadGroup`]) by periodic averaging of the rows touched since the last
//! average.
//!
//! ## The algorithm
//! Every rank holds the whole model. The corpus's sentences are cut into `K` contiguous shards
//! of about equal word counts (the same cut the Hogwild threads of one process use), and rank
//! `r` trains on shard `r` with its own Hogwild threads, exactly as [`train_corpus`] trains on
//! the whole corpus. All ranks start from the same matrices (drawn from the shared seed); each
//! rank's worker generators are seeded from the seed and the worker's index across all ranks,
//! so no two workers draw the same stream.
//!
//! Every [`SyncConfig::sync_words`] corpus words trained by a rank, its workers stop and the
//! ranks **average the rows touched since the last average** of both matrices (the input
//! vectors and the output layer: negative-sampling vectors or hierarchical-softmax inner nodes):
//! 1. each rank sends the set of rows its workers touched (as a bitset or as sorted ids,
//!    whichever is shorter) with an all-gather, and every rank forms the same union;
//! 2. the union rows of both matrices travel in one all-reduce (sum), and each rank divides by
//!    `K`.
//!
//! A row no rank touched since the last average holds on every rank the value that average
//! left there, identical across ranks; averaging it would give it back (up to the rounding of
//! `(K·x)/K`, which is exact for `K = 2`). So averaging the union rows *is* full model averaging
//! (periodic "local SGD" averaging of the whole parameter vector), at the traffic of the rows
//! actually trained. The tests check both facts: after every average all ranks' matrices are
//! bit-identical, and the union-row average equals the full-matrix average (bitwise for `K = 2`,
//! to one rounding for `K = 3`). A final average after the last word leaves every rank with
//! the same vectors.
//!
//! How much smaller the union is depends on the period and the output layer: with negative
//! sampling the noise words reach most of the frequent output rows quickly. On Brown + SOTU +
//! Shakespeare (24,756 words, skip-gram, 2 ranks) an average sent 56 % of the model's rows
//! every 10,000 words per rank and 74 % every 100,000.
//!
//! Memory beyond the model: one bit per row and matrix for each worker, for the rank and for
//! the union, and one buffer of the union rows per average (no dense copy of a matrix).
//!
//! ## Quality
//! Averaging is not one process's Hogwild: a word's update on one rank enters the average with
//! weight `1/K`, so for the same words each row moves about `1/K` as far as in one process
//! (averaging after every step is SGD on the mean gradient of `K` examples, not on their sum).
//! On Brown + SOTU + Shakespeare (skip-gram, 2 ranks, 3 seeds) this cost 0.09 WordSim353 ρ and
//! 4 analogy points at the default learning rate, whatever the period; starting the rate at
//! `K ×` the default (0.05) made the 2-rank scores not distinguishable from one process's
//! (BENCHMARKS.md, "Word vectors across ranks"). The rate is the caller's choice
//! ([`Word2VecConfig::alpha`]); this module does not rescale it.
//!
//! ## Schedule
//! The learning rate decays linearly over the words of all epochs of the *whole* corpus, as in
//! one process, driven by the estimated global progress: the exact count of all ranks at the
//! last average (carried in the all-gather) plus `K ×` this rank's words since then. With one
//! rank this is exactly the count one process uses, so training with [`chi_nn::dist::Solo`] is
//! bit-identical to [`train_corpus`] (tested at one thread).
//!
//! Every rank performs the same number of averages, which all ranks can compute beforehand:
//! one after each `sync_words` words for as long as the smallest shard lasts, then the final
//! one. An average a rank reaches only by finishing its shard is made after training (with
//! nothing new touched it costs one small all-gather).
//!
//! ## Cost
//! [`CommStats`] counts the averages, the rows exchanged (against the rows full averaging would
//! send), this rank's bytes sent and the seconds its workers stood still for the averages,
//! which includes waiting for slower ranks.
//!
//! GloVe across ranks is [`crate::glove::train_glove_on`]: there each entry is trained by one
//! rank, and the ranks add up their changes (vectors and AdaGrad accumulators) instead of
//! averaging them.
//!
//! [`train_corpus`]: crate::word2vec::train_corpus

use crate::error::{config, WordsError};
use crate::gate::{words_for, Gate, RankSide, RowMarks};
use crate::vocab::{Corpus, Vocab};
use crate::word2vec::{self, Progress, TrainStats, Word2Vec, Word2VecConfig};
use chi_nn::dist::{Buf, Collective};
use std::cell::RefCell;
use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

/// The averaging period used when none is given. On Brown + SOTU + Shakespeare (skip-gram,
/// negative sampling, dim 100, 2 ranks) a rank stood still for averages 7 % of its training
/// time at this period against 35 % at 10,000 words, for analogy accuracy 0.58 points below
/// the 10,000-word period (paired over 3 seeds, 95 % CI [0.39, 0.77]; WordSim353 and SimLex-999
/// not distinguishable) — BENCHMARKS.md, "Word vectors across ranks".
pub const DEFAULT_SYNC_WORDS: u64 = 100_000;

/// How often ranks average.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncConfig {
    /// Corpus words (before subsampling) a rank trains between two averages. `u64::MAX`
    /// averages only once, at the end.
    pub sync_words: u64,
}

impl Default for SyncConfig {
    fn default() -> Self {
        SyncConfig { sync_words: DEFAULT_SYNC_WORDS }
    }
}

impl SyncConfig {
    /// Checks the period.
    pub fn validate(&self) -> Result<(), WordsError> {
        if self.sync_words == 0 {
            return Err(config("sync_words", "must be at least 1 word (u64::MAX averages only at the end)"));
        }
        Ok(())
    }
}

/// The communication of one rank's training.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CommStats {
    /// Ranks in the group.
    pub ranks: usize,
    /// Averages made (the final one included).
    pub syncs: u64,
    /// Rows averaged, both matrices, summed over the averages.
    pub rows_exchanged: u64,
    /// Rows of both matrices: what averaging the whole model would send at each average.
    pub rows_per_full_sync: u64,
    /// Bytes this rank contributed: touched-row sets and union rows.
    pub bytes_sent: u64,
    /// Seconds this rank's workers stood still for averages (exchange, arithmetic and waiting
    /// for the other ranks).
    pub seconds_blocked: f64,
}

impl CommStats {
    /// Rows exchanged as a share of what averaging the whole model as often would exchange.
    pub fn row_share(&self) -> f64 {
        let full = self.rows_per_full_sync as f64 * self.syncs as f64;
        if full > 0.0 {
            self.rows_exchanged as f64 / full
        } else {
            0.0
        }
    }
}

/// Trains word2vec as one rank of `comm` (every rank calls it with the same vocabulary, corpus
/// and configurations) and returns the model every rank then holds, this rank's training
/// statistics ([`TrainStats::words`] counts this rank's words) and its communication. With
/// [`chi_nn::dist::Solo`] it is [`word2vec::train_corpus`], bit for bit at one thread.
/// `progress`, if given, is called by this rank's worker 0 with the estimated global progress.
pub fn train_word2vec(
    comm: &dyn Collective,
    vocab: Vocab,
    corpus: &Corpus,
    cfg: &Word2VecConfig,
    sync: &SyncConfig,
    progress: Option<&(dyn Fn(&Progress) + Sync)>,
) -> Result<(Word2Vec, TrainStats, CommStats), WordsError> {
    train_observed(comm, vocab, corpus, cfg, sync, progress, None)
}

/// Before or after an average (the hook the tests watch the matrices through).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    Before,
    After,
}

/// Sees both matrices (input, output) around every average.
pub(crate) type Observer<'a> = Box<dyn FnMut(Phase, &[f32], &[f32]) + 'a>;

pub(crate) fn train_observed<'a>(
    comm: &'a dyn Collective,
    vocab: Vocab,
    corpus: &Corpus,
    cfg: &Word2VecConfig,
    sync: &SyncConfig,
    progress: Option<&(dyn Fn(&Progress) + Sync)>,
    observer: Option<Observer<'a>>,
) -> Result<(Word2Vec, TrainStats, CommStats), WordsError> {
    word2vec::check_inputs(&vocab, corpus, cfg)?;
    sync.validate()?;
    let (k, rank) = (comm.size(), comm.rank());
    if k == 0 || rank >= k {
        return Err(config("ranks", format!("rank {rank} of a group of {k}")));
    }
    // Ranks that disagree on the data or the configuration would deadlock or average
    // unrelated models; every rank sees every fingerprint, so all fail together.
    let mine = fingerprint(&vocab, corpus, cfg, sync);
    let all = comm.all_gather_bytes(&mine.to_le_bytes());
    if let Some(r) = all.iter().position(|b| b.as_slice() != mine.to_le_bytes()) {
        return Err(config("ranks", format!("rank {r} has another corpus, vocabulary or configuration than rank {rank}; every rank must be given the same")));
    }
    let shards = word2vec::split_sentences(corpus, 0..corpus.sentences(), k);
    let smallest = shards.iter().map(|r| word2vec::range_words(corpus, r)).min().unwrap_or(0) * cfg.epochs as u64;
    let planned = if smallest == 0 { 0 } else { (smallest - 1) / sync.sync_words };
    let (v, out_rows) = (vocab.len(), word2vec::output_rows(cfg, vocab.len()));
    let coord = Coordinator {
        comm,
        rank,
        shard: shards[rank].clone(),
        gate: Gate::new(k as u64, if planned > 0 { sync.sync_words } else { u64::MAX }),
        sync_words: sync.sync_words,
        planned,
        state: RefCell::new(CoordState {
            stats: CommStats { ranks: k, rows_per_full_sync: (v + out_rows) as u64, ..Default::default() },
            in_bits: vec![0; words_for(v)],
            out_bits: vec![0; words_for(out_rows)],
            done: 0,
            observer,
        }),
    };
    let (model, stats) = word2vec::train_impl(vocab, corpus, cfg, progress, Some(&coord))?;
    let comm_stats = coord.state.into_inner().stats;
    Ok((model, stats, comm_stats))
}

/// FNV-1a over what every rank must agree on.
fn fingerprint(vocab: &Vocab, corpus: &Corpus, cfg: &Word2VecConfig, sync: &SyncConfig) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (w, c) in vocab.words.iter().zip(&vocab.counts) {
        eat(w.as_bytes());
        eat(&c.to_le_bytes());
    }
    for &id in &corpus.ids {
        eat(&id.to_le_bytes());
    }
    for &e in &corpus.ends {
        eat(&(e as u64).to_le_bytes());
    }
    // Threads, kernels and loss accounting may differ between ranks without changing the model
    // being trained.
    let shared = Word2VecConfig { threads: 1, kernel: Default::default(), compute_loss: false, ..cfg.clone() };
    eat(format!("{shared:?}").as_bytes());
    eat(&sync.sync_words.to_le_bytes());
    h
}

/// The set bits of `bits`, ascending.
fn ones(bits: &[u64]) -> Vec<u32> {
    let mut out = Vec::new();
    for (i, &w) in bits.iter().enumerate() {
        let mut w = w;
        while w != 0 {
            out.push((i * 64) as u32 + w.trailing_zeros());
            w &= w - 1;
        }
    }
    out
}

/// Appends a row set: tag 0 and the bitset's words, or tag 1, the count and the ids —
/// whichever is shorter.
fn encode_set(out: &mut Vec<u8>, bits: &[u64]) {
    let n: u32 = bits.iter().map(|w| w.count_ones()).sum();
    if 4 * (n as usize + 1) < 8 * bits.len() {
        out.push(1);
        out.extend_from_slice(&n.to_le_bytes());
        for id in ones(bits) {
            out.extend_from_slice(&id.to_le_bytes());
        }
    } else {
        out.push(0);
        for w in bits {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }
}

/// Reads a set written by [`encode_set`] at `at` into `union` (of `rows` rows); advances `at`.
fn decode_set(msg: &[u8], at: &mut usize, union: &mut [u64], rows: usize) -> Result<(), String> {
    let take = |at: &mut usize, n: usize| -> Result<&[u8], String> {
        let s = msg.get(*at..*at + n).ok_or_else(|| format!("message of {} bytes ends early", msg.len()))?;
        *at += n;
        Ok(s)
    };
    match take(at, 1)?[0] {
        0 => {
            for w in union.iter_mut() {
                *w |= u64::from_le_bytes(take(at, 8)?.try_into().unwrap());
            }
            if rows % 64 != 0 && union.last().is_some_and(|&w| w >> (rows % 64) != 0) {
                return Err(format!("row set names rows beyond the {rows} rows"));
            }
        }
        1 => {
            let n = u32::from_le_bytes(take(at, 4)?.try_into().unwrap()) as usize;
            for _ in 0..n {
                let id = u32::from_le_bytes(take(at, 4)?.try_into().unwrap()) as usize;
                if id >= rows {
                    return Err(format!("row {id} is beyond the {rows} rows"));
                }
                union[id >> 6] |= 1 << (id & 63);
            }
        }
        t => return Err(format!("unknown row-set tag {t}")),
    }
    Ok(())
}

/// Averages the rows `in_rows` of `input` and `out_rows` of `output` (row-major, `d` columns)
/// over the ranks of `comm`: one all-reduce of the rows, divided by the number of ranks. Every
/// rank must pass the same row lists. Returns the floats sent.
pub(crate) fn average_rows(comm: &dyn Collective, input: &mut [f32], in_rows: &[u32], output: &mut [f32], out_rows: &[u32], d: usize) -> Result<usize, WordsError> {
    let n = (in_rows.len() + out_rows.len()) * d;
    if n == 0 {
        return Ok(0);
    }
    let mut buf = Vec::with_capacity(n);
    for (m, rows) in [(&*input, in_rows), (&*output, out_rows)] {
        for &r in rows {
            buf.extend_from_slice(&m[r as usize * d..][..d]);
        }
    }
    let sum: Vec<f32> = comm.all_reduce_sum(Buf::F32(buf)).into_vec();
    if sum.len() != n {
        return Err(config("ranks", format!("the average returned {} values for {n}", sum.len())));
    }
    let k = comm.size() as f32;
    let mut src = sum.chunks_exact(d);
    for (m, rows) in [(input, in_rows), (output, out_rows)] {
        for &r in rows {
            for (x, s) in m[r as usize * d..][..d].iter_mut().zip(src.next().expect("length checked")) {
                *x = s / k;
            }
        }
    }
    Ok(n)
}

// ------------------------------------------------------------------------------ coordinator

struct CoordState<'a> {
    stats: CommStats,
    /// Rows this rank touched since the last average.
    in_bits: Vec<u64>,
    out_bits: Vec<u64>,
    /// Averages made.
    done: u64,
    observer: Option<Observer<'a>>,
}

/// A rank's side of the averaging: runs on the thread that called [`train_word2vec`] (the only
/// one that talks to `comm`) while the workers train.
pub(crate) struct Coordinator<'a> {
    comm: &'a dyn Collective,
    pub(crate) rank: usize,
    /// The sentences this rank trains on.
    pub(crate) shard: Range<usize>,
    pub(crate) gate: Gate,
    sync_words: u64,
    /// Averages before the final one.
    planned: u64,
    state: RefCell<CoordState<'a>>,
}

impl RankSide for Coordinator<'_> {
    fn rank(&self) -> usize {
        self.rank
    }
    fn shard(&self) -> Range<usize> {
        self.shard.clone()
    }
    fn gate(&self) -> &Gate {
        &self.gate
    }
    unsafe fn run(&self, marks: &[RowMarks], input: *mut f32, in_len: usize, output: *mut f32, out_len: usize, d: usize) -> Result<(), WordsError> {
        let mut state = self.state.borrow_mut();
        let st = &mut *state;
        let mut g = self.gate.lock();
        loop {
            if self.gate.request.load(Relaxed) && g.active > 0 && g.parked == g.active {
                let r = self.average(st, marks, input, in_len, output, out_len, d);
                if let Err(e) = r {
                    self.gate.failed.store(true, Relaxed);
                    self.gate.release(&mut g);
                    return Err(e);
                }
                let next = if st.done < self.planned { (st.done + 1).saturating_mul(self.sync_words) } else { u64::MAX };
                self.gate.next.store(next, Relaxed);
                self.gate.release(&mut g);
                continue;
            }
            if g.active == 0 {
                break;
            }
            g = self.gate.coordinator.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        drop(g);
        // Averages this rank reached only by finishing, then the final one.
        while st.done <= self.planned {
            self.average(st, marks, input, in_len, output, out_len, d)?;
        }
        Ok(())
    }
}

impl Coordinator<'_> {
    /// One average (the workers are stopped).
    #[allow(clippy::too_many_arguments)]
    unsafe fn average(&self, st: &mut CoordState, marks: &[RowMarks], input: *mut f32, in_len: usize, output: *mut f32, out_len: usize, d: usize) -> Result<(), WordsError> {
        let t0 = Instant::now();
        let (input, output) = (std::slice::from_raw_parts_mut(input, in_len), std::slice::from_raw_parts_mut(output, out_len));
        if let Some(o) = st.observer.as_mut() {
            o(Phase::Before, input, output);
        }
        for m in marks {
            m.drain_into(&mut st.in_bits, &mut st.out_bits);
        }
        let local = self.gate.counted.load(Relaxed);
        let mut msg = local.to_le_bytes().to_vec();
        encode_set(&mut msg, &st.in_bits);
        encode_set(&mut msg, &st.out_bits);
        let all = self.comm.all_gather_bytes(&msg);
        let (in_rows, out_rows) = (in_len / d, out_len / d);
        let mut union_in = vec![0u64; st.in_bits.len()];
        let mut union_out = vec![0u64; st.out_bits.len()];
        let mut global = 0u64;
        for (r, m) in all.iter().enumerate() {
            let bad = |e: String| config("ranks", format!("rank {r}'s touched rows: {e}"));
            let words = m.get(..8).ok_or_else(|| bad("message shorter than 8 bytes".into()))?;
            global = global.saturating_add(u64::from_le_bytes(words.try_into().unwrap()));
            let mut at = 8;
            decode_set(m, &mut at, &mut union_in, in_rows).map_err(bad)?;
            decode_set(m, &mut at, &mut union_out, out_rows).map_err(bad)?;
        }
        let (ids_in, ids_out) = (ones(&union_in), ones(&union_out));
        let floats = average_rows(self.comm, input, &ids_in, output, &ids_out, d)?;
        st.in_bits.fill(0);
        st.out_bits.fill(0);
        self.gate.synced_global.store(global, Relaxed);
        self.gate.synced_local.store(local, Relaxed);
        st.done += 1;
        let s = &mut st.stats;
        s.syncs += 1;
        s.rows_exchanged += (ids_in.len() + ids_out.len()) as u64;
        s.bytes_sent += (msg.len() + 4 * floats) as u64;
        if let Some(o) = st.observer.as_mut() {
            o(Phase::After, input, output);
        }
        s.seconds_blocked += t0.elapsed().as_secs_f64();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use crate::vocab::Text;
    use crate::word2vec::{train_corpus, Architecture, Objective};
    use chi_nn::dist::{Solo, ThreadGroup};

    const NS: Objective = Objective::NegativeSampling { negative: 5, power: 0.75 };

    fn small_text() -> Text {
        Text::from_str(include_str!("../data/small_corpus.txt"), true)
    }

    /// The planted corpus of [`crate::eval::planted_corpus`] as a [`Text`].
    fn planted_text(seed: u64) -> (Text, Vec<Vec<String>>) {
        let (s, groups) = crate::eval::planted_corpus(seed, 1500);
        (Text::from_str(&s, false), groups)
    }

    fn encoded(text: &Text, min_count: u64) -> (Vocab, Corpus) {
        let vocab = Vocab::build(text, min_count).unwrap();
        let corpus = Corpus::encode(text, &vocab);
        (vocab, corpus)
    }

    fn cfg(arch: Architecture, objective: Objective) -> Word2VecConfig {
        Word2VecConfig { arch, objective, dim: 16, window: 3, min_count: 2, epochs: 3, seed: 42, compute_loss: true, ..Default::default() }
    }

    fn same_bits(a: &[f32], b: &[f32]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    }

    /// What one rank saw: matrices after each average and, per average, the largest difference
    /// between the union-row average and the full average (`None` where they were bitwise equal).
    struct RankRun {
        model: Word2Vec,
        stats: TrainStats,
        comm: CommStats,
        after: Vec<(Vec<f32>, Vec<f32>)>,
        full_diff: Vec<Option<f32>>,
    }

    /// Trains on `k` ranks in threads; each rank also computes the full-matrix average of its
    /// matrices before every average through a second group, to compare with the union-row one.
    fn run_ranks(k: usize, text: &Text, cfg: &Word2VecConfig, sync: &SyncConfig) -> Vec<RankRun> {
        let groups = ThreadGroup::new(k);
        let checks = ThreadGroup::new(k);
        std::thread::scope(|s| {
            let handles: Vec<_> = groups
                .into_iter()
                .zip(checks)
                .map(|(comm, check)| {
                    s.spawn(move || {
                        let (vocab, corpus) = encoded(text, cfg.min_count);
                        let after = RefCell::new(Vec::new());
                        let full_diff = RefCell::new(Vec::new());
                        let expected: RefCell<Option<(Vec<f32>, Vec<f32>)>> = RefCell::new(None);
                        let observer: Observer = Box::new(|phase, input: &[f32], output: &[f32]| match phase {
                            Phase::Before => {
                                let kf = check.size() as f32;
                                let full = |m: &[f32]| -> Vec<f32> { check.all_reduce_sum(Buf::F32(m.to_vec())).into_vec::<f32>().into_iter().map(|x| x / kf).collect() };
                                *expected.borrow_mut() = Some((full(input), full(output)));
                            }
                            Phase::After => {
                                let (ei, eo) = expected.borrow_mut().take().expect("Before precedes After");
                                let diff = ei.iter().zip(input).chain(eo.iter().zip(output)).filter(|(a, b)| a.to_bits() != b.to_bits()).map(|(a, b)| (a - b).abs() / a.abs().max(f32::MIN_POSITIVE)).fold(None, |m: Option<f32>, d| Some(m.map_or(d, |m| m.max(d))));
                                full_diff.borrow_mut().push(diff);
                                after.borrow_mut().push((input.to_vec(), output.to_vec()));
                            }
                        });
                        let (model, stats, comm_stats) = train_observed(&comm, vocab, &corpus, cfg, sync, None, Some(observer)).unwrap();
                        RankRun { model, stats, comm: comm_stats, after: after.into_inner(), full_diff: full_diff.into_inner() }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    #[test]
    fn one_rank_is_plain_training_bit_for_bit() {
        let text = small_text();
        for arch in [Architecture::SkipGram, Architecture::Cbow] {
            for obj in [NS, Objective::HierarchicalSoftmax] {
                let cfg = cfg(arch, obj);
                let (vocab, corpus) = encoded(&text, cfg.min_count);
                let (plain, ps) = train_corpus(vocab.clone(), &corpus, &cfg, None).unwrap();
                // A short period, so that many (identity) averages interleave with training.
                let (solo, ss, cs) = train_word2vec(&Solo, vocab, &corpus, &cfg, &SyncConfig { sync_words: 97 }, None).unwrap();
                assert!(same_bits(&plain.input, &solo.input), "{arch:?} {obj:?}: input vectors differ");
                assert!(same_bits(&plain.output, &solo.output), "{arch:?} {obj:?}: output vectors differ");
                assert_eq!((ps.words, ps.effective_words, ps.updates), (ss.words, ss.effective_words, ss.updates));
                assert_eq!(ps.mean_loss.to_bits(), ss.mean_loss.to_bits());
                let words = corpus.ids.len() as u64 * cfg.epochs as u64;
                assert_eq!(cs.syncs, (words - 1) / 97 + 1, "every period and the final average");
                assert!(cs.rows_exchanged > 0 && cs.rows_exchanged <= cs.rows_per_full_sync * cs.syncs);
            }
        }
    }

    #[test]
    fn ranks_agree_bitwise_after_every_average_and_it_is_the_full_average() {
        let text = small_text();
        for (k, threads, arch, obj) in [
            (2, 1, Architecture::SkipGram, NS),
            (2, 2, Architecture::Cbow, Objective::HierarchicalSoftmax),
            (3, 1, Architecture::Cbow, NS),
            (3, 2, Architecture::SkipGram, Objective::HierarchicalSoftmax),
        ] {
            let what = format!("K={k}, {threads} thread(s), {arch:?} {obj:?}");
            let cfg = Word2VecConfig { threads, ..cfg(arch, obj) };
            let runs = run_ranks(k, &text, &cfg, &SyncConfig { sync_words: 300 });
            let n = runs[0].after.len();
            assert!(n >= 3, "{what}: only {n} averages");
            for (r, run) in runs.iter().enumerate() {
                assert_eq!(run.after.len(), n, "{what}: rank {r} made another number of averages");
                assert_eq!(run.comm.syncs as usize, n);
                assert_eq!(run.comm.ranks, k);
                assert!(run.comm.bytes_sent > 0 && run.comm.seconds_blocked >= 0.0);
                assert!(run.comm.rows_exchanged > 0 && run.comm.row_share() <= 1.0, "{what}: {:?}", run.comm);
                for (i, ((a_in, a_out), (b_in, b_out))) in runs[0].after.iter().zip(&run.after).enumerate() {
                    assert!(same_bits(a_in, b_in) && same_bits(a_out, b_out), "{what}: rank {r} differs from rank 0 after average {i}");
                }
                assert!(same_bits(&run.model.input, &runs[0].model.input) && same_bits(&run.model.output, &runs[0].model.output));
                assert!(run.model.input.iter().all(|x| x.is_finite()));
                for (i, d) in run.full_diff.iter().enumerate() {
                    match (k, d) {
                        (_, None) => {}
                        // (x + x + x) / 3 need not round back to x: the full average moves
                        // untouched rows by up to a rounding; the union average leaves them.
                        (3, Some(d)) => assert!(*d <= f32::EPSILON, "{what}: average {i} is {d:e} from the full average"),
                        (_, Some(d)) => panic!("{what}: average {i} differs from the full average by {d:e}"),
                    }
                }
            }
            // The shards partition the corpus.
            let words: u64 = runs.iter().map(|r| r.stats.words).sum();
            let (_, corpus) = encoded(&text, cfg.min_count);
            assert_eq!(words, corpus.ids.len() as u64 * cfg.epochs as u64, "{what}");
        }
    }

    #[test]
    fn shorter_periods_exchange_a_smaller_share_of_the_model() {
        let text = small_text();
        let cfg = Word2VecConfig { dim: 8, min_count: 1, epochs: 1, ..cfg(Architecture::SkipGram, NS) };
        let share = |n| run_ranks(2, &text, &cfg, &SyncConfig { sync_words: n }).remove(0).comm.row_share();
        let (short, long) = (share(20), share(400));
        assert!(0.0 < short && short < 0.5 && short < long && long <= 1.0, "row share: {short} every 20 words, {long} every 400");
    }

    #[test]
    fn two_and_three_ranks_learn_planted_groups() {
        let (text, groups) = planted_text(5);
        for k in [2, 3] {
            let cfg = Word2VecConfig { dim: 20, window: 3, min_count: 1, epochs: 5, sample: 0.0, ..cfg(Architecture::SkipGram, NS) };
            let runs = run_ranks(k, &text, &cfg, &SyncConfig { sync_words: 5_000 });
            let v = runs[0].model.vectors();
            let (same, diff) = crate::eval::group_separation(&groups, |a, b| v.similarity(a, b).unwrap());
            assert!(same > diff + 0.3, "K={k}: same-group {same:.3}, cross-group {diff:.3}");
        }
    }

    #[test]
    fn the_schedule_follows_the_progress_of_all_ranks() {
        let (text, _) = planted_text(3);
        let cfg = Word2VecConfig { dim: 8, min_count: 1, epochs: 4, sample: 0.0, ..cfg(Architecture::SkipGram, NS) };
        let (vocab, corpus) = encoded(&text, 1);
        let total = corpus.ids.len() as u64 * cfg.epochs as u64;
        let groups = ThreadGroup::new(2);
        let last: Vec<(u64, f64)> = std::thread::scope(|s| {
            let hs: Vec<_> = groups
                .into_iter()
                .map(|comm| {
                    let (vocab, corpus, cfg) = (vocab.clone(), &corpus, &cfg);
                    s.spawn(move || {
                        let seen = Mutex::new((0u64, f64::NAN));
                        let p = |p: &Progress| *seen.lock().unwrap() = (p.words_done, p.alpha);
                        train_word2vec(&comm, vocab, corpus, cfg, &SyncConfig { sync_words: 2_000 }, Some(&p)).unwrap();
                        seen.into_inner().unwrap()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (r, (done, alpha)) in last.into_iter().enumerate() {
            // Each rank trains half the words; its last report (at 20,000 of its 24,000 words)
            // counts both ranks' words, and the rate is the one-process rate at that progress.
            assert!(done > total * 3 / 4 && done <= total, "rank {r}: last estimate {done} of {total}");
            let expect = (cfg.start_alpha() - (cfg.start_alpha() - cfg.min_alpha) * done as f64 / (total + 1) as f64) as f32;
            assert_eq!(alpha as f32, expect, "rank {r}");
        }
    }

    #[test]
    fn bad_settings_are_clear_errors() {
        let text = small_text();
        let (vocab, corpus) = encoded(&text, 2);
        let c = cfg(Architecture::SkipGram, NS);
        let e = train_word2vec(&Solo, vocab.clone(), &corpus, &c, &SyncConfig { sync_words: 0 }, None).unwrap_err();
        assert!(matches!(e, WordsError::Config { name: "sync_words", .. }), "{e}");
        let e = train_word2vec(&Solo, vocab, &corpus, &Word2VecConfig { dim: 0, ..c.clone() }, &SyncConfig::default(), None).unwrap_err();
        assert!(matches!(e, WordsError::Config { name: "dim", .. }), "{e}");
        // Ranks given different configurations all fail, naming the disagreement.
        let groups = ThreadGroup::new(2);
        let errs: Vec<String> = std::thread::scope(|s| {
            let hs: Vec<_> = groups
                .into_iter()
                .map(|comm| {
                    let (text, c) = (&text, &c);
                    s.spawn(move || {
                        let (vocab, corpus) = encoded(text, 2);
                        let mine = Word2VecConfig { seed: 42 + comm.rank() as u64, ..c.clone() };
                        train_word2vec(&comm, vocab, &corpus, &mine, &SyncConfig::default(), None).unwrap_err().to_string()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for e in errs {
            assert!(e.contains("another corpus, vocabulary or configuration"), "{e}");
        }
    }

    #[test]
    fn row_sets_round_trip_in_both_encodings_and_bad_ones_are_rejected() {
        let rows = 200;
        for ids in [vec![], vec![0u32, 5, 63, 64, 199], (0..200).step_by(2).collect::<Vec<u32>>()] {
            let mut bits = vec![0u64; words_for(rows)];
            for &i in &ids {
                bits[i as usize >> 6] |= 1 << (i & 63);
            }
            let mut msg = Vec::new();
            encode_set(&mut msg, &bits);
            // 200 rows are a bitset of 32 bytes; fewer than 7 ids are shorter as a list.
            assert_eq!(msg[0], if ids.len() < 7 { 1 } else { 0 }, "{} ids", ids.len());
            let mut union = vec![0u64; bits.len()];
            let mut at = 0;
            decode_set(&msg, &mut at, &mut union, rows).unwrap();
            assert_eq!(at, msg.len());
            assert_eq!(ones(&union), ids);
        }
        let mut union = vec![0u64; words_for(rows)];
        assert!(decode_set(&[1, 1, 0, 0, 0, 200, 0, 0, 0], &mut 0, &mut union, rows).unwrap_err().contains("beyond"));
        assert!(decode_set(&[1, 2, 0, 0, 0, 1, 0, 0, 0], &mut 0, &mut union, rows).unwrap_err().contains("ends early"));
        assert!(decode_set(&[7], &mut 0, &mut union, rows).unwrap_err().contains("tag"));
        let mut past = vec![0u8];
        for w in [0u64, 0, 0, 1 << 10] {
            past.extend_from_slice(&w.to_le_bytes());
        }
        assert!(decode_set(&past, &mut 0, &mut union, rows).unwrap_err().contains("beyond"));
    }
}
