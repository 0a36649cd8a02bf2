//! Training and evaluating a [`Seq2Seq`] model on tokenised sentence pairs through chi's one
//! training loop ([`chi_nn::trainer::Trainer`]): seeded random mini-batches, the
//! teacher-forced loss, validation curves of top-k token accuracy over steps (the paper's
//! Figs. 12 and 14), and on the test set top-k accuracy, perplexity, teacher-forced BLEU, greedy
//! and beam BLEU, and token / sequence error rates.

use crate::decode::{beam_search, greedy};
use crate::error::Seq2SeqError;
use crate::metrics::{corpus_bleu, perplexity, sequence_error_rate, token_error_rate, topk_hits, Smoothing};
use crate::model::{Seq2Seq, Seq2SeqConfig};
use crate::vocab::{Padded, Vocab};
use chi_autodiff::{no_grad, Rng};
use chi_nn::optim::{OptimConfig, Optimizer};
use chi_nn::dist::{shard, Collective, DataParallel};
use chi_nn::trainer::{Metrics, StepOutput, Trainer};
use std::rc::Rc;
use std::collections::BTreeMap;
use std::time::Instant;

/// A tokenised pair: source tokens, target tokens.
pub type Pair = (Vec<String>, Vec<String>);

/// Train, validation and test pairs.
#[derive(Clone, Debug, Default)]
pub struct Corpus {
    /// Training pairs.
    pub train: Vec<Pair>,
    /// Validation pairs (the curves over steps).
    pub valid: Vec<Pair>,
    /// Test pairs (the final numbers).
    pub test: Vec<Pair>,
}

/// How to train and evaluate.
#[derive(Clone, Debug)]
pub struct TrainOptions {
    /// Optimiser steps.
    pub steps: u64,
    /// Pairs per step.
    pub batch: usize,
    /// The optimiser (the paper: Adagrad, lr 0.01).
    pub optim: OptimConfig,
    /// Gradient clipping by global norm (`None`: off).
    pub clip_norm: Option<f64>,
    /// Validation curve every this many steps (and at the end).
    pub eval_every: u64,
    /// Validation pairs used for the curves (the first ones; all if larger).
    pub eval_pairs: usize,
    /// Training pairs longer than this (source or target tokens) are left out.
    pub max_len: usize,
    /// Vocabulary caps (`None`: every training token, the paper's dictionary-free setting).
    pub src_vocab_cap: Option<usize>,
    /// See [`TrainOptions::src_vocab_cap`].
    pub tgt_vocab_cap: Option<usize>,
    /// The k of the top-k token accuracies.
    pub topk: Vec<usize>,
    /// Beam width for the test BLEU (1: greedy only).
    pub beam: usize,
    /// Length-normalisation exponent of the beam score.
    pub alpha: f64,
    /// Test pairs decoded (greedy and beam; all if larger).
    pub decode_pairs: usize,
    /// Seed of the parameters and of the batch order.
    pub seed: u64,
    /// Where to save the trained model for `chi translate` (`None`: not saved).
    pub save_to: Option<std::path::PathBuf>,
    /// The caller's own metadata saved with the model ([`crate::translator::Translator::save_with`]).
    pub save_extra: BTreeMap<String, String>,
    /// The tokenizer recorded with a saved model (how `chi translate` splits its input).
    pub tokenizer: crate::translator::Tokenizer,
    /// Full checkpoints to write, and one to resume from (`None`: neither).
    pub checkpoints: Option<Checkpoints>,
}

