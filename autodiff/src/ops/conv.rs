//! Convolution: sliding-window patches (`im2col` / `col2im`) and 1-D / 2-D convolution built on
//! them. The window geometry ([`Window`]) is shared with max pooling ([`crate::ops::pool`]).
//!
//! ## Convolution as im2col + one GEMM
//! [`Tensor::im2col`] cuts a batch of images into its sliding-window patches, laid out
//! **`[N, P, C·K]`** (`P` = output positions `OH·OW` or `OL`, `C·K` = patch length `C·KH·KW` or
//! `C·K`). A convolution is then
//!
//! ```text
//! cols [N, P, C·K] × Wᵀ [C·K, Cout] → [N, P, Cout] → permute → [N, Cout, P] → reshape
//! ```
//!
//! The product has one shared right operand, so it runs as a single GEMM over `N·P` rows
//! (forward, and the weight gradient `colsᵀ·g` in backward), with only the weight (small) and the
//! output transposed, never the patch matrix.
//!
//! `Im2Col` and [`Tensor::col2im`] (overlap-add of patches back into images) are adjoint linear
//! maps: each one's backward rule is the other. Both are recorded ops, so a convolution — built
//! from them, `matmul`, `permute` and `reshape` — is differentiable to any order.

use crate::ops::Op;
use crate::tape::record;
use crate::tensor::Tensor;
use crate::{Float, Shape};
use chi_kernels::conv as kc;
pub use chi_kernels::conv::Conv2dGeom;
use std::panic::Location;

/// Sliding-window geometry of one image, for [`Tensor::im2col`] and [`Tensor::col2im`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// A 1-D window over a `[C, L]` signal.
    D1 {
        /// Channels.
        c: usize,
        /// Signal length.
        l: usize,
        /// Kernel width.
        k: usize,
        /// Stride.
        stride: usize,
        /// Zero padding at both ends.
        pad: usize,
    },
    /// A 2-D window over a `[C, H, W]` image (same stride and padding in both directions).
    D2(Conv2dGeom),
}

impl Window {
    /// Checks that the window fits and has a positive stride, panicking with `op`'s name.
    #[track_caller]
    pub(crate) fn validate(&self, op: &str) {
        match *self {
            Window::D1 { l, k, stride, pad, .. } => {
                assert!(stride > 0, "{op}: stride must be positive");
                assert!(k > 0, "{op}: kernel width must be positive");
                assert!(
                    kc::out_len(l, k, stride, pad).is_some(),
                    "{op}: kernel {k} with padding {pad} does not fit length {l}"
                );
            }
            Window::D2(g) => {
                assert!(g.stride > 0, "{op}: stride must be positive");
                assert!(g.kh > 0 && g.kw > 0, "{op}: kernel {}x{} must be non-empty", g.kh, g.kw);
                assert!(
                    g.out_h().is_some() && g.out_w().is_some(),
                    "{op}: kernel {}x{} with padding {} does not fit input {}x{}",
                    g.kh,
                    g.kw,
                    g.pad,
                    g.h,
                    g.w
                );
            }
        }
    }
    /// Per-image input dims: `[C, L]` or `[C, H, W]`.
    pub fn image_dims(&self) -> Vec<usize> {
        match *self {
            Window::D1 { c, l, .. } => vec![c, l],
            Window::D2(g) => vec![g.c, g.h, g.w],
        }
    }
    /// Output spatial dims: `[OL]` or `[OH, OW]` (panics if the window does not fit).
    pub fn out_dims(&self) -> Vec<usize> {
        match *self {
            Window::D1 { l, k, stride, pad, .. } => vec![kc::out_len(l, k, stride, pad).expect("window does not fit")],
            Window::D2(g) => vec![g.out_h().expect("window does not fit"), g.out_w().expect("window does not fit")],
        }
    }
    /// Number of window positions `P` (`OL` or `OH·OW`).
    pub fn positions(&self) -> usize {
        self.out_dims().iter().product()
    }
    /// Patch length (`C·K` or `C·KH·KW`).
    pub fn patch_len(&self) -> usize {
        match *self {
            Window::D1 { c, k, .. } => c * k,
            Window::D2(g) => g.c * g.kh * g.kw,
        }
    }
    fn image_numel(&self) -> usize {
        self.image_dims().iter().product()
    }
    /// Kernel im2col of one image into `cols` laid out `[patch_len, positions]`.
    fn im2col_kernel<T: Float>(&self, x: &[T], cols: &mut [T]) {
        match *self {
            Window::D1 { c, l, k, stride, pad } => kc::im2col_1d(x, c, l, k, stride, pad, cols),
            Window::D2(g) => kc::im2col_2d(x, g, cols),
        }
    }
    /// Kernel col2im (accumulating) of `[patch_len, positions]` cols into one image.
    fn col2im_kernel<T: Float>(&self, cols: &[T], dx: &mut [T]) {
        match *self {
            Window::D1 { c, l, k, stride, pad } => kc::col2im_1d(cols, c, l, k, stride, pad, dx),
            Window::D2(g) => kc::col2im_2d(cols, g, dx),
        }
    }
}

