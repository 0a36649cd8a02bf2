//! Training throughput of one recurrent layer at a parameter budget: RCNN (2-gram,
//! multiplicative, normalised, tanh) with λ constant or adaptive on x, or an LSTM, on random
//! `[batch, time, input]` inputs, loss = mean square of the outputs, SGD
//! ([`chi_rcnn::experiments::layer_training_throughput`]). `benches/torch/rcnn_speed.py` runs
//! the same layers in PyTorch and this binary alternately.
//!
//! ```text
//! cargo run --release -p chi-rcnn --example rcnn_speed -- --model rcnn-const|rcnn-adaptive|lstm
//!     [--scan fused|composed] [--threads N] [--steps N] [--batch B] [--time T] [--input D] [--params P]
//! ```
//! Prints one JSON line: `{"model": …, "hidden": …, "params": …, "tokens_per_sec": …, "seconds": …}`.

use chi_rcnn::experiments::{layer_training_throughput, LmKind};
use chi_rcnn::{Decay, ScanImpl};

fn value<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().position(|a| a == name).map(|i| args.get(i + 1).map_or("", String::as_str))
}

fn num(args: &[String], name: &str, default: usize) -> usize {
    match value(args, name) {
        None => default,
        Some(v) => v.parse().ok().filter(|&n| n > 0).unwrap_or_else(|| fail(&format!("{name} needs a positive integer, got {v:?}"))),
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("rcnn_speed: {msg}");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let kind = match value(&args, "--model").unwrap_or("rcnn-adaptive") {
        "rcnn-const" => LmKind::Rcnn(Decay::Constant(0.5)),
        "rcnn-adaptive" => LmKind::Rcnn(Decay::AdaptiveX),
        "lstm" => LmKind::Lstm,
        other => fail(&format!("--model {other:?}: expected rcnn-const, rcnn-adaptive or lstm")),
    };
    let scan = match value(&args, "--scan").unwrap_or("fused") {
        "fused" => ScanImpl::Fused,
        "composed" => ScanImpl::Composed,
        other => fail(&format!("--scan {other:?}: expected fused or composed")),
    };
    if let Err(e) = chi_kernels::set_num_threads(num(&args, "--threads", 1)) {
        fail(&e.to_string());
    }
    let (steps, batch, time, input, params) = (num(&args, "--steps", 20), num(&args, "--batch", 32), num(&args, "--time", 35), num(&args, "--input", 128), num(&args, "--params", 200_000));
    match layer_training_throughput(kind, scan, batch, time, input, params, steps, 1) {
        Ok(r) => println!("{{\"model\": \"{}\", \"hidden\": {}, \"params\": {}, \"tokens_per_sec\": {:.1}, \"seconds\": {:.4}}}", r.model, r.hidden, r.params, r.tokens_per_sec, r.seconds),
        Err(e) => fail(&e.to_string()),
    }
}
