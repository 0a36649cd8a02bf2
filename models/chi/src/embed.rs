//! `chi embed`: train word vectors (word2vec or GloVe) on a text corpus, evaluate them on
//! WordSim353 / SimLex-999 / the Google analogies, list nearest neighbours, and write the named
//! corpora (Brown, State of the Union, Shakespeare) as tokenised sentences.

use chi_words::WordsError;
use chi_words::dist::SyncConfig;
use chi_words::eval;
use chi_words::glove::{self, GloveConfig};
use chi_words::io::{load_word2vec_text, save_word2vec_text};
use chi_words::vocab::{Corpus, Text, Vocab};
use chi_words::word2vec::{self, Architecture, Objective, Word2VecConfig};
use clap::{Args, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};

/// Largest accepted vector dimension: beyond it a vocabulary of any size would not fit.
pub const MAX_DIM: usize = 4096;
/// Largest accepted window half-width.
pub const MAX_WINDOW: usize = 1000;
/// Largest accepted number of epochs.
pub const MAX_EPOCHS: usize = 10_000;
/// Noise words per example when `--negative` is not given (word2vec's and gensim's default).
const DEFAULT_NEGATIVE: usize = 5;
/// Largest accepted number of negative samples.
pub const MAX_NEGATIVE: usize = 1000;
/// Largest accepted `-k` for neighbours.
pub const MAX_K: usize = 100_000;
/// Smallest accepted `--sync-words`: shorter periods spend most of the time exchanging rows.
pub const MIN_SYNC_WORDS: u64 = 1_000;
/// Smallest accepted `--sync-entries`: every GloVe exchange sends the whole model and its
/// accumulators, which shorter periods would spend most of the time on.
pub const MIN_SYNC_ENTRIES: u64 = 10_000;
/// Largest accepted `--sync-words` and `--sync-entries` (on any real corpus: average only at the end).
pub const MAX_SYNC_WORDS: u64 = 1_000_000_000_000_000;

/// `chi embed ...`
#[derive(Args, Debug)]
pub struct EmbedArgs {
    /// What to do.
    #[command(subcommand)]
    pub which: EmbedWhich,
}

/// The `chi embed` subcommands.
#[derive(Subcommand, Debug)]
pub enum EmbedWhich {
    /// Train word vectors and write them in the word2vec text format.
    Train(TrainArgs),
    /// Score vectors on WordSim353, SimLex-999 and the Google analogies.
    Eval(EvalArgs),
    /// The nearest neighbours of a word by cosine similarity.
    Neighbours(NeighboursArgs),
    /// Write named corpora as tokenised sentences, one per line (lower-cased words separated by
    /// spaces; the input of gensim's LineSentence and of `embed train --corpus FILE`).
    Corpus(CorpusArgs),
}

/// The corpora `--corpus` accepts by name (joined with `+`, e.g. `brown+sotu+shakespeare`).
pub const NAMED_CORPORA: [&str; 3] = ["brown", "sotu", "shakespeare"];

/// `chi embed corpus`
#[derive(Args, Debug)]
pub struct CorpusArgs {
    /// Named corpora joined with `+` (brown, sotu, shakespeare).
    #[arg(long, default_value = "brown+sotu+shakespeare")]
    pub corpus: String,
    /// Data directory holding them (default: $CHI_DATA, else ./data).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// The text file to write.
    #[arg(long)]
    pub out: PathBuf,
}

/// Which model `chi embed train` fits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Model {
    /// Skip-gram with negative sampling.
    Sgns,
    /// CBOW with negative sampling.
    Cbow,
    /// Skip-gram with hierarchical softmax.
    SgHs,
    /// CBOW with hierarchical softmax.
    CbowHs,
    /// GloVe.
    Glove,
}

