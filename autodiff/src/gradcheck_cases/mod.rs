//! Gradcheck cases for every differentiable op: the table that `chi gradcheck` and the test
//! suite run at first and second order, with random shapes, axes and broadcasts.
//!
//! Each [`OpCase`] draws a random instance (shapes, axes, indices, values away from kinks such as
//! `relu` at 0) from a seeded [`Rng`] and returns the function to check; [`check_case`] runs it
//! through [`gradcheck`] or [`gradgradcheck`]. The cases live here, one file per op family, and
//! not next to the ops, so that no op module depends on the checking machinery. Adding an op to
//! chi means adding a case in its family's file; a test asserts that every `Op` variant is
//! exercised by some case.

mod arith;
mod conv;
mod custom;
mod fused_rnn;
mod index;
mod linalg;
mod loss;
mod reduce;
mod shape;
mod unary;

use crate::gradcheck::{gradcheck, gradgradcheck, GradcheckOptions, GradcheckReport};
use crate::{Rng, Tensor};

/// A function of tensors, as checked by gradcheck.
pub type TensorFn = Box<dyn Fn(&[Tensor<f64>]) -> Tensor<f64>>;

/// One random instance of an op.
pub struct Case {
    /// Inputs to differentiate with respect to.
    pub inputs: Vec<Tensor<f64>>,
    /// The function under test.
    pub f: TensorFn,
}

impl Case {
    /// Input shapes, for reports.
    pub fn shapes(&self) -> String {
        let v: Vec<String> = self.inputs.iter().map(|t| format!("{:?}", t.shape())).collect();
        v.join(" ")
    }
}

/// A registered op.
pub struct OpCase {
    /// Name (as `chi gradcheck --op NAME` takes it).
    pub name: &'static str,
    /// Whether the op is checked at second order too.
    pub order2: bool,
    /// Draws a random instance.
    pub make: fn(&mut Rng) -> Case,
}

/// A random shape of rank `lo..=hi` with dimensions 1..=4.
pub fn rand_shape(rng: &mut Rng, lo: usize, hi: usize) -> Vec<usize> {
    let r = lo + rng.below(hi - lo + 1);
    (0..r).map(|_| 1 + rng.below(4)).collect()
}
/// A shape that broadcasts against `s`: a random suffix of it with some dimensions set to 1.
pub fn broadcastable(rng: &mut Rng, s: &[usize]) -> Vec<usize> {
    let drop = rng.below(s.len() + 1);
    s[drop..].iter().map(|&d| if rng.below(3) == 0 { 1 } else { d }).collect()
}
/// Normal values, nudged away from 0 (so kinks at 0 are not straddled by finite differences).
pub fn normal(rng: &mut Rng, shape: &[usize]) -> Tensor<f64> {
    let n: usize = shape.iter().product();
    Tensor::from_vec(
        (0..n)
            .map(|_| {
                let v = rng.normal();
                if v.abs() < 0.05 {
                    v.signum() * 0.05 + v
                } else {
                    v
                }
            })
            .collect(),
        shape,
    )
}
/// Values uniform in `[lo, hi)`.
pub fn uniform(rng: &mut Rng, shape: &[usize], lo: f64, hi: f64) -> Tensor<f64> {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|_| rng.uniform(lo, hi)).collect(), shape)
}
/// Distinct values (so max/min have a unique winner, away from ties).
pub fn distinct(rng: &mut Rng, shape: &[usize]) -> Tensor<f64> {
    let n: usize = shape.iter().product();
    let mut v: Vec<f64> = (0..n).map(|i| i as f64 * 0.37 - n as f64 * 0.15).collect();
    rng.shuffle(&mut v);
    Tensor::from_vec(v, shape)
}

pub(crate) fn case(inputs: Vec<Tensor<f64>>, f: impl Fn(&[Tensor<f64>]) -> Tensor<f64> + 'static) -> Case {
    Case { inputs, f: Box::new(f) }
}

pub(crate) fn binary(rng: &mut Rng, f: fn(&Tensor<f64>, &Tensor<f64>) -> Tensor<f64>) -> Case {
    let s = rand_shape(rng, 1, 3);
    let b = broadcastable(rng, &s);
    // Randomly put the broadcast operand on either side.
    if rng.below(2) == 0 {
        case(vec![normal(rng, &s), normal(rng, &b)], move |x| f(&x[0], &x[1]))
    } else {
        case(vec![normal(rng, &b), normal(rng, &s)], move |x| f(&x[0], &x[1]))
    }
}
pub(crate) fn unary(rng: &mut Rng, f: fn(&Tensor<f64>) -> Tensor<f64>) -> Case {
    let s = rand_shape(rng, 0, 3);
    case(vec![normal(rng, &s)], move |x| f(&x[0]))
}
pub(crate) fn unary_pos(rng: &mut Rng, f: fn(&Tensor<f64>) -> Tensor<f64>) -> Case {
    let s = rand_shape(rng, 0, 3);
    case(vec![uniform(rng, &s, 0.3, 2.0)], move |x| f(&x[0]))
}
pub(crate) fn axis_of(rng: &mut Rng, s: &[usize]) -> isize {
    let a = rng.below(s.len()) as isize;
    if rng.below(2) == 0 {
        a - s.len() as isize
    } else {
        a
    }
}

/// Every registered op, family by family.
pub fn all() -> Vec<OpCase> {
    let mut v = Vec::new();
    for family in [
        arith::cases,
        unary::cases,
        linalg::cases,
        shape::cases,
        reduce::cases,
        index::cases,
        conv::cases,
        loss::cases,
        custom::cases,
        fused_rnn::cases,
        fused_rnn::sequence_cases,
    ] {
        v.extend(family());
    }
    v
}

/// Runs one registered op at `order` (1 or 2) on a random instance drawn with `seed`.
pub fn check_case(op: &OpCase, order: u32, seed: u64, opts: &GradcheckOptions) -> (Case, Result<GradcheckReport, GradcheckReport>) {
    let mut rng = Rng::new(seed);
    let c = (op.make)(&mut rng);
    let res = {
        let f = |x: &[Tensor<f64>]| (c.f)(x);
        if order >= 2 {
            gradgradcheck(f, &c.inputs, opts)
        } else {
            gradcheck(f, &c.inputs, opts)
        }
    };
    (c, res)
}
