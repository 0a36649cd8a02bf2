//! chi models (in progress).
