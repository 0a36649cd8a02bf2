//! A small layered graph layout (Sugiyama-style, simplified) and its SVG drawing.
//!
//! 1. Layers: an op sits one column right of its rightmost input; a leaf or constant one column
//!    left of its first consumer (so parameters used late are drawn where they are used).
//! 2. Order within a column: a few sweeps of the barycenter heuristic (each node moves to the
//!    mean position of its neighbours in the previous column, then in the next), which removes
//!    most edge crossings on graphs this small.
//! 3. Coordinates: columns left to right, nodes top to bottom, each column centred.

use super::trace::Trace;
use std::fmt::Write;

/// Node box width (px).
pub const NODE_W: f64 = 118.0;
/// Node box height (px).
pub const NODE_H: f64 = 40.0;
const GAP_X: f64 = 46.0;
const GAP_Y: f64 = 18.0;
const MARGIN: f64 = 16.0;

/// Assigns `layer`, `x`, `y` to every node; returns the drawing's width and height.
pub fn layout(t: &mut Trace) -> (f64, f64) {
    let n = t.nodes.len();
    let mut layer = vec![0usize; n];
    for i in 0..n {
        if t.nodes[i].kind == "op" {
            layer[i] = t.nodes[i].inputs.iter().map(|&j| layer[j] + 1).max().unwrap_or(0);
        }
    }
    // Sources: just left of their first consumer.
    let mut consumers: Vec<Vec<usize>> = vec![vec![]; n];
    for i in 0..n {
        for &j in &t.nodes[i].inputs {
            consumers[j].push(i);
        }
    }
    for i in 0..n {
        if t.nodes[i].kind != "op" {
            if let Some(m) = consumers[i].iter().map(|&c| layer[c]).min() {
                layer[i] = m.saturating_sub(1);
            }
        }
    }
    let cols = layer.iter().copied().max().unwrap_or(0) + 1;
    let mut columns: Vec<Vec<usize>> = vec![vec![]; cols];
    for i in 0..n {
        columns[layer[i]].push(i);
    }
    let mut pos = vec![0.0f64; n];
    let set_pos = |columns: &Vec<Vec<usize>>, pos: &mut Vec<f64>| {
        for c in columns {
            for (k, &i) in c.iter().enumerate() {
                pos[i] = k as f64 - (c.len() as f64 - 1.0) / 2.0;
            }
        }
    };
    set_pos(&columns, &mut pos);
    for _sweep in 0..4 {
        for dir in [true, false] {
            let range: Vec<usize> = if dir { (1..cols).collect() } else { (0..cols.saturating_sub(1)).rev().collect() };
            for c in range {
                let mut keyed: Vec<(f64, usize)> = columns[c]
                    .iter()
                    .map(|&i| {
                        let nb: Vec<usize> = if dir { t.nodes[i].inputs.clone() } else { consumers[i].clone() };
                        let key = if nb.is_empty() { pos[i] } else { nb.iter().map(|&j| pos[j]).sum::<f64>() / nb.len() as f64 };
                        (key, i)
                    })
                    .collect();
                keyed.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal).then(a.1.cmp(&b.1)));
                columns[c] = keyed.into_iter().map(|k| k.1).collect();
                for (k, &i) in columns[c].iter().enumerate() {
                    pos[i] = k as f64 - (columns[c].len() as f64 - 1.0) / 2.0;
                }
            }
        }
    }
    let tallest = columns.iter().map(|c| c.len()).max().unwrap_or(1) as f64;
    let height = 2.0 * MARGIN + tallest * NODE_H + (tallest - 1.0) * GAP_Y;
    let width = 2.0 * MARGIN + cols as f64 * NODE_W + (cols as f64 - 1.0) * GAP_X;
    for i in 0..n {
        t.nodes[i].layer = layer[i];
        t.nodes[i].x = MARGIN + NODE_W / 2.0 + layer[i] as f64 * (NODE_W + GAP_X);
        t.nodes[i].y = height / 2.0 + pos[i] * (NODE_H + GAP_Y);
    }
    (width, height)
}

/// Escapes text for XML/HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The graph as inline SVG: `<g class="node" id="n{id}">` per node, `<path class="edge"
/// id="e{from}_{to}_{slot}">` per edge (ids the page's script highlights).
pub fn svg(t: &Trace, width: f64, height: f64) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" id="graph" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" role="img" aria-label="the recorded tape as a graph">"#
    );
    s.push_str(r#"<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="context-stroke"/></marker></defs>"#);
    for node in &t.nodes {
        for (slot, &j) in node.inputs.iter().enumerate() {
            let src = &t.nodes[j];
            let (x1, y1) = (src.x + NODE_W / 2.0, src.y);
            let (x2, y2) = (node.x - NODE_W / 2.0 - 2.0, node.y);
            let mx = (x1 + x2) / 2.0;
            let _ = write!(
                s,
                r#"<path class="edge" id="e{}_{}_{slot}" d="M{x1:.1},{y1:.1} C{mx:.1},{y1:.1} {mx:.1},{y2:.1} {x2:.1},{y2:.1}" marker-end="url(#arrow)"/>"#,
                src.id, node.id
            );
        }
    }
    for node in &t.nodes {
        let (x, y) = (node.x - NODE_W / 2.0, node.y - NODE_H / 2.0);
        let title = match (&node.op, &node.name) {
            (Some(op), Some(name)) => format!("{} {op} ({name})", node.label),
            (Some(op), None) => format!("{} {op}", node.label),
            _ => node.label.clone(),
        };
        let rx = if node.kind == "op" { 6 } else { 18 };
        let _ = write!(
            s,
            r#"<g class="node {kind}" id="n{id}" data-id="{id}"><rect x="{x:.1}" y="{y:.1}" width="{NODE_W}" height="{NODE_H}" rx="{rx}"/><text x="{cx:.1}" y="{ty:.1}" class="t1">{title}</text><text x="{cx:.1}" y="{ty2:.1}" class="t2">{shape}</text></g>"#,
            kind = node.kind,
            id = node.id,
            cx = node.x,
            ty = node.y - 4.0,
            ty2 = node.y + 12.0,
            title = esc(&title),
            shape = esc(&format!("{:?}", node.shape)),
        );
    }
    s.push_str("</svg>");
    s
}
