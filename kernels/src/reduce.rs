//! Reductions and normalisers along one axis.
//!
//! Every function here sees its input as a contiguous `[outer, n, inner]` array and reduces (or
//! normalises) along the middle axis of length `n`. Any axis of a row-major tensor can be put in
//! that form: `outer` = product of the dimensions before the axis, `inner` = product after it.
//!
//! Implementation: when `inner == 1` (the last axis) each row of `n` contiguous elements is
//! processed with SIMD (`f32x8`/`f64x4`, several accumulators); otherwise the kernels are
//! vectorised *across* `inner` (row `j` of a `[n, inner]` block is combined with SIMD into an
//! `inner`-long accumulator). Blocks of `outer` are split across rayon threads when the input
//! is large; the split never changes results. `exp`/`ln` are the SIMD versions from
//! [`crate::elementwise`] (≤ 1 ULP).

use crate::elementwise::{map1, map1_inplace, map2, map2_inplace, map3, map3_inplace};
use crate::parallel::{cast, cast_mut, chunk_len, dispatch, should_split, split_each, Cost};
use crate::simd_math::{self as sm, SimdVec};
use crate::Real;

fn check(kernel: &str, x: usize, outer: usize, n: usize, inner: usize) {
    let need = outer.checked_mul(n).and_then(|v| v.checked_mul(inner));
    assert!(
        need == Some(x),
        "{kernel}: input has {x} elements but the layout [outer={outer}, n={n}, inner={inner}] needs {}",
        outer as u128 * n as u128 * inner as u128
    );
}
fn check_out(kernel: &str, got: usize, want: usize) {
    assert!(got == want, "{kernel}: output has {got} elements, expected {want}");
}

/// Run `f(x_block, out_block)` over blocks of whole `outer` slices, in parallel when large.
/// `bx`/`bo` are the elements of one outer slice in `x` / `out`.
fn par_outer<T: Real, U: Send>(x: &[T], bx: usize, out: &mut [U], bo: usize, cost: Cost, f: impl Fn(&[T], &mut [U]) + Sync) {
    if bx == 0 || bo == 0 {
        if bo > 0 {
            for o in out.chunks_mut(bo) {
                f(&[], o);
            }
        }
        return;
    }
    if should_split(x.len(), cost) && x.len() > bx {
        let per = (chunk_len(cost) / bx).max(1);
        split_each(x.chunks(per * bx).zip(out.chunks_mut(per * bo)), |(x, o)| {
            for (xb, ob) in x.chunks(bx).zip(o.chunks_mut(bo)) {
                f(xb, ob)
            }
        });
    } else {
        for (xb, ob) in x.chunks(bx).zip(out.chunks_mut(bo)) {
            f(xb, ob)
        }
    }
}

