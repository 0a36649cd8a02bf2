//! Fused recurrent steps: one LSTM or GRU time step, or a whole LSTM, GRU or CA-RNN sequence, as
//! one tape node.
//!
//! Composed of single ops, an LSTM step records about fifteen nodes (a matmul, an add, four
//! narrows, five nonlinearities, products and sums), each with its own output buffer and, in
//! backward, its own gradient buffers. The fused ops compute the same step with one GEMM per
//! recurrent weight (accumulated onto the projected input) and one SIMD pass for the gates and
//! the state update (`chi_kernels::rnn`), save what the backward pass needs (the gate activations,
//! `tanh(c')`), and run backward as one pointwise pass plus the GEMMs of the adjoint.
//!
//! Second order: the fast backward is not itself recorded. Under `create_graph` the rules below
//! take the composed path instead: they recompute the step from its inputs with differentiable
//! ops and write the adjoint with differentiable ops, so gradients of gradients are exact.

use crate::ops::Op;
use crate::pool;
use crate::tape::record;
use crate::tensor::Tensor;
use crate::{Float, Shape};
use chi_kernels::gemm::{self, MatMut, MatRef, Par};
use chi_kernels::rnn as k;
use std::ops::Range;
use std::panic::Location;
use std::rc::Rc;

/// Saved state of a fused LSTM step ([`Tensor::lstm_cell`]).
#[derive(Clone)]
pub struct LstmSaved<T: Float> {
    /// `xp, h, c, w_hh` and, with peepholes, `p_i, p_f, p_o`.
    pub inputs: Vec<Tensor<T>>,
    /// Gate activations `[B, 4H]` (`i, f, g, o`).
    pub gates: Vec<T>,
    /// `tanh(c')`, `[B, H]`.
    pub tanh_c: Vec<T>,
}

/// Saved state of a fused GRU step ([`Tensor::gru_cell`]).
#[derive(Clone)]
pub struct GruSaved<T: Float> {
    /// `xp, h, w_hh, w_hn` and, with the reset after the product, `b_hn`.
    pub inputs: Vec<Tensor<T>>,
    /// Whether the reset gate multiplies after the candidate's product (PyTorch's form).
    pub reset_after: bool,
    /// Gates `r, z`, `[B, 2H]`.
    pub rz: Vec<T>,
    /// Candidate `n`, `[B, H]`.
    pub n: Vec<T>,
    /// `h·W_hn + b_hn` (reset after) or `r⊙h` (reset before), `[B, H]`.
    pub hn: Vec<T>,
}

fn row_major<T: Float>(t: &Tensor<T>) -> MatRef<'_, T> {
    MatRef::row_major(&t.data, t.shape()[0], t.shape()[1])
}

/// Columns `j0..j0+cols` of a row-major `[rows, width]` buffer.
fn cols_of<T>(d: &[T], rows: usize, width: usize, j0: usize, cols: usize) -> MatRef<'_, T> {
    MatRef { data: &d[j0.min(d.len())..], rows, cols, rs: width, cs: 1 }
}

#[track_caller]
fn check_2d<T: Float>(op: &str, what: &str, t: &Tensor<T>, want: [usize; 2]) {
    assert!(t.shape() == want, "{op}: {what} has shape {:?}, expected {want:?}", t.shape());
}

impl<T: Float> Tensor<T> {
    /// One LSTM step as one op. `xp [B, 4H]` is the projected input `x·W_ih + b` (gate blocks
    /// `i, f, g, o`), `h, c [B, H]` the state, `w_hh [H, 4H]` the recurrent weight and `peephole`
    /// the optional diagonal peephole weights `[p_i, p_f, p_o]` (each `[H]`):
    ///
    /// ```text
    /// a = xp + h·W_hh
    /// i = σ(a_i + p_i⊙c)   f = σ(a_f + p_f⊙c)   g = tanh(a_g)
    /// c' = f⊙c + i⊙g       o = σ(a_o + p_o⊙c')  h' = o⊙tanh(c')
    /// ```
    ///
    /// Returns `[B, 2H]`, row `b` = `[h'_b, c'_b]` (take them with `narrow(1, 0, H)` and
    /// `narrow(1, H, H)`).
    ///
    /// ```
    /// use chi_autodiff::Tensor;
    /// let (b, h) = (2, 3);
    /// let xp = Tensor::<f64>::full(&[b, 4 * h], 0.1);
    /// let (h0, c0) = (Tensor::zeros(&[b, h]), Tensor::zeros(&[b, h]));
    /// let w = Tensor::full(&[h, 4 * h], 0.2);
    /// let hc = Tensor::lstm_cell(&xp, &h0, &c0, &w, None);
    /// let s = 1.0 / (1.0 + (-0.1f64).exp());
    /// let c1 = s * 0.1f64.tanh();
    /// assert!((hc.data()[h] - c1).abs() < 1e-15);
    /// assert!((hc.data()[0] - s * c1.tanh()).abs() < 1e-15);
    /// ```
    ///
    /// # Panics
    /// If a shape disagrees (the message names `lstm_cell`, the operand and both shapes).
    #[track_caller]
    pub fn lstm_cell(xp: &Tensor<T>, h: &Tensor<T>, c: &Tensor<T>, w_hh: &Tensor<T>, peephole: Option<[&Tensor<T>; 3]>) -> Tensor<T> {
        let op = "lstm_cell";
        let loc = Location::caller();
        assert!(h.rank() == 2, "{op}: h must be [batch, hidden], got {:?}", h.shape());
        let (b, hd) = (h.shape()[0], h.shape()[1]);
        check_2d(op, "xp", xp, [b, 4 * hd]);
        check_2d(op, "c", c, [b, hd]);
        check_2d(op, "w_hh", w_hh, [hd, 4 * hd]);
        if let Some(p) = &peephole {
            for (q, name) in p.iter().zip(["p_i", "p_f", "p_o"]) {
                assert!(q.shape() == [hd], "{op}: {name} has shape {:?}, expected [{hd}]", q.shape());
            }
        }
        // h·W_hh here (β = 0 writes every element); the kernel adds xp as it reads the gates.
        let mut gates = pool::vec_for_overwrite(4 * b * hd);
        gemm::gemm(T::ONE, row_major(h), row_major(w_hh), T::ZERO, MatMut::row_major(&mut gates, b, 4 * hd));
        let mut hc = vec![T::ZERO; 2 * b * hd];
        let mut tanh_c = vec![T::ZERO; b * hd];
        let pk = peephole.map(|p| p.map(|q| &q.data[..]));
        k::lstm_forward(b, hd, &mut gates, Some(k::Rows::dense(&xp.data, 4 * hd)), &c.data, pk, &mut hc, &mut tanh_c);
        let mut inputs: Vec<&Tensor<T>> = vec![xp, h, c, w_hh];
        if let Some(p) = &peephole {
            inputs.extend(p.iter().copied());
        }
        let ins = inputs.clone();
        record(hc, Shape::new(&[b, 2 * hd]), &inputs, loc, move |_| {
            Op::LstmCell(Box::new(LstmSaved { inputs: ins.into_iter().cloned().collect(), gates, tanh_c }))
        })
    }

    /// One GRU step as one op. `xp [B, 3H]` is the projected input `x·W_ih + b` (blocks
    /// `r, z, n`), `h [B, H]` the state, `w_hh [H, 2H]` the recurrent weight of `r, z` and
    /// `w_hn [H, H]` that of the candidate. With `b_hn = Some([H])` the reset gate multiplies
    /// after the candidate's product (PyTorch's form); with `None`, before it (the form of Cho et
    /// al. as restated by Chung et al.):
    ///
    /// ```text
    /// r, z = σ(xp_rz + h·W_hh)
    /// n = tanh(xp_n + r⊙(h·W_hn + b_hn))      (b_hn given)
    /// n = tanh(xp_n + (r⊙h)·W_hn)             (b_hn = None)
    /// h' = n + z⊙(h − n)
    /// ```
    ///
    /// Returns `h' [B, H]`.
    ///
    /// # Panics
    /// If a shape disagrees (the message names `gru_cell`, the operand and both shapes).
    #[track_caller]
    pub fn gru_cell(xp: &Tensor<T>, h: &Tensor<T>, w_hh: &Tensor<T>, w_hn: &Tensor<T>, b_hn: Option<&Tensor<T>>) -> Tensor<T> {
        let op = "gru_cell";
        let loc = Location::caller();
        assert!(h.rank() == 2, "{op}: h must be [batch, hidden], got {:?}", h.shape());
        let (b, hd) = (h.shape()[0], h.shape()[1]);
        check_2d(op, "xp", xp, [b, 3 * hd]);
        check_2d(op, "w_hh", w_hh, [hd, 2 * hd]);
        check_2d(op, "w_hn", w_hn, [hd, hd]);
        if let Some(bn) = b_hn {
            assert!(bn.shape() == [hd], "{op}: b_hn has shape {:?}, expected [{hd}]", bn.shape());
        }
        let reset_after = b_hn.is_some();
        let mut rz = vec![T::ZERO; 2 * b * hd];
        gemm::gemm(T::ONE, row_major(h), row_major(w_hh), T::ZERO, MatMut::row_major(&mut rz, b, 2 * hd));
        let mut hn = vec![T::ZERO; b * hd];
        let mut n = vec![T::ZERO; b * hd];
        let mut h_new = vec![T::ZERO; b * hd];
        if let Some(bn) = b_hn {
            for row in hn.chunks_exact_mut(hd.max(1)) {
                row.copy_from_slice(&bn.data);
            }
            gemm::gemm(T::ONE, row_major(h), row_major(w_hn), T::ONE, MatMut::row_major(&mut hn, b, hd));
            k::gru_forward(b, hd, true, k::Rows::dense(&xp.data, 3 * hd), &mut rz, &hn, &h.data, &mut n, &mut h_new);
        } else {
            // hn holds u = r⊙h; the candidate's product goes to `un`.
            k::gru_reset(b, hd, k::Rows::dense(&xp.data, 3 * hd), &mut rz, &h.data, &mut hn);
            let mut un = vec![T::ZERO; b * hd];
            gemm::gemm(T::ONE, MatRef::row_major(&hn, b, hd), row_major(w_hn), T::ZERO, MatMut::row_major(&mut un, b, hd));
            k::gru_forward(b, hd, false, k::Rows::dense(&xp.data, 3 * hd), &mut rz, &un, &h.data, &mut n, &mut h_new);
        }
        let mut inputs: Vec<&Tensor<T>> = vec![xp, h, w_hh, w_hn];
        inputs.extend(b_hn);
        let ins = inputs.clone();
        record(h_new, Shape::new(&[b, hd]), &inputs, loc, move |_| {
            Op::GruCell(Box::new(GruSaved { inputs: ins.into_iter().cloned().collect(), reset_after, rz, n, hn }))
        })
    }
}

/// `Aᵀ·B` for row-major `A [m, k]` viewed by `a`, `B` by `b`, into a new `[k, n]` buffer.
fn at_b<T: Float>(a: MatRef<T>, b: MatRef<T>) -> Vec<T> {
    // β = 0: the product overwrites every element (zeros when the inner size is 0).
    let mut d = pool::vec_for_overwrite(a.cols * b.cols);
    gemm::gemm(T::ONE, a.t(), b, T::ZERO, MatMut::row_major(&mut d, a.cols, b.cols));
    d
}

