//! FTZ/DAZ: off by default; when on, subnormal results and inputs flush to zero on this thread
//! and in rayon workers; turning it off restores gradual underflow. (Own test binary: MXCSR is
//! per thread and the rayon pool is per process, so this must not run beside other tests.)

use chi_kernels::fpmode::{flush_denormals_enabled, set_flush_denormals};
use std::hint::black_box;

#[test]
fn ftz_daz_flushes_and_restores() {
    assert!(!flush_denormals_enabled(), "FTZ/DAZ must be off by default");
    let tiny = black_box(f32::MIN_POSITIVE);
    let sub = black_box(1e-40f32); // subnormal
    assert!(black_box(tiny * 0.5) > 0.0, "gradual underflow by default");
    assert_eq!(black_box(sub * 1.0), 1e-40);

    set_flush_denormals(true);
    if cfg!(target_arch = "x86_64") {
        assert!(flush_denormals_enabled());
        assert_eq!(black_box(tiny * 0.5), 0.0, "FTZ: subnormal result flushed");
        assert_eq!(black_box(sub * 1.0), 0.0, "DAZ: subnormal input read as 0");
        assert_eq!(black_box(1e-310f64) * black_box(1.0), 0.0, "f64 too");
        // rayon workers flush too
        let r: Vec<f32> = rayon::broadcast(|_| black_box(f32::MIN_POSITIVE) * black_box(0.5));
        assert!(r.iter().all(|&v| v == 0.0));
        // and so does the team's partner thread, which takes the caller's mode with each job
        assert!(split_products().iter().all(|&v| v == 0.0));
    }
    set_flush_denormals(false);
    assert!(!flush_denormals_enabled());
    assert!(black_box(tiny * 0.5) > 0.0, "state restored");
    let r: Vec<f32> = rayon::broadcast(|_| black_box(f32::MIN_POSITIVE) * black_box(0.5));
    assert!(r.iter().all(|&v| v > 0.0));
    assert!(split_products().iter().all(|&v| v > 0.0));
}

/// `MIN_POSITIVE · 0.5` computed in two jobs split between this thread and a helper (the sleep
/// lets the helper take the second job).
fn split_products() -> [f32; 2] {
    let mut out = [1f32; 2];
    chi_kernels::team::for_each(2, out.iter_mut(), |o| {
        std::thread::sleep(std::time::Duration::from_millis(5));
        *o = black_box(f32::MIN_POSITIVE) * black_box(0.5);
    });
    out
}
