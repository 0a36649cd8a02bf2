//! The registry of every differentiable op, with random shapes and broadcasts, for
//! `chi gradcheck` and the test suite.
//!
//! Each [`OpCase`] draws a random instance (shapes, axes, indices, values away from kinks such as
//! `relu` at 0) from a seeded [`Rng`] and returns the function to check. Adding an op to chi means
//! adding it here; a test asserts that every `Op` variant is exercised by some case.

use crate::gradcheck::{gradcheck, gradgradcheck, GradcheckOptions, GradcheckReport};
use crate::ops::custom::CustomOp;
use crate::{Rng, Tensor};
use std::rc::Rc;

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

fn case(inputs: Vec<Tensor<f64>>, f: impl Fn(&[Tensor<f64>]) -> Tensor<f64> + 'static) -> Case {
    Case { inputs, f: Box::new(f) }
}

fn binary(rng: &mut Rng, f: fn(&Tensor<f64>, &Tensor<f64>) -> Tensor<f64>) -> Case {
    let s = rand_shape(rng, 1, 3);
    let b = broadcastable(rng, &s);
    // Randomly put the broadcast operand on either side.
    if rng.below(2) == 0 {
        case(vec![normal(rng, &s), normal(rng, &b)], move |x| f(&x[0], &x[1]))
    } else {
        case(vec![normal(rng, &b), normal(rng, &s)], move |x| f(&x[0], &x[1]))
    }
}
fn unary(rng: &mut Rng, f: fn(&Tensor<f64>) -> Tensor<f64>) -> Case {
    let s = rand_shape(rng, 0, 3);
    case(vec![normal(rng, &s)], move |x| f(&x[0]))
}
fn unary_pos(rng: &mut Rng, f: fn(&Tensor<f64>) -> Tensor<f64>) -> Case {
    let s = rand_shape(rng, 0, 3);
    case(vec![uniform(rng, &s, 0.3, 2.0)], move |x| f(&x[0]))
}
fn axis_of(rng: &mut Rng, s: &[usize]) -> isize {
    let a = rng.below(s.len()) as isize;
    if rng.below(2) == 0 {
        a - s.len() as isize
    } else {
        a
    }
}

/// `f(x) = x·sin-free cubic` as a custom op, to exercise the custom-op path in the registry.
struct CubicCustom;
impl CustomOp<f64> for CubicCustom {
    fn name(&self) -> &str {
        "custom_cubic"
    }
    fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> {
        x[0].mul(x[0]).mul(x[0]).add(&x[0].mul(x[1]))
    }
    fn backward(&self, x: &[&Tensor<f64>], _out: &Tensor<f64>, g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
        // ∂/∂a (a³ + a·b) = 3a² + b ; ∂/∂b = a
        vec![Some(g.mul(&x[0].square().mul_scalar(3.0).add(x[1]))), Some(g.mul(x[0]))]
    }
}

