use super::*;

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("chi-userdata-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.0.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn cfg(path: &Path) -> DataConfig {
    DataConfig { path: Some(path.display().to_string()), ..Default::default() }
}

fn load_cfg(c: &DataConfig) -> Result<Loaded, NnError> {
    load("file", c, &mut Rng::new(7))
}

/// 40 rows: two numeric features, one categorical, a text label decided by x.
fn tabular_csv() -> String {
    let mut s = String::from("x,y,colour,species\n");
    for i in 0..40 {
        let x = i as f64 / 4.0;
        let species = if i % 2 == 0 { "adelie" } else { "gentoo" };
        let colour = ["red", "blue"][i % 3 % 2];
        s.push_str(&format!("{x},{},{colour},{species}\n", 10.0 - x));
    }
    s
}

#[test]
fn tabular_csv_is_split_stratified_and_standardised_on_the_training_split_only() {
    let d = TempDir::new("tab");
    let p = d.write("pens.csv", tabular_csv().as_bytes());
    let mut c = cfg(&p);
    c.target = Some("species".into());
    let l = load_cfg(&c).unwrap();
    assert_eq!(l.schema.kind, DataKind::Tabular);
    assert_eq!(l.schema.classes, ["adelie", "gentoo"]);
    assert_eq!(l.dataset.task, Task::Classification { classes: 2 });
    let (tr, va, te) = (&l.dataset.train, l.dataset.valid.as_ref().unwrap(), &l.dataset.test);
    assert_eq!(tr.len() + va.len() + te.len(), 40);
    assert_eq!((va.len(), te.len()), (4, 4), "10% of each class of 20 = 2 per class");
    // Stratified: each class is half of every split.
    for s in [tr, va, te] {
        let ones = (0..s.len()).filter(|&i| s.targets.class(i) == 1).count();
        assert_eq!(ones * 2, s.len());
    }
    // Two numeric columns (x, y) then colour one-hot (2 categories): width 4.
    let Inputs::Dense { x, shape } = &tr.inputs else { panic!() };
    assert_eq!(shape, &[4]);
    // Standardised with the training statistics: training mean 0, variance 1.
    let n = tr.len() as f64;
    let m: f64 = (0..tr.len()).map(|i| x[i * 4] as f64).sum::<f64>() / n;
    let v: f64 = (0..tr.len()).map(|i| (x[i * 4] as f64 - m).powi(2)).sum::<f64>() / n;
    assert!(m.abs() < 1e-5 && (v - 1.0).abs() < 1e-4, "mean {m} var {v}");
    let Encoder::Tabular { columns } = &l.schema.encoder else { panic!() };
    assert_eq!(columns[2], Column::Categorical { name: "colour".into(), categories: vec!["blue".into(), "red".into()] });
    // The same seed gives the same split; another seed another one.
    let again = load_cfg(&c).unwrap();
    assert_eq!(format!("{:?}", again.dataset.test.targets), format!("{:?}", te.targets));
    let other = load("file", &c, &mut Rng::new(8)).unwrap();
    let Inputs::Dense { x: x2, .. } = &other.dataset.test.inputs else { panic!() };
    let Inputs::Dense { x: x1, .. } = &te.inputs else { panic!() };
    assert_ne!(x1, x2);
}

#[test]
fn a_continuous_target_is_regression_and_task_overrides() {
    let d = TempDir::new("reg");
    let mut s = String::from("a,b,price\n");
    for i in 0..30 {
        s.push_str(&format!("{i},{},{}\n", i % 7, 1.5 * i as f64 + 0.25));
    }
    let p = d.write("houses.csv", s.as_bytes());
    let mut c = cfg(&p);
    c.target = Some("price".into());
    let l = load_cfg(&c).unwrap();
    assert_eq!(l.dataset.task, Task::Regression);
    assert!(l.schema.classes.is_empty());
    // b has 7 whole values: a class label unless told otherwise.
    c.target = Some("b".into());
    assert_eq!(load_cfg(&c).unwrap().dataset.task, Task::Classification { classes: 7 });
    c.task = Some("regression".into());
    assert_eq!(load_cfg(&c).unwrap().dataset.task, Task::Regression);
}

/// A continuous target with one value that does not read as a number is an error naming that
/// value's line (it used to make every number a class); huge whole numbers are continuous.
#[test]
fn an_odd_value_in_a_continuous_target_is_named_and_huge_numbers_are_continuous() {
    let d = TempDir::new("regodd");
    let mut s = String::from("a,price\n");
    for i in 0..40 {
        s.push_str(&format!("{i},{}\n", if i == 11 { "1e400".to_string() } else { format!("{}", 0.1 + 0.05 * (i % 20) as f64) }));
    }
    let mut c = cfg(&d.write("odd.csv", s.as_bytes()));
    c.target = Some("price".into());
    let e = load_cfg(&c).unwrap_err().to_string();
    assert!(e.contains("odd.csv:13") && e.contains("\"1e400\"") && e.contains("is not a finite number") && e.contains("--task classification"), "{e}");
    // Told it is a classification, the values are class names: 20 classes of two examples
    // each leave no test share, and the message says why.
    c.task = Some("classification".into());
    let e = load_cfg(&c).unwrap_err().to_string();
    assert!(e.contains("the largest has 2 example(s)") && e.contains("right column"), "{e}");
    let mut s = String::from("a,amount\n");
    for i in 0..40 {
        s.push_str(&format!("{i},{:e}\n", 3.0e18 + 7.0e17 * i as f64));
    }
    let mut c = cfg(&d.write("huge.csv", s.as_bytes()));
    c.target = Some("amount".into());
    assert_eq!(load_cfg(&c).unwrap().dataset.task, Task::Regression);
}

#[test]
fn headerless_csv_uses_the_last_column_and_tsv_is_read_by_extension() {
    let d = TempDir::new("nohdr");
    let mut s = String::new();
    for i in 0..20 {
        s.push_str(&format!("{}\t{}\t{}\n", i, i * 2, i % 2));
    }
    let p = d.write("pts.tsv", s.as_bytes());
    let l = load_cfg(&cfg(&p)).unwrap();
    assert_eq!(l.schema.format, Format::Tsv);
    assert_eq!(l.schema.target.as_deref(), Some("column3"));
    assert_eq!(l.dataset.train.len() + l.dataset.valid.as_ref().unwrap().len() + l.dataset.test.len(), 20);
    // Read as data, and said so: a header of numbers would look the same.
    assert!(l.warnings.iter().any(|w| w.contains("line 1 (0, 0, 0) is read as data") && w.contains("--header yes")), "{:?}", l.warnings);
}

/// Labels are read without the spaces around them (`sp`, `sp `, ` sp` are one class), and a
/// note says which spellings were so read.
#[test]
fn labels_with_spaces_around_them_are_one_class_and_the_note_says_so() {
    let d = TempDir::new("spaced");
    let mut s = String::from("a,b,label\n");
    for i in 0..60 {
        s.push_str(&format!("{i},{},{}\n", i % 7, ["sp", "sp ", " sp", "other"][i % 4]));
    }
    let l = load_cfg(&cfg(&d.write("sp.csv", s.as_bytes()))).unwrap();
    let mut classes = l.schema.classes.clone();
    classes.sort();
    assert_eq!(classes, ["other", "sp"]);
    let note = l.warnings.iter().find(|w| w.contains("labels are read without the spaces around them")).unwrap_or_else(|| panic!("{:?}", l.warnings));
    assert!(note.contains("\" sp\"") && note.contains("\"sp \"") && note.contains("read as \"sp\""), "{note}");
    // None for labels written without spaces.
    let plain = d.write("plain.csv", tabular_csv().as_bytes());
    let mut c = cfg(&plain);
    c.target = Some("species".into());
    assert!(!load_cfg(&c).unwrap().warnings.iter().any(|w| w.contains("spaces around them")));
}

/// A target spelled like a missing value (`NA`) is refused saying that it was read as missing,
/// in how many training examples, and how to keep it as a class.
#[test]
fn a_target_that_reads_as_missing_is_named_with_its_count_and_the_way_out() {
    let d = TempDir::new("natarget");
    let mut s = String::from("a,b,region\n");
    for i in 0..60 {
        s.push_str(&format!("{i},{},{}\n", i % 7, ["NA", "US"][i % 2]));
    }
    let mut c = cfg(&d.write("na.csv", s.as_bytes()));
    c.target = Some("region".into());
    let e = load_cfg(&c).unwrap_err().to_string();
    assert!(e.contains("na.csv") && e.contains("reads as a missing target") && e.contains("if \"NA\" is a class, spell it another way"), "{e}");
    assert!(e.contains(" of the ") && e.contains("training examples"), "{e}");
}

/// The text options given for data without text are said to do nothing, not silently ignored.
#[test]
fn text_options_on_tabular_data_are_said_to_do_nothing() {
    let d = TempDir::new("textopts");
    let mut c = cfg(&d.write("pens.csv", tabular_csv().as_bytes()));
    c.target = Some("species".into());
    assert!(!load_cfg(&c).unwrap().warnings.iter().any(|w| w.contains("text options")));
    c.max_vocab = Some(0);
    c.max_len = Some(5);
    let l = load_cfg(&c).unwrap();
    assert!(l.warnings.iter().any(|w| w.contains("the text options max_vocab, max_len") && w.contains("do nothing for tabular data")), "{:?}", l.warnings);
    // Text data takes them without a word.
    let mut t = cfg(&d.write("reviews.csv", text_csv().as_bytes()));
    t.target = Some("sentiment".into());
    t.max_len = Some(5);
    assert!(!load_cfg(&t).unwrap().warnings.iter().any(|w| w.contains("text options")));
}

