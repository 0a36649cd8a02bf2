//! Training throughput of an attention encoder–decoder (the `nmt-cells` LSTM model's shape):
//! target tokens per second of teacher-forced training steps (forward, backward, Adagrad) on
//! random token data. `benches/torch/seq2seq_speed.py` runs the same model in PyTorch and this
//! binary alternately.
//!
//! ```text
//! cargo run --release -p chi-seq2seq --example seq2seq_speed -- [--threads N] [--steps N] [--vocab V]
//!     [--hidden H] [--emb E] [--batch B] [--len T]
//! ```
//! Prints one JSON line: `{"tokens_per_sec": …, "seconds": …, "steps": …, "ms_per_step": …,
//! "params": …, "embedding_params": …, "loss_first": …, "loss_last": …}` (`embedding_params`: the
//! source and target embedding tables, the part a data-parallel step can exchange as rows).

use chi_autodiff::Rng;
use chi_nn::optim::{OptimConfig, Optimizer};
use chi_seq2seq::vocab::{Padded, EOS};
use chi_seq2seq::{AttentionKind, CellKind, Seq2Seq, Seq2SeqConfig};
use std::time::Instant;

fn arg(args: &[String], name: &str, default: usize) -> usize {
    match args.iter().position(|a| a == name) {
        Some(i) => match args.get(i + 1).and_then(|v| v.parse().ok()) {
            Some(v) => v,
            None => {
                eprintln!("seq2seq_speed: {name} needs a positive integer");
                std::process::exit(2);
            }
        },
        None => default,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let threads = arg(&args, "--threads", 1);
    let steps = arg(&args, "--steps", 30);
    let (vocab, hidden, emb, batch, len) = (arg(&args, "--vocab", 5000), arg(&args, "--hidden", 128), arg(&args, "--emb", 100), arg(&args, "--batch", 16), arg(&args, "--len", 20));
    // As the `chi` program does (and PyTorch's caching allocator): freed buffers stay mapped for
    // the next step instead of being returned to the system and faulted in again.
    chi_autodiff::malloc::keep_freed_memory();
    if let Err(e) = chi_kernels::set_num_threads(threads) {
        eprintln!("seq2seq_speed: {e}");
        std::process::exit(2);
    }
    let cfg = Seq2SeqConfig { src_vocab: vocab, tgt_vocab: vocab, emb, hidden, cell: CellKind::Lstm, attention: AttentionKind::LuongGeneral, ..Seq2SeqConfig::default() };
    let model = match Seq2Seq::<f32>::new(&cfg, 1) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("seq2seq_speed: {e}");
            std::process::exit(2);
        }
    };
    let mut opt = Optimizer::new(OptimConfig::adagrad(0.01));
    let params = model.store.params().to_vec();
    let mut rng = Rng::new(7);
    // Sequences of `len` tokens: `len − 1` random ids then EOS, on both sides.
    let mut sample = || -> Vec<Vec<usize>> { (0..batch).map(|_| (0..len - 1).map(|_| 4 + rng.below(vocab - 4)).chain([EOS]).collect()).collect() };
    let mut step = |src: &Padded, tgt: &Padded| -> f64 {
        model.store.zero_grad();
        let tf = model.teacher_forced(src, tgt).expect("ids in range");
        tf.loss.backward();
        opt.step_params(&params);
        tf.loss.item() as f64
    };
    let data: Vec<(Padded, Padded)> = (0..steps + 3).map(|_| (Padded::new(&sample()), Padded::new(&sample()))).collect();
    for (s, t) in &data[..3] {
        step(s, t);
    }
    let start = Instant::now();
    let mut losses = Vec::with_capacity(steps);
    for (s, t) in &data[3..] {
        losses.push(step(s, t));
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{{\"tokens_per_sec\": {:.1}, \"seconds\": {secs:.4}, \"steps\": {steps}, \"ms_per_step\": {:.3}, \"params\": {}, \"embedding_params\": {}, \"loss_first\": {:.5}, \"loss_last\": {:.5}}}",
        (steps * batch * len) as f64 / secs,
        1e3 * secs / steps as f64,
        model.store.num_scalars(),
        params.iter().filter(|p| p.name().contains("emb")).map(|p| p.numel()).sum::<usize>(),
        losses[0],
        losses[steps - 1]
    );
}
