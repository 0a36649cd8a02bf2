//! Looking at the tape: a text listing ([`tape_listing`]) and Graphviz DOT export ([`to_dot`]).
//!
//! Both read the current tape of the calling thread, so call them before `backward` frees it
//! (or back-propagate with `retain_graph`). Leaves show their names (see [`Tensor::named`]).
//!
//! ```
//! use chi_autodiff::{dot, Tensor};
//! let w = Tensor::<f64>::from_vec(vec![0.5, -1.0], &[2]).requires_grad().named("w");
//! let y = w.tanh().sum();
//! let text = dot::tape_listing::<f64>();
//! assert!(text.contains("tanh(w)"));
//! let g = dot::to_dot(&[&y], &dot::DotOptions::default());
//! assert!(g.starts_with("digraph"));
//! ```

use crate::tape::Float;
use crate::tensor::Tensor;
use std::collections::BTreeMap;
use std::fmt::Write;

/// What to show in a DOT export.
#[derive(Clone, Debug)]
pub struct DotOptions {
    /// Show values (tensors with at most `max_values` elements; otherwise a summary).
    pub values: bool,
    /// Show gradients stored on leaves and retained intermediates.
    pub grads: bool,
    /// Largest tensor whose values are printed in full.
    pub max_values: usize,
    /// Show the source location of each op.
    pub locations: bool,
}

impl Default for DotOptions {
    fn default() -> Self {
        DotOptions { values: false, grads: false, max_values: 6, locations: false }
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

/// One line per tape node: `%index = op(inputs) : shape  @ file:line`.
pub fn tape_listing<T: Float>() -> String {
    T::tape().with(|tape| {
        let tape = tape.borrow();
        let mut out = String::new();
        for (i, node) in tape.nodes.iter().enumerate() {
            let args: Vec<String> = node
                .op
                .inputs()
                .iter()
                .map(|x| match x.var.as_ref().and_then(|v| v.node) {
                    Some((_, j)) => format!("%{j}"),
                    None if x.var.is_some() => leaf_label(x),
                    None => format!("const{:?}", x.shape()),
                })
                .collect();
            let _ = writeln!(out, "%{i} = {}({}) : {:?}  @ {}", node.op.name(), args.join(", "), node.out.shape(), node.location);
        }
        out
    })
}

/// Graphviz DOT of the part of the tape that `outputs` depend on: ops as boxes, leaves as
/// ellipses (named ones by name), constants as grey notes; edges labelled with shapes.
pub fn to_dot<T: Float>(outputs: &[&Tensor<T>], opts: &DotOptions) -> String {
    T::tape().with(|tape| {
        let tape = tape.borrow();
        let gen = tape.generation;
        // Mark nodes reachable from the outputs.
        let mut reach = vec![false; tape.nodes.len()];
        for o in outputs {
            if let Some((g, i)) = o.var.as_ref().and_then(|v| v.node) {
                if g == gen {
                    reach[i as usize] = true;
                }
            }
        }
        for i in (0..tape.nodes.len()).rev() {
            if !reach[i] {
                continue;
            }
            for x in tape.nodes[i].op.inputs().iter() {
                if let Some((g, j)) = x.var.as_ref().and_then(|v| v.node) {
                    if g == gen {
                        reach[j as usize] = true;
                    }
                }
            }
        }
        let mut s = String::from("digraph tape {\n  rankdir=BT;\n  node [fontname=\"Helvetica\", fontsize=10];\n");
        let mut leaves: BTreeMap<u64, String> = BTreeMap::new();
        let mut consts = 0usize;
        let esc = |t: &str| t.replace('"', "\\\"");
        for (i, node) in tape.nodes.iter().enumerate() {
            if !reach[i] {
                continue;
            }
            let mut label = format!("%{i} {}\\n{:?}", node.op.name(), node.out.shape());
            if opts.values {
                label += &format!("\\n= {}", summary(&node.out, opts.max_values));
            }
            if opts.grads {
                if let Some(g) = node.out.grad() {
                    label += &format!("\\ngrad {}", summary(&g, opts.max_values));
                }
            }
            if opts.locations {
                label += &format!("\\n{}", node.location);
            }
            let _ = writeln!(s, "  n{i} [shape=box, style=rounded, label=\"{}\"];", esc(&label));
            for x in node.op.inputs().iter() {
                let src = match x.var.as_ref() {
                    Some(v) => match v.node {
                        Some((_, j)) => format!("n{j}"),
                        None => {
                            let id = v.id;
                            leaves.entry(id).or_insert_with(|| {
                                let mut l = format!("{}\\n{:?}", leaf_label(x), x.shape());
                                if opts.values {
                                    l += &format!("\\n= {}", summary(x, opts.max_values));
                                }
                                if opts.grads {
                                    if let Some(g) = x.grad() {
                                        l += &format!("\\ngrad {}", summary(&g, opts.max_values));
                                    }
                                }
                                l
                            });
                            format!("l{id}")
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
                let _ = writeln!(s, "  {src} -> n{i};");
            }
        }
        for (id, l) in leaves {
            let _ = writeln!(s, "  l{id} [shape=ellipse, style=filled, fillcolor=\"#dbe9ff\", label=\"{}\"];", esc(&l));
        }
        s.push_str("}\n");
        s
    })
}