#[test]
fn a_header_of_numbers_is_read_as_names_when_asked_and_no_note_is_given_then() {
    let d = TempDir::new("numhdr");
    let mut s = String::from("2019,2020,2021\n");
    for i in 0..30 {
        s.push_str(&format!("{},{},{}\n", i, i * 3, i % 2));
    }
    let p = d.write("years.csv", s.as_bytes());
    let guessed = load_cfg(&cfg(&p)).unwrap();
    assert_eq!(guessed.schema.target.as_deref(), Some("column3"));
    assert!(guessed.warnings.iter().any(|w| w.contains("line 1 (2019, 2020, 2021) is read as data")), "{:?}", guessed.warnings);
    let mut c = cfg(&p);
    c.header = Some(true);
    // Line 1 now names the columns, none of them like a label: the target has to be named.
    let e = load_cfg(&c).unwrap_err().to_string();
    assert!(e.contains("pass --target NAME (the columns are 2019, 2020, 2021)"), "{e}");
    c.target = Some("2020".into());
    let told = load_cfg(&c).unwrap();
    assert_eq!(told.schema.target.as_deref(), Some("2020"));
    assert_eq!(told.dataset.train.len() + told.dataset.valid.as_ref().unwrap().len() + told.dataset.test.len(), 30);
    assert!(!told.warnings.iter().any(|w| w.contains("is read as data")), "{:?}", told.warnings);
    // A file with a named header gets no such note.
    let named = d.write("named.csv", tabular_csv().as_bytes());
    let mut c = cfg(&named);
    c.target = Some("species".into());
    assert!(!load_cfg(&c).unwrap().warnings.iter().any(|w| w.contains("is read as data")));
}

fn text_csv() -> String {
    let pos = ["a wonderful film, truly moving", "great acting and a great story", "i loved every minute of it", "superb and charming work"];
    let neg = ["a dull and boring mess", "terrible acting, awful script", "i hated every minute of it", "boring, slow and forgettable"];
    let mut s = String::from("review,sentiment\n");
    for r in 0..5 {
        for (p, n) in pos.iter().zip(neg) {
            s.push_str(&format!("\"{p} {r}\",pos\n\"{n} {r}\",neg\n"));
        }
    }
    s
}

#[test]
fn a_csv_with_one_column_of_sentences_is_text_classification() {
    let d = TempDir::new("textcsv");
    let p = d.write("reviews.csv", text_csv().as_bytes());
    let mut c = cfg(&p);
    c.target = Some("sentiment".into());
    let l = load_cfg(&c).unwrap();
    assert_eq!(l.schema.kind, DataKind::Text);
    let Inputs::Tokens { seqs, vocab } = &l.dataset.train.inputs else { panic!() };
    assert!(*vocab > 10);
    let v = l.schema.vocab().unwrap();
    // "a wonderful film, truly moving 0" → 6 tokens plus the comma.
    assert!(seqs.iter().all(|s| !s.is_empty()));
    assert!(v.words().iter().any(|w| w == ","), "punctuation is a token");
    // New unlabelled text is encoded with the same vocabulary; unseen words are <unk>.
    let q = d.write("new.csv", b"review\n\"great story\"\n\"zyzzyva\"\n");
    let (inputs, ids, _) = l.schema.encode_unlabelled(&q).unwrap();
    let Inputs::Tokens { seqs, .. } = inputs else { panic!() };
    assert_eq!(seqs[0], [v.id("great"), v.id("story")]);
    assert_eq!(seqs[1], [text::UNK_ID]);
    assert!(ids[0].ends_with("new.csv:2"), "{ids:?}");
}

#[test]
fn text_folders_with_lossy_files_and_given_splits() {
    let d = TempDir::new("folder");
    for (i, (c, t)) in [("pos", "good fun"), ("neg", "bad dull"), ("pos", "great joy"), ("neg", "awful mess")].iter().cycle().take(24).enumerate() {
        d.write(&format!("train/{c}/{i}.txt"), t.as_bytes());
    }
    d.write("train/neg/latin1.txt", b"caf\xe9 bad");
    d.write("test/pos/a.txt", b"good joy");
    d.write("test/neg/b.txt", b"dull mess");
    let l = load_cfg(&cfg(&d.0)).unwrap();
    assert_eq!(l.schema.format, Format::Folder);
    assert_eq!(l.schema.classes, ["neg", "pos"]);
    assert_eq!(l.dataset.test.len(), 2, "the test folder is the test split");
    assert!(l.dataset.valid.is_some(), "a validation share is taken from train/");
    assert!(l.warnings.iter().any(|w| w.contains("not valid UTF-8")), "{:?}", l.warnings);
    // A file as the held-out data of a folder: named as such (the message told the user to
    // leave out a --format folder they never gave).
    let mut c = cfg(&d.0.join("train"));
    c.test_path = Some(d.write("held.csv", b"text,label\ngood,pos\n").display().to_string());
    let e = load_cfg(&c).unwrap_err().to_string();
    assert!(e.contains("held.csv") && e.contains("is a file, but the training data is a folder of class folders") && !e.contains("--format folder"), "{e}");
    // Prediction on a folder of files: one input per file, ids are relative paths.
    let (inputs, ids, _) = l.schema.encode_unlabelled(&d.0.join("test")).unwrap();
    assert_eq!(inputs.len(), 2);
    assert_eq!(ids, ["neg/b.txt", "pos/a.txt"]);
}

/// Texts longer than the tokenizer keeps are counted in a warning naming the first, at
/// training and at prediction (they were cut without a word).
#[test]
fn texts_past_the_maximum_length_are_counted_in_a_warning() {
    let d = TempDir::new("cut");
    for i in 0..20 {
        let (c, t) = if i % 2 == 0 { ("pos", "good fun") } else { ("neg", "bad dull") };
        d.write(&format!("data/{c}/{i:02}.txt"), t.as_bytes());
    }
    d.write("data/pos/long.txt", "good ".repeat(9).as_bytes());
    d.write("data/neg/exact.txt", "bad ".repeat(8).as_bytes());
    let mut c = cfg(&d.0.join("data"));
    c.max_len = Some(8);
    c.split = Some(vec![1.0, 0.0, 0.0]);
    for i in 0..4 {
        d.write(&format!("test/{}/{i}.txt", ["pos", "neg"][i % 2]), b"good bad");
    }
    c.test_path = Some(d.0.join("test").display().to_string());
    let l = load_cfg(&c).unwrap();
    let w = l.warnings.join("\n");
    assert!(w.contains("(training split): 1 text (") && w.contains("pos/long.txt) is longer than the 8 tokens the model reads") && w.contains("--max-len"), "{w}");
    // Exactly at the limit is not cut.
    let (_, _, w) = l.schema.encode_unlabelled(&d.0.join("data").join("neg")).unwrap();
    assert!(!w.iter().any(|w| w.contains("longer than")), "{w:?}");
    d.write("data/neg/long2.txt", "bad ".repeat(12).as_bytes());
    let (_, _, w) = l.schema.encode_unlabelled(&d.0.join("data")).unwrap();
    assert!(w.iter().any(|w| w.contains("2 texts (the first neg/long2.txt) are longer than the 8 tokens")), "{w:?}");
}

/// Prediction on a plain text file gives one row per line, blank lines included (so rows line
/// up with the input), except blank lines at the end.
#[test]
fn predicting_text_lines_keeps_blank_lines_in_place() {
    let d = TempDir::new("blank");
    for (i, (c, t)) in [("pos", "good fun"), ("neg", "bad dull")].iter().cycle().take(24).enumerate() {
        d.write(&format!("data/{c}/{i}.txt"), t.as_bytes());
    }
    let l = load_cfg(&cfg(&d.0.join("data"))).unwrap();
    let q = d.write("new.txt", b"good fun\n   \nbad dull\r\n\nunknownword\n\n\n");
    let (inputs, ids, warnings) = l.schema.encode_unlabelled(&q).unwrap();
    assert_eq!(inputs.len(), 5, "{ids:?}");
    assert!(ids[1].ends_with("new.txt:2") && ids[4].ends_with("new.txt:5"), "{ids:?}");
    assert!(warnings.iter().any(|w| w.contains("2 texts have no tokens")), "{warnings:?}");
}

/// Numbers in spellings chi does not read (decimal commas, thousands separators, currency and
/// percent signs) are named: a feature column read as categories is a warning, a target an
/// error (it became one class per number); a column of nearly all distinct categories is a
/// warning.
#[test]
fn numbers_in_other_spellings_and_near_unique_categories_are_named() {
    assert_eq!(other_number_spelling("0,238"), Some("a decimal comma"));
    assert_eq!(other_number_spelling("-1,094.5"), Some("thousands separators"));
    assert_eq!(other_number_spelling("1,094"), Some("a comma (thousands separators or a decimal comma)"));
    assert_eq!(other_number_spelling("1,5"), Some("a decimal comma"));
    assert_eq!(other_number_spelling("1,094,221"), Some("thousands separators"));
    assert_eq!(other_number_spelling("$52.13"), Some("currency signs"));
    assert_eq!(other_number_spelling("€1,5"), Some("currency signs"));
    assert_eq!(other_number_spelling("4%"), Some("percent signs"));
    for plain in ["0.5", "apple", "1,2,3", "a,b", "", "12,34.5.6", "%"] {
        assert_eq!(other_number_spelling(plain), None, "{plain}");
    }
    let d = TempDir::new("spellings");
    let mut s = String::from("a\tprice\tday\tlabel\n");
    for i in 0..60 {
        s.push_str(&format!("{},{}\t${}.5\t2024-01-{:02}T{i}\t{}\n", i / 10, i % 10, i, i % 28 + 1, if i % 2 == 0 { "p" } else { "q" }));
    }
    let l = load_cfg(&cfg(&d.write("eu.tsv", s.as_bytes()))).unwrap();
    let w = l.warnings.join("\n");
    assert!(w.contains("column \"a\" holds numbers written with a decimal comma (\"0,0\")") && w.contains("read as"), "{w}");
    assert!(w.contains("column \"price\" holds numbers written with currency signs"), "{w}");
    assert!(w.contains("column \"day\" has 48 distinct values in 48 rows") && w.contains("--features"), "{w}");
    // A regression target with decimal commas: an error saying so, by default and with --task.
    let mut s = String::from("x\ty\n");
    for i in 0..50 {
        s.push_str(&format!("{i}\t{},{}\n", i % 4, i % 3));
    }
    let mut c = cfg(&d.write("reg.tsv", s.as_bytes()));
    c.target = Some("y".into());
    let e = load_cfg(&c).unwrap_err().to_string();
    assert!(e.contains("is a number written with a decimal comma") && e.contains("--task classification"), "{e}");
    c.task = Some("regression".into());
    let e = load_cfg(&c).unwrap_err().to_string();
    assert!(e.contains("a number written with a decimal comma") && e.contains("but the task is regression"), "{e}");
    // Plain categories say nothing.
    let l = load_cfg(&cfg(&d.write("plain.csv", tabular_csv().as_bytes()))).unwrap();
    assert!(!l.warnings.iter().any(|w| w.contains("written with") || w.contains("distinct values")), "{:?}", l.warnings);
}

