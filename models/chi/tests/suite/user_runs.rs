//! `chi train`, `chi eval`, `chi predict` and `chi explain` on the user's data as a workflow:
//! what a run says it learns, resuming only on the same data, reports that do not overwrite
//! each other, the CA-RNN's default optimiser on a simple text task, standard input, and the
//! messages for a repeated feature column or a model without saliency.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::reliability::snapshot;
use super::user_data::{chi_bin, fails_with, ok, s, text};

/// `chi ARGS` with `input` on its standard input.
fn chi_stdin(args: &[&str], input: &str) -> Output {
    let mut c = Command::new(chi_bin()).args(args).env_remove("CHI_MAX_TENSOR_ELEMENTS").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    c.wait_with_output().unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chi-userruns-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A number after `key ` in chi's `key value, …` output.
fn metric(t: &str, key: &str) -> f64 {
    let at = t.find(&format!("{key} ")).unwrap_or_else(|| panic!("no {key} in:\n{t}"));
    t[at + key.len() + 1..].split(|c: char| c == ',' || c.is_whitespace()).next().unwrap().parse().unwrap()
}

/// A small deterministic generator (64-bit LCG) for test data.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn unit(&mut self) -> f64 {
        self.next() as f64 / (1u64 << 31) as f64
    }
}

/// `n` rows `x,y,z,value` with value = 2x + y − z: `y` is a coordinate, `value` the quantity
/// the user means, but `y` is among the default target names.
fn xyz_csv(path: &Path, n: usize) {
    let mut g = Lcg(7);
    let mut t = String::from("x,y,z,value\n");
    for _ in 0..n {
        let (x, y, z) = (g.unit() * 4.0 - 2.0, g.unit() * 4.0 - 2.0, g.unit() * 4.0 - 2.0);
        t.push_str(&format!("{x:.4},{y:.4},{z:.4},{:.4}\n", 2.0 * x + y - z));
    }
    std::fs::write(path, t).unwrap();
}

/// `n` reviews of 5–14 filler words with `excellent` (good) or `terrible` (bad) somewhere in
/// them, each ending in `, "really"`: the one word decides the class, and every text ends with
/// the same tokens, as real reviews end with punctuation.
fn keyword_csv(path: &Path, n: usize, seed: u64) {
    let filler: Vec<&str> = "the a product box came arrived today yesterday with and it was is delivery price color size shop store item".split(' ').collect();
    let mut g = Lcg(seed);
    let mut t = String::from("review,label\n");
    for _ in 0..n {
        let good = g.below(2) == 1;
        let mut words: Vec<&str> = (0..5 + g.below(10)).map(|_| filler[g.below(filler.len())]).collect();
        let at = g.below(words.len() + 1);
        words.insert(at, if good { "excellent" } else { "terrible" });
        t.push_str(&format!("\"{}, \"\"really\"\"\",{}\n", words.join(" "), if good { "good" } else { "bad" }));
    }
    std::fs::write(path, t).unwrap();
}

/// `n` rows `a,b,label` of three separable classes.
fn classes_csv(path: &Path, n: usize, scale_a: f64) {
    let mut g = Lcg(3);
    let mut t = String::from("a,b,label\n");
    for i in 0..n {
        let c = i % 3;
        let (a, b) = (c as f64 + g.unit() * 0.5, g.unit());
        t.push_str(&format!("{:.4},{b:.4},{}\n", a * scale_a, ["red", "green", "blue"][c]));
    }
    std::fs::write(path, t).unwrap();
}