/// Backward of [`Tensor::lstm_cell`]. Gradients in input order (`xp, h, c, w_hh`, peepholes).
pub(crate) fn lstm_cell_backward<T: Float>(s: &LstmSaved<T>, out: &Tensor<T>, g: &Tensor<T>, need: &[bool], fast: bool) -> Vec<Option<Tensor<T>>> {
    if !fast {
        return lstm_cell_composed_backward(&s.inputs, g, need);
    }
    let (xp, h, c, w) = (&s.inputs[0], &s.inputs[1], &s.inputs[2], &s.inputs[3]);
    let (b, hd) = (h.shape()[0], h.shape()[1]);
    let peep = s.inputs.len() == 7;
    let mut da = vec![T::ZERO; 4 * b * hd];
    let mut dc = vec![T::ZERO; b * hd];
    let mut dp = [vec![T::ZERO; hd], vec![T::ZERO; hd], vec![T::ZERO; hd]];
    let pk = peep.then(|| [&s.inputs[4].data[..], &s.inputs[5].data[..], &s.inputs[6].data[..]]);
    let dpk = peep.then(|| {
        let [a, bb, cc] = &mut dp;
        [&mut a[..], &mut bb[..], &mut cc[..]]
    });
    k::lstm_backward(b, hd, &s.gates, &c.data, &out.data, &s.tanh_c, pk, &g.data, &mut da, &mut dc, dpk);
    let da_m = MatRef::row_major(&da, b, 4 * hd);
    let dh = need[1].then(|| {
        let mut d = vec![T::ZERO; b * hd];
        gemm::gemm(T::ONE, da_m, row_major(w).t(), T::ZERO, MatMut::row_major(&mut d, b, hd));
        Tensor::from_vec(d, h.shape())
    });
    let dw = need[3].then(|| Tensor::from_vec(at_b(row_major(h), da_m), w.shape()));
    let mut grads = vec![None, dh, need[2].then(|| Tensor::from_vec(dc, c.shape())), dw];
    if peep {
        for (q, d) in dp.into_iter().enumerate() {
            grads.push(need[4 + q].then(|| Tensor::from_vec(d, &[hd])));
        }
    }
    grads[0] = need[0].then(|| Tensor::from_vec(da, xp.shape()));
    grads
}

/// The LSTM step composed of single ops: `[h', c']` from `xp, h, c, w_hh` and optional
/// peepholes. The reference the fused op is tested against, and the recomputation behind its
/// second-order rule.
pub fn lstm_cell_composed<T: Float>(xp: &Tensor<T>, h: &Tensor<T>, c: &Tensor<T>, w_hh: &Tensor<T>, peephole: Option<[&Tensor<T>; 3]>) -> [Tensor<T>; 2] {
    let hs = h.shape()[1];
    let a = xp.add(&h.matmul(w_hh));
    let mut ai = a.narrow(1, 0, hs);
    let mut af = a.narrow(1, hs, hs);
    let ag = a.narrow(1, 2 * hs, hs);
    let mut ao = a.narrow(1, 3 * hs, hs);
    if let Some([pi, pf, _]) = &peephole {
        ai = ai.add(&c.mul(pi));
        af = af.add(&c.mul(pf));
    }
    let (i, f, g) = (ai.sigmoid(), af.sigmoid(), ag.tanh());
    let c_new = f.mul(c).add(&i.mul(&g));
    if let Some([_, _, po]) = &peephole {
        ao = ao.add(&c_new.mul(po));
    }
    let h_new = ao.sigmoid().mul(&c_new.tanh());
    [h_new, c_new]
}

/// The adjoint of the LSTM step written with differentiable ops (recorded under
/// `create_graph`), from the step recomputed from its inputs.
fn lstm_cell_composed_backward<T: Float>(ins: &[Tensor<T>], g: &Tensor<T>, need: &[bool]) -> Vec<Option<Tensor<T>>> {
    let (xp, h, c, w) = (&ins[0], &ins[1], &ins[2], &ins[3]);
    let hs = h.shape()[1];
    let peep = ins.len() == 7;
    let a = xp.add(&h.matmul(w));
    let mut ai = a.narrow(1, 0, hs);
    let mut af = a.narrow(1, hs, hs);
    let ag = a.narrow(1, 2 * hs, hs);
    let mut ao = a.narrow(1, 3 * hs, hs);
    if peep {
        ai = ai.add(&c.mul(&ins[4]));
        af = af.add(&c.mul(&ins[5]));
    }
    let (i, f, gg) = (ai.sigmoid(), af.sigmoid(), ag.tanh());
    let cn = f.mul(c).add(&i.mul(&gg));
    if peep {
        ao = ao.add(&cn.mul(&ins[6]));
    }
    let o = ao.sigmoid();
    let tc = cn.tanh();
    let dsig = |s: &Tensor<T>| s.mul(&s.rsub_scalar(1.0));
    let (dh, dcn) = (g.narrow(1, 0, hs), g.narrow(1, hs, hs));
    let dao = dh.mul(&tc).mul(&dsig(&o));
    let mut dct = dcn.add(&dh.mul(&o).mul(&tc.square().rsub_scalar(1.0)));
    if peep {
        dct = dct.add(&dao.mul(&ins[6]));
    }
    let dai = dct.mul(&gg).mul(&dsig(&i));
    let daf = dct.mul(c).mul(&dsig(&f));
    let dag = dct.mul(&i).mul(&gg.square().rsub_scalar(1.0));
    let mut dcp = dct.mul(&f);
    if peep {
        dcp = dcp.add(&dai.mul(&ins[4])).add(&daf.mul(&ins[5]));
    }
    let da = Tensor::concat(&[dai.clone(), daf.clone(), dag, dao.clone()], 1);
    let mut grads = vec![
        need[0].then(|| da.clone()),
        need[1].then(|| da.matmul(&w.t())),
        need[2].then(|| dcp),
        need[3].then(|| h.t().matmul(&da)),
    ];
    if peep {
        grads.push(need[4].then(|| dai.mul(c).sum_axis(0, false)));
        grads.push(need[5].then(|| daf.mul(c).sum_axis(0, false)));
        grads.push(need[6].then(|| dao.mul(&cn).sum_axis(0, false)));
    }
    grads
}

/// Backward of [`Tensor::gru_cell`]. Gradients in input order (`xp, h, w_hh, w_hn`, `b_hn`).
pub(crate) fn gru_cell_backward<T: Float>(s: &GruSaved<T>, g: &Tensor<T>, need: &[bool], fast: bool) -> Vec<Option<Tensor<T>>> {
    if !fast {
        return gru_cell_composed_backward(&s.inputs, g, need);
    }
    let (xp, h, w_hh, w_hn) = (&s.inputs[0], &s.inputs[1], &s.inputs[2], &s.inputs[3]);
    let (b, hd) = (h.shape()[0], h.shape()[1]);
    let mut da = vec![T::ZERO; 3 * b * hd];
    let mut dhn = vec![T::ZERO; b * hd];
    let mut dh = vec![T::ZERO; b * hd];
    k::gru_backward(b, hd, s.reset_after, &s.rz, &s.n, &h.data, &s.hn, &g.data, &mut da, &mut dhn, &mut dh);
    let mut dw_hn = None;
    let mut db_hn = None;
    if s.reset_after {
        let dhn_m = MatRef::row_major(&dhn, b, hd);
        if need[1] {
            gemm::gemm(T::ONE, dhn_m, row_major(w_hn).t(), T::ONE, MatMut::row_major(&mut dh, b, hd));
        }
        if need[3] {
            dw_hn = Some(at_b(row_major(h), dhn_m));
        }
        if need[4] {
            let mut s = vec![T::ZERO; hd];
            for row in dhn.chunks_exact(hd.max(1)) {
                chi_kernels::elementwise::axpy(T::ONE, row, &mut s);
            }
            db_hn = Some(s);
        }
    } else {
        // u = r⊙h feeds the candidate's product: du = da_n·W_hnᵀ, then the r block.
        let dan = cols_of(&da, b, 3 * hd, 2 * hd, hd);
        let mut du = vec![T::ZERO; b * hd];
        gemm::gemm(T::ONE, dan, row_major(w_hn).t(), T::ZERO, MatMut::row_major(&mut du, b, hd));
        if need[3] {
            dw_hn = Some(at_b(MatRef::row_major(&s.hn, b, hd), dan));
        }
        k::gru_backward_reset(b, hd, &s.rz, &h.data, &du, &mut da, &mut dh);
    }
    let darz = cols_of(&da, b, 3 * hd, 0, 2 * hd);
    if need[1] {
        gemm::gemm(T::ONE, darz, row_major(w_hh).t(), T::ONE, MatMut::row_major(&mut dh, b, hd));
    }
    let dw_hh = need[2].then(|| Tensor::from_vec(at_b(row_major(h), darz), w_hh.shape()));
    let mut grads = vec![
        None,
        need[1].then(|| Tensor::from_vec(dh, h.shape())),
        dw_hh,
        dw_hn.map(|d| Tensor::from_vec(d, w_hn.shape())),
    ];
    if s.reset_after {
        grads.push(db_hn.map(|d| Tensor::from_vec(d, &[hd])));
    }
    grads[0] = need[0].then(|| Tensor::from_vec(da, xp.shape()));
    grads
}

/// The GRU step composed of single ops (`b_hn` given: reset after the product). The reference
/// of the fused op and the recomputation behind its second-order rule.
pub fn gru_cell_composed<T: Float>(xp: &Tensor<T>, h: &Tensor<T>, w_hh: &Tensor<T>, w_hn: &Tensor<T>, b_hn: Option<&Tensor<T>>) -> Tensor<T> {
    let hs = h.shape()[1];
    let rz = xp.narrow(1, 0, 2 * hs).add(&h.matmul(w_hh)).sigmoid();
    let (r, z) = (rz.narrow(1, 0, hs), rz.narrow(1, hs, hs));
    let xn = xp.narrow(1, 2 * hs, hs);
    let n = match b_hn {
        None => xn.add(&r.mul(h).matmul(w_hn)),
        Some(bn) => xn.add(&r.mul(&h.matmul(w_hn).add(bn))),
    }
    .tanh();
    n.add(&z.mul(&h.sub(&n)))
}

