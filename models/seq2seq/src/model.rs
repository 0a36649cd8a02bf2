//! The encoder–decoder with attention.
//!
//! ```text
//! encoder   e_s = Emb_src(x_s);  h̄ = stacked (bi)RNN(e)            annotations h̄ [B, S, D]
//!                                                                   (D = H, or 2H bidirectional)
//! decoder, "previous state" wiring (CAML §4.3, Bahdanau et al.):
//!           c_t = Attend(query = h_{t−1}, h̄)
//!           h_t = RNN([Emb_tgt(y_{t−1}) ; c_t], h_{t−1})
//!           o_t = tanh(W_o [h_t ; c_t]);   logits_t = W_s o_t
//! decoder, Luong input feeding:
//!           h_t = RNN([Emb_tgt(y_{t−1}) ; õ_{t−1}], h_{t−1})
//!           c_t = Attend(query = h_t, h̄)
//!           õ_t = tanh(W_c [c_t ; h_t]);   logits_t = W_s õ_t
//! ```
//!
//! `Attend` is softmax attention with a Bahdanau (additive) or Luong (dot, general, concat)
//! score, Luong's local-p attention, or the context-aware CA-ATT (its χ in the Luong or Bahdanau
//! form), whose weights need not sum to one (see [`chi_ca::CaAttention`]).
//!
//! Choices where the papers leave room (stated here, and in the experiment notes): the decoder's
//! initial state is the encoder's final state of the same layer (the forward direction's when
//! bidirectional); the decoder has as many layers as the encoder; no dropout; Xavier-uniform
//! matrices, zero biases, `N(0, 1)` embeddings.
//!
//! Masks: padded source positions get exactly zero attention weight and zero gradient; padded
//! target positions are left out of the loss, so they get exactly zero gradient too.

use crate::error::Seq2SeqError;
use crate::vocab::{Padded, BOS, PAD};
use chi_autodiff::{Float, Reduction, Rng, Tensor};
use chi_ca::{CaAttention, CaRnnCell, CaRnnConfig, ChiForm};
use chi_nn::layers::{
    reverse_padded, run_sequence_batch_stacked, AdditiveScore, Attention, AttentionScore, ConcatScore, DotScore, Embedding, GeneralScore,
    GruCell, GruVariant, Linear, LocalAttention, LstmCell, RecurrentCell,
};
use chi_nn::params::ParamStore;

/// The recurrent cell of encoder and decoder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellKind {
    /// LSTM without peepholes.
    Lstm,
    /// GRU (reset gate before the recurrent matmul, as in the seeds).
    Gru,
    /// The context-aware RNN cell of CAML §3.4 (vector peephole).
    CaRnn,
}

impl CellKind {
    /// The cell's name: `lstm`, `gru`, `ca-rnn`.
    pub fn name(&self) -> &'static str {
        match self {
            CellKind::Lstm => "lstm",
            CellKind::Gru => "gru",
            CellKind::CaRnn => "ca-rnn",
        }
    }

    /// The cell of a [`CellKind::name`].
    pub fn from_name(name: &str) -> Option<CellKind> {
        [CellKind::Lstm, CellKind::Gru, CellKind::CaRnn].into_iter().find(|c| c.name() == name)
    }
}

/// The decoder's attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttentionKind {
    /// Softmax over the additive score `vᵀ tanh(W₁ q + W₂ h̄_s)` (Bahdanau et al. 2014).
    Bahdanau,
    /// Softmax over `qᵀ h̄_s` (Luong et al. 2015, dot); needs `D = H`.
    LuongDot,
    /// Softmax over `qᵀ W h̄_s` (Luong, general).
    LuongGeneral,
    /// Softmax over `vᵀ tanh(W [q ; h̄_s])` (Luong, concat).
    LuongConcat,
    /// Luong's local-p attention with the general score and half-window `d`.
    LocalP {
        /// Half-window `D` (window `2D + 1`).
        d: usize,
    },
    /// CA-ATT with χ in the Luong form `σ(qᵀ W h̄_s + b)`.
    CaAttLuong,
    /// CA-ATT with χ in the Bahdanau form `σ(vᵀ tanh(W₁ q + W₂ h̄_s) + b)`.
    CaAttBahdanau,
}

