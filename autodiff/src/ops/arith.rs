//! Arithmetic with NumPy broadcasting: add, sub, mul, div, maximum, minimum, pow, their scalar
//! forms, and `where`. Backward rules reduce each gradient back to its input's shape (`sum_to`).

use crate::ops::{Grads, Op};
use crate::tape::record;
use crate::tensor::Tensor;
use crate::{Float, Shape};
use chi_kernels::elementwise::{self as ew, Binary};
use std::panic::Location;
use std::rc::Rc;

/// Element count up to which scalar-operand arithmetic runs inline instead of calling the kernel.
const TINY: usize = 4;

/// `x ∘ s` for one of the four correctly rounded ops (`+ − × ÷`), the scalar form of the
/// kernel for tiny tensors. A one-element tensor (the usual case: scalar graphs) is handled
/// without a loop, whose vectorised prologue would cost more than the arithmetic.
#[inline(always)]
fn tiny_scalar_op<T: Float>(op: Binary, x: T, s: T) -> T {
    match op {
        Binary::Add => x + s,
        Binary::Sub => x - s,
        Binary::Mul => x * s,
        Binary::Div => x / s,
        _ => unreachable!("tiny path of {}", op.name()),
    }
}

/// `out[i] = a[i] ∘ s` (see [`tiny_scalar_op`]).
#[inline(always)]
fn tiny_scalar_map<T: Float>(op: Binary, a: &[T], s: T, out: &mut [T]) {
    if let ([x], [o]) = (a, &mut *out) {
        *o = tiny_scalar_op(op, *x, s);
        return;
    }
    for (o, &x) in out.iter_mut().zip(a) {
        *o = tiny_scalar_op(op, x, s);
    }
}

/// `v[i] = v[i] ∘ s` (see [`tiny_scalar_op`]).
#[inline(always)]
fn tiny_scalar_map_in_place<T: Float>(op: Binary, v: &mut [T], s: T) {
    if let [x] = v {
        *x = tiny_scalar_op(op, *x, s);
        return;
    }
    for x in v.iter_mut() {
        *x = tiny_scalar_op(op, *x, s);
    }
}

impl<T: Float> Tensor<T> {
    #[track_caller]
    fn binary_op(&self, other: &Tensor<T>, op: Binary) -> Tensor<T> {
        let loc = Location::caller();
        let out_shape = Shape::broadcast(&self.shape, &other.shape).unwrap_or_else(|| {
            panic!("{}: shapes {:?} and {:?} cannot be broadcast together", op.name(), self.shape, other.shape)
        });
        let n = out_shape.numel();
        let mut out = crate::pool::for_overwrite(n);
        let exact = matches!(op, Binary::Add | Binary::Sub | Binary::Mul | Binary::Div);
        if exact && n <= TINY && self.shape == other.shape {
            // See `scalar_op`: inline for tiny tensors, bit-identical to the kernel.
            for ((o, &a), &b) in out.iter_mut().zip(self.data.iter()).zip(other.data.iter()) {
                *o = op.apply(a, b);
            }
        } else if self.shape == other.shape {
            ew::binary(op, &self.data, &other.data, &mut out);
        } else if other.numel() == 1 {
            ew::binary_scalar(op, &self.data, other.data[0], &mut out);
        } else {
            let sa = self.shape.broadcast_strides(&out_shape).unwrap();
            let sb = other.shape.broadcast_strides(&out_shape).unwrap();
            ew::binary_broadcast(op, &self.data, &sa, &other.data, &sb, &mut out, out_shape.dims());
        }
        record(out, out_shape, &[self, other], loc, |_| Op::Binary { op, a: self.clone(), b: other.clone() })
    }