/// The adjoint of the GRU step written with differentiable ops (recorded under `create_graph`).
fn gru_cell_composed_backward<T: Float>(ins: &[Tensor<T>], g: &Tensor<T>, need: &[bool]) -> Vec<Option<Tensor<T>>> {
    let (xp, h, w_hh, w_hn) = (&ins[0], &ins[1], &ins[2], &ins[3]);
    let reset_after = ins.len() == 5;
    let hs = h.shape()[1];
    let rz = xp.narrow(1, 0, 2 * hs).add(&h.matmul(w_hh)).sigmoid();
    let (r, z) = (rz.narrow(1, 0, hs), rz.narrow(1, hs, hs));
    let xn = xp.narrow(1, 2 * hs, hs);
    let dsig = |s: &Tensor<T>| s.mul(&s.rsub_scalar(1.0));
    let (hn_or_u, n) = if reset_after {
        let hn = h.matmul(w_hn).add(&ins[4]);
        let n = xn.add(&r.mul(&hn)).tanh();
        (hn, n)
    } else {
        let u = r.mul(h);
        let n = xn.add(&u.matmul(w_hn)).tanh();
        (u, n)
    };
    let dan = g.mul(&z.rsub_scalar(1.0)).mul(&n.square().rsub_scalar(1.0));
    let daz = g.mul(&h.sub(&n)).mul(&dsig(&z));
    let mut dh = g.mul(&z);
    let (dar, dw_hn, db_hn);
    if reset_after {
        let dhn = dan.mul(&r);
        dar = dan.mul(&hn_or_u).mul(&dsig(&r));
        dh = dh.add(&dhn.matmul(&w_hn.t()));
        dw_hn = need[3].then(|| h.t().matmul(&dhn));
        db_hn = need[4].then(|| dhn.sum_axis(0, false));
    } else {
        let du = dan.matmul(&w_hn.t());
        dar = du.mul(h).mul(&dsig(&r));
        dh = dh.add(&du.mul(&r));
        dw_hn = need[3].then(|| hn_or_u.t().matmul(&dan));
        db_hn = None;
    }
    let darz = Tensor::concat(&[dar, daz], 1);
    dh = dh.add(&darz.matmul(&w_hh.t()));
    let mut grads = vec![
        need[0].then(|| Tensor::concat(&[darz.clone(), dan], 1)),
        need[1].then_some(dh),
        need[2].then(|| h.t().matmul(&darz)),
        dw_hn,
    ];
    if reset_after {
        grads.push(db_hn);
    }
    grads
}

// ------------------------------------------------------------------ recurrences over a sequence

/// Forward work (flops of the recurrent products over all steps) from which a whole-sequence
/// op splits its batch over the pool's threads.
///
/// Rows of a batch never interact inside a recurrent layer, so each row block can run the whole
/// sequence on its own thread: one fork and join per op instead of one per step (one step's
/// product, e.g. `[16, 128]·[128, 512]`, is far below the size where splitting a GEMM pays).
/// Waking a sleeping worker costs about 30 µs on this workplace's 2-core VMs; 8 Mflop is about
/// 80 µs of one core's work, so halving it repays the wake-up.
pub const SEQ_SPLIT_MIN_FLOPS: usize = 1 << 23;

/// The row blocks a recurrence over `b` rows with `flops` of forward work is split into (one
/// block below [`SEQ_SPLIT_MIN_FLOPS`] or on one thread), and the parallelism of each block's
/// own products: single-threaded when there are several blocks, so that splits do not nest.
///
/// Rows get the same arithmetic whichever block they fall in, so the states and the input and
/// state gradients do not depend on the thread count; sums over the batch (the LSTM's peephole
/// gradients) add the blocks' partial sums, so they agree to rounding.
fn row_blocks(b: usize, flops: usize) -> (Vec<Range<usize>>, Par) {
    let parts = if flops >= SEQ_SPLIT_MIN_FLOPS { chi_kernels::threads::num_threads().min(b).max(1) } else { 1 };
    let blocks = (0..parts).map(|p| p * b / parts..(p + 1) * b / parts).collect();
    (blocks, if parts > 1 { Par::Seq } else { Par::Auto })
}

/// Splits a time-major `[T, B, w]` buffer by row blocks: `out[p][t]` is rows `blocks[p]` of step
/// `t`, so each block's job owns its part of every step. The blocks must tile `0..B` in order.
fn split_steps<'a, T>(buf: &'a mut [T], t_len: usize, w: usize, blocks: &[Range<usize>]) -> Vec<Vec<&'a mut [T]>> {
    let mut out: Vec<Vec<&'a mut [T]>> = blocks.iter().map(|_| Vec::with_capacity(t_len)).collect();
    let mut rest = buf;
    for _ in 0..t_len {
        for (p, r) in blocks.iter().enumerate() {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(r.len() * w);
            out[p].push(head);
            rest = tail;
        }
    }
    out
}

/// Splits a `[B, w]` buffer by row blocks.
fn split_rows<'a, T>(buf: &'a mut [T], w: usize, blocks: &[Range<usize>]) -> Vec<&'a mut [T]> {
    split_steps(buf, 1, w, blocks).into_iter().map(|mut v| v.pop().expect("one step")).collect()
}

/// Step `t`'s rows of a batch-major `[B, T, G]` buffer, from row `r0` on: row `b` of the
/// result is `(r0 + b, t)`.
fn step_rows<T>(xp: &[T], r0: usize, t: usize, t_len: usize, g: usize) -> k::Rows<'_, T> {
    // An empty block (batch 0) may start past the end.
    k::Rows { data: xp.get((r0 * t_len + t) * g..).unwrap_or(&[]), stride: t_len * g }
}

/// The state each step started from, batch-major `[B, T, H]`: row `(b, t)` is `h0[b]` for
/// `t = 0`, else the first `H` columns of row `b` of step `t − 1` of the time-major outputs
/// `out [T, B, width]`. The left operand of a recurrent weight's gradient, summed over
/// `(b, t)` in the order of the batch-major pre-activation gradients.
fn previous_states_batch_major<T: Float>(h0: &[T], out: &[T], b: usize, t_len: usize, hd: usize, width: usize) -> Vec<T> {
    let mut hprev = pool::vec_for_overwrite(t_len * b * hd);
    for (r, rows) in hprev.chunks_exact_mut((t_len * hd).max(1)).enumerate().take(b) {
        for (t, dst) in rows.chunks_exact_mut(hd.max(1)).enumerate() {
            let src = if t == 0 { &h0[r * hd..(r + 1) * hd] } else { &out[((t - 1) * b + r) * width..((t - 1) * b + r) * width + hd] };
            dst.copy_from_slice(src);
        }
    }
    hprev
}

/// Step `t`'s rows of a batch-major `[rows, T, w]` buffer, columns `j0 .. j0 + cols`, as a
/// matrix operand (row `i` at `(i·T + t)·w + j0`).
fn step_cols<T>(d: &[T], t: usize, t_len: usize, rows: usize, w: usize, j0: usize, cols: usize) -> MatRef<'_, T> {
    // An empty block (batch 0) may start past the end.
    cols_of(d.get(t * w..).unwrap_or(&[]), rows, t_len * w, j0, cols)
}

/// Reorders a time-major `[T, B, w]` buffer into batch-major `[B, T, w]` (the order in which
/// the ops read the projected inputs, `(r·T + t)·w` for row `r`, step `t`): the CA-RNN's
/// gradient of its projected inputs, and the GRU's saved `r⊙h` for a weight gradient summed in
/// that order.
///
/// Every element is written, so the buffer is taken for overwrite (no zero fill first).
fn to_batch_major<T: Float>(da: &[T], b: usize, t_len: usize, w: usize) -> Vec<T> {
    let mut d = pool::vec_for_overwrite(da.len());
    for r in 0..b {
        for t in 0..t_len {
            let dst = (r * t_len + t) * w;
            d[dst..dst + w].copy_from_slice(&da[(t * b + r) * w..(t * b + r + 1) * w]);
        }
    }
    d
}

/// The two halves of every row of a `[B, 2n]` buffer (a carried `[h, c]` or `[y, c]` state),
/// as two `[B, n]` buffers.
fn deinterleave<T: Float>(pairs: &[T], n: usize) -> (Vec<T>, Vec<T>) {
    let (mut first, mut second) = (Vec::with_capacity(pairs.len() / 2), Vec::with_capacity(pairs.len() / 2));
    for row in pairs.chunks_exact((2 * n).max(1)) {
        first.extend_from_slice(&row[..n]);
        second.extend_from_slice(&row[n..]);
    }
    (first, second)
}

/// The elementwise sum of the row blocks' partial sums (sums over the batch, e.g. a peephole's
/// gradient), all of one length.
fn sum_blocks<T: Float>(parts: &[Vec<T>]) -> Vec<T> {
    let mut total = vec![T::ZERO; parts.first().map_or(0, Vec::len)];
    for p in parts {
        chi_kernels::elementwise::axpy(T::ONE, p, &mut total);
    }
    total
}

/// Under `create_graph`: the sequence is recomputed with single ops (`composed`) on fresh
/// aliases of the inputs (one reshape node each, so the inner pass stops there) and
/// differentiated with a recorded inner pass; the gradients are differentiable functions of the
/// inputs and of `g`.
fn sequence_recorded_backward<T: Float>(op: &str, inputs: &[Tensor<T>], g: &Tensor<T>, composed: impl Fn(&[Tensor<T>]) -> Tensor<T>) -> Vec<Option<Tensor<T>>> {
    // Constants (inputs that do not require grad) are used as they are and get no gradient.
    let tracked: Vec<bool> = inputs.iter().map(|x| x.requires_grad_flag()).collect();
    let alias: Vec<Tensor<T>> = inputs.iter().zip(&tracked).map(|(x, &t)| if t { x.unsqueeze(0).reshape(x.shape()) } else { x.clone() }).collect();
    let y = composed(&alias);
    let refs: Vec<&Tensor<T>> = alias.iter().zip(&tracked).filter(|(_, &t)| t).map(|(a, _)| a).collect();
    let mut gs = crate::grad(&[&y], &refs, Some(&[g.clone()]), crate::GradOptions::create_graph())
        .unwrap_or_else(|e| panic!("{op}: recorded backward of the composed sequence: {e}"))
        .into_iter();
    tracked.iter().map(|&t| if t { gs.next() } else { None }).collect()
}

// ------------------------------------------------------------------------ LSTM over a sequence

/// Saved state of a fused LSTM sequence ([`Tensor::lstm_sequence`]).
#[derive(Clone)]
pub struct LstmSeqSaved<T: Float> {
    /// `xp, h0, c0, w_hh` and, with peepholes, `p_i, p_f, p_o`.
    pub inputs: Vec<Tensor<T>>,
    /// `keep[t·B + b]`: whether row `b` steps at time `t` (else its state is carried).
    pub keep: Option<Rc<Vec<bool>>>,
    /// Gate activations of every step, `[T, B, 4H]`.
    pub gates: Vec<T>,
    /// `tanh(c_t)` of every step, `[T, B, H]`.
    pub tanh_c: Vec<T>,
}

impl<T: Float> Drop for LstmSeqSaved<T> {
    /// The work buffers go back to the pool as a tensor's would: the next step's sequence takes
    /// them without clearing.
    fn drop(&mut self) {
        pool::recycle_vec(std::mem::take(&mut self.gates));
        pool::recycle_vec(std::mem::take(&mut self.tanh_c));
    }
}

/// What every row block of an LSTM sequence reads.
struct LstmArgs<'a, T> {
    b: usize,
    hd: usize,
    t_len: usize,
    /// `[B, T, 4H]`.
    xp: &'a [T],
    h0: &'a [T],
    c0: &'a [T],
    peep: k::Peepholes<'a, T>,
    keep: Option<&'a [bool]>,
    par: Par,
}

impl<'a, T: Float> LstmArgs<'a, T> {
    fn new(s: &'a [Tensor<T>], keep: &'a Option<Rc<Vec<bool>>>, par: Par) -> Self {
        let (xp, h0) = (&s[0], &s[1]);
        LstmArgs {
            b: h0.shape()[0],
            hd: h0.shape()[1],
            t_len: xp.shape()[1],
            xp: &xp.data,
            h0: &h0.data,
            c0: &s[2].data,
            peep: (s.len() == 7).then(|| [&s[4].data[..], &s[5].data[..], &s[6].data[..]]),
            keep: keep.as_deref().map(|k| &k[..]),
            par,
        }
    }
}

