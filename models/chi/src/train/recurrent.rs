//! Recurrent sequence classifiers of `chi train` (`--model lstm | gru | ca-rnn`): one model
//! with a swappable cell, since LSTM, GRU and CA-RNN all implement [`RecurrentCell`].
//!
//! ```text
//! x_t     = E[token_t]                                   embedding               [B, embed]
//! s^l_t   = cell_l(h^{l−1}_t, s^l_{t−1}),  h^0_t = x_t   one cell per layer l     (state s, zero at t = 0)
//! h^l_t   = output(s^l_t)                                LSTM/GRU h_t, CA-RNN y_t [B, hidden_l]
//! logits  = h^L_T · W + b                                linear head on the last step
//! loss    = the task's loss (softmax cross-entropy for classification)
//! ```
//!
//! `hidden = [H_1, …, H_L]` stacks `L` cells (one entry = one layer). Dropout, if set, is
//! applied while training to each layer's outputs before the next layer and the head (never on
//! the recurrent connections).
//!
//! The forward pass also returns the top layer's outputs `h^L_1 … h^L_T`: the trainer keeps
//! their gradients and writes ‖∂L/∂h_t‖ per time step to `gradflow_time.csv`, the picture of
//! gradients vanishing (or exploding) back through time.
//!
//! **Variable lengths.** A batch is right-padded with token 0 to its longest sequence. Past its
//! own end a sequence keeps its state unchanged (`where_`), so `h^L_T` is each sequence's output
//! at its own last token, and neither padding nor later steps change it.
//!
//! Parameters: `embedding.weight` (group `embedding`), `rnn{l}.*` (group `recurrent`; CA-RNN
//! cells use their own groups `chi` and `emb`), `head.weight`, `head.bias` (group `output`).
//! The model is generic over the element type: `f32` for training, `f64` for
//! `chi gradcheck --model seq-lstm` ([`gradcheck_instance`]).

use chi_nn::dataset::{check_options, option_usize, Dataset, Inputs, Split, Targets, Task};
use super::model::{task_loss, EmbedLayout, Embedded, ForwardOut, Model, ModelConfig};
use chi_ca::rnn::{CaRnnCell, CaRnnConfig};
use chi_nn::gradcheck::ModelInstance;
use chi_nn::layers::{run_sequence_batch_held, Dropout, Embedding, GruCell, GruVariant, Linear, LstmCell, RecurrentCell};
use chi_nn::params::ParamStore;
use chi_autodiff::{Float, Rng, Tensor};

/// Which recurrent cell a [`SeqClassifier`] uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellKind {
    /// [`LstmCell`] (forget-gate bias 1; peepholes with the `peephole` option).
    Lstm,
    /// [`GruCell`], reset gate before the recurrent matmul (\[CAML\] Table 1).
    Gru,
    /// [`CaRnnCell`] with [`CaRnnConfig::default`] (\[CAML\] §3.4).
    CaRnn,
}

impl CellKind {
    /// The registry name (`lstm`, `gru`, `ca-rnn`).
    pub fn name(self) -> &'static str {
        match self {
            CellKind::Lstm => "lstm",
            CellKind::Gru => "gru",
            CellKind::CaRnn => "ca-rnn",
        }
    }
    /// The name in results tables and plots (`LSTM`, `GRU`, `CA-RNN`).
    pub fn label(self) -> &'static str {
        match self {
            CellKind::Lstm => "LSTM",
            CellKind::Gru => "GRU",
            CellKind::CaRnn => "CA-RNN",
        }
    }
}

/// Sizes and options of a [`SeqClassifier`].
#[derive(Clone, Debug, PartialEq)]
pub struct SeqConfig {
    /// The cell.
    pub kind: CellKind,
    /// Vocabulary size (token ids are `0..vocab`).
    pub vocab: usize,
    /// Embedding size.
    pub embed: usize,
    /// Hidden size of each stacked layer (at least one).
    pub hidden: Vec<usize>,
    /// Outputs of the head (classes, or 1 for binary / regression tasks).
    pub output: usize,
    /// Dropout probability on layer outputs while training, in `[0, 1)`.
    pub dropout: f64,
    /// LSTM only: diagonal peephole connections.
    pub peephole: bool,
    /// Also run each text backwards with a second stack of cells and give the head both
    /// final states (`[h_fwd; h_bwd]`).
    pub bidirectional: bool,
}

