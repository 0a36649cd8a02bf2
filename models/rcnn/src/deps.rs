//! Everything this crate takes from chi-nn, in one place, so that the path can be re-pointed
//! when the model library moves.

pub use chi_nn::gradcheck::perturb;
pub use chi_nn::layers::{reverse_padded, run_sequence_batch, stack_outputs, Dropout, Embedding, Linear, LstmCell, RecurrentCell};
pub use chi_nn::dist::{GradSync, Group};
pub use chi_nn::optim::{Grad, Grads, OptimConfig, Optimizer};
pub use chi_nn::params::{init, Param, ParamStore};