/// One row block's part of the forward pass: its rows of every step's gates, `tanh(c)` and
/// output.
struct LstmFwdJob<'a, T> {
    rows: Range<usize>,
    gates: Vec<&'a mut [T]>,
    tanh_c: Vec<&'a mut [T]>,
    out: Vec<&'a mut [T]>,
}

fn lstm_forward_rows<T: Float>(a: &LstmArgs<T>, w: &gemm::PackedB<T>, job: LstmFwdJob<T>) {
    let LstmFwdJob { rows, mut gates, mut tanh_c, mut out } = job;
    let (hd, g4, nb) = (a.hd, 4 * a.hd, rows.len());
    let mut c_prev = a.c0[rows.start * hd..rows.end * hd].to_vec();
    for t in 0..a.t_len {
        let gt = &mut *gates[t];
        let (done, rest) = out.split_at_mut(t);
        let hc = &mut *rest[0];
        let h_prev = if t == 0 { MatRef::row_major(&a.h0[rows.start * hd..rows.end * hd], nb, hd) } else { cols_of(&*done[t - 1], nb, 2 * hd, 0, hd) };
        gemm::gemm_packed_par(a.par, T::ONE, h_prev, w, T::ZERO, MatMut::row_major(gt, nb, g4));
        // This step's rows of the batch-major inputs, added by the kernel where they lie.
        k::lstm_forward(nb, hd, gt, Some(step_rows(a.xp, rows.start, t, a.t_len, g4)), &c_prev, a.peep, hc, &mut *tanh_c[t]);
        if let Some(kp) = a.keep {
            for (i, r) in rows.clone().enumerate().filter(|&(_, r)| !kp[t * a.b + r]) {
                let row = &mut hc[i * 2 * hd..(i + 1) * 2 * hd];
                if t == 0 {
                    row[..hd].copy_from_slice(&a.h0[r * hd..(r + 1) * hd]);
                    row[hd..].copy_from_slice(&a.c0[r * hd..(r + 1) * hd]);
                } else {
                    row.copy_from_slice(&done[t - 1][i * 2 * hd..(i + 1) * 2 * hd]);
                }
            }
        }
        for i in 0..nb {
            c_prev[i * hd..(i + 1) * hd].copy_from_slice(&hc[i * 2 * hd + hd..(i + 1) * 2 * hd]);
        }
    }
}

impl<T: Float> Tensor<T> {
    /// A whole LSTM sequence as one op: the step of [`Tensor::lstm_cell`] applied for
    /// `t = 0 … T−1` to `xp [B, T, 4H]` (the projected inputs of all steps, batch-major, as one
    /// matmul `x·W_ih + b` gives them), from the state `h0, c0 [B, H]`. The recurrent weight is
    /// packed once for all steps (and its transpose once for the backward pass), the weight
    /// gradient is one product over all steps, and with more than one thread a large enough
    /// batch is split into row blocks that each run the whole sequence on their own thread
    /// ([`SEQ_SPLIT_MIN_FLOPS`]).
    ///
    /// With `keep` (`T·B` flags, `keep[t·B + b]`), a row whose flag is false at step `t` keeps
    /// its previous state (no gradient flows through the padding).
    ///
    /// Returns the states of every step, time-major `[T, B, 2H]`: `out[t, b] = [h_t, c_t]`.
    ///
    /// # Panics
    /// If a shape disagrees or `keep` has the wrong length (the message names `lstm_sequence`).
    #[track_caller]
    pub fn lstm_sequence(xp: &Tensor<T>, h0: &Tensor<T>, c0: &Tensor<T>, w_hh: &Tensor<T>, peephole: Option<[&Tensor<T>; 3]>, keep: Option<Rc<Vec<bool>>>) -> Tensor<T> {
        let op = "lstm_sequence";
        let loc = Location::caller();
        assert!(h0.rank() == 2, "{op}: h0 must be [batch, hidden], got {:?}", h0.shape());
        let (b, hd) = (h0.shape()[0], h0.shape()[1]);
        assert!(xp.rank() == 3 && xp.shape()[0] == b && xp.shape()[2] == 4 * hd, "{op}: xp has shape {:?}, expected [{b}, T, {}]", xp.shape(), 4 * hd);
        let t_len = xp.shape()[1];
        check_2d(op, "c0", c0, [b, hd]);
        check_2d(op, "w_hh", w_hh, [hd, 4 * hd]);
        if let Some(p) = &peephole {
            for (q, name) in p.iter().zip(["p_i", "p_f", "p_o"]) {
                assert!(q.shape() == [hd], "{op}: {name} has shape {:?}, expected [{hd}]", q.shape());
            }
        }
        if let Some(k) = &keep {
            assert!(k.len() == t_len * b, "{op}: keep has {} flags for {t_len} steps × batch {b}", k.len());
        }
        let mut inputs: Vec<Tensor<T>> = vec![xp.clone(), h0.clone(), c0.clone(), w_hh.clone()];
        if let Some(p) = &peephole {
            inputs.extend(p.iter().map(|&q| q.clone()));
        }
        let g4 = 4 * hd;
        let packed = gemm::PackedB::new(row_major(w_hh));
        // Every element of these is written below (gates: the product, then the step kernel;
        // the rest by the step kernel), so recycled buffers are taken as they are.
        let mut gates = pool::vec_for_overwrite(t_len * b * g4);
        let mut tanh_c = pool::vec_for_overwrite(t_len * b * hd);
        let mut out = pool::for_overwrite(t_len * 2 * b * hd);
        let (blocks, par) = row_blocks(b, 2 * t_len * b * hd * g4);
        let args = LstmArgs::new(&inputs, &keep, par);
        let jobs: Vec<LstmFwdJob<T>> = split_steps(&mut gates, t_len, g4, &blocks)
            .into_iter()
            .zip(split_steps(&mut tanh_c, t_len, hd, &blocks))
            .zip(split_steps(&mut out, t_len, 2 * hd, &blocks))
            .zip(&blocks)
            .map(|(((gates, tanh_c), out), rows)| LstmFwdJob { rows: rows.clone(), gates, tanh_c, out })
            .collect();
        chi_kernels::threads::run_each(jobs, |job| lstm_forward_rows(&args, &packed, job));
        let refs: Vec<&Tensor<T>> = inputs.iter().collect();
        // Built before recording, so that untracked (its buffers are then recycled on drop).
        let saved = LstmSeqSaved { inputs: inputs.clone(), keep, gates, tanh_c };
        record(out, Shape::new(&[t_len, b, 2 * hd]), &refs, loc, move |_| Op::LstmSequence(Box::new(saved)))
    }
}

/// The LSTM sequence composed of single ops (per-step [`lstm_cell_composed`], carried rows by
/// `where_`, states stacked time-major): the reference of [`Tensor::lstm_sequence`] and its
/// second-order rule.
pub fn lstm_sequence_composed<T: Float>(
    xp: &Tensor<T>,
    h0: &Tensor<T>,
    c0: &Tensor<T>,
    w_hh: &Tensor<T>,
    peephole: Option<[&Tensor<T>; 3]>,
    keep: Option<&[bool]>,
) -> Tensor<T> {
    let (b, hd, t_len) = (h0.shape()[0], h0.shape()[1], xp.shape()[1]);
    let (mut h, mut c) = (h0.clone(), c0.clone());
    let mut states = Vec::with_capacity(t_len);
    for t in 0..t_len {
        let xt = xp.narrow(1, t, 1).reshape(&[b, 4 * hd]);
        let [hn, cn] = lstm_cell_composed(&xt, &h, &c, w_hh, peephole);
        match keep {
            Some(k) if !k[t * b..(t + 1) * b].iter().all(|&v| v) => {
                let m: Vec<bool> = k[t * b..(t + 1) * b].iter().flat_map(|&v| std::iter::repeat_n(v, hd)).collect();
                h = Tensor::where_(&m, &[b, hd], &hn, &h);
                c = Tensor::where_(&m, &[b, hd], &cn, &c);
            }
            _ => (h, c) = (hn, cn),
        }
        states.push(Tensor::concat(&[h.clone(), c.clone()], 1));
    }
    Tensor::stack(&states, 0)
}

/// One row block's part of the backward pass: its rows of the pre-activation gradient
/// (batch-major `[rows, T, 4H]`, the layout of `xp`, so it is `xp`'s gradient as it stands),
/// the gradient carried to the previous state (`[rows, 2H]`; on return that of `[h0, c0]`), and
/// its share of the peephole gradients (`[3H]`).
struct LstmBackJob<'a, T> {
    rows: Range<usize>,
    da: &'a mut [T],
    carry: &'a mut [T],
    dp: &'a mut [T],
}

/// `saved` holds the forward pass's gate activations and `tanh(c)` (`[T, B, 4H]`, `[T, B, H]`).
fn lstm_backward_rows<T: Float>(a: &LstmArgs<T>, saved: [&[T]; 2], out: &[T], g: &[T], wt: &gemm::PackedB<T>, job: LstmBackJob<T>) {
    let LstmBackJob { rows, da, carry, dp } = job;
    let (hd, g4, nb, b, t_len) = (a.hd, 4 * a.hd, rows.len(), a.b, a.t_len);
    let (r0, r1) = (rows.start, rows.end);
    let (dpi, rest) = dp.split_at_mut(hd.min(dp.len()));
    let (dpf, dpo) = rest.split_at_mut(hd.min(rest.len()));
    let mut gt = vec![T::ZERO; 2 * nb * hd];
    let mut dc = vec![T::ZERO; nb * hd];
    let mut dh = vec![T::ZERO; nb * hd];
    let mut carried: Vec<usize> = Vec::new();
    for t in (0..t_len).rev() {
        let s2 = t * 2 * b * hd;
        gt.copy_from_slice(&g[s2 + r0 * 2 * hd..s2 + r1 * 2 * hd]);
        chi_kernels::elementwise::axpy(T::ONE, carry, &mut gt);
        // Carried rows pass their whole gradient to the previous state; the step sees zero.
        carried.clear();
        if let Some(kp) = a.keep {
            carried.extend((0..nb).filter(|&i| !kp[t * b + r0 + i]));
        }
        for &i in &carried {
            carry[i * 2 * hd..(i + 1) * 2 * hd].copy_from_slice(&gt[i * 2 * hd..(i + 1) * 2 * hd]);
            gt[i * 2 * hd..(i + 1) * 2 * hd].fill(T::ZERO);
        }
        // One row at a time: each row's gradient goes straight to its batch-major place, and
        // its previous cell state is read where the forward pass left it.
        for i in 0..nb {
            let r = r0 + i;
            let c_prev = if t == 0 { &a.c0[r * hd..(r + 1) * hd] } else { &out[s2 - 2 * b * hd + r * 2 * hd + hd..s2 - 2 * b * hd + (r + 1) * 2 * hd] };
            let dpk = a.peep.is_some().then(|| [&mut dpi[..], &mut dpf[..], &mut dpo[..]]);
            let (gates, tanh_c) = (&saved[0][(t * b + r) * g4..(t * b + r + 1) * g4], &saved[1][(t * b + r) * hd..(t * b + r + 1) * hd]);
            let dat = &mut da[(i * t_len + t) * g4..(i * t_len + t + 1) * g4];
            let gi = &gt[i * 2 * hd..(i + 1) * 2 * hd];
            k::lstm_backward(1, hd, gates, c_prev, &out[s2 + r * 2 * hd..s2 + (r + 1) * 2 * hd], tanh_c, a.peep, gi, dat, &mut dc[i * hd..(i + 1) * hd], dpk);
        }
        // New carry for stepped rows: [da·W_hhᵀ, dc]; carried rows keep theirs.
        gemm::gemm_packed_par(a.par, T::ONE, step_cols(da, t, t_len, nb, g4, 0, g4), wt, T::ZERO, MatMut::row_major(&mut dh, nb, hd));
        for i in (0..nb).filter(|i| !carried.contains(i)) {
            carry[i * 2 * hd..i * 2 * hd + hd].copy_from_slice(&dh[i * hd..(i + 1) * hd]);
            carry[i * 2 * hd + hd..(i + 1) * 2 * hd].copy_from_slice(&dc[i * hd..(i + 1) * hd]);
        }
    }
}

