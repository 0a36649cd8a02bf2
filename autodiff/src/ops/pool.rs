//! Max pooling over 1-D and 2-D windows.
//!
//! The kernels find the arg-max of every window; the output is then a gather with the
//! differentiable [`Tensor::take`] (whose backward is `scatter_add`, whose backward is `take`),
//! recorded under the pooling method's name, so pooling is differentiable to any order without a
//! backward rule of its own. The gradient goes to the first maximum of each window.

use crate::ops::conv::Window;
use crate::tensor::Tensor;
use crate::Float;
use chi_kernels::conv::{self as kc, Conv2dGeom};
use std::rc::Rc;

impl<T: Float> Tensor<T> {
    /// 2-D max pooling with a `k×k` window: `[N, C, H, W]` → `[N, C, OH, OW]`,
    /// `OH = ⌊(H − k)/stride⌋ + 1`. The gradient goes to the first maximum of each window.
    #[track_caller]
    pub fn max_pool2d(&self, k: usize, stride: usize) -> Tensor<T> {
        assert!(self.rank() == 4, "max_pool2d: input must be [N, C, H, W], got {:?}", self.shape);
        let (n, c, h, w) = (self.shape()[0], self.shape()[1], self.shape()[2], self.shape()[3]);
        let g = Conv2dGeom { c, h, w, kh: k, kw: k, stride, pad: 0 };
        Window::D2(g).validate(&format!("max_pool2d (input {:?}, kernel {k}, stride {stride})", self.shape));
        let (oh, ow) = (g.out_h().unwrap(), g.out_w().unwrap());
        let (per, out_per) = (c * h * w, c * oh * ow);
        let mut vals = vec![T::ZERO; out_per];
        let mut idx = vec![0usize; n * out_per];
        for i in 0..n {
            let arg = &mut idx[i * out_per..(i + 1) * out_per];
            kc::maxpool_2d(&self.data[i * per..(i + 1) * per], g, &mut vals, arg);
            arg.iter_mut().for_each(|a| *a += i * per);
        }
        self.take_named(Rc::new(idx), &[n, c, oh, ow], "max_pool2d")
    }

    /// 1-D max pooling with a window of `k`: `[N, C, L]` → `[N, C, OL]`,
    /// `OL = ⌊(L − k)/stride⌋ + 1`. The gradient goes to the first maximum of each window.
    #[track_caller]
    pub fn max_pool1d(&self, k: usize, stride: usize) -> Tensor<T> {
        assert!(self.rank() == 3, "max_pool1d: input must be [N, C, L], got {:?}", self.shape);
        let (n, c, l) = (self.shape()[0], self.shape()[1], self.shape()[2]);
        let win = Window::D1 { c, l, k, stride, pad: 0 };
        win.validate(&format!("max_pool1d (input {:?}, kernel {k}, stride {stride})", self.shape));
        let ol = win.positions();
        let (per, out_per) = (c * l, c * ol);
        let mut vals = vec![T::ZERO; out_per];
        let mut idx = vec![0usize; n * out_per];
        for i in 0..n {
            let arg = &mut idx[i * out_per..(i + 1) * out_per];
            kc::maxpool_1d(&self.data[i * per..(i + 1) * per], c, l, k, stride, &mut vals, arg);
            arg.iter_mut().for_each(|a| *a += i * per);
        }
        self.take_named(Rc::new(idx), &[n, c, ol], "max_pool1d")
    }
}