/// Links back up a text folder (a loop) are not followed: each file is read once, under its own
/// class; a link to a folder outside is followed.
#[cfg(unix)]
#[test]
fn symbolic_link_loops_in_a_text_folder_are_not_followed() {
    let d = TempDir::new("loop");
    for i in 0..12 {
        d.write(&format!("data/pos/p{i}.txt"), format!("good great {i}").as_bytes());
        d.write(&format!("data/neg/n{i}.txt"), format!("bad awful {i}").as_bytes());
    }
    d.write("extra/n-extra.txt", b"bad dull");
    let root = d.0.join("data");
    std::os::unix::fs::symlink("../", root.join("neg/loop")).unwrap();
    std::os::unix::fs::symlink("../../data", root.join("pos/up")).unwrap();
    std::os::unix::fs::symlink(&root, root.join("all")).unwrap();
    std::os::unix::fs::symlink(d.0.join("extra"), root.join("neg/extra")).unwrap();
    let l = load_cfg(&cfg(&root)).unwrap();
    assert_eq!(l.schema.classes, ["neg", "pos"], "the link to the root is not a class");
    let n = l.dataset.train.len() + l.dataset.valid.as_ref().map_or(0, |v| v.len()) + l.dataset.test.len();
    assert_eq!(n, 25, "12 + 12 files and the linked outside file, each once");
    // Prediction on a folder with a link to itself: one input per file.
    let (inputs, ids, _) = l.schema.encode_unlabelled(&root.join("neg")).unwrap();
    assert_eq!(inputs.len(), 13, "{ids:?}");
}

/// A file reached twice through links is read once: a class folder that is a link to another
/// class folder is skipped and said (whether it sorts before or after it), a link to a file of
/// the same class adds nothing, and a link into another class is an error naming both paths.
#[cfg(unix)]
#[test]
fn a_file_reached_twice_through_links_is_read_once_and_never_under_two_classes() {
    let d = TempDir::new("twice");
    for i in 0..12 {
        d.write(&format!("data/pos/p{i:02}.txt"), format!("good great {i}").as_bytes());
        d.write(&format!("data/neg/n{i:02}.txt"), format!("bad awful {i}").as_bytes());
    }
    let root = d.0.join("data");
    let total = |l: &Loaded| l.dataset.train.len() + l.dataset.valid.as_ref().map_or(0, |v| v.len()) + l.dataset.test.len();
    for link in ["good", "zgood"] {
        std::os::unix::fs::symlink("pos", root.join(link)).unwrap();
        let l = load_cfg(&cfg(&root)).unwrap();
        assert_eq!(l.schema.classes, ["neg", "pos"], "{link} is not a class of its own");
        assert_eq!(total(&l), 24, "each file once");
        let w = l.warnings.join("\n");
        assert!(w.contains(&format!("data/{link}: the class folder \"{link}\" is a symbolic link to the class folder \"pos\" and is skipped")) && w.contains("give it files of its own"), "{w}");
        // Evaluation reads the folder the same way.
        let (split, w) = l.schema.encode_labelled(&root, None).unwrap();
        assert_eq!(split.len(), 24);
        assert!(w.iter().any(|w| w.contains("is a symbolic link to the class folder")), "{w:?}");
        std::fs::remove_file(root.join(link)).unwrap();
    }
    // A link to a file of its own class: read once, in training and in prediction.
    std::os::unix::fs::symlink("p00.txt", root.join("pos/again.txt")).unwrap();
    let l = load_cfg(&cfg(&root)).unwrap();
    assert_eq!(total(&l), 24);
    let (inputs, ids, _) = l.schema.encode_unlabelled(&root).unwrap();
    assert_eq!(inputs.len(), 24, "{ids:?}");
    // A link into another class: one text under two labels.
    std::fs::remove_file(root.join("pos/again.txt")).unwrap();
    std::os::unix::fs::symlink("../pos/p00.txt", root.join("neg/link0.txt")).unwrap();
    let e = load_cfg(&cfg(&root)).unwrap_err().to_string();
    assert!(e.contains("neg/link0.txt") && e.contains("is the same file as") && e.contains("pos/p00.txt") && e.contains("class \"neg\" and of class \"pos\"") && e.contains("remove the link"), "{e}");
    let e = l.schema.encode_labelled(&root, None).unwrap_err().to_string();
    assert!(e.contains("neg/link0.txt") && e.contains("pos/p00.txt"), "{e}");
}

/// Folders beside `train/` and `test/` are not read, and said; a folder named like a split
/// where the layout is not complete is read as a class, and said.
#[test]
fn folders_beside_train_and_test_and_classes_named_like_splits_are_said() {
    let d = TempDir::new("layout");
    for i in 0..12 {
        for top in ["full", "extra", "half"] {
            for split in ["train", "test"] {
                if top == "half" && split == "test" {
                    continue;
                }
                d.write(&format!("{top}/{split}/pos/p{i}.txt"), format!("good great {i}").as_bytes());
                d.write(&format!("{top}/{split}/neg/n{i}.txt"), format!("bad awful {i}").as_bytes());
            }
        }
        d.write(&format!("full/valid/pos/p{i}.txt"), b"good");
        d.write(&format!("full/valid/neg/n{i}.txt"), b"bad");
        d.write(&format!("extra/neutral/m{i}.txt"), b"so so");
        d.write(&format!("extra/more/m{i}.txt"), b"so so");
        d.write(&format!("half/pos/p{i}.txt"), b"good fun");
        d.write(&format!("half/neg/n{i}.txt"), b"dull mess");
    }
    let l = load_cfg(&cfg(&d.0.join("full"))).unwrap();
    assert!(!l.warnings.iter().any(|w| w.contains("not read") || w.contains("class folder")), "{:?}", l.warnings);
    let l = load_cfg(&cfg(&d.0.join("extra"))).unwrap();
    assert_eq!(l.schema.classes, ["neg", "pos"]);
    let w = l.warnings.join("\n");
    assert!(w.contains("extra: more/, neutral/ beside train/ and test/ are not read") && w.contains("move them into train/ and test/ as class folders"), "{w}");
    let l = load_cfg(&cfg(&d.0.join("half"))).unwrap();
    assert_eq!(l.schema.classes, ["neg", "pos", "train"]);
    let w = l.warnings.join("\n");
    assert!(w.contains("half: the folder train is read as a class folder") && w.contains("needs both train/ and test/") && w.contains("here test/ is missing"), "{w}");
}

/// A class with fewer than three training examples (a typo in one label, a folder of one
/// file) is named with where its example is, and a class with no test example is named.
#[test]
fn classes_with_few_examples_or_no_test_example_are_named() {
    let d = TempDir::new("rare");
    let mut s = tabular_csv();
    s.push_str("3.3,6.7,red,adelie?
");
    let mut c = cfg(&d.write("typo.csv", s.as_bytes()));
    c.target = Some("species".into());
    let l = load_cfg(&c).unwrap();
    assert_eq!(l.schema.classes, ["adelie", "adelie?", "gentoo"]);
    let w = l.warnings.join("\n");
    assert!(w.contains("typo.csv: a class with fewer than 3 training examples: \"adelie?\" (1 example, ") && w.contains("typo.csv:42)") && w.contains("a typo in a label?"), "{w}");
    assert!(w.contains("typo.csv: a class has no example in the test split: \"adelie?\"; the test scores say nothing about it") && w.contains("--test FILE"), "{w}");
    // Classes of many examples say nothing.
    let mut c = cfg(&d.write("plain.csv", tabular_csv().as_bytes()));
    c.target = Some("species".into());
    let l = load_cfg(&c).unwrap();
    assert!(!l.warnings.iter().any(|w| w.contains("training examples") || w.contains("test split")), "{:?}", l.warnings);
    // A class folder of one file.
    for i in 0..12 {
        d.write(&format!("texts/pos/p{i}.txt"), b"good fun");
        d.write(&format!("texts/neg/n{i}.txt"), b"bad mess");
    }
    d.write("texts/meh/0.txt", b"so so");
    let l = load_cfg(&cfg(&d.0.join("texts"))).unwrap();
    let w = l.warnings.join("\n");
    assert!(w.contains("\"meh\" (1 example, ") && w.contains("meh/0.txt)"), "{w}");
    assert!(w.contains("a class has no example in the test split: \"meh\""), "{w}");
}

/// `n/a` in any letter case and a spreadsheet's `#N/A` are missing values; a value that looks
/// like another marker of a missing value is an error that lists the spellings read as missing.
#[test]
fn n_a_in_any_case_is_missing_and_other_markers_are_hinted() {
    for v in ["n/a", "N/a", " N/A ", "#N/A", "#n/a"] {
        assert!(is_missing(v), "{v}");
    }
    let d = TempDir::new("na");
    let mut s = String::from("a,b,label\n");
    for i in 0..30 {
        let a = match i {
            3 => "n/a".to_string(),
            4 => "#N/A".to_string(),
            _ => format!("{i}.5"),
        };
        s.push_str(&format!("{a},{},{}\n", i % 4, i % 2));
    }
    let l = load_cfg(&cfg(&d.write("na.csv", s.as_bytes()))).unwrap();
    assert!(matches!(&l.schema.encoder, Encoder::Tabular { columns } if matches!(columns[0], Column::Numeric { .. })), "a stays numeric");
    for (marker, hinted) in [("missing", true), (".", true), ("#VALUE!", true), ("apple", false)] {
        let bad = d.write("bad.csv", format!("a,b,label\n{marker},1,0\n").as_bytes());
        let e = l.schema.encode_labelled(&bad, None).unwrap_err().to_string();
        assert!(e.contains("is not a number, and the column is numeric"), "{e}");
        assert_eq!(e.contains("if it marks a missing value, write it as one of the spellings read as missing: empty, NA, N/A (any case), #N/A"), hinted, "{marker}: {e}");
    }
}

#[test]
fn token_lines_keep_tokens_as_written() {
    let d = TempDir::new("lines");
    let mut s = String::new();
    for i in 0..30 {
        s.push_str(&format!("{} A{} b c\n", i % 3, i % 3));
    }
    let p = d.write("seqs.txt", s.as_bytes());
    let l = load_cfg(&cfg(&p)).unwrap();
    assert_eq!(l.schema.format, Format::Lines);
    assert_eq!(l.schema.classes, ["0", "1", "2"]);
    let v = l.schema.vocab().unwrap();
    assert!(v.words().iter().any(|w| w == "A1"), "case is kept: {:?}", v.words());
}

/// A `.npy` file of `shape` with `<f4` or `<i8` data.
fn npy(shape: &[usize], f: &[f64], int: bool) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let tuple = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let descr = if int { "<i8" } else { "<f4" };
    let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {tuple}, }}");
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend_from_slice(&(h.len() as u16).to_le_bytes());
    b.extend_from_slice(h.as_bytes());
    for v in f {
        if int {
            b.extend_from_slice(&(*v as i64).to_le_bytes());
        } else {
            b.extend_from_slice(&(*v as f32).to_le_bytes());
        }
    }
    b
}