/// Backward of [`Tensor::lstm_sequence`]. Gradients in input order (`xp, h0, c0, w_hh`,
/// peepholes).
pub(crate) fn lstm_sequence_backward<T: Float>(s: &LstmSeqSaved<T>, out: &Tensor<T>, g: &Tensor<T>, need: &[bool], fast: bool) -> Vec<Option<Tensor<T>>> {
    if !fast {
        return sequence_recorded_backward("lstm_sequence", &s.inputs, g, |x| {
            let p = (x.len() == 7).then(|| [&x[4], &x[5], &x[6]]);
            lstm_sequence_composed(&x[0], &x[1], &x[2], &x[3], p, s.keep.as_deref().map(|k| &k[..]))
        });
    }
    let (xp, h0, c0, w) = (&s.inputs[0], &s.inputs[1], &s.inputs[2], &s.inputs[3]);
    let (b, hd, t_len) = (h0.shape()[0], h0.shape()[1], xp.shape()[1]);
    let (g4, bh) = (4 * hd, b * hd);
    let peep = s.inputs.len() == 7;
    let wt = gemm::PackedB::new(row_major(w).t());
    // Written whole by the step kernel (carried rows get zeros).
    let mut da = pool::vec_for_overwrite(t_len * b * g4);
    // Gradient reaching the state of step t from later steps, [B, 2H] as [h, c] per row.
    let mut carry = vec![T::ZERO; 2 * bh];
    let (blocks, par) = row_blocks(b, 2 * t_len * b * hd * g4);
    let mut dps: Vec<Vec<T>> = blocks.iter().map(|_| vec![T::ZERO; if peep { 3 * hd } else { 0 }]).collect();
    let args = LstmArgs::new(&s.inputs, &s.keep, par);
    let jobs: Vec<LstmBackJob<T>> = split_rows(&mut da, t_len * g4, &blocks)
        .into_iter()
        .zip(split_rows(&mut carry, 2 * hd, &blocks))
        .zip(dps.iter_mut())
        .zip(&blocks)
        .map(|(((da, carry), dp), rows)| LstmBackJob { rows: rows.clone(), da, carry, dp })
        .collect();
    let (outd, gd, saved): (&[T], &[T], [&[T]; 2]) = (&out.data, &g.data, [&s.gates, &s.tanh_c]);
    chi_kernels::threads::run_each(jobs, |job| lstm_backward_rows(&args, saved, outd, gd, &wt, job));
    let (dh0, dc0) = deinterleave(&carry, hd);
    let (dh0, dc0) = (need[1].then(|| Tensor::from_vec(dh0, h0.shape())), need[2].then(|| Tensor::from_vec(dc0, c0.shape())));
    // dW = Σ_{t,b} h_{t−1,b}ᵀ·da_{t,b}: one product over the previous states stacked in da's
    // batch-major order, [B·T, H].
    let dw = need[3].then(|| {
        let hprev = previous_states_batch_major(&h0.data, &out.data, b, t_len, hd, 2 * hd);
        let dw = Tensor::from_vec(at_b(MatRef::row_major(&hprev, t_len * b, hd), MatRef::row_major(&da, t_len * b, g4)), w.shape());
        pool::recycle_vec(hprev);
        dw
    });
    // da is batch-major, xp's own layout: it is xp's gradient.
    let dxp = if need[0] { Some(Tensor::from_vec(da, xp.shape())) } else {
        pool::recycle_vec(da);
        None
    };
    let mut grads = vec![dxp, dh0, dc0, dw];
    if peep {
        let dp = sum_blocks(&dps);
        for q in 0..3 {
            grads.push(need[4 + q].then(|| Tensor::from_vec(dp[q * hd..(q + 1) * hd].to_vec(), &[hd])));
        }
    }
    grads
}

// ------------------------------------------------------------------------- GRU over a sequence

/// Saved state of a fused GRU sequence ([`Tensor::gru_sequence`]).
#[derive(Clone)]
pub struct GruSeqSaved<T: Float> {
    /// `xp, h0, w_hh, w_hn` and, with the reset after the product, `b_hn`.
    pub inputs: Vec<Tensor<T>>,
    /// `keep[t·B + b]`: whether row `b` steps at time `t` (else its state is carried).
    pub keep: Option<Rc<Vec<bool>>>,
    /// Gates `r, z` of every step, `[T, B, 2H]`.
    pub rz: Vec<T>,
    /// Candidates `n` of every step, `[T, B, H]`.
    pub n: Vec<T>,
    /// `h·W_hn + b_hn` (reset after) or `r⊙h` (reset before) of every step, `[T, B, H]`.
    pub hn: Vec<T>,
}

impl<T: Float> Drop for GruSeqSaved<T> {
    /// As for [`LstmSeqSaved`]: the work buffers go back to the pool.
    fn drop(&mut self) {
        for v in [&mut self.rz, &mut self.n, &mut self.hn] {
            pool::recycle_vec(std::mem::take(v));
        }
    }
}

/// What every row block of a GRU sequence reads.
struct GruArgs<'a, T> {
    b: usize,
    hd: usize,
    t_len: usize,
    /// `[B, T, 3H]`.
    xp: &'a [T],
    h0: &'a [T],
    /// `Some` for the reset after the candidate's product.
    b_hn: Option<&'a [T]>,
    keep: Option<&'a [bool]>,
    par: Par,
}

impl<'a, T: Float> GruArgs<'a, T> {
    fn new(s: &'a [Tensor<T>], keep: &'a Option<Rc<Vec<bool>>>, par: Par) -> Self {
        let (xp, h0) = (&s[0], &s[1]);
        GruArgs {
            b: h0.shape()[0],
            hd: h0.shape()[1],
            t_len: xp.shape()[1],
            xp: &xp.data,
            h0: &h0.data,
            b_hn: s.get(4).map(|t| &t.data[..]),
            keep: keep.as_deref().map(|k| &k[..]),
            par,
        }
    }
}

/// One row block's part of the forward pass: its rows of every step's gates, candidate, `hn`
/// and output.
struct GruFwdJob<'a, T> {
    rows: Range<usize>,
    rz: Vec<&'a mut [T]>,
    n: Vec<&'a mut [T]>,
    hn: Vec<&'a mut [T]>,
    out: Vec<&'a mut [T]>,
}

fn gru_forward_rows<T: Float>(a: &GruArgs<T>, w_hh: &gemm::PackedB<T>, w_hn: &gemm::PackedB<T>, job: GruFwdJob<T>) {
    let GruFwdJob { rows, mut rz, mut n, mut hn, mut out } = job;
    let (hd, g3, nb) = (a.hd, 3 * a.hd, rows.len());
    let mut un = vec![T::ZERO; if a.b_hn.is_some() { 0 } else { nb * hd }];
    for t in 0..a.t_len {
        let xt = step_rows(a.xp, rows.start, t, a.t_len, g3);
        let (done, rest) = out.split_at_mut(t);
        let h_new = &mut *rest[0];
        let h_prev: &[T] = if t == 0 { &a.h0[rows.start * hd..rows.end * hd] } else { &*done[t - 1] };
        let (rzt, nt, hnt) = (&mut *rz[t], &mut *n[t], &mut *hn[t]);
        let hm = MatRef::row_major(h_prev, nb, hd);
        gemm::gemm_packed_par(a.par, T::ONE, hm, w_hh, T::ZERO, MatMut::row_major(rzt, nb, 2 * hd));
        if let Some(bn) = a.b_hn {
            for row in hnt.chunks_exact_mut(hd.max(1)) {
                row.copy_from_slice(bn);
            }
            gemm::gemm_packed_par(a.par, T::ONE, hm, w_hn, T::ONE, MatMut::row_major(hnt, nb, hd));
            k::gru_forward(nb, hd, true, xt, rzt, hnt, h_prev, nt, h_new);
        } else {
            // hn holds u = r⊙h; the candidate's product goes to `un`.
            k::gru_reset(nb, hd, xt, rzt, h_prev, hnt);
            gemm::gemm_packed_par(a.par, T::ONE, MatRef::row_major(hnt, nb, hd), w_hn, T::ZERO, MatMut::row_major(&mut un, nb, hd));
            k::gru_forward(nb, hd, false, xt, rzt, &un, h_prev, nt, h_new);
        }
        if let Some(kp) = a.keep {
            for (i, _) in rows.clone().enumerate().filter(|&(_, r)| !kp[t * a.b + r]) {
                h_new[i * hd..(i + 1) * hd].copy_from_slice(&h_prev[i * hd..(i + 1) * hd]);
            }
        }
    }
}

