//! Elementwise kernels over contiguous slices: unary maps, binary maps, their derivatives, and
//! the fused updates an autodiff engine needs (`y += a·x`, `dx = g ⊙ f'(x)`).
//!
//! Every operation is named by an enum ([`Unary`], [`Binary`]) so that the autodiff crate, the
//! benchmarks and the tests all talk about the same set.

use crate::Real;

/// A unary elementwise function.
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

fn check_len(kernel: &str, what: &str, got: usize, want: usize) {
    assert!(got == want, "{kernel}: length mismatch: {what} has {got} elements, expected {want}");
}

/// `y[i] = f(x[i])`.
pub fn unary<T: Real>(op: Unary, x: &[T], y: &mut [T]) {
    check_len(op.name(), "output", y.len(), x.len());
    for (yi, &xi) in y.iter_mut().zip(x) {
        *yi = op.apply(xi);
    }
}

/// `x[i] = f(x[i])` in place.
pub fn unary_inplace<T: Real>(op: Unary, x: &mut [T]) {
    for xi in x.iter_mut() {
        *xi = op.apply(*xi);
    }
}

/// Backward helper: `dx[i] = g[i] · f'(x[i])`, where `y = f(x)` was saved by the forward pass.
pub fn unary_backward<T: Real>(op: Unary, x: &[T], y: &[T], g: &[T], dx: &mut [T]) {
    let kernel = "unary_backward";
    check_len(kernel, "y", y.len(), x.len());
    check_len(kernel, "g", g.len(), x.len());
    check_len(kernel, "dx", dx.len(), x.len());
    for i in 0..x.len() {
        dx[i] = g[i] * op.derivative(x[i], y[i]);
    }
}

/// `out[i] = a[i] ∘ b[i]` for equal-length slices.
pub fn binary<T: Real>(op: Binary, a: &[T], b: &[T], out: &mut [T]) {
    check_len(op.name(), "b", b.len(), a.len());
    check_len(op.name(), "output", out.len(), a.len());
    for i in 0..a.len() {
        out[i] = op.apply(a[i], b[i]);
    }
}

/// `out[i] = a[i] ∘ s` (scalar on the right).
pub fn binary_scalar<T: Real>(op: Binary, a: &[T], s: T, out: &mut [T]) {
    check_len(op.name(), "output", out.len(), a.len());
    for i in 0..a.len() {
        out[i] = op.apply(a[i], s);
    }
}

/// Broadcasting binary map over strided inputs.
///
/// `out` is contiguous row-major with shape `out_shape`; input element for output index `idx` is
/// at `Σ idx[d]·a_strides[d]` (a stride of 0 broadcasts that axis).
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
    // Walk the output in row-major order with an odometer over the index; the innermost axis is
    // a tight loop with fixed strides.
    let inner = out_shape[rank - 1];
    let (sa, sb) = (a_strides[rank - 1], b_strides[rank - 1]);
    let mut idx = vec![0usize; rank];
    let mut o = 0;
    while o < n {
        let mut oa = 0;
        let mut ob = 0;
        for d in 0..rank - 1 {
            oa += idx[d] * a_strides[d];
            ob += idx[d] * b_strides[d];
        }
        for j in 0..inner {
            out[o + j] = op.apply(a[oa + j * sa], b[ob + j * sb]);
        }
        o += inner;
        // advance the odometer over the outer axes
        let mut d = rank - 1;
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            if idx[d] < out_shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// `y += a·x`.
pub fn axpy<T: Real>(a: T, x: &[T], y: &mut [T]) {
    check_len("axpy", "y", y.len(), x.len());
    for (yi, &xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

/// `x *= a`.
pub fn scale<T: Real>(a: T, x: &mut [T]) {
    for xi in x.iter_mut() {
        *xi *= a;
    }
}

/// `x[i] = v`.
pub fn fill<T: Real>(v: T, x: &mut [T]) {
    for xi in x.iter_mut() {
        *xi = v;
    }
}
