//! Listing a corpus folder, shared by the corpus readers.

use crate::error::{Result, TextError};
use std::path::{Path, PathBuf};

/// The regular files of `dir` whose names satisfy `keep`, sorted by name.
pub(crate) fn files(op: &'static str, dir: &Path, keep: impl Fn(&str) -> bool) -> Result<Vec<PathBuf>> {
    let rd = std::fs::read_dir(dir).map_err(|e| TextError::Invalid { op, msg: format!("{}: {e}", dir.display()) })?;
    let mut out = Vec::new();
    for entry in rd {
        let p = entry.map_err(|e| TextError::Invalid { op, msg: format!("{}: {e}", dir.display()) })?.path();
        if p.is_file() && p.file_name().and_then(|n| n.to_str()).is_some_and(&keep) {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

