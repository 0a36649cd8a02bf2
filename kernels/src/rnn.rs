//! Pointwise passes of fused recurrent cells (LSTM, GRU and CA-RNN): the gate nonlinearities and
//! the state update of one time step in one SIMD pass over the gate pre-activations, and the
//! matching backward passes. The matrix products of a step (`h·W_hh` and its adjoints) are left to
//! [`crate::gemm`]; these kernels only see row-major `[batch, ·]` buffers.
//!
//! Layouts (row-major, `H` = hidden size, `B` = batch):
//! * LSTM gates `[B, 4H]`, blocks `i, f, g, o` (PyTorch's order); state output `hc [B, 2H]`,
//!   row `b` holding `h_b` then `c_b`.
//! * GRU projected input `xp [B, 3H]`, blocks `r, z, n`; gates `rz [B, 2H]`.
//! * CA-RNN pre-activations `[B, 4n + 2]`, blocks `f (1), v (n), c' (n), o (1), vᵒ (n), cᵒ (n)`
//!   (the two scalar gates of its cell state and output, [`ca_rnn_width`]).
//!
//! The functions are the ones of the cells in `chi-nn` (`LstmCell`, `GruCell`) and `chi-ca`
//! (`CaRnnCell` with tanh activations and a vector peephole), with the same
//! SIMD `sigmoid`/`tanh` as [`crate::elementwise::unary`], so a fused step and the same step
//! composed of single ops agree to a few ulps.

use crate::parallel::{cast, cast_mut, dispatch, dispatch_lanes};
use crate::simd_math::{self as sm, SimdVec};
use crate::Real;

// Inlined: the fused sequences' backward passes call the step kernels once per row.
#[inline(always)]
fn check_len(kernel: &str, what: &str, got: usize, want: usize) {
    assert!(got == want, "{kernel}: length mismatch: {what} has {got} elements, expected {want}");
}

/// Loads `n ≤ LANES` elements (the rest zero).
#[inline(always)]
fn ld<V: SimdVec>(s: &[V::S], n: usize) -> V {
    if n == V::LANES {
        V::load(s)
    } else {
        V::load_partial(&s[..n])
    }
}

/// Stores the first `n ≤ LANES` lanes.
#[inline(always)]
fn st<V: SimdVec>(v: V, s: &mut [V::S], n: usize) {
    if n == V::LANES {
        v.store(s)
    } else {
        v.store_partial(&mut s[..n])
    }
}

/// Calls `f(row, column, lanes)` for every vector-sized piece of a `[batch, hidden]` grid.
#[inline(always)]
fn grid<V: SimdVec>(batch: usize, hidden: usize, mut f: impl FnMut(usize, usize, usize)) {
    for b in 0..batch {
        let mut j = 0;
        while j < hidden {
            let n = (hidden - j).min(V::LANES);
            f(b, j, n);
            j += n;
        }
    }
}

/// Peephole weights `[p_i, p_f, p_o]`, each `[H]`.
pub type Peepholes<'a, T> = Option<[&'a [T]; 3]>;

/// A `[batch, width]` matrix read with a row stride: row `b` starts at `data[b·stride]`.
/// The projected inputs of a whole sequence, `[B, T, G]` batch-major, give step `t`'s rows as
/// `Rows { data: &xp[t·G..], stride: T·G }`, so a step kernel reads them where they are
/// instead of from a per-step copy.
#[derive(Clone, Copy, Debug)]
pub struct Rows<'a, T> {
    /// The elements; row `b` is `data[b·stride .. b·stride + width]`.
    pub data: &'a [T],
    /// Elements from one row's start to the next's (at least the width).
    pub stride: usize,
}

impl<'a, T> Rows<'a, T> {
    /// Rows stored one after another (`stride = width`).
    pub fn dense(data: &'a [T], width: usize) -> Self {
        Rows { data, stride: width }
    }
}

/// Checks that `rows` holds `batch` rows of `width` elements.
#[inline(always)]
fn check_rows<T>(kernel: &str, what: &str, rows: &Rows<T>, batch: usize, width: usize) {
    assert!(rows.stride >= width, "{kernel}: {what} has row stride {}, less than its width {width}", rows.stride);
    let need = if batch == 0 { 0 } else { (batch - 1) * rows.stride + width };
    assert!(rows.data.len() >= need, "{kernel}: length mismatch: {what} has {} elements, expected at least {need} ({batch} rows of {width}, stride {})", rows.data.len(), rows.stride);
}