/// `chi embed train`
#[derive(Args, Debug)]
pub struct TrainArgs {
    /// The model.
    #[arg(long, value_enum, default_value = "sgns")]
    pub model: Model,
    /// A text file or a folder of text files (one sentence per line, whitespace-separated
    /// tokens), or named corpora under `--data` joined with `+` (brown, sotu, shakespeare, e.g.
    /// `brown+sotu+shakespeare`), read and tokenised by chi-text's corpus readers.
    #[arg(long)]
    pub corpus: String,
    /// Vector dimension.
    #[arg(long, default_value_t = 100)]
    pub dim: usize,
    /// Context window half-width.
    #[arg(long, default_value_t = 5)]
    pub window: usize,
    /// Noise words per example of the negative-sampling models, sgns and cbow (default 5).
    #[arg(long)]
    pub negative: Option<usize>,
    /// Words rarer than this are dropped.
    #[arg(long, default_value_t = 5)]
    pub min_count: u64,
    /// Passes over the corpus (default 5 for word2vec, 15 for GloVe).
    #[arg(long)]
    pub epochs: Option<usize>,
    /// Initial learning rate of word2vec (default gensim's: 0.025 skip-gram, 0.05 CBOW); it
    /// decays linearly to 0.0001. Under `mpirun -n K`, averaging weighs each update 1/K: K × the
    /// default restored one process's scores for K = 2 (BENCHMARKS.md, "Word vectors across ranks").
    #[arg(long)]
    pub alpha: Option<f64>,
    /// GloVe's weighting cut-off x_max in f(x) = min(1, (x/x_max)^0.75) (default 100, the
    /// paper's; on a few million tokens 10 scored higher on WordSim353, see the README).
    #[arg(long = "x-max")]
    pub x_max: Option<f64>,
    /// Keep the corpus's case (default: lower-case it).
    #[arg(long)]
    pub keep_case: bool,
    /// Data directory holding the named corpora (default: $CHI_DATA, else ./data).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Where to write the vectors (word2vec text format).
    #[arg(long = "vectors-out")]
    pub vectors_out: PathBuf,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Under `mpirun -n K` (word2vec models): corpus words each process trains between two
    /// averages of the rows the processes touched (default 100,000; 10^15 averages only at the end).
    #[arg(long)]
    pub sync_words: Option<u64>,
    /// Under `mpirun -n K` (GloVe): co-occurrence entries each process trains between two
    /// exchanges, in which the processes add up their changes (default 1,000,000; 10^15:
    /// once per epoch).
    #[arg(long)]
    pub sync_entries: Option<u64>,
}

/// `chi embed eval`
#[derive(Args, Debug)]
pub struct EvalArgs {
    /// Vectors in the word2vec text format.
    pub vectors: PathBuf,
    /// Folder holding gensim's test data (wordsim353.tsv, simlex999.txt, questions-words.txt).
    #[arg(long, default_value = "data/gensim")]
    pub testdata: PathBuf,
    /// Analogies: search only the most frequent N words (0: all), as gensim's restrict_vocab.
    #[arg(long, default_value_t = 30_000)]
    pub restrict: usize,
}

/// `chi embed neighbours`
#[derive(Args, Debug)]
pub struct NeighboursArgs {
    /// Vectors in the word2vec text format.
    pub vectors: PathBuf,
    /// The query word.
    pub word: String,
    /// How many neighbours.
    #[arg(short, long, default_value_t = 10)]
    pub k: usize,
}

/// Runs a `chi embed` subcommand.
/// `threads` is the global `--threads` (training threads, Hogwild; default 1, which is bit-reproducible).
pub fn run(args: &EmbedArgs, seed: u64, threads: Option<usize>) -> Result<(), String> {
    match &args.which {
        EmbedWhich::Train(a) => train(a, seed, threads.unwrap_or(1)),
        EmbedWhich::Eval(a) => evaluate(a),
        EmbedWhich::Neighbours(a) => neighbours(a),
        EmbedWhich::Corpus(a) => write_corpus(a),
    }
}

/// The corpora named in `spec` (`brown+sotu`…), or `None` when `spec` is not such a name.
fn corpus_names(spec: &str) -> Option<Vec<&str>> {
    let names: Vec<&str> = spec.split('+').collect();
    names.iter().all(|n| NAMED_CORPORA.contains(n)).then_some(names)
}