impl AttentionKind {
    /// Every variant (local-p with `d = 2`), for sweeps and tests.
    pub const ALL: [AttentionKind; 7] = [
        AttentionKind::Bahdanau,
        AttentionKind::LuongDot,
        AttentionKind::LuongGeneral,
        AttentionKind::LuongConcat,
        AttentionKind::LocalP { d: 2 },
        AttentionKind::CaAttLuong,
        AttentionKind::CaAttBahdanau,
    ];

    /// The attention of a [`AttentionKind::spec`]: a [`AttentionKind::name`], local-p as
    /// `local-p:D` with its half-window.
    pub fn from_spec(spec: &str) -> Option<AttentionKind> {
        if let Some(d) = spec.strip_prefix("local-p:") {
            return d.parse().ok().map(|d| AttentionKind::LocalP { d });
        }
        AttentionKind::ALL.into_iter().find(|k| k.name() == spec && !matches!(k, AttentionKind::LocalP { .. }))
    }

    /// The name with local-p's half-window (`local-p:D`): what [`AttentionKind::from_spec`] reads.
    pub fn spec(&self) -> String {
        match self {
            AttentionKind::LocalP { d } => format!("local-p:{d}"),
            other => other.name().to_string(),
        }
    }

    /// A short name (`bahdanau`, `luong-dot`, `luong-general`, `luong-concat`, `local-p`,
    /// `ca-att-luong`, `ca-att-bahdanau`).
    pub fn name(&self) -> &'static str {
        match self {
            AttentionKind::Bahdanau => "bahdanau",
            AttentionKind::LuongDot => "luong-dot",
            AttentionKind::LuongGeneral => "luong-general",
            AttentionKind::LuongConcat => "luong-concat",
            AttentionKind::LocalP { .. } => "local-p",
            AttentionKind::CaAttLuong => "ca-att-luong",
            AttentionKind::CaAttBahdanau => "ca-att-bahdanau",
        }
    }
}

/// Sizes and choices of a [`Seq2Seq`] model.
#[derive(Clone, Debug, PartialEq)]
pub struct Seq2SeqConfig {
    /// Source vocabulary size (ids `0..src_vocab`).
    pub src_vocab: usize,
    /// Target vocabulary size.
    pub tgt_vocab: usize,
    /// Embedding size (source and target).
    pub emb: usize,
    /// Hidden size `H` of every layer.
    pub hidden: usize,
    /// Layers of encoder and of decoder (≥ 1).
    pub layers: usize,
    /// Bidirectional encoder (annotations `[h→ ; h←]`, `D = 2H`).
    pub bidirectional: bool,
    /// Cell of encoder and decoder.
    pub cell: CellKind,
    /// The attention.
    pub attention: AttentionKind,
    /// Luong's input feeding instead of the previous-state wiring.
    pub input_feeding: bool,
    /// Width of additive / concat scores and of local-p's position predictor.
    pub attn_dim: usize,
}

impl Default for Seq2SeqConfig {
    fn default() -> Self {
        Seq2SeqConfig {
            src_vocab: 0,
            tgt_vocab: 0,
            emb: 32,
            hidden: 64,
            layers: 1,
            bidirectional: false,
            cell: CellKind::Lstm,
            attention: AttentionKind::LuongGeneral,
            input_feeding: false,
            attn_dim: 32,
        }
    }
}

