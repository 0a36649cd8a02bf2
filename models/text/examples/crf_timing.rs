//! Times the CRF negative log-likelihood (forward + backward) with the fused `log Z` against
//! the composed tensor-op reference, and Viterbi decoding, on random scores.
//!
//! `cargo run -p chi-text --release --example crf_timing`

use chi_autodiff::{grad, GradOptions, Rng, Tensor};
use chi_text::crf::{neg_log_likelihood, viterbi, CrfScores};
use std::time::Instant;

fn main() {
    for &(b, t, k) in &[(32usize, 30usize, 12usize), (32, 30, 48)] {
        let mut rng = Rng::new(1);
        let s = CrfScores::<f32> {
            emissions: Tensor::randn(&[b, t, k], &mut rng),
            transitions: Tensor::randn(&[k, k], &mut rng),
            start: Tensor::randn(&[k], &mut rng),
            end: Tensor::randn(&[k], &mut rng),
        };
        let lengths: Vec<usize> = (0..b).map(|i| t / 2 + (i * 7) % (t / 2 + 1)).collect();
        let tags: Vec<Vec<usize>> = (0..b).map(|_| (0..t).map(|_| rng.below(k)).collect()).collect();
        let reps = 20;
        for fused in [true, false] {
            let t0 = Instant::now();
            for _ in 0..reps {
                let e = s.emissions.detach().requires_grad();
                let a = s.transitions.detach().requires_grad();
                let s2 = CrfScores { emissions: e.clone(), transitions: a.clone(), ..s.clone() };
                let l = neg_log_likelihood(&s2, &tags, &lengths, fused).unwrap();
                let g = grad(&[&l], &[&e, &a], None, GradOptions::default()).unwrap();
                std::hint::black_box(g);
            }
            let ms = t0.elapsed().as_secs_f64() * 1e3 / reps as f64;
            println!("B={b} T={t} K={k} {}: {ms:.3} ms per loss+gradient", if fused { "fused   " } else { "composed" });
        }
        let t0 = Instant::now();
        for _ in 0..reps {
            std::hint::black_box(viterbi(&s, &lengths).unwrap());
        }
        println!("B={b} T={t} K={k} viterbi : {:.3} ms per batch", t0.elapsed().as_secs_f64() * 1e3 / reps as f64);
    }
}
