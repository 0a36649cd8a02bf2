//! Runs a [`Program`] through chi's engine and records everything the page shows: the tape (as
//! the engine lists it), every value, every node's gradient, the gradient each backward step
//! sends along each edge, and the float64 central-difference estimate beside each of them.
//!
//! Where each number comes from:
//! * values: the forward pass, run by chi with the leaves requiring grad;
//! * the tape: [`chi_autodiff::dot::tape_listing`] of the loss, checked op by op against the
//!   program (so the page shows the engine's recording, not a guess of it);
//! * node gradients `∂L/∂y`: one [`chi_autodiff::grad`] call on the full graph for all nodes;
//! * edge contributions: the engine's backward rule of that one op, run by [`chi_autodiff::grad`]
//!   on a fresh copy of the op with the node's gradient as seed; the contributions arriving at a
//!   node are checked to add up to the node's gradient;
//! * finite differences: `∂L/∂y[j] ≈ (L(y + ε eⱼ) − L(y − ε eⱼ)) / 2ε`, re-running the program
//!   downstream of the perturbed node, and for each edge the same estimate of the local
//!   vector–Jacobian product `⟨g, op(x + ε eⱼ) − op(x − ε eⱼ)⟩ / 2ε`, with ε = 1e-6 in float64.

use super::program::{apply, NodeKind, OpKind, Program};
use super::TeachError;
use chi_autodiff::{dot, grad, no_grad, GradOptions, Tensor};
use serde::Serialize;

/// The finite-difference step (float64 central differences: truncation error ~ε², rounding
/// ~1e-16/ε, balanced near 1e-5 to 1e-6).
pub const EPS: f64 = 1e-6;

/// Most values (summed over every node) a page may hold.
pub const MAX_VALUES: usize = 4096;

/// One node of the page's graph.
#[derive(Clone, Debug, Serialize)]
pub struct TraceNode {
    /// Position in [`Trace::nodes`] (the page's id).
    pub id: usize,
    /// Unique label: a leaf's or constant's name, `%k` for the k-th op of the engine's tape.
    pub label: String,
    /// The variable the user assigned it to, if any.
    pub name: Option<String>,
    /// `"leaf"`, `"const"` or `"op"`.
    pub kind: &'static str,
    /// The engine's op name (ops only).
    pub op: Option<String>,
    /// Index in the engine's tape (`%k`; ops only).
    pub tape: Option<usize>,
    /// Page ids of the inputs (ops only).
    pub inputs: Vec<usize>,
    /// Shape.
    pub shape: Vec<usize>,
    /// Value (row-major).
    pub value: Vec<f64>,
    /// `∂L/∂node` from the engine (leaves and ops; `None` for constants).
    pub grad: Option<Vec<f64>>,
    /// The central-difference estimate of `grad`.
    pub grad_fd: Option<Vec<f64>>,
    /// Layout: column (longest path from a leaf) and position, filled by the layout.
    pub layer: usize,
    /// Layout x (centre, px).
    pub x: f64,
    /// Layout y (centre, px).
    pub y: f64,
}

/// The gradient one backward step sends along one edge.
#[derive(Clone, Debug, Serialize)]
pub struct TraceEdge {
    /// Page id of the input that receives it.
    pub input: usize,
    /// Which argument of the op (an input used twice gets two edges).
    pub slot: usize,
    /// The contribution, from the engine's backward rule.
    pub contrib: Vec<f64>,
    /// Central-difference estimate of the same local vector–Jacobian product (`None` where the
    /// op has a kink, relu, and an input sits within ε of it).
    pub fd: Option<Vec<f64>>,
}

/// One step of the backward pass: one op's rule applied to its incoming gradient.
#[derive(Clone, Debug, Serialize)]
pub struct BackStep {
    /// Page id of the op node.
    pub node: usize,
    /// The rule, in words.
    pub rule: String,
    /// Its incoming gradient `∂L/∂y` (engine).
    pub g: Vec<f64>,
    /// Central-difference estimate of `g`.
    pub g_fd: Vec<f64>,
    /// What it sends to each input that requires grad.
    pub edges: Vec<TraceEdge>,
}

/// Everything the page shows.
#[derive(Clone, Debug, Serialize)]
pub struct Trace {
    /// Page title.
    pub title: String,
    /// What was run (the expression, or a description of the built-in).
    pub source: String,
    /// Nodes that the loss depends on, in program order.
    pub nodes: Vec<TraceNode>,
    /// Page ids of the ops in recording order (the forward steps).
    pub forward: Vec<usize>,
    /// The backward steps in execution order.
    pub backward: Vec<BackStep>,
    /// The loss.
    pub loss: f64,
    /// Page id of the loss node.
    pub output: usize,
    /// The finite-difference step.
    pub eps: f64,
    /// Largest |analytic − finite difference| over every number shown.
    pub max_fd_error: f64,
    /// The engine's text listing of the tape (locations stripped).
    pub listing: String,
}

impl Trace {
    /// The node labelled `label`.
    pub fn node(&self, label: &str) -> Option<&TraceNode> {
        self.nodes.iter().find(|n| n.label == label)
    }
}

