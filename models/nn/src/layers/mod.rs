//! Layers. Every layer is generic over the element type (`f32` for training, `f64` for
//! gradient checks), implements [`crate::Parameterized`] (and [`crate::Module`] when its
//! forward pass maps one tensor to one tensor), and has a whole-layer gradcheck on a small
//! instance in its tests (`models/nn/tests/suite/layers.rs`).
//!
//! Conventions shared by all layers:
//! * the common layers have builder constructors, PyTorch-style: `Linear::new(in, out)`,
//!   `Embedding::new(vocab, dim)`, `LayerNorm::new(dim)`, `Conv2d::new(c_in, c_out, k)`,
//!   `Conv1dText::new(emb, widths, n_filters)`, `Dropout::new(p)`, with options as methods
//!   (`.no_bias()`, `.seed(s)`, …); their parameters are free-standing and initialised from
//!   the thread's seeded stream ([`crate::manual_seed`]);
//! * every layer can instead register its parameters in a [`crate::params::ParamStore`]:
//!   `in_store(store, prefix, group, …sizes/options…, rng)` for the layers above, `new(store,
//!   prefix, group, …)` for recurrent cells, attention scores and embedding bags; parameters
//!   are named `"{prefix}.{weight|bias|…}"` (just the suffix if `prefix` is empty) and put in
//!   `group`;
//! * weight matrices are stored `[in, out]`, so a forward pass is `x.matmul(W)` (no transpose);
//! * layers keep [`crate::params::Param`] handles and read them with `get()` in `forward`, so
//!   optimisers and [`crate::gradcheck::check_model`] can swap values in place.
//!
//! | module | layers |
//! |---|---|
//! | [`linear`] | [`Linear`] |
//! | [`embedding`] | [`Embedding`] (dense or row-sparse gradients), [`EmbeddingBag`] |
//! | [`conv`] | [`Conv1dText`] (Kim 2014), [`Conv2d`], [`MaxPool2d`], [`MaxPool1d`] |
//! | [`dropout`] | [`Dropout`] |
//! | [`norm`] | [`LayerNorm`] |
//! | [`rnn`] | [`RnnCell`], [`LstmCell`], [`GruCell`], [`run_sequence`], [`run_sequence_batch`], [`Bidirectional`] |
//! | [`attention`] | [`AttentionScore`] (dot, general, concat, Bahdanau), [`Attention`], [`LocalAttention`], [`SelfAttention`] |

use chi_autodiff::{Float, Tensor};

pub mod attention;
pub mod conv;
pub mod dropout;
pub mod embedding;
pub mod linear;
pub mod norm;
pub mod rnn;

pub use attention::{
    attend, masked_softmax, AdditiveScore, Attention, AttentionOutput, AttentionScore, ConcatScore, DotScore, GeneralScore, LocalAttention,
    SelfAttention,
};
pub use crate::activation::Activation;
pub use conv::{Conv1dText, Conv2d, MaxPool1d, MaxPool2d};
pub use dropout::Dropout;
pub use embedding::{BagMode, Embedding, EmbeddingBag};
pub use linear::Linear;
pub use norm::LayerNorm;
pub use rnn::{reverse_padded, with_stepwise_recurrence, stepwise_recurrence, run_sequence, run_sequence_batch, run_sequence_batch_held, run_sequence_batch_stacked, stack_outputs, BiOutput, Bidirectional, GruCell, GruVariant, LstmCell, RnnCell};

/// The full name of a parameter: `"{prefix}.{name}"`, or `name` when `prefix` is empty.
pub fn param_name(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

/// One step of a recurrent network. LSTM, GRU, Elman RNN and the context-aware CA-RNN cell all
/// implement it, so any sequence model can swap one cell for another.
///
/// The state is a list of tensors, each `[batch, hidden]` (`[h]` for Elman/GRU/CA-RNN,
/// `[h, c]` for LSTM). By convention the first element is the output `h_t`.
///
/// Cells may split a step into a state-independent part ([`RecurrentCell::project_inputs`],
/// `x·W_ih + b` for all gates at once) and the recurrent rest
/// ([`RecurrentCell::step_projected`]). The sequence runners then project a whole
/// `[batch, time, input]` sequence with one matmul instead of one per step.
pub trait RecurrentCell<T: Float> {
    /// Size of each input vector.
    fn input_size(&self) -> usize;
    /// Size of the hidden state `h`.
    fn hidden_size(&self) -> usize;
    /// The zero state for a batch.
    fn init_state(&self, batch: usize) -> Vec<Tensor<T>>;
    /// One step: input `x` (`[batch, input]`) and previous state → new state.
    fn step(&self, x: &Tensor<T>, state: &[Tensor<T>]) -> Vec<Tensor<T>>;
    /// The output read from a state (default: its first element).
    fn output(&self, state: &[Tensor<T>]) -> Tensor<T> {
        state[0].clone()
    }
    /// A short name ("lstm", "gru", "rnn", "ca-rnn").
    fn name(&self) -> &'static str;
    /// The state-independent part of a step for any number of inputs at once:
    /// `[…, input]` → `[…, G]` (e.g. `x·W_ih + b` for all gates). `None` (the default) means
    /// the cell has no such split and runners call [`RecurrentCell::step`].
    fn project_inputs(&self, _xs: &Tensor<T>) -> Option<Tensor<T>> {
        None
    }
    /// A step from an already projected input (`[batch, G]`, one row of
    /// [`RecurrentCell::project_inputs`]). Only called when `project_inputs` returns `Some`.
    fn step_projected(&self, _xp: &Tensor<T>, _state: &[Tensor<T>]) -> Vec<Tensor<T>> {
        panic!("{}: project_inputs returned Some but step_projected is not implemented", self.name())
    }
    /// A whole sequence from projected inputs `xp [batch, time, G]` (as
    /// [`RecurrentCell::project_inputs`] gives them) and an initial state, in one fused op if the
    /// cell has one: the states of every step as one time-major tensor `[time, batch, W]`, whose
    /// row `(t, b)` holds the parts of row `b`'s state after step `t` side by side, in the order
    /// and widths of `state` (`[h, c]` for LSTM), so that the output (the first part, as
    /// [`RecurrentCell::output`] reads it by default) comes first. `keep[t·batch + b]` false
    /// means row `b` does not step at time `t` (its state is carried). `None` (the default):
    /// runners step one at a time. A cell implementing this must not override `output`.
    fn run_projected_stacked(&self, _xp: &Tensor<T>, _state: &[Tensor<T>], _keep: Option<std::rc::Rc<Vec<bool>>>) -> Option<Tensor<T>> {
        None
    }
    /// [`RecurrentCell::run_projected_stacked`] as a list of states, one per step (each a list of
    /// `[batch, ·]` parts, as `state`).
    fn run_projected(&self, xp: &Tensor<T>, state: &[Tensor<T>], keep: Option<std::rc::Rc<Vec<bool>>>) -> Option<Vec<Vec<Tensor<T>>>> {
        let y = self.run_projected_stacked(xp, state, keep)?;
        Some(rnn::unstack_states(&y, state))
    }
}