/// Embedding → stacked recurrent cells → linear head on the last step (see the module docs).
/// Like the layers of [`chi_nn::layers`], it keeps handles to parameters that live in a
/// [`ParamStore`] given at construction.
pub struct SeqClassifier<T: Float> {
    embedding: Embedding<T>,
    cells: Vec<Box<dyn RecurrentCell<T>>>,
    /// The backward stack of a bidirectional model (empty otherwise).
    rev_cells: Vec<Box<dyn RecurrentCell<T>>>,
    head: Linear<T>,
    /// Applied to each layer's outputs while training, with masks from the run's stream.
    dropout: Dropout,
    cfg: SeqConfig,
}

impl<T: Float> SeqClassifier<T> {
    /// Builds the model, adding its parameters to `store` and initialising them from `rng`.
    pub fn new(store: &mut ParamStore<T>, cfg: &SeqConfig, rng: &mut Rng) -> Result<Self, String> {
        let what = cfg.kind.name();
        if cfg.hidden.is_empty() || cfg.hidden.contains(&0) {
            return Err(format!("{what}: hidden needs one positive size per layer, got {:?}", cfg.hidden));
        }
        if cfg.vocab == 0 || cfg.embed == 0 || cfg.output == 0 {
            return Err(format!("{what}: vocab, embed and output must be positive (got {}, {}, {})", cfg.vocab, cfg.embed, cfg.output));
        }
        if !(0.0..1.0).contains(&cfg.dropout) {
            return Err(format!("{what}: dropout must be in [0, 1), got {}", cfg.dropout));
        }
        if cfg.peephole && cfg.kind != CellKind::Lstm {
            return Err(format!("{what}: the peephole option is for lstm only"));
        }
        let embedding = Embedding::in_store(store, "embedding", "embedding", cfg.vocab, cfg.embed, false, rng);
        let make_stack = |store: &mut ParamStore<T>, suffix: &str, rng: &mut Rng| {
            let mut cells: Vec<Box<dyn RecurrentCell<T>>> = Vec::new();
            let mut input = cfg.embed;
            for (l, &h) in cfg.hidden.iter().enumerate() {
                let prefix = format!("rnn{l}{suffix}");
                let cell: Box<dyn RecurrentCell<T>> = match cfg.kind {
                    CellKind::Lstm => Box::new(LstmCell::new(store, &prefix, "recurrent", input, h, cfg.peephole, rng)),
                    CellKind::Gru => Box::new(GruCell::new(store, &prefix, "recurrent", input, h, GruVariant::ResetBeforeMatmul, rng)),
                    CellKind::CaRnn => Box::new(CaRnnCell::new(store, &prefix, input, h, CaRnnConfig::default(), rng)),
                };
                cells.push(cell);
                input = h;
            }
            cells
        };
        let cells = make_stack(store, "", rng);
        let rev_cells = if cfg.bidirectional { make_stack(store, "_reverse", rng) } else { Vec::new() };
        let input = cfg.hidden[cfg.hidden.len() - 1] * if cfg.bidirectional { 2 } else { 1 };
        let head = Linear::in_store(store, "head", "output", input, cfg.output, true, rng);
        Ok(SeqClassifier { embedding, cells, rev_cells, head, dropout: Dropout::with_seed(cfg.dropout, 0), cfg: cfg.clone() })
    }

    /// The configuration.
    pub fn config(&self) -> &SeqConfig {
        &self.cfg
    }

