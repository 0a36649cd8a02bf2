//! `chi train` and `chi eval` on user data that used to pass without a word: a class folder
//! that is a link to another, and an evaluation of many classes.

use super::user_data::{fails_with, ok, s};
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chi-userdata-more-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A class folder that is a symbolic link to another class folder is not a class: its files
/// are read once, under their own class, and the warning names the link.
#[cfg(unix)]
#[test]
fn a_class_folder_linked_to_another_is_read_once_and_said() {
    let root = tmp("link");
    let data = root.join("data");
    for i in 0..12 {
        for (c, t) in [("pos", "good great fun"), ("neg", "bad awful dull")] {
            std::fs::create_dir_all(data.join(c)).unwrap();
            std::fs::write(data.join(c).join(format!("{i}.txt")), format!("{t} {i}")).unwrap();
        }
    }
    std::os::unix::fs::symlink("pos", data.join("good")).unwrap();
    let run = root.join("run");
    let t = ok(&["train", "--data", s(&data), "--steps", "5", "--quiet", "--no-plots", "--out", s(&run)]);
    assert!(t.contains("2 classes: neg, pos"), "{t}");
    assert!(t.contains("warning: ") && t.contains("data/good: the class folder \"good\" is a symbolic link to the class folder \"pos\" and is skipped"), "{t}");
    let e = ok(&["eval", s(&run), "--split", "train", "--report", s(&root.join("ev"))]);
    assert!(!e.contains("good  "), "no class good in the report:\n{e}");
    let _ = std::fs::remove_dir_all(&root);
}

/// The evaluation of 40 classes prints the confusion of the most frequent ones, with the
/// others summed, and says where the whole matrix is; confusion.csv holds every class.
#[test]
fn eval_of_many_classes_prints_a_bounded_confusion_matrix() {
    let root = tmp("many");
    let csv = root.join("many.csv");
    let mut text = String::from("x,y,label\n");
    for i in 0..400 {
        let c = i % 40;
        text.push_str(&format!("{},{},k{c}\n", c as f64 + (i / 40) as f64 * 0.01, (c % 5) as f64));
    }
    std::fs::write(&csv, text).unwrap();
    let run = root.join("run");
    ok(&["train", "--data", s(&csv), "--steps", "5", "--quiet", "--no-plots", "--out", s(&run)]);
    let report = root.join("ev");
    let e = ok(&["eval", s(&run), "--split", "train", "--report", s(&report)]);
    assert!(e.contains("confusion matrix of the 29 most frequent of the 40 classes, the others summed as \"(other classes)\"") && e.contains("every class is in confusion.csv"), "{e}");
    let matrix: Vec<&str> = e.lines().skip_while(|l| !l.starts_with("confusion matrix")).skip(1).take_while(|l| !l.starts_with("wrote")).collect();
    assert_eq!(matrix.len(), 31, "a header, 29 classes and the others:\n{e}");
    assert_eq!(std::fs::read_to_string(report.join("confusion.csv")).unwrap().lines().count(), 41);
    let svg = std::fs::read_to_string(report.join("confusion.svg")).unwrap();
    assert!(svg.contains("the 29 most frequent of 40 classes"), "the picture says so");
    let _ = std::fs::remove_dir_all(&root);
}

/// A run that ends while its validation loss is still falling says so, with the passes over
/// the data its steps made, so a user knows more steps may help.
#[test]
fn a_run_stopped_while_still_improving_says_so() {
    let root = tmp("improving");
    let fruit = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/data/fruit.csv");
    let run = root.join("run");
    // A small learning rate: the loss is still falling after 30 steps.
    let t = ok(&["train", "--data", s(&fruit), "--target", "fruit", "--steps", "30", "--eval-every", "10", "--lr", "0.003", "--quiet", "--no-plots", "--out", s(&run)]);
    assert!(t.contains("note: the validation loss was still falling when the run ended") && t.contains("30 steps were") && t.contains("passes over the 144 training examples"), "{t}");
}

/// An optimiser named without a rate gets its own (and says so); a run whose loss blew up and
/// stayed up is called diverged, with what to change.
#[test]
fn an_optimiser_gets_its_own_rate_and_a_diverged_run_is_named() {
    let root = tmp("optim");
    let fruit = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/data/fruit.csv");
    let run = |name: &str, extra: &[&str]| {
        let out = root.join(name);
        let mut args = vec!["train", "--data", s(&fruit), "--target", "fruit", "--steps", "300", "--quiet", "--no-plots", "--out", s(&out)];
        args.extend_from_slice(extra);
        (ok(&args), std::fs::read_to_string(out.join("config.toml")).unwrap())
    };
    let (t, cfg) = run("adam", &["--optim", "adam"]);
    assert!(t.contains("note: --optim adam without --lr: learning rate 0.001") && cfg.contains("lr = 0.001"), "{t}\n{cfg}");
    assert!(!t.contains("diverged"), "{t}");
    let (t, _) = run("hot", &["--optim", "adam", "--lr", "30"]);
    assert!(t.contains("warning: the training loss ended at") && t.contains("the run diverged; a lower --lr (now 30)"), "{t}");
}

