//! Elementwise kernels over contiguous slices: unary maps, binary maps, their derivatives, and
//! the fused updates an autodiff engine needs (`y += a·x`, `dx = g ⊙ f'(x)`).
//!
//! Every operation is named by an enum ([`Unary`], [`Binary`]) so that the autodiff crate, the
//! benchmarks and the tests all talk about the same set.

use crate::parallel::{cast, cast_mut, cast_scalar, chunk_len, dispatch, dispatch_lanes, should_split, split_each, Cost};
use crate::simd_math::{self as sm, SimdVec};
use crate::Real;

/// A unary elementwise function.
///
/// [`unary`] evaluates these with SIMD (`f32x8` / `f64x4`); the transcendental ones use this
/// crate's own vector `exp`/`ln`/`log1p`/`tanh`/`sigmoid` (range reduction + polynomial,
/// Cephes/fdlibm style; see `simd_math.rs`). Maximum errors measured by
/// `kernels/tests/suite/simd_math.rs` (and asserted there, with the bounds in parentheses) over the
/// whole finite input range, large |x| included:
///
/// * **f32, against an f64 reference** (std f64 functions of the f32 input, or the overflow-free
///   formulas built from them; their own error, ~1e-16, is negligible at f32 precision).
///   *Relative error* `|y − r| / |r|` over every 251st f32 bit pattern (≈17M finite inputs of both
///   signs, up to ±f32::MAX) plus dense linear sweeps of [−120, 120] and [−1, 1], taken over the
///   results that are normal f32 numbers (a correctly rounded f32 already has up to
///   2⁻²⁴ ≈ 5.96e-8). Results that are subnormal in f32 have fewer significant bits, so they are
///   judged in absolute ULPs (2⁻¹⁴⁹) instead; results that are exactly 0 or beyond ±f32::MAX
///   are exactly 0 / ±∞. *ULPs* of the f32 result over every 997th bit pattern plus the same sweeps.
/// * **f64, against std's f64 functions** (glibc), i.e. a reference of the *same* precision, not
///   the exact value: the ULP figures include std's own error (about an ULP or less for exp/ln;
///   sigmoid, softplus and log-sigmoid are compared with formulas composed of std functions,
///   each carrying its own rounding). Measured over ≈3M bit patterns evenly spaced
///   over all 2⁶⁴ plus dense sweeps of [−760, 760] and [−1, 1]; subnormal results in absolute
///   ULPs (2⁻¹⁰⁷⁴). A k-ULP bound means a relative difference from std of at most k·2⁻⁵²
///   (≈ k·2.2e-16) for normal results. No higher-precision reference was used, so the error
///   against the exact value was not measured.
///
/// | op | f32: max relative error vs f64 | f32: ULPs vs f64 | f64: ULPs vs std f64 |
/// |---|---|---|---|
/// | `Exp` | 8.07e-8 (9e-8) | 0.97 (1) | 1 (1) |
/// | `Log` | 8.01e-8 (9e-8) | 0.79 (1) | 1 (1) |
/// | `Log1p` | 1.75e-7 (2e-7) | 2.37 (2.5) | 2 (2) |
/// | `Tanh` | 1.71e-7 (2e-7) | 2.24 (2.5) | 3 (3) |
/// | `Sigmoid` | 1.82e-7 (2e-7) | 2.45 (2.5) | 3 (3) |
/// | `Softplus` | 2.05e-7 (2.2e-7) | 2.49 (2.5) | 3 (3) |
/// | `LogSigmoid` | 2.05e-7 (2.2e-7) | 2.69 (3) | 3 (3) |
///
/// Special values: NaN propagates; `exp` overflows to `+∞` and underflows (through correctly
/// rounded subnormals) to `0`; `tanh` saturates to `±1`; `sigmoid` is never NaN for non-NaN
/// input; `ln(0) = −∞`, `ln(x<0) = NaN`. `Neg`/`Abs`/`Sqrt`/`Relu`/`LeakyRelu` are exact.
/// The scalar [`Unary::apply`] uses `std` and may differ from the slice kernels within these
/// bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unary {
    /// `-x`
    Neg,
    /// `|x|` (derivative at 0 taken as 0).
    Abs,
    /// `eˣ`
    Exp,
    /// `ln x`
    Log,
    /// `ln(1 + x)`, accurate for small `x`.
    Log1p,
    /// `√x`
    Sqrt,
    /// `tanh x`
    Tanh,
    /// `σ(x) = 1 / (1 + e⁻ˣ)`, without overflow for large `|x|`.
    Sigmoid,
    /// `max(x, 0)` (derivative at 0 taken as 0).
    Relu,
    /// `x` for `x > 0`, `slope·x` otherwise.
    LeakyRelu(f64),
    /// `ln(1 + eˣ)`, computed as `max(x,0) + ln(1 + e^{-|x|})` so it never overflows.
    Softplus,
    /// `ln σ(x) = -softplus(-x)`.
    LogSigmoid,
}

