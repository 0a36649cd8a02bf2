//! Matrix products and axis permutations.
//!
//! `matmul` runs on chi's GEMM (`chi_kernels::gemm`). Its backward needs `g·Bᵀ` and `Aᵀ·g`;
//! on the fast path these are GEMM calls with swapped strides, so no transpose is ever copied.

use crate::ops::{Grads, Op};
use crate::tape::record;
use crate::tensor::Tensor;
use crate::{Float, Shape};
use chi_kernels::gemm::{self, BatchRef, MatMut, MatRef};
use std::panic::Location;

fn mat<T: Float>(t: &Tensor<T>) -> MatRef<'_, T> {
    let r = t.rank();
    MatRef::row_major(&t.data, t.shape()[r - 2], t.shape()[r - 1])
}
fn batch<T: Float>(t: &Tensor<T>) -> BatchRef<'_, T> {
    let r = t.rank();
    let (m, n) = (t.shape()[r - 2], t.shape()[r - 1]);
    BatchRef::row_major(&t.data, t.numel() / (m * n).max(1), m, n)
}

impl<T: Float> Tensor<T> {
    /// Matrix product.
    ///
    /// * `[m, k] × [k, n] → [m, n]`
    /// * `[…, m, k] × [k, n] → […, m, n]` (one weight shared across leading axes)
    /// * `[…, m, k] × […, k, n] → […, m, n]` (batched; leading axes must be equal)
    /// * a rank-1 right operand `[k]` is a column: `[…, m, k] × [k] → […, m]`
    ///
    /// ```
    /// use chi_autodiff::Tensor;
    /// let a = Tensor::<f32>::from_vec(vec![1., 2., 3., 4.], &[2, 2]);
    /// let b = Tensor::<f32>::from_vec(vec![5., 6., 7., 8.], &[2, 2]);
    /// assert_eq!(a.matmul(&b).to_vec(), vec![19., 22., 43., 50.]);
    /// ```
    #[track_caller]
    pub fn matmul(&self, b: &Tensor<T>) -> Tensor<T> {
        let a = self;
        assert!(a.rank() >= 1 && b.rank() >= 1, "matmul: scalars cannot be multiplied as matrices (shapes {:?} and {:?})", a.shape, b.shape);
        if b.rank() == 1 {
            let k = b.shape()[0];
            let out = a.matmul(&b.reshape(&[k, 1]));
            let mut s = out.shape().to_vec();
            s.pop();
            return out.reshape(&s);
        }
        if a.rank() == 1 {
            // A 1-D left operand is not broadcast over a batched right one (numpy would).
            assert!(b.rank() == 2, "matmul: batch dimensions differ: {:?} × {:?} (a 1-D left operand is not broadcast over the batch; reshape it to [batch, 1, {}])", a.shape, b.shape, a.shape()[0]);
            let k = a.shape()[0];
            let out = a.reshape(&[1, k]).matmul(b);
            let mut s = out.shape().to_vec();
            s.remove(s.len() - 2);
            return out.reshape(&s);
        }
        let (ra, rb) = (a.rank(), b.rank());
        let (m, k) = (a.shape()[ra - 2], a.shape()[ra - 1]);
        let (k2, n) = (b.shape()[rb - 2], b.shape()[rb - 1]);
        assert!(k == k2, "matmul: inner dimensions differ: {:?} × {:?} ({k} vs {k2})", a.shape, b.shape);
        if ra > 2 && rb == 2 {
            // Shared weight: fold the leading axes into rows, one GEMM.
            let lead = &a.shape()[..ra - 2];
            let rows: usize = lead.iter().product::<usize>() * m;
            let out = a.reshape(&[rows, k]).matmul(b);
            let mut s = lead.to_vec();
            s.extend([m, n]);
            return out.reshape(&s);
        }
        assert!(
            ra == rb && a.shape()[..ra - 2] == b.shape()[..rb - 2],
            "matmul: batch dimensions differ: {:?} × {:?}",
            a.shape,
            b.shape
        );
        let loc = Location::caller();
        let mut s = a.shape()[..ra - 2].to_vec();
        s.extend([m, n]);
        let out_shape = Shape::new(&s);
        let mut out = crate::pool::for_overwrite(out_shape.numel());
        if ra == 2 {
            gemm::gemm(T::ONE, mat(a), mat(b), T::ZERO, MatMut::row_major(&mut out, m, n));
        } else {
            gemm::gemm_batched(T::ONE, batch(a), batch(b), T::ZERO, &mut out);
        }
        record(out, out_shape, &[a, b], loc, |_| Op::Matmul { a: a.clone(), b: b.clone() })
    }