impl Seq2SeqConfig {
    /// Checks sizes and combinations before any parameter is allocated.
    pub fn validate(&self) -> Result<(), Seq2SeqError> {
        let bad = |what: &str| Err(Seq2SeqError::Config(what.to_string()));
        const MAX: usize = 1 << 20;
        if self.src_vocab < 5 || self.tgt_vocab < 5 {
            return bad(&format!("vocabularies need the 4 specials and at least one token (src {}, tgt {})", self.src_vocab, self.tgt_vocab));
        }
        for (name, v, max) in [("emb", self.emb, MAX), ("hidden", self.hidden, MAX), ("layers", self.layers, MAX_LAYERS), ("attn_dim", self.attn_dim, MAX)] {
            if v == 0 || v > max {
                return bad(&format!("{name} = {v} is out of range 1..={max}"));
            }
        }
        if self.layers > MAX_LAYERS {
            return bad(&format!("layers = {} is out of range 1..={MAX_LAYERS}", self.layers));
        }
        // Every tensor must fit the per-tensor limit on its own; the total below does not
        // bound the largest one.
        for (what, dims) in self.largest_tensors() {
            chi_nn::limits::check_elements(what, &dims).map_err(|e| Seq2SeqError::Config(e.to_string()))?;
        }
        let elems = (self.src_vocab + self.tgt_vocab) as u128 * self.emb as u128
            + self.tgt_vocab as u128 * self.hidden as u128
            + 8 * self.layers as u128 * (self.hidden as u128 + self.emb as u128) * self.hidden as u128;
        if elems > chi_nn::limits::max_tensor_elements() as u128 * 4 {
            return bad(&format!("about {elems} parameters is more than the size limit allows"));
        }
        if self.attention == AttentionKind::LuongDot && self.bidirectional {
            return bad("luong-dot attention needs the query size (hidden) to equal the annotation size (2·hidden when bidirectional); use luong-general");
        }
        if let AttentionKind::LocalP { d } = self.attention {
            if d == 0 {
                return bad("local-p half-window d must be ≥ 1");
            }
        }
        Ok(())
    }

    /// Annotation size `D`.
    pub fn annotation_dim(&self) -> usize {
        if self.bidirectional {
            2 * self.hidden
        } else {
            self.hidden
        }
    }

    /// Shapes that bound every parameter tensor of the model from above, by element count
    /// (each real tensor has at most as many elements as one of these), named for errors.
    /// Only meaningful once the sizes are known to be at most 2^20 (as [`validate`] checks
    /// first), so that no dimension here overflows.
    ///
    /// [`validate`]: Seq2SeqConfig::validate
    fn largest_tensors(&self) -> Vec<(&'static str, [usize; 2])> {
        let (h, d, e, a) = (self.hidden, self.annotation_dim(), self.emb, self.attn_dim);
        // Widest input any cell sees: the first decoder layer's `[embedding ; context]`.
        let input = e + d;
        let cell = match self.cell {
            CellKind::Lstm => [input.max(h), 4 * h],
            CellKind::Gru => [input.max(h), 3 * h],
            CellKind::CaRnn => [3 * h + input, h],
        };
        vec![
            ("source embedding", [self.src_vocab, e]),
            ("target embedding", [self.tgt_vocab, e]),
            ("recurrent cell weight", cell),
            ("attention weight", [h + d, a.max(h)]),
            ("output layer weight", [h + d, h]),
            ("output projection weight", [h, self.tgt_vocab]),
        ]
    }

    /// A lower bound on the number of parameter elements of the model: its embeddings, output
    /// layers and the recurrent matrices of every cell. A weights file holding fewer elements
    /// cannot be this model, which lets a loader reject it before building anything. Call
    /// after [`validate`](Seq2SeqConfig::validate).
    pub fn min_parameter_count(&self) -> u128 {
        let (h, d, e) = (self.hidden as u128, self.annotation_dim() as u128, self.emb as u128);
        let cell = |input: u128| match self.cell {
            CellKind::Lstm => (input + h) * 4 * h,
            CellKind::Gru => (input + h) * 3 * h,
            CellKind::CaRnn => (7 * h + 4 * input) * h,
        };
        let layers = self.layers as u128;
        let directions = if self.bidirectional { 2 } else { 1 };
        let encoder = directions * (cell(e) + (layers - 1) * cell(d));
        let dec_in = e + if self.input_feeding { h } else { d };
        let decoder = cell(dec_in) + (layers - 1) * cell(h);
        (self.src_vocab + self.tgt_vocab) as u128 * e + encoder + decoder + (h + d) * h + h * self.tgt_vocab as u128
    }
}