    /// `self + other` with broadcasting.
    #[track_caller]
    pub fn add(&self, other: &Tensor<T>) -> Tensor<T> {
        self.binary_op(other, Binary::Add)
    }
    /// `self - other` with broadcasting.
    #[track_caller]
    pub fn sub(&self, other: &Tensor<T>) -> Tensor<T> {
        self.binary_op(other, Binary::Sub)
    }
    /// `self · other` (elementwise) with broadcasting.
    #[track_caller]
    pub fn mul(&self, other: &Tensor<T>) -> Tensor<T> {
        self.binary_op(other, Binary::Mul)
    }
    /// `self / other` with broadcasting.
    #[track_caller]
    pub fn div(&self, other: &Tensor<T>) -> Tensor<T> {
        self.binary_op(other, Binary::Div)
    }
    /// Elementwise maximum with broadcasting (ties split the gradient equally).
    #[track_caller]
    pub fn maximum(&self, other: &Tensor<T>) -> Tensor<T> {
        self.binary_op(other, Binary::Max)
    }
    /// Elementwise minimum with broadcasting (ties split the gradient equally).
    #[track_caller]
    pub fn minimum(&self, other: &Tensor<T>) -> Tensor<T> {
        self.binary_op(other, Binary::Min)
    }
    /// `self ^ other` with broadcasting. The gradient with respect to the exponent uses
    /// `ln(self)` and is taken as 0 where `self ≤ 0`.
    #[track_caller]
    pub fn pow(&self, other: &Tensor<T>) -> Tensor<T> {
        self.binary_op(other, Binary::Pow)
    }

    #[track_caller]
    fn scalar_op(&self, s: T, op: Binary) -> Tensor<T> {
        let loc = Location::caller();
        let mut out = crate::pool::for_overwrite(self.numel());
        if self.numel() <= TINY && matches!(op, Binary::Add | Binary::Sub | Binary::Mul | Binary::Div) {
            // Tiny tensors (scalars in dynamic graphs): the kernel's dispatch and vector tail
            // cost more than the arithmetic. These four ops are correctly rounded in scalar and
            // vector form alike, so the result is bit-identical to the kernel's.
            tiny_scalar_map(op, &self.data, s, &mut out);
        } else {
            ew::binary_scalar(op, &self.data, s, &mut out);
        }
        record(out, self.shape, &[self], loc, |_| Op::BinaryScalar { op, a: self.clone(), s })
    }
    /// `self + s`.
    #[track_caller]
    pub fn add_scalar(&self, s: impl Into<f64>) -> Tensor<T> {
        self.scalar_op(T::from_f64(s.into()), Binary::Add)
    }
    /// `self - s`.
    #[track_caller]
    pub fn sub_scalar(&self, s: impl Into<f64>) -> Tensor<T> {
        self.scalar_op(T::from_f64(s.into()), Binary::Sub)
    }
    /// `self · s`.
    #[track_caller]
    pub fn mul_scalar(&self, s: impl Into<f64>) -> Tensor<T> {
        self.scalar_op(T::from_f64(s.into()), Binary::Mul)
    }
    /// `self / s`.
    #[track_caller]
    pub fn div_scalar(&self, s: impl Into<f64>) -> Tensor<T> {
        self.scalar_op(T::from_f64(s.into()), Binary::Div)
    }
    /// `self ^ s`.
    #[track_caller]
    pub fn pow_scalar(&self, s: impl Into<f64>) -> Tensor<T> {
        self.scalar_op(T::from_f64(s.into()), Binary::Pow)
    }
    /// `max(self, s)` elementwise.
    #[track_caller]
    pub fn max_scalar(&self, s: impl Into<f64>) -> Tensor<T> {
        self.scalar_op(T::from_f64(s.into()), Binary::Max)
    }
    /// `min(self, s)` elementwise.
    #[track_caller]
    pub fn min_scalar(&self, s: impl Into<f64>) -> Tensor<T> {
        self.scalar_op(T::from_f64(s.into()), Binary::Min)
    }
    /// `where(mask, a, b)`: `a` where `mask` is true, else `b` (all three the same shape as the
    /// mask after broadcasting `a` and `b` to it). The gradient goes only to the chosen side.
    #[track_caller]
    pub fn where_(mask: &[bool], mask_shape: &[usize], a: &Tensor<T>, b: &Tensor<T>) -> Tensor<T> {
        let loc = Location::caller();
        let ms = Shape::new(mask_shape);
        assert!(mask.len() == ms.numel(), "where_: mask has {} entries for shape {ms:?}", mask.len());
        for (name, x) in [("a", a), ("b", b)] {
            assert!(x.shape.broadcast_strides(&ms).is_some(), "where_: {name} of shape {:?} cannot be broadcast to the mask's shape {ms:?}", x.shape);
        }
        let a = if a.shape == ms { a.clone() } else { a.broadcast_to(mask_shape) };
        let b = if b.shape == ms { b.clone() } else { b.broadcast_to(mask_shape) };
        let out: Vec<T> = (0..mask.len()).map(|i| if mask[i] { a.data[i] } else { b.data[i] }).collect();
        let mask = Rc::new(mask.to_vec());
        record(out, ms, &[&a, &b], loc, |_| Op::Where { mask, a: a.clone(), b: b.clone() })
    }
    /// A boolean mask of where `pred` holds, for [`Tensor::where_`].
    pub fn mask(&self, pred: impl Fn(T) -> bool) -> Vec<bool> {
        self.data.iter().map(|&v| pred(v)).collect()
    }
}