/// The same rows as slices of the SIMD element type.
fn cast_rows<'a, T: 'static, S: 'static>(r: Rows<'a, T>) -> Rows<'a, S> {
    Rows { data: cast(r.data), stride: r.stride }
}

// ------------------------------------------------------------------------------------- LSTM

/// LSTM step, pointwise part. On entry `gates [B, 4H]` holds the pre-activations
/// `a = x·W_ih + h·W_hh + b` (blocks `i, f, g, o`), or, when the projected inputs
/// `xp = x·W_ih + b` are given as rows of their own, `h·W_hh` to which they are added (so a
/// sequence's inputs need not be copied into the product's output first); on return it holds the activations
/// `i = σ(a_i + p_i⊙c), f = σ(a_f + p_f⊙c), g = tanh(a_g), o = σ(a_o + p_o⊙c')` (the `p⊙`
/// terms only with peepholes). Writes `c' = f⊙c + i⊙g` and `h' = o⊙tanh(c')` into
/// `hc [B, 2H]` (row `b` = `h'_b, c'_b`) and `tanh(c')` into `tanh_c [B, H]` (for backward).
///
/// # Panics
/// If a buffer's length disagrees with `batch` and `hidden` (the message names the buffer).
#[allow(clippy::too_many_arguments)]
pub fn lstm_forward<T: Real>(batch: usize, hidden: usize, gates: &mut [T], xp: Option<Rows<T>>, c: &[T], peep: Peepholes<T>, hc: &mut [T], tanh_c: &mut [T]) {
    let k = "lstm_forward";
    let bh = batch * hidden;
    check_len(k, "gates", gates.len(), 4 * bh);
    if let Some(r) = &xp {
        check_rows(k, "xp", r, batch, 4 * hidden);
    }
    check_len(k, "c", c.len(), bh);
    check_len(k, "hc", hc.len(), 2 * bh);
    check_len(k, "tanh_c", tanh_c.len(), bh);
    if let Some(p) = &peep {
        for (q, name) in p.iter().zip(["p_i", "p_f", "p_o"]) {
            check_len(k, name, q.len(), hidden);
        }
    }
    dispatch_lanes!(T, V => {
        let p = peep.map(|p| p.map(|q| cast::<T, <V as SimdVec>::S>(q)));
        lstm_forward_simd::<V>(batch, hidden, cast_mut(gates), xp.map(cast_rows), cast(c), p, cast_mut(hc), cast_mut(tanh_c))
    }, else => panic!("{k}: element type {} is not supported", T::NAME))
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn lstm_forward_simd<V: SimdVec>(batch: usize, hidden: usize, gates: &mut [V::S], xp: Option<Rows<V::S>>, c: &[V::S], peep: Peepholes<V::S>, hc: &mut [V::S], tanh_c: &mut [V::S]) {
    let h = hidden;
    grid::<V>(batch, h, #[inline(always)] |b, j, n| {
        let g0 = b * 4 * h + j;
        let s = b * h + j;
        let cp: V = ld(&c[s..], n);
        let mut ai: V = ld(&gates[g0..], n);
        let mut af: V = ld(&gates[g0 + h..], n);
        let mut ag: V = ld(&gates[g0 + 2 * h..], n);
        let mut ao: V = ld(&gates[g0 + 3 * h..], n);
        if let Some(r) = &xp {
            let x = &r.data[b * r.stride + j..];
            ai = ai + ld::<V>(x, n);
            af = af + ld::<V>(&x[h..], n);
            ag = ag + ld::<V>(&x[2 * h..], n);
            ao = ao + ld::<V>(&x[3 * h..], n);
        }
        if let Some([pi, pf, _]) = peep {
            ai = ai + cp * ld::<V>(&pi[j..], n);
            af = af + cp * ld::<V>(&pf[j..], n);
        }
        let (i, f, g) = (sm::sigmoid(ai), sm::sigmoid(af), sm::tanh(ag));
        let cn = f * cp + i * g;
        if let Some([_, _, po]) = peep {
            ao = ao + cn * ld::<V>(&po[j..], n);
        }
        let o = sm::sigmoid(ao);
        let tc = sm::tanh(cn);
        st(i, &mut gates[g0..], n);
        st(f, &mut gates[g0 + h..], n);
        st(g, &mut gates[g0 + 2 * h..], n);
        st(o, &mut gates[g0 + 3 * h..], n);
        st(o * tc, &mut hc[b * 2 * h + j..], n);
        st(cn, &mut hc[b * 2 * h + h + j..], n);
        st(tc, &mut tanh_c[s..], n);
    });
}

