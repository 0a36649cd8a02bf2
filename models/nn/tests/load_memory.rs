//! Reading a data file takes a bounded multiple of its size: the largest number of heap bytes
//! live at once while `userdata::load` reads, splits and encodes a file, counted by a global
//! allocator. Without these bounds a numeric CSV took 14.6 × its size in memory (7.4 GB for a
//! 509 MB file) and a file of token lines 29 ×, so files far below the 4 GiB file limit were
//! killed for lack of memory (RELIABILITY.md, "Large files").

use chi_autodiff::Rng;
use chi_nn::dataset::DataConfig;
use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Mutex;

struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(l.size() as isize, Ordering::Relaxed) + l.size() as isize;
        PEAK.fetch_max(now, Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let now = LIVE.fetch_add(new as isize - l.size() as isize, Ordering::Relaxed) + new as isize - l.size() as isize;
        PEAK.fetch_max(now, Ordering::Relaxed);
        System.realloc(p, l, new)
    }
}
#[global_allocator]
static A: Counting = Counting;

/// The allocator counts every thread: the tests of this file run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// The most heap bytes live at once while `cfg`'s file is loaded, as a multiple of its size.
fn peak_multiple(cfg: &DataConfig) -> f64 {
    let size = std::fs::metadata(cfg.path.as_ref().unwrap()).unwrap().len() as f64;
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let loaded = chi_nn::userdata::load("file", cfg, &mut Rng::new(0)).unwrap();
    let peak = PEAK.load(Ordering::Relaxed);
    drop(loaded);
    (peak - before) as f64 / size
}

fn file(name: &str, body: &str) -> String {
    let dir = std::env::temp_dir().join(format!("chi-load-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p.to_str().unwrap().to_string()
}

/// A CSV of 20 numbers of 8 characters per row, read, split 80/10/10 and standardised: at most
/// 8 × its size (6.65 when written). Shorter fields cost more per byte (a `String` each while
/// the file is parsed: about 20 × for one-digit fields).
#[test]
fn a_numeric_csv_takes_a_bounded_multiple_of_its_size() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut rng = Rng::new(1);
    let mut csv = (0..20).map(|c| format!("x{c}")).collect::<Vec<_>>().join(",") + ",label\n";
    for _ in 0..15_000 {
        for _ in 0..20 {
            let _ = write!(csv, "{:.5},", rng.normal());
        }
        let _ = writeln!(csv, "{}", (rng.uniform(0.0, 3.0)) as usize);
    }
    let path = file("num.csv", &csv);
    let m = peak_multiple(&DataConfig { path: Some(path), ..Default::default() });
    println!("numeric CSV: {m:.2} × its size");
    assert!(m < 8.0, "loading a numeric CSV took {m:.2} × its size");
}

/// Token lines (a label, then 30 tokens): at most 6 × the file's size (4.10 when written).
#[test]
fn token_lines_take_a_bounded_multiple_of_their_size() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut rng = Rng::new(2);
    let mut text = String::new();
    for _ in 0..20_000 {
        let _ = write!(text, "{}", if rng.uniform(0.0, 1.0) < 0.5 { "pos" } else { "neg" });
        for _ in 0..30 {
            let _ = write!(text, " w{}", (rng.uniform(0.0, 1.0).powi(3) * 5000.0) as usize);
        }
        text.push('\n');
    }
    let path = file("tokens.txt", &text);
    let m = peak_multiple(&DataConfig { path: Some(path), ..Default::default() });
    println!("token lines: {m:.2} × their size");
    assert!(m < 6.0, "loading token lines took {m:.2} × their size");
}
