//! The neural language models of White et al., *Neural Representations of Natural Language*,
//! §3.1, written with chi's tape ops and trained by minibatch SGD, scored by held-out
//! perplexity:
//!
//! * [`Nplm`]: Bengio et al.'s neural probabilistic LM over `n` previous words (`n = 2` is the
//!   neural trigram LM, eq. 3.4), `P(w | ctx) = softmax(V tanh(U x + b) + W x + k)` with
//!   `x = [C_{w−1}; …; C_{w−n}]` and the optional bypass `W x` (eq. 3.10);
//! * [`RnnLm`]: Mikolov's recurrent LM without biases (eqs. 3.11–3.12),
//!   `h_i = σ(U h_{i−1} + C_{w_{i−1}})`, `P(w_i | w_{<i}) = softmax(V h_i)`, trained by
//!   back-propagation through each whole sentence.
//!
//! Sentences are framed by `<s>` (context padding and the RNN's first input) and `</s>` (the
//! last target); words below `min_count` map to `<unk>`.

use crate::error::{config, WordsError};
use crate::vocab::{Text, Vocab};
use chi_autodiff::{Float, Rng, Tensor};

/// Boundary and unknown-word tokens, ids 0, 1, 2 of every LM vocabulary.
pub const SPECIALS: [&str; 3] = ["<s>", "</s>", "<unk>"];

/// An LM vocabulary: the three [`SPECIALS`], then the words seen at least `min_count` times.
#[derive(Clone, Debug, PartialEq)]
pub struct LmVocab {
    /// The word list (specials first).
    pub vocab: Vocab,
}

impl LmVocab {
    /// Builds the vocabulary of `text`.
    pub fn build(text: &Text, min_count: u64) -> Result<LmVocab, WordsError> {
        let words = Vocab::build(text, min_count)?;
        let mut pairs: Vec<(String, u64)> = SPECIALS.iter().map(|s| (s.to_string(), 0)).collect();
        pairs.extend(words.words.into_iter().zip(words.counts).filter(|(w, _)| !SPECIALS.contains(&w.as_str())));
        Ok(LmVocab { vocab: Vocab::from_ordered(pairs) })
    }

    /// Number of words including the specials.
    pub fn len(&self) -> usize {
        self.vocab.len()
    }

    /// Always false (the specials are there).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Sentences as ids, `<unk>` for unknown words, each ending with `</s>`.
    pub fn encode(&self, text: &Text) -> Vec<Vec<usize>> {
        let mut out = Vec::with_capacity(text.sentences());
        let mut start = 0;
        for &end in &text.ends {
            let mut s: Vec<usize> = text.tokens[start..end].iter().map(|w| self.vocab.id(w).map_or(2, |i| i as usize)).collect();
            s.push(1);
            out.push(s);
            start = end;
        }
        out
    }
}

/// Training options shared by both models.
#[derive(Clone, Debug, PartialEq)]
pub struct LmTrainConfig {
    /// Passes over the training sentences.
    pub epochs: usize,
    /// SGD learning rate (on the batch-mean loss).
    pub lr: f64,
    /// Examples (NPLM) or sentences (RNN) per step.
    pub batch: usize,
    /// Seed of initialisation and shuffling.
    pub seed: u64,
}

impl Default for LmTrainConfig {
    fn default() -> Self {
        LmTrainConfig { epochs: 5, lr: 0.5, batch: 32, seed: 1 }
    }
}

fn init<T: Float>(shape: &[usize], scale: f64, rng: &mut Rng) -> Tensor<T> {
    Tensor::rand_uniform(shape, -scale, scale, rng).requires_grad()
}

fn sgd<T: Float>(params: Vec<&mut Tensor<T>>, lr: T) {
    for p in params {
        if let Some(g) = p.grad() {
            let g = g.to_vec();
            p.update(|v| v.iter_mut().zip(&g).for_each(|(x, &d)| *x -= lr * d));
        }
        p.zero_grad();
    }
}

/// Bengio's neural probabilistic language model.
#[derive(Clone, Debug)]
pub struct Nplm<T: Float = f32> {
    /// Previous words used.
    pub context: usize,
    /// Whether the bypass `W x` is used.
    pub bypass: bool,
    /// Embeddings `C`, `[V, d]`.
    pub c: Tensor<T>,
    /// Hidden weights `U`, `[n·d, H]`.
    pub u: Tensor<T>,
    /// Hidden bias, `[1, H]`.
    pub b: Tensor<T>,
    /// Output weights `V`, `[H, V]`.
    pub v: Tensor<T>,
    /// Output bias `k`, `[1, V]`.
    pub k: Tensor<T>,
    /// Bypass `W`, `[n·d, V]` (when `bypass`).
    pub w: Option<Tensor<T>>,
}