/// A constant tensor with `f` applied to each element of `x` (used for derivative masks, whose
/// own derivative is zero almost everywhere).
fn constant_map<T: Float>(x: &Tensor<T>, f: impl Fn(T) -> T) -> Tensor<T> {
    Tensor::from_vec(x.data.iter().map(|&v| f(v)).collect(), x.shape())
}

pub(crate) fn binary_backward<T: Float>(
    op: Binary,
    a: &Tensor<T>,
    b: &Tensor<T>,
    out: &Tensor<T>,
    g: &Tensor<T>,
    need: &[bool],
) -> Grads<T> {
    let (na, nb) = (need[0], need[1]);
    let (ga, gb) = match op {
        Binary::Add => (na.then(|| g.clone()), nb.then(|| g.clone())),
        Binary::Sub => (na.then(|| g.clone()), nb.then(|| g.neg())),
        Binary::Mul => (na.then(|| g.mul(b)), nb.then(|| g.mul(a))),
        Binary::Div => (na.then(|| g.div(b)), nb.then(|| g.mul(a).div(&b.mul(b)).neg())),
        Binary::Max | Binary::Min => {
            // Masks of which side won, with ties split ½–½ (as PyTorch's maximum does).
            let ab = a.broadcast_to(out.shape()).detach();
            let bb = b.broadcast_to(out.shape()).detach();
            let wa: Vec<T> = ab
                .data
                .iter()
                .zip(bb.data.iter())
                .map(|(&x, &y)| {
                    let a_wins = if op == Binary::Max { x > y } else { x < y };
                    if a_wins {
                        T::ONE
                    } else if x == y {
                        T::from_f64(0.5)
                    } else {
                        T::ZERO
                    }
                })
                .collect();
            let wb: Vec<T> = wa.iter().map(|&w| T::ONE - w).collect();
            (
                na.then(|| g.mul(&Tensor::from_vec(wa, out.shape()))),
                nb.then(|| g.mul(&Tensor::from_vec(wb, out.shape()))),
            )
        }
        Binary::Pow => {
            // d/da aᵇ = b·aᵇ⁻¹ ; d/db aᵇ = aᵇ·ln a (0 where a ≤ 0, where aᵇ is not differentiable in b)
            // Where b = 0 the derivative is 0, also at a = 0 where aᵇ⁻¹ is infinite (0·∞ would
            // be NaN): a is replaced by 1 there, so that neither this product nor its own
            // derivative (under create_graph) meets 0·∞.
            let ga = na.then(|| {
                let a_safe = if b.data().contains(&T::ZERO) {
                    let zero_b = b.broadcast_to(out.shape()).mask(|v| v == T::ZERO);
                    Tensor::where_(&zero_b, out.shape(), &Tensor::ones(out.shape()), &a.broadcast_to(out.shape()))
                } else {
                    a.clone()
                };
                g.mul(b).mul(&a_safe.pow(&b.sub_scalar(1.0)))
            });
            let gb = nb.then(|| {
                let pos = a.broadcast_to(out.shape()).mask(|v| v > T::ZERO);
                let a_pos = Tensor::where_(&pos, out.shape(), &a.broadcast_to(out.shape()), &Tensor::ones(out.shape()));
                let ln_a = a_pos.ln();
                g.mul(out).mul(&ln_a)
            });
            (ga, gb)
        }
    };
    Grads::two(ga.map(|t| t.sum_to(a.shape())), gb.map(|t| t.sum_to(b.shape())))
}