/// Backward of [`lstm_forward`]. Given the saved activations `gates [B, 4H]`, the previous cell
/// state `c`, the step's output `hc [B, 2H]`, the saved `tanh_c` and the gradient `g [B, 2H]`
/// of `hc`, writes the gradient of the pre-activations into `da [B, 4H]` and of `c` into
/// `dc [B, H]`, and with peepholes *adds* the peephole gradients (summed over the batch) into
/// `dpeep` (each `[H]`).
///
/// # Panics
/// If a buffer's length disagrees with `batch` and `hidden`, or `peep` and `dpeep` are not both
/// present or both absent.
#[allow(clippy::too_many_arguments)]
pub fn lstm_backward<T: Real>(
    batch: usize,
    hidden: usize,
    gates: &[T],
    c: &[T],
    hc: &[T],
    tanh_c: &[T],
    peep: Peepholes<T>,
    g: &[T],
    da: &mut [T],
    dc: &mut [T],
    dpeep: Option<[&mut [T]; 3]>,
) {
    let k = "lstm_backward";
    let bh = batch * hidden;
    check_len(k, "gates", gates.len(), 4 * bh);
    check_len(k, "c", c.len(), bh);
    check_len(k, "hc", hc.len(), 2 * bh);
    check_len(k, "tanh_c", tanh_c.len(), bh);
    check_len(k, "g", g.len(), 2 * bh);
    check_len(k, "da", da.len(), 4 * bh);
    check_len(k, "dc", dc.len(), bh);
    assert!(peep.is_some() == dpeep.is_some(), "{k}: peephole weights and their gradients must be given together");
    if let (Some(p), Some(dp)) = (&peep, &dpeep) {
        for ((q, d), name) in p.iter().zip(dp.iter()).zip(["p_i", "p_f", "p_o"]) {
            check_len(k, name, q.len(), hidden);
            check_len(k, name, d.len(), hidden);
        }
    }
    dispatch_lanes!(T, V => {
        let p = peep.map(|p| p.map(|q| cast::<T, <V as SimdVec>::S>(q)));
        let dp = dpeep.map(|p| p.map(|q| cast_mut::<T, <V as SimdVec>::S>(q)));
        lstm_backward_simd::<V>(batch, hidden, cast(gates), cast(c), cast(hc), cast(tanh_c), p, cast(g), cast_mut(da), cast_mut(dc), dp)
    }, else => panic!("{k}: element type {} is not supported", T::NAME))
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn lstm_backward_simd<V: SimdVec>(
    batch: usize,
    hidden: usize,
    gates: &[V::S],
    c: &[V::S],
    hc: &[V::S],
    tanh_c: &[V::S],
    peep: Peepholes<V::S>,
    g: &[V::S],
    da: &mut [V::S],
    dc: &mut [V::S],
    mut dpeep: Option<[&mut [V::S]; 3]>,
) {
    let h = hidden;
    let one = V::c(1.0);
    grid::<V>(batch, h, #[inline(always)] |b, j, n| {
        let g0 = b * 4 * h + j;
        let s = b * h + j;
        let r = b * 2 * h + j;
        let (i, f, gg, o): (V, V, V, V) = (ld(&gates[g0..], n), ld(&gates[g0 + h..], n), ld(&gates[g0 + 2 * h..], n), ld(&gates[g0 + 3 * h..], n));
        let cp: V = ld(&c[s..], n);
        let cn: V = ld(&hc[r + h..], n);
        let tc: V = ld(&tanh_c[s..], n);
        let dh: V = ld(&g[r..], n);
        let dcn: V = ld(&g[r + h..], n);
        // h' = o·tanh(c'): through o and through c'.
        let dao = dh * tc * (o * (one - o));
        let mut dct = dcn + dh * o * (one - tc * tc);
        if let Some([_, _, po]) = peep {
            dct = dct + dao * ld::<V>(&po[j..], n);
        }
        let dai = dct * gg * (i * (one - i));
        let daf = dct * cp * (f * (one - f));
        let dag = dct * i * (one - gg * gg);
        let mut dcp = dct * f;
        if let Some([pi, pf, _]) = peep {
            dcp = dcp + dai * ld::<V>(&pi[j..], n) + daf * ld::<V>(&pf[j..], n);
        }
        if let Some([dpi, dpf, dpo]) = dpeep.as_mut() {
            st(ld::<V>(&dpi[j..], n) + dai * cp, &mut dpi[j..], n);
            st(ld::<V>(&dpf[j..], n) + daf * cp, &mut dpf[j..], n);
            st(ld::<V>(&dpo[j..], n) + dao * cn, &mut dpo[j..], n);
        }
        st(dai, &mut da[g0..], n);
        st(daf, &mut da[g0 + h..], n);
        st(dag, &mut da[g0 + 2 * h..], n);
        st(dao, &mut da[g0 + 3 * h..], n);
        st(dcp, &mut dc[s..], n);
    });
}

