//! `chi train --model seq2seq` on a user's file of sentence pairs, and the run read back by
//! `chi eval`, `chi predict` and `chi translate`: a reversal "translation" (English digit words
//! to French ones in reverse order) that attention learns in a few hundred steps, so the test can
//! require near-perfect output, and the messages for what such a run does not take.

use std::path::{Path, PathBuf};

use super::user_data::{chi, fails_with, ok, s, text};

const EN: [&str; 10] = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"];
const FR: [&str; 10] = ["zéro", "un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf"];

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chi-s2s-train-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `n` pairs of 3 to 6 digits: `(english, french reversed)`.
fn pairs(n: usize, seed: u64) -> Vec<(String, String)> {
    let mut x = seed;
    let mut next = |m: usize| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((x >> 33) % m as u64) as usize
    };
    (0..n)
        .map(|_| {
            let d: Vec<usize> = (0..3 + next(4)).map(|_| next(10)).collect();
            let en: Vec<&str> = d.iter().map(|&i| EN[i]).collect();
            let fr: Vec<&str> = d.iter().rev().map(|&i| FR[i]).collect();
            (format!("{}.", en.join(" ")), format!("{}.", fr.join(" ")))
        })
        .collect()
}

/// A number after `key ` in chi's `key value, …` output.
fn metric(t: &str, key: &str) -> f64 {
    let at = t.find(&format!("{key} ")).unwrap_or_else(|| panic!("no {key} in:\n{t}"));
    t[at + key.len() + 1..].split(|c: char| c == ',' || c.is_whitespace()).next().unwrap().parse().unwrap()
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

const SMALL: [&str; 8] = ["--model", "seq2seq", "--hidden", "32", "--embed", "16", "--quiet", "--no-plots"];

#[test]
fn trains_on_a_pairs_file_and_eval_predict_translate_read_the_run() {
    let d = tmp("tsv");
    // Tatoeba's layout: no header, a third column of attribution.
    let tsv = d.join("pairs.tsv");
    std::fs::write(&tsv, pairs(800, 1).iter().map(|(a, b)| format!("{a}\t{b}\tCC-BY 2.0\n")).collect::<String>()).unwrap();
    let run = d.join("run");
    let mut args = vec!["--out", s(&run), "train", "--data", s(&tsv), "--steps", "400", "--optim", "adam", "--lr", "0.01"];
    args.extend(SMALL);
    let out = ok(&args);
    assert!(out.contains("line 1 is data (no header: give --header yes") && out.contains("1 other column(s) left unread"), "{out}");
    assert!(out.contains("640 training, 80 validation, 80 test pairs"), "{out}");
    let bleu = metric(&out, "beam_bleu");
    assert!(bleu > 90.0, "the reversal is learned: {out}");
    for f in ["model.safetensors", "seq2seq.json", "log.jsonl", "eval.jsonl", "summary.json"] {
        assert!(run.join(f).is_file(), "{f} missing");
    }
    assert_eq!(std::fs::read_to_string(run.join("log.jsonl")).unwrap().lines().count(), 400);
    let summary = json(&run.join("summary.json"));
    assert!((bleu_of(&summary) - bleu).abs() < 1e-3, "summary.json has the printed test BLEU");
    assert_eq!(summary["train_pairs"], 640);

    // chi eval rebuilds the same test split from seq2seq.json: the same numbers.
    let ev = ok(&["eval", s(&run)]);
    assert!((metric(&ev, "beam_bleu") - bleu_of(&summary)).abs() < 1e-3, "{ev}");
    let report = json(&run.join("eval-test").join("report.json"));
    assert_eq!(report["pairs"], 80);
    let tr = std::fs::read_to_string(run.join("eval-test").join("translations.csv")).unwrap();
    assert_eq!(tr.lines().count(), 81, "a header and one row per test pair");
    assert!(tr.starts_with("source,reference,output\n"));
    // On another file of the same layout, and on two aligned files.
    let held = d.join("held.tsv");
    let more = pairs(30, 99);
    std::fs::write(&held, more.iter().map(|(a, b)| format!("{a}\t{b}\n")).collect::<String>()).unwrap();
    let ev = ok(&["eval", s(&run), "--data", s(&held)]);
    assert!(ev.contains("30 pairs") && metric(&ev, "beam_bleu") > 90.0, "{ev}");
    let (src, tgt) = (d.join("held.en"), d.join("held.fr"));
    std::fs::write(&src, more.iter().map(|p| format!("{}\n", p.0)).collect::<String>()).unwrap();
    std::fs::write(&tgt, more.iter().map(|p| format!("{}\n", p.1)).collect::<String>()).unwrap();
    let ev2 = ok(&["eval", s(&run), "--data", s(&src), "--target", s(&tgt)]);
    assert!((metric(&ev2, "beam_bleu") - metric(&ev, "beam_bleu")).abs() < 1e-9, "{ev}\n{ev2}");

    // chi predict: one row per line, blank lines kept; chi translate: the same outputs.
    // The input's name holds a comma: the line field is quoted.
    let input = d.join("in,put.txt");
    std::fs::write(&input, "One two three.\n\nNine eight seven six.\n").unwrap();
    let p = ok(&["predict", s(&run), "--input", s(&input)]);
    let rows: Vec<&str> = p.lines().filter(|l| l.contains("put.txt:")).collect();
    assert_eq!(rows.len(), 3, "{p}");
    assert!(rows[0].ends_with(",One two three.,trois deux un ."), "{p}");
    assert!(rows[1].ends_with(":2\",,") && rows[1].starts_with('"'), "{p}");
    assert!(rows[2].ends_with(",six sept huit neuf ."), "{p}");
    let o = std::process::Command::new(super::user_data::chi_bin()).args(["translate", s(&run), "--input", s(&input)]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "trois deux un .\n\nsix sept huit neuf .\n");
    fails_with(&["predict", s(&run), "--input", s(&input), "--saliency", "2"], &["chi translate MODEL --heatmap DIR"]);
    fails_with(&["explain", s(&run), "--text", "one two."], &["is a seq2seq model", "--heatmap DIR"]);
    fails_with(&["predict", s(&run), "--input", s(&input), "--output", s(&tsv)], &["is the model's data"]);
    let log = run.join("log.jsonl");
    fails_with(&["predict", s(&run), "--input", s(&input), "--output", s(&log)], &["a file of its run"]);
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 400, "the log is intact");
    // The model file alone (out of its run): its own tokenizer and default decoding.
    let alone = d.join("alone.safetensors");
    std::fs::copy(run.join("model.safetensors"), &alone).unwrap();
    let p2 = ok(&["predict", s(&alone), "--input", s(&input)]);
    assert!(p2.contains(",One two three.,trois deux un ."), "{p2}");
    fails_with(&["eval", s(&alone)], &["no seq2seq.json beside it", "--data FILE"]);

    // The directory is the run's: a second run is refused without --overwrite.
    let mut again = args.clone();
    again[6] = "10";
    fails_with(&again, &["already holds a run", "seq2seq.json"]);
    std::fs::remove_dir_all(&d).ok();
}