impl Unary {
    /// One of each kind (`LeakyRelu` with slope 0.01), for the tests and benchmarks that sweep
    /// every kind.
    pub const ALL: [Unary; 12] = [
        Unary::Neg,
        Unary::Abs,
        Unary::Exp,
        Unary::Log,
        Unary::Log1p,
        Unary::Sqrt,
        Unary::Tanh,
        Unary::Sigmoid,
        Unary::Relu,
        Unary::LeakyRelu(0.01),
        Unary::Softplus,
        Unary::LogSigmoid,
    ];

    /// Short lowercase name (used in op registries and benchmark labels).
    pub fn name(&self) -> &'static str {
        match self {
            Unary::Neg => "neg",
            Unary::Abs => "abs",
            Unary::Exp => "exp",
            Unary::Log => "log",
            Unary::Log1p => "log1p",
            Unary::Sqrt => "sqrt",
            Unary::Tanh => "tanh",
            Unary::Sigmoid => "sigmoid",
            Unary::Relu => "relu",
            Unary::LeakyRelu(_) => "leaky_relu",
            Unary::Softplus => "softplus",
            Unary::LogSigmoid => "log_sigmoid",
        }
    }

    /// The function at one point (scalar reference; the slice kernels may use SIMD).
    #[inline]
    pub fn apply<T: Real>(&self, x: T) -> T {
        match *self {
            Unary::Neg => -x,
            Unary::Abs => x.abs(),
            Unary::Exp => x.exp(),
            Unary::Log => x.ln(),
            Unary::Log1p => x.ln_1p(),
            Unary::Sqrt => x.sqrt(),
            Unary::Tanh => x.tanh(),
            Unary::Sigmoid => sigmoid_scalar(x),
            Unary::Relu => {
                if x > T::ZERO {
                    x
                } else if x.is_nan() {
                    x
                } else {
                    T::ZERO
                }
            }
            Unary::LeakyRelu(s) => {
                if x > T::ZERO {
                    x
                } else {
                    T::from_f64(s) * x
                }
            }
            Unary::Softplus => softplus_scalar(x),
            Unary::LogSigmoid => -softplus_scalar(-x),
        }
    }

    /// The derivative `f'(x)`, given `x` and `y = f(x)` (whichever is cheaper is used).
    #[inline]
    pub fn derivative<T: Real>(&self, x: T, y: T) -> T {
        match *self {
            Unary::Neg => -T::ONE,
            Unary::Abs => {
                if x > T::ZERO {
                    T::ONE
                } else if x < T::ZERO {
                    -T::ONE
                } else {
                    T::ZERO
                }
            }
            Unary::Exp => y,
            Unary::Log => T::ONE / x,
            Unary::Log1p => T::ONE / (T::ONE + x),
            Unary::Sqrt => T::from_f64(0.5) / y,
            Unary::Tanh => T::ONE - y * y,
            Unary::Sigmoid => y * (T::ONE - y),
            Unary::Relu => {
                if x > T::ZERO {
                    T::ONE
                } else {
                    T::ZERO
                }
            }
            Unary::LeakyRelu(s) => {
                if x > T::ZERO {
                    T::ONE
                } else {
                    T::from_f64(s)
                }
            }
            Unary::Softplus => sigmoid_scalar(x),
            Unary::LogSigmoid => sigmoid_scalar(-x),
        }
    }
}

/// Overflow-free logistic function.
#[inline]
pub fn sigmoid_scalar<T: Real>(x: T) -> T {
    if x >= T::ZERO {
        T::ONE / (T::ONE + (-x).exp())
    } else {
        let e = x.exp();
        e / (T::ONE + e)
    }
}

/// Overflow-free `ln(1 + eˣ)`.
#[inline]
pub fn softplus_scalar<T: Real>(x: T) -> T {
    let m = if x > T::ZERO { x } else { T::ZERO };
    m + (-x.abs()).exp().ln_1p()
}

/// A binary elementwise function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binary {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a · b`
    Mul,
    /// `a / b`
    Div,
    /// `max(a, b)` (NaN propagates)
    Max,
    /// `min(a, b)` (NaN propagates)
    Min,
    /// `aᵇ`
    Pow,
}

impl Binary {
    /// Short lowercase name.
    pub fn name(&self) -> &'static str {
        match self {
            Binary::Add => "add",
            Binary::Sub => "sub",
            Binary::Mul => "mul",
            Binary::Div => "div",
            Binary::Max => "maximum",
            Binary::Min => "minimum",
            Binary::Pow => "pow",
        }
    }
    /// The function at one point.
    #[inline(always)]
    pub fn apply<T: Real>(&self, a: T, b: T) -> T {
        match self {
            Binary::Add => a + b,
            Binary::Sub => a - b,
            Binary::Mul => a * b,
            Binary::Div => a / b,
            Binary::Max => a.max_nan(b),
            Binary::Min => a.min_nan(b),
            Binary::Pow => a.powf(b),
        }
    }
}

/// Panics (naming the kernel) unless `got == want`. Inlined, with the message built only on the
/// failing path: the kernels run on one-element slices in dynamic graphs, where an out-of-line
/// check that computes the kernel's name first costs as much as the arithmetic.
#[inline(always)]
fn check_len(kernel: &str, what: &str, got: usize, want: usize) {
    if got != want {
        length_mismatch(kernel, what, got, want);
    }
}

