//! Layers. Every layer is generic over the element type (`f32` for training, `f64` for
//! gradient checks), takes its parameters from a [`crate::params::ParamStore`] at construction,
//! and has a whole-layer gradcheck on a small instance in its tests.

use chi_autodiff::{Float, Tensor};

/// One step of a recurrent network. LSTM, GRU, Elman RNN and the context-aware CA-RNN cell all
/// implement it, so any sequence model can swap one cell for another.
///
/// The state is a list of tensors, each `[batch, hidden]` (`[h]` for Elman/GRU/CA-RNN,
/// `[h, c]` for LSTM). By convention the first element is the output `h_t`.
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
}