/// Every registered op.
pub fn registry() -> Vec<OpCase> {
    let mut v = vec![
        OpCase { name: "add", order2: true, make: |r| binary(r, |a, b| a.add(b)) },
        OpCase { name: "sub", order2: true, make: |r| binary(r, |a, b| a.sub(b)) },
        OpCase { name: "mul", order2: true, make: |r| binary(r, |a, b| a.mul(b)) },
        OpCase {
            name: "div",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let b = broadcastable(r, &s);
                case(vec![normal(r, &s), uniform(r, &b, 0.5, 2.0)], |x| x[0].div(&x[1]))
            },
        },
        OpCase {
            name: "maximum",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let b = broadcastable(r, &s);
                case(vec![normal(r, &s), normal(r, &b).add_scalar(0.013)], |x| x[0].maximum(&x[1]))
            },
        },
        OpCase {
            name: "minimum",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let b = broadcastable(r, &s);
                case(vec![normal(r, &s), normal(r, &b).add_scalar(0.013)], |x| x[0].minimum(&x[1]))
            },
        },
        OpCase {
            name: "pow",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let b = broadcastable(r, &s);
                case(vec![uniform(r, &s, 0.5, 2.0), uniform(r, &b, -1.5, 2.5)], |x| x[0].pow(&x[1]))
            },
        },
        OpCase { name: "add_scalar", order2: true, make: |r| unary(r, |a| a.add_scalar(0.7)) },
        OpCase { name: "sub_scalar", order2: true, make: |r| unary(r, |a| a.sub_scalar(0.7)) },
        OpCase { name: "mul_scalar", order2: true, make: |r| unary(r, |a| a.mul_scalar(-1.3)) },
        OpCase { name: "div_scalar", order2: true, make: |r| unary(r, |a| a.div_scalar(2.5)) },
        OpCase { name: "pow_scalar", order2: true, make: |r| unary_pos(r, |a| a.pow_scalar(2.7)) },
        OpCase { name: "max_scalar", order2: true, make: |r| unary(r, |a| a.max_scalar(0.11)) },
        OpCase { name: "min_scalar", order2: true, make: |r| unary(r, |a| a.min_scalar(0.11)) },
        OpCase {
            name: "where",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let m: Vec<bool> = (0..s.iter().product::<usize>()).map(|_| r.below(2) == 0).collect();
                let b = broadcastable(r, &s);
                let s2 = s.clone();
                case(vec![normal(r, &s), normal(r, &b)], move |x| Tensor::where_(&m, &s2, &x[0], &x[1]).mul(&x[0]))
            },
        },
        OpCase { name: "neg", order2: true, make: |r| unary(r, |a| a.neg()) },
        OpCase { name: "abs", order2: true, make: |r| unary(r, |a| a.abs()) },
        OpCase { name: "exp", order2: true, make: |r| unary(r, |a| a.exp()) },
        OpCase { name: "log", order2: true, make: |r| unary_pos(r, |a| a.ln()) },
        OpCase { name: "log1p", order2: true, make: |r| unary_pos(r, |a| a.sub_scalar(0.25).log1p()) },
        OpCase { name: "sqrt", order2: true, make: |r| unary_pos(r, |a| a.sqrt()) },
        OpCase { name: "tanh", order2: true, make: |r| unary(r, |a| a.tanh()) },
        OpCase { name: "sigmoid", order2: true, make: |r| unary(r, |a| a.sigmoid()) },
        OpCase { name: "relu", order2: true, make: |r| unary(r, |a| a.relu()) },
        OpCase { name: "leaky_relu", order2: true, make: |r| unary(r, |a| a.leaky_relu(0.1)) },
        OpCase { name: "softplus", order2: true, make: |r| unary(r, |a| a.mul_scalar(3.0).softplus()) },
        OpCase { name: "log_sigmoid", order2: true, make: |r| unary(r, |a| a.mul_scalar(3.0).log_sigmoid()) },
        OpCase {
            name: "matmul",
            order2: true,
            make: |r| {
                let (m, k, n) = (1 + r.below(5), 1 + r.below(5), 1 + r.below(5));
                case(vec![normal(r, &[m, k]), normal(r, &[k, n])], |x| x[0].matmul(&x[1]))
            },
        },
        OpCase {
            name: "matmul_batched",
            order2: true,
            make: |r| {
                let (b, m, k, n) = (1 + r.below(3), 1 + r.below(4), 1 + r.below(4), 1 + r.below(4));
                case(vec![normal(r, &[b, m, k]), normal(r, &[b, k, n])], |x| x[0].matmul(&x[1]))
            },
        },
        OpCase {
            name: "matmul_shared_weight",
            order2: true,
            make: |r| {
                let (b, m, k, n) = (1 + r.below(3), 1 + r.below(4), 1 + r.below(4), 1 + r.below(4));
                case(vec![normal(r, &[b, m, k]), normal(r, &[k, n])], |x| x[0].matmul(&x[1]))
            },
        },
        OpCase {
            name: "matvec",
            order2: true,
            make: |r| {
                let (m, k) = (1 + r.below(5), 1 + r.below(5));
                case(vec![normal(r, &[m, k]), normal(r, &[k])], |x| x[0].matmul(&x[1]))
            },
        },
        OpCase {
            name: "permute",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 2, 4);
                let mut p: Vec<usize> = (0..s.len()).collect();
                r.shuffle(&mut p);
                case(vec![normal(r, &s)], move |x| x[0].permute(&p))
            },
        },
        OpCase {
            name: "transpose",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 2, 3);
                case(vec![normal(r, &s)], |x| x[0].t())
            },
        },
        OpCase {
            name: "reshape",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let n: usize = s.iter().product();
                case(vec![normal(r, &s)], move |x| x[0].reshape(&[n]).reshape(&[1, n]))
            },
        },
        OpCase {
            name: "broadcast_to",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let b = broadcastable(r, &s);
                case(vec![normal(r, &b)], move |x| x[0].broadcast_to(&s))
            },
        },
        OpCase {
            name: "sum_to",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let b = broadcastable(r, &s);
                case(vec![normal(r, &s)], move |x| x[0].sum_to(&b))
            },
        },
        OpCase {
            name: "concat",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = r.below(s.len());
                let mut s2 = s.clone();
                s2[ax] = 1 + r.below(3);
                case(vec![normal(r, &s), normal(r, &s2), normal(r, &s)], move |x| Tensor::concat(x, ax as isize))
            },
        },
        OpCase {
            name: "stack",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 0, 2);
                let ax = r.below(s.len() + 1);
                case(vec![normal(r, &s), normal(r, &s)], move |x| Tensor::stack(x, ax))
            },
        },
        OpCase {
            name: "split",
            order2: true,
            make: |r| {
                let mut s = rand_shape(r, 1, 3);
                let ax = r.below(s.len());
                s[ax] += 2;
                let first = 1 + r.below(s[ax] - 1);
                let sizes = vec![first, s[ax] - first];
                // Weight the pieces differently so a mixed-up split would be caught.
                case(vec![normal(r, &s)], move |x| {
                    let p = x[0].split(&sizes, ax as isize);
                    Tensor::concat(&[p[1].mul_scalar(2.0), p[0].clone()], ax as isize)
                })
            },
        },
        OpCase {
            name: "narrow",
            order2: true,
            make: |r| {
                let mut s = rand_shape(r, 1, 3);
                let ax = r.below(s.len());
                s[ax] += 2;
                let start = r.below(s[ax] - 1);
                let len = 1 + r.below(s[ax] - start);
                case(vec![normal(r, &s)], move |x| x[0].narrow(ax as isize, start, len))
            },
        },
        OpCase {
            name: "pad_axis",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = axis_of(r, &s);
                let (b, a) = (r.below(3), r.below(3));
                case(vec![normal(r, &s)], move |x| x[0].pad_axis(ax, b, a))
            },
        },
        OpCase {
            name: "flip",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = axis_of(r, &s);
                case(vec![normal(r, &s)], move |x| x[0].flip(ax))
            },
        },
        OpCase {
            name: "index_select",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = r.below(s.len());
                let idx: Vec<usize> = (0..1 + r.below(5)).map(|_| r.below(s[ax])).collect();
                case(vec![normal(r, &s)], move |x| x[0].index_select(ax as isize, &idx))
            },
        },
        OpCase { name: "sum", order2: true, make: |r| unary(r, |a| a.sum()) },
        OpCase {
            name: "sum_axis",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = axis_of(r, &s);
                let keep = r.below(2) == 0;
                case(vec![normal(r, &s)], move |x| x[0].sum_axis(ax, keep))
            },
        },
        OpCase { name: "mean", order2: true, make: |r| unary(r, |a| a.mean()) },
        OpCase {
            name: "mean_axis",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = axis_of(r, &s);
                case(vec![normal(r, &s)], move |x| x[0].mean_axis(ax, true))
            },
        },
        OpCase {
            name: "max_axis",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = axis_of(r, &s);
                let keep = r.below(2) == 0;
                case(vec![distinct(r, &s)], move |x| x[0].max_axis(ax, keep))
            },
        },
        OpCase {
            name: "min_axis",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = axis_of(r, &s);
                case(vec![distinct(r, &s)], move |x| x[0].min_axis(ax, false))
            },
        },
        OpCase {
            name: "softmax",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = axis_of(r, &s);
                case(vec![normal(r, &s)], move |x| x[0].softmax(ax))
            },
        },
        OpCase {
            name: "log_softmax",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = axis_of(r, &s);
                case(vec![normal(r, &s)], move |x| x[0].log_softmax(ax))
            },
        },
        OpCase {
            name: "logsumexp",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let ax = axis_of(r, &s);
                let keep = r.below(2) == 0;
                case(vec![normal(r, &s)], move |x| x[0].logsumexp(ax, keep))
            },
        },
        OpCase {
            name: "take",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 3);
                let n: usize = s.iter().product();
                let idx: Vec<usize> = (0..1 + r.below(6)).map(|_| r.below(n)).collect();
                let len = idx.len();
                let idx = Rc::new(idx);
                case(vec![normal(r, &s)], move |x| x[0].take(idx.clone(), &[len]))
            },
        },
        OpCase {
            name: "scatter_add",
            order2: true,
            make: |r| {
                let k = 1 + r.below(6);
                let n = 1 + r.below(5);
                let idx = Rc::new((0..k).map(|_| r.below(n)).collect::<Vec<_>>());
                case(vec![normal(r, &[k])], move |x| x[0].scatter_add(idx.clone(), &[n]))
            },
        },
        OpCase {
            name: "embedding",
            order2: true,
            make: |r| {
                let (v, d) = (1 + r.below(5), 1 + r.below(4));
                let ids: Vec<usize> = (0..1 + r.below(6)).map(|_| r.below(v)).collect();
                case(vec![normal(r, &[v, d])], move |x| x[0].embedding(&ids))
            },
        },
        OpCase {
            name: "scatter_rows",
            order2: true,
            make: |r| {
                let (k, d, rows) = (1 + r.below(5), 1 + r.below(3), 1 + r.below(4));
                let ids = Rc::new((0..k).map(|_| r.below(rows)).collect::<Vec<_>>());
                case(vec![normal(r, &[k, d])], move |x| x[0].scatter_rows(ids.clone(), rows))
            },
        },
        OpCase {
            name: "custom",
            order2: true,
            make: |r| {
                let s = rand_shape(r, 1, 2);
                case(vec![normal(r, &s), normal(r, &s)], |x| Tensor::apply_custom(Rc::new(CubicCustom), x))
            },
        },
    ];
    v.extend(crate::ops::registry_extra());
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