#[test]
fn npy_images_and_integer_labels() {
    let d = TempDir::new("npy");
    let n = 30;
    let x: Vec<f64> = (0..n * 16).map(|i| (i % 17) as f64).collect();
    let y: Vec<f64> = (0..n).map(|i| (i % 3) as f64).collect();
    let px = d.write("x.npy", &npy(&[n, 4, 4], &x, false));
    let py = d.write("y.npy", &npy(&[n], &y, true));
    let mut c = cfg(&px);
    c.target = Some(py.display().to_string());
    let l = load_cfg(&c).unwrap();
    assert_eq!(l.schema.kind, DataKind::Images);
    let Inputs::Dense { shape, .. } = &l.dataset.train.inputs else { panic!() };
    assert_eq!(shape, &[1, 4, 4], "a rank-2 example is one channel");
    assert_eq!(l.schema.classes, ["0", "1", "2"]);
    // Without the label file: a clear error.
    c.target = None;
    let e = load_cfg(&c).unwrap_err().to_string();
    assert!(e.contains("label file"), "{e}");
    // Labels of the wrong length name the label file.
    let bad = d.write("y5.npy", &npy(&[5], &[0.0; 5], true));
    c.target = Some(bad.display().to_string());
    let e = load_cfg(&c).unwrap_err().to_string();
    assert!(e.contains("y5.npy") && e.contains("do not match"), "{e}");
    // Examples of zero size are named as such, not reported as an empty training split.
    let mut z = cfg(&d.write("x0.npy", &npy(&[n, 0, 4], &[], false)));
    z.target = Some(py.display().to_string());
    let e = load_cfg(&z).unwrap_err().to_string();
    assert!(e.contains("x0.npy") && e.contains("each example holds no values"), "{e}");
    // Integer class codes keep their exact values (read in f32, 123456789 would be 123456792, and
    // 16777216 and 16777217 one class).
    let codes: Vec<f64> = (0..n).map(|i| [123456789.0, 16777216.0, 16777217.0][i % 3]).collect();
    c.target = Some(d.write("codes.npy", &npy(&[n], &codes, true)).display().to_string());
    let mut classes = load_cfg(&c).unwrap().schema.classes.clone();
    classes.sort();
    assert_eq!(classes, ["123456789", "16777216", "16777217"]);
    // Past 2^53 they may already be rounded on reading: refused, not merged.
    let huge: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { 2f64.powi(60) } else { 1.0 }).collect();
    c.target = Some(d.write("huge.npy", &npy(&[n], &huge, true)).display().to_string());
    let e = load_cfg(&c).unwrap_err().to_string();
    assert!(e.contains("huge.npy") && e.contains("beyond 2^53"), "{e}");
}

#[test]
fn bad_csv_inputs_are_errors_naming_file_line_and_column() {
    let d = TempDir::new("bad");
    let mut c = cfg(&d.write("ragged.csv", b"a,b,label\n1,2,x\n3,4\n5,6,y\n"));
    c.target = Some("label".into());
    let e = load_cfg(&c).unwrap_err().to_string();
    assert!(e.contains("ragged.csv") && e.contains("line 3") && e.contains("2 fields"), "{e}");

    let mut s = String::from("a,label\n");
    for i in 0..20 {
        s.push_str(&format!("{},{}\n", if i == 13 { "abc".to_string() } else { i.to_string() }, i % 2));
    }
    let mut c = cfg(&d.write("nonnum.csv", s.as_bytes()));
    c.target = Some("label".into());
    c.split = Some(vec![1.0, 0.0, 0.0]);
    let e = load_cfg(&c).unwrap_err().to_string();
    assert!(e.contains("gives no test share") && e.contains("--test FILE") && !e.contains("target the right column"), "a split with no test share is refused as such: {e}");
    c.split = None;
    let e = load_cfg(&c).unwrap_err().to_string();
    assert!(e.contains("nonnum.csv") && e.contains("line 15") && e.contains("\"abc\" is not a number"), "{e}");

    let mut c = cfg(&d.write("t.csv", tabular_csv().as_bytes()));
    c.target = Some("kind".into());
    let e = load_cfg(&c).unwrap_err().to_string();
    assert!(e.contains("no target column \"kind\"") && e.contains("species"), "{e}");

    let bin = d.write("model.csv", b"a,b\n\x00\x01\x02");
    let e = load_cfg(&cfg(&bin)).unwrap_err().to_string();
    assert!(e.contains("binary"), "{e}");

    std::fs::create_dir_all(d.0.join("folder/pos")).unwrap();
    std::fs::create_dir_all(d.0.join("folder/neg")).unwrap();
    d.write("folder/pos/a.txt", b"good");
    let e = load_cfg(&cfg(&d.0.join("folder"))).unwrap_err().to_string();
    assert!(e.contains("\"neg\" holds no files"), "{e}");

    let e = load_cfg(&cfg(&d.0.join("missing.csv"))).unwrap_err().to_string();
    assert!(e.contains("missing.csv") && e.contains("no such file"), "{e}");
}

#[test]
fn a_label_unseen_in_training_is_an_error_at_evaluation() {
    let d = TempDir::new("unseen");
    let mut c = cfg(&d.write("t.csv", tabular_csv().as_bytes()));
    c.target = Some("species".into());
    let l = load_cfg(&c).unwrap();
    let ok = d.write("more.csv", b"species,x,y,colour\nadelie,1,2,red\ngentoo,3,4,green\n");
    let (split, warnings) = l.schema.encode_labelled(&ok, None).unwrap();
    assert_eq!(split.len(), 2);
    assert!(warnings.iter().any(|w| w.contains("not seen in training")), "columns are matched by name; green is a new category: {warnings:?}");
    let bad = d.write("bad.csv", b"x,y,colour,species\n1,2,red,chinstrap\n");
    let e = l.schema.encode_labelled(&bad, None).unwrap_err().to_string();
    assert!(e.contains("bad.csv:2") && e.contains("chinstrap") && e.contains("adelie, gentoo"), "{e}");
    // An empty label is said to be empty, not a class unseen in training.
    let empty = d.write("empty-label.csv", b"x,y,colour,species\n1,2,red,adelie\n1,2,red,\n");
    let e = l.schema.encode_labelled(&empty, None).unwrap_err().to_string();
    assert!(e.contains("empty-label.csv:3") && e.contains("is empty") && !e.contains("not seen"), "{e}");
    // A missing colour, where training had none: one warning that says so.
    let gap = d.write("gap.csv", b"x,y,colour,species\n1,2,,adelie\n");
    let (_, warnings) = l.schema.encode_labelled(&gap, None).unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("1 missing categorical values in columns that had none in training"), "{warnings:?}");
    // A file without a feature column names it.
    let nofeat = d.write("nofeat.csv", b"x,colour,species\n1,red,adelie\n");
    let e = l.schema.encode_labelled(&nofeat, None).unwrap_err().to_string();
    assert!(e.contains("no column \"y\""), "{e}");
}

#[test]
fn stratified_split_keeps_every_class_in_training() {
    let labels: Vec<String> = ["a", "b", "b", "c", "c", "c"].iter().map(|s| s.to_string()).collect();
    let [tr, va, te] = stratified_split(&labels, [0.34, 0.33, 0.33], &mut Rng::new(1));
    assert_eq!(tr.len() + va.len() + te.len(), 6);
    for class in ["a", "b", "c"] {
        assert!(tr.iter().any(|&i| labels[i] == class), "{class} missing from training");
    }
}

#[test]
fn the_schema_survives_json() {
    let d = TempDir::new("json");
    let mut c = cfg(&d.write("r.csv", text_csv().as_bytes()));
    c.target = Some("sentiment".into());
    let l = load_cfg(&c).unwrap();
    let j = serde_json::to_string(&l.schema).unwrap();
    let back: DataSchema = serde_json::from_str(&j).unwrap();
    assert_eq!(back, l.schema);
    let empty = back.empty_dataset("x");
    assert_eq!(DataKind::of(&empty.train.inputs), DataKind::Text);
}

/// Schemas of every kind that training writes pass `validate`; each inconsistent edit of one
/// (as a hand-edited `data.json` would have) is an error naming the field.
#[test]
fn validate_accepts_written_schemas_and_names_each_inconsistency() {
    let d = TempDir::new("validate");
    let mut c = cfg(&d.write("r.csv", text_csv().as_bytes()));
    c.target = Some("sentiment".into());
    let text = load_cfg(&c).unwrap().schema;
    text.validate().unwrap();
    let array = DataSchema {
        kind: DataKind::Tabular,
        format: Format::Npy,
        task: Task::Classification { classes: 2 },
        classes: vec!["a".into(), "b".into()],
        target: None,
        encoder: Encoder::Array { shape: vec![3], mean: vec![0.0; 3], std: vec![1.0; 3] },
        display_names: Vec::new(),
        target_scale: None,
        headerless_columns: None,
    };
    array.validate().unwrap();
    let err = |s: &DataSchema| s.validate().unwrap_err().to_string();
    let with = |f: &dyn Fn(&mut DataSchema)| {
        let mut s = array.clone();
        f(&mut s);
        err(&s)
    };
    let e = with(&|s| s.task = Task::Classification { classes: 3 });
    assert!(e.contains("task.Classification.classes = 3") && e.contains("number of class names, 2"), "{e}");
    let e = with(&|s| s.encoder = Encoder::Array { shape: vec![3], mean: vec![], std: vec![] });
    assert!(e.contains("encoder.mean") && e.contains("0 / 0 values"), "{e}");
    let e = with(&|s| s.encoder = Encoder::Array { shape: vec![3], mean: vec![0.0; 3], std: vec![1.0, 0.0, 1.0] });
    assert!(e.contains("positive"), "{e}");
    let e = with(&|s| s.encoder = Encoder::Array { shape: vec![100_000, 100_000, 100], mean: vec![0.0], std: vec![1.0] });
    assert!(e.contains("encoder.shape") && e.contains("limit"), "{e}");
    let e = with(&|s| s.encoder = Encoder::Array { shape: vec![], mean: vec![0.0], std: vec![1.0] });
    assert!(e.contains("encoder.shape"), "{e}");
    let e = with(&|s| s.target_scale = Some((0.0, f64::NAN)));
    assert!(e.contains("target_scale"), "{e}");
    let e = with(&|s| s.classes = vec!["a".into(), "a".into()]);
    assert!(e.contains("classes = \"a\"") && e.contains("must differ"), "{e}");
    let e = with(&|s| s.display_names = vec!["x".into()]);
    assert!(e.contains("display_names"), "{e}");
    let e = with(&|s| s.encoder = Encoder::Tabular { columns: vec![Column::Categorical { name: "c".into(), categories: vec![] }] });
    assert!(e.contains("categor"), "{e}");
    let mut regression = array.clone();
    regression.task = Task::Regression;
    regression.classes.clear();
    regression.validate().unwrap();
}