    /// Runs a batch of token sequences: returns the head's output `[B, output]` and the top
    /// layer's outputs `h_1 … h_T` (`[B, H_L]` each, `T` the longest sequence). `train`
    /// enables dropout, drawn from `rng`.
    ///
    /// Panics (naming the model) on an empty batch or an empty sequence; out-of-range token
    /// ids panic in the embedding with the id and the vocabulary size.
    pub fn forward_tokens(&self, seqs: &[&[usize]], train: bool, rng: &mut Rng) -> (Tensor<T>, Vec<Tensor<T>>) {
        let (logits, outs, _) = self.forward_full(seqs, train, rng);
        (logits, outs)
    }

    /// [`SeqClassifier::forward_tokens`], also returning the embedding lookups `[B, T, embed]`:
    /// the forward one, and for a bidirectional model the reversed texts' (flag `true`).
    pub fn forward_full(&self, seqs: &[&[usize]], train: bool, rng: &mut Rng) -> (Tensor<T>, Vec<Tensor<T>>, Vec<(Tensor<T>, bool)>) {
        let what = self.cfg.kind.name();
        let b = seqs.len();
        assert!(b > 0, "{what}: empty batch");
        let lengths: Vec<usize> = seqs.iter().map(|s| s.len()).collect();
        assert!(lengths.iter().all(|&n| n > 0), "{what}: empty sequence in the batch (lengths {lengths:?})");
        let time = *lengths.iter().max().unwrap();
        // Right-pad with token 0; padded steps are masked out by the lengths.
        let pad = |rev: bool| {
            let mut ids = vec![0usize; b * time];
            for (r, s) in seqs.iter().enumerate() {
                let row = &mut ids[r * time..r * time + s.len()];
                row.copy_from_slice(s);
                if rev {
                    row.reverse();
                }
            }
            ids
        };
        let mut embedded = Vec::new();
        let mut lasts = Vec::new();
        let mut top = Vec::new();
        for (cells, rev) in [(&self.cells, false), (&self.rev_cells, true)] {
            if cells.is_empty() {
                continue;
            }
            let e = self.embedding.forward_shaped(&pad(rev), &[b, time]); // [B, T, embed]
            let mut xs = e.clone();
            let mut outs = Vec::new();
            for cell in cells.iter() {
                outs = run_sequence_batch_held(cell.as_ref(), &xs, None, Some(&lengths)).0;
                if train && self.cfg.dropout > 0.0 {
                    // Dropped copies feed the next layer; `outs` stay the undropped h_t.
                    let dropped: Vec<Tensor<T>> = outs.iter().map(|h| self.dropout.forward_rng(h, true, rng)).collect();
                    xs = Tensor::stack(&dropped, 1);
                } else {
                    xs = Tensor::stack(&outs, 1); // [B, T, H]
                }
            }
            // The last step's (possibly dropped-out) output: each row's state at its own last token.
            lasts.push(xs.narrow(1, time - 1, 1).reshape(&[b, xs.dim(2)]));
            embedded.push((e, rev));
            if !rev {
                top = outs;
            }
        }
        let last = if lasts.len() == 1 { lasts.pop().unwrap() } else { Tensor::concat(&lasts, 1) };
        (self.head.forward(&last), top, embedded)
    }
}

/// The `chi train` model: a float32 [`SeqClassifier`] and the store of its parameters.
pub struct SeqModel {
    store: ParamStore<f32>,
    net: SeqClassifier<f32>,
}

impl SeqModel {
    /// Builds the model and its parameters.
    pub fn new(cfg: &SeqConfig, rng: &mut Rng) -> Result<SeqModel, String> {
        let mut store = ParamStore::new();
        let net = SeqClassifier::new(&mut store, cfg, rng)?;
        Ok(SeqModel { store, net })
    }
    /// The network.
    pub fn net(&self) -> &SeqClassifier<f32> {
        &self.net
    }
}