/// Resumable training: full checkpoints (parameters, optimiser state, the batch generator's
/// state and the step) written every `every` steps and at the end, and a run continued from
/// one. The batches drawn after a resume are those an uninterrupted run draws, so a resumed
/// run ends bit-identical to one that never stopped.
#[derive(Clone, Debug)]
pub struct Checkpoints {
    /// Folder of the checkpoints (`step-NNNNNNNN.ckpt.safetensors`).
    pub dir: std::path::PathBuf,
    /// Steps between checkpoints (≥ 1).
    pub every: u64,
    /// Checkpoints kept: older ones are deleted once a newer one is written (≥ 1).
    pub keep: usize,
    /// Text saved in every checkpoint (the caller's settings) and required equal on resume.
    pub config: String,
    /// A checkpoint of this run to continue from.
    pub resume_from: Option<std::path::PathBuf>,
    /// A JSON-lines file each validation evaluation is appended to as it happens (`step` and
    /// the `valid_top{k}` accuracies), before the checkpoint of its step is written.
    pub eval_log: Option<std::path::PathBuf>,
}

/// Name of the batch generator's state in a checkpoint.
const BATCH_RNG: &str = "batches";

/// Writes a checkpoint at every due step and prunes the old ones.
struct CheckpointWriter<'a> {
    c: &'a Checkpoints,
    rng: Rc<std::cell::RefCell<Rng>>,
}

impl chi_nn::trainer::Callback<f32> for CheckpointWriter<'_> {
    fn on_checkpoint(&mut self, s: &chi_nn::trainer::Snapshot<'_, f32>) -> chi_nn::trainer::CallbackResult {
        let meta = chi_nn::checkpoint::CheckpointMeta {
            step: s.state.step,
            rngs: [(BATCH_RNG.to_string(), self.rng.borrow().state())].into_iter().collect(),
            config: self.c.config.clone(),
            extra: BTreeMap::new(),
        };
        std::fs::create_dir_all(&self.c.dir).map_err(|e| format!("{}: {e}", self.c.dir.display()))?;
        chi_nn::checkpoint::save_checkpoint(&self.c.dir.join(chi_nn::checkpoint::checkpoint_name(s.state.step)), s.params, s.optimizer, &meta)?;
        chi_nn::checkpoint::prune_checkpoints(&self.c.dir, self.c.keep.max(1));
        Ok(())
    }
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            steps: 1000,
            batch: 16,
            optim: OptimConfig::adagrad(0.01),
            clip_norm: Some(5.0),
            eval_every: 100,
            eval_pairs: 200,
            max_len: 50,
            src_vocab_cap: None,
            tgt_vocab_cap: None,
            topk: vec![1, 5, 10, 100],
            beam: 5,
            alpha: 0.0,
            decode_pairs: 200,
            seed: 1,
            save_to: None,
            save_extra: BTreeMap::new(),
            tokenizer: crate::translator::Tokenizer::Words,
            checkpoints: None,
        }
    }
}

/// What a run produced.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// `(step, value)` curves: `loss` (training), `valid_top{k}` (teacher-forced validation
    /// token accuracy).
    pub curves: BTreeMap<String, Vec<(f64, f64)>>,
    /// Test metrics: `top{k}`, `perplexity`, `tf_bleu`, `greedy_bleu`, `beam_bleu`,
    /// `greedy_token_error`, `greedy_sequence_error`, `beam_token_error`, `beam_sequence_error`.
    pub test: BTreeMap<String, f64>,
    /// Training pairs used (after the length filter).
    pub train_pairs: usize,
    /// Vocabulary sizes (specials included).
    pub src_vocab: usize,
    /// See [`Outcome::src_vocab`].
    pub tgt_vocab: usize,
    /// Parameters of the model.
    pub parameters: usize,
    /// Target tokens trained on per second of training wall time.
    pub tokens_per_sec: f64,
    /// Training wall time in seconds.
    pub train_seconds: f64,
}