/// Messages quote a value from a file by its start and length when it is long.
#[test]
fn long_values_are_clipped_in_messages() {
    assert_eq!(quoted("abc"), "\"abc\"");
    let long = "x".repeat(1000);
    let q = quoted(&long);
    assert!(q.starts_with(&format!("\"{}\"…", "x".repeat(CLIP_KEEP))) && q.ends_with("(1000 characters)"), "{q}");
    assert_eq!(short_list(&["a".into(), long.clone()]), format!("a, {}… (1000 characters)", "x".repeat(CLIP_KEEP)));
    // A name that would read as two, or as nothing, is quoted.
    assert_eq!(short_list(&["neg".into(), "pos, really".into(), "".into(), " x".into()]), "neg, \"pos, really\", \"\", \" x\"");
}

/// Two columns of one name: an error naming both, not the first one silently.
#[test]
fn a_duplicate_column_name_is_an_error() {
    let d = TempDir::new("dup");
    let mut s = String::from("a,a,b,label\n");
    for i in 0..20 {
        s.push_str(&format!("{i},{},{},{}\n", i * 2, i * 3, i % 2));
    }
    let mut c = cfg(&d.write("dup.csv", s.as_bytes()));
    c.target = Some("label".into());
    let e = load_cfg(&c).unwrap_err().to_string();
    assert!(e.contains("dup.csv") && e.contains("columns 1 and 2 are both named \"a\""), "{e}");
}

/// 60 reviews whose class is decided by one word, each with a different filler.
fn reviews(with_id: bool) -> String {
    let mut s = String::from(if with_id { "id,review,label\n" } else { "review,label\n" });
    for i in 0..60 {
        let (word, label) = if i % 2 == 0 { ("excellent", "good") } else { ("terrible", "bad") };
        let id = if with_id { format!("{},", 1000 + i) } else { String::new() };
        s.push_str(&format!("{id}\"the item number {i} was {word}, said customer {}\",{label}\n", i * 7));
    }
    s
}

#[test]
fn a_text_column_beside_an_identifier_is_read_as_text_and_said() {
    let d = TempDir::new("textid");
    let p = d.write("reviews.csv", reviews(true).as_bytes());
    let l = load_cfg(&cfg(&p)).unwrap();
    assert_eq!(l.schema.kind, DataKind::Text);
    let Encoder::Text { text_column, .. } = &l.schema.encoder else { panic!("{:?}", l.schema.encoder) };
    assert_eq!(text_column.as_deref(), Some("review"));
    assert!(l.warnings.iter().any(|w| w.contains("\"review\" is free text") && w.contains("\"id\"")), "{:?}", l.warnings);
    // Beside a real feature, free text is neither guessed as the input nor one-hot encoded.
    let mut s = String::from("score,review,label\n");
    for (i, line) in reviews(false).lines().skip(1).enumerate() {
        s.push_str(&format!("{}.5,{line}\n", i % 5));
    }
    let p = d.write("scored.csv", s.as_bytes());
    let e = load_cfg(&cfg(&p)).unwrap_err().to_string();
    assert!(e.contains("\"review\"") && e.contains("--text-column"), "{e}");
    // Short titles that are all different are text too, not 60 one-hot categories.
    let mut s = String::from("title,label\n");
    for i in 0..60 {
        s.push_str(&format!("{} item{i},{}\n", ["great", "awful"][i % 2], ["good", "bad"][i % 2]));
    }
    let l = load_cfg(&cfg(&d.write("titles.csv", s.as_bytes()))).unwrap();
    assert_eq!(l.schema.kind, DataKind::Text);
    // A few multi-word values repeated over many rows, alone: categories, not text.
    let mut s = String::from("city,label\n");
    for i in 0..300 {
        s.push_str(&format!("{},{}\n", ["New York", "San Diego", "Los Angeles", "Las Vegas", "El Paso"][i % 5], i % 5 % 2));
    }
    let l = load_cfg(&cfg(&d.write("cities.csv", s.as_bytes()))).unwrap();
    assert_eq!(l.schema.kind, DataKind::Tabular);
    // --text-column leaves the other columns out, and says so.
    let mut c = cfg(&d.write("ids.csv", reviews(true).as_bytes()));
    c.text_column = Some("review".into());
    let l = load_cfg(&c).unwrap();
    assert!(l.warnings.iter().any(|w| w.contains("reads only the text column \"review\"; \"id\" not used")), "{:?}", l.warnings);
    // Repeated multi-word values are categories.
    let mut s = String::from("job,years,label\n");
    for i in 0..60 {
        s.push_str(&format!("{},{},{}\n", ["senior software engineer", "junior data analyst"][i % 2], i % 9, i % 2));
    }
    let l = load_cfg(&cfg(&d.write("jobs.csv", s.as_bytes()))).unwrap();
    assert_eq!(l.schema.kind, DataKind::Tabular);
}

#[test]
fn a_headerless_file_is_read_without_a_header_at_evaluation_and_prediction() {
    let d = TempDir::new("nohdr2");
    let mut s = String::new();
    for i in 0..40 {
        s.push_str(&format!("{}.25,{}.5,{}\n", i, 40 - i, i % 2));
    }
    let p = d.write("pts.csv", s.as_bytes());
    let l = load_cfg(&cfg(&p)).unwrap();
    assert_eq!(l.schema.headerless_columns.as_deref(), Some(&["column1".to_string(), "column2".into(), "column3".into()][..]));
    // The training file itself, labelled: every row is an example, none is taken as a header.
    let (split, _) = l.schema.encode_labelled(&p, None).unwrap();
    assert_eq!(split.len(), 40);
    // New inputs without the target column, by position.
    let q = d.write("new.csv", b"1.25,39.5\n2.25,38.5\n");
    let (_, ids, _) = l.schema.encode_unlabelled(&q).unwrap();
    assert_eq!(ids.len(), 2);
    let bad = d.write("bad.csv", b"1,2,3,4\n");
    let e = l.schema.encode_unlabelled(&bad).unwrap_err().to_string();
    assert!(e.contains("without a header row of 3 columns"), "{e}");
    // A header the training file did not have: the error says why line 1 was read as data.
    let with_header = d.write("hdr.csv", b"x1,x2,y\n1.25,39.5,1\n");
    for e in [l.schema.encode_labelled(&with_header, None).unwrap_err().to_string(), l.schema.encode_unlabelled(&with_header).unwrap_err().to_string()] {
        assert!(e.contains("hdr.csv") && (e.contains("\"x1\" is not a number") || e.contains("\"y\"")) && e.contains("if line 1 is a header") && e.contains("remove the line"), "{e}");
    }
    // Line 2 has no such hint.
    let e = l.schema.encode_unlabelled(&d.write("bad2.csv", b"1.25,39.5\nabc,1\n")).unwrap_err().to_string();
    assert!(e.contains("\"abc\" is not a number") && !e.contains("header"), "{e}");
    // A schema saved before the field existed: the generated names say the file had no header.
    let mut old = l.schema.clone();
    old.headerless_columns = None;
    assert_eq!(old.encode_unlabelled(&q).unwrap().1.len(), 2);
    assert_eq!(old.encode_labelled(&p, None).unwrap().0.len(), 40);
    // A saved schema keeps it.
    let json = serde_json::to_string(&l.schema).unwrap();
    assert_eq!(serde_json::from_str::<DataSchema>(&json).unwrap(), l.schema);
}

/// A model of categorical columns trained without a header: a header line in a new file
/// would be predicted as a row, so a line 1 of only unseen values is named in a note.
#[test]
fn a_header_over_categorical_columns_of_a_headerless_model_is_named() {
    let d = TempDir::new("cathdr");
    let mut s = String::new();
    for i in 0..40 {
        s.push_str(&format!("{},{},{}\n", ["red", "blue"][i % 2], ["s", "m", "l"][i % 3], ["yes", "no"][i % 2]));
    }
    let l = load_cfg(&cfg(&d.write("cat.csv", s.as_bytes()))).unwrap();
    assert!(l.schema.headerless_columns.is_some());
    let (inputs, _, w) = l.schema.encode_unlabelled(&d.write("in.csv", b"colour,size\nred,s\nblue,m\n")).unwrap();
    assert_eq!(inputs.len(), 3);
    assert!(w.iter().any(|w| w.contains("line 1 (colour, size) is read as data, but none of its values was seen in training")), "{w:?}");
    let (_, _, w) = l.schema.encode_unlabelled(&d.write("ok.csv", b"red,s\nblue,m\n")).unwrap();
    assert!(!w.iter().any(|w| w.contains("line 1")), "{w:?}");
    // An unseen category is named with its column, and a spelling in other letter case.
    let (_, _, w) = l.schema.encode_unlabelled(&d.write("case.csv", b"red,s\nRed,m\n")).unwrap();
    assert!(w.iter().any(|w| w.contains("1 categorical value not seen in training") && w.contains("the first: \"Red\" in column \"column1\", where training has \"red\"")), "{w:?}");
}

/// A file whose line endings are mixed (LF, then CR alone) is read line by line (the CR lines
/// were one record of many fields).
#[test]
fn mixed_line_endings_are_read_as_lines() {
    let d = TempDir::new("mixnl");
    let mut s = String::from("x,y,label\n");
    for i in 0..40 {
        s.push_str(&format!("{i},{},{}{}", 40 - i, ["a", "b"][i % 2], if i < 20 { "\n" } else if i < 30 { "\r" } else { "\r\n" }));
    }
    let l = load_cfg(&cfg(&d.write("mix.csv", s.as_bytes()))).unwrap();
    let n = l.dataset.train.len() + l.dataset.valid.as_ref().map_or(0, |v| v.len()) + l.dataset.test.len();
    assert_eq!(n, 40);
}

