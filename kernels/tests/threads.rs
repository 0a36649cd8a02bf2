//! The thread-count API: the global setting (once per process, so one test does all of it) and
//! the scoped one, with a threaded GEMM inside each giving the sequential bits.

use chi_kernels::gemm::{gemm, gemm_par, MatMut, MatRef, Par};
use chi_kernels::threads::{num_threads, set_num_threads, with_threads, ThreadsError};

fn product(m: usize) -> Vec<f32> {
    let a: Vec<f32> = (0..m * m).map(|i| ((i * 7919) % 101) as f32 / 50.0 - 1.0).collect();
    let mut c = vec![0f32; m * m];
    gemm(1.0, MatRef::row_major(&a, m, m), MatRef::row_major(&a, m, m).t(), 0.0, MatMut::row_major(&mut c, m, m));
    c
}

#[test]
fn global_and_scoped_thread_counts() {
    assert!(matches!(set_num_threads(0), Err(ThreadsError::Zero)));
    set_num_threads(2).expect("the global pool does not exist yet in this test binary");
    assert_eq!(num_threads(), 2);
    match set_num_threads(3) {
        Err(ThreadsError::AlreadyInitialized { current: 2 }) => {}
        other => panic!("second set_num_threads: {other:?}"),
    }
    assert!(matches!(with_threads(0, || ()), Err(ThreadsError::Zero)));
    let m = 300; // above the GEMM's threading threshold on every kernel
    let a: Vec<f32> = (0..m * m).map(|i| ((i * 7919) % 101) as f32 / 50.0 - 1.0).collect();
    let mut seq = vec![0f32; m * m];
    gemm_par(Par::Seq, 1.0, MatRef::row_major(&a, m, m), MatRef::row_major(&a, m, m).t(), 0.0, MatMut::row_major(&mut seq, m, m));
    for n in [1, 2, 3] {
        let (threads, c) = with_threads(n, || (num_threads(), product(m))).unwrap();
        assert_eq!(threads, n);
        // The output is split on whole tiles, so the bits do not depend on the thread count.
        assert!(c.iter().zip(&seq).all(|(x, y)| x.to_bits() == y.to_bits()), "{n} threads");
    }
    assert_eq!(num_threads(), 2, "with_threads must not change the global pool");
    assert!(ThreadsError::AlreadyInitialized { current: 2 }.to_string().contains("2 threads"));
}