/// Teacher-forced metrics over `pairs` in batches: top-k hit rates, total NLL and token count,
/// and the argmax outputs (for the teacher-forced BLEU).
fn teacher_forced_eval(model: &Seq2Seq<f32>, pairs: &[(Vec<usize>, Vec<usize>)], topk: &[usize]) -> Result<(Vec<f64>, f64, usize, Vec<Vec<usize>>), Seq2SeqError> {
    no_grad(|| {
        let mut hits = vec![0usize; topk.len()];
        let (mut counted, mut nll) = (0usize, 0.0);
        let mut argmax = Vec::with_capacity(pairs.len());
        let v = model.config.tgt_vocab;
        for chunk in pairs.chunks(32) {
            let src = Padded::new(&chunk.iter().map(|p| p.0.clone()).collect::<Vec<_>>());
            let tgt = Padded::new(&chunk.iter().map(|p| p.1.clone()).collect::<Vec<_>>());
            let tf = model.teacher_forced(&src, &tgt)?;
            nll += tf.total_nll;
            let mut outs = vec![Vec::new(); chunk.len()];
            let all = tf.logits.data();
            for t in 0..tgt.max_len {
                let keep: Vec<bool> = tgt.lengths.iter().map(|&l| t < l).collect();
                let col = tgt.column(t);
                let data = &all[t * chunk.len() * v..(t + 1) * chunk.len() * v];
                for (i, &k) in topk.iter().enumerate() {
                    hits[i] += topk_hits(data, v, &col, &keep, k).0;
                }
                counted += keep.iter().filter(|&&k| k).count();
                for (b, out) in outs.iter_mut().enumerate() {
                    if t + 1 < tgt.lengths[b] {
                        let row = &data[b * v..(b + 1) * v];
                        out.push((1..v).fold(0, |m, j| if row[j] > row[m] { j } else { m }));
                    }
                }
            }
            argmax.extend(outs);
        }
        let rates = hits.iter().map(|&h| if counted == 0 { 0.0 } else { h as f64 / counted as f64 }).collect();
        Ok((rates, nll, counted, argmax))
    })
}

/// A model's metrics on sentence pairs, and its translations of them.
#[derive(Clone, Debug, Default)]
pub struct Evaluation {
    /// `top{k}`, `perplexity`, `tf_bleu` (teacher-forced, every pair); `greedy_bleu`,
    /// `greedy_token_error`, `greedy_sequence_error` and, with a beam wider than 1, the same
    /// three for `beam_` (the first `decode_pairs` pairs).
    pub metrics: BTreeMap<String, f64>,
    /// Pairs evaluated (those with both sides non-empty).
    pub pairs: usize,
    /// Pairs decoded.
    pub decoded: usize,
    /// The decoded pairs' outputs: beam search's when the beam is wider than 1, else greedy's.
    pub outputs: Vec<Vec<String>>,
}