impl<T: Float> Nplm<T> {
    /// A fresh model over `vocab` words.
    pub fn new(vocab: usize, context: usize, dim: usize, hidden: usize, bypass: bool, seed: u64) -> Result<Nplm<T>, WordsError> {
        if vocab == 0 || context == 0 || dim == 0 || hidden == 0 {
            return Err(config("nplm", "vocab, context, dim and hidden must be at least 1"));
        }
        // Sizes that cannot fit in memory are refused before anything is allocated.
        for (what, dims) in [("nplm embedding", [vocab, dim]), ("nplm hidden layer", [context.saturating_mul(dim), hidden]), ("nplm output", [hidden, vocab])] {
            chi_nn::limits::check_fits_memory(what, &dims).map_err(|e| config("nplm", e.to_string()))?;
        }
        let mut rng = Rng::new(seed);
        let nd = context * dim;
        Ok(Nplm {
            context,
            bypass,
            c: init(&[vocab, dim], 0.1, &mut rng),
            u: init(&[nd, hidden], 1.0 / (nd as f64).sqrt(), &mut rng),
            b: Tensor::zeros(&[1, hidden]).requires_grad(),
            v: init(&[hidden, vocab], 1.0 / (hidden as f64).sqrt(), &mut rng),
            k: Tensor::zeros(&[1, vocab]).requires_grad(),
            w: bypass.then(|| Tensor::zeros(&[nd, vocab]).requires_grad()),
        })
    }

    /// The parameters, updated in place (a clone of a tensor would update a copy).
    fn params_mut(&mut self) -> Vec<&mut Tensor<T>> {
        let mut p = vec![&mut self.c, &mut self.u, &mut self.b, &mut self.v, &mut self.k];
        p.extend(self.w.as_mut());
        p
    }

    /// Logits `[B, V]` for `B` contexts given as `B·n` ids (most recent word first).
    pub fn logits(&self, contexts: &[usize]) -> Tensor<T> {
        let bsz = contexts.len() / self.context;
        let d = self.c.shape()[1];
        let x = self.c.embedding(contexts).reshape(&[bsz, self.context * d]);
        let h = x.matmul(&self.u).add(&self.b).tanh();
        let out = h.matmul(&self.v).add(&self.k);
        match &self.w {
            Some(w) => out.add(&x.matmul(w)),
            None => out,
        }
    }

    /// The `(context, target)` examples of encoded sentences, contexts padded with `<s>`.
    pub fn examples(&self, sentences: &[Vec<usize>]) -> Vec<(Vec<usize>, usize)> {
        let mut out = Vec::new();
        for s in sentences {
            for i in 0..s.len() {
                let ctx = (1..=self.context).map(|k| if i >= k { s[i - k] } else { 0 }).collect();
                out.push((ctx, s[i]));
            }
        }
        out
    }

    /// Trains on `sentences`; returns the mean training loss of each epoch.
    pub fn train(&mut self, sentences: &[Vec<usize>], cfg: &LmTrainConfig) -> Vec<f64> {
        let mut ex = self.examples(sentences);
        let mut rng = Rng::new(cfg.seed ^ 0x6e70_6c6d);
        let mut losses = Vec::new();
        for _ in 0..cfg.epochs {
            rng.shuffle(&mut ex);
            let (mut sum, mut n) = (0.0, 0usize);
            for chunk in ex.chunks(cfg.batch.max(1)) {
                let ctx: Vec<usize> = chunk.iter().flat_map(|e| e.0.iter().copied()).collect();
                let tgt: Vec<usize> = chunk.iter().map(|e| e.1).collect();
                let loss = self.logits(&ctx).cross_entropy(&tgt);
                sum += loss.item().to_f64() * chunk.len() as f64;
                n += chunk.len();
                loss.backward();
                sgd(self.params_mut(), T::from_f64(cfg.lr));
            }
            losses.push(sum / n.max(1) as f64);
        }
        losses
    }

    /// Perplexity `exp(mean −log P(w | ctx))` over every word (and `</s>`) of `sentences`.
    pub fn perplexity(&self, sentences: &[Vec<usize>]) -> f64 {
        let ex = self.examples(sentences);
        let _g = chi_autodiff::no_grad_guard();
        let mut nll = 0.0;
        for chunk in ex.chunks(256) {
            let ctx: Vec<usize> = chunk.iter().flat_map(|e| e.0.iter().copied()).collect();
            let tgt: Vec<usize> = chunk.iter().map(|e| e.1).collect();
            nll += self.logits(&ctx).cross_entropy_with(&tgt, chi_autodiff::ops::loss::Reduction::Sum).item().to_f64();
        }
        (nll / ex.len().max(1) as f64).exp()
    }
}

/// Mikolov's recurrent language model (no biases).
#[derive(Clone, Debug)]
pub struct RnnLm<T: Float = f32> {
    /// Input embeddings `C`, `[V, H]` (the embedding size is the state size).
    pub c: Tensor<T>,
    /// Recurrent weights `U`, `[H, H]`.
    pub u: Tensor<T>,
    /// Output weights `V`, `[H, V]`.
    pub v: Tensor<T>,
}

