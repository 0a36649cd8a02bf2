//! Trains word vectors on a text file and prints one JSON object with timings and scores.
//!
//! ```text
//! cargo run -p chi-words --release --example train -- --corpus brown.txt --model sgns \
//!     [--dim 100] [--window 5] [--min-count 5] [--sample 1e-3] [--epochs 5] [--negative 5] \
//!     [--threads 1] [--seed 1] [--alpha A] [--x-max 100] [--lowercase] [--out vectors.txt] \
//!     [--wordsim wordsim353.tsv] [--simlex simlex999.txt] [--analogies questions-words.txt]
//! ```
//! With `--vectors FILE` instead of `--corpus`, it only scores a word2vec text file.
//! `--model` is one of `sgns`, `cbow`, `sg-hs`, `cbow-hs`, `glove`. Times are wall-clock
//! seconds of the training loop alone (`train_seconds`) and of reading + vocabulary
//! (`prep_seconds`); for GloVe, `count_seconds` is the co-occurrence counting.

use chi_words::eval::{evaluate_analogies, evaluate_pairs, load_analogies, load_word_pairs};
use chi_words::glove::{train_glove, CoocConfig, GloveConfig};
use chi_words::io::save_word2vec_text;
use chi_words::vocab::{Corpus, Text, Vocab};
use chi_words::word2vec::{train_corpus, Architecture, Objective, Word2VecConfig};
use std::path::PathBuf;
use std::time::Instant;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut opt = std::collections::HashMap::<String, String>::new();
    let mut lowercase = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--lowercase" => lowercase = true,
            k if k.starts_with("--") => {
                let v = args.next().ok_or_else(|| format!("{k} needs a value"))?;
                opt.insert(k[2..].to_string(), v);
            }
            _ => return Err(format!("unexpected argument {a:?}").into()),
        }
    }
    let get = |k: &str, d: &str| opt.get(k).cloned().unwrap_or_else(|| d.to_string());
    let num = |k: &str, d: &str| -> Result<f64, Box<dyn std::error::Error>> { get(k, d).parse::<f64>().map_err(|_| format!("--{k}: not a number").into()) };
    if let Some(v) = opt.get("vectors") {
        // Evaluation only: score a word2vec text file.
        let vectors = chi_words::io::load_word2vec_text(v.as_ref())?;
        let mut json = vec![format!("\"vectors\":{}", vectors.len())];
        score(&vectors, &opt, &mut json)?;
        println!("{{{}}}", json.join(","));
        return Ok(());
    }
    let corpus_path = PathBuf::from(opt.get("corpus").ok_or("--corpus PATH (or --vectors PATH) is required")?);
    let model = get("model", "sgns");
    let dim = num("dim", "100")? as usize;
    let window = num("window", if model == "glove" { "10" } else { "5" })? as usize;
    let min_count = num("min-count", "5")? as u64;
    let epochs = num("epochs", if model == "glove" { "15" } else { "5" })? as usize;
    let threads = num("threads", "1")? as usize;
    let seed = num("seed", "1")? as u64;

    let t0 = Instant::now();
    let text = Text::read(&corpus_path, lowercase)?;
    let mut json = vec![format!("\"model\":\"{model}\""), format!("\"threads\":{threads}"), format!("\"tokens\":{}", text.tokens.len())];
    let vectors = if model == "glove" {
        let cfg = GloveConfig {
            dim,
            min_count,
            epochs,
            threads,
            seed,
            cooc: CoocConfig { window, ..Default::default() },
            eta: num("alpha", "0.05")?,
            x_max: num("x-max", "100")?,
            ..Default::default()
        };
        let prep = t0.elapsed().as_secs_f64();
        let (g, st) = train_glove(&text, &cfg)?;
        json.push(format!("\"prep_seconds\":{prep:.4}"));
        json.push(format!("\"vocab\":{}", g.vocab.len()));
        json.push(format!("\"count_seconds\":{:.4}", st.count_seconds));
        json.push(format!("\"train_seconds\":{:.4}", st.train_seconds));
        json.push(format!("\"entries\":{}", st.entries));
        json.push(format!("\"entries_per_sec\":{:.1}", st.entries_per_sec));
        json.push(format!("\"final_loss\":{:.6}", st.epoch_loss.last().copied().unwrap_or(f64::NAN)));
        g.vectors()
    } else {
        let (arch, objective) = match model.as_str() {
            "sgns" => (Architecture::SkipGram, Objective::NegativeSampling { negative: num("negative", "5")? as usize, power: num("power", "0.75")? }),
            "cbow" => (Architecture::Cbow, Objective::NegativeSampling { negative: num("negative", "5")? as usize, power: num("power", "0.75")? }),
            "sg-hs" => (Architecture::SkipGram, Objective::HierarchicalSoftmax),
            "cbow-hs" => (Architecture::Cbow, Objective::HierarchicalSoftmax),
            m => return Err(format!("unknown --model {m:?} (sgns, cbow, sg-hs, cbow-hs, glove)").into()),
        };
        let cfg = Word2VecConfig {
            arch,
            objective,
            dim,
            window,
            min_count,
            sample: num("sample", "1e-3")?,
            epochs,
            alpha: opt.get("alpha").map(|a| a.parse()).transpose().map_err(|_| "--alpha: not a number")?,
            threads,
            seed,
            ..Default::default()
        };
        cfg.validate()?;
        let vocab = Vocab::build(&text, cfg.min_count)?;
        let corpus = Corpus::encode(&text, &vocab);
        let prep = t0.elapsed().as_secs_f64();
        let (m, st) = train_corpus(vocab, &corpus, &cfg, None)?;
        json.push(format!("\"prep_seconds\":{prep:.4}"));
        json.push(format!("\"vocab\":{}", m.vocab.len()));
        json.push(format!("\"train_seconds\":{:.4}", st.seconds));
        json.push(format!("\"words\":{}", st.words));
        json.push(format!("\"effective_words\":{}", st.effective_words));
        json.push(format!("\"words_per_sec\":{:.1}", st.words_per_sec));
        json.push(format!("\"effective_words_per_sec\":{:.1}", st.effective_words as f64 / st.seconds));
        m.vectors()
    };
    score(&vectors, &opt, &mut json)?;
    if let Some(p) = opt.get("out") {
        save_word2vec_text(&vectors, p.as_ref())?;
    }
    println!("{{{}}}", json.join(","));
    Ok(())
}

fn score(vectors: &chi_words::Vectors, opt: &std::collections::HashMap<String, String>, json: &mut Vec<String>) -> Result<(), Box<dyn std::error::Error>> {
    for (key, flag) in [("wordsim353", "wordsim"), ("simlex999", "simlex")] {
        if let Some(p) = opt.get(flag) {
            let s = evaluate_pairs(vectors, &load_word_pairs(p.as_ref())?, 300_000);
            json.push(format!("\"{key}\":{:.4},\"{key}_covered\":{}", s.spearman, s.covered));
        }
    }
    if let Some(p) = opt.get("analogies") {
        let a = evaluate_analogies(vectors, &load_analogies(p.as_ref())?, 300_000);
        json.push(format!("\"analogies\":{:.4},\"analogies_covered\":{}", a.accuracy(), a.covered));
    }
    Ok(())
}