/// `--target` is compared without the spaces around it, as `--features` and the header are.
#[test]
fn a_target_name_with_spaces_around_it_is_found() {
    let d = TempDir::new("trim");
    let mut c = cfg(&d.write("t.csv", tabular_csv().as_bytes()));
    c.target = Some(" species ".into());
    assert_eq!(load_cfg(&c).unwrap().schema.classes, ["adelie", "gentoo"]);
}

#[test]
fn labels_keep_their_spelling_and_new_spellings_match_by_value() {
    let d = TempDir::new("labels");
    let mut s = String::from("x,code\n");
    for i in 0..30 {
        s.push_str(&format!("{i},{}\n", ["01", "02", "7", "7.0"][i % 4]));
    }
    let mut c = cfg(&d.write("codes.csv", s.as_bytes()));
    c.target = Some("code".into());
    let l = load_cfg(&c).unwrap();
    assert_eq!(l.schema.classes, ["01", "02", "7", "7.0"]);
    assert!(l.warnings.iter().any(|w| w.contains("\"7\", \"7.0\"") && w.contains("separate classes")), "{:?}", l.warnings);
    // One word in other letter case: separate classes, said.
    let mut s = String::from("x,flag\n");
    for i in 0..30 {
        s.push_str(&format!("{i},{}\n", ["TRUE", "true", "false"][i % 3]));
    }
    let mut b = cfg(&d.write("flags.csv", s.as_bytes()));
    b.target = Some("flag".into());
    let flags = load_cfg(&b).unwrap();
    assert_eq!(flags.schema.classes, ["TRUE", "false", "true"]);
    assert!(flags.warnings.iter().any(|w| w.contains("\"TRUE\", \"true\" are the same word in other letter case")), "{:?}", flags.warnings);
    // Numbers mixed with other labels sort by value, then the rest as text.
    let mut s = String::from("x,code\n");
    for (i, l) in ["2", "10", "1a", "b", "2", "10", "1a", "b"].iter().enumerate() {
        s.push_str(&format!("{i},{l}\n"));
    }
    let mut m = cfg(&d.write("mixed.csv", s.as_bytes()));
    m.target = Some("code".into());
    m.split = Some(vec![0.5, 0.0, 0.5]);
    assert_eq!(load_cfg(&m).unwrap().schema.classes, ["2", "10", "1a", "b"]);
    // `1.0` in a new file is the class `01` (the only class of that value); `7.00` matches
    // two classes by value and none by text: an error.
    let (split, notes) = l.schema.encode_labelled(&d.write("e.csv", b"x,code\n1,1.0\n2,02\n"), None).unwrap();
    assert_eq!((split.targets.class(0), split.targets.class(1)), (0, 1));
    assert!(notes.iter().any(|n| n.contains("1 label matched a class by value, not as written (\"1.0\" is read as class \"01\")")), "{notes:?}");
    let (_, notes) = l.schema.encode_labelled(&d.write("e2.csv", b"x,code\n1,01\n2,02\n"), None).unwrap();
    assert!(!notes.iter().any(|n| n.contains("by value")), "{notes:?}");
    let e = l.schema.encode_labelled(&d.write("f.csv", b"x,code\n1,7.00\n"), None).unwrap_err().to_string();
    assert!(e.contains("has the value of the classes 7, 7.0"), "{e}");
    let e = l.schema.encode_labelled(&d.write("g.csv", b"x,code\n1,8\n"), None).unwrap_err().to_string();
    assert!(e.contains("was not seen in training"), "{e}");
}

#[test]
fn empty_columns_dialects_and_missing_categories_are_handled_and_said() {
    let d = TempDir::new("dialects");
    // A trailing comma on every line: an unnamed empty column, left out and said.
    let mut s = String::from("a,b,label,\n");
    for i in 0..30 {
        s.push_str(&format!("{i},{},{},\n", i % 4, i % 2));
    }
    let l = load_cfg(&cfg(&d.write("trail.csv", s.as_bytes()))).unwrap();
    let Encoder::Tabular { columns } = &l.schema.encoder else { panic!() };
    assert_eq!(columns.iter().map(|c| c.name()).collect::<Vec<_>>(), ["a", "b"]);
    assert!(l.warnings.iter().any(|w| w.contains("\"unnamed1\" left out")), "{:?}", l.warnings);
    let (inputs, _, _) = l.schema.encode_unlabelled(&d.write("ab.csv", b"a,b\n1,2\n")).unwrap();
    assert_eq!(inputs.len(), 1);
    // Old Mac line endings, UTF-16 with its mark, a line of spaces: the same rows.
    let plain: String = s.replace(",\n", "\n").replace("label,", "label");
    let cr = load_cfg(&cfg(&d.write("cr.csv", plain.replace('\n', "\r").as_bytes()))).unwrap();
    let utf16: Vec<u8> = [0xFF, 0xFE].into_iter().chain(plain.encode_utf16().flat_map(u16::to_le_bytes)).collect();
    let wide = load_cfg(&cfg(&d.write("wide.csv", &utf16))).unwrap();
    let spaced = load_cfg(&cfg(&d.write("sp.csv", format!("{plain}   \n").as_bytes()))).unwrap();
    for other in [&cr, &wide, &spaced] {
        assert_eq!(other.schema, l.schema);
    }
    // A semicolon-separated file: the error says so.
    let e = load_cfg(&cfg(&d.write("semi.csv", plain.replace(',', ";").as_bytes()))).unwrap_err().to_string();
    assert!(e.contains("semicolon-separated"), "{e}");
    // Missing categorical values are counted like missing numbers.
    let mut s = String::from("colour,n,label\n");
    for i in 0..30 {
        s.push_str(&format!("{},{i},{}\n", ["red", "", "NA", "blue"][i % 4], i % 2));
    }
    let l = load_cfg(&cfg(&d.write("cat.csv", s.as_bytes()))).unwrap();
    assert!(l.warnings.iter().any(|w| w.contains("missing categorical values encoded as the <missing> category")), "{:?}", l.warnings);
    // Identifiers alone (the text column empty in every row, so left out) are nothing to learn.
    let mut s = String::from("id,review,label\n");
    for i in 0..30 {
        s.push_str(&format!("{i},,{}\n", i % 2));
    }
    let e = load_cfg(&cfg(&d.write("empty_text.csv", s.as_bytes()))).unwrap_err().to_string();
    assert!(e.contains("are row identifiers"), "{e}");
    // A feature named twice is an error.
    let mut c = cfg(&d.0.join("cat.csv"));
    c.features = Some(vec!["n".into(), "n".into()]);
    let e = load_cfg(&c).unwrap_err().to_string();
    assert!(e.contains("named twice"), "{e}");
}

#[test]
fn a_folder_model_reads_csv_and_text_inputs_by_their_format() {
    let d = TempDir::new("foldercsv");
    for i in 0..12 {
        let (class, word) = if i % 2 == 0 { ("good", "excellent") } else { ("bad", "terrible") };
        d.write(&format!("data/{class}/{i}.txt"), format!("this one was {word} number {i}").as_bytes());
    }
    let l = load_cfg(&cfg(&d.0.join("data"))).unwrap();
    assert_eq!(l.schema.format, Format::Folder);
    // A CSV with a header: the header row is not a text and the label is not part of one.
    let csv = d.write("t.csv", b"review,label\n\"it was excellent, truly\",good\nit was terrible,bad\n");
    let (Inputs::Tokens { seqs, .. }, ids, _) = l.schema.encode_unlabelled(&csv).unwrap() else { panic!() };
    assert_eq!(ids.len(), 2);
    let v = l.schema.vocab().unwrap();
    assert!(v.id("bad") == text::UNK_ID || !seqs[1].contains(&v.id("bad")));
    assert_eq!(seqs[1].len(), 3, "it was terrible");
    let (split, _) = l.schema.encode_labelled(&csv, None).unwrap();
    assert_eq!((split.targets.class(0), split.targets.class(1)), (1, 0), "classes are [bad, good]");
    // A plain text file cannot be evaluated (no labels), but can be predicted line by line.
    let txt = d.write("t.txt", b"excellent\nterrible\n");
    assert!(l.schema.encode_labelled(&txt, None).unwrap_err().to_string().contains("holds no labels"));
    assert_eq!(l.schema.encode_unlabelled(&txt).unwrap().1.len(), 2);
    // A model trained on a text CSV: a file whose name says nothing is a CSV when its first line
    // names the text column, else one text per line.
    let t = load_cfg(&cfg(&d.write("rv.csv", reviews(false).as_bytes()))).unwrap();
    let as_csv = d.write("input", b"review,label\n\"it was excellent\",good\n");
    assert_eq!(t.schema.encode_unlabelled(&as_csv).unwrap().1, [format!("{}:2", as_csv.display())]);
    let as_lines = d.write("input2", b"it was excellent\nit was terrible\n");
    assert_eq!(t.schema.encode_unlabelled(&as_lines).unwrap().1.len(), 2);
}

#[test]
fn token_lines_given_with_their_labels_are_read_without_them() {
    let d = TempDir::new("toklines");
    let mut s = String::new();
    for i in 0..20 {
        s.push_str(&format!("{} w{} x{}\n", ["pos", "neg"][i % 2], i % 3, i % 2));
    }
    let l = load_cfg(&cfg(&d.write("tok.txt", s.as_bytes()))).unwrap();
    let with = d.write("with.txt", b"pos w1 x0\nneg w2 x1\n");
    let without = d.write("without.txt", b"w1 x0\nw2 x1\n");
    let (a, _, notes) = l.schema.encode_unlabelled(&with).unwrap();
    let (b, _, _) = l.schema.encode_unlabelled(&without).unwrap();
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    assert!(notes.iter().any(|n| n.contains("class name")), "{notes:?}");
    // Lines of one token are texts, even when that token is a class name.
    let (c, _, notes) = l.schema.encode_unlabelled(&d.write("one.txt", b"pos\nneg\n")).unwrap();
    assert!(notes.is_empty(), "{notes:?}");
    let Inputs::Tokens { seqs, .. } = c else { panic!() };
    assert_eq!(seqs.iter().map(Vec::len).collect::<Vec<_>>(), [1, 1]);
}

