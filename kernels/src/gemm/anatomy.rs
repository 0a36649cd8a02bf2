//! The selected microkernel on its own, for taking a GEMM's time apart (`chi bench gemm
//! --anatomy`): the register tile with everything it reads already in L1, and the driver's two
//! innermost loops over one packed Ã block and one packed B̃ panel of the kernel's own blocking.
//! Set beside the FMA-only ceiling and the whole GEMM of the same process, the differences say how
//! much of the gap is the tile itself, the caches behind it, and the packing and outer loops.

use super::microkernel::{Kernel, KernelChoice};
use super::pack::AlignedBuf;
use crate::Real;

/// Packed operands of one block, with the kernel that consumes them.
#[doc(hidden)]
pub struct MicroBench<T> {
    kern: Kernel<T>,
    kc: usize,
    /// Rows of Ã: the kernel's MC rounded down to whole micro-panels.
    mc: usize,
    /// Columns of B̃: the kernel's NC rounded down to whole micro-panels, at most 64 of them.
    nc: usize,
    a: AlignedBuf<T>,
    b: AlignedBuf<T>,
    c: Vec<T>,
}

impl<T: Real> MicroBench<T> {
    /// Buffers for the kernel [`super::gemm`] uses on this CPU: element `i` of the packed Ã is
    /// `(i mod 7)/100`, element `i` of the packed B̃ `(i mod 5)/100`, and C starts at zero.
    pub fn new() -> Self {
        let kern = Kernel::<T>::select(KernelChoice::Auto);
        let kc = kern.blocking.kc;
        let mc = (kern.blocking.mc / kern.mr).max(1) * kern.mr;
        let nc = (kern.blocking.nc / kern.nr).clamp(1, 64) * kern.nr;
        let mut a = AlignedBuf::zeroed(mc * kc);
        let mut b = AlignedBuf::zeroed(kc * nc);
        for (i, x) in a.as_mut_slice().iter_mut().enumerate() {
            *x = T::from_f64((i % 7) as f64 * 0.01);
        }
        for (i, x) in b.as_mut_slice().iter_mut().enumerate() {
            *x = T::from_f64((i % 5) as f64 * 0.01);
        }
        MicroBench { kern, kc, mc, nc, a, b, c: vec![T::ZERO; mc * nc] }
    }

    /// `(MR, NR, MC, KC, NC)` of the block (NC capped at 64 micro-panels).
    pub fn shape(&self) -> (usize, usize, usize, usize, usize) {
        (self.kern.mr, self.kern.nr, self.mc, self.kc, self.nc)
    }

    /// The `MC × NC` accumulator (row-major) that [`Self::resident`] and [`Self::block`] add to.
    pub fn c(&self) -> &[T] {
        &self.c
    }

    /// `reps` calls of the tile on the first Ã and B̃ micro-panels (L1-resident after the first);
    /// returns the flops done.
    pub fn resident(&mut self, reps: usize) -> f64 {
        let (mr, nr, kc, rsc) = (self.kern.mr, self.kern.nr, self.kc, self.nc);
        for _ in 0..reps {
            // SAFETY: Ã holds mc·kc ≥ mr·kc elements and B̃ kc·nc ≥ kc·nr, 64-byte aligned; the
            // tile's rows i < mr ≤ mc and columns j < nr ≤ nc lie inside c (mc × nc, row stride nc).
            unsafe { (self.kern.tile)(mr, nr, kc, T::ONE, self.a.as_slice().as_ptr(), self.b.as_slice().as_ptr(), T::ONE, self.c.as_mut_ptr(), rsc, 1) }
        }
        (reps * 2 * mr * nr * kc) as f64
    }

    /// `reps` passes of the driver's loops 2 and 1 (every B̃ micro-panel, then every Ã
    /// micro-panel) over the whole block; returns the flops done.
    pub fn block(&mut self, reps: usize) -> f64 {
        let (mr, nr, kc, rsc) = (self.kern.mr, self.kern.nr, self.kc, self.nc);
        let (a, b, c) = (self.a.as_slice().as_ptr(), self.b.as_slice().as_ptr(), self.c.as_mut_ptr());
        for _ in 0..reps {
            for jr in (0..self.nc).step_by(nr) {
                for ir in (0..self.mc).step_by(mr) {
                    // SAFETY: micro-panel ir/mr of Ã starts at ir·kc and holds mr·kc elements
                    // (ir + mr ≤ mc); micro-panel jr/nr of B̃ starts at jr·kc (a multiple of NR·KC
                    // elements, so still 64-byte aligned for these sizes) and holds kc·nr; the
                    // tile (ir.., jr..) of mr × nr lies inside c (mc × nc).
                    unsafe { (self.kern.tile)(mr, nr, kc, T::ONE, a.add(ir * kc), b.add(jr * kc), T::ONE, c.add(ir * rsc + jr), rsc, 1) }
                }
            }
        }
        (reps * 2 * self.mc * self.nc * kc) as f64
    }
}

impl<T: Real> Default for MicroBench<T> {
    fn default() -> Self {
        Self::new()
    }
}