    /// `self·w + bias`: a matrix product with a bias added to every row, as one op (PyTorch's
    /// `addmm`, or `F.linear` with chi's `[in, out]` weight layout).
    ///
    /// * `[…, k] × [k, n] + [n] → […, n]` (leading axes folded into the rows of one GEMM)
    ///
    /// Values and gradients are bit for bit those of `self.matmul(w).add(bias)`: the product
    /// is computed as `matmul` computes it, and the bias is added to it in the product's own
    /// buffer, instead of into a second buffer as `add` would. That saves writing and reading a
    /// buffer of the output's size, which at the input projection of a recurrent layer (all
    /// time steps at once) is the largest tensor of the forward pass.
    ///
    /// ```
    /// use chi_autodiff::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1., 2., 3., 4.], &[2, 2]);
    /// let w = Tensor::<f32>::from_vec(vec![5., 6., 7., 8.], &[2, 2]);
    /// let b = Tensor::<f32>::from_vec(vec![0.5, -1.], &[2]);
    /// assert_eq!(x.affine(&w, &b).to_vec(), vec![19.5, 21., 43.5, 49.]);
    /// ```
    ///
    /// # Panics
    /// If `w` is not `[k, n]` for `self`'s last axis `k`, or `bias` is not `[n]` (the message
    /// names `affine` and the shapes).
    #[track_caller]
    pub fn affine(&self, w: &Tensor<T>, bias: &Tensor<T>) -> Tensor<T> {
        let x = self;
        assert!(
            x.rank() >= 1 && w.rank() == 2 && x.shape()[x.rank() - 1] == w.shape()[0],
            "affine: input {:?} and weight {:?} do not multiply (need […, k] and [k, n])",
            x.shape,
            w.shape
        );
        let (k, n) = (w.shape()[0], w.shape()[1]);
        assert!(bias.shape() == [n], "affine: bias has shape {:?}, expected [{n}] for weight {:?}", bias.shape, w.shape);
        if x.rank() == 1 {
            return x.reshape(&[1, k]).affine(w, bias).reshape(&[n]);
        }
        let loc = Location::caller();
        let rows: usize = x.shape()[..x.rank() - 1].iter().product();
        let mut s = x.shape()[..x.rank() - 1].to_vec();
        s.push(n);
        let out_shape = Shape::new(&s);
        let mut out = crate::pool::for_overwrite(out_shape.numel());
        gemm::gemm(T::ONE, MatRef::row_major(&x.data, rows, k), mat(w), T::ZERO, MatMut::row_major(&mut out, rows, n));
        // `product + bias`, each sum as `add` forms it (IEEE addition commutes exactly).
        chi_kernels::elementwise::add_rows_inplace(&mut out, &bias.data);
        record(out, out_shape, &[x, w, bias], loc, |_| Op::Affine(Box::new([x.clone(), w.clone(), bias.clone()])))
    }

