//! The training losses written with chi's tape ops (gather rows, matmul, log-sigmoid, …).
//!
//! These are the reference the fused kernels are tested against: differentiating them with
//! chi's reverse mode must give the same update as one fused step, and they pass gradcheck.
//! They are far slower than the fused kernels (one tape node per op) and exist to be checked.

use crate::word2vec::Targets;
use chi_autodiff::{Float, Tensor};
use std::rc::Rc;

/// Rows of `output` for the targets and the sign of each (`+1` for a positive word or a
/// 0-bit, `−1` otherwise).
fn target_rows<T: Float>(output: &Tensor<T>, t: Targets) -> (Tensor<T>, Tensor<T>) {
    let (rows, signs): (Vec<usize>, Vec<T>) = match t {
        Targets::Negative(ids) => ids.iter().enumerate().map(|(k, &w)| (w as usize, if k == 0 { T::ONE } else { -T::ONE })).unzip(),
        Targets::Path { points, codes } => {
            points.iter().zip(codes).map(|(&p, &c)| (p as usize, if c == 0 { T::ONE } else { -T::ONE })).unzip()
        }
    };
    let d = output.shape()[1];
    let n = rows.len();
    (output.gather_rows(Rc::new(rows), &[n, d]), Tensor::from_vec(signs, &[n, 1]))
}

/// `L = −Σ_t log σ(s_t · u_t·h)` for a `[1, d]` input `h`.
fn output_loss<T: Float>(h: &Tensor<T>, output: &Tensor<T>, t: Targets) -> Tensor<T> {
    let (u, s) = target_rows(output, t);
    u.matmul(&h.t()).mul(&s).log_sigmoid().sum().neg()
}

/// Skip-gram loss of one example: the input row `context` predicts `targets`
/// (`input`, `output`: `[rows, d]`).
pub fn skipgram_loss<T: Float>(input: &Tensor<T>, output: &Tensor<T>, context: u32, t: Targets) -> Tensor<T> {
    let d = input.shape()[1];
    let h = input.gather_rows(Rc::new(vec![context as usize]), &[1, d]);
    output_loss(&h, output, t)
}

/// CBOW loss of one example: the mean of the input rows `context` predicts `targets`.
pub fn cbow_loss<T: Float>(input: &Tensor<T>, output: &Tensor<T>, context: &[u32], t: Targets) -> Tensor<T> {
    let d = input.shape()[1];
    let rows: Vec<usize> = context.iter().map(|&c| c as usize).collect();
    let h = input.gather_rows(Rc::new(rows), &[context.len(), d]).mean_axis(0, true);
    output_loss(&h, output, t)
}

/// GloVe's weighted least-squares loss over the co-occurrence entries `(i, j, x_ij)`:
/// `½ Σ f(x_ij) · (w_i·w̃_j + b_i + b̃_j − log x_ij)²` with `f(x) = min(1, (x/x_max)^α)`.
/// (White et al. print this without the square, eq. 3.23; the square is Pennington et al.'s.)
/// `w`, `wc`: `[V, d]`; `b`, `bc`: `[V, 1]`.
pub fn glove_loss<T: Float>(
    w: &Tensor<T>,
    wc: &Tensor<T>,
    b: &Tensor<T>,
    bc: &Tensor<T>,
    entries: &[(u32, u32, f64)],
    x_max: f64,
    alpha: f64,
) -> Tensor<T> {
    let n = entries.len();
    let d = w.shape()[1];
    let is: Rc<Vec<usize>> = Rc::new(entries.iter().map(|e| e.0 as usize).collect());
    let js: Rc<Vec<usize>> = Rc::new(entries.iter().map(|e| e.1 as usize).collect());
    let wi = w.gather_rows(is.clone(), &[n, d]);
    let wj = wc.gather_rows(js.clone(), &[n, d]);
    let bi = b.gather_rows(is, &[n, 1]);
    let bj = bc.gather_rows(js, &[n, 1]);
    let logx = Tensor::from_vec(entries.iter().map(|e| T::from_f64(e.2.ln())).collect(), &[n, 1]);
    let f = Tensor::from_vec(entries.iter().map(|e| T::from_f64(crate::glove::weight(e.2, x_max, alpha))).collect(), &[n, 1]);
    let diff = wi.mul(&wj).sum_axis(1, true).add(&bi).add(&bj).sub(&logx);
    diff.square().mul(&f).sum().mul_scalar(0.5)
}