/// Most encoder (and decoder) layers a configuration may ask for: deeper stacks are far
/// beyond what these models are trained with, and each layer costs several tensors, so a
/// bound keeps a configuration value from requesting millions of them.
pub const MAX_LAYERS: usize = 64;

enum Attend<T: Float> {
    Global(Attention<T>),
    Local(LocalAttention<T>),
    Ca(CaAttention<T>),
}

/// The encoded source: annotations and masks, ready for attention.
pub struct Memory<T: Float> {
    /// Annotations `h̄ [B, S, D]` (zero at padded positions).
    pub keys: Tensor<T>,
    prepared: Option<Tensor<T>>,
    mask: Vec<bool>,
    mask_t: Tensor<T>,
    /// Source lengths.
    pub lengths: Vec<usize>,
}

impl<T: Float> Memory<T> {
    /// The memory of the rows `idx` (repeats allowed), for beam search.
    pub fn select(&self, idx: &[usize]) -> Memory<T> {
        let s = self.keys.dim(1);
        Memory {
            keys: self.keys.index_select(0, idx),
            prepared: self.prepared.as_ref().map(|p| p.index_select(0, idx)),
            mask: idx.iter().flat_map(|&b| self.mask[b * s..(b + 1) * s].iter().copied()).collect(),
            mask_t: self.mask_t.index_select(0, idx),
            lengths: idx.iter().map(|&b| self.lengths[b]).collect(),
        }
    }
}

/// A hand-built [`Padded`] (its fields are public) holds `batch × max_len` ids and lengths of
/// at most `max_len`: an error naming `what` otherwise (the layers would panic on it).
fn check_padded(what: &str, p: &Padded) -> Result<(), Seq2SeqError> {
    if p.ids.len() != p.batch() * p.max_len {
        return Err(Seq2SeqError::Input(format!("{what}: {} ids for {} rows of max_len {}", p.ids.len(), p.batch(), p.max_len)));
    }
    if let Some(l) = p.lengths.iter().find(|&&l| l > p.max_len) {
        return Err(Seq2SeqError::Input(format!("{what}: a length {l} is past max_len {}", p.max_len)));
    }
    Ok(())
}

/// The decoder's recurrent state between steps.
#[derive(Clone)]
pub struct DecoderState<T: Float> {
    /// Per layer, the cell's state tensors (`[B, H]` each).
    pub cells: Vec<Vec<Tensor<T>>>,
    /// Input feeding: `õ_{t−1} [B, H]`.
    pub feed: Option<Tensor<T>>,
}

impl<T: Float> DecoderState<T> {
    /// The state of rows `idx` (beam search).
    pub fn select(&self, idx: &[usize]) -> DecoderState<T> {
        DecoderState {
            cells: self.cells.iter().map(|l| l.iter().map(|t| t.index_select(0, idx)).collect()).collect(),
            feed: self.feed.as_ref().map(|f| f.index_select(0, idx)),
        }
    }
}

/// One decoder step's result.
pub struct Step<T: Float> {
    /// `[B, tgt_vocab]`.
    pub logits: Tensor<T>,
    /// Attention weights `[B, S]` (for CA-ATT: the importances `1 − χ`, zero at padding).
    pub weights: Tensor<T>,
    /// The state after the step.
    pub state: DecoderState<T>,
}

/// A teacher-forced pass over a batch.
pub struct TeacherForced<T: Float> {
    /// Mean negative log-likelihood per real target token (the training loss).
    pub loss: Tensor<T>,
    /// Sum of the negative log-likelihoods (for perplexity).
    pub total_nll: f64,
    /// Real target tokens.
    pub tokens: usize,
    /// The logits of every step, time-major `[T, B, V]` (for top-k accuracy).
    pub logits: Tensor<T>,
}