#[test]
fn a_first_line_of_only_separators_is_skipped_like_an_empty_line() {
    let d = TempDir::new("sepline");
    let mut rows = String::new();
    for i in 0..30 {
        rows.push_str(&format!("{}.5,{},{}\n", i, 30 - i, i % 2));
    }
    // Above data: the file is read as without it (headerless, target the last column), every
    // row an example.
    let p = d.write("unnamed.csv", format!(",,\n{rows}").as_bytes());
    let l = load_cfg(&cfg(&p)).unwrap();
    assert_eq!(l.schema.target.as_deref(), Some("column3"));
    assert_eq!(l.dataset.train.len() + l.dataset.valid.as_ref().unwrap().len() + l.dataset.test.len(), 30);
    // At prediction the line is skipped too, and the rows keep their own line numbers.
    let q = d.write("new.csv", b" , ,\n1.5,2\n");
    let (_, ids, _) = l.schema.encode_unlabelled(&q).unwrap();
    assert_eq!(ids, [format!("{}:2", q.display())]);
    // Above a header: the header is found on line 2.
    let p = d.write("named.csv", format!(",,\na,b,label\n{rows}").as_bytes());
    let l = load_cfg(&cfg(&p)).unwrap();
    assert_eq!(l.schema.target.as_deref(), Some("label"));
    // A file of only such a line holds no rows.
    let e = load_cfg(&cfg(&d.write("only.csv", b",,,\n"))).err().unwrap().to_string();
    assert!(e.contains("only.csv") && e.contains("holds no rows"), "{e}");
}

#[test]
fn unnamed_and_identifier_columns_are_named_by_position_and_left_out_when_they_number_rows() {
    let d = TempDir::new("pandas");
    // What pandas' `df.to_csv()` writes: an unnamed index column; also an `id`, a real
    // feature and a trailing unnamed column with values (a feature that lost its title).
    let mut s = String::from(",id,x,label,\n");
    for i in 0..40 {
        s.push_str(&format!("{i},{},{}.25,{},{}\n", 5000 + 3 * i, i % 7, i % 2, (i % 3) as f64 * 0.5));
    }
    let p = d.write("frame.csv", s.as_bytes());
    let l = load_cfg(&cfg(&p)).unwrap();
    let Encoder::Tabular { columns } = &l.schema.encoder else { panic!() };
    assert_eq!(columns.iter().map(|c| c.name()).collect::<Vec<_>>(), ["x", "unnamed2"]);
    assert!(l.warnings.iter().any(|w| w.contains("\"unnamed1\", \"id\" left out: a row identifier")), "{:?}", l.warnings);
    // New files are read by the same names, the unnamed columns in their order (here without
    // the target).
    let q = d.write("new.csv", b",id,x,\n0,9,1.25,0.5\n");
    let (inputs, ids, _) = l.schema.encode_unlabelled(&q).unwrap();
    assert_eq!(ids.len(), 1);
    let Inputs::Dense { x, .. } = inputs else { panic!() };
    assert_eq!(x.len(), 2);
    // Two unnamed columns are two columns, not one name twice.
    let p = d.write("two.csv", s.replace(",id,x,label,", ",,x,label,").as_bytes());
    let l = load_cfg(&cfg(&p)).unwrap();
    let Encoder::Tabular { columns } = &l.schema.encoder else { panic!() };
    assert_eq!(columns.iter().map(|c| c.name()).collect::<Vec<_>>(), ["x", "unnamed3"]);
    // Named with --features, an identifier is used.
    let mut c = cfg(&p);
    c.features = Some(vec!["unnamed2".into(), "x".into()]);
    let l = load_cfg(&c).unwrap();
    let Encoder::Tabular { columns } = &l.schema.encoder else { panic!() };
    assert_eq!(columns.iter().map(|c| c.name()).collect::<Vec<_>>(), ["unnamed2", "x"]);
    // A column named like an identifier whose values repeat is a feature.
    let mut rep = String::from("no,x,label\n");
    for i in 0..40 {
        rep.push_str(&format!("{},{}.5,{}\n", i % 3, i % 5, i % 2));
    }
    let l = load_cfg(&cfg(&d.write("rep.csv", rep.as_bytes()))).unwrap();
    let Encoder::Tabular { columns } = &l.schema.encoder else { panic!() };
    assert_eq!(columns.iter().map(|c| c.name()).collect::<Vec<_>>(), ["no", "x"]);
}

#[test]
fn two_columns_named_like_the_target_are_a_question_for_the_user() {
    let d = TempDir::new("twotargets");
    let mut s = String::from("x,target,label\n");
    for i in 0..30 {
        s.push_str(&format!("{}.5,{},{}\n", i, i % 2, i % 2));
    }
    let p = d.write("both.csv", s.as_bytes());
    let e = load_cfg(&cfg(&p)).err().unwrap().to_string();
    assert!(e.contains("both.csv") && e.contains("could each be the target") && e.contains("--target"), "{e}");
    let mut c = cfg(&p);
    c.target = Some("label".into());
    c.features = Some(vec!["x".into()]);
    assert_eq!(load_cfg(&c).unwrap().schema.target.as_deref(), Some("label"));
    // `y` beside a label is a coordinate, not a second target.
    let mut s = String::from("x,y,label\n");
    for i in 0..30 {
        s.push_str(&format!("{}.5,{}.25,{}\n", i, 30 - i, i % 2));
    }
    let l = load_cfg(&cfg(&d.write("xy.csv", s.as_bytes()))).unwrap();
    assert_eq!(l.schema.target.as_deref(), Some("label"));
}

#[test]
fn numbers_beyond_float_range_are_named_as_out_of_range() {
    let d = TempDir::new("range");
    let mut s = String::from("a,b,label\n");
    for i in 0..30 {
        s.push_str(&format!("{}.5,{},{}\n", i, i % 4, i % 2));
    }
    let l = load_cfg(&cfg(&d.write("ok.csv", s.as_bytes()))).unwrap();
    // Beyond f64: named as out of range, not as "not a number".
    let q = d.write("huge.csv", b"a,b\n1e400,2\n");
    let e = l.schema.encode_unlabelled(&q).err().unwrap().to_string();
    assert!(e.contains("huge.csv") && e.contains("line 2") && e.contains("\"1e400\" is infinite or out of range"), "{e}");
    // Within f64 but beyond f32 once standardised: an error, not an infinite input.
    let q = d.write("big.csv", b"a,b\n1e40,2\n");
    let e = l.schema.encode_unlabelled(&q).err().unwrap().to_string();
    assert!(e.contains("big.csv") && e.contains("line 2") && e.contains("\"1e40\" is out of range") && e.contains("float32"), "{e}");
    let q = d.write("fine.csv", b"a,b\n1e30,2\n");
    let (inputs, _, _) = l.schema.encode_unlabelled(&q).unwrap();
    let Inputs::Dense { x, .. } = inputs else { panic!() };
    assert!(x.iter().all(|v| v.is_finite()), "{x:?}");
    // A regression target too large to standardise.
    let mut s = String::from("a,price\n");
    for i in 0..30 {
        s.push_str(&format!("{i},{}e200\n", i as f64 + 0.5));
    }
    let mut c = cfg(&d.write("price.csv", s.as_bytes()));
    c.target = Some("price".into());
    let e = load_cfg(&c).err().unwrap().to_string();
    assert!(e.contains("too large to standardise"), "{e}");
}

#[test]
fn values_on_a_tiny_scale_are_standardised_and_constants_are_not() {
    let d = TempDir::new("scale");
    // Feature a on the scale 1e-13, a constant c, and a label decided by a.
    let mut s = String::from("a,c,label\n");
    for i in 0..40 {
        let a = ((i * 7) % 40) as f64 / 40.0;
        s.push_str(&format!("{:e},5.5,{}\n", a * 1e-13, if a > 0.5 { "p" } else { "n" }));
    }
    let l = load_cfg(&cfg(&d.write("tiny.csv", s.as_bytes()))).unwrap();
    let Encoder::Tabular { columns } = &l.schema.encoder else { panic!() };
    let Column::Numeric { std, .. } = &columns[0] else { panic!() };
    assert!(*std > 1e-15 && *std < 1e-12, "the 1e-13 column keeps its spread: std {std}");
    let Column::Numeric { std, .. } = &columns[1] else { panic!() };
    assert_eq!(*std, 1.0, "a constant column is not divided by its rounding");
    let Inputs::Dense { x, .. } = &l.dataset.train.inputs else { panic!() };
    let spread = x.chunks(2).map(|r| r[0]).fold(0f32, |m, v| m.max(v.abs()));
    assert!(spread > 0.5, "standardised values of a are of order one, not about zero: {spread}");
    // A regression target on the same scale.
    let mut s = String::from("a,price\n");
    for i in 0..40 {
        s.push_str(&format!("{i},{:e}\n", (i as f64 * 0.37).sin() * 1e-13));
    }
    let mut c = cfg(&d.write("reg.csv", s.as_bytes()));
    c.target = Some("price".into());
    let l = load_cfg(&c).unwrap();
    let (_, sd) = l.schema.target_scale.unwrap();
    assert!(sd > 1e-15 && sd < 1e-12, "target scale {sd}");
    // An array feature on the scale 1e-7.
    let n = 30;
    let x: Vec<f64> = (0..n * 4).map(|i| ((i * 13) % 17) as f64 * 1e-7).collect();
    let y: Vec<f64> = (0..n).map(|i| (i % 2) as f64).collect();
    let mut c = cfg(&d.write("x.npy", &npy(&[n, 4], &x, false)));
    c.target = Some(d.write("y.npy", &npy(&[n], &y, true)).display().to_string());
    let l = load_cfg(&c).unwrap();
    let Encoder::Array { std, .. } = &l.schema.encoder else { panic!() };
    assert!(std.iter().all(|&s| s > 1e-8 && s < 1e-5), "{std:?}");
}

