//! chi autodiff (in progress).