/// A text model on a CSV whose texts are short and repeated (so read as categories) names the
/// column to give as --text-column.
#[test]
fn a_text_model_on_short_texts_read_as_categories_names_the_column() {
    let root = tmp("shorttext");
    let mut csv = String::from("review,label\n");
    for i in 0..60 {
        csv.push_str(if i % 2 == 0 { "great,pos\n" } else { "awful,neg\n" });
    }
    let data = root.join("short.csv");
    std::fs::write(&data, csv).unwrap();
    fails_with(&["train", "--data", s(&data), "--model", "lstm", "--steps", "3", "--quiet", "--no-plots", "--out", s(&root.join("run"))], &["model lstm takes text data", "--text-column \"review\""]);
    let t = ok(&["train", "--data", s(&data), "--model", "lstm", "--text-column", "review", "--steps", "3", "--quiet", "--no-plots", "--out", s(&root.join("run2"))]);
    assert!(t.contains("trained lstm"), "{t}");
}

/// Correlations of one example (or of equal targets) are undefined, not a failure of the model:
/// `chi eval` says so and succeeds; the run's other metrics stay finite numbers.
#[test]
fn undefined_correlations_are_noted_not_failed() {
    let root = tmp("undefined");
    let mut csv = String::from("a,b,y\n");
    for i in 0..80 {
        let (a, b) = ((i as f64 * 0.37).sin(), (i as f64 * 0.11).cos());
        csv.push_str(&format!("{a},{b},{}\n", 3.0 * a - b + 0.01 * (i % 7) as f64));
    }
    let data = root.join("reg.csv");
    std::fs::write(&data, csv).unwrap();
    let run = root.join("run");
    ok(&["train", "--data", s(&data), "--target", "y", "--task", "regression", "--steps", "50", "--quiet", "--no-plots", "--out", s(&run)]);
    let one = root.join("one.csv");
    std::fs::write(&one, "a,b,y\n0.5,0.2,1.3\n").unwrap();
    let t = ok(&["eval", s(&run), "--data", s(&one)]);
    assert!(t.contains("pearson NaN") && t.contains("note: pearson, r2 undefined (n/a) on the file"), "{t}");
    let same = root.join("same.csv");
    std::fs::write(&same, "a,b,y\n0.5,0.2,7.5\n0.1,0.9,7.5\n-0.3,0.4,7.5\n").unwrap();
    let t = ok(&["eval", s(&run), "--data", s(&same)]);
    assert!(t.contains("r2 NaN") && t.contains("undefined"), "{t}");
}

/// `--model rcnn` (Lei's recurrent convolution) trains on a text folder, then evaluates,
/// predicts with saliency and is explained like the other text models, bidirectional and with
/// other poolings and decays too; its options out of range are errors naming them.
#[test]
fn the_rcnn_text_classifier_trains_predicts_and_explains() {
    let root = tmp("rcnn");
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/reviews");
    let run = root.join("run");
    let t = ok(&["train", "--data", s(&data), "--model", "rcnn", "--hidden", "16", "--steps", "300", "--quiet", "--no-plots", "--out", s(&run)]);
    let acc: f64 = t.split("test accuracy ").nth(1).and_then(|r| r.split(',').next()).unwrap().parse().unwrap();
    assert!(acc >= 0.8, "{t}");
    ok(&["eval", s(&run), "--split", "valid", "--report", s(&root.join("ev"))]);
    let input = root.join("new.txt");
    std::fs::write(&input, "The kettle broke after a week. Avoid it.\nThe lamp works perfectly. Love it!\n").unwrap();
    let o = ok(&["predict", s(&run), "--input", s(&input), "--saliency", "2"]);
    let lines: Vec<&str> = o.lines().filter(|l| l.contains("new.txt:")).collect();
    assert!(lines.len() == 2 && lines[0].contains(",negative,") && lines[1].contains(",positive,"), "{o}");
    ok(&["explain", s(&run), "--text", "The kettle broke after a week. Avoid it.", "--steps", "32", "--dir", s(&root.join("ex"))]);
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(root.join("ex/explain.json")).unwrap()).unwrap();
    let ig: f64 = j[0]["integrated_gradients"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).sum();
    let gap = j[0]["score"].as_f64().unwrap() - j[0]["baseline_score"].as_f64().unwrap();
    assert!((ig - gap).abs() < 1e-3 * gap.abs().max(1.0), "Σ IG {ig} vs f(x) − f(0) {gap}");
    for opts in [&["--bidirectional", "--model-option", "pooling=max", "--model-option", "decay=adaptive"][..], &["--model-option", "decay=learned", "--model-option", "pooling=last", "--model-option", "map=additive", "--model-option", "order=3"]] {
        let r = root.join(format!("run{}", opts.len()));
        let mut args = vec!["train", "--data", s(&data), "--model", "rcnn", "--hidden", "8,8", "--steps", "40", "--quiet", "--no-plots", "--out", s(&r)];
        args.extend(opts);
        ok(&args);
        assert_eq!(ok(&["predict", s(&r), "--input", s(&input)]).lines().filter(|l| l.contains("new.txt:")).count(), 2);
    }
    let bad = |opt: &str, needles: &[&str]| {
        let r = root.join("bad");
        fails_with(&["train", "--data", s(&data), "--model", "rcnn", "--steps", "2", "--quiet", "--out", s(&r), "--model-option", opt], needles);
    };
    bad("decay=1.5", &["\"decay\"", "[0, 1)", "1.5"]);
    bad("pooling=median", &["\"pooling\"", "\"median\""]);
    bad("map=cubic", &["\"map\"", "\"cubic\""]);
    bad("order=0", &["\"order\" must be 1 to 8", "got 0"]);
    bad("order=5000", &["\"order\" must be 1 to 8", "got 5000"]);
    bad("width=3", &["unknown option \"width\""]);
    let _ = std::fs::remove_dir_all(&root);
}