/// Spreads that float64 resolves are kept however small against the values (1e-170, or 1e-5
/// on 1e6); a value far from the others and a column constant in training are named.
#[test]
fn small_spreads_survive_standardisation_and_outliers_and_constants_are_named() {
    let d = TempDir::new("spread");
    let mut s = String::from("tiny,offset,flat,label\n");
    for i in 0..40 {
        let a = ((i * 7) % 40) as f64 / 40.0 - 0.5;
        s.push_str(&format!("{:e},{},5,{}\n", a * 1e-170, 1e6 + a * 1e-5, if a > 0.0 { "p" } else { "n" }));
    }
    let l = load_cfg(&cfg(&d.write("spread.csv", s.as_bytes()))).unwrap();
    let Encoder::Tabular { columns } = &l.schema.encoder else { panic!() };
    for (c, lo, hi) in [(0, 1e-172, 1e-169), (1, 1e-7, 1e-4)] {
        let Column::Numeric { std, .. } = &columns[c] else { panic!() };
        assert!(*std > lo && *std < hi, "column {c} keeps its spread: std {std}");
    }
    let Inputs::Dense { x, .. } = &l.dataset.train.inputs else { panic!() };
    for c in 0..2 {
        let spread = x.chunks(3).map(|r| r[c]).fold(0f32, |m, v| m.max(v.abs()));
        assert!(spread > 0.5, "column {c}: standardised values of order one: {spread}");
    }
    assert!(l.warnings.iter().any(|w| w.contains("1 numeric column(s) have one value in every training row: \"flat\" (5)")), "{:?}", l.warnings);
    assert!(!l.warnings.iter().any(|w| w.contains("median absolute deviations")), "{:?}", l.warnings);
    // New data with a value the training data never came near is named; ordinary values are not.
    let far = d.write("far.csv", format!("tiny,offset,flat\n{:e},{},1005\n{:e},{},5\n", 1e-171, 1e6, 2e-171, 1e6 + 2e-6).as_bytes());
    let (_, _, w) = l.schema.encode_unlabelled(&far).unwrap();
    assert!(w.iter().any(|w| w.contains("1 numeric value(s) lie more than 100 training standard deviations") && w.contains("column \"flat\", \"1005\", 1000 away")), "{w:?}");
    let near = d.write("near.csv", format!("tiny,offset,flat\n{:e},{},5\n", 1e-171, 1e6).as_bytes());
    let (_, _, w) = l.schema.encode_unlabelled(&near).unwrap();
    assert!(!w.iter().any(|w| w.contains("standard deviations from the training mean")), "{w:?}");
    // A sentinel among ordinary values, in a feature and in a regression target (five rows each,
    // so that the training split has some).
    let mut s = String::from("a,y\n");
    for i in 0..60 {
        let v = (i as f64 * 0.7).sin() * 3.0;
        s.push_str(&format!("{},{}\n", if i % 12 == 7 { 999999.0 } else { v }, if i % 12 == 9 { 999999.0 } else { 2.0 * v }));
    }
    let mut c = cfg(&d.write("sentinel.csv", s.as_bytes()));
    c.target = Some("y".into());
    let l = load_cfg(&c).unwrap();
    let named = |what: &str| l.warnings.iter().any(|w| w.contains(what) && w.contains("has the value 999999") && w.contains("median absolute deviations"));
    assert!(named("column \"a\"") && named("the target"), "{:?}", l.warnings);
}

#[test]
fn the_target_cannot_be_the_text_and_held_out_files_cannot_be_the_training_file() {
    let d = TempDir::new("leak");
    let p = d.write("reviews.csv", reviews(false).as_bytes());
    let mut c = cfg(&p);
    c.text_column = Some("label".into());
    let e = load_cfg(&c).err().unwrap().to_string();
    assert!(e.contains("text_column") && e.contains("is the target column"), "{e}");
    // The training file again as the test file, spelled differently.
    let mut c = cfg(&p);
    c.test_path = Some(d.0.join(".").join("reviews.csv").display().to_string());
    let e = load_cfg(&c).err().unwrap().to_string();
    assert!(e.contains("test") && e.contains("is the training data"), "{e}");
    let other = d.write("other.csv", reviews(false).as_bytes());
    let mut c = cfg(&p);
    c.valid_path = Some(other.display().to_string());
    c.test_path = Some(other.display().to_string());
    let e = load_cfg(&c).err().unwrap().to_string();
    assert!(e.contains("is the validation file too"), "{e}");
    // `Label` beside `label` is two targets too.
    let mut s = String::from("a,Label,label\n");
    for i in 0..30 {
        s.push_str(&format!("{}.5,{},{}\n", i, i % 2, i % 2));
    }
    let e = load_cfg(&cfg(&d.write("case.csv", s.as_bytes()))).err().unwrap().to_string();
    assert!(e.contains("could each be the target"), "{e}");
}

#[test]
fn a_file_of_a_hundred_thousand_columns_is_read() {
    let d = TempDir::new("wide");
    let cols = 100_000;
    let mut s: String = (0..cols).map(|i| format!("f{i},")).collect();
    s.push_str("label\n");
    for r in 0..4 {
        s.push_str(&(0..cols).map(|i| format!("{},", (i + r) % 3)).collect::<String>());
        s.push_str(&format!("{}\n", r % 2));
    }
    let p = d.write("wide.csv", s.as_bytes());
    let mut c = cfg(&p);
    c.split = Some(vec![0.5, 0.0, 0.5]);
    let t = std::time::Instant::now();
    let l = load_cfg(&c);
    // Not a timing assertion: a reader quadratic in the columns would take tens of seconds
    // here, which the suite's duration shows; the test itself checks every column is read.
    eprintln!("100k columns read in {:?}: {}", t.elapsed(), l.as_ref().map_or_else(|e| e.to_string(), |_| "ok".into()));
    let Encoder::Tabular { columns } = &l.unwrap().schema.encoder else { panic!() };
    assert_eq!(columns.len(), cols);
}

#[test]
fn a_constant_regression_target_is_refused_before_training() {
    let d = TempDir::new("constant");
    let mut s = String::from("a,price\n");
    for i in 0..30 {
        s.push_str(&format!("{i}.5,5.5\n"));
    }
    let mut c = cfg(&d.write("flat.csv", s.as_bytes()));
    c.target = Some("price".into());
    c.task = Some("regression".into());
    let e = load_cfg(&c).err().unwrap().to_string();
    assert!(e.contains("every training target is 5.5") && e.contains("nothing to learn"), "{e}");
}

#[test]
fn a_prediction_file_without_its_header_and_every_nan_spelling_are_understood() {
    let d = TempDir::new("noheader");
    let mut s = String::from("a,b,label\n");
    for i in 0..30 {
        let a = if i == 3 { "-nan".to_string() } else if i == 4 { "NAN".to_string() } else { format!("{i}.5") };
        s.push_str(&format!("{a},{},{}\n", i % 4, i % 2));
    }
    let l = load_cfg(&cfg(&d.write("t.csv", s.as_bytes()))).unwrap();
    assert!(l.warnings.iter().any(|w| w.contains("imputed") || w.contains("missing")), "NaN spellings are missing values: {:?}", l.warnings);
    let q = d.write("rows.csv", b"0.9,0.9\n1.5,2\n");
    let e = l.schema.encode_unlabelled(&q).err().unwrap().to_string();
    assert!(e.contains("rows.csv") && e.contains("line 1") && e.contains("where the header row should be") && e.contains("a, b (and the target \"label\")"), "{e}");
}

#[test]
fn a_held_out_file_is_read_by_its_own_extension() {
    let d = TempDir::new("heldout-tsv");
    let mut csv = String::from("a,b,label\n");
    let mut tsv = String::from("a\tb\tlabel\n");
    for i in 0..30 {
        csv.push_str(&format!("{i}.5,{},{}\n", i % 4, i % 2));
        tsv.push_str(&format!("{i}.25\t{}\t{}\n", i % 3, i % 2));
    }
    let mut c = cfg(&d.write("train.csv", csv.as_bytes()));
    c.test_path = Some(d.write("test.tsv", tsv.as_bytes()).display().to_string());
    let l = load_cfg(&c).unwrap();
    assert_eq!(l.dataset.test.len(), 30, "every row of the tab-separated test file");
}

/// The fitted statistics are read back from `data.json` exactly (serde_json's correctly
/// rounded parsing): a mean of 1e15 + 0.125 written as `1000000000000000.1` came back one unit
/// in the last place off, and shifted every prediction of a model with such a target.
#[test]
fn saved_statistics_read_back_exactly() {
    let m = 1e15 + 0.125;
    let text = serde_json::to_string(&m).unwrap();
    assert_eq!(serde_json::from_str::<f64>(&text).unwrap(), m, "{text}");
    for x in [0.1, 1.0 / 3.0, 2.0f64.sqrt() * 1e-300, 6.02214076e23, f64::MAX, f64::MIN_POSITIVE] {
        assert_eq!(serde_json::from_str::<f64>(&serde_json::to_string(&x).unwrap()).unwrap(), x);
    }
}

/// Rows duplicated in the data, split at random, land on both sides of the split: the held-out
/// splits' copies of training rows are counted in a warning; data without copies gets none.
#[test]
fn held_out_copies_of_training_rows_are_counted() {
    let d = TempDir::new("dups");
    let mut s = String::from("a,b,label\n");
    for _copy in 0..6 {
        for i in 0..30 {
            s.push_str(&format!("{i},{},{}\n", (i * 7) % 11, if (i * 13) % 3 == 0 { "x" } else { "y" }));
        }
    }
    let l = load_cfg(&cfg(&d.write("dup.csv", s.as_bytes()))).unwrap();
    assert!(l.warnings.iter().any(|w| w.contains("(test split)") && w.contains("are exact copies of training examples")), "{:?}", l.warnings);
    let mut s = String::from("a,b,label\n");
    for i in 0..180 {
        s.push_str(&format!("{i},{},{}\n", (i * 7) % 11, if i % 3 == 0 { "x" } else { "y" }));
    }
    let l = load_cfg(&cfg(&d.write("nodup.csv", s.as_bytes()))).unwrap();
    assert!(!l.warnings.iter().any(|w| w.contains("exact copies")), "{:?}", l.warnings);
    // Rows of a few categories repeat by nature: no column tells them apart, no warning.
    let mut s = String::from("class,sex,port,survived\n");
    for i in 0..600 {
        s.push_str(&format!("{},{},{},{}\n", ["first", "second", "third"][i % 3], ["f", "m"][i / 3 % 2], ["S", "C", "Q"][i / 7 % 3], ["no", "yes"][i / 11 % 2]));
    }
    let l = load_cfg(&cfg(&d.write("passengers.csv", s.as_bytes()))).unwrap();
    assert!(!l.warnings.iter().any(|w| w.contains("exact copies")), "{:?}", l.warnings);
}