fn bleu_of(summary: &serde_json::Value) -> f64 {
    summary["test"]["beam_bleu"].as_f64().unwrap()
}

/// A run stopped at step 30 as a kill during its final test leaves it (checkpoints, logs running
/// past the newest one, no final model), resumed to finish it and then extended to step 60,
/// ends with the weights and logs of a run that never stopped.
#[test]
fn a_stopped_run_resumes_to_the_bytes_of_an_unstopped_one() {
    let d = tmp("resume");
    let tsv = d.join("pairs.tsv");
    std::fs::write(&tsv, pairs(200, 8).iter().map(|(a, b)| format!("{a}\t{b}\n")).collect::<String>()).unwrap();
    let train = |run: &Path, steps: &str| {
        let mut args = vec!["--out", s(run), "train", "--data", s(&tsv), "--steps", steps, "--checkpoint-every", "10", "--eval-every", "10"];
        args.extend(SMALL);
        ok(&args)
    };
    let (whole, parts) = (d.join("whole"), d.join("parts"));
    train(&whole, "60");
    train(&parts, "30");
    for f in ["model.safetensors", "summary.json"] {
        std::fs::remove_file(parts.join(f)).unwrap();
    }
    let mut log = std::fs::read_to_string(parts.join("log.jsonl")).unwrap();
    log.push_str("{\"loss\":1.0,\"step\":31}\n{\"loss\":1.0,\"step\":32}\n");
    std::fs::write(parts.join("log.jsonl"), log).unwrap();
    let mut evals = std::fs::read_to_string(parts.join("eval.jsonl")).unwrap();
    evals.push_str("{\"step\":40,\"valid_top1\":0.5}\n");
    std::fs::write(parts.join("eval.jsonl"), evals).unwrap();
    fails_with(&["eval", s(&parts)], &["without its final model", "train --resume finishes the run"]);
    let ckpt = parts.join("checkpoints").join("step-00000030.ckpt.safetensors");
    fails_with(&["eval", s(&ckpt)], &["checkpoint, kept for --resume"]);
    fails_with(&["--out", s(&parts), "train", "--model", "seq2seq", "--resume", "--lr", "0.1"], &["only --steps may change, not --lr"]);
    // Finishing needs no --model: the directory says what it is.
    let fin = ok(&["--out", s(&parts), "train", "--resume", "--quiet"]);
    assert!(fin.contains("from step 30") && fin.contains("trained seq2seq"), "{fin}");
    assert!(parts.join("model.safetensors").is_file() && parts.join("summary.json").is_file());
    let summary_at_30 = std::fs::read_to_string(parts.join("summary.json")).unwrap();
    let out = ok(&["--out", s(&parts), "train", "--model", "seq2seq", "--resume", "--steps", "60", "--quiet"]);
    assert!(out.contains("resuming the run") && out.contains("from step 30"), "{out}");
    assert!(std::fs::read(whole.join("model.safetensors")).unwrap() == std::fs::read(parts.join("model.safetensors")).unwrap(), "resumed weights differ");
    let steps: Vec<u64> = std::fs::read_to_string(parts.join("log.jsonl")).unwrap().lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["step"].as_u64().unwrap()).collect();
    assert_eq!(steps, (1..=60).collect::<Vec<u64>>(), "the log holds each step once");
    for f in ["log.jsonl", "eval.jsonl"] {
        assert_eq!(std::fs::read_to_string(whole.join(f)).unwrap(), std::fs::read_to_string(parts.join(f)).unwrap(), "{f}");
    }
    let done = ok(&["--out", s(&parts), "train", "--model", "seq2seq", "--resume"]);
    assert!(done.contains("already finished at step 60"), "{done}");
    // Extended, then stopped in its final test: the summary is still the 30-step run's, so the
    // run is not finished, and --resume tests it again.
    std::fs::write(parts.join("summary.json"), summary_at_30).unwrap();
    let again = ok(&["--out", s(&parts), "train", "--resume", "--quiet"]);
    assert!(again.contains("from step 60") && again.contains("trained seq2seq"), "{again}");
    assert_eq!(json(&parts.join("summary.json"))["steps"], 60);
    assert!(std::fs::read(whole.join("model.safetensors")).unwrap() == std::fs::read(parts.join("model.safetensors")).unwrap());
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn csv_with_named_columns_and_a_character_model() {
    let d = tmp("csv");
    // A header naming the columns in another order, a comma inside quotes.
    let csv = d.join("pairs.csv");
    let mut t = String::from("id,fr,en\n");
    for (i, (a, b)) in pairs(300, 5).iter().enumerate() {
        t.push_str(&format!("{i},\"{b}\",\"{a}\"\n"));
    }
    t.push_str("300,\"un, deux.\",\"two, one.\"\n");
    std::fs::write(&csv, t).unwrap();
    let run = d.join("run");
    let mut args = vec!["--out", s(&run), "train", "--data", s(&csv), "--text-column", "en", "--target", "fr", "--steps", "20", "--model-option", "tokenizer=chars", "--model-option", "cell=gru", "--model-option", "attention=ca-att-luong"];
    args.extend(SMALL);
    let out = ok(&args);
    assert!(out.contains("line 1 names the columns; source \"en\", target \"fr\""), "{out}");
    let set = json(&run.join("seq2seq.json"));
    assert_eq!((set["tokenizer"].as_str(), set["target_tokenizer"].as_str(), set["cell"].as_str()), (Some("chars"), Some("chars"), Some("gru")));
    // Characters are joined without spaces in predictions.
    let input = d.join("in.txt");
    std::fs::write(&input, "one.\n").unwrap();
    let p = ok(&["predict", s(&run), "--input", s(&input)]);
    let row = p.lines().find(|l| l.contains("in.txt:1")).unwrap();
    assert!(!row.contains('\u{2581}'), "word boundaries are written as spaces: {row}");
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn what_a_seq2seq_run_does_not_take_is_refused_by_name() {
    let d = tmp("errors");
    let tsv = d.join("p.tsv");
    std::fs::write(&tsv, pairs(40, 3).iter().map(|(a, b)| format!("{a}\t{b}\n")).collect::<String>()).unwrap();
    let run = d.join("run");
    let base = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["--out", s(&run), "train", "--data", s(&tsv), "--model", "seq2seq", "--steps", "2", "--quiet"].iter().map(|x| x.to_string()).collect();
        v.extend(extra.iter().map(|x| x.to_string()));
        v
    };
    let fails = |extra: &[&str], needles: &[&str]| {
        let v = base(extra);
        let r: Vec<&str> = v.iter().map(String::as_str).collect();
        fails_with(&r, needles);
    };
    fails(&["--resume"], &["--data", "only --steps may change"]);
    fails(&["--dropout", "0.2", "--schedule", "exp:0.9"], &["does not take --schedule, --dropout"]);
    fails(&["--hidden", "32,16"], &["layers share one size"]);
    fails(&["--model-option", "heads=4"], &["--model-option heads", "cell, attention"]);
    fails(&["--model-option", "attention=luong-dot", "--bidirectional"], &["luong-dot"]);
    fails(&["--model-option", "attention=local-p:0"], &["half-window"]);
    fails(&["--model-option", "beam=0"], &["beam 0 is out of range"]);
    fails(&["--target", "fr"], &["target column \"fr\" is a name", "line 1 is read as data"]);
    fails(&["--split", "0.5,0.5,0"], &["test no pairs"]);
    fails(&["--format", "npy"], &["reads csv or tsv"]);
    fails(&["--target", "elsewhere/tgt.txt"], &["--target elsewhere/tgt.txt: no such file"]);
    fails(&["--text-column", "0"], &["source column number 0: columns are numbered from 1"]);
    // A model too big for the memory is refused before the run directory is touched.
    let o = std::process::Command::new(super::user_data::chi_bin())
        .args(["--out", s(&run), "train", "--data", s(&tsv), "--model", "seq2seq", "--hidden", "1024", "--quiet"])
        .env("CHI_MEMORY_LIMIT", "100000000")
        .output()
        .unwrap();
    assert!(!o.status.success() && text(&o).contains("GB to train") && text(&o).contains("smaller --hidden"), "{}", text(&o));
    assert!(!run.join("model.safetensors").exists(), "nothing is trained after a refusal");
    // Two aligned files whose lines do not align.
    let (a, b) = (d.join("a.txt"), d.join("b.txt"));
    std::fs::write(&a, "one\ntwo\n").unwrap();
    std::fs::write(&b, "un\n").unwrap();
    fails_with(&["--out", s(&run), "train", "--model", "seq2seq", "--data", s(&a), "--target", s(&b)], &["must align line by line"]);
    // Too few pairs to split.
    std::fs::write(&a, "one\ttwo\n").unwrap();
    fails_with(&["--out", s(&run), "train", "--model", "seq2seq", "--data", s(&a)], &["cannot be split"]);
    // A folder, and no data at all.
    fails_with(&["--out", s(&run), "train", "--model", "seq2seq", "--data", s(&d)], &["is a folder"]);
    fails_with(&["--out", s(&run), "train", "--model", "seq2seq", "--data", "/dev/null"], &["not a regular file"]);
    fails_with(&["--out", s(&run), "train", "--model", "seq2seq", "--data", s(&tsv), "--test", "/dev/null"], &["--test /dev/null: not a regular file"]);
    // --list lists, whatever the model.
    let listed = ok(&["train", "--model", "seq2seq", "--list"]);
    assert!(listed.contains("seq2seq    sentence pairs"), "{listed}");
    let o = chi(&["--out", s(&run), "train", "--model", "seq2seq"]);
    assert!(!o.status.success() && text(&o).contains("needs --data"), "{}", text(&o));
    std::fs::remove_dir_all(&d).ok();
}
