//! Convolution support: im2col / col2im (1-D and 2-D, stride and zero padding) and max-pooling
//! with argmax indices for the backward pass.
//!
//! A convolution becomes one GEMM: `out[Cout, OH·OW] = W[Cout, C·KH·KW] · cols[C·KH·KW, OH·OW]`.
//! `col2im` is the adjoint of `im2col` (it accumulates), which is exactly the input gradient.

use crate::Real;
use crate::parallel::split_each;

/// Geometry of a 2-D convolution or pooling window over one `[C, H, W]` image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2dGeom {
    /// Channels.
    pub c: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Kernel height.
    pub kh: usize,
    /// Kernel width.
    pub kw: usize,
    /// Stride (both directions).
    pub stride: usize,
    /// Zero padding (both sides, both directions).
    pub pad: usize,
}

impl Conv2dGeom {
    /// Output height, or `None` if the window does not fit.
    pub fn out_h(&self) -> Option<usize> {
        out_len(self.h, self.kh, self.stride, self.pad)
    }
    /// Output width, or `None` if the window does not fit.
    pub fn out_w(&self) -> Option<usize> {
        out_len(self.w, self.kw, self.stride, self.pad)
    }
    fn dims(&self, kernel: &str) -> (usize, usize) {
        assert!(self.stride > 0, "{kernel}: stride must be positive");
        match (self.out_h(), self.out_w()) {
            (Some(oh), Some(ow)) => (oh, ow),
            _ => panic!(
                "{kernel}: kernel {}x{} with padding {} does not fit input {}x{}",
                self.kh, self.kw, self.pad, self.h, self.w
            ),
        }
    }
}

/// Output length of a sliding window: `⌊(n + 2·pad − k) / stride⌋ + 1`, or `None` if it does not fit.
pub fn out_len(n: usize, k: usize, stride: usize, pad: usize) -> Option<usize> {
    if stride == 0 || k == 0 || n + 2 * pad < k {
        None
    } else {
        Some((n + 2 * pad - k) / stride + 1)
    }
}

/// Valid output range `[lo, hi)` of a sliding-window row: output position `o` reads input
/// `o·stride + k − pad`, which must lie in `[0, n)`.
#[inline]
fn valid_range(n: usize, out: usize, k: usize, stride: usize, pad: usize) -> (usize, usize) {
    let lo = if k >= pad { 0 } else { (pad - k).div_ceil(stride) };
    let hi = if n + pad > k { ((n - 1 + pad - k) / stride + 1).min(out) } else { 0 };
    (lo.min(out), hi.max(lo.min(out)))
}

/// `dst[o] = src[o·stride + k − pad]` (0 outside `src`), for `o < dst.len()`.
#[inline]
fn gather_row<T: Real>(dst: &mut [T], src: &[T], k: usize, stride: usize, pad: usize) {
    let (lo, hi) = valid_range(src.len(), dst.len(), k, stride, pad);
    dst[..lo].fill(T::ZERO);
    dst[hi..].fill(T::ZERO);
    if hi > lo {
        let start = lo * stride + k - pad;
        if stride == 1 {
            dst[lo..hi].copy_from_slice(&src[start..start + (hi - lo)]);
        } else {
            for (d, s) in dst[lo..hi].iter_mut().zip(src[start..].iter().step_by(stride)) {
                *d = *s;
            }
        }
    }
}

/// Adjoint of [`gather_row`]: `dst[o·stride + k − pad] += src[o]`.
#[inline]
fn scatter_add_row<T: Real>(src: &[T], dst: &mut [T], k: usize, stride: usize, pad: usize) {
    let (lo, hi) = valid_range(dst.len(), src.len(), k, stride, pad);
    if hi > lo {
        let start = lo * stride + k - pad;
        if stride == 1 {
            for (d, &s) in dst[start..start + (hi - lo)].iter_mut().zip(&src[lo..hi]) {
                *d += s;
            }
        } else {
            for (d, &s) in dst[start..].iter_mut().step_by(stride).zip(&src[lo..hi]) {
                *d += s;
            }
        }
    }
}

/// Work (elements of `cols`) above which im2col/col2im split channels across threads.
const CONV_PAR: usize = 1 << 17;

