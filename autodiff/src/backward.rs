//! Reverse mode: the backward walk over the tape, `Tensor::backward`, and the functional
//! [`grad`] (a vector–Jacobian product for any outputs and any inputs, leaves or intermediates).

use crate::anomaly;
use crate::ops::Op;
use crate::tape::{is_anomaly_enabled, set_grad_enabled, Float, SparseRows, Var};
use crate::tensor::Tensor;
use std::fmt;
use std::rc::Rc;

/// Options of a backward pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct GradOptions {
    /// Record the backward computation on the tape, so the gradients can be differentiated again
    /// (grad of grad, Hessian–vector products). Implies `retain_graph` unless that is set.
    pub create_graph: bool,
    /// Keep the tape after this pass (default: `create_graph`). Without it the tape is freed.
    pub retain_graph: Option<bool>,
}

impl GradOptions {
    /// `create_graph = true` (and so the tape is retained).
    pub fn create_graph() -> Self {
        GradOptions { create_graph: true, retain_graph: None }
    }
    /// `retain_graph = true`.
    pub fn retain_graph() -> Self {
        GradOptions { create_graph: false, retain_graph: Some(true) }
    }
}

/// What can go wrong in a backward pass.
#[derive(Debug, Clone)]
pub enum AutodiffError {
    /// The output does not depend on anything that requires grad.
    NotTracked(String),
    /// `backward()` without a seed needs a one-element output.
    NonScalar(Vec<usize>),
    /// A seed's shape differs from its output's.
    SeedShape {
        /// output shape
        output: Vec<usize>,
        /// seed shape
        seed: Vec<usize>,
    },
    /// [`grad`] was given a different number of seeds than outputs.
    SeedCount {
        /// number of outputs
        outputs: usize,
        /// number of seeds
        seeds: usize,
    },
    /// The tape holding part of this graph was freed by an earlier backward pass.
    TapeFreed(String),
    /// Anomaly mode found a NaN or Inf.
    Anomaly(anomaly::Anomaly),
}

impl fmt::Display for AutodiffError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AutodiffError::NotTracked(w) => write!(f, "{w}: tensor does not require grad (nothing it was computed from requires grad)"),
            AutodiffError::NonScalar(s) => write!(
                f,
                "backward: output has shape {s:?}; backward() without a seed needs a one-element output (pass a seed of the output's shape to backward_with or grad)"
            ),
            AutodiffError::SeedShape { output, seed } => write!(f, "backward: seed shape {seed:?} differs from output shape {output:?}"),
            AutodiffError::SeedCount { outputs, seeds } => {
                write!(f, "grad: {seeds} seed(s) for {outputs} output(s); give one seed per output, or none")
            }
            AutodiffError::TapeFreed(w) => write!(
                f,
                "backward: the tape holding {w} was already freed by an earlier backward pass; pass retain_graph to keep it, or detach() values carried across steps"
            ),
            AutodiffError::Anomaly(a) => write!(f, "{a}"),
        }
    }
}
impl std::error::Error for AutodiffError {}

fn accumulate<T: Float>(slot: &mut Option<Tensor<T>>, g: Tensor<T>, create: bool) {
    match slot.take() {
        None => *slot = Some(g),
        Some(mut acc) => {
            if !create && acc.var.is_none() && acc.shape == g.shape {
                if let Some(v) = Rc::get_mut(&mut acc.data) {
                    // Sole owner of an untracked buffer: add in place, no allocation.
                    chi_kernels::elementwise::axpy(T::ONE, &g.data, v);
                    *slot = Some(acc);
                    return;
                }
            }
            *slot = Some(acc.add(&g));
        }
    }
}

fn run_hooks<T: Float>(var: &Var<T>, mut g: Tensor<T>) -> Tensor<T> {
    let hooks = var.hooks.borrow().clone();
    for h in hooks {
        if let Some(r) = h(&g) {
            assert!(r.shape == g.shape, "gradient hook returned shape {:?} for a gradient of shape {:?}", r.shape, g.shape);
            g = r;
        }
    }
    g
}

/// Frees this thread's tape for `T` when dropped (see `run_backward`).
struct FreeTapeOnDrop<T: Float>(std::marker::PhantomData<T>);

impl<T: Float> Drop for FreeTapeOnDrop<T> {
    fn drop(&mut self) {
        T::tape().with(|t| t.borrow_mut().free());
    }
}