/// Same as [`par_outer`] with two inputs of the same layout.
fn par_outer2<T: Real>(a: &[T], b: &[T], bx: usize, out: &mut [T], bo: usize, cost: Cost, f: impl Fn(&[T], &[T], &mut [T]) + Sync) {
    if bx == 0 {
        return;
    }
    if should_split(a.len(), cost) && a.len() > bx {
        let per = (chunk_len(cost) / bx).max(1);
        split_each(a.chunks(per * bx).zip(b.chunks(per * bx)).zip(out.chunks_mut(per * bo)), |((a, b), o)| {
            for ((ab, bb), ob) in a.chunks(bx).zip(b.chunks(bx)).zip(o.chunks_mut(bo)) {
                f(ab, bb, ob)
            }
        });
    } else {
        for ((ab, bb), ob) in a.chunks(bx).zip(b.chunks(bx)).zip(out.chunks_mut(bo)) {
            f(ab, bb, ob)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Row kernels (contiguous reduction axis).

#[inline(always)]
fn load_pad<V: SimdVec>(s: &[V::S], fill: V::S) -> V {
    let mut b = [fill; 8];
    b[..s.len()].copy_from_slice(s);
    V::load(&b)
}

/// Σ x with four vector accumulators.
#[inline(always)]
fn row_sum<V: SimdVec>(x: &[V::S]) -> V::S {
    let l = V::LANES;
    let mut acc = [V::c(0.0); 4];
    let mut c = x.chunks_exact(4 * l);
    for ch in &mut c {
        for (k, a) in acc.iter_mut().enumerate() {
            *a = *a + V::load(&ch[k * l..]);
        }
    }
    let mut r = c.remainder().chunks_exact(l);
    for ch in &mut r {
        acc[0] = acc[0] + V::load(ch);
    }
    let mut s = ((acc[0] + acc[1]) + (acc[2] + acc[3])).hsum();
    for &t in r.remainder() {
        s += t;
    }
    s
}

/// Σ a·b with four vector accumulators.
#[inline(always)]
fn row_dot<V: SimdVec>(a: &[V::S], b: &[V::S]) -> V::S {
    let l = V::LANES;
    let mut acc = [V::c(0.0); 4];
    let mut ca = a.chunks_exact(4 * l);
    let mut cb = b.chunks_exact(4 * l);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for (k, s) in acc.iter_mut().enumerate() {
            *s = V::load(&x[k * l..]).fma(V::load(&y[k * l..]), *s);
        }
    }
    let mut ra = ca.remainder().chunks_exact(l);
    let mut rb = cb.remainder().chunks_exact(l);
    for (x, y) in (&mut ra).zip(&mut rb) {
        acc[0] = V::load(x).fma(V::load(y), acc[0]);
    }
    let mut s = ((acc[0] + acc[1]) + (acc[2] + acc[3])).hsum();
    for (&x, &y) in ra.remainder().iter().zip(rb.remainder()) {
        s += x * y;
    }
    s
}

/// NaN-propagating maximum (−∞ for an empty row).
#[inline(always)]
fn row_max<V: SimdVec>(x: &[V::S]) -> V::S {
    let l = V::LANES;
    let mut acc = [V::c(f64::NEG_INFINITY); 4];
    let mut c = x.chunks_exact(4 * l);
    for ch in &mut c {
        for (k, a) in acc.iter_mut().enumerate() {
            *a = sm::max_nan(*a, V::load(&ch[k * l..]));
        }
    }
    let mut r = c.remainder().chunks_exact(l);
    for ch in &mut r {
        acc[0] = sm::max_nan(acc[0], V::load(ch));
    }
    let v = sm::max_nan(sm::max_nan(acc[0], acc[1]), sm::max_nan(acc[2], acc[3]));
    let mut m = v.hmax();
    for &t in r.remainder() {
        m = m.max_nan(t);
    }
    m
}

/// `(max, first index attaining it)`; NaN wins; `(−∞, 0)` for an empty row.
#[inline(always)]
fn row_argmax<V: SimdVec>(x: &[V::S]) -> (V::S, usize) {
    let m = row_max::<V>(x);
    let at = if m.is_nan() { x.iter().position(|v| v.is_nan()) } else { x.iter().position(|&v| v == m) };
    (m, at.unwrap_or(0))
}

/// Σ exp(x − m), optionally storing the exponentials into `out`.
#[inline(always)]
fn row_sum_exp<V: SimdVec>(x: &[V::S], m: V::S, out: Option<&mut [V::S]>) -> V::S {
    let l = V::LANES;
    let mv = V::splat(m);
    let mut acc0 = V::c(0.0);
    let mut acc1 = V::c(0.0);
    let mut c = x.chunks_exact(l);
    match out {
        Some(out) => {
            let mut oc = out.chunks_exact_mut(l);
            for (xs, os) in (&mut c).zip(&mut oc) {
                let e = sm::exp(V::load(xs) - mv);
                e.store(os);
                acc0 = acc0 + e;
            }
            let xr = c.remainder();
            if !xr.is_empty() {
                let e = sm::exp(load_pad::<V>(xr, <V::S as Real>::NEG_INFINITY) - mv);
                let mut b = [<V::S as Real>::ZERO; 8];
                e.store(&mut b);
                oc.into_remainder().copy_from_slice(&b[..xr.len()]);
                acc1 = e;
            }
        }
        None => {
            let mut c2 = x.chunks_exact(2 * l);
            for xs in &mut c2 {
                acc0 = acc0 + sm::exp(V::load(xs) - mv);
                acc1 = acc1 + sm::exp(V::load(&xs[l..]) - mv);
            }
            for xs in c2.remainder().chunks(l) {
                acc0 = acc0 + sm::exp(load_pad::<V>(xs, <V::S as Real>::NEG_INFINITY) - mv);
            }
        }
    }
    (acc0 + acc1).hsum()
}

/// `log Σ exp(x)` of a row given its max `m`.
#[inline]
fn lse_from<S: Real>(m: S, s: S) -> S {
    if m == S::INFINITY || m == S::NEG_INFINITY {
        m
    } else {
        m + s.ln()
    }
}

#[inline(always)]
fn row_lse<V: SimdVec>(x: &[V::S]) -> V::S {
    let m = row_max::<V>(x);
    if m == <V::S as Real>::INFINITY || m == <V::S as Real>::NEG_INFINITY {
        return m;
    }
    let s = row_sum_exp::<V>(x, m, None);
    // one ln per row; the SIMD ln, so the result matches the column path
    m + sm::ln(V::splat(s)).hmax()
}

// ---------------------------------------------------------------------------------------------
// Column kernels: one `[n, inner]` block, vectorised across `inner`.

#[inline(always)]
fn col_max<V: SimdVec>(x: &[V::S], n: usize, inner: usize, m: &mut [V::S]) {
    m.fill(<V::S as Real>::NEG_INFINITY);
    for j in 0..n {
        map2_inplace(m, &x[j * inner..(j + 1) * inner], #[inline(always)] |a: V, b: V| sm::max_nan(a, b));
    }
}

/// `out[i] = log Σ_j exp(x[j, i])` for one block; `s` is scratch of length `inner`.
#[inline(always)]
fn col_lse<V: SimdVec>(x: &[V::S], n: usize, inner: usize, out: &mut [V::S], m: &mut [V::S], s: &mut [V::S]) {
    col_max::<V>(x, n, inner, m);
    s.fill(<V::S as Real>::ZERO);
    for j in 0..n {
        map3_inplace(s, &x[j * inner..(j + 1) * inner], m, #[inline(always)] |s: V, x: V, m: V| s + sm::exp(x - m));
    }
    map2(m, s, out, #[inline(always)] |m: V, s: V| {
        let inf = m.abs().eq(V::c(f64::INFINITY));
        V::select(inf, m, m + sm::ln(s))
    });
}

// ---------------------------------------------------------------------------------------------
// Public API

#[inline(always)]
fn sum_axis_block<V: SimdVec>(x: &[V::S], n: usize, inner: usize, out: &mut [V::S]) {
    if inner == 1 {
        out[0] = row_sum::<V>(x);
        return;
    }
    out.fill(<V::S as Real>::ZERO);
    for j in 0..n {
        map2_inplace(out, &x[j * inner..(j + 1) * inner], #[inline(always)] |a: V, b: V| a + b);
    }
}

/// `out[o, i] = Σ_j x[o, j, i]`. `out` has `outer·inner` elements.
pub fn sum_axis<T: Real>(x: &[T], outer: usize, n: usize, inner: usize, out: &mut [T]) {
    check("sum_axis", x.len(), outer, n, inner);
    check_out("sum_axis", out.len(), outer * inner);
    par_outer(x, n * inner, out, inner, Cost(1), |x, out| {
        if n == 0 {
            out.fill(T::ZERO);
            return;
        }
        dispatch!(T, V => sum_axis_block::<V>(cast(x), n, inner, cast_mut(out)), else => {
            out.fill(T::ZERO);
            for j in 0..n {
                for (d, &s) in out.iter_mut().zip(&x[j * inner..(j + 1) * inner]) {
                    *d += s;
                }
            }
        })
    });
}

/// Block length for [`sum_all`], [`dot`] and [`sum_sq`]: sums of blocks are combined pairwise.
const SUM_BLOCK: usize = 4096;

fn pairwise<T: Real>(p: &[T]) -> T {
    match p.len() {
        0 => T::ZERO,
        1 => p[0],
        n => pairwise(&p[..n / 2]) + pairwise(&p[n / 2..]),
    }
}

fn blocked_sum<T: Real>(n: usize, f: impl Fn(std::ops::Range<usize>) -> T + Sync) -> T {
    let blocks = n.div_ceil(SUM_BLOCK);
    let range = |b: usize| b * SUM_BLOCK..((b + 1) * SUM_BLOCK).min(n);
    let partial: Vec<T> = if should_split(n, Cost(1)) {
        let mut partial = vec![T::ZERO; blocks];
        split_each(partial.iter_mut().enumerate(), |(b, p)| *p = f(range(b)));
        partial
    } else {
        (0..blocks).map(|b| f(range(b))).collect()
    };
    pairwise(&partial)
}

/// Sum of all elements. SIMD within blocks of 4096 (each lane sums ≤ 128 terms), blocks combined
/// pairwise, so rounding error grows like log n. Deterministic (independent of thread count).
pub fn sum_all<T: Real>(x: &[T]) -> T {
    blocked_sum(x.len(), |r| dispatch!(T, V => crate::parallel::cast_scalar(row_sum::<V>(cast(&x[r]))), else => x[r].iter().fold(T::ZERO, |a, &b| a + b)))
}

/// `Σ a[i]·b[i]` (same blocking and determinism as [`sum_all`]).
pub fn dot<T: Real>(a: &[T], b: &[T]) -> T {
    assert!(a.len() == b.len(), "dot: length mismatch: a has {} elements, b has {}", a.len(), b.len());
    blocked_sum(a.len(), |r| {
        dispatch!(T, V => crate::parallel::cast_scalar(row_dot::<V>(cast(&a[r.clone()]), cast(&b[r]))), else => a[r.clone()].iter().zip(&b[r]).fold(T::ZERO, |s, (&x, &y)| s + x * y))
    })
}

/// `Σ x[i]²` (e.g. for gradient-norm clipping).
pub fn sum_sq<T: Real>(x: &[T]) -> T {
    dot(x, x)
}

fn max_axis_block<T: Real>(x: &[T], n: usize, inner: usize, out: &mut [T], arg: &mut [usize]) {
    if inner == 1 {
        let (m, a) = dispatch!(T, V => {
            let (m, a) = row_argmax::<V>(cast(x));
            (crate::parallel::cast_scalar(m), a)
        }, else => {
            let mut best = T::NEG_INFINITY;
            let mut arg = 0;
            for (j, &v) in x.iter().enumerate() {
                if v > best || (v.is_nan() && !best.is_nan()) {
                    best = v;
                    arg = j;
                }
            }
            (best, arg)
        });
        out[0] = m;
        arg[0] = a;
        return;
    }
    out.fill(T::NEG_INFINITY);
    arg.fill(0);
    for j in 0..n {
        let row = &x[j * inner..(j + 1) * inner];
        for ((b, a), &v) in out.iter_mut().zip(arg.iter_mut()).zip(row) {
            let better = v > *b || (v.is_nan() && !b.is_nan());
            *b = if better { v } else { *b };
            *a = if better { j } else { *a };
        }
    }
}

/// `out[o, i] = max_j x[o, j, i]`, `argmax[o, i]` = the first `j` attaining it (NaN wins).
/// With `n = 0` the output is `-∞` and the index 0.
pub fn max_axis<T: Real>(x: &[T], outer: usize, n: usize, inner: usize, out: &mut [T], argmax: &mut [usize]) {
    check("max_axis", x.len(), outer, n, inner);
    check_out("max_axis", out.len(), outer * inner);
    check_out("max_axis (argmax)", argmax.len(), outer * inner);
    if outer * inner == 0 {
        return;
    }
    let bx = n * inner;
    if bx == 0 {
        out.fill(T::NEG_INFINITY);
        argmax.fill(0);
        return;
    }
    if should_split(x.len(), Cost(1)) && outer > 1 {
        let per = (chunk_len(Cost(1)) / bx).max(1);
        split_each(x.chunks(per * bx).zip(out.chunks_mut(per * inner)).zip(argmax.chunks_mut(per * inner)), |((x, o), a)| {
            for ((xb, ob), ab) in x.chunks(bx).zip(o.chunks_mut(inner)).zip(a.chunks_mut(inner)) {
                max_axis_block(xb, n, inner, ob, ab)
            }
        });
    } else {
        for ((xb, ob), ab) in x.chunks(bx).zip(out.chunks_mut(inner)).zip(argmax.chunks_mut(inner)) {
            max_axis_block(xb, n, inner, ob, ab)
        }
    }
}

#[inline(always)]
fn lse_block<V: SimdVec>(x: &[V::S], n: usize, inner: usize, out: &mut [V::S]) {
    if inner == 1 {
        out[0] = row_lse::<V>(x);
    } else {
        let mut m = vec![<V::S as Real>::ZERO; inner];
        let mut s = vec![<V::S as Real>::ZERO; inner];
        col_lse::<V>(x, n, inner, out, &mut m, &mut s);
    }
}

/// Numerically stable `log Σ_j exp(x[o, j, i])` (the maximum is subtracted first, so large
/// inputs do not overflow). `out` has `outer·inner` elements. A slice whose maximum is `±∞`
/// gives that maximum (`−∞` for an empty or all-`−∞` slice); NaN propagates.
pub fn logsumexp<T: Real>(x: &[T], outer: usize, n: usize, inner: usize, out: &mut [T]) {
    check("logsumexp", x.len(), outer, n, inner);
    check_out("logsumexp", out.len(), outer * inner);
    if n == 0 {
        out.fill(T::NEG_INFINITY);
        return;
    }
    par_outer(x, n * inner, out, inner, Cost(4), |x, out| {
        dispatch!(T, V => lse_block::<V>(cast(x), n, inner, cast_mut(out)), else => {
            for i in 0..inner {
                let mut m = T::NEG_INFINITY;
                for j in 0..n {
                    m = m.max_nan(x[j * inner + i]);
                }
                let mut s = T::ZERO;
                for j in 0..n {
                    s += (x[j * inner + i] - m).exp();
                }
                out[i] = lse_from(m, s);
            }
        })
    });
}

#[inline(always)]
fn softmax_block<V: SimdVec>(x: &[V::S], n: usize, inner: usize, out: &mut [V::S]) {
    if inner == 1 {
        let m = row_max::<V>(x);
        let s = row_sum_exp::<V>(x, m, Some(out));
        let inv = V::splat(<V::S as Real>::ONE / s);
        map1_inplace(out, #[inline(always)] move |v: V| v * inv);
        return;
    }
    let mut m = vec![<V::S as Real>::ZERO; inner];
    col_max::<V>(x, n, inner, &mut m);
    let mut s = vec![<V::S as Real>::ZERO; inner];
    for j in 0..n {
        let r = j * inner..(j + 1) * inner;
        map2(&x[r.clone()], &m, &mut out[r.clone()], #[inline(always)] |x: V, m: V| sm::exp(x - m));
        map2_inplace(&mut s, &out[r], #[inline(always)] |s: V, e: V| s + e);
    }
    map1_inplace(&mut s, #[inline(always)] |s: V| V::c(1.0) / s);
    for j in 0..n {
        map2_inplace(&mut out[j * inner..(j + 1) * inner], &s, #[inline(always)] |e: V, inv: V| e * inv);
    }
}

/// Stable softmax along the middle axis. `out` has the same layout as `x`.
///
/// Rows containing `+∞`, or consisting only of `−∞`, give NaN (as `exp(x − max)` is undefined
/// there); `−∞` entries next to finite ones give exactly 0.
pub fn softmax<T: Real>(x: &[T], outer: usize, n: usize, inner: usize, out: &mut [T]) {
    check("softmax", x.len(), outer, n, inner);
    check_out("softmax", out.len(), x.len());
    par_outer(x, n * inner, out, n * inner, Cost(5), |x, out| {
        dispatch!(T, V => softmax_block::<V>(cast(x), n, inner, cast_mut(out)), else => {
            for i in 0..inner {
                let mut m = T::NEG_INFINITY;
                for j in 0..n {
                    m = m.max_nan(x[j * inner + i]);
                }
                let mut s = T::ZERO;
                for j in 0..n {
                    let e = (x[j * inner + i] - m).exp();
                    out[j * inner + i] = e;
                    s += e;
                }
                for j in 0..n {
                    out[j * inner + i] /= s;
                }
            }
        })
    });
}

#[inline(always)]
fn log_softmax_block<V: SimdVec>(x: &[V::S], n: usize, inner: usize, out: &mut [V::S]) {
    // out = (x − m) − ln Σ exp(x − m): more accurate than x − lse when |m| ≫ ln Σ.
    if inner == 1 {
        let m = row_max::<V>(x);
        let ls = if m == <V::S as Real>::INFINITY || m == <V::S as Real>::NEG_INFINITY {
            <V::S as Real>::ZERO
        } else {
            sm::ln(V::splat(row_sum_exp::<V>(x, m, None))).hmax()
        };
        let (mv, lv) = (V::splat(m), V::splat(ls));
        map1(x, out, #[inline(always)] move |x: V| (x - mv) - lv);
        return;
    }
    let mut m = vec![<V::S as Real>::ZERO; inner];
    let mut s = vec![<V::S as Real>::ZERO; inner];
    col_max::<V>(x, n, inner, &mut m);
    for j in 0..n {
        map3_inplace(&mut s, &x[j * inner..(j + 1) * inner], &m, #[inline(always)] |s: V, x: V, m: V| s + sm::exp(x - m));
    }
    map3_inplace(&mut s, &m, &m, #[inline(always)] |s: V, m: V, _| V::select(m.abs().eq(V::c(f64::INFINITY)), V::c(0.0), sm::ln(s)));
    for j in 0..n {
        let r = j * inner..(j + 1) * inner;
        map3(&x[r.clone()], &m, &s, &mut out[r], #[inline(always)] |x: V, m: V, l: V| (x - m) - l);
    }
}

/// Stable log-softmax along the middle axis: `x − logsumexp(x)`, computed as
/// `(x − max) − ln Σ exp(x − max)` so it stays accurate for huge logits.
pub fn log_softmax<T: Real>(x: &[T], outer: usize, n: usize, inner: usize, out: &mut [T]) {
    check("log_softmax", x.len(), outer, n, inner);
    check_out("log_softmax", out.len(), x.len());
    par_outer(x, n * inner, out, n * inner, Cost(5), |x, out| {
        dispatch!(T, V => log_softmax_block::<V>(cast(x), n, inner, cast_mut(out)), else => {
            for i in 0..inner {
                let mut m = T::NEG_INFINITY;
                for j in 0..n {
                    m = m.max_nan(x[j * inner + i]);
                }
                let mut s = T::ZERO;
                for j in 0..n {
                    s += (x[j * inner + i] - m).exp();
                }
                let ls = if m == T::INFINITY || m == T::NEG_INFINITY { T::ZERO } else { s.ln() };
                for j in 0..n {
                    out[j * inner + i] = (x[j * inner + i] - m) - ls;
                }
            }
        })
    });
}

#[inline(always)]
fn softmax_backward_block<V: SimdVec>(y: &[V::S], g: &[V::S], n: usize, inner: usize, dx: &mut [V::S]) {
    if inner == 1 {
        let d = V::splat(row_dot::<V>(g, y));
        map2(y, g, dx, #[inline(always)] move |y: V, g: V| y * (g - d));
        return;
    }
    let mut d = vec![<V::S as Real>::ZERO; inner];
    for j in 0..n {
        let r = j * inner..(j + 1) * inner;
        map3_inplace(&mut d, &g[r.clone()], &y[r], #[inline(always)] |d: V, g: V, y: V| g.fma(y, d));
    }
    for j in 0..n {
        let r = j * inner..(j + 1) * inner;
        map3(&y[r.clone()], &g[r.clone()], &d, &mut dx[r], #[inline(always)] |y: V, g: V, d: V| y * (g - d));
    }
}

/// Softmax backward: `dx = y ⊙ (g − Σ_j g⊙y)` where `y` is the softmax output.
pub fn softmax_backward<T: Real>(y: &[T], g: &[T], outer: usize, n: usize, inner: usize, dx: &mut [T]) {
    check("softmax_backward", y.len(), outer, n, inner);
    check_out("softmax_backward (g)", g.len(), y.len());
    check_out("softmax_backward (dx)", dx.len(), y.len());
    par_outer2(y, g, n * inner, dx, n * inner, Cost(2), |y, g, dx| {
        dispatch!(T, V => softmax_backward_block::<V>(cast(y), cast(g), n, inner, cast_mut(dx)), else => {
            for i in 0..inner {
                let mut dot = T::ZERO;
                for j in 0..n {
                    dot += g[j * inner + i] * y[j * inner + i];
                }
                for j in 0..n {
                    dx[j * inner + i] = y[j * inner + i] * (g[j * inner + i] - dot);
                }
            }
        })
    });
}

#[inline(always)]
fn log_softmax_backward_block<V: SimdVec>(y: &[V::S], g: &[V::S], n: usize, inner: usize, dx: &mut [V::S]) {
    if inner == 1 {
        let s = V::splat(row_sum::<V>(g));
        map2(y, g, dx, #[inline(always)] move |y: V, g: V| (-sm::exp(y)).fma(s, g));
        return;
    }
    let mut s = vec![<V::S as Real>::ZERO; inner];
    for j in 0..n {
        map2_inplace(&mut s, &g[j * inner..(j + 1) * inner], #[inline(always)] |s: V, g: V| s + g);
    }
    for j in 0..n {
        let r = j * inner..(j + 1) * inner;
        map3(&y[r.clone()], &g[r.clone()], &s, &mut dx[r], #[inline(always)] |y: V, g: V, s: V| (-sm::exp(y)).fma(s, g));
    }
}

/// Log-softmax backward: `dx = g − softmax(x)·Σ_j g` where `y` is the log-softmax output.
pub fn log_softmax_backward<T: Real>(y: &[T], g: &[T], outer: usize, n: usize, inner: usize, dx: &mut [T]) {
    check("log_softmax_backward", y.len(), outer, n, inner);
    check_out("log_softmax_backward (g)", g.len(), y.len());
    check_out("log_softmax_backward (dx)", dx.len(), y.len());
    par_outer2(y, g, n * inner, dx, n * inner, Cost(4), |y, g, dx| {
        dispatch!(T, V => log_softmax_backward_block::<V>(cast(y), cast(g), n, inner, cast_mut(dx)), else => {
            for i in 0..inner {
                let mut s = T::ZERO;
                for j in 0..n {
                    s += g[j * inner + i];
                }
                for j in 0..n {
                    dx[j * inner + i] = g[j * inner + i] - y[j * inner + i].exp() * s;
                }
            }
        })
    });
}

/// Broadcast backward: `acc[Σ_d idx[d]·strides[d]] += g[idx]` over every index of `g_shape`
/// (a stride of 0 sums that axis away). This is how a broadcast input receives its gradient.
///
/// Axes are coalesced first; a contiguous innermost run is added with SIMD, a broadcast (stride
/// 0) innermost run is summed with SIMD and added once.
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
    let (shape, [st]) = crate::elementwise::coalesce(g_shape, [strides]);
    let rank = shape.len();
    let inner = shape[rank - 1];
    let s_in = st[rank - 1];
    let mut idx = vec![0usize; rank];
    let mut o = 0;
    while o < n {
        let mut off = 0;
        for d in 0..rank - 1 {
            off += idx[d] * st[d];
        }
        let src = &g[o..o + inner];
        match s_in {
            1 => crate::elementwise::axpy(T::ONE, src, &mut acc[off..off + inner]),
            0 => acc[off] += dispatch!(T, V => crate::parallel::cast_scalar(row_sum::<V>(cast(src))), else => src.iter().fold(T::ZERO, |a, &b| a + b)),
            _ => {
                for j in 0..inner {
                    acc[off + j * s_in] += src[j];
                }
            }
        }
        o += inner;
        crate::elementwise::next_index(&mut idx[..rank - 1], &shape[..rank - 1]);
    }
}
