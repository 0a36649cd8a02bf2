//! Graph export (in progress).
