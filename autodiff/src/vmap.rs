//! Per-example gradients by tracing once and replaying batched (a `vmap` of `grad`).
//!
//! [`vmap_grad`] records the user's function on *one* example, then replays the recorded graph
//! on the whole batch: every op gets a leading batch axis (its axes shift by one, broadcasting
//! operands get singleton axes after the batch axis). Parameters are replayed as per-example
//! copies `[B, …]`, so the gradient of the sum of the per-example losses with respect to the
//! copies is, row by row, each example's own gradient — exact, with one batched forward and
//! one batched backward pass instead of `B` small ones.
//!
//! Like `torch.func.vmap` and `jax.vmap`, the function must not branch on the values of its
//! inputs, nor read them (`data()`, `item()`) into constants: the trace of the first example is
//! replayed for all. **Nothing detects a function that does** (Rust cannot stop a closure from
//! reading values, and comparing the replay with a direct evaluation cannot tell such a function
//! from one that draws random numbers): it silently gets example 0's trace for every example.
//! Compute such per-example gradients with a loop of `grad`. Ops without a batching rule
//! (gathers with index lists, `where` masks, custom ops, convolution patches) are reported as
//! an error naming the op.

use crate::backward::{grad, AutodiffError, GradOptions};
use crate::ops::Op;
use crate::tape::Float;
use crate::tensor::Tensor;
use chi_kernels::elementwise::Binary;
use std::collections::HashMap;

/// Per-example values and gradients computed by [`vmap_grad`].
#[derive(Clone, Debug)]
pub struct PerExample<T: Float> {
    /// `[B]`: the function's value on each example.
    pub values: Tensor<T>,
    /// One per parameter, `[B, …parameter shape]`: row `b` is the gradient of example `b`'s value.
    pub grads: Vec<Tensor<T>>,
}

impl<T: Float> PerExample<T> {
    /// The L2 norm of each example's gradient over all parameters (what per-example clipping
    /// and gradient-noise studies use).
    pub fn grad_norms(&self) -> Vec<f64> {
        let b = self.values.numel();
        let mut sq = vec![0.0f64; b];
        for g in &self.grads {
            let per = g.numel() / b.max(1);
            for (i, row) in g.data().chunks(per.max(1)).enumerate().take(b) {
                sq[i] += row.iter().map(|v| v.to_f64() * v.to_f64()).sum::<f64>();
            }
        }
        sq.into_iter().map(f64::sqrt).collect()
    }
}

/// A replayed value: the tensor and whether it carries the batch axis.
#[derive(Clone)]
struct Val<T: Float> {
    t: Tensor<T>,
    batched: bool,
}

fn unsupported(op: &str) -> AutodiffError {
    AutodiffError::Graph(format!("vmap_grad: op `{op}` has no batching rule; compute per-example gradients with a loop of grad() for this function"))
}

/// `[B, …s]` with singleton axes inserted after the batch axis up to example rank `rank`.
fn lift<T: Float>(v: &Val<T>, rank: usize) -> Tensor<T> {
    if !v.batched || v.t.rank() - 1 >= rank {
        return v.t.clone();
    }
    let mut s = vec![v.t.shape()[0]];
    s.extend(std::iter::repeat_n(1, rank - (v.t.rank() - 1)));
    s.extend_from_slice(&v.t.shape()[1..]);
    v.t.reshape(&s)
}

/// Gives an unbatched value the batch axis by broadcasting.
fn batch_of<T: Float>(v: &Val<T>, b: usize) -> Tensor<T> {
    if v.batched {
        return v.t.clone();
    }
    let mut s = vec![b];
    s.extend_from_slice(v.t.shape());
    v.t.reshape(&[&[1][..], v.t.shape()].concat()).broadcast_to(&s)
}

fn binary<T: Float>(op: Binary, a: &Tensor<T>, b: &Tensor<T>) -> Result<Tensor<T>, AutodiffError> {
    Ok(match op {
        Binary::Add => a.add(b),
        Binary::Sub => a.sub(b),
        Binary::Mul => a.mul(b),
        Binary::Div => a.div(b),
        Binary::Max => a.maximum(b),
        Binary::Min => a.minimum(b),
        Binary::Pow => a.pow(b),
        #[allow(unreachable_patterns)]
        _ => return Err(unsupported(op.name())),
    })
}

fn binary_scalar<T: Float>(op: Binary, a: &Tensor<T>, s: T) -> Result<Tensor<T>, AutodiffError> {
    let s = s.to_f64();
    Ok(match op {
        Binary::Add => a.add_scalar(s),
        Binary::Sub => a.sub_scalar(s),
        Binary::Mul => a.mul_scalar(s),
        Binary::Div => a.div_scalar(s),
        Binary::Max => a.max_scalar(s),
        Binary::Min => a.min_scalar(s),
        Binary::Pow => a.pow_scalar(s),
        #[allow(unreachable_patterns)]
        _ => return Err(unsupported(op.name())),
    })
}