/// `chi train` says which target, task and features it uses, even with `--quiet`: a coordinate
/// column `y` taken as the default target is visible at once.
#[test]
fn train_names_the_target_task_and_inputs() {
    let root = tmp("describe");
    let xyz = root.join("xyz.csv");
    xyz_csv(&xyz, 120);
    let t = ok(&["train", "--data", s(&xyz), "--steps", "5", "--quiet", "--no-plots", "--out", s(&root.join("xyz"))]);
    assert!(t.contains("data: target \"y\" (regression: the targets are numbers with fractions or over 20 values; --task classification if they are classes), features x, z, value (3 numeric, 0 categorical)"), "{t}");
    let reviews = root.join("reviews.csv");
    keyword_csv(&reviews, 60, 1);
    let t = ok(&["train", "--data", s(&reviews), "--model", "bow", "--steps", "5", "--quiet", "--no-plots", "--out", s(&root.join("text"))]);
    assert!(t.contains("data: target \"label\" (classification, 2 classes: bad, good), text column \"review\", vocabulary "), "{t}");
    // Whole-number targets: classes, and the line says why and how to change it.
    let codes = root.join("codes.csv");
    let mut c = String::from("a,b,label\n");
    for i in 0..90 {
        c.push_str(&format!("{},{},{}\n", i % 7, i % 5, [10, 20, 30][i % 3]));
    }
    std::fs::write(&codes, c).unwrap();
    let t = ok(&["train", "--data", s(&codes), "--steps", "2", "--quiet", "--no-plots", "--out", s(&root.join("codes"))]);
    assert!(t.contains("(classification, 3 classes: 10, 20, 30: the targets are whole numbers, at most 20 distinct; --task regression if they are amounts)"), "{t}");
    let t = ok(&["train", "--data", s(&codes), "--task", "classification", "--steps", "2", "--quiet", "--no-plots", "--out", s(&root.join("codes2"))]);
    assert!(t.contains("(classification, 3 classes: 10, 20, 30), features"), "{t}");
    let _ = std::fs::remove_dir_all(&root);
}

/// Without `--model`, texts train the bag-of-words model (an `id` column beside them is left
/// out, and said) and tables the multi-layer perceptron; a model named is kept, and a table
/// model on texts is an error that names the text models.
#[test]
fn the_default_model_fits_the_data() {
    let root = tmp("default-model");
    let plain = root.join("reviews.csv");
    keyword_csv(&plain, 80, 2);
    let with_id: String = std::fs::read_to_string(&plain)
        .unwrap()
        .lines()
        .enumerate()
        .map(|(i, l)| if i == 0 { format!("id,{l}\n") } else { format!("{},{l}\n", 500 + i) })
        .collect();
    let ids = root.join("with_id.csv");
    std::fs::write(&ids, with_id).unwrap();
    let t = ok(&["train", "--data", s(&ids), "--steps", "60", "--quiet", "--no-plots", "--out", s(&root.join("text"))]);
    assert!(t.contains("trained bow on") && t.contains("\"id\" look(s) like row identifiers"), "{t}");
    assert!(metric(&t, "test accuracy") > 0.9, "{t}");
    let table = root.join("classes.csv");
    classes_csv(&table, 90, 1.0);
    let t = ok(&["train", "--data", s(&table), "--steps", "5", "--quiet", "--no-plots", "--out", s(&root.join("table"))]);
    assert!(t.contains("trained mlp on"), "{t}");
    fails_with(&["train", "--data", s(&plain), "--model", "mlp", "--steps", "5", "--quiet", "--no-plots", "--out", s(&root.join("mlp"))], &["model mlp takes", "bow"]);
    let _ = std::fs::remove_dir_all(&root);
}