// -------------------------------------------------------------------------------------- GRU

/// GRU step, pointwise part. `xp` holds the `B` rows `[3H]` of the projected input
/// `x·W_ih + b` (blocks `r, z, n`; [`Rows`], so a sequence's step is read in place); on entry `rz [B, 2H]` holds `h·W_hh` and on return the gates
/// `r, z = σ(xp_rz + h·W_hh)`. `hn [B, H]` is `h·W_hn + b_hn` when `reset_after` (PyTorch's
/// form, candidate `n = tanh(xp_n + r⊙hn)`); otherwise it is `(r⊙h)·W_hn` (the seeds' form,
/// `n = tanh(xp_n + hn)`) and `rz` must already hold the gates ([`gru_reset`] computes them and
/// `r⊙h`). Writes `n` and `h' = n + z⊙(h − n)`.
///
/// # Panics
/// If a buffer's length disagrees with `batch` and `hidden`.
#[allow(clippy::too_many_arguments)]
pub fn gru_forward<T: Real>(batch: usize, hidden: usize, reset_after: bool, xp: Rows<T>, rz: &mut [T], hn: &[T], h: &[T], n: &mut [T], h_new: &mut [T]) {
    let k = "gru_forward";
    let bh = batch * hidden;
    check_rows(k, "xp", &xp, batch, 3 * hidden);
    check_len(k, "rz", rz.len(), 2 * bh);
    for (name, len) in [("hn", hn.len()), ("h", h.len()), ("n", n.len()), ("h_new", h_new.len())] {
        check_len(k, name, len, bh);
    }
    dispatch_lanes!(T, V => gru_forward_simd::<V>(batch, hidden, reset_after, cast_rows(xp), cast_mut(rz), cast(hn), cast(h), cast_mut(n), cast_mut(h_new)),
        else => panic!("{k}: element type {} is not supported", T::NAME))
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn gru_forward_simd<V: SimdVec>(batch: usize, hd: usize, reset_after: bool, xp: Rows<V::S>, rz: &mut [V::S], hn: &[V::S], h: &[V::S], n: &mut [V::S], h_new: &mut [V::S]) {
    let (stride, xp) = (xp.stride, xp.data);
    grid::<V>(batch, hd, #[inline(always)] |b, j, w| {
        let x0 = b * stride + j;
        let g0 = b * 2 * hd + j;
        let s = b * hd + j;
        let (r, z): (V, V) = if reset_after {
            let r = sm::sigmoid(ld::<V>(&xp[x0..], w) + ld::<V>(&rz[g0..], w));
            let z = sm::sigmoid(ld::<V>(&xp[x0 + hd..], w) + ld::<V>(&rz[g0 + hd..], w));
            st(r, &mut rz[g0..], w);
            st(z, &mut rz[g0 + hd..], w);
            (r, z)
        } else {
            (ld(&rz[g0..], w), ld(&rz[g0 + hd..], w))
        };
        let hv: V = ld(&hn[s..], w);
        let pre = ld::<V>(&xp[x0 + 2 * hd..], w) + if reset_after { r * hv } else { hv };
        let nv = sm::tanh(pre);
        let hp: V = ld(&h[s..], w);
        st(nv, &mut n[s..], w);
        st(nv + z * (hp - nv), &mut h_new[s..], w);
    });
}