/// Replays one recorded op on batched inputs. `out` is the traced (one-example) output.
fn replay<T: Float>(op: &Op<T>, out: &Tensor<T>, ins: &[Val<T>], b: usize) -> Result<Tensor<T>, AutodiffError> {
    let r = out.rank();
    let x = || ins[0].t.clone();
    Ok(match op {
        Op::Binary { op, .. } => binary(*op, &lift(&ins[0], r), &lift(&ins[1], r))?,
        Op::BinaryScalar { op, s, .. } => binary_scalar(*op, &x(), *s)?,
        Op::Unary { op, .. } => x().unary(*op),
        Op::Pointwise { f, .. } => x().pointwise(*f),
        Op::Cumsum { axis, .. } => x().cumsum(*axis as isize + 1),
        Op::Matmul { .. } => {
            let (a, bb) = (&ins[0], &ins[1]);
            match (a.batched, bb.batched) {
                (true, false) if bb.t.rank() == 2 => a.t.matmul(&bb.t),
                _ => batch_of(a, b).matmul(&batch_of(bb, b)),
            }
        }
        Op::Affine(_) => {
            let (x, w, bias) = (&ins[0], &ins[1], &ins[2]);
            match (x.batched, w.batched, bias.batched) {
                (true, false, false) => x.t.affine(&w.t, &bias.t),
                _ => {
                    let p = if w.batched { batch_of(x, b).matmul(&w.t) } else { x.t.matmul(&w.t) };
                    p.add(&lift(bias, r))
                }
            }
        }
        Op::Permute { perm, .. } => {
            let p: Vec<usize> = std::iter::once(0).chain(perm.iter().map(|&a| a + 1)).collect();
            x().permute(&p)
        }
        Op::Reshape { .. } => x().reshape(&[&[b][..], out.shape()].concat()),
        Op::BroadcastTo { .. } => lift(&ins[0], r).broadcast_to(&[&[b][..], out.shape()].concat()),
        Op::SumTo { .. } => {
            let xr = ins[0].t.rank() - 1;
            let mut target = vec![b];
            target.extend(std::iter::repeat_n(1, xr - r));
            target.extend_from_slice(out.shape());
            x().sum_to(&target).reshape(&[&[b][..], out.shape()].concat())
        }
        // `stack` is recorded as a concatenation along a new axis: replayed as a stack.
        Op::Concat { axis, name, .. } if *name == "stack" => {
            let xs: Vec<Tensor<T>> = ins.iter().map(|v| batch_of(v, b)).collect();
            Tensor::stack(&xs, *axis + 1)
        }
        Op::Concat { axis, .. } => {
            let xs: Vec<Tensor<T>> = ins.iter().map(|v| batch_of(v, b)).collect();
            Tensor::concat(&xs, *axis as isize + 1)
        }
        Op::Narrow { axis, start, .. } => x().narrow(*axis as isize + 1, *start, out.shape()[*axis]),
        Op::PadAxis { x: x0, axis, before } => {
            let after = out.shape()[*axis] - before - x0.shape()[*axis];
            x().pad_axis(*axis as isize + 1, *before, after)
        }
        Op::Flip { axis, .. } => x().flip(*axis as isize + 1),
        Op::Sum { x: x0, axes, keepdim, mean, .. } => {
            // The traced input has no batch axis: shift every reduced axis past the new one.
            let shifted: Vec<isize> = (0..x0.rank()).filter(|&a| axes.contains(a)).map(|a| a as isize + 1).collect();
            if shifted.is_empty() {
                x().reshape(&[&[b][..], out.shape()].concat())
            } else if *mean {
                x().mean_axes(&shifted, *keepdim)
            } else {
                x().sum_axes(&shifted, *keepdim)
            }
        }
        Op::Softmax { axis, .. } => x().softmax(*axis as isize + 1),
        Op::LogSoftmax { axis, .. } => x().log_softmax(*axis as isize + 1),
        Op::LogSumExp { axis, keepdim, .. } => x().logsumexp(*axis as isize + 1, *keepdim),
        other => return Err(unsupported(&other.name())),
    })
}

