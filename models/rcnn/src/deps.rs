//! Everything this crate takes from chi-models, in one place, so that the path can be re-pointed
//! when the model library moves.

pub use chi_models::nn::{reverse_padded, Embedding, Linear, LstmCell, RecurrentCell};
pub use chi_models::optim::{OptimConfig, Optimizer};
pub use chi_models::params::{init, Param, ParamStore};