/// The backward walk. `roots` are `(output, seed)` pairs. With `targets`, returns the gradient
/// of each target (zeros if it does not influence the outputs) and leaves `.grad` untouched;
/// without, accumulates into the `.grad` of leaves (and of retained intermediates).
pub(crate) fn run_backward<T: Float>(
    roots: &[(Tensor<T>, Tensor<T>)],
    targets: Option<&[&Tensor<T>]>,
    opts: GradOptions,
) -> Result<Vec<Tensor<T>>, AutodiffError> {
    let create = opts.create_graph;
    let retain = opts.retain_graph.unwrap_or(create);
    let generation = T::tape().with(|t| t.borrow().generation);

    let stale = |v: &Var<T>| matches!(v.node, Some((g, _)) if g != generation);
    let mut max_index: Option<usize> = None;
    for (r, seed) in roots {
        let v = r.var.as_ref().filter(|v| v.requires_grad.get()).ok_or_else(|| AutodiffError::NotTracked("backward".into()))?;
        if stale(v) {
            return Err(AutodiffError::TapeFreed(format!("the output of shape {:?}", r.shape)));
        }
        if seed.shape != r.shape {
            return Err(AutodiffError::SeedShape { output: r.shape().to_vec(), seed: seed.shape().to_vec() });
        }
        if let Some((_, i)) = v.node {
            max_index = Some(max_index.map_or(i as usize, |m: usize| m.max(i as usize)));
        }
    }
    let n = max_index.map_or(0, |m| m + 1);
    let mut grads: Vec<Option<Tensor<T>>> = vec![None; n];
    let mut leaf_grads: Vec<(Rc<Var<T>>, Option<Tensor<T>>)> = Vec::new();
    let leaf_slot = |leaf_grads: &mut Vec<(Rc<Var<T>>, Option<Tensor<T>>)>, v: &Rc<Var<T>>| -> usize {
        match leaf_grads.iter().position(|(w, _)| Rc::ptr_eq(w, v)) {
            Some(p) => p,
            None => {
                leaf_grads.push((v.clone(), None));
                leaf_grads.len() - 1
            }
        }
    };
    for (r, seed) in roots {
        let v = r.var.as_ref().unwrap();
        match v.node {
            Some((_, i)) => accumulate(&mut grads[i as usize], seed.clone(), create),
            None => {
                let p = leaf_slot(&mut leaf_grads, v);
                accumulate(&mut leaf_grads[p].1, seed.clone(), create);
            }
        }
    }

    // Targets: which nodes lead to one (so we can skip the rest), and where each target's gradient goes.
    let target_vars: Vec<Option<Rc<Var<T>>>> = targets.map(|ts| ts.iter().map(|t| t.var.clone()).collect()).unwrap_or_default();
    let target_of = |v: &Rc<Var<T>>| target_vars.iter().position(|t| t.as_ref().is_some_and(|t| Rc::ptr_eq(t, v)));
    let mut results: Vec<Option<Tensor<T>>> = vec![None; target_vars.len()];
    let needed: Option<Vec<bool>> = targets.map(|_| {
        T::tape().with(|t| {
            let t = t.borrow();
            let mut need = vec![false; n];
            for i in 0..n {
                need[i] = t.nodes[i].op.inputs().iter().any(|x| match &x.var {
                    Some(v) => {
                        target_of(v).is_some() || matches!(v.node, Some((g, j)) if g == generation && (j as usize) < i && need[j as usize])
                    }
                    None => false,
                });
            }
            need
        })
    });

    let _mode = set_grad_enabled(create);
    // Without `retain_graph` the tape is freed at the end anyway, so take its nodes now and
    // consume them from the back: no clone and no thread-local access per node, and each node's
    // saved tensors are released as soon as its rule has run (lower peak memory). The guard
    // frees the tape (bumping its generation) on every exit, including errors.
    let mut owned = if retain { None } else { Some((T::tape().with(|t| std::mem::take(&mut t.borrow_mut().nodes)), FreeTapeOnDrop::<T>(std::marker::PhantomData))) };
    for i in (0..n).rev() {
        let node = owned.as_mut().map(|(nodes, _)| {
            nodes.truncate(i + 1);
            nodes.pop().expect("tape node below the output")
        });
        let Some(g) = grads[i].take() else { continue };
        let (op, out, location): (Op<T>, Tensor<T>, _) = match node {
            Some(node) => (node.op, node.out, node.location),
            None => T::tape().with(|t| {
                let t = t.borrow();
                let node = &t.nodes[i];
                (node.op.clone(), node.out.clone(), node.location)
            }),
        };
        let var = out.var.clone().expect("tape node output has a Var");
        let g = run_hooks(&var, g);
        if var.retain.get() {
            let mut slot = var.grad.borrow_mut();
            let mut s = slot.take();
            accumulate(&mut s, g.clone(), create);
            *slot = s;
        }
        if let Some(k) = target_of(&var) {
            accumulate(&mut results[k], g.clone(), create);
        }
        if let Some(nd) = &needed {
            if !nd[i] {
                continue;
            }
        }
        let inputs = op.inputs();
        let need_of = |x: &Tensor<T>| {
            x.requires_grad_flag()
                && match (&needed, &x.var) {
                    (None, _) => true,
                    (Some(nd), Some(v)) => target_of(v).is_some() || matches!(v.node, Some((_, j)) if nd[j as usize]),
                    (Some(_), None) => false,
                }
        };
        // Inline for one- and two-input ops: no allocation per node on the common path.
        let (mut need_inline, need_heap): ([bool; 2], Vec<bool>);
        let need: &[bool] = if inputs.len() <= 2 {
            need_inline = [false; 2];
            for (k, x) in inputs.iter().enumerate() {
                need_inline[k] = need_of(x);
            }
            &need_inline[..inputs.len()]
        } else {
            need_heap = inputs.iter().map(|x| need_of(x)).collect();
            &need_heap
        };
        if !need.iter().any(|&b| b) {
            continue;
        }
        // Sparse embedding gradients: deliver rows straight to the table instead of densifying.
        if let Op::GatherRows { table, ids } = &op {
            let tv = table.var.as_ref().unwrap();
            if !create && targets.is_none() && tv.is_leaf() && tv.sparse.get() {
                let dim = table.shape()[1];
                let mut sg = tv.sparse_grad.borrow_mut();
                let s = sg.get_or_insert_with(|| SparseRows { ids: Vec::new(), values: Vec::new(), dim, rows: table.shape()[0] });
                s.ids.extend_from_slice(ids);
                s.values.extend_from_slice(&g.data);
                continue;
            }
        }
        let gis = op.backward(&out, &g, need, !create);
        if is_anomaly_enabled() {
            anomaly::check_backward(&op, &g, &gis, location);
        }
        for (k, (x, gi)) in inputs.iter().zip(gis).enumerate() {
            let Some(gi) = gi else { continue };
            if !need[k] {
                continue;
            }
            assert!(
                gi.shape == x.shape,
                "internal error: backward rule of `{}` produced a gradient of shape {:?} for input {k} of shape {:?}",
                op.name(),
                gi.shape,
                x.shape
            );
            let xv = x.var.as_ref().unwrap();
            match xv.node {
                Some((gen, j)) => {
                    if gen != generation {
                        return Err(AutodiffError::TapeFreed(format!("input {k} of `{}` (called at {location})", op.name())));
                    }
                    accumulate(&mut grads[j as usize], gi, create);
                }
                None => {
                    let p = leaf_slot(&mut leaf_grads, xv);
                    accumulate(&mut leaf_grads[p].1, gi, create);
                }
            }
        }
    }

    for (v, g) in leaf_grads {
        let Some(g) = g else { continue };
        let g = run_hooks(&v, g);
        if targets.is_some() {
            if let Some(k) = target_of(&v) {
                accumulate(&mut results[k], g, create);
            }
        } else {
            let mut slot = v.grad.borrow_mut();
            let mut s = slot.take();
            accumulate(&mut s, g, create);
            *slot = s;
        }
    }
    drop(_mode);
    drop(owned); // frees the tape (see `FreeTapeOnDrop`)
    let out = match targets {
        Some(ts) => results.into_iter().zip(ts).map(|(r, t)| r.unwrap_or_else(|| Tensor::zeros(t.shape()))).collect(),
        None => Vec::new(),
    };
    Ok(out)
}

