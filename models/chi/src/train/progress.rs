//! A progress bar for long work: steps, loss, throughput and ETA. Hidden when stderr is not a
//! terminal (CI, pipes, tests), so logs stay clean.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// Progress of a training run.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar for `total` steps starting at `start`. `enabled = false` (or a non-terminal
    /// stderr) makes it silent.
    pub fn new(total: u64, start: u64, enabled: bool) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        if enabled && std::io::stderr().is_terminal() {
            bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(10));
        }
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} steps · {per_sec} · ETA {eta} · {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_position(start);
        bar.reset_eta();
        Progress { bar }
    }
    /// Whether it draws anything.
    pub fn is_visible(&self) -> bool {
        !self.bar.is_hidden()
    }
    /// Advances to `step` and shows `msg` (e.g. `loss 0.1234`).
    pub fn update(&self, step: u64, msg: String) {
        self.bar.set_position(step);
        self.bar.set_message(msg);
    }
    /// Prints a line above the bar (or to stderr when hidden).
    pub fn println(&self, line: &str) {
        if self.is_visible() {
            self.bar.println(line);
        } else {
            eprintln!("{line}");
        }
    }
    /// Finishes the bar, leaving it on screen.
    pub fn finish(&self) {
        self.bar.finish();
    }
}
