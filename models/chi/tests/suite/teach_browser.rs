//! The `chi teach` page in a real browser: headless Chromium loads each page with `#autotest`,
//! the page clicks its own Next button through every forward and backward step and writes the
//! gradients it then displays (read back from its table) into `#autotest-result`; this test
//! compares them with the engine's gradients.
//!
//! Runs when Chromium is installed (`scripts/install-chromium.sh`); otherwise it says so and
//! passes without checking anything.

use chi_autodiff::Tensor;
use chi_cli::teach::{self, program::NodeKind};
use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("CHI_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Loads `page#autotest` and returns the JSON the page wrote.
fn autotest(browser: &Path, page: &Path) -> serde_json::Value {
    let url = format!("file://{}#autotest", page.display());
    let out = Command::new(browser)
        .args(["--headless", "--disable-gpu", "--no-sandbox", "--virtual-time-budget=10000", "--dump-dom", &url])
        .output()
        .expect("chromium runs");
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    let dom = String::from_utf8(out.stdout).expect("utf-8 DOM");
    let start = dom.find("<pre id=\"autotest-result\">").expect("the page has a result element") + "<pre id=\"autotest-result\">".len();
    let end = start + dom[start..].find("</pre>").expect("closed");
    let text = dom[start..end].replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
    assert!(!text.is_empty(), "the page's script did not write a result (did it run?)");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("result is not JSON ({e}): {text}"))
}

fn close(a: f64, b: f64) -> bool {
    // The page shows 6 significant digits.
    (a - b).abs() <= 1e-9 + 5e-6 * b.abs()
}

#[test]
fn page_steps_through_forward_and_backward_and_shows_the_engines_gradients() {
    let Some(browser) = chromium() else {
        eprintln!("SKIPPED teach_browser: no chromium on PATH (run scripts/install-chromium.sh, or set CHI_CHROMIUM)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("chi-teach-browser-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = ["mlp", "lstm", "attention", "a = 2; b = -3; c = 10; f = -2; e = a*b; d = e + c; L = d * f"];
    for (k, what) in cases.iter().enumerate() {
        let page = dir.join(format!("page{k}.html"));
        let status = Command::new(env!("CARGO_BIN_EXE_chi")).args(["teach", what, "-o"]).arg(&page).status().unwrap();
        assert!(status.success(), "chi teach {what} failed");
        let shown = autotest(&browser, &page);
        let t = teach::trace_of(what).unwrap();
        let (f, b) = (t.forward.len(), t.backward.len());
        assert_eq!(shown["clicks"].as_u64(), Some((f + b) as u64), "{what}: the page did not step through every step");
        assert_eq!(shown["forward"].as_u64(), Some(f as u64));
        let grads = shown["grads"].as_object().expect("grads");
        // Every node that takes a gradient shows one, equal to the engine's.
        let mut checked = 0;
        for node in t.nodes.iter().filter(|n| n.kind != "const") {
            let want = node.grad.as_ref().unwrap();
            let got: Vec<f64> = grads
                .get(&node.label)
                .unwrap_or_else(|| panic!("{what}: the page shows no gradient for {}", node.label))
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            assert_eq!(got.len(), want.len(), "{what} {}", node.label);
            for (g, w) in got.iter().zip(want) {
                assert!(close(*g, *w), "{what} {}: page shows {g}, engine says {w}", node.label);
            }
            checked += 1;
        }
        assert_eq!(grads.len(), checked, "{what}: the page shows gradients for constants");
        // And the leaves' gradients are those of a plain backward() on a fresh forward pass.
        if let Some(built) = teach::example(what) {
            let (prog, _) = built.unwrap();
            let vals = prog.eval(true, None);
            vals[prog.output].backward();
            for (i, n) in prog.nodes.iter().enumerate() {
                if let NodeKind::Leaf(_) = n.kind {
                    let g: Tensor<f64> = vals[i].grad().unwrap();
                    let shown: Vec<f64> = grads[n.name.as_deref().unwrap()].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
                    for (s, w) in shown.iter().zip(g.data()) {
                        assert!(close(*s, *w), "{what} leaf {:?}: page {s}, backward() {w}", n.name);
                    }
                }
            }
        }
        eprintln!("{what}: {} steps clicked, {checked} gradients match the engine", f + b);
    }
    std::fs::remove_dir_all(&dir).ok();
}