/// An attention encoder–decoder (see the module docs). Parameters live in [`Seq2Seq::store`]
/// with names `src_emb.weight`, `enc{l}.{fwd,bwd}.…`, `dec{l}.…`, `tgt_emb.weight`, `attn.…`,
/// `out.…`, `proj.…`.
pub struct Seq2Seq<T: Float> {
    /// The configuration it was built with.
    pub config: Seq2SeqConfig,
    /// All parameters.
    pub store: ParamStore<T>,
    src_emb: Embedding<T>,
    tgt_emb: Embedding<T>,
    enc_fwd: Vec<Box<dyn RecurrentCell<T>>>,
    enc_bwd: Vec<Box<dyn RecurrentCell<T>>>,
    dec: Vec<Box<dyn RecurrentCell<T>>>,
    attend: Attend<T>,
    /// `W_o` (previous-state wiring) or `W_c` (input feeding): `[H + D] → H`.
    out: Linear<T>,
    /// `W_s`: `H → tgt_vocab`.
    proj: Linear<T>,
}

fn make_cell<T: Float>(kind: CellKind, store: &mut ParamStore<T>, prefix: &str, input: usize, hidden: usize, rng: &mut Rng) -> Box<dyn RecurrentCell<T>> {
    match kind {
        CellKind::Lstm => Box::new(LstmCell::new(store, prefix, "rnn", input, hidden, false, rng)),
        CellKind::Gru => Box::new(GruCell::new(store, prefix, "rnn", input, hidden, GruVariant::ResetBeforeMatmul, rng)),
        CellKind::CaRnn => Box::new(CaRnnCell::new(store, prefix, input, hidden, CaRnnConfig::default(), rng)),
    }
}

impl<T: Float> Seq2Seq<T> {
    /// Builds the model with parameters drawn from `Rng::new(seed)`.
    pub fn new(config: &Seq2SeqConfig, seed: u64) -> Result<Self, Seq2SeqError> {
        config.validate()?;
        let c = config;
        let mut rng = Rng::new(seed);
        let mut store = ParamStore::new();
        let (h, d, e, a) = (c.hidden, c.annotation_dim(), c.emb, c.attn_dim);
        let src_emb = Embedding::in_store(&mut store, "src_emb", "emb", c.src_vocab, e, false, &mut rng);
        let mut enc_fwd = Vec::new();
        let mut enc_bwd = Vec::new();
        for l in 0..c.layers {
            let input = if l == 0 { e } else { d };
            enc_fwd.push(make_cell(c.cell, &mut store, &format!("enc{l}.fwd"), input, h, &mut rng));
            if c.bidirectional {
                enc_bwd.push(make_cell(c.cell, &mut store, &format!("enc{l}.bwd"), input, h, &mut rng));
            }
        }
        let tgt_emb = Embedding::in_store(&mut store, "tgt_emb", "emb", c.tgt_vocab, e, false, &mut rng);
        let dec_in = e + if c.input_feeding { h } else { d };
        let dec = (0..c.layers).map(|l| make_cell(c.cell, &mut store, &format!("dec{l}"), if l == 0 { dec_in } else { h }, h, &mut rng)).collect();
        let s = &mut store;
        let attend = match c.attention {
            AttentionKind::Bahdanau => Attend::Global(Attention::new(Box::new(AdditiveScore::new(s, "attn", "attn", h, d, a, &mut rng)))),
            AttentionKind::LuongDot => Attend::Global(Attention::new(Box::new(DotScore))),
            AttentionKind::LuongGeneral => Attend::Global(Attention::new(Box::new(GeneralScore::new(s, "attn", "attn", h, d, &mut rng)))),
            AttentionKind::LuongConcat => Attend::Global(Attention::new(Box::new(ConcatScore::new(s, "attn", "attn", h, d, a, &mut rng)))),
            AttentionKind::LocalP { d: half } => {
                let score: Box<dyn AttentionScore<T>> = Box::new(GeneralScore::new(s, "attn.score", "attn", h, d, &mut rng));
                Attend::Local(LocalAttention::new(s, "attn", "attn", score, h, a, half, &mut rng))
            }
            AttentionKind::CaAttLuong => Attend::Ca(CaAttention::new(s, "attn", ChiForm::Luong, d, h, &mut rng)),
            AttentionKind::CaAttBahdanau => Attend::Ca(CaAttention::new(s, "attn", ChiForm::Bahdanau { attn_dim: a }, d, h, &mut rng)),
        };
        let out = Linear::in_store(s, "out", "out", h + d, h, true, &mut rng);
        let proj = Linear::in_store(s, "proj", "out", h, c.tgt_vocab, true, &mut rng);
        Ok(Seq2Seq { config: c.clone(), store, src_emb, tgt_emb, enc_fwd, enc_bwd, dec, attend, out, proj })
    }

