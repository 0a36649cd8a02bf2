//! The backward graph in DOT: every gradient node is linked to the forward node it
//! differentiates, gradient edges run against the forward edges, gradients shown on request;
//! the listing gives backward steps in execution order; a released graph is an error.

use chi_autodiff::dot::{self, DotOptions};
use chi_autodiff::{GradOptions, Rng, Tensor};
use std::collections::{BTreeMap, BTreeSet};

/// The 2 → 3 → 1 MLP of `chi graph mlp`.
fn mlp() -> (Tensor<f64>, Tensor<f64>) {
    let mut rng = Rng::new(7);
    let p = |shape: &[usize], name: &str, rng: &mut Rng| Tensor::<f64>::randn(shape, rng).mul_scalar(0.5).requires_grad().named(name);
    let x = Tensor::from_vec(vec![0.5, -1.0], &[1, 2]);
    let (w1, b1) = (p(&[2, 3], "W1", &mut rng), p(&[3], "b1", &mut rng));
    let (w2, b2) = (p(&[3, 1], "W2", &mut rng), p(&[1], "b2", &mut rng));
    let h = x.matmul(&w1).add(&b1).tanh();
    let y = h.matmul(&w2).add(&b2);
    (y.sub_scalar(1.0).square().sum(), w1)
}

struct Parsed {
    labels: BTreeMap<String, String>,
    edges: Vec<(String, String, String)>, // (from, to, attributes)
}

fn parse(dot: &str) -> Parsed {
    assert!(dot.starts_with("digraph") && dot.trim_end().ends_with('}'), "{dot}");
    let mut labels = BTreeMap::new();
    let mut edges = Vec::new();
    for line in dot.lines().map(str::trim) {
        if let Some((lhs, rest)) = line.split_once(" -> ") {
            let (to, attrs) = match rest.split_once(' ') {
                Some((t, a)) => (t.trim_end_matches(';'), a),
                None => (rest.trim_end_matches(';'), ""),
            };
            edges.push((lhs.to_string(), to.to_string(), attrs.to_string()));
        } else if let Some((id, rest)) = line.split_once(" [") {
            if let Some(start) = rest.find("label=\"") {
                let l = &rest[start + 7..];
                labels.insert(id.to_string(), l[..l.rfind('"').unwrap()].to_string());
            }
        }
    }
    Parsed { labels, edges }
}

#[test]
fn backward_nodes_link_to_the_forward_nodes_they_differentiate() {
    let (loss, w1) = mlp();
    let opts = DotOptions { backward: true, grads: true, ..Default::default() };
    let text = dot::to_dot(&[&loss], &opts).unwrap();
    let g = parse(&text);
    let forward: BTreeSet<&String> = g.labels.keys().filter(|k| k.starts_with('n')).collect();
    let backward: BTreeSet<&String> = g.labels.keys().filter(|k| k.starts_with('b')).collect();
    // matmul, add, tanh, matmul, add, sub_scalar, square, sum (some ops record helper nodes).
    assert!(forward.len() >= 8, "{text}");
    for op in [" matmul\\n", " tanh\\n", " sum\\n"] {
        assert!(forward.iter().any(|n| g.labels[*n].contains(op)), "no {op} node:\n{text}");
    }
    assert_eq!(backward.len(), forward.len());
    for b in &backward {
        let n = format!("n{}", &b[1..]);
        assert!(g.edges.iter().any(|(f, t, a)| f == *b && *t == n && a.contains("differentiates")), "{b} is not linked to {n}");
        let (bl, nl) = (&g.labels[*b], &g.labels[&n]);
        let op = nl.split("\\n").next().unwrap().split(' ').nth(1).unwrap();
        assert!(bl.contains(&format!("{op}_backward")), "{bl} should name the rule of {nl}");
        assert!(bl.contains("grad "), "gradients were asked for: {bl}");
    }
    // Each forward edge between tracked tensors has a gradient edge the other way.
    for (from, to, _) in g.edges.iter().filter(|(f, t, _)| t.starts_with('n') && (f.starts_with('n') || f.starts_with('l'))) {
        let (src, dst) = (format!("b{}", &to[1..]), if from.starts_with('n') { format!("b{}", &from[1..]) } else { format!("g{}", &from[1..]) });
        assert!(g.edges.iter().any(|(f, t, _)| *f == src && *t == dst), "no gradient edge {src} -> {dst} for {from} -> {to}");
    }
    // Leaf gradient nodes carry the gradient backward computes (W1's, for example).
    loss.backward_with(None, GradOptions::retain_graph()).unwrap();
    let gw1 = w1.grad().unwrap();
    let gid = format!("g{}", w1.id().unwrap());
    let want = format!("[{}]", gw1.data().iter().map(|x| format!("{x:.4}")).collect::<Vec<_>>().join(", "));
    assert!(g.labels[&gid].contains(&want), "{} lacks {want}", g.labels[&gid]);
}

#[test]
fn listing_shows_backward_steps_in_execution_order_and_released_graphs_are_errors() {
    let (loss, _) = mlp();
    let text = dot::tape_listing(&[&loss]).unwrap();
    let (fwd, bwd) = text.split_once("backward (execution order):\n").unwrap();
    let f: Vec<&str> = fwd.lines().filter(|l| l.starts_with('%')).collect();
    let b: Vec<&str> = bwd.lines().collect();
    assert_eq!(f.len(), b.len());
    // Backward runs the last recorded op first.
    for (k, line) in b.iter().enumerate() {
        let idx = f.len() - 1 - k;
        assert!(line.starts_with(&format!("∂%{idx} ")), "{line}");
    }
    assert!(b[0].contains("sum_backward"), "{}", b[0]);
    assert!(b.last().unwrap().contains("∂W1"), "the first op's step sends a gradient to W1: {}", b.last().unwrap());
    loss.backward();
    let e = dot::to_dot(&[&loss], &DotOptions::default()).unwrap_err();
    assert!(e.to_string().contains("retain_graph"), "{e}");
    assert!(dot::tape_listing(&[&loss]).is_err());
}