#[cold]
#[inline(never)]
fn length_mismatch(kernel: &str, what: &str, got: usize, want: usize) -> ! {
    panic!("{kernel}: length mismatch: {what} has {got} elements, expected {want}");
}

impl Unary {
    /// Relative per-element cost, for the threading decision.
    fn cost(&self) -> Cost {
        Cost(match self {
            Unary::Neg | Unary::Abs | Unary::Relu | Unary::LeakyRelu(_) => 1,
            Unary::Sqrt => 2,
            Unary::Exp => 4,
            Unary::Sigmoid | Unary::Tanh | Unary::Log | Unary::Log1p => 6,
            Unary::Softplus | Unary::LogSigmoid => 10,
        })
    }
}

impl Binary {
    fn cost(&self) -> Cost {
        Cost(match self {
            Binary::Div => 2,
            Binary::Pow => 30,
            _ => 1,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Parallel drivers: split contiguous slices into fixed-size chunks (deterministic) when the work
// is large enough, else run on the calling thread.

fn par1<T: Real>(cost: Cost, x: &[T], y: &mut [T], f: impl Fn(&[T], &mut [T]) + Sync) {
    if should_split(x.len(), cost) {
        let c = chunk_len(cost);
        split_each(x.chunks(c).zip(y.chunks_mut(c)), |(x, y)| f(x, y));
    } else {
        f(x, y)
    }
}

fn par_inplace<T: Real>(cost: Cost, x: &mut [T], f: impl Fn(&mut [T]) + Sync) {
    if should_split(x.len(), cost) {
        let c = chunk_len(cost);
        split_each(x.chunks_mut(c), |x| f(x));
    } else {
        f(x)
    }
}

fn par2<T: Real>(cost: Cost, a: &[T], b: &[T], out: &mut [T], f: impl Fn(&[T], &[T], &mut [T]) + Sync) {
    if should_split(a.len(), cost) {
        let c = chunk_len(cost);
        split_each(a.chunks(c).zip(b.chunks(c)).zip(out.chunks_mut(c)), |((a, b), o)| f(a, b, o));
    } else {
        f(a, b, out)
    }
}

fn par3<T: Real>(cost: Cost, x: &[T], y: &[T], g: &[T], out: &mut [T], f: impl Fn(&[T], &[T], &[T], &mut [T]) + Sync) {
    if should_split(x.len(), cost) {
        let c = chunk_len(cost);
        split_each(x.chunks(c).zip(y.chunks(c)).zip(g.chunks(c)).zip(out.chunks_mut(c)), |(((x, y), g), o)| f(x, y, g, o));
    } else {
        f(x, y, g, out)
    }
}

// ---------------------------------------------------------------------------------------------
// SIMD map helpers. Tails are computed by the same vector code on a zero-padded vector
// (`load_partial`), so every element's result is independent of its position (and of the thread
// split).

#[inline(always)]
pub(crate) fn map1<V: SimdVec>(x: &[V::S], y: &mut [V::S], f: impl Fn(V) -> V) {
    let mut xc = x.chunks_exact(V::LANES);
    let mut yc = y.chunks_exact_mut(V::LANES);
    for (xs, ys) in (&mut xc).zip(&mut yc) {
        f(V::load(xs)).store(ys);
    }
    let (xr, yr) = (xc.remainder(), yc.into_remainder());
    if !xr.is_empty() {
        f(V::load_partial(xr)).store_partial(yr);
    }
}

#[inline(always)]
pub(crate) fn map1_inplace<V: SimdVec>(x: &mut [V::S], f: impl Fn(V) -> V) {
    let mut xc = x.chunks_exact_mut(V::LANES);
    for xs in &mut xc {
        f(V::load(xs)).store(xs);
    }
    let xr = xc.into_remainder();
    if !xr.is_empty() {
        let v = f(V::load_partial(xr));
        v.store_partial(xr);
    }
}

#[inline(always)]
pub(crate) fn map2<V: SimdVec>(a: &[V::S], b: &[V::S], out: &mut [V::S], f: impl Fn(V, V) -> V) {
    let mut ac = a.chunks_exact(V::LANES);
    let mut bc = b.chunks_exact(V::LANES);
    let mut oc = out.chunks_exact_mut(V::LANES);
    for ((as_, bs), os) in (&mut ac).zip(&mut bc).zip(&mut oc) {
        f(V::load(as_), V::load(bs)).store(os);
    }
    let (ar, br, or) = (ac.remainder(), bc.remainder(), oc.into_remainder());
    if !ar.is_empty() {
        f(V::load_partial(ar), V::load_partial(br)).store_partial(or);
    }
}

#[inline(always)]
pub(crate) fn map2_inplace<V: SimdVec>(a: &mut [V::S], b: &[V::S], f: impl Fn(V, V) -> V) {
    let mut ac = a.chunks_exact_mut(V::LANES);
    let mut bc = b.chunks_exact(V::LANES);
    for (as_, bs) in (&mut ac).zip(&mut bc) {
        f(V::load(as_), V::load(bs)).store(as_);
    }
    let (ar, br) = (ac.into_remainder(), bc.remainder());
    if !ar.is_empty() {
        let v = f(V::load_partial(ar), V::load_partial(br));
        v.store_partial(ar);
    }
}

#[inline(always)]
pub(crate) fn map3<V: SimdVec>(x: &[V::S], y: &[V::S], g: &[V::S], out: &mut [V::S], f: impl Fn(V, V, V) -> V) {
    let mut xc = x.chunks_exact(V::LANES);
    let mut yc = y.chunks_exact(V::LANES);
    let mut gc = g.chunks_exact(V::LANES);
    let mut oc = out.chunks_exact_mut(V::LANES);
    for (((xs, ys), gs), os) in (&mut xc).zip(&mut yc).zip(&mut gc).zip(&mut oc) {
        f(V::load(xs), V::load(ys), V::load(gs)).store(os);
    }
    let (xr, yr, gr, or) = (xc.remainder(), yc.remainder(), gc.remainder(), oc.into_remainder());
    if !xr.is_empty() {
        f(V::load_partial(xr), V::load_partial(yr), V::load_partial(gr)).store_partial(or);
    }
}

#[inline(always)]
pub(crate) fn map3_inplace<V: SimdVec>(acc: &mut [V::S], a: &[V::S], b: &[V::S], f: impl Fn(V, V, V) -> V) {
    let mut cc = acc.chunks_exact_mut(V::LANES);
    let mut ac = a.chunks_exact(V::LANES);
    let mut bc = b.chunks_exact(V::LANES);
    for ((cs, as_), bs) in (&mut cc).zip(&mut ac).zip(&mut bc) {
        f(V::load(cs), V::load(as_), V::load(bs)).store(cs);
    }
    let (cr, ar, br) = (cc.into_remainder(), ac.remainder(), bc.remainder());
    if !cr.is_empty() {
        let v = f(V::load_partial(cr), V::load_partial(ar), V::load_partial(br));
        v.store_partial(cr);
    }
}

/// Where a unary map reads and writes.
enum Io<'a, S> {
    Out(&'a [S], &'a mut [S]),
    InPlace(&'a mut [S]),
}

impl<S: Real> Io<'_, S> {
    #[inline(always)]
    fn run<V: SimdVec<S = S>>(self, f: impl Fn(V) -> V) {
        match self {
            Io::Out(x, y) => map1(x, y, f),
            Io::InPlace(x) => map1_inplace(x, f),
        }
    }
}

/// The SIMD body of every unary op (the `match` is outside the loops).
#[inline(always)]
fn unary_simd<V: SimdVec>(op: Unary, io: Io<'_, V::S>) {
    match op {
        Unary::Neg => io.run(#[inline(always)] |x: V| -x),
        Unary::Abs => io.run(#[inline(always)] |x: V| x.abs()),
        Unary::Exp => io.run(#[inline(always)] |x: V| sm::exp(x)),
        Unary::Log => io.run(#[inline(always)] |x: V| sm::ln(x)),
        Unary::Log1p => io.run(#[inline(always)] |x: V| sm::log1p(x)),
        Unary::Sqrt => io.run(#[inline(always)] |x: V| x.sqrt()),
        Unary::Tanh => io.run(#[inline(always)] |x: V| sm::tanh(x)),
        Unary::Sigmoid => io.run(#[inline(always)] |x: V| sm::sigmoid(x)),
        Unary::Relu => io.run(#[inline(always)] |x: V| V::select(x.gt(V::c(0.0)) | x.is_nan(), x, V::c(0.0))),
        Unary::LeakyRelu(s) => {
            let s = V::c(s);
            io.run(#[inline(always)] move |x: V| V::select(x.gt(V::c(0.0)), x, s * x))
        }
        Unary::Softplus => io.run(#[inline(always)] |x: V| sm::softplus(x)),
        Unary::LogSigmoid => io.run(#[inline(always)] |x: V| sm::log_sigmoid(x)),
    }
}

fn unary_serial<T: Real>(op: Unary, x: &[T], y: &mut [T]) {
    dispatch_lanes!(T, V => unary_simd::<V>(op, Io::Out(cast(x), cast_mut(y))), else => {
        for (yi, &xi) in y.iter_mut().zip(x) {
            *yi = op.apply(xi);
        }
    })
}

fn unary_inplace_serial<T: Real>(op: Unary, x: &mut [T]) {
    dispatch_lanes!(T, V => unary_simd::<V>(op, Io::InPlace(cast_mut(x))), else => {
        for xi in x.iter_mut() {
            *xi = op.apply(*xi);
        }
    })
}

/// `y[i] = f(x[i])`.
///
/// SIMD (`f32x8` / `f64x4`) for every op; large inputs are split across rayon threads. The
/// transcendental ops use this crate's own vector `exp`/`ln`/`log1p`/`tanh`/`sigmoid`; their
/// measured error bounds are listed on [`Unary`]. Results do not depend on the position of an
/// element in the slice or on the number of threads.
pub fn unary<T: Real>(op: Unary, x: &[T], y: &mut [T]) {
    check_len(op.name(), "output", y.len(), x.len());
    par1(op.cost(), x, y, |x, y| unary_serial(op, x, y));
}

/// `x[i] = f(x[i])` in place (same results as [`unary`]).
pub fn unary_inplace<T: Real>(op: Unary, x: &mut [T]) {
    par_inplace(op.cost(), x, |x| unary_inplace_serial(op, x));
}

/// Where a unary backward map reads and writes: `dx` apart from `g`, or `g` overwritten.
enum Io3<'a, S> {
    Out { x: &'a [S], y: &'a [S], g: &'a [S], dx: &'a mut [S] },
    InPlace { x: &'a [S], y: &'a [S], g: &'a mut [S] },
}

impl<S: Real> Io3<'_, S> {
    /// Runs `f(x, y, g)` elementwise into the output.
    #[inline(always)]
    fn run<V: SimdVec<S = S>>(self, f: impl Fn(V, V, V) -> V) {
        match self {
            Io3::Out { x, y, g, dx } => map3(x, y, g, dx, f),
            Io3::InPlace { x, y, g } => map3_inplace(g, x, y, #[inline(always)] move |g: V, x: V, y: V| f(x, y, g)),
        }
    }
}

#[inline(always)]
fn unary_backward_simd<V: SimdVec>(op: Unary, io: Io3<'_, V::S>) {
    let zero = V::c(0.0);
    let one = V::c(1.0);
    match op {
        Unary::Neg => io.run(#[inline(always)] |_, _, g: V| -g),
        Unary::Abs => io.run(#[inline(always)] move |x: V, _, g: V| V::select(x.gt(zero), g, V::select(x.lt(zero), -g, zero))),
        Unary::Exp => io.run(#[inline(always)] |_, y: V, g: V| g * y),
        Unary::Log => io.run(#[inline(always)] |x: V, _, g: V| g / x),
        Unary::Log1p => io.run(#[inline(always)] move |x: V, _, g: V| g / (one + x)),
        Unary::Sqrt => io.run(#[inline(always)] |_, y: V, g: V| g * (V::c(0.5) / y)),
        Unary::Tanh => io.run(#[inline(always)] move |_, y: V, g: V| g * (-y).fma(y, one)),
        Unary::Sigmoid => io.run(#[inline(always)] move |_, y: V, g: V| g * (y * (one - y))),
        Unary::Relu => io.run(#[inline(always)] move |x: V, _, g: V| V::select(x.gt(zero), g, zero)),
        Unary::LeakyRelu(s) => {
            let s = V::c(s);
            io.run(#[inline(always)] move |x: V, _, g: V| V::select(x.gt(zero), g, g * s))
        }
        Unary::Softplus => io.run(#[inline(always)] |x: V, _, g: V| g * sm::sigmoid(x)),
        Unary::LogSigmoid => io.run(#[inline(always)] |x: V, _, g: V| g * sm::sigmoid(-x)),
    }
}

/// Backward helper: `dx[i] = g[i] · f'(x[i])`, where `y = f(x)` was saved by the forward pass.
///
/// Ops whose derivative needs only `y` (exp, sqrt, tanh, sigmoid) or only `x` read just that
/// one, so the other argument may be any slice of the right length (e.g. `x` passed twice).
pub fn unary_backward<T: Real>(op: Unary, x: &[T], y: &[T], g: &[T], dx: &mut [T]) {
    let kernel = "unary_backward";
    check_len(kernel, "y", y.len(), x.len());
    check_len(kernel, "g", g.len(), x.len());
    check_len(kernel, "dx", dx.len(), x.len());
    par3(unary_backward_cost(op), x, y, g, dx, |x, y, g, dx| {
        dispatch_lanes!(T, V => unary_backward_simd::<V>(op, Io3::Out { x: cast(x), y: cast(y), g: cast(g), dx: cast_mut(dx) }), else => {
            for i in 0..x.len() {
                dx[i] = g[i] * op.derivative(x[i], y[i]);
            }
        })
    });
}

/// [`unary_backward`] writing into the gradient's own buffer: `g[i] ← g[i] · f'(x[i])`, with
/// the same results bit for bit. The backward walk uses it when it holds the only reference
/// to the incoming gradient, which then needs no second buffer.
pub fn unary_backward_inplace<T: Real>(op: Unary, x: &[T], y: &[T], g: &mut [T]) {
    let kernel = "unary_backward_inplace";
    check_len(kernel, "y", y.len(), x.len());
    check_len(kernel, "g", g.len(), x.len());
    let f = |x: &[T], y: &[T], g: &mut [T]| {
        dispatch_lanes!(T, V => unary_backward_simd::<V>(op, Io3::InPlace { x: cast(x), y: cast(y), g: cast_mut(g) }), else => {
            for i in 0..x.len() {
                g[i] = g[i] * op.derivative(x[i], y[i]);
            }
        })
    };
    let cost = unary_backward_cost(op);
    if should_split(x.len(), cost) {
        let c = chunk_len(cost);
        split_each(x.chunks(c).zip(y.chunks(c)).zip(g.chunks_mut(c)), |((x, y), g)| f(x, y, g));
    } else {
        f(x, y, g)
    }
}

fn unary_backward_cost(op: Unary) -> Cost {
    match op {
        Unary::Softplus | Unary::LogSigmoid => Cost(6),
        _ => Cost(2),
    }
}

#[inline(always)]
fn binary_simd<V: SimdVec>(op: Binary, a: &[V::S], b: &[V::S], out: &mut [V::S]) {
    match op {
        Binary::Add => map2(a, b, out, #[inline(always)] |a: V, b: V| a + b),
        Binary::Sub => map2(a, b, out, #[inline(always)] |a: V, b: V| a - b),
        Binary::Mul => map2(a, b, out, #[inline(always)] |a: V, b: V| a * b),
        Binary::Div => map2(a, b, out, #[inline(always)] |a: V, b: V| a / b),
        Binary::Max => map2(a, b, out, #[inline(always)] |a: V, b: V| sm::max_nan(a, b)),
        Binary::Min => map2(a, b, out, #[inline(always)] |a: V, b: V| sm::min_nan(a, b)),
        Binary::Pow => {
            for i in 0..a.len() {
                out[i] = a[i].powf(b[i]);
            }
        }
    }
}

#[inline(always)]
fn binary_inplace_simd<V: SimdVec>(op: Binary, a: &mut [V::S], b: &[V::S]) {
    match op {
        Binary::Add => map2_inplace(a, b, #[inline(always)] |a: V, b: V| a + b),
        Binary::Sub => map2_inplace(a, b, #[inline(always)] |a: V, b: V| a - b),
        Binary::Mul => map2_inplace(a, b, #[inline(always)] |a: V, b: V| a * b),
        Binary::Div => map2_inplace(a, b, #[inline(always)] |a: V, b: V| a / b),
        Binary::Max => map2_inplace(a, b, #[inline(always)] |a: V, b: V| sm::max_nan(a, b)),
        Binary::Min => map2_inplace(a, b, #[inline(always)] |a: V, b: V| sm::min_nan(a, b)),
        Binary::Pow => {
            for i in 0..a.len() {
                a[i] = a[i].powf(b[i]);
            }
        }
    }
}

#[inline(always)]
fn vadd<V: SimdVec>(a: V, b: V) -> V {
    a + b
}
#[inline(always)]
fn vsub<V: SimdVec>(a: V, b: V) -> V {
    a - b
}
#[inline(always)]
fn vmul<V: SimdVec>(a: V, b: V) -> V {
    a * b
}
#[inline(always)]
fn vdiv<V: SimdVec>(a: V, b: V) -> V {
    a / b
}

/// `out = a ∘ s` (`scalar_left == false`) or `out = s ∘ a` (`scalar_left == true`).
#[inline(always)]
fn binary_scalar_simd<V: SimdVec>(op: Binary, a: &[V::S], s: V::S, scalar_left: bool, out: &mut [V::S]) {
    let sv = V::splat(s);
    macro_rules! go {
        ($f:expr) => {
            if scalar_left {
                map1(a, out, #[inline(always)] move |a: V| $f(sv, a))
            } else {
                map1(a, out, #[inline(always)] move |a: V| $f(a, sv))
            }
        };
    }
    match op {
        Binary::Add => go!(vadd::<V>),
        Binary::Sub => go!(vsub::<V>),
        Binary::Mul => go!(vmul::<V>),
        Binary::Div => go!(vdiv::<V>),
        Binary::Max => go!(sm::max_nan::<V>),
        Binary::Min => go!(sm::min_nan::<V>),
        Binary::Pow => {
            for i in 0..a.len() {
                out[i] = if scalar_left { s.powf(a[i]) } else { a[i].powf(s) };
            }
        }
    }
}

pub(crate) fn binary_serial<T: Real>(op: Binary, a: &[T], b: &[T], out: &mut [T]) {
    dispatch!(T, V => binary_simd::<V>(op, cast(a), cast(b), cast_mut(out)), else => {
        for i in 0..a.len() {
            out[i] = op.apply(a[i], b[i]);
        }
    })
}

pub(crate) fn binary_scalar_serial<T: Real>(op: Binary, a: &[T], s: T, scalar_left: bool, out: &mut [T]) {
    dispatch!(T, V => binary_scalar_simd::<V>(op, cast(a), cast_scalar(s), scalar_left, cast_mut(out)), else => {
        for i in 0..a.len() {
            out[i] = if scalar_left { op.apply(s, a[i]) } else { op.apply(a[i], s) };
        }
    })
}

/// `out[i] = a[i] ∘ b[i]` for equal-length slices (SIMD; `Pow` is scalar `powf`).
pub fn binary<T: Real>(op: Binary, a: &[T], b: &[T], out: &mut [T]) {
    check_len(op.name(), "b", b.len(), a.len());
    check_len(op.name(), "output", out.len(), a.len());
    par2(op.cost(), a, b, out, |a, b, o| binary_serial(op, a, b, o));
}

/// `a[i] = a[i] ∘ b[i]` in place (same results as [`binary`]).
pub fn binary_inplace<T: Real>(op: Binary, a: &mut [T], b: &[T]) {
    check_len(op.name(), "b", b.len(), a.len());
    let cost = op.cost();
    let f = |a: &mut [T], b: &[T]| {
        dispatch!(T, V => binary_inplace_simd::<V>(op, cast_mut(a), cast(b)), else => {
            for i in 0..a.len() {
                a[i] = op.apply(a[i], b[i]);
            }
        })
    };
    if should_split(a.len(), cost) {
        let c = chunk_len(cost);
        split_each(a.chunks_mut(c).zip(b.chunks(c)), |(a, b)| f(a, b));
    } else {
        f(a, b)
    }
}

/// `a[r·n + j] += row[j]` for every row `r` of a row-major `[m, n]` matrix `a` (`n =
/// row.len()`): a bias added to every row in place, each sum as [`binary`] forms it. Large
/// matrices are split by whole rows across threads.
///
/// # Panics
/// If `a.len()` is not a multiple of `row.len()`, or `row` is empty while `a` is not.
pub fn add_rows_inplace<T: Real>(a: &mut [T], row: &[T]) {
    let n = row.len();
    assert!(
        if n == 0 { a.is_empty() } else { a.len() % n == 0 },
        "add_rows_inplace: a matrix of {} values does not split into rows of {n}",
        a.len()
    );
    if a.is_empty() {
        return;
    }
    let f = |a: &mut [T]| {
        dispatch!(T, V => {
            for r in a.chunks_exact_mut(n) {
                binary_inplace_simd::<V>(Binary::Add, cast_mut(r), cast(row));
            }
        }, else => {
            for r in a.chunks_exact_mut(n) {
                for (x, &b) in r.iter_mut().zip(row) {
                    *x = *x + b;
                }
            }
        })
    };
    let cost = Binary::Add.cost();
    if should_split(a.len(), cost) {
        // Chunks of whole rows, about as long as the elementwise chunks.
        let c = chunk_len(cost).div_ceil(n) * n;
        split_each(a.chunks_mut(c), f);
    } else {
        f(a)
    }
}

/// `out[i] = a[i] ∘ s` (scalar on the right).
pub fn binary_scalar<T: Real>(op: Binary, a: &[T], s: T, out: &mut [T]) {
    check_len(op.name(), "output", out.len(), a.len());
    par1(op.cost(), a, out, |a, o| binary_scalar_serial(op, a, s, false, o));
}

/// Advances a row-major multi-index over `shape` by one (wrapping to zeros after the last).
#[inline]
pub(crate) fn next_index(idx: &mut [usize], shape: &[usize]) {
    let mut d = idx.len();
    while d > 0 {
        d -= 1;
        idx[d] += 1;
        if idx[d] < shape[d] {
            return;
        }
        idx[d] = 0;
    }
}

/// Merge adjacent axes that are contiguous in every operand and drop size-1 axes, so the inner
/// loop is as long as possible. Returns `(shape, strides of each operand)`, innermost last;
/// the output (contiguous row-major) merges whenever the inputs do.
pub(crate) fn coalesce<const K: usize>(shape: &[usize], strides: [&[usize]; K]) -> (Vec<usize>, [Vec<usize>; K]) {
    let mut sh: Vec<usize> = Vec::with_capacity(shape.len());
    let mut st: [Vec<usize>; K] = std::array::from_fn(|_| Vec::with_capacity(shape.len()));
    for d in (0..shape.len()).rev() {
        if shape[d] == 1 {
            continue;
        }
        if let Some(&last) = sh.last() {
            if (0..K).all(|k| strides[k][d] == st[k].last().unwrap() * last) {
                *sh.last_mut().unwrap() *= shape[d];
                continue;
            }
        }
        sh.push(shape[d]);
        for k in 0..K {
            st[k].push(strides[k][d]);
        }
    }
    if sh.is_empty() {
        sh.push(1);
        for s in st.iter_mut() {
            s.push(0);
        }
    }
    sh.reverse();
    for s in st.iter_mut() {
        s.reverse();
    }
    (sh, st)
}

/// Broadcasting binary map over strided inputs.
///
/// `out` is contiguous row-major with shape `out_shape`; input element for output index `idx` is
/// at `Σ idx[d]·a_strides[d]` (a stride of 0 broadcasts that axis). Axes are coalesced first;
/// the innermost run uses the SIMD kernels when it is contiguous or broadcast in each input,
/// and rows are split across threads for large outputs.
pub fn binary_broadcast<T: Real>(
    op: Binary,
    a: &[T],
    a_strides: &[usize],
    b: &[T],
    b_strides: &[usize],
    out: &mut [T],
    out_shape: &[usize],
) {
    let kernel = "binary_broadcast";
    let rank = out_shape.len();
    assert!(
        a_strides.len() == rank && b_strides.len() == rank,
        "{kernel}: rank mismatch: out shape {out_shape:?}, a strides {a_strides:?}, b strides {b_strides:?}"
    );
    let n: usize = out_shape.iter().product();
    check_len(kernel, "output", out.len(), n);
    if n == 0 {
        return;
    }
    let need = |st: &[usize]| 1 + out_shape.iter().zip(st).map(|(&d, &s)| (d - 1) * s).sum::<usize>();
    assert!(a.len() >= need(a_strides), "{kernel}: input a has {} elements, strides {a_strides:?} over {out_shape:?} need {}", a.len(), need(a_strides));
    assert!(b.len() >= need(b_strides), "{kernel}: input b has {} elements, strides {b_strides:?} over {out_shape:?} need {}", b.len(), need(b_strides));
    let (shape, [sa_all, sb_all]) = coalesce(out_shape, [a_strides, b_strides]);
    let r = shape.len();
    let inner = shape[r - 1];
    let (sa, sb) = (sa_all[r - 1], sb_all[r - 1]);
    let rows = n / inner;
    // One output row: offsets from the row index by mixed-radix decomposition.
    let do_rows = |row0: usize, out: &mut [T]| {
        for (k, dst) in out.chunks_exact_mut(inner).enumerate() {
            let mut rem = row0 + k;
            let (mut oa, mut ob) = (0, 0);
            for d in (0..r - 1).rev() {
                let i = rem % shape[d];
                rem /= shape[d];
                oa += i * sa_all[d];
                ob += i * sb_all[d];
            }
            match (sa, sb) {
                (1, 1) => binary_serial(op, &a[oa..oa + inner], &b[ob..ob + inner], dst),
                (1, 0) => binary_scalar_serial(op, &a[oa..oa + inner], b[ob], false, dst),
                (0, 1) => binary_scalar_serial(op, &b[ob..ob + inner], a[oa], true, dst),
                _ => {
                    for (j, o) in dst.iter_mut().enumerate() {
                        *o = op.apply(a[oa + j * sa], b[ob + j * sb]);
                    }
                }
            }
        }
    };
    if should_split(n, op.cost()) && rows > 1 {
        let rows_per = (chunk_len(op.cost()) / inner).max(1);
        split_each(out.chunks_mut(rows_per * inner).enumerate(), |(c, o)| do_rows(c * rows_per, o));
    } else {
        do_rows(0, out);
    }
}

#[inline(always)]
fn axpby_simd<V: SimdVec>(a: V::S, x: &[V::S], b: V::S, y: &mut [V::S]) {
    let (av, bv) = (V::splat(a), V::splat(b));
    if b == <V::S as Real>::ONE {
        map2_inplace(y, x, #[inline(always)] move |y: V, x: V| av.fma(x, y));
    } else {
        map2_inplace(y, x, #[inline(always)] move |y: V, x: V| av.fma(x, bv * y));
    }
}

/// `y += a·x` (one FMA per element).
pub fn axpy<T: Real>(a: T, x: &[T], y: &mut [T]) {
    // Checked here too, so that a caller of `axpy` reads its own kernel's name in the panic.
    check_len("axpy", "y", y.len(), x.len());
    axpby(a, x, T::ONE, y)
}

/// `y = a·x + b·y`.
pub fn axpby<T: Real>(a: T, x: &[T], b: T, y: &mut [T]) {
    check_len("axpby", "y", y.len(), x.len());
    let f = |x: &[T], y: &mut [T]| {
        dispatch!(T, V => axpby_simd::<V>(cast_scalar(a), cast(x), cast_scalar(b), cast_mut(y)), else => {
            for (yi, &xi) in y.iter_mut().zip(x) {
                *yi = a * xi + b * *yi;
            }
        })
    };
    if should_split(x.len(), Cost(1)) {
        let c = chunk_len(Cost(1));
        split_each(x.chunks(c).zip(y.chunks_mut(c)), |(x, y)| f(x, y));
    } else {
        f(x, y)
    }
}

/// `y += a ⊙ b` (the gradient of a product; one FMA per element).
pub fn mul_acc<T: Real>(a: &[T], b: &[T], y: &mut [T]) {
    check_len("mul_acc", "b", b.len(), a.len());
    check_len("mul_acc", "y", y.len(), a.len());
    let f = |a: &[T], b: &[T], y: &mut [T]| {
        // The tail goes through the same vector FMA on a zero-padded copy (`map3_inplace`), so an
        // element's result does not depend on whether it falls in a full vector or in the tail.
        dispatch!(T, V => map3_inplace(cast_mut(y), cast(a), cast(b), #[inline(always)] |y: V, a: V, b: V| a.fma(b, y)), else => {
            for i in 0..a.len() {
                y[i] += a[i] * b[i];
            }
        })
    };
    if should_split(a.len(), Cost(1)) {
        let c = chunk_len(Cost(1));
        split_each(a.chunks(c).zip(b.chunks(c)).zip(y.chunks_mut(c)), |((a, b), y)| f(a, b, y));
    } else {
        f(a, b, y)
    }
}

/// `x *= a`.
pub fn scale<T: Real>(a: T, x: &mut [T]) {
    par_inplace(Cost(1), x, |x| {
        dispatch!(T, V => {
            let av = V::splat(cast_scalar(a));
            map1_inplace(cast_mut(x), #[inline(always)] move |x: V| x * av)
        }, else => {
            for xi in x.iter_mut() {
                *xi *= a;
            }
        })
    });
}

/// `x[i] = v`.
pub fn fill<T: Real>(v: T, x: &mut [T]) {
    par_inplace(Cost(1), x, |x| x.fill(v));
}