/// Turns `g` into the gradient of `a ∘ s` in `g`'s own buffer when nothing else holds it
/// (passes that record nothing): the identity for `+`/`−`, a scaling for `·` and (tiny
/// tensors) `/`. `false`, with `g` untouched, for the other ops or a shared buffer. Same bits
/// as the rule below: products and quotients are correctly rounded in scalar and vector form
/// alike.
#[inline]
pub(crate) fn binary_scalar_backward_in_place<T: Float>(op: Binary, s: T, g: &mut Tensor<T>) -> bool {
    match op {
        Binary::Add | Binary::Sub => true,
        Binary::Mul | Binary::Div => {
            let Some(v) = g.values_mut_if_unique() else { return false };
            if v.len() <= TINY {
                tiny_scalar_map_in_place(op, v, s);
            } else if op == Binary::Mul {
                ew::scale(s, v);
            } else {
                return false;
            }
            true
        }
        _ => false,
    }
}

pub(crate) fn binary_scalar_backward<T: Float>(op: Binary, a: &Tensor<T>, s: T, _out: &Tensor<T>, g: &Tensor<T>) -> Tensor<T> {
    match op {
        Binary::Add | Binary::Sub => g.clone(),
        Binary::Mul => g.mul_scalar(s.to_f64()),
        Binary::Div => g.div_scalar(s.to_f64()),
        // x⁰ is constant: its derivative is 0 everywhere, also at x = 0 (0·0⁻¹ would be NaN).
        Binary::Pow if s == T::ZERO => g.mul_scalar(0.0),
        Binary::Pow => g.mul(&a.pow_scalar(s.to_f64() - 1.0)).mul_scalar(s.to_f64()),
        Binary::Max | Binary::Min => {
            let w = constant_map(a, |x| {
                let a_wins = if op == Binary::Max { x > s } else { x < s };
                if a_wins {
                    T::ONE
                } else if x == s {
                    T::from_f64(0.5)
                } else {
                    T::ZERO
                }
            });
            g.mul(&w)
        }
    }
}

pub(crate) fn where_backward<T: Float>(mask: &Rc<Vec<bool>>, a: &Tensor<T>, b: &Tensor<T>, g: &Tensor<T>, need: &[bool]) -> Vec<Option<Tensor<T>>> {
    let z = Tensor::zeros(g.shape());
    vec![
        need[0].then(|| Tensor::where_(mask, g.shape(), g, &z)).map(|t| t.sum_to(a.shape())),
        need[1].then(|| Tensor::where_(mask, g.shape(), &z, g)).map(|t| t.sum_to(b.shape())),
    ]
}

macro_rules! impl_operator {
    ($trait:ident, $method:ident, $op:ident) => {
        impl<T: Float> std::ops::$trait<&Tensor<T>> for &Tensor<T> {
            type Output = Tensor<T>;
            #[track_caller]
            fn $method(self, rhs: &Tensor<T>) -> Tensor<T> {
                self.$op(rhs)
            }
        }
        impl<T: Float> std::ops::$trait<Tensor<T>> for Tensor<T> {
            type Output = Tensor<T>;
            #[track_caller]
            fn $method(self, rhs: Tensor<T>) -> Tensor<T> {
                (&self).$op(&rhs)
            }
        }
    };
}
impl_operator!(Add, add, add);
impl_operator!(Sub, sub, sub);
impl_operator!(Mul, mul, mul);
impl_operator!(Div, div, div);

impl<T: Float> std::ops::Neg for &Tensor<T> {
    type Output = Tensor<T>;
    #[track_caller]
    fn neg(self) -> Tensor<T> {
        Tensor::neg(self)
    }
}