/// First half of a GRU step whose reset gate applies before the candidate's product (the
/// seeds' form): on entry `rz [B, 2H]` holds `h·W_hh`; on return the gates
/// `σ(xp_rz + h·W_hh)` (`xp` as in [`gru_forward`]), and `u = r⊙h` is written (the operand of
/// the product `u·W_hn`).
///
/// # Panics
/// If a buffer's length disagrees with `batch` and `hidden`.
pub fn gru_reset<T: Real>(batch: usize, hidden: usize, xp: Rows<T>, rz: &mut [T], h: &[T], u: &mut [T]) {
    let k = "gru_reset";
    let bh = batch * hidden;
    check_rows(k, "xp", &xp, batch, 3 * hidden);
    check_len(k, "rz", rz.len(), 2 * bh);
    check_len(k, "h", h.len(), bh);
    check_len(k, "u", u.len(), bh);
    dispatch_lanes!(T, V => gru_reset_simd::<V>(batch, hidden, cast_rows(xp), cast_mut(rz), cast(h), cast_mut(u)),
        else => panic!("{k}: element type {} is not supported", T::NAME))
}

#[inline(always)]
fn gru_reset_simd<V: SimdVec>(batch: usize, hd: usize, xp: Rows<V::S>, rz: &mut [V::S], h: &[V::S], u: &mut [V::S]) {
    let (stride, xp) = (xp.stride, xp.data);
    grid::<V>(batch, hd, #[inline(always)] |b, j, w| {
        let x0 = b * stride + j;
        let g0 = b * 2 * hd + j;
        let s = b * hd + j;
        let r = sm::sigmoid(ld::<V>(&xp[x0..], w) + ld::<V>(&rz[g0..], w));
        let z = sm::sigmoid(ld::<V>(&xp[x0 + hd..], w) + ld::<V>(&rz[g0 + hd..], w));
        st(r, &mut rz[g0..], w);
        st(z, &mut rz[g0 + hd..], w);
        st(r * ld::<V>(&h[s..], w), &mut u[s..], w);
    });
}

/// Backward of [`gru_forward`], pointwise part. Given the saved gates `rz`, candidate `n`, the
/// previous state `h`, `hn` (as in the forward) and the gradient `g [B, H]` of `h'`, writes
/// into `da [B, 3H]` the gradients of the pre-activations (blocks `r, z, n`; with
/// `reset_after = false` the `r` block is left for [`gru_backward_reset`]), into `dhn [B, H]`
/// the gradient of `hn` (`reset_after` only; otherwise untouched), and into `dh [B, H]` the
/// direct part `g⊙z` of the gradient of `h`.
///
/// # Panics
/// If a buffer's length disagrees with `batch` and `hidden`.
#[allow(clippy::too_many_arguments)]
pub fn gru_backward<T: Real>(batch: usize, hidden: usize, reset_after: bool, rz: &[T], n: &[T], h: &[T], hn: &[T], g: &[T], da: &mut [T], dhn: &mut [T], dh: &mut [T]) {
    let k = "gru_backward";
    let bh = batch * hidden;
    check_len(k, "rz", rz.len(), 2 * bh);
    check_len(k, "da", da.len(), 3 * bh);
    for (name, len) in [("n", n.len()), ("h", h.len()), ("hn", hn.len()), ("g", g.len()), ("dhn", dhn.len()), ("dh", dh.len())] {
        check_len(k, name, len, bh);
    }
    dispatch_lanes!(T, V => gru_backward_simd::<V>(batch, hidden, reset_after, cast(rz), cast(n), cast(h), cast(hn), cast(g), cast_mut(da), cast_mut(dhn), cast_mut(dh)),
        else => panic!("{k}: element type {} is not supported", T::NAME))
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn gru_backward_simd<V: SimdVec>(
    batch: usize,
    hd: usize,
    reset_after: bool,
    rz: &[V::S],
    n: &[V::S],
    h: &[V::S],
    hn: &[V::S],
    g: &[V::S],
    da: &mut [V::S],
    dhn: &mut [V::S],
    dh: &mut [V::S],
) {
    let one = V::c(1.0);
    grid::<V>(batch, hd, #[inline(always)] |b, j, w| {
        let g0 = b * 2 * hd + j;
        let a0 = b * 3 * hd + j;
        let s = b * hd + j;
        let (r, z): (V, V) = (ld(&rz[g0..], w), ld(&rz[g0 + hd..], w));
        let nv: V = ld(&n[s..], w);
        let hp: V = ld(&h[s..], w);
        let gv: V = ld(&g[s..], w);
        // h' = n + z⊙(h − n)
        let dan = gv * (one - z) * (one - nv * nv);
        let daz = gv * (hp - nv) * (z * (one - z));
        if reset_after {
            let hv: V = ld(&hn[s..], w);
            st(dan * hv * (r * (one - r)), &mut da[a0..], w);
            st(dan * r, &mut dhn[s..], w);
        }
        st(daz, &mut da[a0 + hd..], w);
        st(dan, &mut da[a0 + 2 * hd..], w);
        st(gv * z, &mut dh[s..], w);
    });
}

