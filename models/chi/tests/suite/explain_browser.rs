//! `chi explain` pages, checked as a reader sees them: a text CNN and a HAN are trained on the
//! shipped example reviews and explained; the PNG decodes with the size the words need, the
//! JSON carries the HAN's attention, and — when Chromium is installed
//! (`scripts/install-chromium.sh`, or `CHI_CHROMIUM`) — headless Chromium renders the HTML
//! page, and each word's computed background is the colour its score asks for: red for a
//! positive score, blue for a negative one, with opacity |score| / max |score| of its text.
//! Without Chromium the browser part says so and is skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

fn chi() -> Command {
    Command::new(env!("CARGO_BIN_EXE_chi"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chi-explain-browser-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn chromium() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("CHI_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).flat_map(|d| ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"].map(|n| d.join(n))).find(|p| p.is_file())
}

/// The page with a script appended that reports every word's score and computed background.
fn instrumented(page: &Path, out: &Path) {
    let html = std::fs::read_to_string(page).unwrap();
    let script = r#"<pre id="autotest-result"></pre><script>
const docs = [...document.querySelectorAll('p.doc')].map(p => [...p.querySelectorAll('span.w')].map(s => {
  const r = s.getBoundingClientRect();
  return { score: parseFloat(s.dataset.score), bg: getComputedStyle(s).backgroundColor, w: r.width, h: r.height };
}));
document.getElementById('autotest-result').textContent = JSON.stringify(docs);
</script></body>"#;
    std::fs::write(out, html.replace("</body>", script)).unwrap();
}

/// `rgba(r, g, b, a)` or `rgb(r, g, b)` as four numbers.
fn rgba(s: &str) -> [f64; 4] {
    let inner = s.trim_start_matches("rgba(").trim_start_matches("rgb(").trim_end_matches(')');
    let v: Vec<f64> = inner.split(',').map(|x| x.trim().parse().unwrap()).collect();
    [v[0], v[1], v[2], *v.get(3).unwrap_or(&1.0)]
}

fn check_in_browser(browser: &Path, page: &Path, words: usize, panels: usize) {
    let probe = page.with_file_name("probe.html");
    instrumented(page, &probe);
    let out = Command::new(browser)
        .args(["--headless", "--disable-gpu", "--no-sandbox", "--virtual-time-budget=5000", "--dump-dom"])
        .arg(format!("file://{}", probe.display()))
        .output()
        .expect("chromium runs");
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    let dom = String::from_utf8(out.stdout).unwrap();
    let tag = "<pre id=\"autotest-result\">";
    let start = dom.find(tag).expect("result element") + tag.len();
    let end = start + dom[start..].find("</pre>").unwrap();
    let text = dom[start..end].replace("&quot;", "\"").replace("&amp;", "&");
    let docs: Vec<Vec<serde_json::Value>> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(docs.len(), panels, "{}: shaded panels", page.display());
    for (k, d) in docs.iter().enumerate() {
        assert_eq!(d.len(), words, "panel {k}: words");
        let m = d.iter().map(|s| s["score"].as_f64().unwrap().abs()).fold(0.0, f64::max);
        assert!(m > 0.0, "panel {k}: every score is zero");
        for s in d {
            let score = s["score"].as_f64().unwrap();
            let [r, g, b, a] = rgba(s["bg"].as_str().unwrap());
            assert!(s["w"].as_f64().unwrap() > 0.0 && s["h"].as_f64().unwrap() > 0.0, "panel {k}: a word is not visible: {s}");
            // Browsers keep alpha in 8 bits and print it with two decimals.
            assert!((a - score.abs() / m).abs() <= 0.006, "panel {k}: opacity {a} for score {score} (max {m})");
            let want = if score >= 0.0 { [220.0, 40.0, 40.0] } else { [40.0, 90.0, 220.0] };
            if a > 0.0 {
                assert_eq!([r, g, b], want, "panel {k}: colour for score {score}");
            }
        }
    }
}

#[test]
fn explain_pages_of_a_text_cnn_and_a_han_render_their_scores() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/reviews");
    let text = "A wonderful film. The acting was great! But the ending was dull.";
    let browser = chromium();
    if browser.is_none() {
        eprintln!("SKIPPED the browser part: no chromium on PATH (run scripts/install-chromium.sh, or set CHI_CHROMIUM)");
    }
    for (model, panels) in [("text-cnn", 3), ("han", 4)] {
        let dir = tmp(model);
        let run = dir.join("run");
        let o = chi().args(["train", "--data"]).arg(&data).args(["--model", model, "--steps", "40", "--out"]).arg(&run).output().unwrap();
        assert!(o.status.success(), "{model}: train failed: {}", String::from_utf8_lossy(&o.stderr));
        let o = chi().arg("explain").arg(&run).args(["--text", text, "--steps", "32"]).output().unwrap();
        assert!(o.status.success(), "{model}: explain failed: {}", String::from_utf8_lossy(&o.stderr));
        let ex = run.join("explain");
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(ex.join("explain.json")).unwrap()).unwrap();
        let words = json[0]["words"].as_array().unwrap().len();
        assert_eq!(words, 15, "{model}: tokens of the text");
        match json[0].get("attention") {
            Some(a) if model == "han" => {
                let a: Vec<f64> = a.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
                assert_eq!(a.len(), words);
                assert!((a.iter().sum::<f64>() - 1.0).abs() < 1e-4, "HAN attention sums to {}", a.iter().sum::<f64>());
            }
            None if model != "han" => {}
            other => panic!("{model}: attention {other:?}"),
        }
        let png = image::open(ex.join("explain.png")).unwrap_or_else(|e| panic!("{model}: explain.png: {e}")).to_rgb8();
        assert_eq!(png.width(), 1000);
        // A title, then per panel a caption and one line of 15 short words.
        assert!(png.height() > 60 * panels as u32, "{model}: {} px tall for {panels} panels", png.height());
        // Shaded words: some pixels are neither white nor grey text.
        let coloured = png.pixels().filter(|p| p[0].abs_diff(p[2]) > 40).count();
        assert!(coloured > 500, "{model}: only {coloured} coloured pixels");
        if let Some(b) = &browser {
            check_in_browser(b, &ex.join("explain.html"), words, panels);
        }
        // Filter n-grams and the PCA of the representations need a convolutional model.
        let o = chi().arg("explain").arg(&run).args(["--ngrams", "2", "--pca"]).output().unwrap();
        if model == "text-cnn" {
            assert!(o.status.success(), "--ngrams --pca failed: {}", String::from_utf8_lossy(&o.stderr));
            let ngrams: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(ex.join("ngrams.json")).unwrap()).unwrap();
            let filters = ngrams.as_array().unwrap();
            assert_eq!(filters.len(), 300, "3 widths × 100 filters");
            for f in filters {
                let top = f["top"].as_array().unwrap();
                let width = f["width"].as_u64().unwrap() as usize;
                assert!((1..=2).contains(&top.len()), "{f}");
                assert!(top.iter().all(|g| g[0].as_str().unwrap().split(' ').count() == width), "an n-gram has the filter's width: {f}");
                assert!(top.windows(2).all(|w| w[0][1].as_f64() >= w[1][1].as_f64()), "best first: {f}");
                assert_eq!(f["head_weights"].as_array().unwrap().len(), 2, "one output weight per class");
            }
            let stdout = String::from_utf8_lossy(&o.stdout);
            assert_eq!(stdout.lines().filter(|l| l.starts_with("filter ")).count(), 5, "{stdout}");
            let pca: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(ex.join("pca.json")).unwrap()).unwrap();
            let n = pca["texts"].as_u64().unwrap() as usize;
            assert!(n >= 100, "{n} training texts");
            for key in ["at_init", "trained"] {
                let pts = pca[key].as_array().unwrap();
                assert_eq!(pts.len(), n);
                assert!(pts.iter().flat_map(|p| p.as_array().unwrap()).all(|v| v.as_f64().unwrap().is_finite()));
            }
            let img = image::open(ex.join("pca.png")).unwrap().to_rgb8();
            assert_eq!((img.width(), img.height()), (1120, 560));
        } else {
            assert!(!o.status.success(), "{model}: --ngrams should be refused");
            assert!(String::from_utf8_lossy(&o.stderr).contains("text-cnn"), "{}", String::from_utf8_lossy(&o.stderr));
            // A refused analysis is refused before the texts' pages are written.
            let ex2 = dir.join("refused");
            let o = chi().arg("explain").arg(&run).args(["--text", text, "--pca", "--dir"]).arg(&ex2).output().unwrap();
            assert!(!o.status.success(), "{model}: --pca should be refused");
            assert!(String::from_utf8_lossy(&o.stderr).contains("--pca needs"), "{}", String::from_utf8_lossy(&o.stderr));
            assert!(!ex2.exists(), "{model}: a refused explain wrote {:?}", std::fs::read_dir(&ex2).map(|d| d.count()));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