/// Per-example values and gradients of `f(params, example)` over a batch: `batch[k]` has a
/// leading axis of `B` examples and `f` receives, for each example `b`, the slices
/// `batch[k][b]`. Returns each example's value and its gradient with respect to every
/// parameter — the result of a loop of [`grad`] over the examples, computed with one batched
/// trace. **`f` must not branch on its example's values or read them with `data()`/`item()`**:
/// the trace of example 0 would be replayed for every example, silently (see the module docs).
///
/// ```
/// use chi_autodiff::{vmap_grad, Tensor};
/// // Squared error of a linear model y ≈ w·x, per example.
/// let w = Tensor::<f64>::from_vec(vec![0.5, -1.0], &[2]);
/// let xs = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, -1.0, 0.5], &[3, 2]);
/// let ys = Tensor::from_vec(vec![1.0, 0.0, 2.0], &[3]);
/// let r = vmap_grad(|p, e| p[0].mul(&e[0]).sum().sub(&e[1]).square(), &[w], &[xs, ys]).unwrap();
/// assert_eq!(r.grads[0].shape(), &[3, 2]);
/// // Example 0: residual 0.5 − 2 − 1 = −2.5, gradient 2·(−2.5)·x₀ = [−5, −10].
/// assert_eq!(&r.grads[0].data()[..2], &[-5.0, -10.0]);
/// assert_eq!(r.grad_norms().len(), 3);
/// ```
pub fn vmap_grad<T: Float>(
    f: impl Fn(&[Tensor<T>], &[Tensor<T>]) -> Tensor<T>,
    params: &[Tensor<T>],
    batch: &[Tensor<T>],
) -> Result<PerExample<T>, AutodiffError> {
    let Some(first) = batch.first() else {
        return Err(AutodiffError::Graph("vmap_grad: the batch has no tensors".into()));
    };
    if first.rank() == 0 {
        return Err(AutodiffError::Shape { what: "vmap_grad: batch[0]".into(), expected: vec![0], actual: vec![] });
    }
    let b = first.shape()[0];
    if b == 0 {
        return Err(AutodiffError::Graph(format!("vmap_grad: the batch is empty (batch[0] has shape {:?}): there is no example to trace", first.shape())));
    }
    for x in batch {
        if x.rank() == 0 || x.shape()[0] != b {
            let mut expected = x.shape().to_vec();
            if expected.is_empty() {
                expected.push(b);
            } else {
                expected[0] = b;
            }
            return Err(AutodiffError::Shape { what: "vmap_grad: a batch tensor's leading axis".into(), expected, actual: x.shape().to_vec() });
        }
    }
    // Trace on example 0: parameters and example slices are leaves, so every op that touches
    // them is recorded (values of other tensors are constants shared by all examples).
    let p_leaves: Vec<Tensor<T>> = params.iter().map(|p| p.detach().requires_grad()).collect();
    let e_leaves: Vec<Tensor<T>> = batch
        .iter()
        .map(|x| {
            let n = x.numel() / b.max(1);
            Tensor::from_vec(x.data()[..n].to_vec(), &x.shape()[1..]).requires_grad()
        })
        .collect();
    let y = f(&p_leaves, &e_leaves);
    if y.numel() != 1 {
        return Err(AutodiffError::NonScalar(y.shape().to_vec()));
    }

    // Replay in recording order.
    let mut vals: HashMap<u64, Val<T>> = HashMap::new();
    let mut reps = Vec::with_capacity(params.len());
    for p in &p_leaves {
        let mut d = Vec::with_capacity(b * p.numel());
        for _ in 0..b {
            d.extend_from_slice(p.data());
        }
        let rep = Tensor::from_vec(d, &[&[b][..], p.shape()].concat()).requires_grad();
        vals.insert(p.id().expect("leaf"), Val { t: rep.clone(), batched: true });
        reps.push(rep);
    }
    for (l, x) in e_leaves.iter().zip(batch) {
        vals.insert(l.id().expect("leaf"), Val { t: x.detach(), batched: true });
    }
    let nodes = crate::dot::reachable(&[&y], "vmap_grad")?;
    for t in &nodes {
        let node = t.var.as_ref().and_then(|v| v.node.as_ref()).expect("node");
        let op = node.op.borrow();
        let op = op.as_ref().expect("checked by reachable");
        let ins: Vec<Val<T>> = op
            .inputs()
            .iter()
            .map(|x| match x.id().and_then(|id| vals.get(&id)) {
                Some(v) => v.clone(),
                None => Val { t: x.detach(), batched: false },
            })
            .collect();
        let v = if ins.iter().any(|v| v.batched) { Val { t: replay(op, t, &ins, b)?, batched: true } } else { Val { t: t.detach(), batched: false } };
        vals.insert(t.id().expect("node"), v);
    }
    let out = match y.id().and_then(|id| vals.get(&id)) {
        Some(v) => batch_of(v, b).reshape(&[b]),
        None => Tensor::full(&[b], y.item()),
    };
    drop(vals);
    let grads = if out.is_tracked() && !reps.is_empty() {
        let refs: Vec<&Tensor<T>> = reps.iter().collect();
        grad(&[&out.sum()], &refs, None, GradOptions::default())?
    } else {
        reps.iter().map(|r| r.zeros_like()).collect()
    };
    Ok(PerExample { values: out.detach(), grads })
}