impl Model for SeqModel {
    fn store(&self) -> &ParamStore<f32> {
        &self.store
    }
    fn forward(&self, split: &Split, idx: &[usize], train: bool, rng: &mut Rng) -> ForwardOut {
        let Inputs::Tokens { seqs, .. } = &split.inputs else {
            panic!("{}: needs token-sequence inputs", self.net.cfg.kind.name());
        };
        let batch: Vec<&[usize]> = idx.iter().map(|&i| seqs[i].as_slice()).collect();
        let (output, hidden, emb) = self.net.forward_full(&batch, train, rng);
        let time = batch.iter().map(|s| s.len()).max().unwrap_or(0);
        let embedded = emb
            .into_iter()
            .map(|(tensor, rev)| Embedded { tensor, layout: if rev { EmbedLayout::Reversed { time } } else { EmbedLayout::Padded { time } } })
            .collect();
        ForwardOut { output, hidden, embedded }
    }
}

/// Builds a [`SeqClassifier`] of cell `kind` for a token dataset from the run's model options:
/// `hidden` (one size per layer), `dropout`, and in `options` `embed` (default 16) and, for
/// LSTM, `peephole` (default false). `activation` is not used (each cell has its own).
pub fn build(kind: CellKind, cfg: &ModelConfig, ds: &Dataset, rng: &mut Rng) -> Result<Box<dyn Model>, String> {
    let what = kind.name();
    let Inputs::Tokens { vocab, .. } = &ds.train.inputs else {
        return Err(format!("{what} needs token-sequence inputs; dataset {:?} has none (try --dataset first-token)", ds.name));
    };
    let known: &[&str] = if kind == CellKind::Lstm { &["embed", "peephole", "bidirectional"] } else { &["embed", "bidirectional"] };
    check_options(&cfg.options, known, what)?;
    cfg.check_unused(what, &["activation"], "; the cells have their own gate nonlinearities")?;
    let peephole = super::zoo::option_flag(cfg, "peephole", what)?;
    let bidirectional = super::zoo::option_flag(cfg, "bidirectional", what)?;
    let output = match ds.task {
        Task::Classification { classes } => classes,
        Task::Binary | Task::Regression => 1,
    };
    let seq = SeqConfig {
        kind,
        vocab: *vocab,
        embed: option_usize(&cfg.options, "embed", 16, what)?,
        hidden: cfg.hidden.clone(),
        output,
        dropout: cfg.dropout,
        peephole,
        bidirectional,
    };
    Ok(Box::new(SeqModel::new(&seq, rng)?))
}

