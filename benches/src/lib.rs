//! Shared helpers for chi benchmarks: deterministic random data and a STREAM-style bandwidth
//! reference measured the same way as the kernels (so reports can quote "% of streaming
//! bandwidth").

use chi_kernels::Real;
use std::time::Instant;

/// Deterministic pseudo-random vector with entries uniform in `[-scale, scale)` (xorshift64*).
pub fn rand_vec<T: Real>(n: usize, seed: u64, scale: f64) -> Vec<T> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            let u = (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64;
            T::from_f64((2.0 * u - 1.0) * scale)
        })
        .collect()
}

/// STREAM triad `a[i] = b[i] + s·c[i]` split over `threads` scoped threads (contiguous
/// halves, like the kernels' rayon split). Plain loop; the compiler vectorises it.
pub fn triad(a: &mut [f32], b: &[f32], c: &[f32], s: f32, threads: usize) {
    assert!(a.len() == b.len() && a.len() == c.len(), "triad: length mismatch");
    let threads = threads.max(1);
    if threads == 1 {
        for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
            *a = b + s * c;
        }
        return;
    }
    let chunk = a.len().div_ceil(threads).max(1);
    std::thread::scope(|sc| {
        for ((a, b), c) in a.chunks_mut(chunk).zip(b.chunks(chunk)).zip(c.chunks(chunk)) {
            sc.spawn(move || {
                for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
                    *a = b + s * c;
                }
            });
        }
    });
}

/// Measured triad bandwidth in GB/s (12 bytes per f32 element: two reads, one write), median
/// of `reps` runs over `n` elements per array with `threads` threads.
pub fn stream_triad_gbps(n: usize, threads: usize, reps: usize) -> f64 {
    let b: Vec<f32> = rand_vec(n, 1, 1.0);
    let c: Vec<f32> = rand_vec(n, 2, 1.0);
    let mut a = vec![0f32; n];
    triad(&mut a, &b, &c, 3.0, threads); // warm up / fault pages in
    let mut t: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let t0 = Instant::now();
            triad(&mut a, &b, &c, 3.0, threads);
            std::hint::black_box(&mut a);
            t0.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(|x, y| x.partial_cmp(y).unwrap());
    (12 * n) as f64 / t[t.len() / 2] / 1e9
}