impl<T: Float> Tensor<T> {
    /// Backpropagates from this one-element output, accumulating into the `.grad` of every leaf
    /// it depends on, then frees the tape. Panics with the error message on failure; see
    /// [`Tensor::try_backward`].
    #[track_caller]
    pub fn backward(&self) {
        if let Err(e) = self.try_backward() {
            panic!("{e}");
        }
    }
    /// [`Tensor::backward`] returning errors instead of panicking.
    pub fn try_backward(&self) -> Result<(), AutodiffError> {
        self.backward_with(None, GradOptions::default())
    }
    /// Backward with an explicit seed (`∂L/∂self`, required for outputs of more than one
    /// element) and options.
    pub fn backward_with(&self, seed: Option<&Tensor<T>>, opts: GradOptions) -> Result<(), AutodiffError> {
        let seed = match seed {
            Some(s) => s.clone(),
            None => {
                if self.numel() != 1 {
                    return Err(AutodiffError::NonScalar(self.shape().to_vec()));
                }
                Tensor::ones(self.shape())
            }
        };
        run_backward(&[(self.clone(), seed)], None, opts).map(|_| ())
    }
}

/// Gradients of `outputs` with respect to `inputs` (leaves or intermediates), like
/// `torch.autograd.grad`: the vector–Jacobian product `Σₖ seedₖᵀ · ∂outputₖ/∂input`.
///
/// `seeds` defaults to ones (each output must then have one element). Leaves' `.grad` are not
/// touched. An input the outputs do not depend on gets a zero gradient. With
/// [`GradOptions::create_graph`], the returned gradients are themselves differentiable.
///
/// ```
/// use chi_autodiff::{grad, GradOptions, Tensor};
/// let x = Tensor::<f64>::scalar(3.0).requires_grad();
/// let y = x.mul(&x).mul(&x); // x³
/// let dy = grad(&[&y], &[&x], None, GradOptions::create_graph()).unwrap();
/// assert_eq!(dy[0].item(), 27.0); // 3x²
/// let d2y = grad(&[&dy[0]], &[&x], None, GradOptions::default()).unwrap();
/// assert_eq!(d2y[0].item(), 18.0); // 6x
/// ```
pub fn grad<T: Float>(
    outputs: &[&Tensor<T>],
    inputs: &[&Tensor<T>],
    seeds: Option<&[Tensor<T>]>,
    opts: GradOptions,
) -> Result<Vec<Tensor<T>>, AutodiffError> {
    if let Some(s) = seeds {
        if s.len() != outputs.len() {
            return Err(AutodiffError::SeedCount { outputs: outputs.len(), seeds: s.len() });
        }
    }
    let mut roots = Vec::with_capacity(outputs.len());
    for (k, o) in outputs.iter().enumerate() {
        let seed = match seeds {
            Some(s) => s[k].clone(),
            None => {
                if o.numel() != 1 {
                    return Err(AutodiffError::NonScalar(o.shape().to_vec()));
                }
                Tensor::ones(o.shape())
            }
        };
        roots.push(((*o).clone(), seed));
    }
    for x in inputs {
        if !x.requires_grad_flag() {
            return Err(AutodiffError::NotTracked("grad (an input)".into()));
        }
    }
    run_backward(&roots, Some(inputs), opts)
}