/// Tokenised sentences of named corpora under `data`, in the order named (see
/// `chi_text::corpora`: Brown without tags, SOTU and Shakespeare split into sentences).
pub fn named_sentences(names: &[&str], data: &Path) -> Result<Vec<Vec<String>>, String> {
    let mut out = Vec::new();
    for &n in names {
        let dir = data.join(n);
        if !dir.is_dir() {
            return Err(format!("corpus {n:?}: {} does not exist; run scripts/fetch-data.sh --only {n}", dir.display()));
        }
        let part = match n {
            "brown" => chi_text::corpora::brown_sentences(&dir),
            "sotu" => chi_text::corpora::load_sotu(&dir).map(|d| chi_text::corpora::document_sentences(&d)),
            _ => chi_text::corpora::load_shakespeare(&dir).map(|d| chi_text::corpora::document_sentences(&d)),
        };
        out.extend(part.map_err(|e| format!("corpus {n:?}: {e}"))?);
    }
    Ok(out)
}

fn data_dir(d: &Option<PathBuf>) -> PathBuf {
    d.clone().unwrap_or_else(chi_nn::data::data_dir)
}

fn write_corpus(a: &CorpusArgs) -> Result<(), String> {
    let names = corpus_names(&a.corpus).ok_or_else(|| format!("--corpus {:?}: expected named corpora joined with '+' ({})", a.corpus, NAMED_CORPORA.join(", ")))?;
    crate::train::rundir::check_text_output("--out", &a.out)?;
    let sentences = named_sentences(&names, &data_dir(&a.data))?;
    let mut text = String::new();
    for s in &sentences {
        text.push_str(&s.join(" "));
        text.push('\n');
    }
    chi_nn::checkpoint::atomic_write(&a.out, text.as_bytes()).map_err(String::from)?;
    println!("wrote {} sentences, {} tokens to {}", sentences.len(), sentences.iter().map(Vec::len).sum::<usize>(), a.out.display());
    Ok(())
}

/// Reads `--corpus`: an existing path as plain text, else named corpora under the data
/// directory through chi-text's readers (always lower-cased).
fn read_corpus(name: &str, data: &Path, lowercase: bool) -> Result<(Text, String), String> {
    let p = PathBuf::from(name);
    if p.exists() {
        let text = Text::read(&p, lowercase).map_err(|e| match e {
            // These name their file (perhaps one inside the folder) already.
            WordsError::Io { .. } | WordsError::Format { .. } => format!("corpus: {e}"),
            _ => format!("corpus {}: {e}", p.display()),
        })?;
        return Ok((text, p.display().to_string()));
    }
    if let Some(names) = corpus_names(name) {
        let sentences = named_sentences(&names, data)?;
        let mut lines = String::new();
        for s in &sentences {
            lines.push_str(&s.join(" "));
            lines.push('\n');
        }
        return Ok((Text::from_str(&lines, false), name.to_string()));
    }
    Err(format!("corpus {name:?}: no such file or folder (named corpora: {}, joined with '+')", NAMED_CORPORA.join(", ")))
}

fn check_range(name: &str, v: usize, lo: usize, hi: usize) -> Result<(), String> {
    if v < lo || v > hi {
        return Err(format!("--{name} {v} is out of range: {lo} to {hi}"));
    }
    Ok(())
}