#[track_caller]
fn check_bias<T: Float>(op: &str, bias: Option<&Tensor<T>>, cout: usize) {
    if let Some(b) = bias {
        assert!(b.shape() == [cout], "{op}: bias must be [Cout] = [{cout}], got {:?}", b.shape());
    }
}

impl<T: Float> Tensor<T> {
    /// Sliding-window patches of a batch of images: `[N, C, H, W]` (or `[N, C, L]` for a
    /// [`Window::D1`]) → `[N, P, C·K]`, where row `p` of image `n` holds the (zero-padded) window
    /// at output position `p` (row-major over `OH, OW`), ordered `(c, ki, kj)`.
    ///
    /// Differentiable to any order: its backward is [`Tensor::col2im`], and vice versa.
    #[track_caller]
    pub fn im2col(&self, win: Window) -> Tensor<T> {
        let loc = Location::caller();
        win.validate("im2col");
        let img = win.image_dims();
        assert!(
            self.rank() == img.len() + 1 && self.shape()[1..] == img[..],
            "im2col: input shape {:?} does not match the window's image [N, {}]",
            self.shape,
            img.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
        );
        let n = self.shape()[0];
        let (p, ck, per) = (win.positions(), win.patch_len(), win.image_numel());
        let mut out = vec![T::ZERO; n * p * ck];
        let mut scratch = vec![T::ZERO; p * ck];
        for i in 0..n {
            win.im2col_kernel(&self.data[i * per..(i + 1) * per], &mut scratch);
            chi_kernels::layout::transpose(&scratch, ck, p, &mut out[i * p * ck..(i + 1) * p * ck]);
        }
        record(out, Shape::new(&[n, p, ck]), &[self], loc, |_| Op::Im2Col { x: self.clone(), win })
    }

    /// Overlap-add of patches back into images, the adjoint of [`Tensor::im2col`]:
    /// `[N, P, C·K]` → `[N, C, H, W]` (or `[N, C, L]`), summing every patch entry into the input
    /// position it was read from (padding entries are dropped).
    #[track_caller]
    pub fn col2im(&self, win: Window) -> Tensor<T> {
        let loc = Location::caller();
        win.validate("col2im");
        let (p, ck, per) = (win.positions(), win.patch_len(), win.image_numel());
        assert!(
            self.rank() == 3 && self.shape()[1] == p && self.shape()[2] == ck,
            "col2im: input shape {:?} is not [N, P, C·K] = [N, {p}, {ck}] for window {win:?}",
            self.shape
        );
        let n = self.shape()[0];
        let mut out = vec![T::ZERO; n * per];
        let mut scratch = vec![T::ZERO; p * ck];
        for i in 0..n {
            chi_kernels::layout::transpose(&self.data[i * p * ck..(i + 1) * p * ck], p, ck, &mut scratch);
            win.col2im_kernel(&scratch, &mut out[i * per..(i + 1) * per]);
        }
        let mut shape = vec![n];
        shape.extend(win.image_dims());
        record(out, Shape::new(&shape), &[self], loc, |_| Op::Col2Im { x: self.clone(), win })
    }

