//! Functional transforms, in the spirit of `torch.func` and JAX: [`value_and_grad`],
//! [`jacobian`] (reverse or forward mode), [`hessian`], [`hvp`], [`jvp`], and per-example
//! gradients over a batch ([`vmap_grad`]).
//!
//! Each transform differentiates a closure at a point. It makes its own leaves (detached copies
//! of the inputs), so it never touches the graphs, gradients or hooks of the caller's tensors, and
//! the graphs it builds are freed when it returns. Results are constants (no graph).
//!
//! Forward mode is computed with two reverse passes (the double-VJP construction): `u ↦ Jᵀu`
//! is linear in `u`, so the VJP of that map with a tangent `t` is `J·t`.

use crate::backward::{grad, AutodiffError, GradOptions};
use crate::tape::Float;
use crate::tensor::Tensor;

pub use crate::vmap::{vmap_grad, PerExample};

fn leaf<T: Float>(x: &Tensor<T>) -> Tensor<T> {
    x.detach().requires_grad()
}

fn shape_check<T: Float>(what: &str, expected: &Tensor<T>, actual: &Tensor<T>) -> Result<(), AutodiffError> {
    if expected.shape() != actual.shape() {
        return Err(AutodiffError::Shape { what: what.to_string(), expected: expected.shape().to_vec(), actual: actual.shape().to_vec() });
    }
    Ok(())
}

/// A basis tensor: zeros of `shape` with a one at flat index `i`.
fn basis<T: Float>(shape: &[usize], i: usize) -> Tensor<T> {
    let mut t = Tensor::zeros(shape);
    t.update(|v| v[i] = T::ONE);
    t
}

fn cat_shape(a: &[usize], b: &[usize]) -> Vec<usize> {
    a.iter().chain(b).copied().collect()
}

/// The value of a scalar function of several tensors and its gradient with respect to each.
///
/// ```
/// use chi_autodiff::{value_and_grad, Tensor};
/// let x = Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2]);
/// let (v, g) = value_and_grad(|xs| xs[0].square().sum(), &[x]).unwrap();
/// assert_eq!(v.item(), 5.0);
/// assert_eq!(g[0].to_vec(), vec![2.0, 4.0]);
/// ```
pub fn value_and_grad<T: Float>(
    f: impl Fn(&[Tensor<T>]) -> Tensor<T>,
    xs: &[Tensor<T>],
) -> Result<(Tensor<T>, Vec<Tensor<T>>), AutodiffError> {
    let leaves: Vec<Tensor<T>> = xs.iter().map(leaf).collect();
    let y = f(&leaves);
    if y.numel() != 1 {
        return Err(AutodiffError::NonScalar(y.shape().to_vec()));
    }
    if !y.is_tracked() {
        // A constant function: zero gradients.
        return Ok((y.detach(), xs.iter().map(|x| x.zeros_like()).collect()));
    }
    let refs: Vec<&Tensor<T>> = leaves.iter().collect();
    let g = grad(&[&y], &refs, None, GradOptions::default())?;
    Ok((y.detach(), g))
}

/// Hessian–vector product of a scalar function: returns `(f(x), H(x)·v)`, with `H·v` the
/// gradient of `⟨∇f(x), v⟩` (one forward pass and two reverse passes).
///
/// ```
/// use chi_autodiff::{hvp, Tensor};
/// // f(x) = Σ x³ has H = diag(6x).
/// let x = Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2]);
/// let v = Tensor::from_vec(vec![1.0, 1.0], &[2]);
/// let (y, hv) = hvp(|x| x.mul(x).mul(x).sum(), &x, &v).unwrap();
/// assert_eq!((y.item(), hv.to_vec()), (9.0, vec![6.0, 12.0]));
/// ```
pub fn hvp<T: Float>(
    f: impl Fn(&Tensor<T>) -> Tensor<T>,
    x: &Tensor<T>,
    v: &Tensor<T>,
) -> Result<(Tensor<T>, Tensor<T>), AutodiffError> {
    shape_check("hvp: vector", x, v)?;
    let x = leaf(x);
    let y = f(&x);
    if y.numel() != 1 {
        return Err(AutodiffError::NonScalar(y.shape().to_vec()));
    }
    if !y.is_tracked() {
        return Ok((y.detach(), x.zeros_like()));
    }
    let g = grad(&[&y], &[&x], None, GradOptions::create_graph())?;
    if !g[0].is_tracked() {
        // f is linear in x: the Hessian is zero.
        return Ok((y.detach(), x.zeros_like()));
    }
    let gv = g[0].mul(v).sum();
    let mut r = grad(&[&gv], &[&x], None, GradOptions::default())?;
    Ok((y.detach(), r.remove(0)))
}

/// Forward-mode directional derivative: returns `(f(x), J(x)·t)`.
///
/// ```
/// use chi_autodiff::{jvp, Tensor};
/// let x = Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2]);
/// let t = Tensor::from_vec(vec![1.0, 0.0], &[2]);
/// let (y, jt) = jvp(|x| x.square(), &x, &t).unwrap(); // J = diag(2x)
/// assert_eq!((y.to_vec(), jt.to_vec()), (vec![1.0, 4.0], vec![2.0, 0.0]));
/// ```
pub fn jvp<T: Float>(
    f: impl Fn(&Tensor<T>) -> Tensor<T>,
    x: &Tensor<T>,
    t: &Tensor<T>,
) -> Result<(Tensor<T>, Tensor<T>), AutodiffError> {
    shape_check("jvp: tangent", x, t)?;
    let x = leaf(x);
    let y = f(&x);
    if !y.is_tracked() {
        return Ok((y.detach(), y.zeros_like()));
    }
    let u = Tensor::zeros(y.shape()).requires_grad();
    let jt_u = grad(&[&y], &[&x], Some(&[u.clone()]), GradOptions::create_graph())?;
    if !jt_u[0].is_tracked() {
        return Ok((y.detach(), y.zeros_like()));
    }
    let mut r = grad(&[&jt_u[0]], &[&u], Some(std::slice::from_ref(t)), GradOptions::default())?;
    Ok((y.detach(), r.remove(0)))
}