/// `cols[(c·KH + ki)·KW + kj, oy·OW + ox] = x[c, oy·s + ki − pad, ox·s + kj − pad]` (0 outside).
///
/// Inner loops are contiguous copies (stride 1) or strided gathers of one input row, with the
/// padded ends zero-filled; channels run in parallel for large inputs.
pub fn im2col_2d<T: Real>(x: &[T], g: Conv2dGeom, cols: &mut [T]) {
    let (oh, ow) = g.dims("im2col_2d");
    assert!(x.len() == g.c * g.h * g.w, "im2col_2d: input has {} elements, [C,H,W]=[{},{},{}] needs {}", x.len(), g.c, g.h, g.w, g.c * g.h * g.w);
    assert!(cols.len() == g.c * g.kh * g.kw * oh * ow, "im2col_2d: cols has {} elements, need {}", cols.len(), g.c * g.kh * g.kw * oh * ow);
    let per_c = g.kh * g.kw * oh * ow;
    if per_c == 0 {
        return;
    }
    let channel = |c: usize, cols: &mut [T]| {
        let xc = &x[c * g.h * g.w..(c + 1) * g.h * g.w];
        for ki in 0..g.kh {
            for kj in 0..g.kw {
                let row = ki * g.kw + kj;
                let dst = &mut cols[row * oh * ow..(row + 1) * oh * ow];
                for (oy, d) in dst.chunks_exact_mut(ow).enumerate() {
                    let iy = (oy * g.stride + ki) as isize - g.pad as isize;
                    if iy < 0 || iy as usize >= g.h {
                        d.fill(T::ZERO);
                    } else {
                        let iy = iy as usize;
                        gather_row(d, &xc[iy * g.w..(iy + 1) * g.w], kj, g.stride, g.pad);
                    }
                }
            }
        }
    };
    if cols.len() >= CONV_PAR && g.c > 1 {
        split_each(cols.chunks_mut(per_c).enumerate(), |(c, cl)| channel(c, cl));
    } else {
        cols.chunks_mut(per_c).enumerate().for_each(|(c, cl)| channel(c, cl));
    }
}

/// Adjoint of [`im2col_2d`]: `dx[c, iy, ix] += Σ cols[...]` over every window position that read it.
pub fn col2im_2d<T: Real>(cols: &[T], g: Conv2dGeom, dx: &mut [T]) {
    let (oh, ow) = g.dims("col2im_2d");
    assert!(dx.len() == g.c * g.h * g.w, "col2im_2d: dx has {} elements, need {}", dx.len(), g.c * g.h * g.w);
    assert!(cols.len() == g.c * g.kh * g.kw * oh * ow, "col2im_2d: cols has {} elements, need {}", cols.len(), g.c * g.kh * g.kw * oh * ow);
    let per_c = g.kh * g.kw * oh * ow;
    if per_c == 0 || g.h * g.w == 0 {
        return;
    }
    let channel = |cl: &[T], dxc: &mut [T]| {
        for ki in 0..g.kh {
            for kj in 0..g.kw {
                let row = ki * g.kw + kj;
                let src = &cl[row * oh * ow..(row + 1) * oh * ow];
                for (oy, s) in src.chunks_exact(ow).enumerate() {
                    let iy = (oy * g.stride + ki) as isize - g.pad as isize;
                    if iy >= 0 && (iy as usize) < g.h {
                        let iy = iy as usize;
                        scatter_add_row(s, &mut dxc[iy * g.w..(iy + 1) * g.w], kj, g.stride, g.pad);
                    }
                }
            }
        }
    };
    if cols.len() >= CONV_PAR && g.c > 1 {
        split_each(cols.chunks(per_c).zip(dx.chunks_mut(g.h * g.w)), |(cl, d)| channel(cl, d));
    } else {
        cols.chunks(per_c).zip(dx.chunks_mut(g.h * g.w)).for_each(|(cl, d)| channel(cl, d));
    }
}