/// A tiny float64 instance of the whole training model for `chi gradcheck --model seq-NAME`:
/// vocabulary 5, embedding 3, two stacked layers (3, 2), 2 classes, three sequences of lengths
/// 3, 2 and 4 (so the padding mask is exercised), mean softmax cross-entropy as in training.
pub fn gradcheck_instance(kind: CellKind) -> ModelInstance {
    let mut rng = Rng::new(41);
    let cfg = SeqConfig { kind, vocab: 5, embed: 3, hidden: vec![3, 2], output: 2, dropout: 0.0, peephole: kind == CellKind::Lstm, bidirectional: false };
    let mut store = ParamStore::new();
    let model = SeqClassifier::<f64>::new(&mut store, &cfg, &mut rng).expect("the gradcheck configuration is valid");
    // Generic values: zero biases would hide bias-gradient bugs.
    chi_nn::gradcheck::perturb(&store, &mut rng);
    let split = Split {
        inputs: Inputs::Tokens { seqs: vec![vec![0, 3, 4], vec![1, 2], vec![4, 4, 1, 0]], vocab: 5 },
        targets: Targets::Classes(vec![1, 0, 1]),
    };
    let loss = move |_: &[Tensor<f64>]| {
        let Inputs::Tokens { seqs, .. } = &split.inputs else { unreachable!() };
        let batch: Vec<&[usize]> = seqs.iter().map(|s| s.as_slice()).collect();
        let (logits, _) = model.forward_tokens(&batch, false, &mut Rng::new(0));
        task_loss(Task::Classification { classes: 2 }, &logits, &split, &[0, 1, 2])
    };
    ModelInstance { store, inputs: Vec::new(), loss: Box::new(loss) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chi_nn::dataset::{first_token, DataConfig};

    fn tiny(kind: CellKind) -> (ParamStore<f64>, SeqClassifier<f64>) {
        let mut store = ParamStore::new();
        let cfg = SeqConfig { kind, vocab: 6, embed: 3, hidden: vec![4, 3], output: 2, dropout: 0.0, peephole: false, bidirectional: false };
        let net = SeqClassifier::new(&mut store, &cfg, &mut Rng::new(3)).unwrap();
        chi_nn::gradcheck::perturb(&store, &mut Rng::new(4));
        (store, net)
    }

    /// Padding must not change a sequence's result: a short sequence in a batch with a longer
    /// one gives the logits it gives alone, and its h_t past its end repeats its last output.
    #[test]
    fn padded_batch_equals_sequences_run_alone() {
        for kind in [CellKind::Lstm, CellKind::Gru, CellKind::CaRnn] {
            let (_store, net) = tiny(kind);
            let (long, short): (&[usize], &[usize]) = (&[1, 5, 2, 0, 3], &[4, 2]);
            let mut rng = Rng::new(0);
            let (both, hs) = net.forward_tokens(&[long, short], false, &mut rng);
            let (alone_long, _) = net.forward_tokens(&[long], false, &mut rng);
            let (alone_short, _) = net.forward_tokens(&[short], false, &mut rng);
            let (b, l, s) = (both.to_vec(), alone_long.to_vec(), alone_short.to_vec());
            for (x, y) in b[..2].iter().zip(&l).chain(b[2..].iter().zip(&s)) {
                assert!((x - y).abs() < 1e-12, "{kind:?}: batched {b:?} vs alone {l:?} {s:?}");
            }
            assert_eq!(hs.len(), 5, "{kind:?}: one hidden state per step of the longest sequence");
            let row1 = |t: usize| hs[t].to_vec()[3..].to_vec();
            assert_eq!(row1(1), row1(4), "{kind:?}: the short row's state must stay fixed after its end");
        }
    }

    /// In an untrained recurrent net the loss gradient reaching h_t shrinks going back in time
    /// (what `gradflow_time.csv` records; the forward pass builds the graph step by step, as the
    /// trainer does when it records gradient flow).
    #[test]
    fn gradient_reaching_early_steps_is_smaller() {
        let (_store, net) = tiny(CellKind::Gru);
        let seq: Vec<usize> = (0..12).map(|t| t % 6).collect();
        let (logits, hs) = chi_nn::layers::with_stepwise_recurrence(|| net.forward_tokens(&[&seq], false, &mut Rng::new(0)));
        crate::train::gradflow::retain_hidden(&hs);
        logits.sum().backward();
        let n = crate::train::gradflow::hidden_grad_norms(&hs);
        assert!(n.iter().all(|v| v.is_finite() && *v > 0.0), "{n:?}");
        assert!(n[0] < n[11], "‖∂L/∂h_0‖ {} should be below ‖∂L/∂h_11‖ {}: {n:?}", n[0], n[11]);
    }

    #[test]
    fn first_token_labels_are_the_first_token() {
        let mut cfg = DataConfig { n_train: 50, n_test: 20, classes: 4, ..Default::default() };
        cfg.options.insert("seq_len".into(), 7.into());
        let a = first_token(&cfg, &mut Rng::new(9)).unwrap();
        let b = first_token(&cfg, &mut Rng::new(9)).unwrap();
        let (Inputs::Tokens { seqs, vocab }, Targets::Classes(y)) = (&a.train.inputs, &a.train.targets) else { panic!("token inputs and classes expected") };
        assert_eq!(*vocab, 4 + 8);
        for (s, &c) in seqs.iter().zip(y) {
            assert_eq!(s.len(), 7);
            assert_eq!(s[0], c);
            assert!(s[1..].iter().all(|&d| (4..12).contains(&d)), "distractor out of range in {s:?}");
        }
        let Inputs::Tokens { seqs: seqs_b, .. } = &b.train.inputs else { unreachable!() };
        assert_eq!(seqs, seqs_b, "same seed, same data");
        cfg.options.insert("seqlen".into(), 3.into());
        let e = first_token(&cfg, &mut Rng::new(9)).unwrap_err();
        assert!(e.to_string().contains("unknown option \"seqlen\""), "{e}");
    }
}