/// Second half of the backward of a "reset before the product" GRU step: given the gradient
/// `du [B, H]` of `u = r⊙h`, writes the `r` block of `da [B, 3H]` and adds `du⊙r` into `dh`.
///
/// # Panics
/// If a buffer's length disagrees with `batch` and `hidden`.
pub fn gru_backward_reset<T: Real>(batch: usize, hidden: usize, rz: &[T], h: &[T], du: &[T], da: &mut [T], dh: &mut [T]) {
    let k = "gru_backward_reset";
    let bh = batch * hidden;
    check_len(k, "rz", rz.len(), 2 * bh);
    check_len(k, "da", da.len(), 3 * bh);
    for (name, len) in [("h", h.len()), ("du", du.len()), ("dh", dh.len())] {
        check_len(k, name, len, bh);
    }
    dispatch_lanes!(T, V => gru_backward_reset_simd::<V>(batch, hidden, cast(rz), cast(h), cast(du), cast_mut(da), cast_mut(dh)),
        else => panic!("{k}: element type {} is not supported", T::NAME))
}

#[inline(always)]
fn gru_backward_reset_simd<V: SimdVec>(batch: usize, hd: usize, rz: &[V::S], h: &[V::S], du: &[V::S], da: &mut [V::S], dh: &mut [V::S]) {
    let one = V::c(1.0);
    grid::<V>(batch, hd, #[inline(always)] |b, j, w| {
        let s = b * hd + j;
        let r: V = ld(&rz[b * 2 * hd + j..], w);
        let duv: V = ld(&du[s..], w);
        let hp: V = ld(&h[s..], w);
        st(duv * hp * (r * (one - r)), &mut da[b * 3 * hd + j..], w);
        st(ld::<V>(&dh[s..], w) + duv * r, &mut dh[s..], w);
    });
}

// ----------------------------------------------------------------------------------- CA-RNN

/// Sum of the lanes of `v` (at most 8). The CA-RNN backward passes sum across lanes for their
/// scalar gates, so they keep the AVX2 width on AVX-512 (`dispatch!`, not `dispatch_lanes!`):
/// their sums then associate the same way on every AVX2 machine.
#[inline(always)]
fn hsum<V: SimdVec>(v: V) -> V::S {
    let mut b = [<V::S as Real>::ZERO; 8];
    v.store(&mut b);
    b[..V::LANES].iter().fold(<V::S as Real>::ZERO, |a, &x| a + x)
}

/// `σ(x)` of one scalar.
#[inline(always)]
fn sigmoid1<S: Real>(x: S) -> S {
    S::ONE / (S::ONE + (-x).exp())
}

/// Width of a CA-RNN pre-activation row for hidden size `n`: blocks `f (1), v (n), c' (n),
/// o (1), vᵒ (n), cᵒ (n)`.
pub const fn ca_rnn_width(n: usize) -> usize {
    4 * n + 2
}

/// CA-RNN step, cell-state part (Eq. 34 of *Context Aware Machine Learning*, with `h_v = h_c = tanh` and a vector peephole).
/// `a [B, 4n+2]` holds the pre-activations (blocks as in [`ca_rnn_width`]); on return its `f`,
/// `v` and `c'` blocks hold `f = σ(a_f)`, `v = tanh(a_v + p_v⊙c)`, `c' = tanh(a_c)`, and
/// `c_new = f·v + (1 − f)·c'` is written (`f` a scalar per row).
///
/// # Panics
/// If a buffer's length disagrees with `batch` and `hidden`.
pub fn ca_rnn_forward_cell<T: Real>(batch: usize, hidden: usize, a: &mut [T], c: &[T], p_v: &[T], c_new: &mut [T]) {
    let k = "ca_rnn_forward_cell";
    check_len(k, "a", a.len(), batch * ca_rnn_width(hidden));
    check_len(k, "p_v", p_v.len(), hidden);
    for (name, len) in [("c", c.len()), ("c_new", c_new.len())] {
        check_len(k, name, len, batch * hidden);
    }
    dispatch_lanes!(T, V => ca_rnn_forward_cell_simd::<V>(batch, hidden, cast_mut(a), cast(c), cast(p_v), cast_mut(c_new)),
        else => panic!("{k}: element type {} is not supported", T::NAME))
}