impl<T: Float> RnnLm<T> {
    /// A fresh model over `vocab` words with state size `hidden`.
    pub fn new(vocab: usize, hidden: usize, seed: u64) -> Result<RnnLm<T>, WordsError> {
        if vocab == 0 || hidden == 0 {
            return Err(config("rnnlm", "vocab and hidden must be at least 1"));
        }
        for (what, dims) in [("rnnlm embedding", [vocab, hidden]), ("rnnlm recurrence", [hidden, hidden])] {
            chi_nn::limits::check_fits_memory(what, &dims).map_err(|e| config("rnnlm", e.to_string()))?;
        }
        let mut rng = Rng::new(seed);
        Ok(RnnLm {
            c: init(&[vocab, hidden], 0.5, &mut rng),
            u: init(&[hidden, hidden], 1.0 / (hidden as f64).sqrt(), &mut rng),
            v: init(&[hidden, vocab], 1.0 / (hidden as f64).sqrt(), &mut rng),
        })
    }

    /// Summed negative log-likelihood of a batch of sentences (each predicts its words and
    /// `</s>` from `<s>` and the words before). Sentences of unequal length are run step by
    /// step on the rows still active.
    pub fn nll(&self, sentences: &[&[usize]]) -> Tensor<T> {
        let mut sentences = sentences.to_vec();
        // Longest first, so the rows still active at any step are a prefix of the state.
        sentences.sort_by_key(|s| std::cmp::Reverse(s.len()));
        let hsz = self.u.shape()[0];
        let maxlen = sentences.iter().map(|s| s.len()).max().unwrap_or(0);
        let mut h = Tensor::zeros(&[sentences.len(), hsz]);
        let mut total: Option<Tensor<T>> = None;
        for t in 0..maxlen {
            let active: Vec<usize> = (0..sentences.len()).filter(|&r| sentences[r].len() > t).collect();
            if active.len() < h.shape()[0] {
                h = h.narrow(0, 0, active.len());
            }
            let inputs: Vec<usize> = active.iter().map(|&r| if t == 0 { 0 } else { sentences[r][t - 1] }).collect();
            let targets: Vec<usize> = active.iter().map(|&r| sentences[r][t]).collect();
            h = h.matmul(&self.u).add(&self.c.embedding(&inputs)).sigmoid();
            let l = h.matmul(&self.v).cross_entropy_with(&targets, chi_autodiff::ops::loss::Reduction::Sum);
            total = Some(match total {
                Some(s) => s.add(&l),
                None => l,
            });
        }
        total.unwrap_or_else(|| Tensor::zeros(&[]))
    }

    /// Trains on `sentences` (shuffled minibatches of `batch` sentences); returns the
    /// mean per-word training loss of each epoch.
    pub fn train(&mut self, sentences: &[Vec<usize>], cfg: &LmTrainConfig) -> Vec<f64> {
        let mut order: Vec<usize> = (0..sentences.len()).collect();
        let mut rng = Rng::new(cfg.seed ^ 0x726e_6e6c);
        let mut losses = Vec::new();
        for _ in 0..cfg.epochs {
            rng.shuffle(&mut order);
            let (mut sum, mut words) = (0.0, 0usize);
            for chunk in order.chunks(cfg.batch.max(1)) {
                let batch: Vec<&[usize]> = chunk.iter().map(|&i| sentences[i].as_slice()).collect();
                let n: usize = batch.iter().map(|s| s.len()).sum();
                let loss = self.nll(&batch);
                sum += loss.item().to_f64();
                words += n;
                loss.div_scalar(n.max(1) as f64).backward();
                sgd(vec![&mut self.c, &mut self.u, &mut self.v], T::from_f64(cfg.lr));
            }
            losses.push(sum / words.max(1) as f64);
        }
        losses
    }

    /// Held-out perplexity over every word and `</s>` of `sentences`.
    pub fn perplexity(&self, sentences: &[Vec<usize>]) -> f64 {
        let _g = chi_autodiff::no_grad_guard();
        let mut sorted: Vec<&[usize]> = sentences.iter().map(|s| s.as_slice()).collect();
        sorted.sort_by_key(|s| std::cmp::Reverse(s.len()));
        let words: usize = sorted.iter().map(|s| s.len()).sum();
        let nll: f64 = sorted.chunks(64).map(|c| self.nll(c).item().to_f64()).sum();
        (nll / words.max(1) as f64).exp()
    }
}

/// Perplexity of the add-one-smoothed unigram model fitted on `train`, on `test` (a baseline).
pub fn unigram_perplexity(vocab: usize, train: &[Vec<usize>], test: &[Vec<usize>]) -> f64 {
    let mut counts = vec![1.0f64; vocab];
    for s in train {
        for &w in s {
            counts[w] += 1.0;
        }
    }
    let z: f64 = counts.iter().sum();
    let n: usize = test.iter().map(|s| s.len()).sum();
    let nll: f64 = test.iter().flatten().map(|&w| -(counts[w] / z).ln()).sum();
    (nll / n.max(1) as f64).exp()
}
