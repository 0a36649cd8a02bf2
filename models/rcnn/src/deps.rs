//! Everything this crate takes from chi-models, in one place, so that the path can be re-pointed
//! when the model library moves.

pub use chi_models::nn::{reverse_padded, run_sequence_batch, stack_outputs, Embedding, Linear, LstmCell, RecurrentCell};
pub use chi_models::optim::{OptimConfig, Optimizer};
pub use chi_models::params::{init, Param, ParamStore};
