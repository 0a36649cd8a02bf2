//! The quick variants of the sequence-to-sequence experiments, end to end through the `chi`
//! binary, when their data is fetched (`scripts/fetch-data.sh --only bible --only cmudict`);
//! the test says so and passes when it is absent.

use std::process::Command;

#[test]
fn quick_nmt_and_g2p_experiments_run_and_report_every_variant() {
    let data = chi_nn::data::data_dir();
    if !data.join("bible").join("kjv").join("nt.bzv").is_file() || !data.join("cmudict").join("cmudict.dict").is_file() {
        eprintln!("skipped: bible or cmudict missing under {}; run scripts/fetch-data.sh --only bible --only cmudict", data.display());
        return;
    }
    let dir = std::env::temp_dir().join(format!("chi-s2s-reproduce-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_chi"))
        .args(["reproduce", "nmt-attention", "nmt-cells", "g2p-cmudict", "--quick", "--json"])
        .current_dir(&dir)
        .env("CHI_DATA", &data)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<serde_json::Value> = text.lines().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).unwrap()).collect();
    let models = |exp: &str| -> std::collections::BTreeSet<String> {
        rows.iter().filter(|r| r["experiment"] == exp).map(|r| r["model"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(models("nmt-attention").len(), 5, "{text}");
    assert_eq!(models("nmt-cells").len(), 3);
    assert_eq!(models("g2p-cmudict").len(), 3);
    for r in &rows {
        let mean = r["chi_mean"].as_f64().unwrap();
        assert!(mean.is_finite(), "{r}");
        if r["metric"].as_str().unwrap().contains("accuracy") {
            assert!((0.0..=1.0).contains(&mean), "{r}");
        }
    }
    // Every unit left its record, and the curves were written.
    for (exp, n) in [("nmt-attention", 5), ("nmt-cells", 3), ("g2p-cmudict", 3)] {
        let units = std::fs::read_dir(dir.join("runs").join("reproduce").join(exp).join("units")).map(|d| d.count()).unwrap_or(0);
        assert_eq!(units, n, "{exp}");
        assert!(dir.join("runs").join("reproduce").join(exp).join("valid_top5.svg").is_file(), "{exp}");
    }
    // chi translate on the saved models: G2P reads characters, NMT words; one output line per
    // input line, and one heat map per line.
    let g2p = dir.join("runs/reproduce/g2p-cmudict/models/ca-rnn-run0.safetensors");
    let nmt = dir.join("runs/reproduce/nmt-attention/models/ca-att-luong-run0.safetensors");
    let input = dir.join("in.txt");
    std::fs::write(&input, "hello\n\nworld\n").unwrap();
    for model in [&g2p, &nmt] {
        let heat = dir.join("heat");
        let out = Command::new(env!("CARGO_BIN_EXE_chi"))
            .args(["translate", model.to_str().unwrap(), "--beam", "3", "--max-len", "12", "--input", input.to_str().unwrap(), "--heatmap", heat.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 3);
        let svg = std::fs::read_to_string(heat.join("line-0003.svg")).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("<rect x=") && svg.contains("&lt;/s&gt;"), "{svg}");
        assert!(!heat.join("line-0002.svg").exists());
        std::fs::remove_dir_all(&heat).unwrap();
    }
    // A translation that fails replaces no earlier maps; a map as the input, or a file as the
    // folder, is refused; `--input -` reads standard input.
    let chi = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_chi")).args(args).output().unwrap();
    let heat = dir.join("heat2");
    let (g, i, h) = (g2p.to_str().unwrap(), input.to_str().unwrap(), heat.to_str().unwrap());
    assert!(chi(&["translate", g, "--input", i, "--heatmap", h]).status.success());
    let failed = chi(&["translate", g, "--input", "/nonexistent/in.txt", "--heatmap", h]);
    assert_eq!(failed.status.code(), Some(1));
    assert!(heat.join("line-0001.svg").is_file() && heat.join("line-0003.svg").is_file(), "a failed run removed the earlier maps");
    let map = heat.join("line-0001.svg");
    let err = String::from_utf8_lossy(&chi(&["translate", g, "--input", map.to_str().unwrap(), "--heatmap", h]).stderr).to_string();
    assert!(err.contains("is one of the heat maps") && map.is_file(), "{err}");
    let err = String::from_utf8_lossy(&chi(&["translate", g, "--input", i, "--heatmap", i]).stderr).to_string();
    assert!(err.contains("is a file; name a folder"), "{err}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_chi")).args(["translate", g, "--input", "-"]).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"hello\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).lines().count() == 1);
    // Bad input: clear errors, exit code 1.
    let bad = dir.join("bad.safetensors");
    std::fs::write(&bad, b"\x08\0\0\0\0\0\0\0{}garbage").unwrap();
    for (args, want) in [
        (vec!["translate", g2p.to_str().unwrap(), "--beam", "0"], "--beam 0 is out of range"),
        (vec!["translate", g2p.to_str().unwrap(), "--alpha", "NaN"], "--alpha NaN is out of range"),
        (vec!["translate", "/nonexistent/model.safetensors"], "/nonexistent/model.safetensors"),
        (vec!["translate", bad.to_str().unwrap()], "bad.safetensors"),
        (vec!["translate", g2p.to_str().unwrap(), "--input", "/nonexistent/in.txt"], "/nonexistent/in.txt"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_chi")).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