fn dotp(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Runs `prog` through chi's engine and collects the trace (see the module docs).
pub fn trace(prog: &Program, title: &str, source: &str) -> Result<Trace, TeachError> {
    let n = prog.nodes.len();
    // The finite differences re-run the program once per element of every node: keep pages
    // small enough to build in well under a second (and to read).
    let total: usize = prog.nodes.iter().map(|node| node.shape.iter().product::<usize>()).sum();
    if total > MAX_VALUES {
        return Err(TeachError::TooLarge(total));
    }
    // Which nodes are tracked (depend on a leaf) and which the loss depends on.
    let mut tracked = vec![false; n];
    for (i, node) in prog.nodes.iter().enumerate() {
        tracked[i] = match node.kind {
            NodeKind::Leaf(_) => true,
            NodeKind::Const(_) => false,
            NodeKind::Op(_) => node.inputs.iter().any(|&j| tracked[j]),
        };
    }
    if !tracked[prog.output] {
        return Err(TeachError::NothingToDifferentiate);
    }
    let mut reach = vec![false; n];
    reach[prog.output] = true;
    for i in (0..n).rev() {
        if reach[i] {
            for &j in &prog.nodes[i].inputs {
                reach[j] = true;
            }
        }
    }
    let recorded: Vec<usize> = (0..n).filter(|&i| reach[i] && tracked[i] && matches!(prog.nodes[i].kind, NodeKind::Op(_))).collect();

    // Forward with the engine, then its own listing of what it recorded.
    let vals = prog.eval(true, None);
    if let Some(i) = (0..n).find(|&i| reach[i] && !vals[i].all_finite()) {
        let what = match prog.nodes[i].kind {
            NodeKind::Op(op) => op.engine_name().to_string(),
            _ => "an input".to_string(),
        };
        return Err(TeachError::NonFinite(what));
    }
    let loss_t = &vals[prog.output];
    let listing = dot::tape_listing(&[loss_t])?;
    let engine_ops: Vec<String> = listing
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with('%'))
        .map(|l| {
            let after = l.split_once(" = ").map(|x| x.1).unwrap_or("");
            after.split('(').next().unwrap_or("").to_string()
        })
        .collect();
    let expected: Vec<&str> = recorded
        .iter()
        .map(|&i| match prog.nodes[i].kind {
            NodeKind::Op(op) => op.engine_name(),
            _ => unreachable!("recorded holds ops"),
        })
        .collect();
    if engine_ops != expected {
        return Err(TeachError::Inconsistent(format!(
            "the engine recorded {:?} but the program has {:?}",
            engine_ops, expected
        )));
    }
    let listing: String = listing.lines().map(|l| l.split("  @ ").next().unwrap_or(l).trim_end().to_string() + "\n").collect();

    // Page ids: reachable nodes in program order.
    let mut page_id = vec![usize::MAX; n];
    let mut order = Vec::new();
    for i in 0..n {
        if reach[i] {
            page_id[i] = order.len();
            order.push(i);
        }
    }
    let tape_index: std::collections::HashMap<usize, usize> = recorded.iter().enumerate().map(|(k, &i)| (i, k)).collect();

    // Every node's gradient, in one engine call.
    let targets: Vec<usize> = order.iter().copied().filter(|&i| tracked[i]).collect();
    let target_refs: Vec<&Tensor<f64>> = targets.iter().map(|&i| &vals[i]).collect();
    let grads = grad(&[loss_t], &target_refs, None, GradOptions::retain_graph())?;
    let mut node_grad: Vec<Option<Vec<f64>>> = vec![None; n];
    for (&i, g) in targets.iter().zip(&grads) {
        node_grad[i] = Some(g.to_vec());
    }

    // Finite differences of the loss with respect to every element of every tracked node.
    let loss_at = |p: usize, e: usize, d: f64| prog.eval(false, Some((p, e, d)))[prog.output].item();
    let mut node_fd: Vec<Option<Vec<f64>>> = vec![None; n];
    let mut max_err: f64 = 0.0;
    for &i in &targets {
        let numel = vals[i].numel();
        let fd: Vec<f64> = (0..numel).map(|e| (loss_at(i, e, EPS) - loss_at(i, e, -EPS)) / (2.0 * EPS)).collect();
        let g = node_grad[i].as_ref().expect("targets have gradients");
        if fd_trustworthy(prog, i, &vals) {
            for (a, b) in g.iter().zip(&fd) {
                max_err = max_err.max((a - b).abs());
            }
        }
        node_fd[i] = Some(fd);
    }

    // Backward steps: the recorded ops, last recorded first.
    let mut backward = Vec::new();
    let mut arrived: Vec<Vec<f64>> = (0..n).map(|i| vec![0.0; vals[i].numel()]).collect();
    for &i in recorded.iter().rev() {
        let NodeKind::Op(op) = prog.nodes[i].kind else { unreachable!() };
        let g = Tensor::from_vec(node_grad[i].clone().expect("recorded ops are targets"), &prog.nodes[i].shape);
        let inputs = &prog.nodes[i].inputs;
        // The engine's rule for this one op: a fresh copy whose inputs are leaves, seeded with g.
        let copies: Vec<Tensor<f64>> = inputs
            .iter()
            .map(|&j| if tracked[j] { vals[j].detach().requires_grad() } else { vals[j].detach() })
            .collect();
        let refs: Vec<&Tensor<f64>> = copies.iter().collect();
        let out = apply(op, &refs);
        let slots: Vec<usize> = (0..inputs.len()).filter(|&s| tracked[inputs[s]]).collect();
        let slot_refs: Vec<&Tensor<f64>> = slots.iter().map(|&s| &copies[s]).collect();
        let contribs = grad(&[&out], &slot_refs, Some(std::slice::from_ref(&g)), GradOptions::default())?;
        let plain: Vec<Tensor<f64>> = copies.iter().map(|c| c.detach()).collect();
        let mut edges = Vec::new();
        for (&s, c) in slots.iter().zip(contribs) {
            let j = inputs[s];
            let c = c.to_vec();
            for (a, x) in arrived[j].iter_mut().zip(&c) {
                *a += x;
            }
            let kink = !op.smooth() && plain[s].data().iter().any(|x| x.abs() <= 2.0 * EPS);
            let fd = (!kink).then(|| local_fd(op, &plain, s, g.data()));
            if let Some(fd) = &fd {
                for (a, b) in c.iter().zip(fd) {
                    max_err = max_err.max((a - b).abs());
                }
            }
            edges.push(TraceEdge { input: page_id[j], slot: s, contrib: c, fd });
        }
        backward.push(BackStep {
            node: page_id[i],
            rule: op.rule().to_string(),
            g: g.to_vec(),
            g_fd: node_fd[i].clone().expect("targets have estimates"),
            edges,
        });
    }
    // The contributions that arrived at each node add up to the engine's gradient of it.
    for &i in &targets {
        if i == prog.output {
            continue;
        }
        let g = node_grad[i].as_ref().expect("targets have gradients");
        for (a, b) in arrived[i].iter().zip(g) {
            if (a - b).abs() > 1e-9 * (1.0 + b.abs()) {
                return Err(TeachError::Inconsistent(format!(
                    "the contributions into node {i} add up to {a}, the engine's gradient is {b}"
                )));
            }
        }
    }

    let nodes: Vec<TraceNode> = order
        .iter()
        .map(|&i| {
            let node = &prog.nodes[i];
            let (kind, op, tape, inputs) = match (&node.kind, tracked[i]) {
                (NodeKind::Leaf(_), _) => ("leaf", None, None, vec![]),
                (NodeKind::Op(op), true) => {
                    ("op", Some(op.engine_name().to_string()), Some(tape_index[&i]), node.inputs.iter().map(|&j| page_id[j]).collect())
                }
                // Ops on constants only are not recorded: to the tape they are constants.
                _ => ("const", None, None, vec![]),
            };
            let label = match (kind, tape) {
                ("op", Some(k)) => format!("%{k}"),
                _ => node.name.clone().unwrap_or_else(|| format!("c{}", page_id[i])),
            };
            TraceNode {
                id: page_id[i],
                label,
                name: node.name.clone(),
                kind,
                op,
                tape,
                inputs,
                shape: node.shape.clone(),
                value: vals[i].to_vec(),
                grad: node_grad[i].clone(),
                grad_fd: node_fd[i].clone(),
                layer: 0,
                x: 0.0,
                y: 0.0,
            }
        })
        .collect();
    Ok(Trace {
        title: title.to_string(),
        source: source.to_string(),
        nodes,
        forward: recorded.iter().map(|&i| page_id[i]).collect(),
        backward,
        loss: vals[prog.output].item(),
        output: page_id[prog.output],
        eps: EPS,
        max_fd_error: max_err,
        listing,
    })
}