/// 1-D im2col over `[C, L]`: `cols[c·K + k, o] = x[c, o·s + k − pad]` (0 outside).
pub fn im2col_1d<T: Real>(x: &[T], c: usize, l: usize, k: usize, stride: usize, pad: usize, cols: &mut [T]) {
    assert!(stride > 0, "im2col_1d: stride must be positive");
    let ol = out_len(l, k, stride, pad).unwrap_or_else(|| panic!("im2col_1d: kernel {k} with padding {pad} does not fit length {l}"));
    assert!(x.len() == c * l, "im2col_1d: input has {} elements, [C,L]=[{c},{l}] needs {}", x.len(), c * l);
    assert!(cols.len() == c * k * ol, "im2col_1d: cols has {} elements, need {}", cols.len(), c * k * ol);
    for ci in 0..c {
        for kk in 0..k {
            let row = ci * k + kk;
            gather_row(&mut cols[row * ol..(row + 1) * ol], &x[ci * l..(ci + 1) * l], kk, stride, pad);
        }
    }
}

/// Adjoint of [`im2col_1d`] (accumulates into `dx`).
pub fn col2im_1d<T: Real>(cols: &[T], c: usize, l: usize, k: usize, stride: usize, pad: usize, dx: &mut [T]) {
    assert!(stride > 0, "col2im_1d: stride must be positive");
    let ol = out_len(l, k, stride, pad).unwrap_or_else(|| panic!("col2im_1d: kernel {k} with padding {pad} does not fit length {l}"));
    assert!(dx.len() == c * l, "col2im_1d: dx has {} elements, need {}", dx.len(), c * l);
    assert!(cols.len() == c * k * ol, "col2im_1d: cols has {} elements, need {}", cols.len(), c * k * ol);
    for ci in 0..c {
        for kk in 0..k {
            let row = ci * k + kk;
            scatter_add_row(&cols[row * ol..(row + 1) * ol], &mut dx[ci * l..(ci + 1) * l], kk, stride, pad);
        }
    }
}

/// 2-D max pooling over `[C, H, W]` (padding counts as −∞). `argmax[c, oy, ox]` is the flat
/// input index `(c·H + iy)·W + ix` of the maximum, for [`maxpool_backward`].
pub fn maxpool_2d<T: Real>(x: &[T], g: Conv2dGeom, out: &mut [T], argmax: &mut [usize]) {
    let (oh, ow) = g.dims("maxpool_2d");
    assert!(x.len() == g.c * g.h * g.w, "maxpool_2d: input has {} elements, need {}", x.len(), g.c * g.h * g.w);
    assert!(out.len() == g.c * oh * ow && argmax.len() == out.len(), "maxpool_2d: output/argmax have {}/{} elements, need {}", out.len(), argmax.len(), g.c * oh * ow);
    for c in 0..g.c {
        for oy in 0..oh {
            for ox in 0..ow {
                let mut best = T::NEG_INFINITY;
                let mut arg = usize::MAX;
                for ki in 0..g.kh {
                    let iy = (oy * g.stride + ki) as isize - g.pad as isize;
                    if iy < 0 || iy as usize >= g.h {
                        continue;
                    }
                    for kj in 0..g.kw {
                        let ix = (ox * g.stride + kj) as isize - g.pad as isize;
                        if ix < 0 || ix as usize >= g.w {
                            continue;
                        }
                        let k = (c * g.h + iy as usize) * g.w + ix as usize;
                        if arg == usize::MAX || x[k] > best || (x[k].is_nan() && !best.is_nan()) {
                            best = x[k];
                            arg = k;
                        }
                    }
                }
                let o = (c * oh + oy) * ow + ox;
                out[o] = best;
                // A window entirely in padding has no input; route its gradient nowhere.
                argmax[o] = arg;
            }
        }
    }
}

/// 1-D max pooling over `[C, L]`; `argmax` holds flat input indices.
pub fn maxpool_1d<T: Real>(x: &[T], c: usize, l: usize, k: usize, stride: usize, out: &mut [T], argmax: &mut [usize]) {
    maxpool_2d(x, Conv2dGeom { c, h: 1, w: l, kh: 1, kw: k, stride, pad: 0 }, out, argmax)
}

/// Max-pool backward: `dx[argmax[o]] += g[o]` (indices equal to `usize::MAX` are skipped).
pub fn maxpool_backward<T: Real>(g: &[T], argmax: &[usize], dx: &mut [T]) {
    assert!(g.len() == argmax.len(), "maxpool_backward: gradient has {} elements, argmax {}", g.len(), argmax.len());
    for (&gi, &a) in g.iter().zip(argmax) {
        if a != usize::MAX {
            assert!(a < dx.len(), "maxpool_backward: index {a} out of range for dx of {} elements", dx.len());
            dx[a] += gi;
        }
    }
}