#[inline(always)]
fn ca_rnn_forward_cell_simd<V: SimdVec>(batch: usize, n: usize, a: &mut [V::S], c: &[V::S], p_v: &[V::S], c_new: &mut [V::S]) {
    let w = ca_rnn_width(n);
    for b in 0..batch {
        let row = b * w;
        let f = sigmoid1(a[row]);
        a[row] = f;
        let (fv, one) = (V::splat(f), V::c(1.0));
        let mut j = 0;
        while j < n {
            let l = (n - j).min(V::LANES);
            let s = b * n + j;
            let cp: V = ld(&c[s..], l);
            let v = sm::tanh(ld::<V>(&a[row + 1 + j..], l) + ld::<V>(&p_v[j..], l) * cp);
            let cc = sm::tanh(ld::<V>(&a[row + 1 + n + j..], l));
            st(v, &mut a[row + 1 + j..], l);
            st(cc, &mut a[row + 1 + n + j..], l);
            st(fv * v + (one - fv) * cc, &mut c_new[s..], l);
            j += l;
        }
    }
}

/// CA-RNN step, output part (Eq. 36 of the same paper, with `hᵒ_v = hᵒ_c = tanh`). On entry the `o`, `vᵒ`,
/// `cᵒ` blocks of `a [B, 4n+2]` hold their full pre-activations (including the `c_t` terms); on
/// return they hold `o = σ(a_o)`, `vᵒ = tanh(a_vᵒ)`, `cᵒ = tanh(a_cᵒ)`, and
/// `y = o·vᵒ + (1 − o)·cᵒ` is written.
///
/// # Panics
/// If a buffer's length disagrees with `batch` and `hidden`.
pub fn ca_rnn_forward_output<T: Real>(batch: usize, hidden: usize, a: &mut [T], y: &mut [T]) {
    let k = "ca_rnn_forward_output";
    check_len(k, "a", a.len(), batch * ca_rnn_width(hidden));
    check_len(k, "y", y.len(), batch * hidden);
    dispatch_lanes!(T, V => ca_rnn_forward_output_simd::<V>(batch, hidden, cast_mut(a), cast_mut(y)),
        else => panic!("{k}: element type {} is not supported", T::NAME))
}

#[inline(always)]
fn ca_rnn_forward_output_simd<V: SimdVec>(batch: usize, n: usize, a: &mut [V::S], y: &mut [V::S]) {
    let w = ca_rnn_width(n);
    for b in 0..batch {
        let o0 = b * w + 2 * n + 1;
        let o = sigmoid1(a[o0]);
        a[o0] = o;
        let (ov, one) = (V::splat(o), V::c(1.0));
        let mut j = 0;
        while j < n {
            let l = (n - j).min(V::LANES);
            let vo = sm::tanh(ld::<V>(&a[o0 + 1 + j..], l));
            let co = sm::tanh(ld::<V>(&a[o0 + 1 + n + j..], l));
            st(vo, &mut a[o0 + 1 + j..], l);
            st(co, &mut a[o0 + 1 + n + j..], l);
            st(ov * vo + (one - ov) * co, &mut y[b * n + j..], l);
            j += l;
        }
    }
}

/// Backward of [`ca_rnn_forward_output`]. Given the saved activations `act [B, 4n+2]` and the
/// gradient `gy [B, n]` of `y`, writes the gradients of the `o`, `vᵒ` and `cᵒ` pre-activations
/// into the same blocks of `da [B, 4n+2]` (the other blocks are untouched).
///
/// # Panics
/// If a buffer's length disagrees with `batch` and `hidden`.
pub fn ca_rnn_backward_output<T: Real>(batch: usize, hidden: usize, act: &[T], gy: &[T], da: &mut [T]) {
    let k = "ca_rnn_backward_output";
    check_len(k, "act", act.len(), batch * ca_rnn_width(hidden));
    check_len(k, "da", da.len(), batch * ca_rnn_width(hidden));
    check_len(k, "gy", gy.len(), batch * hidden);
    dispatch!(T, V => ca_rnn_backward_output_simd::<V>(batch, hidden, cast(act), cast(gy), cast_mut(da)),
        else => panic!("{k}: element type {} is not supported", T::NAME))
}