fn train(a: &TrainArgs, seed: u64, workers: usize) -> Result<(), String> {
    check_range("dim", a.dim, 1, MAX_DIM)?;
    check_range("window", a.window, 1, MAX_WINDOW)?;
    if let Some(n) = a.negative {
        if !matches!(a.model, Model::Sgns | Model::Cbow) {
            return Err(format!("--negative sets the noise words of negative sampling (sgns, cbow); {} has none", a.model.to_possible_value().map_or_else(String::new, |v| v.get_name().to_string())));
        }
        check_range("negative", n, 1, MAX_NEGATIVE)?;
    }
    let negative = a.negative.unwrap_or(DEFAULT_NEGATIVE);
    check_range("threads", workers, 1, 8 * std::thread::available_parallelism().map_or(1, |c| c.get()))?;
    if let Some(e) = a.epochs {
        check_range("epochs", e, 1, MAX_EPOCHS)?;
    }
    check_writable(&a.vectors_out)?;
    let corpus = std::path::Path::new(&a.corpus);
    if crate::train::rundir::lies_within(&a.vectors_out, corpus) {
        return Err(format!("--vectors-out {} is the corpus or inside the corpus folder; write the vectors elsewhere", a.vectors_out.display()));
    }
    // Under mpirun every process trains a shard; rank 0 alone reports and writes.
    let world = crate::dist::world();
    let lead = world.as_ref().is_none_or(|w| w.rank() == 0);
    let sync = SyncConfig { sync_words: a.sync_words.unwrap_or(chi_words::dist::DEFAULT_SYNC_WORDS) };
    if let Some(n) = a.sync_words {
        if world.is_none() {
            return Err("--sync-words applies to several processes (mpirun -n K chi-mpi embed train …); this is one".into());
        }
        if !(MIN_SYNC_WORDS..=MAX_SYNC_WORDS).contains(&n) {
            return Err(format!("--sync-words {n} is out of range: {MIN_SYNC_WORDS} to {MAX_SYNC_WORDS}"));
        }
    }
    if let Some(al) = a.alpha {
        if a.model == Model::Glove {
            return Err("--alpha sets word2vec's learning rate; GloVe's is not a flag".into());
        }
        if !(al.is_finite() && (1e-4..=1.0).contains(&al)) {
            return Err(format!("--alpha {al} is out of range: 0.0001 to 1"));
        }
    }
    if let Some(x) = a.x_max {
        if a.model != Model::Glove {
            return Err("--x-max sets GloVe's weighting cut-off; word2vec has none".into());
        }
        if !(x.is_finite() && (1e-3..=1e9).contains(&x)) {
            return Err(format!("--x-max {x} is out of range: 0.001 to 10^9"));
        }
    }
    if a.sync_words.is_some() && a.model == Model::Glove {
        return Err("--sync-words sets word2vec's averaging period; GloVe's is --sync-entries".into());
    }
    if let Some(n) = a.sync_entries {
        if a.model != Model::Glove {
            return Err("--sync-entries sets GloVe's exchange period; word2vec's is --sync-words".into());
        }
        if world.is_none() {
            return Err("--sync-entries applies to several processes (mpirun -n K chi-mpi embed train --model glove …); this is one".into());
        }
        if !(MIN_SYNC_ENTRIES..=MAX_SYNC_WORDS).contains(&n) {
            return Err(format!("--sync-entries {n} is out of range: {MIN_SYNC_ENTRIES} to {MAX_SYNC_WORDS}"));
        }
    }
    let (text, path) = read_corpus(&a.corpus, &data_dir(&a.data), !a.keep_case)?;
    let vocab = Vocab::build(&text, a.min_count).map_err(|e| format!("corpus {path}: {e}"))?;
    let limit = chi_nn::limits::max_tensor_elements();
    if vocab.len().saturating_mul(a.dim) > limit {
        return Err(format!("{} words × dim {} exceeds the limit of {limit} elements per matrix", vocab.len(), a.dim));
    }
    if lead {
        eprintln!("corpus {path}: {} tokens, {} sentences, {} words with count ≥ {}", text.tokens.len(), text.sentences(), vocab.len(), a.min_count);
    }
    let vectors = if a.model == Model::Glove {
        let cfg = GloveConfig { dim: a.dim, min_count: a.min_count, epochs: a.epochs.unwrap_or(15), threads: workers, seed, ..Default::default() };
        let mut cfg = cfg;
        cfg.cooc.window = a.window;
        cfg.x_max = a.x_max.unwrap_or(cfg.x_max);
        let (model, stats) = match &world {
            None => glove::train_glove(&text, &cfg).map_err(|e| e.to_string())?,
            Some(w) => {
                let (model, stats, comm) = glove::train_glove_on(w.as_ref(), &text, &cfg, a.sync_entries.unwrap_or(glove::DEFAULT_SYNC_ENTRIES)).map_err(|e| e.to_string())?;
                if lead {
                    eprintln!(
                        "{} ranks, each on 1/{} of the entries, changes added up {} time{} ({:.1} MB sent by rank 0, {:.2} s of rank 0's training in exchanges)",
                        comm.ranks,
                        comm.ranks,
                        comm.exchanges,
                        if comm.exchanges == 1 { "" } else { "s" },
                        comm.bytes_sent as f64 / 1e6,
                        comm.seconds
                    );
                }
                (model, stats)
            }
        };
        if !lead {
            return Ok(());
        }
        eprintln!(
            "glove: {} co-occurrence entries, counted in {:.2} s, trained in {:.2} s ({:.0} entries/s), final loss {:.4}",
            stats.entries,
            stats.count_seconds,
            stats.train_seconds,
            stats.entries_per_sec,
            stats.epoch_loss.last().copied().unwrap_or(f64::NAN)
        );
        model.vectors()
    } else {
        let (arch, objective) = match a.model {
            Model::Sgns => (Architecture::SkipGram, Objective::NegativeSampling { negative, power: 0.75 }),
            Model::Cbow => (Architecture::Cbow, Objective::NegativeSampling { negative, power: 0.75 }),
            Model::SgHs => (Architecture::SkipGram, Objective::HierarchicalSoftmax),
            _ => (Architecture::Cbow, Objective::HierarchicalSoftmax),
        };
        let cfg = Word2VecConfig {
            arch,
            objective,
            dim: a.dim,
            window: a.window,
            min_count: a.min_count,
            epochs: a.epochs.unwrap_or(5),
            alpha: a.alpha,
            threads: workers,
            seed,
            compute_loss: true,
            ..Default::default()
        };
        cfg.validate().map_err(|e| e.to_string())?;
        let corpus = Corpus::encode(&text, &vocab);
        let total = (corpus.ids.len() as u64).saturating_mul(cfg.epochs as u64);
        let bar = if a.quiet || !lead { indicatif::ProgressBar::hidden() } else { indicatif::ProgressBar::new(total) };
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} words  {msg}  ETA {eta}").unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        let report = |p: &word2vec::Progress| {
            bar.set_position(p.words_done);
            let rate = if p.seconds > 0.0 { p.words_done as f64 / p.seconds } else { 0.0 };
            bar.set_message(format!("{:.0} words/s  loss {:.4}  lr {:.5}", rate, p.loss, p.alpha));
        };
        let (model, stats) = match &world {
            None => word2vec::train_corpus(vocab, &corpus, &cfg, Some(&report)).map_err(|e| e.to_string())?,
            Some(w) => {
                if lead && a.alpha.is_none() && w.size() > 1 {
                    eprintln!(
                        "note: averaging {k} ranks weighs each update 1/{k}; `--alpha {:.4}` ({k} × the default) restored one process's scores for 2 ranks",
                        w.size() as f64 * cfg.start_alpha(),
                        k = w.size()
                    );
                }
                let (model, stats, comm) = chi_words::dist::train_word2vec(w.as_ref(), vocab, &corpus, &cfg, &sync, Some(&report)).map_err(|e| e.to_string())?;
                if lead {
                    eprintln!(
                        "{} ranks, averaging every {} words: {} average{}, {} rows exchanged ({:.1} % of averaging whole matrices), {:.1} MB sent by rank 0, \
                         {:.2} s ({:.1} %) of rank 0's training blocked in averages",
                        comm.ranks,
                        sync.sync_words,
                        comm.syncs,
                        if comm.syncs == 1 { "" } else { "s" },
                        comm.rows_exchanged,
                        100.0 * comm.row_share(),
                        comm.bytes_sent as f64 / 1e6,
                        comm.seconds_blocked,
                        100.0 * comm.seconds_blocked / stats.seconds.max(1e-9)
                    );
                }
                (model, stats)
            }
        };
        bar.finish_and_clear();
        if stats.updates == 0 {
            // Nothing was trained (the vectors are their random start, the mean loss 0/0):
            // refuse rather than write them as if they were learned.
            return Err(format!(
                "no training pairs: of {} corpus words ({} epochs), subsampling frequent words (threshold {}) kept {}, too few to pair within a window of {}; \
                 word vectors need a larger corpus",
                stats.words, cfg.epochs, cfg.sample, stats.effective_words, cfg.window
            ));
        }
        if lead {
            let whose = if world.is_some() { " (rank 0's shard)" } else { "" };
            eprintln!("{:?}: {} words{whose} in {:.2} s ({:.0} words/s), mean loss {:.4}", a.model, stats.words, stats.seconds, stats.words_per_sec, stats.mean_loss);
        }
        model.vectors()
    };
    if !lead {
        return Ok(());
    }
    // A learning rate too large for the corpus (`--alpha 1`) overflows the vectors: refused,
    // as `chi train` refuses a diverged run, rather than written as NaN.
    if let Some(i) = vectors.data().iter().position(|x| !x.is_finite()) {
        let word = &vectors.words()[i / vectors.dim().max(1)];
        return Err(format!(
            "training diverged: the vector of {word:?} holds {} (the loss overflowed); lower --alpha{}",
            vectors.data()[i],
            a.alpha.map_or_else(String::new, |al| format!(" (now {al})"))
        ));
    }
    save_word2vec_text(&vectors, &a.vectors_out).map_err(|e| e.to_string())?;
    println!("wrote {} vectors of dimension {} to {}", vectors.len(), vectors.dim(), a.vectors_out.display());
    Ok(())
}