    /// 2-D convolution (cross-correlation, as in PyTorch): `x [N, C, H, W]`, `w [Cout, C, KH, KW]`,
    /// optional `bias [Cout]` → `[N, Cout, OH, OW]` with `OH = ⌊(H + 2·padding − KH)/stride⌋ + 1`
    /// (likewise `OW`). Zero padding on all four sides.
    ///
    /// ```
    /// use chi_autodiff::Tensor;
    /// let x = Tensor::<f64>::from_vec((0..16).map(|v| v as f64).collect(), &[1, 1, 4, 4]);
    /// let w = Tensor::from_vec(vec![1.0, 0.0, 0.0, -1.0], &[1, 1, 2, 2]); // x[i,j] − x[i+1,j+1]
    /// let y = x.conv2d(&w, None, 2, 0);
    /// assert_eq!(y.shape(), &[1, 1, 2, 2]);
    /// assert_eq!(y.to_vec(), vec![-5.0; 4]);
    /// ```
    #[track_caller]
    pub fn conv2d(&self, w: &Tensor<T>, bias: Option<&Tensor<T>>, stride: usize, padding: usize) -> Tensor<T> {
        assert!(self.rank() == 4, "conv2d: input must be [N, C, H, W], got {:?} (weight {:?})", self.shape, w.shape);
        assert!(w.rank() == 4, "conv2d: weight must be [Cout, C, KH, KW], got {:?} (input {:?})", w.shape, self.shape);
        let (n, c, h, wd) = (self.shape()[0], self.shape()[1], self.shape()[2], self.shape()[3]);
        let (co, ci, kh, kw) = (w.shape()[0], w.shape()[1], w.shape()[2], w.shape()[3]);
        assert!(c == ci, "conv2d: input {:?} has {c} channels but weight {:?} expects {ci}", self.shape, w.shape);
        check_bias("conv2d", bias, co);
        let g = Conv2dGeom { c, h, w: wd, kh, kw, stride, pad: padding };
        let win = Window::D2(g);
        win.validate(&format!("conv2d (input {:?}, weight {:?}, stride {stride}, padding {padding})", self.shape, w.shape));
        let (oh, ow) = (g.out_h().unwrap(), g.out_w().unwrap());
        let y = conv_gemm(self, w, win, n, co).reshape(&[n, co, oh, ow]);
        match bias {
            Some(b) => y.add(&b.reshape(&[1, co, 1, 1])),
            None => y,
        }
    }

    /// 1-D convolution (cross-correlation): `x [N, C, L]`, `w [Cout, C, K]`, optional
    /// `bias [Cout]` → `[N, Cout, OL]` with `OL = ⌊(L + 2·padding − K)/stride⌋ + 1`.
    ///
    /// A text CNN applies several widths `K` to `[N, E, T]` embeddings and max-pools over time
    /// with `max_axis(-1, false)`.
    #[track_caller]
    pub fn conv1d(&self, w: &Tensor<T>, bias: Option<&Tensor<T>>, stride: usize, padding: usize) -> Tensor<T> {
        assert!(self.rank() == 3, "conv1d: input must be [N, C, L], got {:?} (weight {:?})", self.shape, w.shape);
        assert!(w.rank() == 3, "conv1d: weight must be [Cout, C, K], got {:?} (input {:?})", w.shape, self.shape);
        let (n, c, l) = (self.shape()[0], self.shape()[1], self.shape()[2]);
        let (co, ci, k) = (w.shape()[0], w.shape()[1], w.shape()[2]);
        assert!(c == ci, "conv1d: input {:?} has {c} channels but weight {:?} expects {ci}", self.shape, w.shape);
        check_bias("conv1d", bias, co);
        let win = Window::D1 { c, l, k, stride, pad: padding };
        win.validate(&format!("conv1d (input {:?}, weight {:?}, stride {stride}, padding {padding})", self.shape, w.shape));
        let ol = win.positions();
        let y = conv_gemm(self, w, win, n, co).reshape(&[n, co, ol]);
        match bias {
            Some(b) => y.add(&b.reshape(&[1, co, 1])),
            None => y,
        }
    }
}

/// `im2col(x) · W_flatᵀ`, permuted to `[N, Cout, P]`.
#[track_caller]
fn conv_gemm<T: Float>(x: &Tensor<T>, w: &Tensor<T>, win: Window, n: usize, co: usize) -> Tensor<T> {
    let (p, ck) = (win.positions(), win.patch_len());
    let cols = x.im2col(win); // [N, P, C·K]
    let wt = w.reshape(&[co, ck]).t(); // [C·K, Cout]
    let y = cols.matmul(&wt); // [N, P, Cout]: one GEMM over N·P rows
    if p == 1 || co == 1 {
        y.reshape(&[n, co, p])
    } else {
        y.permute(&[0, 2, 1])
    }
}