#[inline(always)]
fn ca_rnn_backward_output_simd<V: SimdVec>(batch: usize, n: usize, act: &[V::S], gy: &[V::S], da: &mut [V::S]) {
    let w = ca_rnn_width(n);
    for b in 0..batch {
        let o0 = b * w + 2 * n + 1;
        let o = act[o0];
        let (ov, one) = (V::splat(o), V::c(1.0));
        let mut acc = V::c(0.0);
        let mut j = 0;
        while j < n {
            let l = (n - j).min(V::LANES);
            let g: V = ld(&gy[b * n + j..], l);
            let (vo, co): (V, V) = (ld(&act[o0 + 1 + j..], l), ld(&act[o0 + 1 + n + j..], l));
            // y = o·vᵒ + (1 − o)·cᵒ
            acc = acc + g * (vo - co);
            st(g * ov * (one - vo * vo), &mut da[o0 + 1 + j..], l);
            st(g * (one - ov) * (one - co * co), &mut da[o0 + 1 + n + j..], l);
            j += l;
        }
        da[o0] = hsum(acc) * o * (<V::S as Real>::ONE - o);
    }
}

/// Backward of [`ca_rnn_forward_cell`]. Given the saved activations `act [B, 4n+2]`, the
/// previous cell state `c`, the peephole `p_v` and the total gradient `gc [B, n]` of `c_new`,
/// writes the gradients of the `f`, `v` and `c'` pre-activations into those blocks of
/// `da [B, 4n+2]`, the direct (peephole) part of the gradient of `c` into `dc [B, n]`, and *adds*
/// the peephole gradient, summed over the batch, into `dp_v [n]`.
///
/// # Panics
/// If a buffer's length disagrees with `batch` and `hidden`.
#[allow(clippy::too_many_arguments)]
pub fn ca_rnn_backward_cell<T: Real>(batch: usize, hidden: usize, act: &[T], c: &[T], p_v: &[T], gc: &[T], da: &mut [T], dc: &mut [T], dp_v: &mut [T]) {
    let k = "ca_rnn_backward_cell";
    check_len(k, "act", act.len(), batch * ca_rnn_width(hidden));
    check_len(k, "da", da.len(), batch * ca_rnn_width(hidden));
    for (name, len) in [("c", c.len()), ("gc", gc.len()), ("dc", dc.len())] {
        check_len(k, name, len, batch * hidden);
    }
    for (name, len) in [("p_v", p_v.len()), ("dp_v", dp_v.len())] {
        check_len(k, name, len, hidden);
    }
    dispatch!(T, V => ca_rnn_backward_cell_simd::<V>(batch, hidden, cast(act), cast(c), cast(p_v), cast(gc), cast_mut(da), cast_mut(dc), cast_mut(dp_v)),
        else => panic!("{k}: element type {} is not supported", T::NAME))
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn ca_rnn_backward_cell_simd<V: SimdVec>(batch: usize, n: usize, act: &[V::S], c: &[V::S], p_v: &[V::S], gc: &[V::S], da: &mut [V::S], dc: &mut [V::S], dp_v: &mut [V::S]) {
    let w = ca_rnn_width(n);
    for b in 0..batch {
        let row = b * w;
        let f = act[row];
        let (fv, one) = (V::splat(f), V::c(1.0));
        let mut acc = V::c(0.0);
        let mut j = 0;
        while j < n {
            let l = (n - j).min(V::LANES);
            let s = b * n + j;
            let g: V = ld(&gc[s..], l);
            let (v, cc): (V, V) = (ld(&act[row + 1 + j..], l), ld(&act[row + 1 + n + j..], l));
            // c_new = f·v + (1 − f)·c'
            acc = acc + g * (v - cc);
            let dav = g * fv * (one - v * v);
            st(dav, &mut da[row + 1 + j..], l);
            st(g * (one - fv) * (one - cc * cc), &mut da[row + 1 + n + j..], l);
            st(dav * ld::<V>(&p_v[j..], l), &mut dc[s..], l);
            st(ld::<V>(&dp_v[j..], l) + dav * ld::<V>(&c[s..], l), &mut dp_v[j..], l);
            j += l;
        }
        da[row] = hsum(acc) * f * (<V::S as Real>::ONE - f);
    }
}