fn evaluate(a: &EvalArgs) -> Result<(), String> {
    let v = load_word2vec_text(&a.vectors).map_err(|e| e.to_string())?;
    let mut any = false;
    for (name, file) in [("WordSim353", "wordsim353.tsv"), ("SimLex-999", "simlex999.txt")] {
        let p = a.testdata.join(file);
        if !p.exists() {
            println!("{name:<12} (missing {}; run scripts/fetch-data.sh)", p.display());
            continue;
        }
        let pairs = eval::load_word_pairs(&p).map_err(|e| e.to_string())?;
        let s = eval::evaluate_pairs(&v, &pairs, v.len());
        if s.covered < 2 {
            println!("{name:<12} n/a (only {} of {} pairs covered)", s.covered, pairs.len());
        } else if !(s.spearman.is_finite() && s.pearson.is_finite()) {
            // A correlation with a constant is 0/0: the file's scores, or the vectors' cosines.
            println!("{name:<12} n/a (the human scores or the vectors' similarities are the same for all {} covered pairs: no correlation is defined)", s.covered);
        } else {
            println!("{name:<12} Spearman {:.4}  Pearson {:.4}  ({} pairs covered, {} missing)", s.spearman, s.pearson, s.covered, s.missing);
        }
        any = true;
    }
    let p = a.testdata.join("questions-words.txt");
    if p.exists() {
        let q = eval::load_analogies(&p).map_err(|e| e.to_string())?;
        let s = eval::evaluate_analogies(&v, &q, if a.restrict == 0 { v.len() } else { a.restrict });
        println!("{:<12} {:.2} %  ({} of {} covered, {} missing)", "analogies", 100.0 * s.accuracy(), s.correct, s.covered, s.missing);
        any = true;
    } else {
        println!("{:<12} (missing {}; run scripts/fetch-data.sh)", "analogies", p.display());
    }
    if !any {
        return Err(format!("no test data found in {}", a.testdata.display()));
    }
    Ok(())
}