/// Central-difference estimate of `⟨g, ∂op/∂x_slot⟩` for every element of input `slot`.
fn local_fd(op: OpKind, xs: &[Tensor<f64>], slot: usize, g: &[f64]) -> Vec<f64> {
    no_grad(|| {
        (0..xs[slot].numel())
            .map(|e| {
                let at = |d: f64| {
                    let mut data = xs[slot].to_vec();
                    data[e] += d;
                    let moved = Tensor::from_vec(data, xs[slot].shape());
                    let refs: Vec<&Tensor<f64>> = xs.iter().enumerate().map(|(k, x)| if k == slot { &moved } else { x }).collect();
                    dotp(&apply(op, &refs).to_vec(), g)
                };
                (at(EPS) - at(-EPS)) / (2.0 * EPS)
            })
            .collect()
    })
}

/// Whether a finite difference through node `i` avoids relu kinks: false if some relu
/// downstream has an input within a few ε of zero.
fn fd_trustworthy(prog: &Program, i: usize, vals: &[Tensor<f64>]) -> bool {
    !prog.nodes.iter().enumerate().skip(i + 1).any(|(_, node)| {
        matches!(node.kind, NodeKind::Op(OpKind::Relu)) && vals[node.inputs[0]].data().iter().any(|x| x.abs() <= 4.0 * EPS)
    })
}
