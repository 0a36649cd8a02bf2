//! Looking at a graph: a text listing ([`tape_listing`]) and Graphviz DOT export ([`to_dot`]),
//! of the forward graph and, on request, of the backward graph that differentiates it.
//!
//! Both walk the graph reachable from the given outputs. A backward pass without
//! `retain_graph` releases the ops it ran, so after it the forward graph can no longer be
//! drawn: both functions then return an error saying so (back-propagate with
//! [`GradOptions::retain_graph`] to draw afterwards). Leaves show their names (see
//! [`Tensor::named`]).
//!
//! ```
//! use chi_autodiff::{dot, Tensor};
//! let w = Tensor::<f64>::from_vec(vec![0.5, -1.0], &[2]).requires_grad().named("w");
//! let y = w.tanh().sum();
//! let text = dot::tape_listing(&[&y]).unwrap();
//! assert!(text.contains("tanh(w)"));
//! let g = dot::to_dot(&[&y], &dot::DotOptions { backward: true, ..Default::default() }).unwrap();
//! assert!(g.starts_with("digraph") && g.contains("tanh_backward"));
//! y.backward(); // releases the graph ...
//! assert!(dot::to_dot(&[&y], &dot::DotOptions::default()).is_err()); // ... so it cannot be drawn
//! ```

use crate::backward::{AutodiffError, GradOptions};
use crate::tape::Float;
use crate::tensor::Tensor;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

/// What to show in a DOT export.
#[derive(Clone, Debug)]
pub struct DotOptions {
    /// Show values (tensors with at most `max_values` elements; otherwise a summary).
    pub values: bool,
    /// Show gradients: those stored on leaves and retained intermediates and, with
    /// `backward`, the gradient of every node (computed by a backward pass that retains the
    /// graph; needs one-element outputs).
    pub grads: bool,
    /// Largest tensor whose values are printed in full.
    pub max_values: usize,
    /// Show the source location of each op.
    pub locations: bool,
    /// Also draw the backward graph: one gradient node per forward op, labelled with its
    /// backward rule, linked (dotted) to the forward node it differentiates, with gradients
    /// flowing from each node's rule to the rules of its inputs and into the leaves.
    pub backward: bool,
}

impl Default for DotOptions {
    fn default() -> Self {
        DotOptions { values: false, grads: false, max_values: 6, locations: false, backward: false }
    }
}

fn summary<T: Float>(t: &Tensor<T>, max: usize) -> String {
    let d = t.data();
    if d.len() <= max {
        let v: Vec<String> = d.iter().map(|x| format!("{:.4}", x.to_f64())).collect();
        format!("[{}]", v.join(", "))
    } else {
        let (mut lo, mut hi, mut s) = (f64::INFINITY, f64::NEG_INFINITY, 0.0);
        for x in d {
            let x = x.to_f64();
            lo = lo.min(x);
            hi = hi.max(x);
            s += x;
        }
        format!("min {lo:.3} mean {:.3} max {hi:.3}", s / d.len() as f64)
    }
}

fn leaf_label<T: Float>(t: &Tensor<T>) -> String {
    t.name().unwrap_or_else(|| format!("leaf{}", t.id().unwrap_or(0)))
}

/// The op outputs reachable from `outputs`, in recording order, or an error if a backward pass
/// has released part of the graph.
pub(crate) fn reachable<T: Float>(outputs: &[&Tensor<T>], what: &str) -> Result<Vec<Tensor<T>>, AutodiffError> {
    let mut seen: HashMap<u64, ()> = HashMap::new();
    let mut stack: Vec<Tensor<T>> = outputs.iter().map(|t| (*t).clone()).collect();
    let mut nodes = Vec::new();
    while let Some(t) = stack.pop() {
        let t2 = t.clone();
        let Some(v) = t2.var.as_ref() else { continue };
        let Some(node) = v.node.as_ref() else { continue };
        if seen.insert(v.id, ()).is_some() {
            continue;
        }
        let op = node.op.borrow();
        let Some(op) = op.as_ref() else {
            return Err(AutodiffError::Graph(format!(
                "{what}: the op recorded at {} (output shape {:?}) was released by a backward pass without retain_graph, so the graph can no longer be drawn; back-propagate with GradOptions::retain_graph() to draw it afterwards",
                node.location,
                t.shape()
            )));
        };
        for x in op.inputs().iter() {
            stack.push((*x).clone());
        }
        nodes.push(t);
    }
    nodes.sort_by_key(|t| t.id());
    Ok(nodes)
}