/// `chi explain` of a regression text model gives the score, the baseline and the attributions
/// in the target's own units, as `chi predict` gives the prediction (they were in standardised
/// units: 0.94 where predict said 110.8, every attribution divided by the target's spread).
#[test]
fn explain_of_a_regression_model_speaks_in_the_targets_units() {
    let root = tmp("reg-explain");
    let data = root.join("reg.csv");
    let mut csv = String::from("text,score\n");
    let words = ["great", "fine", "bad", "dull", "fun", "awful"];
    let value = [12.0, 4.0, -9.0, -5.0, 7.0, -12.0];
    for i in 0..120 {
        let (a, b) = (i % 6, (i / 6) % 6);
        csv += &format!("the film was {} and {},{}\n", words[a], words[b], 100.0 + value[a] + value[b] + (i % 3) as f64);
    }
    std::fs::write(&data, csv).unwrap();
    let run = root.join("run");
    ok(&["train", "--data", s(&data), "--model", "bow", "--target", "score", "--task", "regression", "--steps", "200", "--quiet", "--no-plots", "--out", s(&run)]);
    let text = "the film was great and fun";
    let input = root.join("in.csv");
    std::fs::write(&input, format!("text\n{text}\n")).unwrap();
    let p = ok(&["predict", s(&run), "--input", s(&input)]);
    let predicted: f64 = p.lines().find(|l| l.contains("in.csv:")).and_then(|l| l.rsplit(',').next()).unwrap().parse().unwrap();
    ok(&["explain", s(&run), "--text", text, "--steps", "64", "--dir", s(&root.join("ex"))]);
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(root.join("ex/explain.json")).unwrap()).unwrap();
    let (score, base) = (j[0]["score"].as_f64().unwrap(), j[0]["baseline_score"].as_f64().unwrap());
    assert!((score - predicted).abs() <= 1e-3 * predicted.abs(), "explain's score {score} vs predict's {predicted}");
    assert!(score > 50.0 && base > 50.0, "in the target's units (around 100): score {score}, baseline {base}");
    let ig: f64 = j[0]["integrated_gradients"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).sum();
    assert!((ig - (score - base)).abs() < 1e-2 * (score - base).abs().max(1.0), "Σ IG {ig} vs f(x) − f(0) {}", score - base);
    let err = j[0]["completeness_error"].as_f64().unwrap();
    assert!((err - (ig - (score - base))).abs() < 1e-6 * score.abs(), "completeness error {err} in the same units");
    let _ = std::fs::remove_dir_all(&root);
}

/// A data file that would take more memory to read than the machine has available is refused
/// before it is read, with its size, the need and what is available (reading it would end in a
/// failed allocation, an abort with no word from chi, or the kernel killing the process).
/// `CHI_MEMORY_LIMIT` stands in for a smaller machine.
#[test]
fn a_file_too_large_for_the_memory_is_refused_before_it_is_read() {
    let root = tmp("room");
    let data = root.join("big.csv");
    let mut csv = String::from("a,b,label\n");
    for i in 0..20_000 {
        csv += &format!("{}.5,{},{}\n", i % 97, i % 13, i % 2);
    }
    std::fs::write(&data, &csv).unwrap();
    let run = |limit: &str| {
        std::process::Command::new(super::user_data::chi_bin())
            .args(["train", "--data", s(&data), "--steps", "2", "--quiet", "--no-plots", "--out", s(&root.join(format!("run{limit}")))])
            .env("CHI_MEMORY_LIMIT", limit)
            .output()
            .unwrap()
    };
    let o = run(&(csv.len() * 2).to_string());
    let t = super::user_data::text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    for needle in ["big.csv", "reading this CSV file takes about", "× its size", "available", "CHI_MEMORY_LIMIT"] {
        assert!(t.contains(needle), "lacks {needle:?}:\n{t}");
    }
    assert!(!t.contains("panicked"), "{t}");
    let o = run(&(csv.len() * 1000).to_string());
    assert!(o.status.success(), "{}", super::user_data::text(&o));
    let _ = std::fs::remove_dir_all(&root);
}
