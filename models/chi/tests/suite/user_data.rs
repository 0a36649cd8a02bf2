//! `chi train`, `chi eval` and `chi predict` on the user's own files, end to end: the shipped
//! example CSV and text folder (the README's loop), other formats, and bad inputs (each a clear
//! error naming the file and what is wrong, never a panic).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `chi` binary under test: `CHI_BIN` if set (to run these tests against another build),
/// else the one cargo built.
pub(crate) fn chi_bin() -> PathBuf {
    std::env::var_os("CHI_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_chi")), PathBuf::from)
}

pub(crate) fn chi(args: &[&str]) -> Output {
    Command::new(chi_bin()).args(args).env_remove("CHI_MAX_TENSOR_ELEMENTS").output().unwrap_or_else(|e| panic!("cannot run chi {args:?}: {e}"))
}

pub(crate) fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[track_caller]
pub(crate) fn ok(args: &[&str]) -> String {
    let o = chi(args);
    assert!(o.status.success(), "chi {args:?} failed ({}):\n{}", o.status, text(&o));
    text(&o)
}

#[track_caller]
pub(crate) fn fails_with(args: &[&str], needles: &[&str]) -> String {
    let o = chi(args);
    let t = text(&o);
    assert!(matches!(o.status.code(), Some(1 | 2)), "chi {args:?} should fail with exit status 1 or 2, got {}:\n{t}", o.status);
    assert!(!t.contains("panicked"), "chi {args:?} panicked:\n{t}");
    for n in needles {
        assert!(t.contains(n), "chi {args:?}: message lacks {n:?}:\n{t}");
    }
    t
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chi-userdata-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub(crate) fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The example data the repository ships (`scripts/make-example-data.py`).
fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join("data")
}

/// A number after `key ` in chi's `key value, …` output.
fn metric(t: &str, key: &str) -> f64 {
    let at = t.find(&format!("{key} ")).unwrap_or_else(|| panic!("no {key} in:\n{t}"));
    t[at + key.len() + 1..].split(|c: char| c == ',' || c.is_whitespace()).next().unwrap().parse().unwrap()
}