/// Whether `--vectors-out` can be written, checked before training rather than after it: its
/// directory exists and accepts a new file (the vectors are written through a temporary file
/// there), and it is not a directory, a run's file or a binary file
/// ([`crate::train::rundir::check_text_output`]).
fn check_writable(out: &std::path::Path) -> Result<(), String> {
    crate::train::rundir::check_text_output("--vectors-out", out)?;
    let dir = out.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let probe = dir.join(format!(".chi-write-check-{}", std::process::id()));
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(format!("--vectors-out {}: cannot write in {}: {e}", out.display(), dir.display())),
    }
}

fn neighbours(a: &NeighboursArgs) -> Result<(), String> {
    check_range("k", a.k, 1, MAX_K)?;
    let v = load_word2vec_text(&a.vectors).map_err(|e| e.to_string())?;
    let i = v.index_of(&a.word).ok_or_else(|| format!("{:?} is not in the vocabulary of {} ({} words)", a.word, a.vectors.display(), v.len()))?;
    if v.row(i).iter().all(|&x| x == 0.0) {
        // Cosine similarity is undefined for a zero vector: say so rather than print nothing.
        return Err(format!("{:?} has a zero vector in {}: it has no neighbours by cosine similarity", a.word, a.vectors.display()));
    }
    let list = v.normalized().nearest(&a.word, a.k).expect("the word is in the vocabulary");
    if list.is_empty() {
        return Err(format!("{:?} has no neighbours in {}: no other word has a nonzero vector ({} words)", a.word, a.vectors.display(), v.len()));
    }
    for (w, s) in list {
        println!("{s:.4}  {w}");
    }
    Ok(())
}