    fn check_ids(&self, what: &str, ids: &[usize], vocab: usize) -> Result<(), Seq2SeqError> {
        match ids.iter().position(|&i| i >= vocab) {
            Some(p) => Err(Seq2SeqError::Input(format!("{what} id {} at position {p} is out of range for a vocabulary of {vocab}", ids[p]))),
            None => Ok(()),
        }
    }

    /// Encodes a padded source batch (every length ≥ 1): annotations, masks and the decoder's
    /// initial state.
    pub fn encode(&self, src: &Padded) -> Result<(Memory<T>, DecoderState<T>), Seq2SeqError> {
        if src.batch() == 0 || src.lengths.contains(&0) {
            return Err(Seq2SeqError::Input("every source sequence needs at least one token".into()));
        }
        check_padded("source", src)?;
        self.check_ids("source", &src.ids, self.config.src_vocab)?;
        let (b, s) = (src.batch(), src.max_len);
        let lengths = Some(src.lengths.as_slice());
        let mut x = self.src_emb.forward_shaped(&src.ids, &[b, s]);
        let mut finals = Vec::with_capacity(self.config.layers);
        for l in 0..self.config.layers {
            let (fwd, state) = run_sequence_batch_stacked(self.enc_fwd[l].as_ref(), &x, None, lengths);
            x = if self.config.bidirectional {
                let (outs_b, _) = run_sequence_batch_stacked(self.enc_bwd[l].as_ref(), &reverse_padded(&x, lengths), None, lengths);
                let bwd = reverse_padded(&outs_b, lengths);
                Tensor::concat(&[fwd, bwd], 2)
            } else {
                fwd
            };
            finals.push(state);
        }
        let mask = src.mask();
        let mask_t = Tensor::from_vec(mask.iter().map(|&m| if m { T::ONE } else { T::ZERO }).collect(), &[b, s]);
        let prepared = match &self.attend {
            Attend::Global(a) => Some(a.prepare(&x)),
            _ => None,
        };
        let feed = self.config.input_feeding.then(|| Tensor::zeros(&[b, self.config.hidden]));
        Ok((Memory { keys: x, prepared, mask, mask_t, lengths: src.lengths.clone() }, DecoderState { cells: finals, feed }))
    }

    fn attention(&self, q: &Tensor<T>, mem: &Memory<T>) -> (Tensor<T>, Tensor<T>) {
        match &self.attend {
            Attend::Global(a) => {
                let o = a.forward_prepared(q, mem.prepared.as_ref().expect("prepared keys"), &mem.keys, Some(&mem.mask));
                (o.context, o.weights)
            }
            Attend::Local(a) => {
                let (o, _) = a.forward(q, &mem.keys, &mem.keys, Some(&mem.mask));
                (o.context, o.weights)
            }
            Attend::Ca(a) => {
                let (ctx, chi) = a.forward(&mem.keys, q, Some(&mem.mask_t));
                (ctx, chi.rsub_scalar(1.0).mul(&mem.mask_t))
            }
        }
    }

    /// One decoder step from `state` with previous target tokens `prev [B]`.
    pub fn step(&self, mem: &Memory<T>, state: &DecoderState<T>, prev: &[usize]) -> Step<T> {
        let (o, weights, state) = self.step_attentional(mem, state, prev);
        Step { logits: self.proj.forward(&o), weights, state }
    }