/// Hessian–vector product `H·v` of a scalar function at `x`: the gradient of `⟨∇f(x), v⟩`.
pub fn hvp<T: Float>(f: impl Fn(&Tensor<T>) -> Tensor<T>, x: &Tensor<T>, v: &Tensor<T>) -> Result<Tensor<T>, AutodiffError> {
    let x = x.detach().requires_grad();
    let y = f(&x);
    let g = grad(&[&y], &[&x], None, GradOptions::create_graph())?;
    let gv = g[0].mul(v).sum();
    let r = grad(&[&gv], &[&x], None, GradOptions::default());
    crate::tape::clear_tape::<T>();
    r.map(|mut v| v.remove(0))
}

/// Forward-mode directional derivative `J·t` of `f` at `x`, computed with two reverse passes
/// (the double-VJP construction): `u ↦ Jᵀu` is linear in `u`, so its VJP with `t` is `J·t`.
pub fn jvp<T: Float>(f: impl Fn(&Tensor<T>) -> Tensor<T>, x: &Tensor<T>, t: &Tensor<T>) -> Result<Tensor<T>, AutodiffError> {
    assert!(t.shape == x.shape, "jvp: tangent shape {:?} differs from input shape {:?}", t.shape, x.shape);
    let x = x.detach().requires_grad();
    let y = f(&x);
    let u = Tensor::zeros(y.shape()).requires_grad();
    let jt_u = grad(&[&y], &[&x], Some(&[u.clone()]), GradOptions::create_graph())?;
    let r = grad(&[&jt_u[0]], &[&u], Some(std::slice::from_ref(t)), GradOptions::default());
    crate::tape::clear_tape::<T>();
    r.map(|mut v| v.remove(0))
}