    /// Swaps the last two axes (matrix transpose; copies).
    #[track_caller]
    pub fn t(&self) -> Tensor<T> {
        let r = self.rank();
        assert!(r >= 2, "t: need rank ≥ 2, got shape {:?}", self.shape);
        let mut perm: Vec<usize> = (0..r).collect();
        perm.swap(r - 2, r - 1);
        self.permute_named(&perm, "t")
    }
    /// Swaps two axes.
    #[track_caller]
    pub fn transpose(&self, a: isize, b: isize) -> Tensor<T> {
        let (a, b) = (self.shape.axis("transpose", a), self.shape.axis("transpose", b));
        let mut perm: Vec<usize> = (0..self.rank()).collect();
        perm.swap(a, b);
        self.permute_named(&perm, "transpose")
    }
    /// Reorders axes: output axis `d` is input axis `perm[d]`.
    #[track_caller]
    pub fn permute(&self, perm: &[usize]) -> Tensor<T> {
        self.permute_named(perm, "permute")
    }
    #[track_caller]
    fn permute_named(&self, perm: &[usize], name: &'static str) -> Tensor<T> {
        let loc = Location::caller();
        let r = self.rank();
        let mut seen = vec![false; r];
        assert!(
            perm.len() == r && perm.iter().all(|&p| p < r && !std::mem::replace(&mut seen[p], true)),
            "permute: {perm:?} is not a permutation of the axes of shape {:?}",
            self.shape
        );
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return self.clone();
        }
        let out_shape = Shape::new(&perm.iter().map(|&p| self.shape()[p]).collect::<Vec<_>>());
        let mut out = crate::pool::for_overwrite(self.numel());
        chi_kernels::layout::permute(&self.data, self.shape(), perm, &mut out);
        record(out, out_shape, &[self], loc, |_| Op::Permute { x: self.clone(), perm: perm.to_vec(), name })
    }
}

pub(crate) fn permute_backward<T: Float>(perm: &[usize], g: &Tensor<T>) -> Tensor<T> {
    let mut inv = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    g.permute(&inv)
}

pub(crate) fn matmul_backward<T: Float>(a: &Tensor<T>, b: &Tensor<T>, g: &Tensor<T>, need: &[bool], fast: bool) -> Grads<T> {
    if !fast {
        return Grads::two(need[0].then(|| g.matmul(&b.t())), need[1].then(|| a.t().matmul(g)));
    }
    let r = a.rank();
    let (m, k, n) = (a.shape()[r - 2], a.shape()[r - 1], b.shape()[r - 1]);
    let ga = need[0].then(|| {
        let mut d = crate::pool::for_overwrite(a.numel());
        if r == 2 {
            gemm::gemm(T::ONE, mat(g), mat(b).t(), T::ZERO, MatMut::row_major(&mut d, m, k));
        } else {
            gemm::gemm_batched(T::ONE, batch(g), batch(b).t(), T::ZERO, &mut d);
        }
        Tensor::from_buf(d, a.shape)
    });
    let gb = need[1].then(|| {
        let mut d = crate::pool::for_overwrite(b.numel());
        if r == 2 {
            gemm::gemm(T::ONE, mat(a).t(), mat(g), T::ZERO, MatMut::row_major(&mut d, k, n));
        } else {
            gemm::gemm_batched(T::ONE, batch(a).t(), batch(g), T::ZERO, &mut d);
        }
        Tensor::from_buf(d, b.shape)
    });
    Grads::two(ga, gb)
}

/// Backward of [`Tensor::affine`]: `g·wᵀ`, `xᵀ·g` over the rows of all leading axes, and the
/// bias's `g` summed over those rows (`sum_to`, as `add`'s rule reduces it).
pub(crate) fn affine_backward<T: Float>(x: &Tensor<T>, w: &Tensor<T>, bias: &Tensor<T>, g: &Tensor<T>, need: &[bool], fast: bool) -> Vec<Option<Tensor<T>>> {
    let (k, n) = (w.shape()[0], w.shape()[1]);
    let rows: usize = x.shape()[..x.rank() - 1].iter().product();
    let db = need[2].then(|| g.sum_to(bias.shape()));
    if !fast {
        let gx = need[0].then(|| g.matmul(&w.t()));
        let gw = need[1].then(|| x.reshape(&[rows, k]).t().matmul(&g.reshape(&[rows, n])));
        return vec![gx, gw, db];
    }
    let (xm, gm) = (MatRef::row_major(&x.data, rows, k), MatRef::row_major(&g.data, rows, n));
    let gx = need[0].then(|| {
        let mut d = crate::pool::for_overwrite(x.numel());
        gemm::gemm(T::ONE, gm, mat(w).t(), T::ZERO, MatMut::row_major(&mut d, rows, k));
        Tensor::from_buf(d, x.shape)
    });
    let gw = need[1].then(|| {
        let mut d = crate::pool::for_overwrite(w.numel());
        gemm::gemm(T::ONE, xm.t(), gm, T::ZERO, MatMut::row_major(&mut d, k, n));
        Tensor::from_buf(d, w.shape)
    });
    vec![gx, gw, db]
}