impl<T: Float> Tensor<T> {
    /// A whole GRU sequence as one op: the step of [`Tensor::gru_cell`] (either reset form:
    /// `b_hn = Some` for PyTorch's reset after the product, `None` for the seeds' reset before
    /// it) applied for `t = 0 … T−1` to `xp [B, T, 3H]` (the projected inputs of all steps,
    /// batch-major), from `h0 [B, H]`. As [`Tensor::lstm_sequence`]: both recurrent weights are
    /// packed once (their transposes once for the backward pass), each weight gradient is one
    /// product over all steps, and a large enough batch is split into row blocks over the
    /// pool's threads.
    ///
    /// With `keep` (`T·B` flags, `keep[t·B + b]`), a row whose flag is false at step `t` keeps
    /// its previous state (no gradient flows through the padding).
    ///
    /// Returns the state of every step, time-major `[T, B, H]`.
    ///
    /// ```
    /// use chi_autodiff::Tensor;
    /// let (b, t, h) = (2, 3, 4);
    /// let xp = Tensor::<f64>::full(&[b, t, 3 * h], 0.1);
    /// let (w_hh, w_hn) = (Tensor::full(&[h, 2 * h], 0.2), Tensor::full(&[h, h], -0.1));
    /// let hs = Tensor::gru_sequence(&xp, &Tensor::zeros(&[b, h]), &w_hh, &w_hn, None, None);
    /// assert_eq!(hs.shape(), [t, b, h]);
    /// // Step 0 from h = 0: z = σ(0.1), n = tanh(0.1), h1 = (1 − z)·n.
    /// let z = 1.0 / (1.0 + (-0.1f64).exp());
    /// assert!((hs.data()[0] - (1.0 - z) * 0.1f64.tanh()).abs() < 1e-15);
    /// ```
    ///
    /// # Panics
    /// If a shape disagrees or `keep` has the wrong length (the message names `gru_sequence`).
    #[track_caller]
    pub fn gru_sequence(xp: &Tensor<T>, h0: &Tensor<T>, w_hh: &Tensor<T>, w_hn: &Tensor<T>, b_hn: Option<&Tensor<T>>, keep: Option<Rc<Vec<bool>>>) -> Tensor<T> {
        let op = "gru_sequence";
        let loc = Location::caller();
        assert!(h0.rank() == 2, "{op}: h0 must be [batch, hidden], got {:?}", h0.shape());
        let (b, hd) = (h0.shape()[0], h0.shape()[1]);
        assert!(xp.rank() == 3 && xp.shape()[0] == b && xp.shape()[2] == 3 * hd, "{op}: xp has shape {:?}, expected [{b}, T, {}]", xp.shape(), 3 * hd);
        let t_len = xp.shape()[1];
        check_2d(op, "w_hh", w_hh, [hd, 2 * hd]);
        check_2d(op, "w_hn", w_hn, [hd, hd]);
        if let Some(bn) = b_hn {
            assert!(bn.shape() == [hd], "{op}: b_hn has shape {:?}, expected [{hd}]", bn.shape());
        }
        if let Some(k) = &keep {
            assert!(k.len() == t_len * b, "{op}: keep has {} flags for {t_len} steps × batch {b}", k.len());
        }
        let mut inputs: Vec<Tensor<T>> = vec![xp.clone(), h0.clone(), w_hh.clone(), w_hn.clone()];
        inputs.extend(b_hn.cloned());
        let (p_hh, p_hn) = (gemm::PackedB::new(row_major(w_hh)), gemm::PackedB::new(row_major(w_hn)));
        let bh = b * hd;
        // Every element of these is written below (by the products and the step kernels), so
        // recycled buffers are taken as they are.
        let (mut rz, mut n, mut hn) = (pool::vec_for_overwrite(t_len * 2 * bh), pool::vec_for_overwrite(t_len * bh), pool::vec_for_overwrite(t_len * bh));
        let mut out = pool::for_overwrite(t_len * bh);
        let (blocks, par) = row_blocks(b, 2 * t_len * b * hd * 3 * hd);
        let args = GruArgs::new(&inputs, &keep, par);
        let jobs: Vec<GruFwdJob<T>> = split_steps(&mut rz, t_len, 2 * hd, &blocks)
            .into_iter()
            .zip(split_steps(&mut n, t_len, hd, &blocks))
            .zip(split_steps(&mut hn, t_len, hd, &blocks))
            .zip(split_steps(&mut out, t_len, hd, &blocks))
            .zip(&blocks)
            .map(|((((rz, n), hn), out), rows)| GruFwdJob { rows: rows.clone(), rz, n, hn, out })
            .collect();
        chi_kernels::threads::run_each(jobs, |job| gru_forward_rows(&args, &p_hh, &p_hn, job));
        let refs: Vec<&Tensor<T>> = inputs.iter().collect();
        // Built before recording, so that untracked (its buffers are then recycled on drop).
        let saved = GruSeqSaved { inputs: inputs.clone(), keep, rz, n, hn };
        record(out, Shape::new(&[t_len, b, hd]), &refs, loc, move |_| Op::GruSequence(Box::new(saved)))
    }
}

/// The GRU sequence composed of single ops (per-step [`gru_cell_composed`], carried rows by
/// `where_`, states stacked time-major): the reference of [`Tensor::gru_sequence`] and its
/// second-order rule.
pub fn gru_sequence_composed<T: Float>(xp: &Tensor<T>, h0: &Tensor<T>, w_hh: &Tensor<T>, w_hn: &Tensor<T>, b_hn: Option<&Tensor<T>>, keep: Option<&[bool]>) -> Tensor<T> {
    let (b, hd, t_len) = (h0.shape()[0], h0.shape()[1], xp.shape()[1]);
    let mut h = h0.clone();
    let mut states = Vec::with_capacity(t_len);
    for t in 0..t_len {
        let xt = xp.narrow(1, t, 1).reshape(&[b, 3 * hd]);
        let hn = gru_cell_composed(&xt, &h, w_hh, w_hn, b_hn);
        h = match keep {
            Some(k) if !k[t * b..(t + 1) * b].iter().all(|&v| v) => {
                let m: Vec<bool> = k[t * b..(t + 1) * b].iter().flat_map(|&v| std::iter::repeat_n(v, hd)).collect();
                Tensor::where_(&m, &[b, hd], &hn, &h)
            }
            _ => hn,
        };
        states.push(h.clone());
    }
    Tensor::stack(&states, 0)
}

/// One row block's part of the backward pass: its rows of the pre-activation gradient and
/// (reset after) of `∂L/∂hn`, batch-major (`[rows, T, 3H]`, `xp`'s layout, and `[rows, T, H]`),
/// and the gradient carried to the previous state (`[rows, H]`; on return that of `h0`).
struct GruBackJob<'a, T> {
    rows: Range<usize>,
    da: &'a mut [T],
    dhn: &'a mut [T],
    carry: &'a mut [T],
}

/// The transposed recurrent weights a GRU's backward pass multiplies by.
struct GruWeightsT<T> {
    w_hh: gemm::PackedB<T>,
    w_hn: gemm::PackedB<T>,
}

/// `saved` holds the forward pass's `rz`, `n` and `hn` (`[T, B, 2H]`, `[T, B, H]`, `[T, B, H]`).
fn gru_backward_rows<T: Float>(a: &GruArgs<T>, saved: [&[T]; 3], out: &[T], g: &[T], wt: &GruWeightsT<T>, job: GruBackJob<T>) {
    let GruBackJob { rows, da, dhn, carry } = job;
    let ra = a.b_hn.is_some();
    let (hd, g3, nb, b, t_len) = (a.hd, 3 * a.hd, rows.len(), a.b, a.t_len);
    let (r0, r1) = (rows.start, rows.end);
    let mut gt = vec![T::ZERO; nb * hd];
    let mut dh = vec![T::ZERO; nb * hd];
    let mut du = vec![T::ZERO; if ra { 0 } else { nb * hd }];
    let mut dhn_scratch = vec![T::ZERO; if ra { 0 } else { hd }];
    let mut carried: Vec<usize> = Vec::new();
    for t in (0..t_len).rev() {
        let st = t * b * hd;
        gt.copy_from_slice(&g[st + r0 * hd..st + r1 * hd]);
        chi_kernels::elementwise::axpy(T::ONE, carry, &mut gt);
        // Carried rows pass their whole gradient to the previous state; the step sees zero.
        carried.clear();
        if let Some(kp) = a.keep {
            carried.extend((0..nb).filter(|&i| !kp[t * b + r0 + i]));
        }
        for &i in &carried {
            carry[i * hd..(i + 1) * hd].copy_from_slice(&gt[i * hd..(i + 1) * hd]);
            gt[i * hd..(i + 1) * hd].fill(T::ZERO);
        }
        let h_prev: &[T] = if t == 0 { &a.h0[r0 * hd..r1 * hd] } else { &out[st - b * hd + r0 * hd..st - b * hd + r1 * hd] };
        let rzt = &saved[0][(t * b + r0) * 2 * hd..(t * b + r1) * 2 * hd];
        let (nt, hnt) = (&saved[1][st + r0 * hd..st + r1 * hd], &saved[2][st + r0 * hd..st + r1 * hd]);
        // One row at a time, so each row's gradients go straight to their batch-major places.
        for i in 0..nb {
            let (q, o) = (i * hd..(i + 1) * hd, (i * t_len + t) * hd);
            let dat = &mut da[(i * t_len + t) * g3..(i * t_len + t + 1) * g3];
            let dhni: &mut [T] = if ra { &mut dhn[o..o + hd] } else { &mut dhn_scratch };
            k::gru_backward(1, hd, ra, &rzt[2 * i * hd..2 * (i + 1) * hd], &nt[q.clone()], &h_prev[q.clone()], &hnt[q.clone()], &gt[q.clone()], dat, dhni, &mut dh[q]);
        }
        if ra {
            gemm::gemm_packed_par(a.par, T::ONE, step_cols(dhn, t, t_len, nb, hd, 0, hd), &wt.w_hn, T::ONE, MatMut::row_major(&mut dh, nb, hd));
        } else {
            // u = r⊙h feeds the candidate's product: du = da_n·W_hnᵀ, then the r block.
            gemm::gemm_packed_par(a.par, T::ONE, step_cols(da, t, t_len, nb, g3, 2 * hd, hd), &wt.w_hn, T::ZERO, MatMut::row_major(&mut du, nb, hd));
            for i in 0..nb {
                let q = i * hd..(i + 1) * hd;
                let dat = &mut da[(i * t_len + t) * g3..(i * t_len + t + 1) * g3];
                k::gru_backward_reset(1, hd, &rzt[2 * i * hd..2 * (i + 1) * hd], &h_prev[q.clone()], &du[q.clone()], dat, &mut dh[q]);
            }
        }
        gemm::gemm_packed_par(a.par, T::ONE, step_cols(da, t, t_len, nb, g3, 0, 2 * hd), &wt.w_hh, T::ONE, MatMut::row_major(&mut dh, nb, hd));
        for i in (0..nb).filter(|i| !carried.contains(i)) {
            carry[i * hd..(i + 1) * hd].copy_from_slice(&dh[i * hd..(i + 1) * hd]);
        }
    }
}