/// Evaluates `model` on tokenised `pairs` (encoded with its vocabularies; unseen tokens are
/// `<unk>`, pairs with an empty side are skipped): teacher-forced top-k accuracy, perplexity and
/// BLEU on every pair, greedy and beam decoding (`opts.beam`, `opts.alpha`) of the first
/// `opts.decode_pairs`, at most `2·|source| + 10` (and `4·opts.max_len`) tokens each.
pub fn evaluate_pairs(model: &Seq2Seq<f32>, src_vocab: &Vocab, tgt_vocab: &Vocab, pairs: &[Pair], opts: &TrainOptions) -> Result<Evaluation, Seq2SeqError> {
    let test_pairs: Vec<&Pair> = pairs.iter().filter(|p| !p.0.is_empty() && !p.1.is_empty()).collect();
    if test_pairs.is_empty() {
        return Err(Seq2SeqError::Input("no pair to evaluate has tokens on both sides".into()));
    }
    let test_ids: Vec<(Vec<usize>, Vec<usize>)> = test_pairs.iter().map(|p| (src_vocab.encode(&p.0), tgt_vocab.encode(&p.1))).collect();
    let mut out = Evaluation { pairs: test_ids.len(), ..Evaluation::default() };
    let (rates, nll, counted, tf_out) = teacher_forced_eval(model, &test_ids, &opts.topk)?;
    for (k, r) in opts.topk.iter().zip(rates) {
        out.metrics.insert(format!("top{k}"), r);
    }
    out.metrics.insert("perplexity".into(), perplexity(nll, counted));
    let refs: Vec<Vec<String>> = test_pairs.iter().map(|p| p.1.clone()).collect();
    let words = |ids: &[usize]| -> Vec<String> { ids.iter().map(|&i| tgt_vocab.token(i).to_string()).collect() };
    let tf_hyps: Vec<Vec<String>> = tf_out.iter().map(|h| words(h)).collect();
    out.metrics.insert("tf_bleu".into(), corpus_bleu(&tf_hyps, &refs, Smoothing::Exp).score);
    let n_dec = opts.decode_pairs.min(test_ids.len());
    out.decoded = n_dec;
    let dec_refs = &refs[..n_dec];
    let max_out = |src_len: usize| (2 * src_len + 10).min(4 * opts.max_len.max(1));
    let mut greedy_hyps = Vec::with_capacity(n_dec);
    for (s, _) in &test_ids[..n_dec] {
        let h = greedy(model, &Padded::new(std::slice::from_ref(s)), max_out(s.len()))?;
        greedy_hyps.push(words(&h[0].ids));
    }
    out.metrics.insert("greedy_bleu".into(), corpus_bleu(&greedy_hyps, dec_refs, Smoothing::Exp).score);
    out.metrics.insert("greedy_token_error".into(), token_error_rate(&greedy_hyps, dec_refs));
    out.metrics.insert("greedy_sequence_error".into(), sequence_error_rate(&greedy_hyps, dec_refs));
    out.outputs = greedy_hyps;
    if opts.beam > 1 {
        let mut beam_hyps = Vec::with_capacity(n_dec);
        for (s, _) in &test_ids[..n_dec] {
            let h = beam_search(model, s, opts.beam, max_out(s.len()), opts.alpha)?;
            beam_hyps.push(h.first().map(|h| words(&h.ids)).unwrap_or_default());
        }
        out.metrics.insert("beam_bleu".into(), corpus_bleu(&beam_hyps, dec_refs, Smoothing::Exp).score);
        out.metrics.insert("beam_token_error".into(), token_error_rate(&beam_hyps, dec_refs));
        out.metrics.insert("beam_sequence_error".into(), sequence_error_rate(&beam_hyps, dec_refs));
        out.outputs = beam_hyps;
    }
    Ok(out)
}

/// Builds vocabularies from the training side, the model, trains it and evaluates it.
/// `config`'s vocabulary sizes are filled in from the data. `progress(step, loss)` is called
/// after every step.
pub fn train_and_evaluate(config: &Seq2SeqConfig, corpus: &Corpus, opts: &TrainOptions, progress: &mut dyn FnMut(u64, f64)) -> Result<Outcome, Seq2SeqError> {
    train_and_evaluate_on(config, corpus, opts, None, progress)
}

