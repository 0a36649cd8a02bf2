//! Flush-to-zero / denormals-are-zero control.
//!
//! Recurrent models drive activations and gradients towards zero; once values are subnormal,
//! x86 arithmetic on them can be ~100× slower (onnxruntime#7448 saw 2400 ms → 70 ms). Setting
//! FTZ (results that would be subnormal become 0) and DAZ (subnormal inputs read as 0) in MXCSR
//! avoids that at the cost of IEEE-exact gradual underflow. Off by default.
//!
//! MXCSR is per thread, so [`set_flush_denormals`] sets it on the calling thread *and* on every
//! thread of the current rayon pool.

#[cfg(target_arch = "x86_64")]
const FTZ_DAZ: u32 = (1 << 15) | (1 << 6);

#[cfg(target_arch = "x86_64")]
fn set_this_thread(on: bool) {
    let mut csr: u32 = 0;
    // SAFETY: stmxcsr/ldmxcsr read and write the SSE control register of this thread only; we
    // change only the FTZ (bit 15) and DAZ (bit 6) bits, which every x86-64 CPU supports.
    unsafe {
        std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack));
        csr = if on { csr | FTZ_DAZ } else { csr & !FTZ_DAZ };
        std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack));
    }
}
#[cfg(not(target_arch = "x86_64"))]
fn set_this_thread(_on: bool) {}

/// Whether FTZ and DAZ are both on for the calling thread (always `false` off x86-64).
pub fn flush_denormals_enabled() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let mut csr: u32 = 0;
        // SAFETY: stmxcsr only stores the control register into `csr`.
        unsafe { std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack)) };
        csr & FTZ_DAZ == FTZ_DAZ
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The calling thread's MXCSR (0 off x86-64), so that [`crate::team`]'s partner thread can run a
/// caller's job in the same floating-point mode.
pub(crate) fn csr() -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut csr: u32 = 0;
        // SAFETY: stmxcsr only stores the control register into `csr`.
        unsafe { std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack)) };
        csr
    }
    #[cfg(not(target_arch = "x86_64"))]
    0
}

/// Loads `csr` (a value read by [`csr`] on some thread) into this thread's MXCSR.
pub(crate) fn set_csr(csr: u32) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `csr` is a value stmxcsr produced, so it has no reserved bits set (ldmxcsr would
    // fault on those); it changes only this thread's SSE control and status register.
    unsafe {
        std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack))
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = csr;
}

/// Turn flush-to-zero and denormals-are-zero on or off for this thread and all rayon workers.
pub fn set_flush_denormals(on: bool) {
    set_this_thread(on);
    rayon::broadcast(|_| set_this_thread(on));
}