/// How [`jacobian`] computes a Jacobian.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum JacobianMode {
    /// Reverse mode when the output has no more elements than the input, else forward mode:
    /// the number of passes is the smaller of the two sizes.
    #[default]
    Auto,
    /// One reverse pass per output element (rows of the Jacobian).
    Reverse,
    /// One forward-mode product per input element (columns of the Jacobian).
    Forward,
}

/// The Jacobian of `f` at `x`, of shape `f(x).shape ++ x.shape`: entry `[i…, j…]` is
/// `∂f(x)[i…]/∂x[j…]`. The function is evaluated once; `mode` chooses how the products are
/// taken ([`JacobianMode::Auto`] picks the cheaper side).
///
/// ```
/// use chi_autodiff::{jacobian, JacobianMode, Tensor};
/// let x = Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2]);
/// // f(x) = (x0·x1, x0 + x1, x1²): J = [[x1, x0], [1, 1], [0, 2x1]]
/// let f = |x: &Tensor<f64>| {
///     let (a, b) = (x.narrow(0, 0, 1), x.narrow(0, 1, 1));
///     Tensor::concat(&[a.mul(&b), a.add(&b), b.square()], 0)
/// };
/// for mode in [JacobianMode::Reverse, JacobianMode::Forward] {
///     let j = jacobian(f, &x, mode).unwrap();
///     assert_eq!(j.shape(), &[3, 2]);
///     assert_eq!(j.to_vec(), vec![2.0, 1.0, 1.0, 1.0, 0.0, 4.0]);
/// }
/// ```
pub fn jacobian<T: Float>(f: impl Fn(&Tensor<T>) -> Tensor<T>, x: &Tensor<T>, mode: JacobianMode) -> Result<Tensor<T>, AutodiffError> {
    let xl = leaf(x);
    let y = f(&xl);
    let (m, n) = (y.numel(), x.numel());
    let shape = cat_shape(y.shape(), x.shape());
    if !y.is_tracked() {
        return Ok(Tensor::zeros(&shape));
    }
    let reverse = match mode {
        JacobianMode::Auto => m <= n,
        JacobianMode::Reverse => true,
        JacobianMode::Forward => false,
    };
    let mut j = vec![T::ZERO; m * n];
    if reverse {
        for i in 0..m {
            let row = grad(&[&y], &[&xl], Some(&[basis(y.shape(), i)]), GradOptions::retain_graph())?;
            j[i * n..(i + 1) * n].copy_from_slice(row[0].data());
        }
    } else {
        let u = Tensor::zeros(y.shape()).requires_grad();
        let jt_u = grad(&[&y], &[&xl], Some(&[u.clone()]), GradOptions::create_graph())?;
        if jt_u[0].is_tracked() {
            for c in 0..n {
                let col = grad(&[&jt_u[0]], &[&u], Some(&[basis(x.shape(), c)]), GradOptions::retain_graph())?;
                for (i, v) in col[0].data().iter().enumerate() {
                    j[i * n + c] = *v;
                }
            }
        }
    }
    Ok(Tensor::from_vec(j, &shape))
}

/// The Hessian of a scalar function at `x`, of shape `x.shape ++ x.shape` (reverse over
/// reverse: one gradient pass that records its graph, then one pass per row).
///
/// ```
/// use chi_autodiff::{hessian, Tensor};
/// // f(x) = x0²·x1: H = [[2x1, 2x0], [2x0, 0]]
/// let x = Tensor::<f64>::from_vec(vec![3.0, 5.0], &[2]);
/// let h = hessian(|x| x.narrow(0, 0, 1).square().mul(&x.narrow(0, 1, 1)).sum(), &x).unwrap();
/// assert_eq!(h.to_vec(), vec![10.0, 6.0, 6.0, 0.0]);
/// ```
pub fn hessian<T: Float>(f: impl Fn(&Tensor<T>) -> Tensor<T>, x: &Tensor<T>) -> Result<Tensor<T>, AutodiffError> {
    let xl = leaf(x);
    let y = f(&xl);
    if y.numel() != 1 {
        return Err(AutodiffError::NonScalar(y.shape().to_vec()));
    }
    let n = x.numel();
    let shape = cat_shape(x.shape(), x.shape());
    if !y.is_tracked() {
        return Ok(Tensor::zeros(&shape));
    }
    let g = grad(&[&y], &[&xl], None, GradOptions::create_graph())?.remove(0);
    let mut h = vec![T::ZERO; n * n];
    if g.is_tracked() {
        for i in 0..n {
            let row = grad(&[&g], &[&xl], Some(&[basis(x.shape(), i)]), GradOptions::retain_graph())?;
            h[i * n..(i + 1) * n].copy_from_slice(row[0].data());
        }
    }
    Ok(Tensor::from_vec(h, &shape))
}