    /// One decoder step up to the attentional vector `o [B, H]` (the input of the output
    /// projection): `(o, attention weights, new state)`.
    fn step_attentional(&self, mem: &Memory<T>, state: &DecoderState<T>, prev: &[usize]) -> (Tensor<T>, Tensor<T>, DecoderState<T>) {
        let emb = self.tgt_emb.forward(prev);
        let top = |cells: &[Vec<Tensor<T>>]| self.dec[self.dec.len() - 1].output(&cells[cells.len() - 1]);
        let run = |mut x: Tensor<T>| {
            let mut cells = Vec::with_capacity(self.dec.len());
            for (cell, st) in self.dec.iter().zip(&state.cells) {
                let new = cell.step(&x, st);
                x = cell.output(&new);
                cells.push(new);
            }
            (x, cells)
        };
        if let Some(feed) = &state.feed {
            let (h, cells) = run(Tensor::concat(&[emb, feed.clone()], 1));
            let (ctx, weights) = self.attention(&h, mem);
            let o = self.out.forward(&Tensor::concat(&[ctx, h], 1)).tanh();
            (o.clone(), weights, DecoderState { cells, feed: Some(o) })
        } else {
            let (ctx, weights) = self.attention(&top(&state.cells), mem);
            let (h, cells) = run(Tensor::concat(&[emb, ctx.clone()], 1));
            let o = self.out.forward(&Tensor::concat(&[h, ctx], 1)).tanh();
            (o, weights, DecoderState { cells, feed: None })
        }
    }

    /// Teacher-forced pass: targets `tgt` (each ending with `EOS`, as [`crate::Vocab::encode`]
    /// makes them); decoder inputs are `BOS` then the targets shifted right. The loss is the mean
    /// negative log-likelihood over real target tokens; padded positions contribute nothing.
    pub fn teacher_forced(&self, src: &Padded, tgt: &Padded) -> Result<TeacherForced<T>, Seq2SeqError> {
        if src.batch() != tgt.batch() {
            return Err(Seq2SeqError::Input(format!("{} source rows for {} target rows", src.batch(), tgt.batch())));
        }
        if tgt.lengths.contains(&0) {
            return Err(Seq2SeqError::Input("every target sequence needs at least one token (its EOS)".into()));
        }
        check_padded("target", tgt)?;
        self.check_ids("target", &tgt.ids, self.config.tgt_vocab)?;
        let (mem, mut state) = self.encode(src)?;
        let (b, steps) = (tgt.batch(), tgt.max_len);
        let mut prev = vec![BOS; b];
        let tokens: usize = tgt.lengths.iter().sum();
        // The decoder's states do not depend on its logits under teacher forcing, so the output
        // projection runs once over every step ([T·B, H] × [H, V]) instead of once per step:
        // the projection weight is packed once, and the product has T·B rows instead of B.
        let mut attentional = Vec::with_capacity(steps);
        let (mut targets, mut keep) = (Vec::with_capacity(steps * b), Vec::with_capacity(steps * b));
        for t in 0..steps {
            let y = tgt.column(t);
            let (o, _, next) = self.step_attentional(&mem, &state, &prev);
            attentional.push(o);
            keep.extend(tgt.lengths.iter().map(|&l| if t < l { T::ONE } else { T::ZERO }));
            targets.extend_from_slice(&y);
            state = next;
            prev = y.iter().map(|&i| if i == PAD { BOS } else { i }).collect();
        }
        let hidden = attentional[0].dim(1);
        let vocab = self.config.tgt_vocab;
        let logits = self.proj.forward(&Tensor::stack(&attentional, 0).reshape(&[steps * b, hidden])).reshape(&[steps, b, vocab]);
        let total = logits.reshape(&[steps * b, vocab]).cross_entropy_with(&targets, Reduction::None).mul(&Tensor::from_vec(keep, &[steps * b])).sum();
        let total_nll = total.item().to_f64();
        Ok(TeacherForced { loss: total.mul_scalar(1.0 / tokens as f64), total_nll, tokens, logits })
    }
}