/// [`train_and_evaluate`] data-parallel over the ranks of `group` (`None`: this process alone).
/// Every rank draws the same global batches of `opts.batch` pairs; rank r trains on the r-th
/// contiguous share, and the gradients are averaged weighted by each share's target tokens (the
/// loss is a mean per target token), so K ranks take the steps of one process. Every rank
/// evaluates (the parameters are equal); `tokens_per_sec` counts the global batches.
pub fn train_and_evaluate_on(config: &Seq2SeqConfig, corpus: &Corpus, opts: &TrainOptions, group: Option<Rc<dyn Collective>>, progress: &mut dyn FnMut(u64, f64)) -> Result<Outcome, Seq2SeqError> {
    if opts.batch == 0 || opts.steps == 0 || opts.eval_every == 0 {
        return Err(Seq2SeqError::Config(format!("steps ({}), batch ({}) and eval_every ({}) must be ≥ 1", opts.steps, opts.batch, opts.eval_every)));
    }
    let ranks = group.as_ref().map_or(1, |c| c.size());
    if opts.batch < ranks {
        return Err(Seq2SeqError::Config(format!("a batch of {} pairs cannot be split over {ranks} ranks", opts.batch)));
    }
    let fits = |p: &Pair| !p.0.is_empty() && !p.1.is_empty() && p.0.len() <= opts.max_len && p.1.len() <= opts.max_len;
    let train: Vec<&Pair> = corpus.train.iter().filter(|p| fits(p)).collect();
    if train.is_empty() {
        return Err(Seq2SeqError::Input(format!("no training pair has 1..={} tokens on both sides", opts.max_len)));
    }
    if !corpus.test.iter().any(|p| !p.0.is_empty() && !p.1.is_empty()) {
        return Err(Seq2SeqError::Input("the test set has no pair with tokens on both sides".into()));
    }
    let src_vocab = Vocab::build(train.iter().map(|p| p.0.as_slice()), opts.src_vocab_cap);
    let tgt_vocab = Vocab::build(train.iter().map(|p| p.1.as_slice()), opts.tgt_vocab_cap);
    let cfg = Seq2SeqConfig { src_vocab: src_vocab.len(), tgt_vocab: tgt_vocab.len(), ..config.clone() };
    let model = Seq2Seq::<f32>::new(&cfg, opts.seed)?;
    let ids = |p: &Pair| (src_vocab.encode(&p.0), tgt_vocab.encode(&p.1));
    let train_ids: Vec<(Vec<usize>, Vec<usize>)> = train.iter().map(|p| ids(p)).collect();
    // Validation and test pairs are encoded with the training vocabularies (unseen tokens are
    // <unk>); empty sides are dropped.
    let keep = |p: &&Pair| !p.0.is_empty() && !p.1.is_empty();
    let valid_ids: Vec<_> = corpus.valid.iter().filter(keep).take(opts.eval_pairs).map(ids).collect();

    let mut optim = Optimizer::new(opts.optim.clone());
    let mut rng = Rng::new(opts.seed ^ 0x5eed_0f_ba7c4e5);
    let mut resumed = chi_nn::trainer::TrainerState::default();
    if let Some(c) = &opts.checkpoints {
        if group.is_some() {
            return Err(Seq2SeqError::Config("checkpoints are written by one process only".into()));
        }
        if c.every == 0 {
            return Err(Seq2SeqError::Config("checkpoints every 0 steps".into()));
        }
        if let Some(from) = &c.resume_from {
            let meta = chi_nn::checkpoint::read_checkpoint_meta(from).map_err(|e| Seq2SeqError::Data(e.to_string()))?;
            if meta.config != c.config {
                return Err(Seq2SeqError::Data(format!("{}: the checkpoint was written with other settings than this run's", from.display())));
            }
            let state = meta.rngs.get(BATCH_RNG).ok_or_else(|| Seq2SeqError::Data(format!("{}: no batch generator state in the checkpoint", from.display())))?;
            // The vocabularies come from the training pairs: a changed data file shows here as
            // tensors of other shapes, refused before anything is loaded.
            chi_nn::checkpoint::load_checkpoint(from, model.store.params(), &mut optim).map_err(|e| Seq2SeqError::Data(format!("{e} (has the data changed since the run started?)")))?;
            rng = Rng::from_state(*state);
            resumed.step = meta.step;
        }
    }
    let rng = Rc::new(std::cell::RefCell::new(rng));
    let (draw, n_train, batch) = (rng.clone(), train_ids.len(), opts.batch);
    let batches = std::iter::from_fn(move || Some((0..batch).map(|_| draw.borrow_mut().below(n_train)).collect::<Vec<usize>>()));
    let mut tokens = 0usize;
    let start = Instant::now();
    let mut eval_time = 0.0;
    let topk = opts.topk.clone();
    let eval_log = opts.checkpoints.as_ref().and_then(|c| c.eval_log.clone());
    let mut eval_log_error: Option<String> = None;
    let trainer = Trainer::new(&model.store, &mut optim);
    let trainer = match &group {
        Some(c) => trainer.data_parallel(DataParallel::new(c.clone())),
        None => trainer,
    };
    let trainer = match &opts.checkpoints {
        Some(c) => trainer.checkpoint_every(c.every).checkpoint_at_end(true).callback(CheckpointWriter { c, rng: rng.clone() }),
        None => trainer,
    };
    let fit = trainer
        .resume(resumed)
        .steps(opts.steps)
        .clip_norm_opt(opts.clip_norm)
        .eval_every(opts.eval_every)
        .evaluate(|step| {
            let t0 = Instant::now();
            let mut m = Metrics::new();
            if !valid_ids.is_empty() {
                if let Ok((rates, _, _, _)) = teacher_forced_eval(&model, &valid_ids, &topk) {
                    for (k, r) in topk.iter().zip(rates) {
                        m.insert(format!("valid_top{k}"), r);
                    }
                }
            }
            if let Some(p) = eval_log.as_ref().filter(|_| eval_log_error.is_none()) {
                let fields: Vec<String> = std::iter::once(format!("\"step\":{step}")).chain(m.iter().map(|(k, v)| if v.is_finite() { format!("\"{k}\":{v}") } else { format!("\"{k}\":null") })).collect();
                let line = format!("{{{}}}\n", fields.join(","));
                let appended = std::fs::OpenOptions::new().create(true).append(true).open(p).and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
                if let Err(e) = appended {
                    eval_log_error = Some(format!("{}: {e}", p.display()));
                }
            }
            eval_time += t0.elapsed().as_secs_f64();
            m
        })
        .on_step_end(|s| progress(s.step, s.loss))
        .fit(batches, |global: Vec<usize>| {
            tokens += global.iter().map(|&i| train_ids[i].1.len()).sum::<usize>();
            let idx = match &group {
                Some(c) => shard(&global, c.rank(), c.size()),
                None => &global[..],
            };
            let src = Padded::new(&idx.iter().map(|&i| train_ids[i].0.clone()).collect::<Vec<_>>());
            let tgt = Padded::new(&idx.iter().map(|&i| train_ids[i].1.clone()).collect::<Vec<_>>());
            let tf = model.teacher_forced(&src, &tgt).expect("training ids come from the model's own vocabularies");
            StepOutput::new(tf.loss).weight(tf.tokens as f64)
        })
        .map_err(|e| Seq2SeqError::Input(format!("training stopped: {e}")))?;
    if let Some(e) = eval_log_error {
        return Err(Seq2SeqError::Data(e));
    }
    let train_seconds = start.elapsed().as_secs_f64() - eval_time;

    let mut out = Outcome {
        train_pairs: train_ids.len(),
        src_vocab: src_vocab.len(),
        tgt_vocab: tgt_vocab.len(),
        parameters: model.store.num_scalars(),
        tokens_per_sec: tokens as f64 / train_seconds.max(1e-9),
        train_seconds,
        ..Outcome::default()
    };
    out.curves.insert("loss".into(), fit.losses.iter().map(|&(s, l)| (s as f64, l)).collect());
    for k in &opts.topk {
        out.curves.insert(format!("valid_top{k}"), fit.eval_curve(&format!("valid_top{k}")));
    }

    // Saved before the test, so that a failing evaluation loses no training.
    let translator = crate::translator::Translator { model, src_vocab, tgt_vocab, tokenizer: opts.tokenizer };
    if let Some(path) = &opts.save_to {
        translator.save_with(path, &opts.save_extra)?;
    }
    let test = evaluate_pairs(&translator.model, &translator.src_vocab, &translator.tgt_vocab, &corpus.test, opts)?;
    out.test = test.metrics;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::AttentionKind;

    fn toks(v: &[usize]) -> Vec<String> {
        v.iter().map(|i| format!("w{i}")).collect()
    }

    /// A copy task: the target is the source. Learnable in a few hundred steps.
    fn corpus(rng: &mut Rng, n: usize) -> Vec<Pair> {
        (0..n)
            .map(|_| {
                let len = 2 + rng.below(3);
                let s: Vec<usize> = (0..len).map(|_| rng.below(6)).collect();
                (toks(&s), toks(&s))
            })
            .collect()
    }

    #[test]
    fn trains_a_copy_task_and_reports_every_metric() {
        let mut rng = Rng::new(3);
        let c = Corpus { train: corpus(&mut rng, 300), valid: corpus(&mut rng, 40), test: corpus(&mut rng, 40) };
        let cfg = Seq2SeqConfig { emb: 16, hidden: 32, attention: AttentionKind::Bahdanau, attn_dim: 16, ..Seq2SeqConfig::default() };
        let opts = TrainOptions { steps: 300, batch: 16, optim: OptimConfig::adam(0.01), eval_every: 100, topk: vec![1, 5], beam: 3, decode_pairs: 40, ..TrainOptions::default() };
        let mut calls = 0;
        let out = train_and_evaluate(&cfg, &c, &opts, &mut |_, _| calls += 1).unwrap();
        assert_eq!(calls, 300);
        assert_eq!(out.curves["valid_top1"].len(), 3);
        assert_eq!(out.src_vocab, 10);
        let (first, last) = (out.curves["loss"][0].1, out.test["perplexity"].ln());
        assert!(last < first / 4.0, "loss {first} → test NLL {last}");
        assert!(out.test["top1"] > 0.9 && out.test["top5"] >= out.test["top1"], "{:?}", out.test);
        assert!(out.test["greedy_bleu"] > 70.0 && out.test["beam_bleu"] > 70.0, "{:?}", out.test);
        assert!(out.test["greedy_sequence_error"] < 0.3, "{:?}", out.test);
        assert!(out.tokens_per_sec > 0.0);
    }

    /// Two ranks (threads of a `ThreadGroup`) with batches of 8 split 4 + 4 against one process:
    /// the same training to float32 rounding (softmax attention, SGD, so no Adagrad-style
    /// amplification of last-bit differences), and both ranks end with equal parameters.
    #[test]
    fn two_ranks_train_as_one_process() {
        use chi_nn::dist::ThreadGroup;
        let mut rng = Rng::new(4);
        let c = Corpus { train: corpus(&mut rng, 120), valid: corpus(&mut rng, 10), test: corpus(&mut rng, 20) };
        let cfg = Seq2SeqConfig { emb: 8, hidden: 16, attention: AttentionKind::Bahdanau, attn_dim: 8, ..Seq2SeqConfig::default() };
        let opts = TrainOptions { steps: 30, batch: 8, optim: OptimConfig::sgd(0.5), eval_every: 10, topk: vec![1], beam: 2, decode_pairs: 5, ..TrainOptions::default() };
        let one = train_and_evaluate(&cfg, &c, &opts, &mut |_, _| {}).unwrap();
        let two: Vec<Outcome> = std::thread::scope(|scope| {
            let handles: Vec<_> = ThreadGroup::new(2)
                .into_iter()
                .map(|member| {
                    let (c, cfg, opts) = (&c, &cfg, &opts);
                    scope.spawn(move || train_and_evaluate_on(cfg, c, opts, Some(Rc::new(member)), &mut |_, _| {}).unwrap())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for o in &two {
            for (k, v) in &one.test {
                let rel = (v - o.test[k]).abs() / v.abs().max(1e-9);
                assert!(rel < 1e-4, "{k}: one process {v}, two ranks {}", o.test[k]);
            }
            for ((s1, l1), (s2, l2)) in one.curves["loss"].iter().zip(&o.curves["loss"]) {
                assert_eq!(s1, s2);
                assert!((l1 - l2).abs() < 1e-4 * l1.abs(), "step {s1}: loss {l1} vs {l2}");
            }
        }
        assert_eq!(two[0].test, two[1].test, "both ranks hold the same model");
        let mut too_many = TrainOptions { batch: 1, ..opts.clone() };
        too_many.steps = 1;
        let errs: Vec<String> = std::thread::scope(|scope| {
            let handles: Vec<_> = ThreadGroup::new(2)
                .into_iter()
                .map(|member| {
                    let (c, cfg, o) = (&c, &cfg, &too_many);
                    scope.spawn(move || train_and_evaluate_on(cfg, c, o, Some(Rc::new(member)), &mut |_, _| {}).unwrap_err().to_string())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(errs.iter().all(|e| e.contains("a batch of 1 pairs cannot be split over 2 ranks")), "{errs:?}");
    }

    /// Stopped at step 20 and resumed from its checkpoint, a run ends with the bytes of one that
    /// never stopped; a checkpoint of other settings is refused.
    #[test]
    fn a_resumed_run_equals_an_uninterrupted_one() {
        let mut rng = Rng::new(5);
        let c = Corpus { train: corpus(&mut rng, 100), valid: corpus(&mut rng, 10), test: corpus(&mut rng, 10) };
        let cfg = Seq2SeqConfig { emb: 8, hidden: 16, attention: AttentionKind::Bahdanau, attn_dim: 8, ..Seq2SeqConfig::default() };
        let root = std::env::temp_dir().join(format!("chi-s2s-resume-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let ck = |name: &str, resume_from: Option<std::path::PathBuf>| Checkpoints { dir: root.join(name), every: 10, keep: 2, config: "settings A".into(), resume_from, eval_log: None };
        let opts = |steps: u64, name: &str, from: Option<std::path::PathBuf>| TrainOptions {
            steps,
            batch: 8,
            optim: OptimConfig::adam(0.01),
            eval_every: 10,
            topk: vec![1],
            beam: 2,
            decode_pairs: 5,
            save_to: Some(root.join(format!("{name}-{steps}.safetensors"))),
            checkpoints: Some(ck(name, from)),
            ..TrainOptions::default()
        };
        let whole = train_and_evaluate(&cfg, &c, &opts(40, "whole", None), &mut |_, _| {}).unwrap();
        let names: Vec<u64> = chi_nn::checkpoint::list_checkpoints(&root.join("whole")).into_iter().map(|(s, _)| s).collect();
        assert_eq!(names, [30, 40], "the newest two are kept");
        train_and_evaluate(&cfg, &c, &opts(20, "parts", None), &mut |_, _| {}).unwrap();
        let at20 = root.join("parts").join(chi_nn::checkpoint::checkpoint_name(20));
        let mut steps = Vec::new();
        let rest = train_and_evaluate(&cfg, &c, &opts(40, "parts", Some(at20)), &mut |s, _| steps.push(s)).unwrap();
        assert_eq!(steps, (21..=40).collect::<Vec<u64>>());
        let bytes = |p: &str| std::fs::read(root.join(p)).unwrap();
        assert!(bytes("whole-40.safetensors") == bytes("parts-40.safetensors"), "resumed weights differ");
        assert_eq!(whole.test, rest.test);
        let mut other = opts(40, "parts", Some(root.join("parts").join(chi_nn::checkpoint::checkpoint_name(40))));
        other.checkpoints.as_mut().unwrap().config = "settings B".into();
        let e = train_and_evaluate(&cfg, &c, &other, &mut |_, _| {}).unwrap_err().to_string();
        assert!(e.contains("other settings"), "{e}");
        std::fs::remove_dir_all(&root).ok();
    }

    #[test]
    fn empty_or_unusable_data_is_an_error() {
        let cfg = Seq2SeqConfig::default();
        let e = train_and_evaluate(&cfg, &Corpus::default(), &TrainOptions::default(), &mut |_, _| {}).unwrap_err().to_string();
        assert!(e.contains("no training pair"), "{e}");
        let c = Corpus { train: vec![(toks(&[1]), toks(&[2]))], valid: vec![], test: vec![(vec![], toks(&[2]))] };
        let e = train_and_evaluate(&cfg, &c, &TrainOptions::default(), &mut |_, _| {}).unwrap_err().to_string();
        assert!(e.contains("test set has no pair"), "{e}");
        let long = vec![(toks(&[1; 60]), toks(&[1; 60]))];
        let c = Corpus { train: long.clone(), valid: vec![], test: long };
        assert!(train_and_evaluate(&cfg, &c, &TrainOptions::default(), &mut |_, _| {}).is_err());
        let e = train_and_evaluate(&cfg, &Corpus::default(), &TrainOptions { batch: 0, ..TrainOptions::default() }, &mut |_, _| {}).unwrap_err().to_string();
        assert!(e.contains("batch (0)"), "{e}");
    }
}