/// The starting command repeated with `--resume` resumes when it names the data by a relative
/// path (the run stored the absolute one); a different file under the same name is refused.
#[test]
fn resume_accepts_the_starting_commands_relative_data_path() {
    let root = tmp("resume-relative");
    classes_csv(&root.join("colours.csv"), 150, 1.0);
    std::fs::create_dir_all(root.join("other")).unwrap();
    classes_csv(&root.join("other").join("colours.csv"), 150, 1.0);
    let chi = |data: &str, extra: &[&str]| {
        let mut a = vec!["train", "--data", data, "--out", "run", "--quiet", "--no-plots", "--checkpoint-every", "10"];
        a.extend_from_slice(extra);
        Command::new(chi_bin()).args(&a).current_dir(&root).env_remove("CHI_MAX_TENSOR_ELEMENTS").output().unwrap()
    };
    let text = |o: &Output| format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let o = chi("colours.csv", &["--steps", "20"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = chi("colours.csv", &["--steps", "40", "--resume"]);
    assert!(o.status.success() && text(&o).contains("for 40 steps"), "{}", text(&o));
    let o = chi("other/colours.csv", &["--steps", "60", "--resume"]);
    assert!(!o.status.success() && text(&o).contains("--data other/colours.csv conflicts"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&root);
}

/// `--resume` continues only on the data the run started with: a changed data file (or test
/// file) is refused with a message naming it, and leaves the run as it was; the same data
/// resumes. A run made before runs recorded a fingerprint is checked by its data schema.
#[test]
fn resume_refuses_data_that_changed_since_the_run_started() {
    let root = tmp("resume");
    let (data, test, run) = (root.join("colours.csv"), root.join("held_out.csv"), root.join("run"));
    classes_csv(&data, 150, 1.0);
    classes_csv(&test, 30, 1.0);
    let original = std::fs::read(&data).unwrap();
    let train = |steps: &'static str, extra: &[&'static str]| -> Vec<String> {
        let mut a = vec!["train", "--steps", steps, "--quiet", "--no-plots", "--checkpoint-every", "10", "--out", s(&run)];
        a.extend_from_slice(extra);
        a.into_iter().map(String::from).collect()
    };
    fn strs(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    let run_ok = |v: Vec<String>| ok(&strs(&v));
    let run_fails = |v: Vec<String>, needles: &[&str]| fails_with(&strs(&v), needles);
    let start: Vec<String> = [train("20", &[]), ["--data", s(&data), "--test", s(&test)].map(String::from).to_vec()].concat();
    run_ok(start);
    assert!(run.join("data-fingerprint.json").is_file());
    let before = snapshot(&run);

    // Column a rescaled: the statistics of the run's data.json would change without a word.
    classes_csv(&data, 150, 100.0);
    let changed = format!("the data ({}) changed since this run started", std::path::absolute(&data).unwrap().display());
    run_fails(train("40", &["--resume"]), &[&changed, "start a new run (another --out, or --overwrite)"]);
    assert_eq!(snapshot(&run), before, "a refused resume changed the run");
    // The test file counts too.
    std::fs::write(&data, &original).unwrap();
    classes_csv(&test, 33, 1.0);
    run_fails(train("40", &["--resume"]), &["held_out.csv", "changed since this run started"]);
    classes_csv(&test, 30, 1.0);
    let t = run_ok(train("40", &["--resume"]));
    assert!(t.contains("for 40 steps"), "{t}");

    // A run without a fingerprint (made by an earlier chi): the refitted schema decides.
    std::fs::remove_file(run.join("data-fingerprint.json")).unwrap();
    classes_csv(&data, 150, 100.0);
    run_fails(train("60", &["--resume"]), &["gives another preprocessing than the run's", "data.json", "start a new run"]);
    std::fs::write(&data, &original).unwrap();
    let t = run_ok(train("60", &["--resume"]));
    assert!(t.contains("for 60 steps"), "{t}");

    // Statistics whose JSON text does not read back to the same bits still resume (the schema
    // is compared as the text the run wrote), with or without a fingerprint.
    let (xyz, xrun) = (root.join("xyz.csv"), root.join("xyz"));
    xyz_csv(&xyz, 200);
    let xs = |steps: &str| ["train", "--data", s(&xyz), "--steps", steps, "--checkpoint-every", "5", "--quiet", "--no-plots", "--out", s(&xrun)].map(String::from).to_vec();
    run_ok(xs("10"));
    let t = run_ok(["train", "--steps", "20", "--quiet", "--no-plots", "--out", s(&xrun), "--resume"].map(String::from).to_vec());
    assert!(t.contains("for 20 steps"), "{t}");
    std::fs::remove_file(xrun.join("data-fingerprint.json")).unwrap();
    let t = run_ok(["train", "--steps", "30", "--quiet", "--no-plots", "--out", s(&xrun), "--resume"].map(String::from).to_vec());
    assert!(t.contains("for 30 steps"), "{t}");
    let _ = std::fs::remove_dir_all(&root);
}

/// `chi eval RUN` rebuilds the run's splits from its data file: when the file, read again, no
/// longer gives the run's preprocessing, it says so instead of evaluating other inputs;
/// `--data FILE` still reads a file with the run's own preprocessing.
#[test]
fn eval_of_a_split_refuses_data_that_changed() {
    let root = tmp("eval-changed");
    let (data, run) = (root.join("colours.csv"), root.join("run"));
    classes_csv(&data, 150, 1.0);
    ok(&["train", "--data", s(&data), "--steps", "20", "--quiet", "--no-plots", "--out", s(&run)]);
    ok(&["eval", s(&run)]);
    let copy = root.join("copy.csv");
    std::fs::copy(&data, &copy).unwrap();
    classes_csv(&data, 150, 100.0);
    fails_with(&["eval", s(&run)], &["gives another preprocessing than the run's", "--data FILE"]);
    let t = ok(&["eval", s(&run), "--data", s(&copy)]);
    assert!(t.contains("150 examples"), "{t}");
    let _ = std::fs::remove_dir_all(&root);
}

/// The report of `chi eval RUN --data DIR/test.csv`, that of `chi eval RUN --split test` and that
/// of a checkpoint go to different directories.
#[test]
fn eval_reports_of_a_file_and_of_a_split_do_not_collide() {
    let root = tmp("reports");
    let (data, run) = (root.join("colours.csv"), root.join("run"));
    classes_csv(&data, 150, 1.0);
    ok(&["train", "--data", s(&data), "--steps", "20", "--checkpoint-every", "10", "--quiet", "--no-plots", "--out", s(&run)]);
    let split = ok(&["eval", s(&run), "--split", "test"]);
    assert!(split.contains(s(&run.join("eval-test").join("report.json"))), "{split}");
    let split_report = std::fs::read(run.join("eval-test/report.json")).unwrap();
    // A checkpoint's report goes beside the final model's, named by its step.
    let ckpt = std::fs::read_dir(run.join("checkpoints")).unwrap().map(|e| e.unwrap().path()).find(|p| s(p).contains("00000010")).expect("the step-10 checkpoint");
    let c = ok(&["eval", s(&ckpt)]);
    assert!(c.contains(s(&run.join("eval-test-step-10").join("report.json"))), "{c}");
    assert_eq!(std::fs::read(run.join("eval-test/report.json")).unwrap(), split_report, "the checkpoint's report replaced the final model's");
    std::fs::create_dir_all(root.join("other")).unwrap();
    let file = root.join("other/test.csv");
    classes_csv(&file, 36, 1.0);
    let e = ok(&["eval", s(&run), "--data", s(&file)]);
    assert!(e.contains("36 examples") && e.contains(s(&run.join("eval-file-test").join("report.json"))), "{e}");
    assert_eq!(std::fs::read(run.join("eval-test/report.json")).unwrap(), split_report, "the file's report replaced the split's");
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(run.join("eval-file-test/report.json")).unwrap()).unwrap();
    assert_eq!(r["examples"], 36);
    // Another file of the same stem in another folder gets its own directory; the first file,
    // evaluated again (named through a relative path), returns to its own.
    std::fs::create_dir_all(root.join("more")).unwrap();
    let second = root.join("more/test.csv");
    classes_csv(&second, 48, 1.0);
    let e = ok(&["eval", s(&run), "--data", s(&second)]);
    assert!(e.contains(s(&run.join("eval-file-test-2").join("report.json"))), "{e}");
    let examples = |d: &str| -> serde_json::Value {
        serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(run.join(d).join("report.json")).unwrap()).unwrap()["examples"].clone()
    };
    assert_eq!((examples("eval-file-test"), examples("eval-file-test-2")), (36.into(), 48.into()), "one file's report replaced the other's");
    let o = Command::new(chi_bin()).current_dir(&root).args(["eval", s(&run), "--data", "other/../other/test.csv"]).output().unwrap();
    let e = text(&o);
    assert!(o.status.success(), "{e}");
    assert!(e.contains(s(&run.join("eval-file-test").join("report.json"))) && !run.join("eval-file-test-3").exists(), "{e}");
    let _ = std::fs::remove_dir_all(&root);
}

/// A weights file whose `step` metadata is not a step count (edited to a negative or
/// unreadable number) is refused by name; it was read as step 0.
#[test]
fn a_weights_file_with_a_bad_step_is_refused_by_name() {
    let root = tmp("badstep");
    let (data, run) = (root.join("colours.csv"), root.join("run"));
    classes_csv(&data, 60, 1.0);
    ok(&["train", "--data", s(&data), "--steps", "5", "--quiet", "--no-plots", "--out", s(&run)]);
    let model = run.join("model.safetensors");
    let (meta, tensors) = chi_nn::checkpoint::unpack::<f32>(&model, &std::fs::read(&model).unwrap()).unwrap();
    assert_eq!(meta.get("step").map(String::as_str), Some("5"));
    ok(&["eval", s(&model)]);
    for bad in ["-5", "five", "18446744073709551615"] {
        let mut m = meta.clone();
        m.insert("step".into(), bad.into());
        std::fs::write(&model, chi_nn::checkpoint::pack(&tensors, &m).unwrap()).unwrap();
        fails_with(&["eval", s(&model)], &[s(&model), "bad step", bad]);
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// `chi train --model ca-rnn` without optimiser flags learns a task decided by one keyword, on
/// every seed tried (with Adagrad at lr 0.1, the general default, it stays near chance).
#[test]
fn ca_rnn_learns_a_keyword_task_with_its_default_optimiser() {
    let root = tmp("ca-rnn");
    let data = root.join("reviews.csv");
    keyword_csv(&data, 300, 11);
    for seed in ["0", "1"] {
        let run = root.join(format!("run{seed}"));
        let t = ok(&["--threads", "1", "--seed", seed, "train", "--data", s(&data), "--model", "ca-rnn", "--steps", "150", "--quiet", "--no-plots", "--out", s(&run)]);
        assert!(metric(&t, "test accuracy") >= 0.9, "seed {seed}: {t}");
        let config = std::fs::read_to_string(run.join("config.toml")).unwrap();
        assert!(config.contains("name = \"adagrad\"\nlr = 0.01\n"), "{config}");
    }
    // Flags still choose: --lr alone keeps Adagrad at that rate.
    let run = root.join("flags");
    ok(&["train", "--data", s(&data), "--model", "ca-rnn", "--steps", "1", "--lr", "0.2", "--quiet", "--no-plots", "--out", s(&run)]);
    assert!(std::fs::read_to_string(run.join("config.toml")).unwrap().contains("name = \"adagrad\"\nlr = 0.2\n"));
    assert!(ok(&["train", "--list"]).lines().any(|l| l.trim_start().starts_with("ca-rnn") && l.contains("adagrad lr 0.01")));
    let _ = std::fs::remove_dir_all(&root);
}

/// `--input -` reads standard input (predict and explain); a feature column named twice is an
/// error naming it; the saliency error of a model without embeddings lists every model that
/// has them.
#[test]
fn stdin_duplicate_features_and_the_saliency_model_list() {
    let root = tmp("small");
    let data = root.join("colours.csv");
    classes_csv(&data, 150, 1.0);
    fails_with(&["train", "--data", s(&data), "--features", "a,a,b", "--steps", "5", "--quiet", "--out", s(&root.join("dup"))], &["--features", "\"a\" more than once"]);
    assert!(!root.join("dup").join("config.toml").exists());
    let run = root.join("run");
    ok(&["train", "--data", s(&data), "--steps", "20", "--quiet", "--no-plots", "--out", s(&run)]);
    let rows = "a,b\n0.1,0.5\n2.2,0.5\n";
    let from_file = root.join("rows.csv");
    std::fs::write(&from_file, rows).unwrap();
    let want = ok(&["predict", s(&run), "--input", s(&from_file)]);
    let o = chi_stdin(&["predict", s(&run), "--input", "-"], rows);
    assert!(o.status.success(), "{}", text(&o));
    let got = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(got.lines().count(), 3, "{got}");
    assert!(got.lines().nth(1).unwrap().starts_with("stdin:2,"), "{got}");
    let probabilities = |t: &str| t.lines().skip(1).map(|l| l.split_once(',').unwrap().1.to_string()).collect::<Vec<_>>();
    assert_eq!(probabilities(&got), probabilities(&want));
    // eval reads labelled rows from standard input too, and names it so.
    let o = chi_stdin(&["eval", s(&run), "--data", "-"], "a,b,label\n0.1,0.5,red\n2.2,0.5,blue\n");
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("(standard input)") && text(&o).contains("2 examples"), "{}", text(&o));
    assert!(run.join("eval-file-stdin/report.json").is_file());

    let reviews = root.join("reviews.csv");
    keyword_csv(&reviews, 60, 2);
    let bow = root.join("bow");
    ok(&["train", "--data", s(&reviews), "--model", "bow", "--steps", "20", "--quiet", "--no-plots", "--out", s(&bow)]);
    let o = chi_stdin(&["explain", s(&bow), "--input", "-", "--steps", "4", "--dir", s(&root.join("explain"))], "the box was excellent\n");
    assert!(o.status.success(), "{}", text(&o));
    assert!(root.join("explain/explain.json").is_file());
    let bsfe = root.join("bsfe");
    ok(&["train", "--data", s(&reviews), "--model", "ca-bsfe", "--steps", "5", "--quiet", "--no-plots", "--out", s(&bsfe)]);
    let texts = root.join("texts.txt");
    std::fs::write(&texts, "the box was excellent\n").unwrap();
    fails_with(&["predict", s(&bsfe), "--input", s(&texts), "--saliency", "2"], &["bow, text-cnn, han, rcnn, lstm, gru or ca-rnn"]);
    let _ = std::fs::remove_dir_all(&root);
}
