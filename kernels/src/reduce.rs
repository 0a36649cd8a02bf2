//! Reductions and normalisers along one axis.
//!
//! Every function here sees its input as a contiguous `[outer, n, inner]` array and reduces (or
//! normalises) along the middle axis of length `n`. Any axis of a row-major tensor can be put in
//! that form: `outer` = product of the dimensions before the axis, `inner` = product after it.

use crate::Real;

fn check(kernel: &str, x: usize, outer: usize, n: usize, inner: usize) {
    assert!(
        x == outer * n * inner,
        "{kernel}: input has {x} elements but the layout [outer={outer}, n={n}, inner={inner}] needs {}",
        outer * n * inner
    );
}
fn check_out(kernel: &str, got: usize, want: usize) {
    assert!(got == want, "{kernel}: output has {got} elements, expected {want}");
}

/// `out[o, i] = Σ_j x[o, j, i]`. `out` has `outer·inner` elements.
pub fn sum_axis<T: Real>(x: &[T], outer: usize, n: usize, inner: usize, out: &mut [T]) {
    check("sum_axis", x.len(), outer, n, inner);
    check_out("sum_axis", out.len(), outer * inner);
    for o in 0..outer {
        let dst = &mut out[o * inner..(o + 1) * inner];
        dst.iter_mut().for_each(|v| *v = T::ZERO);
        for j in 0..n {
            let src = &x[(o * n + j) * inner..(o * n + j + 1) * inner];
            for (d, &s) in dst.iter_mut().zip(src) {
                *d += s;
            }
        }
    }
}

/// Sum of all elements (pairwise-blocked, so rounding error grows like log n, not n).
pub fn sum_all<T: Real>(x: &[T]) -> T {
    const BLOCK: usize = 256;
    if x.len() <= BLOCK {
        let mut acc = T::ZERO;
        for &v in x {
            acc += v;
        }
        acc
    } else {
        let mid = x.len() / 2;
        sum_all(&x[..mid]) + sum_all(&x[mid..])
    }
}

/// `out[o, i] = max_j x[o, j, i]`, `argmax[o, i]` = the first `j` attaining it (NaN wins).
/// With `n = 0` the output is `-∞` and the index 0.
pub fn max_axis<T: Real>(x: &[T], outer: usize, n: usize, inner: usize, out: &mut [T], argmax: &mut [usize]) {
    check("max_axis", x.len(), outer, n, inner);
    check_out("max_axis", out.len(), outer * inner);
    check_out("max_axis (argmax)", argmax.len(), outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let mut best = T::NEG_INFINITY;
            let mut arg = 0;
            for j in 0..n {
                let v = x[(o * n + j) * inner + i];
                if v > best || (v.is_nan() && !best.is_nan()) {
                    best = v;
                    arg = j;
                }
            }
            out[o * inner + i] = best;
            argmax[o * inner + i] = arg;
        }
    }
}

/// Numerically stable `log Σ_j exp(x[o, j, i])` (the maximum is subtracted first, so large
/// inputs do not overflow). `out` has `outer·inner` elements.
pub fn logsumexp<T: Real>(x: &[T], outer: usize, n: usize, inner: usize, out: &mut [T]) {
    check("logsumexp", x.len(), outer, n, inner);
    check_out("logsumexp", out.len(), outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| x[(o * n + j) * inner + i];
            let mut m = T::NEG_INFINITY;
            for j in 0..n {
                m = m.max_nan(at(j));
            }
            out[o * inner + i] = if m == T::NEG_INFINITY || m == T::INFINITY {
                m
            } else {
                let mut s = T::ZERO;
                for j in 0..n {
                    s += (at(j) - m).exp();
                }
                m + s.ln()
            };
        }
    }
}

/// Stable softmax along the middle axis. `out` has the same layout as `x`.
pub fn softmax<T: Real>(x: &[T], outer: usize, n: usize, inner: usize, out: &mut [T]) {
    check("softmax", x.len(), outer, n, inner);
    check_out("softmax", out.len(), x.len());
    for o in 0..outer {
        for i in 0..inner {
            let idx = |j: usize| (o * n + j) * inner + i;
            let mut m = T::NEG_INFINITY;
            for j in 0..n {
                m = m.max_nan(x[idx(j)]);
            }
            let mut s = T::ZERO;
            for j in 0..n {
                let e = (x[idx(j)] - m).exp();
                out[idx(j)] = e;
                s += e;
            }
            let inv = T::ONE / s;
            for j in 0..n {
                out[idx(j)] *= inv;
            }
        }
    }
}