/// Backward of [`Tensor::gru_sequence`]. Gradients in input order (`xp, h0, w_hh, w_hn`,
/// `b_hn`).
pub(crate) fn gru_sequence_backward<T: Float>(s: &GruSeqSaved<T>, out: &Tensor<T>, g: &Tensor<T>, need: &[bool], fast: bool) -> Vec<Option<Tensor<T>>> {
    if !fast {
        return sequence_recorded_backward("gru_sequence", &s.inputs, g, |x| gru_sequence_composed(&x[0], &x[1], &x[2], &x[3], x.get(4), s.keep.as_deref().map(|k| &k[..])));
    }
    let (xp, h0, w_hh, w_hn) = (&s.inputs[0], &s.inputs[1], &s.inputs[2], &s.inputs[3]);
    let (b, hd, t_len) = (h0.shape()[0], h0.shape()[1], xp.shape()[1]);
    let (g3, bh) = (3 * hd, b * hd);
    let ra = s.inputs.len() == 5;
    let wt = GruWeightsT { w_hh: gemm::PackedB::new(row_major(w_hh).t()), w_hn: gemm::PackedB::new(row_major(w_hn).t()) };
    // Written whole by the step kernels (carried rows get zeros).
    let mut da = pool::vec_for_overwrite(t_len * b * g3);
    let mut dhn = pool::vec_for_overwrite(if ra { t_len * bh } else { 0 });
    // Gradient reaching the state of step t from later steps, [B, H].
    let mut carry = vec![T::ZERO; bh];
    let (blocks, par) = row_blocks(b, 2 * t_len * b * hd * g3);
    let args = GruArgs::new(&s.inputs, &s.keep, par);
    let jobs: Vec<GruBackJob<T>> = split_rows(&mut da, t_len * g3, &blocks)
        .into_iter()
        .zip(split_rows(&mut dhn, if ra { t_len * hd } else { 0 }, &blocks))
        .zip(split_rows(&mut carry, hd, &blocks))
        .zip(&blocks)
        .map(|(((da, dhn), carry), rows)| GruBackJob { rows: rows.clone(), da, dhn, carry })
        .collect();
    let (outd, gd, saved): (&[T], &[T], [&[T]; 3]) = (&out.data, &g.data, [&s.rz, &s.n, &s.hn]);
    chi_kernels::threads::run_each(jobs, |job| gru_backward_rows(&args, saved, outd, gd, &wt, job));
    // Weight gradients: sums over (b, t) of products of previous states with da's rows, in
    // da's batch-major order.
    let tb = t_len * b;
    let mut dw_hh = None;
    let mut dw_hn = None;
    if need[2] || (need[3] && ra) {
        let hp = previous_states_batch_major(&h0.data, &out.data, b, t_len, hd, hd);
        let hm = MatRef::row_major(&hp, tb, hd);
        dw_hh = need[2].then(|| Tensor::from_vec(at_b(hm, cols_of(&da, tb, g3, 0, 2 * hd)), w_hh.shape()));
        if ra && need[3] {
            dw_hn = Some(Tensor::from_vec(at_b(hm, MatRef::row_major(&dhn, tb, hd)), w_hn.shape()));
        }
        pool::recycle_vec(hp);
    }
    if !ra && need[3] {
        let u = to_batch_major(&s.hn, b, t_len, hd);
        dw_hn = Some(Tensor::from_vec(at_b(MatRef::row_major(&u, tb, hd), cols_of(&da, tb, g3, 2 * hd, hd)), w_hn.shape()));
        pool::recycle_vec(u);
    }
    let mut grads = vec![None, need[1].then(|| Tensor::from_vec(carry, h0.shape())), dw_hh, dw_hn];
    if ra {
        grads.push(need[4].then(|| {
            let mut d = vec![T::ZERO; hd];
            for row in dhn.chunks_exact(hd.max(1)) {
                chi_kernels::elementwise::axpy(T::ONE, row, &mut d);
            }
            Tensor::from_vec(d, &[hd])
        }));
    }
    // da is batch-major, xp's own layout: it is xp's gradient.
    if need[0] {
        grads[0] = Some(Tensor::from_vec(da, xp.shape()));
    } else {
        pool::recycle_vec(da);
    }
    pool::recycle_vec(dhn);
    grads
}

// ---------------------------------------------------------------------- CA-RNN over a sequence

/// Saved state of a fused CA-RNN sequence ([`Tensor::ca_rnn_sequence`]).
#[derive(Clone)]
pub struct CaRnnSeqSaved<T: Float> {
    /// `xp, y0, c0, w_r, w_z, p_v`.
    pub inputs: Vec<Tensor<T>>,
    /// `keep[t·B + b]`: whether row `b` steps at time `t` (else its state is carried).
    pub keep: Option<Rc<Vec<bool>>>,
    /// Activations of every step, `[T, B, 4n+2]` (blocks as in [`chi_kernels::rnn::ca_rnn_width`]).
    pub act: Vec<T>,
}

impl<T: Float> Drop for CaRnnSeqSaved<T> {
    /// As for [`LstmSeqSaved`]: the activations go back to the pool.
    fn drop(&mut self) {
        pool::recycle_vec(std::mem::take(&mut self.act));
    }
}

/// What every row block of a CA-RNN sequence reads.
struct CaArgs<'a, T> {
    b: usize,
    n: usize,
    t_len: usize,
    /// `[B, T, 4n+2]`.
    xp: &'a [T],
    y0: &'a [T],
    c0: &'a [T],
    p_v: &'a [T],
    keep: Option<&'a [bool]>,
    par: Par,
}

impl<'a, T: Float> CaArgs<'a, T> {
    fn new(s: &'a [Tensor<T>], keep: &'a Option<Rc<Vec<bool>>>, par: Par) -> Self {
        let (xp, y0) = (&s[0], &s[1]);
        CaArgs { b: y0.shape()[0], n: y0.shape()[1], t_len: xp.shape()[1], xp: &xp.data, y0: &y0.data, c0: &s[2].data, p_v: &s[5].data, keep: keep.as_deref().map(|k| &k[..]), par }
    }

    /// The initial states `[y0, c0]` of `rows`, `[rows, 2n]`.
    fn initial(&self, rows: &Range<usize>) -> Vec<T> {
        let n = self.n;
        let mut s = Vec::with_capacity(rows.len() * 2 * n);
        for r in rows.clone() {
            s.extend_from_slice(&self.y0[r * n..(r + 1) * n]);
            s.extend_from_slice(&self.c0[r * n..(r + 1) * n]);
        }
        s
    }
}

/// One row block's part of the forward pass: its rows of every step's activations and output.
struct CaFwdJob<'a, T> {
    rows: Range<usize>,
    act: Vec<&'a mut [T]>,
    out: Vec<&'a mut [T]>,
}

/// The columns `o, vᵒ` of a `[rows, 4n+2]` pre-activation buffer: where `c_t·W_z` lands.
fn o_cols<T>(a: &mut [T], rows: usize, n: usize) -> MatMut<'_, T> {
    MatMut { data: &mut a[2 * n + 1..], rows, cols: n + 1, rs: k::ca_rnn_width(n), cs: 1 }
}

fn ca_rnn_forward_rows<T: Float>(a: &CaArgs<T>, w: &[gemm::PackedB<T>; 2], job: CaFwdJob<T>) {
    let CaFwdJob { rows, mut act, mut out } = job;
    let (n, width, nb) = (a.n, k::ca_rnn_width(a.n), rows.len());
    if nb == 0 {
        return;
    }
    let s0 = a.initial(&rows);
    let mut c_prev = a.c0[rows.start * n..rows.end * n].to_vec();
    let (mut c_new, mut y_new) = (vec![T::ZERO; nb * n], vec![T::ZERO; nb * n]);
    for t in 0..a.t_len {
        let at = &mut *act[t];
        for (i, r) in rows.clone().enumerate() {
            let src = (r * a.t_len + t) * width;
            at[i * width..(i + 1) * width].copy_from_slice(&a.xp[src..src + width]);
        }
        let (done, rest) = out.split_at_mut(t);
        let o = &mut *rest[0];
        let s_prev: &[T] = if t == 0 { &s0 } else { &*done[t - 1] };
        gemm::gemm_packed_par(a.par, T::ONE, MatRef::row_major(s_prev, nb, 2 * n), &w[0], T::ONE, MatMut::row_major(at, nb, width));
        k::ca_rnn_forward_cell(nb, n, at, &c_prev, a.p_v, &mut c_new);
        gemm::gemm_packed_par(a.par, T::ONE, MatRef::row_major(&c_new, nb, n), &w[1], T::ONE, o_cols(at, nb, n));
        k::ca_rnn_forward_output(nb, n, at, &mut y_new);
        for (i, r) in rows.clone().enumerate() {
            let row = &mut o[i * 2 * n..(i + 1) * 2 * n];
            if a.keep.is_some_and(|kp| !kp[t * a.b + r]) {
                row.copy_from_slice(&s_prev[i * 2 * n..(i + 1) * 2 * n]);
            } else {
                row[..n].copy_from_slice(&y_new[i * n..(i + 1) * n]);
                row[n..].copy_from_slice(&c_new[i * n..(i + 1) * n]);
            }
            c_prev[i * n..(i + 1) * n].copy_from_slice(&row[n..]);
        }
    }
}

impl<T: Float> Tensor<T> {
    /// A whole CA-RNN sequence as one op (*Context Aware Machine Learning*, Eqs. 34 and 36, with
    /// every activation `tanh` and a vector peephole), from the state `y0, c0 [B, n]`:
    ///
    /// ```text
    /// a_t = xp_t + [y_{t−1}, c_{t−1}]·W_r            (blocks f, v, c', o, vᵒ, cᵒ; width 4n+2)
    /// f = σ(a_f)   v = tanh(a_v + p_v⊙c_{t−1})   c' = tanh(a_c')
    /// c_t = f·v + (1 − f)·c'                        (f a scalar per row)
    /// [z_o, z_v] = c_t·W_z
    /// o = σ(a_o + z_o)   vᵒ = tanh(a_vᵒ + z_v)   cᵒ = tanh(a_cᵒ)
    /// y_t = o·vᵒ + (1 − o)·cᵒ
    /// ```
    ///
    /// `xp [B, T, 4n+2]` holds the input terms of all steps (`x_t·W_x + b`, one matmul),
    /// `w_r [2n, 4n+2]` the recurrent weights over `[y, c]`, `w_z [n, n+1]` the weights of the
    /// new cell state in the output (`[z_o | Z_v]`), `p_v [n]` the peephole. As
    /// [`Tensor::lstm_sequence`]: both weights packed once, one product per weight gradient,
    /// row blocks over the pool's threads for a large enough batch, and `keep` for ragged
    /// lengths. `chi-ca`'s `CaRnnCell` builds these operands from its parameters.
    ///
    /// Returns the states of every step, time-major `[T, B, 2n]`: `out[t, b] = [y_t, c_t]`.
    ///
    /// # Panics
    /// If a shape disagrees or `keep` has the wrong length (the message names `ca_rnn_sequence`).
    #[track_caller]
    pub fn ca_rnn_sequence(xp: &Tensor<T>, y0: &Tensor<T>, c0: &Tensor<T>, w_r: &Tensor<T>, w_z: &Tensor<T>, p_v: &Tensor<T>, keep: Option<Rc<Vec<bool>>>) -> Tensor<T> {
        let op = "ca_rnn_sequence";
        let loc = Location::caller();
        assert!(y0.rank() == 2, "{op}: y0 must be [batch, hidden], got {:?}", y0.shape());
        let (b, n) = (y0.shape()[0], y0.shape()[1]);
        let width = k::ca_rnn_width(n);
        assert!(xp.rank() == 3 && xp.shape()[0] == b && xp.shape()[2] == width, "{op}: xp has shape {:?}, expected [{b}, T, {width}]", xp.shape());
        let t_len = xp.shape()[1];
        check_2d(op, "c0", c0, [b, n]);
        check_2d(op, "w_r", w_r, [2 * n, width]);
        check_2d(op, "w_z", w_z, [n, n + 1]);
        assert!(p_v.shape() == [n], "{op}: p_v has shape {:?}, expected [{n}]", p_v.shape());
        if let Some(k) = &keep {
            assert!(k.len() == t_len * b, "{op}: keep has {} flags for {t_len} steps × batch {b}", k.len());
        }
        let inputs: Vec<Tensor<T>> = [xp, y0, c0, w_r, w_z, p_v].into_iter().cloned().collect();
        let packed = [gemm::PackedB::new(row_major(w_r)), gemm::PackedB::new(row_major(w_z))];
        // Every element of these is written below (act: the copied inputs, then the products
        // added and the activations; out: each row stepped or carried), so recycled buffers are
        // taken as they are.
        let mut act = pool::vec_for_overwrite(t_len * b * width);
        let mut out = pool::for_overwrite(t_len * 2 * b * n);
        let (blocks, par) = row_blocks(b, 2 * t_len * b * (2 * n * width + n * (n + 1)));
        let args = CaArgs::new(&inputs, &keep, par);
        let jobs: Vec<CaFwdJob<T>> = split_steps(&mut act, t_len, width, &blocks)
            .into_iter()
            .zip(split_steps(&mut out, t_len, 2 * n, &blocks))
            .zip(&blocks)
            .map(|((act, out), rows)| CaFwdJob { rows: rows.clone(), act, out })
            .collect();
        chi_kernels::threads::run_each(jobs, |job| ca_rnn_forward_rows(&args, &packed, job));
        let refs: Vec<&Tensor<T>> = inputs.iter().collect();
        // Built before recording, so that untracked (its buffer is then recycled on drop).
        let saved = CaRnnSeqSaved { inputs: inputs.clone(), keep, act };
        record(out, Shape::new(&[t_len, b, 2 * n]), &refs, loc, move |_| Op::CaRnnSequence(Box::new(saved)))
    }
}

