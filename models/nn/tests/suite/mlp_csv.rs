//! The `mlp_csv` example's own code path, on the CSV file it ships with.

#[path = "../../examples/mlp_csv.rs"]
mod example;

use chi_autodiff::Rng;

const MOONS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data/moons.csv");

/// Two interleaving half circles ("moons") with Gaussian noise: class 0 on
/// `(cos t, sin t)`, class 1 on `(1 − cos t, ½ − sin t)`, `t` uniform in `[0, π]`. The
/// committed `examples/data/moons.csv` is `moons_csv(200, 0.15, 0)`; set `CHI_WRITE_MOONS=1`
/// to rewrite it.
fn moons_csv(n: usize, noise: f64, seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let mut out = String::from("x1,x2,label\n");
    for i in 0..n {
        let class = i % 2;
        let t = rng.uniform(0.0, std::f64::consts::PI);
        let (x, y) = if class == 0 { (t.cos(), t.sin()) } else { (1.0 - t.cos(), 0.5 - t.sin()) };
        let (x, y) = (x + noise * rng.normal(), y + noise * rng.normal());
        out.push_str(&format!("{x:.4},{y:.4},{class}\n"));
    }
    out
}

#[test]
fn the_shipped_csv_is_the_seeded_generator_output() {
    let want = moons_csv(200, 0.15, 0);
    if std::env::var_os("CHI_WRITE_MOONS").is_some() {
        std::fs::write(MOONS, &want).unwrap();
    }
    assert_eq!(std::fs::read_to_string(MOONS).unwrap(), want);
}

#[test]
fn the_example_learns_the_moons() {
    let (losses, acc) = example::train(MOONS, 60).unwrap();
    let (first, last) = (losses[0], *losses.last().unwrap());
    assert!(last < 0.5 * first, "loss should fall by half: {first} → {last}");
    // Chance is 0.5 (the classes alternate).
    assert!(acc > 0.95, "training accuracy {acc}");
}

#[test]
fn a_bad_csv_is_an_error_naming_the_file_and_line() {
    let path = std::env::temp_dir().join(format!("chi-mlp-csv-{}.csv", std::process::id()));
    std::fs::write(&path, "x1,x2,label\n0.5,0.1,0\n0.2,oops,1\n").unwrap();
    let e = example::train(path.to_str().unwrap(), 1).unwrap_err().to_string();
    std::fs::remove_file(&path).ok();
    assert!(e.contains("chi-mlp-csv") && e.contains("line 3") && e.contains("\"x2\""), "{e}");
}
