//! Replays every saved fuzz input through the same entry points the fuzz targets use
//! (`chi_cli::fuzzing`): crashes found by the fuzzers are saved in
//! `fuzz/regressions/<target>/` (see `fuzz/README.md`) and stay fixed because the default test
//! command runs them here. Seed inputs in `fuzz/corpus/<target>/`, if any, are replayed too.

use std::path::Path;

#[test]
fn replay_saved_fuzz_inputs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut replayed = 0;
    for (name, f) in chi_cli::fuzzing::TARGETS {
        for kind in ["regressions", "corpus"] {
            let dir = root.join(kind).join(name);
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            let mut files: Vec<_> = entries.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect();
            files.sort();
            for file in files {
                let bytes = std::fs::read(&file).unwrap();
                let r = std::panic::catch_unwind(|| f(&bytes));
                assert!(r.is_ok(), "fuzz target {name} panics again on {}", file.display());
                replayed += 1;
            }
        }
    }
    // The regressions directory exists (with at least its README), so the layout is not lost.
    assert!(root.join("regressions").is_dir(), "fuzz/regressions is missing");
    eprintln!("replayed {replayed} saved fuzz inputs");
}

/// Every target directory named in `fuzz/Cargo.toml` is one of `chi_cli::fuzzing::TARGETS`
/// and vice versa (so a new parser gets a fuzz target and a replay).
#[test]
fn fuzz_targets_match_the_shared_entry_points() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    for (name, _) in chi_cli::fuzzing::TARGETS {
        assert!(manifest.contains(&format!("name = \"{name}\"")), "fuzz/Cargo.toml has no target {name}");
        let src = std::fs::read_to_string(root.join("fuzz_targets").join(format!("{name}.rs"))).unwrap();
        assert!(src.contains(&format!("chi_cli::fuzzing::{name}(")), "fuzz_targets/{name}.rs does not call the shared entry point");
    }
    let bins = manifest.matches("[[bin]]").count();
    assert_eq!(bins, chi_cli::fuzzing::TARGETS.len());
}
