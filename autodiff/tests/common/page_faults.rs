// The steady-state page-fault check shared by `autodiff/tests/page_faults.rs` (the library under
// glibc's malloc) and `models/chi/tests/page_faults.rs` (the programs' allocator and settings),
// included by both: each test binary must hold this one test alone, so that no other test's
// allocations land in the process-wide counts.

use chi_autodiff::{Rng, Tensor};

/// The process's minor page faults and resident pages, or `None` off Linux.
fn faults_and_resident() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name: state is field 3, minflt field 10.
    let rest = &stat[stat.rfind(')')? + 2..];
    let minflt = rest.split(' ').nth(7)?.parse().ok()?;
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let resident = statm.split(' ').nth(1)?.parse().ok()?;
    Some((minflt, resident))
}

/// Runs LSTM and GRU training steps until 20 in a row take no page fault (at most 400), then
/// asserts that 100 more take none and keep the resident set flat.
fn lstm_and_gru_steps_take_no_page_faults_after_warm_up() {
    // The LSTM side-by-side workload's sizes (input 64, hidden 128, batch 16, 35 steps), LSTM
    // and GRU, on one thread (each pool thread has its own allocator arena).
    let (b, t, inp, h) = (16, 35, 64, 128);
    chi_kernels::threads::with_threads(1, move || {
        let mut rng = Rng::new(3);
        let x = Tensor::<f32>::randn(&[b * t, inp], &mut rng);
        let param = |shape: &[usize], rng: &mut Rng| Tensor::<f32>::randn(shape, rng).mul_scalar(0.1).requires_grad();
        // LSTM w_ih, w_hh; GRU w_ih, w_hh, w_hn, b_hn.
        let shapes: [&[usize]; 6] = [&[inp, 4 * h], &[h, 4 * h], &[inp, 3 * h], &[h, 2 * h], &[h, h], &[h]];
        let mut ps: Vec<Tensor<f32>> = shapes.iter().map(|s| param(s, &mut rng)).collect();
        let zeros = Tensor::<f32>::zeros(&[b, h]);
        let mut step = || {
            let xl = x.matmul(&ps[0]).reshape(&[b, t, 4 * h]);
            let yl = Tensor::lstm_sequence(&xl, &zeros, &zeros, &ps[1], None, None);
            let xg = x.matmul(&ps[2]).reshape(&[b, t, 3 * h]);
            let yg = Tensor::gru_sequence(&xg, &zeros, &ps[3], &ps[4], Some(&ps[5]), None);
            yl.square().mean().add(&yg.square().mean()).backward();
            for p in ps.iter_mut() {
                let g = p.grad().unwrap();
                p.update(|v| v.iter_mut().zip(g.data()).for_each(|(a, d)| *a -= 0.01 * d));
                p.zero_grad();
            }
        };
        // Warm-up: the heap grows to the step's peak working set and the buffer pool's classes
        // fill (measured on Zen 4: about 140 pages over steps 5 to 55, none after). With the
        // programs' allocator on an Intel Xeon one more 2 MB huge page was touched once, at about
        // step 108, after 60 quiet steps, and never again in the 500 steps after. So warm up for
        // at least 200 steps and until 60 in a row take no fault (at most 600), then measure.
        let mut quiet = 0;
        for block in 0..30 {
            let before = faults_and_resident().unwrap().0;
            for _ in 0..20 {
                step();
            }
            quiet = if faults_and_resident().unwrap().0 == before { quiet + 20 } else { 0 };
            if block >= 9 && quiet >= 60 {
                break;
            }
        }
        let (f0, r0) = faults_and_resident().unwrap();
        for _ in 0..100 {
            step();
        }
        let (f1, r1) = faults_and_resident().unwrap();
        // libtest's main thread may touch a page or two meanwhile; a step that remapped its
        // buffers would take hundreds (its gate buffers alone are 1.1 MB, 280 pages).
        assert!(f1 - f0 <= 4, "{} minor page faults in 100 steps after warm-up", f1 - f0);
        assert!(r1 <= r0 + 4, "resident set grew from {r0} to {r1} pages over 100 steps");
    })
    .unwrap();
}