/// Stable log-softmax along the middle axis: `x - logsumexp(x)`.
pub fn log_softmax<T: Real>(x: &[T], outer: usize, n: usize, inner: usize, out: &mut [T]) {
    check("log_softmax", x.len(), outer, n, inner);
    check_out("log_softmax", out.len(), x.len());
    let mut lse = vec![T::ZERO; outer * inner];
    logsumexp(x, outer, n, inner, &mut lse);
    for o in 0..outer {
        for j in 0..n {
            for i in 0..inner {
                let k = (o * n + j) * inner + i;
                out[k] = x[k] - lse[o * inner + i];
            }
        }
    }
}

/// Softmax backward: `dx = y ⊙ (g − Σ_j g⊙y)` where `y` is the softmax output.
pub fn softmax_backward<T: Real>(y: &[T], g: &[T], outer: usize, n: usize, inner: usize, dx: &mut [T]) {
    check("softmax_backward", y.len(), outer, n, inner);
    check_out("softmax_backward (g)", g.len(), y.len());
    check_out("softmax_backward (dx)", dx.len(), y.len());
    for o in 0..outer {
        for i in 0..inner {
            let idx = |j: usize| (o * n + j) * inner + i;
            let mut dot = T::ZERO;
            for j in 0..n {
                dot += g[idx(j)] * y[idx(j)];
            }
            for j in 0..n {
                dx[idx(j)] = y[idx(j)] * (g[idx(j)] - dot);
            }
        }
    }
}

/// Log-softmax backward: `dx = g − softmax(x)·Σ_j g` where `y` is the log-softmax output.
pub fn log_softmax_backward<T: Real>(y: &[T], g: &[T], outer: usize, n: usize, inner: usize, dx: &mut [T]) {
    check("log_softmax_backward", y.len(), outer, n, inner);
    check_out("log_softmax_backward (g)", g.len(), y.len());
    check_out("log_softmax_backward (dx)", dx.len(), y.len());
    for o in 0..outer {
        for i in 0..inner {
            let idx = |j: usize| (o * n + j) * inner + i;
            let mut s = T::ZERO;
            for j in 0..n {
                s += g[idx(j)];
            }
            for j in 0..n {
                dx[idx(j)] = g[idx(j)] - y[idx(j)].exp() * s;
            }
        }
    }
}

/// Broadcast backward: `acc[Σ_d idx[d]·strides[d]] += g[idx]` over every index of `g_shape`
/// (a stride of 0 sums that axis away). This is how a broadcast input receives its gradient.
pub fn reduce_broadcast<T: Real>(g: &[T], g_shape: &[usize], strides: &[usize], acc: &mut [T]) {
    let kernel = "reduce_broadcast";
    assert!(strides.len() == g_shape.len(), "{kernel}: rank mismatch: shape {g_shape:?}, strides {strides:?}");
    let n: usize = g_shape.iter().product();
    check_out(kernel, g.len(), n);
    if n == 0 {
        return;
    }
    let need = 1 + g_shape.iter().zip(strides).map(|(&d, &s)| (d - 1) * s).sum::<usize>();
    assert!(acc.len() >= need, "{kernel}: accumulator has {} elements, strides {strides:?} over {g_shape:?} need {need}", acc.len());
    let rank = g_shape.len();
    let inner = g_shape[rank - 1];
    let s_in = strides[rank - 1];
    let mut idx = vec![0usize; rank];
    let mut o = 0;
    while o < n {
        let mut off = 0;
        for d in 0..rank - 1 {
            off += idx[d] * strides[d];
        }
        for j in 0..inner {
            acc[off + j * s_in] += g[o + j];
        }
        o += inner;
        let mut d = rank - 1;
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            if idx[d] < g_shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}