fn id_of<T: Float>(t: &Tensor<T>) -> u64 {
    t.id().expect("tracked")
}

/// A listing of the graph `outputs` depend on, in two parts: the forward ops in recording order
/// (`%k = op(inputs) : shape  @ file:line`), then the backward steps in the order a backward
/// pass runs them (`∂%k  op_backward: ∂%k → ∂inputs`), each step sending the gradient of one
/// op's output to the inputs that require grad.
pub fn tape_listing<T: Float>(outputs: &[&Tensor<T>]) -> Result<String, AutodiffError> {
    let nodes = reachable(outputs, "tape_listing")?;
    let index: HashMap<u64, usize> = nodes.iter().enumerate().map(|(k, t)| (id_of(t), k)).collect();
    let arg = |x: &Tensor<T>| match x.var.as_ref() {
        Some(v) if v.node.is_some() => format!("%{}", index[&v.id]),
        Some(_) => leaf_label(x),
        None => format!("const{:?}", x.shape()),
    };
    let mut out = String::from("forward (recording order):\n");
    for (k, t) in nodes.iter().enumerate() {
        let node = t.var.as_ref().and_then(|v| v.node.as_ref()).expect("node");
        let op = node.op.borrow();
        let op = op.as_ref().expect("checked by reachable");
        let args: Vec<String> = op.inputs().iter().map(|x| arg(x)).collect();
        let _ = writeln!(out, "%{k} = {}({}) : {:?}  @ {}", op.name(), args.join(", "), t.shape(), node.location);
    }
    out.push_str("backward (execution order):\n");
    for (k, t) in nodes.iter().enumerate().rev() {
        let node = t.var.as_ref().and_then(|v| v.node.as_ref()).expect("node");
        let op = node.op.borrow();
        let op = op.as_ref().expect("checked by reachable");
        let to: Vec<String> = op.inputs().iter().filter(|x| x.is_tracked()).map(|x| format!("∂{}", arg(x))).collect();
        let _ = writeln!(out, "∂%{k}  {}_backward: ∂%{k} {:?} → {}", op.name(), t.shape(), to.join(", "));
    }
    Ok(out)
}

