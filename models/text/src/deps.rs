//! Everything this crate takes from `chi-nn` and `chi-ca`, in one place, so that the layer and parameter
//! types can be re-pointed to their new crates without touching the rest of `chi-text`.

pub use chi_ca::rnn::{CaRnnCell, CaRnnConfig};
pub use chi_nn::data::glove::Embeddings;
pub use chi_nn::layers::{run_sequence_batch, Activation, BagMode, Bidirectional, EmbeddingBag, Conv1dText, Dropout, Embedding, GruCell, GruVariant, Linear, LstmCell, RecurrentCell, SelfAttention};
pub use chi_nn::dist::{GradSync, Group};
pub use chi_nn::optim::{Grads, OptimConfig, Optimizer};
pub use chi_nn::params::{init, Param, ParamStore};
