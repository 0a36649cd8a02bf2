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

/// A quick, uninstrumented stand-in for `scripts/fuzz.sh` where cargo-fuzz cannot be built:
/// random byte mutations (flips, inserts, deletes, splices, interesting values) of every saved
/// input, fed to every target for `CHI_FUZZ_SMOKE_SECONDS` seconds per target (default 3). A
/// panicking input is written to `fuzz/artifacts/<target>/smoke-<n>` and fails the test. Ignored
/// by default (it is a search, not a check); run it with
/// `cargo test --release -p chi --test suite fuzz_regressions:: -- --ignored`.
#[test]
#[ignore]
fn random_mutations_of_saved_inputs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let secs: u64 = std::env::var("CHI_FUZZ_SMOKE_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3);
    let only: Vec<String> = std::env::var("CHI_FUZZ_SMOKE_TARGETS").map(|s| s.split(',').map(String::from).collect()).unwrap_or_default();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    // Panics are expected to be caught here: keep their reports short.
    std::panic::set_hook(Box::new(|_| {}));
    let mut failures = Vec::new();
    for (name, f) in chi_cli::fuzzing::TARGETS {
        if !only.is_empty() && !only.iter().any(|o| o == name) {
            continue;
        }
        let mut pool: Vec<Vec<u8>> = vec![Vec::new(), b"RAW".to_vec()];
        for kind in ["regressions", "corpus"] {
            if let Ok(entries) = std::fs::read_dir(root.join(kind).join(name)) {
                pool.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_file() && p.extension().is_none_or(|e| e != "md")).filter_map(|p| std::fs::read(p).ok()));
            }
        }
        let t0 = std::time::Instant::now();
        let mut runs = 0u64;
        while t0.elapsed().as_secs() < secs {
            let mut input = pool[(next() % pool.len() as u64) as usize].clone();
            for _ in 0..1 + next() % 8 {
                let at = if input.is_empty() { 0 } else { (next() % input.len() as u64) as usize };
                match next() % 6 {
                    0 if !input.is_empty() => input[at] ^= 1 << (next() % 8),
                    1 => input.insert(at, next() as u8),
                    2 if !input.is_empty() => {
                        input.remove(at);
                    }
                    3 => {
                        let other = &pool[(next() % pool.len() as u64) as usize];
                        if !other.is_empty() {
                            let from = (next() % other.len() as u64) as usize;
                            let len = (next() % 64) as usize;
                            let piece: Vec<u8> = other[from..(from + len).min(other.len())].to_vec();
                            input.splice(at..at, piece);
                        }
                    }
                    4 => {
                        let vals: [&[u8]; 8] = [b"0", b"-1", b"nan", b"1e309", b"18446744073709551615", &[0xFF], &[0, 0, 0, 0], b"4294967296"];
                        input.splice(at..at, vals[(next() % 8) as usize].iter().copied());
                    }
                    _ if input.len() > 1 => input.truncate(at.max(1)),
                    _ => {}
                }
            }
            input.truncate(65536);
            runs += 1;
            if std::panic::catch_unwind(|| f(&input)).is_err() {
                let dir = root.join("artifacts").join(name);
                let _ = std::fs::create_dir_all(&dir);
                let file = dir.join(format!("smoke-{runs}"));
                let _ = std::fs::write(&file, &input);
                failures.push(format!("{name}: panics on {}", file.display()));
                if pool.len() < 1000 {
                    pool.push(input);
                }
            } else if next() % 64 == 0 && pool.len() < 1000 {
                pool.push(input);
            }
        }
        eprintln!("{name}: {runs} inputs in {secs} s");
    }
    let _ = std::panic::take_hook();
    assert!(failures.is_empty(), "{} panicking inputs:\n{}", failures.len(), failures.join("\n"));
}