#[test]
fn the_readme_loop_on_the_example_csv() {
    let root = tmp("csv");
    let run = root.join("fruit");
    let csv = examples().join("fruit.csv");
    let t = ok(&["train", "--data", s(&csv), "--target", "fruit", "--steps", "400", "--quiet", "--out", s(&run)]);
    assert!(t.contains("trained mlp on") && t.contains("fruit.csv"), "{t}");
    // Overlapping classes: clearly better than the 1/3 of chance, not perfect.
    assert!(metric(&t, "test accuracy") > 0.7, "{t}");
    for f in ["config.toml", "data.json", "model.safetensors", "summary.json", "loss.png", "eval.svg"] {
        assert!(run.join(f).is_file(), "{f} missing in the run directory");
    }
    // chi eval: run directory, checkpoint and weights file give the same test figures.
    let by_dir = ok(&["eval", s(&run)]);
    assert!(by_dir.contains("precision") && by_dir.contains("confusion matrix") && by_dir.contains("orange"), "{by_dir}");
    for f in ["report.json", "confusion.csv", "confusion.svg", "confusion.png"] {
        assert!(run.join("eval-test").join(f).is_file(), "{f} missing: {by_dir}");
    }
    let by_weights = ok(&["eval", s(&run.join("model.safetensors"))]);
    let by_ckpt = ok(&["eval", "--checkpoint", s(&run.join("checkpoints/step-00000400.ckpt.safetensors"))]);
    let acc = metric(&by_dir, "accuracy");
    assert_eq!(acc, metric(&by_weights, "accuracy"));
    assert_eq!(acc, metric(&by_ckpt, "accuracy"));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(run.join("eval-test/report.json")).unwrap()).unwrap();
    let confusion = report["confusion"].as_array().unwrap();
    let total: u64 = confusion.iter().flat_map(|r| r.as_array().unwrap()).map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(total, report["examples"].as_u64().unwrap());
    // A new labelled file (columns in another order) and new unlabelled rows.
    let new = root.join("new.csv");
    std::fs::write(&new, "fruit,texture,colour,diameter_cm,weight_g\nlemon,waxy,yellow,5.9,105\napple,smooth,red,7.6,175\norange,dimpled,orange,8.2,200\n").unwrap();
    let e = ok(&["eval", s(&run), "--data", s(&new)]);
    assert!(e.contains("3 examples"), "{e}");
    assert!(run.join("eval-file-new/report.json").is_file());
    let rows = root.join("rows.csv");
    std::fs::write(&rows, "weight_g,diameter_cm,colour,texture\n105,5.9,yellow,waxy\n200,8.2,orange,dimpled\n").unwrap();
    let preds = root.join("preds.csv");
    ok(&["predict", s(&run), "--input", s(&rows), "--output", s(&preds)]);
    let p = std::fs::read_to_string(&preds).unwrap();
    let lines: Vec<&str> = p.lines().collect();
    assert_eq!(lines[0], "input,predicted,p_apple,p_lemon,p_orange", "{p}");
    assert_eq!(lines.len(), 3, "{p}");
    assert!(lines[1].contains(",lemon,") && lines[2].contains(",orange,"), "the clear cases are predicted right:\n{p}");
    for l in &lines[1..] {
        let probs: f64 = l.split(',').skip(2).map(|v| v.parse::<f64>().unwrap()).sum();
        assert!((probs - 1.0).abs() < 1e-4, "{l}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_readme_loop_on_the_example_text_folder_with_saliency() {
    let root = tmp("text");
    let run = root.join("reviews");
    let data = examples().join("reviews");
    let t = ok(&["train", "--data", s(&data), "--model", "bow", "--hidden", "16", "--steps", "300", "--quiet", "--out", s(&run)]);
    assert!(metric(&t, "test accuracy") > 0.75, "{t}");
    ok(&["eval", s(&run), "--split", "valid"]);
    assert!(run.join("eval-valid/confusion.png").is_file());
    // Prediction on a text file (one review per line) with the most salient words.
    let input = root.join("new.txt");
    std::fs::write(&input, "The kettle broke after a week. Avoid it.\nThe lamp works perfectly. Love it!\n").unwrap();
    let o = ok(&["predict", s(&run), "--input", s(&input), "--saliency", "2", "--attribution", "grad-times-input"]);
    let lines: Vec<&str> = o.lines().filter(|l| l.contains("new.txt:")).collect();
    assert_eq!(lines.len(), 2, "{o}");
    assert!(lines[0].contains(",negative,") && lines[1].contains(",positive,"), "{o}");
    assert!(o.lines().next().unwrap().ends_with(",salient_words"), "{o}");
    // The words that push the score are the sentiment words, not "the".
    assert!(["broke", "avoid", "week"].iter().any(|w| lines[0].contains(&format!("{w} ("))), "{}", lines[0]);
    assert!(["perfectly", "love", "works"].iter().any(|w| lines[1].contains(&format!("{w} ("))), "{}", lines[1]);
    // Plain saliency of a bag of words is the same for every word: its score sees only the mean.
    let o = ok(&["predict", s(&run), "--input", s(&input), "--saliency", "3"]);
    let first = o.lines().find(|l| l.contains("new.txt:1")).unwrap();
    let values: Vec<&str> = first.rsplit(',').next().unwrap().split("; ").map(|w| w.rsplit('(').next().unwrap()).collect();
    assert!(values.len() == 3 && values.iter().all(|v| *v == values[0]), "{first}");
    // chi explain: the page and the numbers, integrated gradients complete.
    let ex = ok(&["explain", s(&run), "--text", "The kettle broke after a week. Avoid it.", "--steps", "32"]);
    assert!(ex.contains("predicted negative"), "{ex}");
    let page = std::fs::read_to_string(run.join("explain/explain.html")).unwrap();
    assert!(page.contains("integrated gradients") && page.contains(">avoid</span>"), "{page}");
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(run.join("explain/explain.json")).unwrap()).unwrap();
    let e = &j[0];
    let ig: f64 = e["integrated_gradients"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).sum();
    let gap = e["score"].as_f64().unwrap() - e["baseline_score"].as_f64().unwrap();
    assert!((ig - gap).abs() < 1e-3 * gap.abs().max(1.0), "Σ IG {ig} vs f(x) − f(0) {gap}");
    assert_eq!(e["words"].as_array().unwrap().len(), e["saliency"].as_array().unwrap().len());
    fails_with(&["explain", s(&run)], &["nothing to explain"]);
    fails_with(&["explain", s(&run), "--text", "x", "--class", "neutral"], &["--class \"neutral\"", "negative, positive"]);
    fails_with(&["explain", s(&run), "--text", " "], &["--text is empty"]);
    // A byte-order mark before the first text changes nothing: it is not a word of it.
    let plain = ok(&["explain", s(&run), "--input", s(&input), "--steps", "8", "--dir", s(&root.join("ex-plain"))]);
    let bom = root.join("bom.txt");
    std::fs::write(&bom, [&[0xEF, 0xBB, 0xBF][..], &std::fs::read(&input).unwrap()].concat()).unwrap();
    let marked = ok(&["explain", s(&run), "--input", s(&bom), "--steps", "8", "--dir", s(&root.join("ex-bom"))]);
    let explained = |o: &str| o.lines().filter(|l| !l.starts_with("wrote ")).collect::<Vec<_>>().join("\n");
    assert_eq!(explained(&plain), explained(&marked));
    // The recurrent and convolutional text models train on the same folder.
    for m in ["text-cnn", "gru"] {
        let r = root.join(m);
        let mut args = vec!["train", "--data", s(&data), "--model", m, "--steps", "60", "--quiet", "--no-plots", "--out", s(&r)];
        if m == "gru" {
            args.extend(["--bidirectional", "--hidden", "8"]);
        }
        ok(&args);
        let o = ok(&["predict", s(&r), "--input", s(&input), "--saliency", "1"]);
        assert_eq!(o.lines().count(), 3, "{o}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn regression_from_a_csv_reports_mse_mae_and_r2() {
    let root = tmp("reg");
    let csv = root.join("houses.tsv");
    let mut t = String::from("rooms\tarea\tprice\n");
    for i in 0..200 {
        let (r, a) = ((i % 5 + 1) as f64, 40.0 + (i * 7 % 90) as f64);
        t.push_str(&format!("{r}\t{a}\t{:.2}\n", 20.0 * r + 1.5 * a + (i % 3) as f64));
    }
    std::fs::write(&csv, t).unwrap();
    let run = root.join("run");
    let o = ok(&["train", "--data", s(&csv), "--target", "price", "--steps", "600", "--optim", "adam", "--lr", "0.01", "--quiet", "--no-plots", "--out", s(&run)]);
    assert!(o.contains("mse"), "{o}");
    let e = ok(&["eval", s(&run)]);
    assert!(metric(&e, "r2") > 0.9, "{e}");
    assert!(e.contains("mae"), "{e}");
    let rows = root.join("q.tsv");
    std::fs::write(&rows, "rooms\tarea\n3\t60\n").unwrap();
    let p = ok(&["predict", s(&run), "--input", s(&rows)]);
    let value: f64 = p.lines().nth(1).unwrap().split(',').nth(1).unwrap().parse().unwrap();
    assert!((value - 150.0).abs() < 25.0, "predicted price {value} for 3 rooms, 60 m² (true about 150):\n{p}");
    assert!(p.starts_with("input,price"), "{p}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn bad_user_data_is_a_clear_error() {
    let root = tmp("bad");
    let w = |name: &str, bytes: &[u8]| {
        let p = root.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let out = root.join("run");
    let train = |data: &Path, extra: &[&str]| {
        let mut a = vec!["train", "--data", s(data), "--steps", "5", "--quiet", "--no-plots", "--overwrite", "--out", s(&out)];
        a.extend_from_slice(extra);
        a.iter().map(|x| x.to_string()).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>, needles: &[&str]| {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        fails_with(&a, needles)
    };
    let ragged = w("ragged.csv", b"a,b,label\n1,2,x\n3,4\n5,6,y\n");
    run(train(&ragged, &[]), &["ragged.csv", "line 3", "2 fields"]);
    let mut t = String::from("a,label\n");
    for i in 0..30 {
        t.push_str(&format!("{},{}\n", if i == 7 { "seven".into() } else { i.to_string() }, i % 2));
    }
    let nonnum = w("nonnum.csv", t.as_bytes());
    run(train(&nonnum, &[]), &["nonnum.csv", "line 9", "\"seven\" is not a number"]);
    run(train(&nonnum, &["--target", "species"]), &["no target column \"species\"", "a, label"]);
    let binary = w("weights.csv", b"\x00\x01\x02\x03binary");
    run(train(&binary, &[]), &["weights.csv", "binary"]);
    std::fs::create_dir_all(root.join("texts/empty")).unwrap();
    w("texts/full/a.txt", b"some words here");
    run(train(&root.join("texts"), &[]), &["\"empty\" holds no files"]);
    run(train(&root.join("nothing.csv"), &[]), &["nothing.csv", "no such file"]);
    // A link round in a loop is not "no such file"; a file read as a folder says so.
    std::os::unix::fs::symlink(root.join("loop-b"), root.join("loop-a")).unwrap();
    std::os::unix::fs::symlink(root.join("loop-a"), root.join("loop-b")).unwrap();
    run(train(&root.join("loop-a"), &["--format", "csv"]), &["loop-a", "symbolic link that leads nowhere"]);
    run(train(&ragged, &["--format", "folder"]), &["ragged.csv", "is not a folder"]);
    run(train(&ragged, &["--split", "0.5,0.6,0.1"]), &["--split", "add up to 1"]);
    // A share of less than one example is refused, not rounded up to one per class.
    run(train(&nonnum, &["--split", "1e-300,0,1"]), &["split", "training fraction 1e-300 is less than one example"]);
    run(train(&nonnum, &["--split", "0.98,0.001,0.019"]), &["split", "validation fraction 0.001 is less than one example", "or 0 for none"]);
    // A model that does not take the data is an error, not a silent substitute.
    let csv = examples().join("fruit.csv");
    run(train(&csv, &["--model", "cnn", "--target", "fruit"]), &["cnn takes images data", "tabular", "use mlp"]);
    run(train(&examples().join("reviews"), &["--model", "mlp"]), &["mlp takes tabular or images data", "text"]);
    // A file option given to a built-in dataset is refused, not ignored.
    let cfg = w("c.toml", b"dataset = \"spirals\"\n[data]\npath = \"moons.csv\"\n");
    fails_with(&["train", "--config", s(&cfg), "--steps", "5", "--quiet", "--out", s(&out), "--overwrite"], &["spirals", "path"]);
    // A label that training never saw, at evaluation.
    let good = root.join("good");
    ok(&["train", "--data", s(&csv), "--target", "fruit", "--steps", "20", "--quiet", "--no-plots", "--out", s(&good)]);
    let unseen = w("unseen.csv", b"weight_g,diameter_cm,colour,texture,fruit\n120,6,yellow,waxy,lime\n");
    fails_with(&["eval", s(&good), "--data", s(&unseen)], &["unseen.csv:2", "\"lime\"", "not seen in training", "apple, lemon, orange"]);
    // Prediction inputs missing a feature column.
    let missing = w("missing.csv", b"weight_g,colour,texture\n120,yellow,waxy\n");
    fails_with(&["predict", s(&good), "--input", s(&missing)], &["missing.csv", "no column \"diameter_cm\""]);
    let t = ok(&["train", "--data", s(&csv), "--target", "fruit", "--steps", "2", "--lr", "0", "--quiet", "--no-plots", "--overwrite", "--out", s(&root.join("lr0"))]);
    assert!(t.contains("warning: the learning rate is 0"), "{t}");
    // A CSV file named .txt is not read as token lines, one class per row, without a word.
    let csv_txt = w("rows.txt", &std::fs::read(&csv).unwrap());
    run(train(&csv_txt, &[]), &["rows.txt", "read as token lines", "give --format csv"]);
    // A header read as data under --header no says why line 1 was data.
    run(train(&csv, &["--header", "no", "--target", "column5"]), &["fruit.csv", "line 1", "leave out --header no"]);
    // A held-out file holding a header only is refused by name, not dropped (validation) or
    // blamed on the training file's split (test).
    let header_only = w("header_only.csv", b"weight_g,diameter_cm,colour,texture,fruit\n");
    for flag in ["--valid", "--test"] {
        run(train(&csv, &["--target", "fruit", flag, s(&header_only)]), &["header_only.csv", "holds no examples", if flag == "--valid" { "validation file" } else { "test file" }]);
    }
    // Options of one format given with data of another are refused, not ignored.
    let reviews = examples().join("reviews");
    for (flag, value) in [("--target", "label"), ("--features", "a,b"), ("--text-column", "review"), ("--header", "yes")] {
        run(train(&reviews, &[flag, value]), &[&format!("{} = ", flag.trim_start_matches("--").replace('-', "_")), "a folder of texts", "leave it out"]);
    }
    // A size limit met through --embed names it (not --hidden, nor the synthetic datasets'
    // vocabulary), before the text is read.
    let e = run(train(&reviews, &["--embed", "20000000"]), &["--embed", "limit"]);
    assert!(!e.contains("vocabulary × embed"), "{e}");
    fails_with(&["eval", s(&good), "--data", s(&csv), "--target", s(&csv)], &["target", "label file of array inputs", "leave it out"]);
    fails_with(&["predict", s(&good), "--input", s(&csv), "--attribution", "grad-times-input"], &["--attribution", "--saliency"]);
    fails_with(&["explain", s(&good), "--text", "x"], &["good", "explains text models", "tabular"]);
    // One process compared with itself: said, not reported as agreement; an infinite tolerance
    // and an unwritable report are refused before any work.
    let t = ok(&["dist", "check", "--steps", "2"]);
    assert!(t.contains("compared with itself"), "{t}");
    fails_with(&["dist", "check", "--tolerance", "inf"], &["--tolerance inf"]);
    fails_with(&["dist", "bench", "--json", s(&root)], &["--json", "is a directory"]);
    // chi predict on a model of a built-in dataset says why it cannot.
    let spirals = root.join("spirals");
    ok(&["train", "--data", "spirals", "--steps", "5", "--quiet", "--no-plots", "--out", s(&spirals)]);
    fails_with(&["predict", s(&spirals), "--input", s(&csv)], &["built-in dataset \"spirals\""]);
    let _ = std::fs::remove_dir_all(&root);
}

/// Endless inputs (`/dev/zero`: a device reporting length 0, as pipes and FIFOs do) are refused
/// once what is read passes the file limit, by every command that reads a file whole, instead
/// of being read until memory runs out; text readers refuse it as binary after 8 KiB whatever
/// the limit.
#[test]
fn endless_inputs_are_refused_at_the_file_limit() {
    if !Path::new("/dev/zero").exists() {
        eprintln!("skipped: no /dev/zero");
        return;
    }
    let root = tmp("endless");
    let good = root.join("good");
    let csv = examples().join("fruit.csv");
    ok(&["train", "--data", s(&csv), "--target", "fruit", "--steps", "5", "--quiet", "--no-plots", "--out", s(&good)]);
    let out = root.join("run");
    let limited = |args: &[&str], needles: &[&str]| {
        let o = Command::new(chi_bin()).args(args).env("CHI_MAX_FILE_BYTES", "1000000").output().unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "chi {args:?}:\n{t}");
        for n in needles {
            assert!(t.contains(n), "chi {args:?}: message lacks {n:?}:\n{t}");
        }
    };
    let endless = ["/dev/zero", "gives more than the 1000000-byte limit", "CHI_MAX_FILE_BYTES"];
    limited(&["train", "--data", "/dev/zero", "--format", "npy", "--target", "/dev/zero", "--quiet", "--out", s(&out)], &endless);
    limited(&["embed", "train", "--corpus", "/dev/zero", "--model", "glove", "--vectors-out", s(&root.join("v.txt"))], &endless);
    limited(&["embed", "eval", "/dev/zero"], &endless);
    limited(&["embed", "neighbours", "/dev/zero", "word"], &endless);
    // As text, the NULs give it away within the first 8 KiB, at the default limit too.
    fails_with(&["train", "--data", "/dev/zero", "--format", "csv", "--quiet", "--out", s(&out)], &["/dev/zero", "binary"]);
    fails_with(&["predict", s(&good), "--input", "/dev/zero"], &["/dev/zero", "binary"]);
    fails_with(&["eval", s(&good), "--data", "/dev/zero"], &["/dev/zero", "binary"]);
    let _ = std::fs::remove_dir_all(&root);
}

/// A run's files are outside input too: a `data.json` that disagrees with the weights or sizes
/// the model absurdly, model options that would need terabytes, a prediction written over its
/// own input and megabyte-long values in a file are clear errors, never a panic or an abort;
/// relative data paths still work from another directory.
#[test]
fn edited_run_files_and_odd_requests_are_clear_errors() {
    let root = tmp("edited");
    let w = |name: &str, bytes: &[u8]| {
        let p = root.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    // Trained from `root` with a relative --data: the stored path is absolute, so eval works
    // from anywhere (here from a directory holding another fruit.csv, which must not be read).
    std::fs::copy(examples().join("fruit.csv"), root.join("fruit.csv")).unwrap();
    let run = root.join("run");
    let o = Command::new(chi_bin()).current_dir(&root).args(["train", "--data", "fruit.csv", "--target", "fruit", "--steps", "20", "--quiet", "--no-plots", "--out", "run"]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let config = std::fs::read_to_string(run.join("config.toml")).unwrap();
    assert!(config.contains(s(&std::path::absolute(root.join("fruit.csv")).unwrap())), "{config}");
    let elsewhere = root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("fruit.csv"), "weight_g,diameter_cm,colour,texture,fruit\n1,1,blue,odd,kiwi\n").unwrap();
    let here = ok(&["eval", s(&run)]);
    let o = Command::new(chi_bin()).current_dir(&elsewhere).args(["eval", s(&run)]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(metric(&here, "accuracy"), metric(&text(&o), "accuracy"));

    // data.json edited: more class names than the task's count, a huge count, short statistics.
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(run.join("data.json")).unwrap()).unwrap();
    let edited = |name: &str, f: &dyn Fn(&mut serde_json::Value)| {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for e in std::fs::read_dir(&run).unwrap() {
            let e = e.unwrap();
            if e.path().is_file() {
                std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
            }
        }
        let mut v = schema.clone();
        f(&mut v);
        std::fs::write(dir.join("data.json"), serde_json::to_string(&v).unwrap()).unwrap();
        dir
    };
    let labelled = w("lab.csv", b"weight_g,diameter_cm,colour,texture,fruit\n120,6,yellow,waxy,kiwi\n");
    // Beside weights that carry their own schema, an edited data.json is named and not used:
    // the model knows its three classes.
    let three = edited("three", &|v| v["classes"].as_array_mut().unwrap().push("kiwi".into()));
    fails_with(&["eval", s(&three), "--data", s(&labelled)], &["data.json differs from the data schema saved in", "\"kiwi\"", "was not seen in training"]);
    // Weights without one (written by hand, or by an older chi) read data.json, which is checked.
    let weights = three.join("model.safetensors");
    let (mut meta, tensors) = chi_nn::checkpoint::unpack::<f32>(&weights, &std::fs::read(&weights).unwrap()).unwrap();
    assert!(meta.remove("data_schema").is_some(), "the weights carry their schema");
    let bare = chi_nn::checkpoint::pack(&tensors, &meta).unwrap();
    let edited = |name: &str, f: &dyn Fn(&mut serde_json::Value)| {
        let dir = edited(name, f);
        std::fs::write(dir.join("model.safetensors"), &bare).unwrap();
        dir
    };
    let three = edited("three-bare", &|v| v["classes"].as_array_mut().unwrap().push("kiwi".into()));
    fails_with(&["eval", s(&three), "--data", s(&labelled)], &["data.json", "classes", "number of class names"]);
    let huge = edited("huge", &|v| v["task"]["Classification"]["classes"] = serde_json::json!(1_000_000_000u64));
    fails_with(&["predict", s(&huge), "--input", s(&labelled)], &["data.json", "1000000000"]);
    let flat = edited("flat", &|v| {
        for c in v["encoder"]["columns"].as_array_mut().unwrap() {
            if c["type"] == "numeric" {
                c["std"] = serde_json::json!(0.0);
            }
        }
    });
    fails_with(&["predict", s(&flat), "--input", s(&labelled)], &["data.json", "standard deviation"]);

    // Model options far beyond the per-tensor limit are refused before anything is allocated.
    let reviews = examples().join("reviews");
    for (model, opt, what) in [("text-cnn", "filters=100000000", "text-cnn"), ("text-cnn", "widths=[100000000]", "text-cnn"), ("han", "hidden=1000000", "han")] {
        fails_with(&["train", "--data", s(&reviews), "--model", model, "--model-option", opt, "--steps", "2", "--quiet", "--no-plots", "--out", s(&root.join("big"))], &[what, "limit"]);
    }

    // A model initialised from pretrained vectors loads without them: its weights hold the
    // embedding (the vectors file may have moved since training).
    let vectors = w("vec.txt", b"4 3\ngreat 0.5 0.1 -0.2\nstars 0.3 0.3 0.3\ntent 0.1 -0.4 0.2\nbad -0.5 0.2 0.1\n");
    let textrun = root.join("textrun");
    ok(&["train", "--data", s(&reviews), "--model", "bow", "--pretrained", s(&vectors), "--steps", "5", "--quiet", "--no-plots", "--out", s(&textrun)]);
    std::fs::remove_file(&vectors).unwrap();
    let texts = w("texts.txt", b"The tent looks great.\n");
    let p = ok(&["predict", s(&textrun), "--input", s(&texts)]);
    assert!(p.lines().count() == 2, "{p}");

    // The predictions may not replace their own input.
    let rows = w("rows.csv", b"weight_g,diameter_cm,colour,texture\n105,5.9,yellow,waxy\n");
    fails_with(&["predict", s(&run), "--input", s(&rows), "--output", s(&rows)], &["is the input file"]);
    assert_eq!(std::fs::read(&rows).unwrap(), b"weight_g,diameter_cm,colour,texture\n105,5.9,yellow,waxy\n");

    // Nor the model's own files.
    fails_with(&["predict", s(&run), "--input", s(&rows), "--output", s(&run.join("model.safetensors"))], &["is a file of the model's run"]);
    fails_with(&["predict", s(&run), "--input", s(&rows), "--output", s(&run.join("config.toml"))], &["is a file of the model's run"]);
    ok(&["eval", s(&run)]);
    // A recurrent layer's hidden × 4·hidden weight is checked before allocation too.
    fails_with(&["train", "--data", s(&reviews), "--model", "lstm", "--hidden", "100000", "--steps", "1", "--quiet", "--no-plots", "--out", s(&root.join("big"))], &["recurrent weight", "limit"]);
    // A header of megabyte-long names is listed by their starts.
    let wide = w("wide.csv", format!("{},b\n1,2\n", "Q".repeat(1_000_000)).as_bytes());
    let t = fails_with(&["predict", s(&run), "--input", s(&wide)], &["wide.csv", "no column"]);
    assert!(t.len() < 2000, "{} bytes of message", t.len());

    // A megabyte-long field is quoted by its start and length, not whole.
    let long = w("long.csv", format!("weight_g,diameter_cm,colour,texture\n{},5.9,yellow,waxy\n", "1x".repeat(500_000)).as_bytes());
    let t = fails_with(&["predict", s(&run), "--input", s(&long)], &["long.csv", "1000000 characters"]);
    assert!(t.len() < 2000, "{} bytes of message", t.len());
    let _ = std::fs::remove_dir_all(&root);
}

/// The quick variant of the Fashion-MNIST run (the full one, 4000 steps, reaches 0.91; see the
/// README): 300 steps of the CNN already pass 0.8, and `chi eval` prints the garment names in
/// its confusion matrix.
#[test]
fn fashion_mnist_cnn_by_name() {
    if let Err(e) = chi_nn::data::require(chi_nn::data::Dataset::FashionMnist) {
        eprintln!("skipped: {e}");
        return;
    }
    let root = tmp("fashion");
    let run = root.join("run");
    let t = ok(&[
        "train", "--data", "fashion-mnist", "--model", "cnn", "--hidden", "64", "--model-option", "channels=[16,32]", "--steps", "300", "--batch-size", "64",
        "--optim", "adam", "--lr", "0.002", "--eval-every", "0", "--quiet", "--no-plots", "--out", s(&run),
    ]);
    assert!(metric(&t, "test accuracy") > 0.8, "{t}");
    let e = ok(&["eval", s(&run)]);
    assert!(e.contains("10000 examples") && e.contains("Ankle boot") && e.contains("confusion matrix"), "{e}");
    let _ = std::fs::remove_dir_all(&root);
}

/// A text folder of two classes, `pos` and `neg`, 12 short files each (`good fine great 0`, …).
pub(crate) fn two_class_text_folder(data: &Path) {
    for (class, words) in [("pos", "good fine great"), ("neg", "bad poor awful")] {
        for i in 0..12 {
            let f = data.join(class).join(format!("{i}.txt"));
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, format!("{words} {i}")).unwrap();
        }
    }
}

/// `chi eval --report DIR` and `chi explain --dir DIR` write their files into a directory the
/// user names: never inside the model's data (the next run on the folder would read them as
/// examples), never over files chi did not write there, never into a path that is a file; an
/// earlier report of theirs there is replaced.
#[test]
fn report_and_explain_directories_keep_out_of_the_data_and_the_users_files() {
    let dir = tmp("report-dirs");
    let data = dir.join("texts");
    two_class_text_folder(&data);
    let run = dir.join("run");
    ok(&["train", "--data", s(&data), "--out", s(&run), "--steps", "5", "--quiet", "--no-plots"]);
    let inside = data.join("pos");
    fails_with(&["eval", s(&run), "--data", s(&data), "--report", s(&inside)], &["--report", "is inside the data"]);
    fails_with(&["explain", s(&run), "--text", "good", "--dir", s(&inside.join("ex"))], &["--dir", "is inside the data"]);
    assert!(!inside.join("report.json").exists() && !inside.join("ex").exists(), "nothing written into the data");
    let mine = dir.join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("report.json"), "mine").unwrap();
    fails_with(&["eval", s(&run), "--report", s(&mine)], &["--report", "that chi did not write (report.json)"]);
    std::fs::write(mine.join("explain.html"), "mine").unwrap();
    fails_with(&["explain", s(&run), "--text", "good", "--dir", s(&mine)], &["--dir", "that chi did not write (explain.html)"]);
    assert_eq!(std::fs::read_to_string(mine.join("report.json")).unwrap(), "mine");
    assert_eq!(std::fs::read_to_string(mine.join("explain.html")).unwrap(), "mine");
    let file = dir.join("afile.txt");
    std::fs::write(&file, "x").unwrap();
    fails_with(&["eval", s(&run), "--report", s(&file)], &["is a file, not a directory"]);
    // Refused before the evaluation runs: nothing of a report is printed.
    let o = chi(&["eval", s(&run), "--report", s(&file)]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("accuracy"), "{}", String::from_utf8_lossy(&o.stdout));
    fails_with(&["train", "--data", s(&data), "--out", s(&file), "--steps", "1", "--quiet", "--no-plots"], &["--out", "is a file, not a directory"]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
    let rep = dir.join("rep");
    ok(&["eval", s(&run), "--report", s(&rep)]);
    ok(&["eval", s(&run), "--report", s(&rep)]);
    let ex = dir.join("ex");
    ok(&["explain", s(&run), "--text", "good", "--dir", s(&ex)]);
    ok(&["explain", s(&run), "--text", "poor", "--dir", s(&ex)]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `chi predict --output` never replaces the user's inputs: a file inside the input folder, or
/// the model's own training, validation or test data.
#[test]
fn predictions_are_not_written_over_inputs_or_training_data() {
    let dir = tmp("predict-over");
    let data = dir.join("texts");
    two_class_text_folder(&data);
    let run = dir.join("run");
    ok(&["train", "--data", s(&data), "--out", s(&run), "--steps", "5", "--quiet", "--no-plots"]);
    let inputs = dir.join("new");
    std::fs::create_dir_all(&inputs).unwrap();
    std::fs::write(inputs.join("1.txt"), "good great").unwrap();
    std::fs::write(inputs.join("2.txt"), "poor awful").unwrap();
    fails_with(&["predict", s(&run), "--input", s(&inputs), "--output", s(&inputs.join("1.txt"))], &["inside the input folder"]);
    assert_eq!(std::fs::read_to_string(inputs.join("1.txt")).unwrap(), "good great");
    fails_with(&["predict", s(&run), "--input", s(&inputs), "--output", s(&data.join("pos").join("0.txt"))], &["training data"]);
    assert_eq!(std::fs::read_to_string(data.join("pos").join("0.txt")).unwrap(), "good fine great 0");
    ok(&["predict", s(&run), "--input", s(&inputs), "--output", s(&dir.join("p.csv"))]);
    // Nor its validation or test data.
    let (valid, test) = (dir.join("valid"), dir.join("test"));
    two_class_text_folder(&valid);
    two_class_text_folder(&test);
    let run2 = dir.join("run2");
    ok(&["train", "--data", s(&data), "--valid", s(&valid), "--test", s(&test), "--split", "1,0,0", "--out", s(&run2), "--steps", "5", "--quiet", "--no-plots"]);
    for (d, role) in [(&valid, "validation data"), (&test, "test data")] {
        let f = d.join("neg").join("1.txt");
        let before = std::fs::read(&f).unwrap();
        fails_with(&["predict", s(&run2), "--input", s(&inputs), "--output", s(&f)], &[role]);
        assert_eq!(std::fs::read(&f).unwrap(), before, "{role} left as it was");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `chi explain --input` on a CSV reads its text column as `chi predict` does (not its header
/// and labels as texts); an empty input file is named.
#[test]
fn explain_reads_a_csvs_text_column() {
    let dir = tmp("explain-csv");
    let mut csv = String::from("text,label\n");
    for i in 0..40 {
        let (words, label) = if i % 2 == 0 { ("a good fine great film", "pos") } else { ("a bad poor awful film", "neg") };
        csv.push_str(&format!("\"{words} number {i}\",{label}\n"));
    }
    let data = dir.join("reviews.csv");
    std::fs::write(&data, &csv).unwrap();
    let run = dir.join("run");
    ok(&["train", "--data", s(&data), "--out", s(&run), "--steps", "5", "--quiet", "--no-plots", "--max-len", "400"]);
    let input = dir.join("some.csv");
    std::fs::write(&input, "text,label\n\"a great film\",pos\n\"an awful film\",neg\n").unwrap();
    let ex = dir.join("ex");
    ok(&["explain", s(&run), "--input", s(&input), "--dir", s(&ex), "--steps", "4"]);
    let json = std::fs::read_to_string(ex.join("explain.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let words: Vec<Vec<String>> = v.as_array().unwrap().iter().map(|e| e["words"].as_array().unwrap().iter().map(|w| w.as_str().unwrap().to_string()).collect()).collect();
    assert_eq!(words.len(), 2, "two texts, not the header: {words:?}");
    assert!(words.iter().flatten().all(|w| !["text", "label", "pos", "neg"].contains(&w.as_str())), "{words:?}");
    let empty = dir.join("empty.txt");
    std::fs::write(&empty, "\n  \n").unwrap();
    fails_with(&["explain", s(&run), "--input", s(&empty)], &["empty.txt", "no text to explain"]);
    // One token of a million characters (a pasted blob): shown cut on the terminal, the page
    // and the picture (laid out glyph by glyph it took 6 s per million), kept whole in the JSON.
    let long = dir.join("long.txt");
    std::fs::write(&long, format!("a great film {}\n", "x".repeat(1_000_000))).unwrap();
    let out = ok(&["explain", s(&run), "--input", s(&long), "--dir", s(&ex), "--steps", "4"]);
    assert!(out.lines().all(|l| l.chars().count() < 1000), "{}", &out[..out.len().min(2000)]);
    assert!(std::fs::read_to_string(ex.join("explain.html")).unwrap().len() < 20_000);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(ex.join("explain.json")).unwrap()).unwrap();
    assert_eq!(v[0]["text"].as_str().unwrap().len(), 1_000_013);
    // A text past the model's 400 words is explained over the words the model reads, with a
    // warning naming it; a shorter one gets none.
    let words = |n: usize| (0..n).map(|i| if i % 2 == 0 { "great" } else { "film" }).collect::<Vec<_>>().join(" ");
    let over = dir.join("over.txt");
    std::fs::write(&over, format!("{}\n{}\n", words(400), words(450))).unwrap();
    let out = ok(&["explain", s(&run), "--input", s(&over), "--dir", s(&ex), "--steps", "4"]);
    assert!(out.contains("warning: text 2 is longer than the 400 words the model reads; only the first 400 are explained"), "{out}");
    assert!(!out.contains("text 1 is"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(ex.join("explain.json")).unwrap()).unwrap();
    assert_eq!(v[1]["words"].as_array().unwrap().len(), 400);
    // Bytes that are not UTF-8 are refused with their line, as translate refuses them.
    let latin1 = dir.join("latin1.txt");
    std::fs::write(&latin1, b"a great film\nun film tr\xe8s bon\n").unwrap();
    fails_with(&["explain", s(&run), "--input", s(&latin1), "--dir", s(&ex)], &["latin1.txt: line 2 is not UTF-8"]);
    // An input that is one of the files explain writes is refused, and left as it was.
    let before = std::fs::read(ex.join("explain.json")).unwrap();
    fails_with(&["explain", s(&run), "--input", s(&ex.join("explain.json")), "--dir", s(&ex)], &["--input", "is one of the files chi explain writes"]);
    assert_eq!(std::fs::read(ex.join("explain.json")).unwrap(), before);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `chi predict` uses the preprocessing checksummed in the model's own weights: copied into
/// another run's folder, or beside an edited `data.json`, a model predicts what it predicts in
/// its own run, and the disagreeing file is named. Outputs that overflow (finite weights too
/// large for the forward pass) are an error in predict and eval, not `NaN` scores and a class.
#[test]
fn predict_uses_the_models_own_schema_and_refuses_outputs_that_overflow() {
    let dir = tmp("own-schema");
    let data = examples().join("fruit.csv");
    let (a, b) = (dir.join("a"), dir.join("b"));
    ok(&["train", "--data", s(&data), "--target", "fruit", "--steps", "30", "--out", s(&a), "--quiet", "--no-plots"]);
    ok(&["--seed", "5", "train", "--data", s(&data), "--target", "fruit", "--steps", "30", "--out", s(&b), "--quiet", "--no-plots"]);
    let pin = dir.join("pin.csv");
    let head: String = std::fs::read_to_string(&data).unwrap().lines().take(6).map(|l| format!("{l}\n")).collect();
    std::fs::write(&pin, head).unwrap();
    let rows = |t: &str| t.lines().filter(|l| l.contains("pin.csv:")).map(String::from).collect::<Vec<_>>();
    let own = ok(&["predict", s(&a.join("model.safetensors")), "--input", s(&pin)]);
    assert_eq!(rows(&own).len(), 5, "{own}");
    assert!(!own.contains("differs from the data schema"), "{own}");
    std::fs::copy(a.join("model.safetensors"), b.join("model-a.safetensors")).unwrap();
    let moved = ok(&["predict", s(&b.join("model-a.safetensors")), "--input", s(&pin)]);
    assert!(moved.contains("data.json differs from the data schema saved in"), "{moved}");
    assert_eq!(rows(&moved), rows(&own));
    // An edited data.json in the model's own run: the classes swapped.
    let f = a.join("data.json");
    let mut schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    schema["classes"].as_array_mut().unwrap().reverse();
    std::fs::write(&f, serde_json::to_string(&schema).unwrap()).unwrap();
    let edited = ok(&["predict", s(&a), "--input", s(&pin)]);
    assert!(edited.contains("differs from the data schema saved in"), "{edited}");
    assert_eq!(rows(&edited), rows(&own));
    // Weights of 3e38: finite, so the loader takes them; the forward pass overflows.
    let bytes = chi_nn::checkpoint::read_safetensors(&a.join("model.safetensors")).unwrap();
    let (meta, mut tensors) = chi_nn::checkpoint::unpack::<f32>(&a.join("model.safetensors"), &bytes).unwrap();
    for (_, _, v) in tensors.iter_mut() {
        v.iter_mut().for_each(|x| *x = 3e38);
    }
    let huge = dir.join("huge.safetensors");
    std::fs::write(&huge, chi_nn::checkpoint::pack(&tensors, &meta).unwrap()).unwrap();
    fails_with(&["predict", s(&huge), "--input", s(&pin)], &["huge.safetensors", "outputs for", "are not finite", "overflow"]);
    fails_with(&["eval", s(&huge), "--data", s(&data)], &["outputs for example", "are not finite"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The sizes of the synthetic datasets (`n_train`, `n_test`, `noise`, `classes`) and dataset
/// options are refused where the dataset does not read them (a file; XOR's classes; the first
/// token's noise), and XOR's label-flip `noise` is a probability.
#[test]
fn dataset_settings_the_dataset_does_not_read_are_errors() {
    let dir = tmp("unused-sizes");
    let data = examples().join("fruit.csv");
    let cfg = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let file = cfg("file.toml", &format!("dataset = \"file\"\nsteps = 2\n[data]\npath = {:?}\ntarget = \"fruit\"\nclasses = 9\n", s(&data)));
    fails_with(&["train", "--config", s(&file), "--out", s(&dir.join("r1")), "--quiet", "--no-plots"], &["dataset file", "classes", "does not use it"]);
    let opts = cfg("opts.toml", &format!("dataset = \"file\"\nsteps = 2\n[data]\npath = {:?}\ntarget = \"fruit\"\n[data.options]\nfoo = 1\n", s(&data)));
    fails_with(&["train", "--config", s(&opts), "--out", s(&dir.join("r2")), "--quiet", "--no-plots"], &["foo"]);
    let mixed = cfg("spirals.toml", "dataset = \"spirals\"\n[data]\nclasses = 4\n");
    fails_with(&["train", "--config", s(&mixed), "--data", s(&data), "--target", "fruit", "--steps", "2", "--out", s(&dir.join("r3")), "--quiet", "--no-plots"], &["classes", "does not use it"]);
    let xor = cfg("xor.toml", "dataset = \"xor-noise\"\nsteps = 2\n[data]\nclasses = 9\n");
    fails_with(&["train", "--config", s(&xor), "--out", s(&dir.join("r4")), "--quiet", "--no-plots"], &["dataset xor-noise", "classes"]);
    let flip = cfg("flip.toml", "dataset = \"xor-noise\"\nsteps = 2\n[data]\nnoise = 5.0\n");
    fails_with(&["train", "--config", s(&flip), "--out", s(&dir.join("r5")), "--quiet", "--no-plots"], &["noise", "0 to 1"]);
    let first = cfg("first.toml", "dataset = \"first-token\"\nmodel = \"lstm\"\nsteps = 2\n[data]\nnoise = 0.7\n");
    fails_with(&["train", "--config", s(&first), "--out", s(&dir.join("r6")), "--quiet", "--no-plots"], &["dataset first-token", "noise"]);
    // Read where the dataset uses them; a directory given as the config is named as one.
    let spirals = cfg("ok.toml", "dataset = \"spirals\"\nsteps = 2\n[data]\nclasses = 4\nnoise = 0.2\n");
    ok(&["train", "--config", s(&spirals), "--out", s(&dir.join("r7")), "--quiet", "--no-plots"]);
    fails_with(&["train", "--config", s(&dir), "--out", s(&dir.join("r8"))], &["is a directory, not a config file"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A relative path in a config file is read from the config's folder, from any working
/// directory, also when the config is given again to `--resume`; a relative flag stays
/// relative to the working directory.
#[test]
fn relative_paths_in_a_config_are_read_from_its_folder() {
    let dir = tmp("rel-config");
    std::fs::copy(examples().join("fruit.csv"), dir.join("fruit.csv")).unwrap();
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub").join("rel.toml"), "dataset = \"file\"\nsteps = 4\n[data]\npath = \"../fruit.csv\"\ntarget = \"fruit\"\n").unwrap();
    let run = |cwd: &Path, args: &[&str]| Command::new(chi_bin()).args(args).current_dir(cwd).output().unwrap();
    let o = run(&dir, &["train", "--config", "sub/rel.toml", "--out", "r", "--quiet", "--no-plots"]);
    assert!(o.status.success(), "{}", text(&o));
    let stored = std::fs::read_to_string(dir.join("r").join("config.toml")).unwrap();
    let want = std::fs::canonicalize(dir.join("fruit.csv")).unwrap();
    let stored_path = stored.lines().find(|l| l.starts_with("path = ")).unwrap().trim_start_matches("path = ").trim_matches('"').to_string();
    assert_eq!(std::fs::canonicalize(&stored_path).unwrap(), want, "{stored}");
    // From the config's own folder, and resuming with the same file for more steps.
    std::fs::write(dir.join("sub").join("more.toml"), "dataset = \"file\"\nsteps = 6\n[data]\npath = \"../fruit.csv\"\ntarget = \"fruit\"\n").unwrap();
    let o = run(&dir.join("sub"), &["train", "--resume", "--config", "more.toml", "--out", "../r", "--quiet", "--no-plots"]);
    assert!(o.status.success(), "{}", text(&o));
    // A flag's relative path is read from the working directory.
    let o = run(&dir.join("sub"), &["train", "--config", "rel.toml", "--data", "../fruit.csv", "--out", "../r2", "--quiet", "--no-plots"]);
    assert!(o.status.success(), "{}", text(&o));
    // A target column named in a config whose data comes from a flag stays a column name.
    std::fs::write(dir.join("sub").join("col.toml"), "dataset = \"file\"\nsteps = 2\n[data]\ntarget = \"fruit\"\n").unwrap();
    let o = run(&dir, &["train", "--config", "sub/col.toml", "--data", "fruit.csv", "--out", "r4", "--quiet", "--no-plots"]);
    assert!(o.status.success(), "{}", text(&o));
    std::fs::write(dir.join("sub").join("missing.toml"), "dataset = \"file\"\n[data]\npath = \"nowhere.csv\"\ntarget = \"fruit\"\n").unwrap();
    let o = run(&dir, &["train", "--config", "sub/missing.toml", "--out", "r3", "--quiet", "--no-plots"]);
    assert!(!o.status.success() && text(&o).contains("sub/nowhere.csv"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--hidden`, `--dropout` and `activation` are refused by the models that do not read them,
/// naming what the model has instead; where a model reads them they train.
#[test]
fn model_settings_the_model_does_not_read_are_errors() {
    let dir = tmp("unused-model");
    let reviews = examples().join("reviews");
    let train = |model: &str, extra: &[&str]| {
        let mut a = vec!["train", "--data", s(&reviews), "--model", model, "--steps", "2", "--quiet", "--no-plots"];
        a.extend_from_slice(extra);
        a.iter().map(|x| x.to_string()).collect::<Vec<_>>()
    };
    let out = |n: &str| dir.join(n).to_str().unwrap().to_string();
    for (model, extra, says) in [
        ("ca-bsfe", &["--hidden", "7"][..], "ca-bsfe does not use hidden"),
        ("ca-bsfe", &["--dropout", "0.3"], "ca-bsfe does not use dropout"),
        ("text-cnn", &["--hidden", "7,7"], "text-cnn does not use hidden"),
        ("han", &["--dropout", "0.5"], "han does not use dropout"),
    ] {
        let mut a = train(model, extra);
        a.extend(["--out".into(), out(&format!("{model}-{}", extra[0].trim_start_matches('-')))]);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        fails_with(&a, &[says]);
    }
    let cfg = dir.join("lstm.toml");
    std::fs::write(&cfg, "model = \"lstm\"\ndataset = \"first-token\"\nsteps = 2\n[model_options]\nactivation = \"relu\"\n").unwrap();
    fails_with(&["train", "--config", s(&cfg), "--out", &out("lstm"), "--quiet", "--no-plots"], &["lstm does not use activation", "gate nonlinearities"]);
    // Read by the text CNN: its dropout.
    let mut a = train("text-cnn", &["--dropout", "0.3"]);
    a.extend(["--out".into(), out("text-cnn-ok")]);
    ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Damaged files of a run are named for what they are: a truncated latest checkpoint points to
/// the older one, a `data.json` that is not a schema is not "the data changed", and a report
/// that cannot be written in the run's folder says where else it can go.
#[test]
fn damaged_run_files_are_named_for_what_they_are() {
    let dir = tmp("damaged-run");
    let data = examples().join("fruit.csv");
    let run = dir.join("run");
    let resume = ["train", "--resume", "--steps", "30", "--out", s(&run), "--quiet", "--no-plots"];
    ok(&["train", "--data", s(&data), "--target", "fruit", "--steps", "20", "--checkpoint-every", "10", "--out", s(&run), "--quiet", "--no-plots"]);
    let latest = run.join("checkpoints/step-00000020.ckpt.safetensors");
    let whole = std::fs::read(&latest).unwrap();
    std::fs::write(&latest, &whole[..whole.len() / 2]).unwrap();
    fails_with(&resume, &["step-00000020", "an older checkpoint is", "step-00000010", "move the damaged one out"]);
    std::fs::write(&latest, &whole).unwrap();
    let schema = std::fs::read(run.join("data.json")).unwrap();
    std::fs::write(run.join("data.json"), "{").unwrap();
    let e = fails_with(&resume, &["data.json is not a data schema written by chi train"]);
    assert!(!e.contains("the data changed"), "{e}");
    std::fs::write(run.join("data.json"), &schema).unwrap();
    // The report's default folder is taken by a file: the message offers --report.
    std::fs::write(run.join("eval-test"), "not a folder").unwrap();
    fails_with(&["eval", s(&run)], &["eval-test", "give --report DIR"]);
    ok(&["eval", s(&run), "--report", s(&dir.join("elsewhere"))]);
    let _ = std::fs::remove_dir_all(&dir);
}