/// The CA-RNN sequence composed of single ops: the reference of [`Tensor::ca_rnn_sequence`] and
/// its second-order rule.
pub fn ca_rnn_sequence_composed<T: Float>(xp: &Tensor<T>, y0: &Tensor<T>, c0: &Tensor<T>, w_r: &Tensor<T>, w_z: &Tensor<T>, p_v: &Tensor<T>, keep: Option<&[bool]>) -> Tensor<T> {
    let (b, n, t_len) = (y0.shape()[0], y0.shape()[1], xp.shape()[1]);
    let width = k::ca_rnn_width(n);
    let (mut y, mut c) = (y0.clone(), c0.clone());
    let mut states = Vec::with_capacity(t_len);
    for t in 0..t_len {
        let a = xp.narrow(1, t, 1).reshape(&[b, width]).add(&Tensor::concat(&[y.clone(), c.clone()], 1).matmul(w_r));
        let f = a.narrow(1, 0, 1).sigmoid();
        let v = a.narrow(1, 1, n).add(&c.mul(p_v)).tanh();
        let cp = a.narrow(1, n + 1, n).tanh();
        let c_new = cp.add(&f.mul(&v.sub(&cp)));
        let z = c_new.matmul(w_z);
        let o = a.narrow(1, 2 * n + 1, 1).add(&z.narrow(1, 0, 1)).sigmoid();
        let vo = a.narrow(1, 2 * n + 2, n).add(&z.narrow(1, 1, n)).tanh();
        let co = a.narrow(1, 3 * n + 2, n).tanh();
        let y_new = co.add(&o.mul(&vo.sub(&co)));
        match keep {
            Some(kp) if !kp[t * b..(t + 1) * b].iter().all(|&v| v) => {
                let m: Vec<bool> = kp[t * b..(t + 1) * b].iter().flat_map(|&v| std::iter::repeat_n(v, n)).collect();
                y = Tensor::where_(&m, &[b, n], &y_new, &y);
                c = Tensor::where_(&m, &[b, n], &c_new, &c);
            }
            _ => (y, c) = (y_new, c_new),
        }
        states.push(Tensor::concat(&[y.clone(), c.clone()], 1));
    }
    Tensor::stack(&states, 0)
}

/// One row block's part of the backward pass: its rows of every step's pre-activation
/// gradient, the gradient carried to the previous state (`[rows, 2n]` as `[y, c]`; on return
/// that of `[y0, c0]`) and its share of the peephole gradient (`[n]`).
struct CaBackJob<'a, T> {
    rows: Range<usize>,
    da: Vec<&'a mut [T]>,
    carry: &'a mut [T],
    dp: &'a mut [T],
}

/// `saved` is the forward pass's activations `[T, B, 4n+2]`; `wt` the packed `W_rᵀ`, `W_zᵀ`.
fn ca_rnn_backward_rows<T: Float>(a: &CaArgs<T>, saved: &[T], out: &[T], g: &[T], wt: &[gemm::PackedB<T>; 2], job: CaBackJob<T>) {
    let CaBackJob { rows, mut da, carry, dp } = job;
    let (n, width, nb, b) = (a.n, k::ca_rnn_width(a.n), rows.len(), a.b);
    let (r0, r1) = (rows.start, rows.end);
    if nb == 0 {
        return;
    }
    let mut gt = vec![T::ZERO; nb * 2 * n];
    let (mut gy, mut gc, mut c_prev, mut dc) = (vec![T::ZERO; nb * n], vec![T::ZERO; nb * n], vec![T::ZERO; nb * n], vec![T::ZERO; nb * n]);
    let mut ds = vec![T::ZERO; nb * 2 * n];
    let mut carried: Vec<usize> = Vec::new();
    for t in (0..a.t_len).rev() {
        let s2 = t * 2 * b * n;
        gt.copy_from_slice(&g[s2 + r0 * 2 * n..s2 + r1 * 2 * n]);
        chi_kernels::elementwise::axpy(T::ONE, carry, &mut gt);
        // Carried rows pass their whole gradient to the previous state; the step sees zero.
        carried.clear();
        if let Some(kp) = a.keep {
            carried.extend((0..nb).filter(|&i| !kp[t * b + r0 + i]));
        }
        for &i in &carried {
            carry[i * 2 * n..(i + 1) * 2 * n].copy_from_slice(&gt[i * 2 * n..(i + 1) * 2 * n]);
            gt[i * 2 * n..(i + 1) * 2 * n].fill(T::ZERO);
        }
        for i in 0..nb {
            gy[i * n..(i + 1) * n].copy_from_slice(&gt[i * 2 * n..i * 2 * n + n]);
            gc[i * n..(i + 1) * n].copy_from_slice(&gt[i * 2 * n + n..(i + 1) * 2 * n]);
            let r = r0 + i;
            let src = if t == 0 { &a.c0[r * n..(r + 1) * n] } else { &out[s2 - 2 * b * n + r * 2 * n + n..s2 - 2 * b * n + (r + 1) * 2 * n] };
            c_prev[i * n..(i + 1) * n].copy_from_slice(src);
        }
        let at = &saved[(t * b + r0) * width..(t * b + r1) * width];
        let dat = &mut *da[t];
        k::ca_rnn_backward_output(nb, n, at, &gy, dat);
        // c_t also feeds the output's o and vᵒ through W_z.
        gemm::gemm_packed_par(a.par, T::ONE, cols_of(dat, nb, width, 2 * n + 1, n + 1), &wt[1], T::ONE, MatMut::row_major(&mut gc, nb, n));
        k::ca_rnn_backward_cell(nb, n, at, &c_prev, a.p_v, &gc, dat, &mut dc, dp);
        gemm::gemm_packed_par(a.par, T::ONE, MatRef::row_major(dat, nb, width), &wt[0], T::ZERO, MatMut::row_major(&mut ds, nb, 2 * n));
        for i in (0..nb).filter(|i| !carried.contains(i)) {
            carry[i * 2 * n..(i + 1) * 2 * n].copy_from_slice(&ds[i * 2 * n..(i + 1) * 2 * n]);
            chi_kernels::elementwise::axpy(T::ONE, &dc[i * n..(i + 1) * n], &mut carry[i * 2 * n + n..(i + 1) * 2 * n]);
        }
    }
}

/// Backward of [`Tensor::ca_rnn_sequence`]. Gradients in input order (`xp, y0, c0, w_r, w_z,
/// p_v`).
pub(crate) fn ca_rnn_sequence_backward<T: Float>(s: &CaRnnSeqSaved<T>, out: &Tensor<T>, g: &Tensor<T>, need: &[bool], fast: bool) -> Vec<Option<Tensor<T>>> {
    if !fast {
        return sequence_recorded_backward("ca_rnn_sequence", &s.inputs, g, |x| ca_rnn_sequence_composed(&x[0], &x[1], &x[2], &x[3], &x[4], &x[5], s.keep.as_deref().map(|k| &k[..])));
    }
    let (xp, y0, c0, w_r, w_z) = (&s.inputs[0], &s.inputs[1], &s.inputs[2], &s.inputs[3], &s.inputs[4]);
    let (b, n, t_len) = (y0.shape()[0], y0.shape()[1], xp.shape()[1]);
    let width = k::ca_rnn_width(n);
    let wt = [gemm::PackedB::new(row_major(w_r).t()), gemm::PackedB::new(row_major(w_z).t())];
    // Written whole by the two step kernels (the cell's blocks and the output's; carried rows
    // get zeros).
    let mut da = pool::vec_for_overwrite(t_len * b * width);
    let mut carry = vec![T::ZERO; 2 * b * n];
    let (blocks, par) = row_blocks(b, 2 * t_len * b * (2 * n * width + n * (n + 1)));
    let mut dps: Vec<Vec<T>> = blocks.iter().map(|_| vec![T::ZERO; n]).collect();
    let args = CaArgs::new(&s.inputs, &s.keep, par);
    let jobs: Vec<CaBackJob<T>> = split_steps(&mut da, t_len, width, &blocks)
        .into_iter()
        .zip(split_rows(&mut carry, 2 * n, &blocks))
        .zip(dps.iter_mut())
        .zip(&blocks)
        .map(|(((da, carry), dp), rows)| CaBackJob { rows: rows.clone(), da, carry, dp })
        .collect();
    let (outd, gd, saved): (&[T], &[T], &[T]) = (&out.data, &g.data, &s.act);
    chi_kernels::threads::run_each(jobs, |job| ca_rnn_backward_rows(&args, saved, outd, gd, &wt, job));
    let tb = t_len * b;
    let (dy0, dc0) = deinterleave(&carry, n);
    let (dy0, dc0) = (need[1].then(|| Tensor::from_vec(dy0, y0.shape())), need[2].then(|| Tensor::from_vec(dc0, c0.shape())));
    // dW_r = Σ_t [y_{t−1}, c_{t−1}]ᵀ·da_t over the stacked previous states [T·B, 2n].
    let dw_r = need[3].then(|| {
        let mut sprev = pool::vec_for_overwrite(tb * 2 * n);
        if t_len > 0 {
            sprev[..2 * b * n].copy_from_slice(&args.initial(&(0..b)));
            sprev[2 * b * n..].copy_from_slice(&out.data[..(t_len - 1) * 2 * b * n]);
        }
        let dw = Tensor::from_vec(at_b(MatRef::row_major(&sprev, tb, 2 * n), MatRef::row_major(&da, tb, width)), w_r.shape());
        pool::recycle_vec(sprev);
        dw
    });
    // dW_z = Σ_t c_tᵀ·da_t[o, vᵒ], the c_t read in place from the output.
    let dw_z = need[4].then(|| Tensor::from_vec(at_b(cols_of(&out.data, tb, 2 * n, n, n), cols_of(&da, tb, width, 2 * n + 1, n + 1)), w_z.shape()));
    let dp_v = need[5].then(|| Tensor::from_vec(sum_blocks(&dps), &[n]));
    let grads = vec![need[0].then(|| Tensor::from_vec(to_batch_major(&da, b, t_len, width), xp.shape())), dy0, dc0, dw_r, dw_z, dp_v];
    pool::recycle_vec(da);
    grads
}