/// Graphviz DOT of the graph `outputs` depend on: ops as boxes (`n<id>`, labelled `%k op` and
/// the output shape), leaves as ellipses (`l<id>`, named ones by name), constants as grey notes. With
/// [`DotOptions::backward`], each op also gets a gradient node `b<id>` (its backward rule),
/// linked to the forward node `n<id>` it differentiates by a dotted edge, and each leaf a
/// gradient node `g<id>`; solid red edges carry gradients in the direction backward sends them.
///
/// Errors if part of the graph was released by a backward pass without `retain_graph`.
pub fn to_dot<T: Float>(outputs: &[&Tensor<T>], opts: &DotOptions) -> Result<String, AutodiffError> {
    let nodes = reachable(outputs, "to_dot")?;
    let index: HashMap<u64, usize> = nodes.iter().enumerate().map(|(k, t)| (id_of(t), k)).collect();
    // Every node's gradient, from a backward pass that keeps the graph.
    let mut node_grads: HashMap<u64, Tensor<T>> = HashMap::new();
    if opts.backward && opts.grads && outputs.iter().all(|o| o.numel() == 1 && o.is_tracked()) {
        let mut targets: Vec<Tensor<T>> = nodes.clone();
        let mut seen_leaf: HashMap<u64, ()> = HashMap::new();
        for t in &nodes {
            let op = t.var.as_ref().and_then(|v| v.node.as_ref()).expect("node").op.borrow();
            for x in op.as_ref().expect("checked by reachable").inputs().iter() {
                if x.is_tracked() && x.is_leaf() && seen_leaf.insert(id_of(x), ()).is_none() {
                    targets.push((*x).clone());
                }
            }
        }
        let refs: Vec<&Tensor<T>> = targets.iter().collect();
        let gs = crate::grad(outputs, &refs, None, GradOptions::retain_graph())?;
        for (t, g) in targets.iter().zip(gs) {
            node_grads.insert(id_of(t), g);
        }
    }
    let mut s = String::from("digraph tape {\n  rankdir=BT;\n  node [fontname=\"Helvetica\", fontsize=10];\n");
    let mut leaves: BTreeMap<u64, (String, Tensor<T>)> = BTreeMap::new();
    let mut consts = 0usize;
    let esc = |t: &str| t.replace('"', "\\\"");
    for (k, t) in nodes.iter().enumerate() {
        let id = id_of(t);
        let v = t.var.as_ref().expect("tracked");
        let node = v.node.as_ref().expect("node");
        let op = node.op.borrow();
        let op = op.as_ref().expect("checked by reachable");
        let mut label = format!("%{k} {}\\n{:?}", op.name(), t.shape());
        if opts.values {
            label += &format!("\\n= {}", summary(t, opts.max_values));
        }
        if opts.grads && !opts.backward {
            if let Some(g) = t.grad() {
                label += &format!("\\ngrad {}", summary(&g, opts.max_values));
            }
        }
        if opts.locations {
            label += &format!("\\n{}", node.location);
        }
        let _ = writeln!(s, "  n{id} [shape=box, style=rounded, label=\"{}\"];", esc(&label));
        if opts.backward {
            let mut bl = format!("∂%{k} {}_backward\\n∂ {:?}", op.name(), t.shape());
            if let Some(g) = node_grads.get(&id).cloned().or_else(|| t.grad()) {
                if opts.grads {
                    bl += &format!("\\ngrad {}", summary(&g, opts.max_values));
                }
            }
            let _ = writeln!(s, "  b{id} [shape=box, style=\"rounded,filled\", fillcolor=\"#ffe4e1\", color=\"#c0392b\", label=\"{}\"];", esc(&bl));
            let _ = writeln!(s, "  b{id} -> n{id} [style=dotted, arrowhead=none, color=\"#c0392b\", label=\"differentiates\"];");
        }
        for x in op.inputs().iter() {
            let src = match x.var.as_ref() {
                Some(xv) => match xv.node {
                    Some(_) => format!("n{}", xv.id),
                    None => {
                        leaves.entry(xv.id).or_insert_with(|| (leaf_label(x), (*x).clone()));
                        format!("l{}", xv.id)
                    }
                },
                None => {
                    consts += 1;
                    let mut l = format!("const\\n{:?}", x.shape());
                    if opts.values {
                        l += &format!("\\n= {}", summary(x, opts.max_values));
                    }
                    let _ = writeln!(s, "  c{consts} [shape=note, color=grey, fontcolor=grey40, label=\"{}\"];", esc(&l));
                    format!("c{consts}")
                }
            };
            let _ = writeln!(s, "  {src} -> n{id};");
            if opts.backward && x.is_tracked() {
                let xv = x.var.as_ref().expect("tracked");
                let dst = if xv.node.is_some() && index.contains_key(&xv.id) { format!("b{}", xv.id) } else { format!("g{}", xv.id) };
                let _ = writeln!(s, "  b{id} -> {dst} [color=\"#c0392b\", fontcolor=\"#c0392b\", label=\"∂ {:?}\"];", x.shape());
            }
        }
    }
    for (id, (name, x)) in &leaves {
        let mut l = format!("{name}\\n{:?}", x.shape());
        if opts.values {
            l += &format!("\\n= {}", summary(x, opts.max_values));
        }
        if opts.grads && !opts.backward {
            if let Some(g) = x.grad() {
                l += &format!("\\ngrad {}", summary(&g, opts.max_values));
            }
        }
        let _ = writeln!(s, "  l{id} [shape=ellipse, style=filled, fillcolor=\"#dbe9ff\", label=\"{}\"];", esc(&l));
        if opts.backward && x.is_tracked() {
            let mut gl = format!("∂{name} (accumulated)\\n{:?}", x.shape());
            if opts.grads {
                if let Some(g) = node_grads.get(id).cloned().or_else(|| x.grad()) {
                    gl += &format!("\\ngrad {}", summary(&g, opts.max_values));
                }
            }
            let _ = writeln!(s, "  g{id} [shape=ellipse, style=filled, fillcolor=\"#ffe4e1\", color=\"#c0392b\", label=\"{}\"];", esc(&gl));
            let _ = writeln!(s, "  g{id} -> l{id} [style=dotted, arrowhead=none, color=\"#c0392b\"];");
        }
    }
    s.push_str("}\n");
    Ok(s)
}
