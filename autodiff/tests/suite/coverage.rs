//! Coverage gaps of the engine's own tooling:
//! * the gradcheck cases exercise every [`Op`] variant (the claim in `gradcheck_cases`), every
//!   elementwise kind ([`Unary`], [`Binary`], [`Pointwise`], scalar and tensor forms) and every
//!   display name a method records;
//! * each user-facing method records one node named after the method (`square`, `sum`, `ln`, …);
//! * anomaly reports name the forward op, its input shapes and the caller's `file:line`;
//! * DOT export with values and gradients shows each node's op name, shape and actual numbers.

use chi_autodiff::dot::{self, DotOptions};
use chi_autodiff::gradcheck_cases;
use chi_autodiff::ops::{self, Op};
use chi_autodiff::*;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

// ---------------------------------------------------------------------------------------------
// Registry covers every Op variant
// ---------------------------------------------------------------------------------------------

/// The variant of an op. Exhaustive on purpose: adding an `Op` variant breaks this test's
/// compilation until the variant is listed here and in [`one_of_each`].
fn variant(op: &Op<f64>) -> &'static str {
    match op {
        Op::Binary { .. } => "Binary",
        Op::BinaryScalar { .. } => "BinaryScalar",
        Op::Where { .. } => "Where",
        Op::Unary { .. } => "Unary",
        Op::Pointwise { .. } => "Pointwise",
        Op::Clamp { .. } => "Clamp",
        Op::ClampTensor { .. } => "ClampTensor",
        Op::Matmul { .. } => "Matmul",
        Op::Affine(_) => "Affine",
        Op::Permute { .. } => "Permute",
        Op::Reshape { .. } => "Reshape",
        Op::BroadcastTo { .. } => "BroadcastTo",
        Op::SumTo { .. } => "SumTo",
        Op::Concat { .. } => "Concat",
        Op::Narrow { .. } => "Narrow",
        Op::PadAxis { .. } => "PadAxis",
        Op::Flip { .. } => "Flip",
        Op::Sum { .. } => "Sum",
        Op::MaxAxis { .. } => "MaxAxis",
        Op::Softmax { .. } => "Softmax",
        Op::LogSoftmax { .. } => "LogSoftmax",
        Op::LogSumExp { .. } => "LogSumExp",
        Op::Variance { .. } => "Variance",
        Op::Cumsum { .. } => "Cumsum",
        Op::Take { .. } => "Take",
        Op::ScatterAdd { .. } => "ScatterAdd",
        Op::GatherRows { .. } => "GatherRows",
        Op::ScatterRows { .. } => "ScatterRows",
        Op::Im2Col { .. } => "Im2Col",
        Op::Col2Im { .. } => "Col2Im",
        Op::LstmCell(_) => "LstmCell",
        Op::GruCell(_) => "GruCell",
        Op::LstmSequence(_) => "LstmSequence",
        Op::GruSequence(_) => "GruSequence",
        Op::CaRnnSequence(_) => "CaRnnSequence",
        Op::Custom { .. } => "Custom",
    }
}
const N_VARIANTS: usize = 36;

/// Every elementwise kind; the matches make adding a kind a compile error here.
fn unary_kinds() -> Vec<Unary> {
    let all = Unary::ALL.to_vec();
    for u in &all {
        match u {
            Unary::Neg | Unary::Abs | Unary::Exp | Unary::Log | Unary::Log1p | Unary::Sqrt | Unary::Tanh | Unary::Sigmoid | Unary::Relu => {}
            Unary::LeakyRelu(_) | Unary::Softplus | Unary::LogSigmoid => {}
        }
    }
    all
}
fn pointwise_kinds() -> Vec<Pointwise> {
    use Pointwise::*;
    let all = vec![Sin, Cos, Erf, Gelu, GeluTanh, Silu, Square, Recip, Rsub(0.7)];
    for p in &all {
        match p {
            Sin | Cos | Erf | Gelu | GeluTanh | Silu | Square | Recip | Rsub(_) => {}
        }
    }
    all
}
fn binary_kinds() -> Vec<Binary> {
    let all = vec![Binary::Add, Binary::Sub, Binary::Mul, Binary::Div, Binary::Max, Binary::Min, Binary::Pow];
    for b in &all {
        match b {
            Binary::Add | Binary::Sub | Binary::Mul | Binary::Div | Binary::Max | Binary::Min | Binary::Pow => {}
        }
    }
    all
}

struct Probe;
impl CustomOp<f64> for Probe {
    fn name(&self) -> &str {
        "probe"
    }
    fn forward(&self, x: &[&Tensor<f64>]) -> Tensor<f64> {
        x[0].clone()
    }
    fn backward(&self, _x: &[&Tensor<f64>], _o: &Tensor<f64>, g: &Tensor<f64>) -> Vec<Option<Tensor<f64>>> {
        vec![Some(g.clone())]
    }
}

/// One value of every variant (every kind for the elementwise ones), to learn each one's name.
fn one_of_each() -> Vec<Op<f64>> {
    let t = || Tensor::<f64>::zeros(&[1]);
    let win = Window::D1 { c: 1, l: 1, k: 1, stride: 1, pad: 0 };
    let idx = || Rc::new(vec![0usize]);
    let mut v = Vec::new();
    for op in binary_kinds() {
        v.push(Op::Binary { op, a: t(), b: t() });
        v.push(Op::BinaryScalar { op, a: t(), s: 1.0 });
    }
    for op in unary_kinds() {
        v.push(Op::Unary { op, x: t(), out: t() });
    }
    for f in pointwise_kinds() {
        v.push(Op::Pointwise { f, x: t(), out: t() });
    }
    // Variants that several methods record carry the method's name: one example per name.
    for name in ["permute", "transpose", "t"] {
        v.push(Op::Permute { x: t(), perm: vec![0], name });
    }
    for name in ["reshape", "unsqueeze", "squeeze", "flatten"] {
        v.push(Op::Reshape { x: t(), name });
    }
    for name in ["concat", "stack"] {
        v.push(Op::Concat { xs: vec![t()], axis: 0, name });
    }
    for name in ["sum", "sum_axis", "sum_axes", "mean", "mean_axis", "mean_axes"] {
        v.push(Op::Sum { x: t(), axes: Axes::one(0), keepdim: false, mean: name.starts_with("mean"), name });
    }
    for name in ["max_axis", "min_axis", "max_all"] {
        v.push(Op::MaxAxis { x: t(), flat: idx(), name });
    }
    for name in ["take", "index_select", "max_pool1d", "max_pool2d"] {
        v.push(Op::Take { x: t(), idx: idx(), name });
    }
    for std in [false, true] {
        v.push(Op::Variance { x: t(), axes: Axes::one(0), correction: 1.0, keepdim: false, std, out: t() });
    }
    v.extend([
        Op::Where { mask: Rc::new(vec![true]), a: t(), b: t() },
        Op::Clamp { x: t(), min: Some(0.0), max: None },
        Op::ClampTensor { x: t(), bounds: Box::new([Some(t()), None]) },
        Op::Matmul { a: t(), b: t() },
        Op::Affine(Box::new([t(), t(), t()])),
        Op::BroadcastTo { x: t() },
        Op::SumTo { x: t() },
        Op::Narrow { x: t(), axis: 0, start: 0 },
        Op::PadAxis { x: t(), axis: 0, before: 0 },
        Op::Flip { x: t(), axis: 0 },
        Op::Softmax { x: t(), axis: 0, out: t() },
        Op::LogSoftmax { x: t(), axis: 0, out: t() },
        Op::LogSumExp { x: t(), axis: 0, keepdim: false, out: t() },
        Op::Cumsum { x: t(), axis: 0 },
        Op::ScatterAdd { x: t(), idx: idx() },
        Op::GatherRows { table: t(), ids: idx() },
        Op::ScatterRows { x: t(), ids: idx() },
        Op::Im2Col { x: t(), win },
        Op::Col2Im { x: t(), win },
        Op::Custom { f: Rc::new(Probe), inputs: vec![t()] },
        Op::LstmCell(Box::new(ops::fused_rnn::LstmSaved { inputs: vec![t()], gates: vec![], tanh_c: vec![] })),
        Op::GruCell(Box::new(ops::fused_rnn::GruSaved { inputs: vec![t()], reset_after: true, rz: vec![], n: vec![], hn: vec![] })),
        Op::LstmSequence(Box::new(ops::fused_rnn::LstmSeqSaved { inputs: vec![t()], keep: None, gates: vec![], tanh_c: vec![] })),
        Op::GruSequence(Box::new(ops::fused_rnn::GruSeqSaved { inputs: vec![t()], keep: None, rz: vec![], n: vec![], hn: vec![] })),
        Op::CaRnnSequence(Box::new(ops::fused_rnn::CaRnnSeqSaved { inputs: vec![t()], keep: None, act: vec![] })),
    ]);
    v
}

/// Op names of the nodes `out` was computed from, in recording order (parsed from the forward
/// part of the listing, `%i = name(args) : shape  @ loc`).
fn tape_op_names(out: &Tensor<f64>) -> Vec<String> {
    dot::tape_listing(&[out])
        .unwrap()
        .lines()
        .filter(|l| l.starts_with('%'))
        .map(|l| {
            let rest = l.split_once(" = ").expect("listing line has ' = '").1;
            rest.split_once('(').expect("listing line has '('").0.to_string()
        })
        .collect()
}

#[test]
fn registry_exercises_every_op_variant_and_every_elementwise_kind() {
    // Name → variant for every built-in op (names are what the tape shows).
    let examples = one_of_each();
    let mut by_name: BTreeMap<String, &'static str> = BTreeMap::new();
    for op in &examples {
        if !matches!(op, Op::Custom { .. }) {
            let prev = by_name.insert(op.name(), variant(op));
            assert!(prev.is_none(), "two built-in ops share the name {}", op.name());
        }
    }
    let all_variants: BTreeSet<&str> = examples.iter().map(variant).collect();
    assert_eq!(all_variants.len(), N_VARIANTS, "one_of_each must list every variant");

    // Run every registry case on tracked inputs and record which ops its forward puts on the tape.
    let mut seen_variants: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut seen_names: BTreeSet<String> = BTreeSet::new();
    for case in gradcheck_cases::all() {
        for seed in 0..3 {
            let c = (case.make)(&mut Rng::new(seed));
            let inputs: Vec<Tensor<f64>> = c.inputs.iter().map(|x| x.detach().requires_grad()).collect();
            let out = (c.f)(&inputs);
            assert!(out.is_tracked(), "{}: output not on the tape", case.name);
            for name in tape_op_names(&out) {
                let v = match by_name.get(&name) {
                    Some(v) => *v,
                    None => {
                        // Only custom ops have names outside the built-in set.
                        assert_eq!(case.name, "custom", "unknown op `{name}` recorded by registry case {}", case.name);
                        "Custom"
                    }
                };
                seen_variants.entry(v).or_default().push(case.name);
                seen_names.insert(name);
            }
        }
    }
    let missing: Vec<&&str> = all_variants.iter().filter(|v| !seen_variants.contains_key(**v)).collect();
    assert!(missing.is_empty(), "Op variants no registry case records: {missing:?}");
    let seen: BTreeSet<&str> = seen_variants.keys().copied().collect();
    assert_eq!(seen, all_variants);

    // Every name a built-in op can show: every elementwise kind (tensor and scalar forms) and every
    // method recorded under a shared variant.
    let missing_names: Vec<&String> = by_name.keys().filter(|n| !seen_names.contains(*n)).collect();
    assert!(missing_names.is_empty(), "op names no gradcheck case records: {missing_names:?}");
}

// ---------------------------------------------------------------------------------------------
// Anomaly reports
// ---------------------------------------------------------------------------------------------

#[test]
fn anomaly_report_names_op_input_shapes_and_call_site() {
    // x / y with y = [1, 0, 2] broadcast over rows: column 1 is 0/0 = NaN in row 0 and 5/0 = Inf
    // in row 1; all inputs finite.
    let x = Tensor::<f64>::from_vec(vec![1.0, 0.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).requires_grad();
    let y = Tensor::<f64>::from_vec(vec![1.0, 0.0, 2.0], &[3]);
    let (line, r) = (line!(), detect_anomaly(|| x.div(&y).sum().backward()));
    let a = r.expect_err("0/0 and 5/0 must be reported");
    assert_eq!(a.phase, anomaly::Phase::Forward);
    assert_eq!(a.op, "div");
    assert_eq!(a.input_shapes, vec![vec![2, 3], vec![3]]);
    assert_eq!(a.output_shape, vec![2, 3]);
    assert_eq!(a.detail, "1 NaN, 1 Inf of 6 values");
    let site = format!("coverage.rs:{line}:");
    assert!(a.location.contains(&site), "location {} should contain {site}", a.location);
    let msg = a.to_string();
    for part in ["forward output", "`div`", "[[2, 3], [3]]", "→ output [2, 3]", &site, "1 NaN, 1 Inf of 6 values"] {
        assert!(msg.contains(part), "message {msg:?} lacks {part:?}");
    }

    // Backward phase: sqrt(0) = 0 is finite, its gradient 1/(2·0) is not; the report still names
    // the forward op, its input shape and where it was called (not where backward was called).
    let z = Tensor::<f64>::from_vec(vec![4.0, 0.0, 9.0, 1.0], &[2, 2]).requires_grad();
    let (line, s) = (line!(), z.sqrt());
    let loss = s.sum();
    let a = detect_anomaly(|| loss.backward()).expect_err("∞ gradient must be reported");
    assert_eq!(a.phase, anomaly::Phase::Backward);
    assert_eq!(a.op, "sqrt");
    assert_eq!(a.input_shapes, vec![vec![2, 2]]);
    assert_eq!(a.output_shape, vec![2, 2]);
    assert_eq!(a.detail, "0 NaN, 1 Inf of 4 values");
    let site = format!("coverage.rs:{line}:");
    assert!(a.location.contains(&site), "location {} should contain {site}", a.location);
    let msg = a.to_string();
    for part in ["gradient computed by the backward rule", "`sqrt`", "[[2, 2]]", &site] {
        assert!(msg.contains(part), "message {msg:?} lacks {part:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// DOT export with values and gradients
// ---------------------------------------------------------------------------------------------

/// The label of the DOT node whose label contains `needle` (exactly one must).
fn label_with<'a>(dot: &'a str, needle: &str) -> &'a str {
    let hits: Vec<&str> = dot.lines().filter(|l| l.contains("label=\"") && l.contains(needle)).collect();
    assert_eq!(hits.len(), 1, "expected one node with {needle:?} in:\n{dot}");
    let l = hits[0];
    let start = l.find("label=\"").unwrap() + 7;
    &l[start..l.rfind('"').unwrap()]
}

fn f4(v: &[f64]) -> String {
    format!("[{}]", v.iter().map(|x| format!("{x:.4}")).collect::<Vec<_>>().join(", "))
}

#[test]
fn dot_export_shows_op_names_shapes_values_and_gradients() {
    let w = Tensor::<f64>::from_vec(vec![0.5, -1.0], &[2]).requires_grad().named("w");
    let x = Tensor::<f64>::from_vec(vec![2.0, 3.0], &[2]);
    let big = Tensor::<f64>::from_vec((0..8).map(|i| i as f64 * 0.5 - 1.0).collect(), &[2, 4]).requires_grad().named("big");
    let (mul_line, y) = (line!(), w.mul(&x)); // [1, −3]
    y.retain_grad();
    let _unused = w.exp(); // on the tape but not an ancestor of the output
    let z = y.tanh();
    let b = big.mul_scalar(2.0); // 8 values: summary instead of the list
    let s = z.sum().add(&b.sum());
    s.backward_with(None, GradOptions::retain_graph()).unwrap();

    let opts = DotOptions { values: true, grads: true, max_values: 6, locations: true, backward: false };
    let g = dot::to_dot(&[&s], &opts).unwrap();
    assert!(g.starts_with("digraph"), "{g}");
    assert!(!g.contains(" exp\\n"), "unreachable node exported:\n{g}");

    // Hand values (std f64 arithmetic).
    let yv: [f64; 2] = [0.5 * 2.0, -1.0 * 3.0];
    let zv = [yv[0].tanh(), yv[1].tanh()];
    let dz = [1.0 - zv[0] * zv[0], 1.0 - zv[1] * zv[1]]; // ∂s/∂y
    let dw = [dz[0] * 2.0, dz[1] * 3.0];
    let bigv: Vec<f64> = (0..8).map(|i| i as f64 * 0.5 - 1.0).collect();
    let bsum: f64 = bigv.iter().map(|v| 2.0 * v).sum();
    let sv = zv[0] + zv[1] + bsum;

    // mul: name, shape, values, retained gradient, call site.
    let l = label_with(&g, " mul\\n");
    let want = format!(" mul\\n[2]\\n= {}\\ngrad {}\\n", f4(&yv), f4(&dz));
    assert!(l.contains(&want), "mul label {l:?} lacks {want:?}");
    assert!(l.contains(&format!("coverage.rs:{mul_line}:")), "mul label {l:?} lacks its call site");
    // tanh: values, no gradient (not retained).
    let l = label_with(&g, " tanh\\n");
    assert!(l.contains(&format!(" tanh\\n[2]\\n= {}", f4(&zv))), "tanh label {l:?}");
    assert!(!l.contains("grad"), "tanh grad was not retained: {l:?}");
    // The final add is a scalar.
    let l = label_with(&g, " add\\n");
    assert!(l.contains(&format!(" add\\n[]\\n= {}", f4(&[sv]))), "add label {l:?}");
    // Leaf w: name, shape, value and gradient; constant x: shape and value.
    let l = label_with(&g, "w\\n[2]");
    assert!(l.contains(&format!("w\\n[2]\\n= {}\\ngrad {}", f4(&[0.5, -1.0]), f4(&dw))), "leaf label {l:?}");
    let l = label_with(&g, "const\\n");
    assert_eq!(l, format!("const\\n[2]\\n= {}", f4(&[2.0, 3.0])));
    // A tensor larger than max_values is summarised as min / mean / max (and its gradient, 2s).
    let l = label_with(&g, "big\\n");
    let mean = bigv.iter().sum::<f64>() / 8.0;
    let want = format!("big\\n[2, 4]\\n= min {:.3} mean {mean:.3} max {:.3}\\ngrad min 2.000 mean 2.000 max 2.000", bigv[0], bigv[7]);
    assert_eq!(l, want);
    let l = label_with(&g, " mul_scalar\\n");
    let bv: Vec<f64> = bigv.iter().map(|v| 2.0 * v).collect();
    assert!(l.contains(&format!(" mul_scalar\\n[2, 4]\\n= min {:.3} mean {:.3} max {:.3}", bv[0], bsum / 8.0, bv[7])), "{l:?}");

    // Edges: the leaf and the constant feed the mul node.
    let node_id = |needle: &str| -> String {
        let line = g.lines().find(|l| l.contains("label=\"") && l.contains(needle)).unwrap();
        line.trim().split(' ').next().unwrap().to_string()
    };
    let (nmul, nw, nc) = (node_id(" mul\\n"), node_id("w\\n[2]"), node_id("const\\n"));
    assert!(g.contains(&format!("{nw} -> {nmul};")), "{g}");
    assert!(g.contains(&format!("{nc} -> {nmul};")), "{g}");

    // Without the options, no numbers appear.
    let plain = dot::to_dot(&[&s], &DotOptions::default()).unwrap();
    assert!(!plain.contains("= ") && !plain.contains("grad"), "{plain}");
    assert!(plain.contains(" mul\\n[2]"));
}

// ---------------------------------------------------------------------------------------------
// Display names: one node per method call, named after the method
// ---------------------------------------------------------------------------------------------

#[test]
fn each_method_records_one_node_named_after_it() {
    let x = || Tensor::<f64>::from_vec(vec![0.5, 1.5, 2.0, 3.0, 0.7, 1.1], &[2, 3]).requires_grad();
    let img = || Tensor::<f64>::from_vec((0..16).map(|v| v as f64 * 0.1).collect(), &[1, 1, 4, 4]).requires_grad();
    type Method = fn(&Tensor<f64>) -> Tensor<f64>;
    let methods: Vec<(&str, Method)> = vec![
        ("square", |x| x.square()),
        ("sum", |x| x.sum()),
        ("mean", |x| x.mean()),
        ("ln", |x| x.ln()),
        ("sum_axis", |x| x.sum_axis(1, false)),
        ("sum_axes", |x| x.sum_axes(&[0, 1], true)),
        ("mean_axis", |x| x.mean_axis(0, true)),
        ("mean_axes", |x| x.mean_axes(&[-1], false)),
        ("max_axis", |x| x.max_axis(1, false)),
        ("min_axis", |x| x.min_axis(1, false)),
        ("max_all", |x| x.max_all()),
        ("t", |x| x.t()),
        ("transpose", |x| x.transpose(0, 1)),
        ("permute", |x| x.permute(&[1, 0])),
        ("unsqueeze", |x| x.unsqueeze(0)),
        ("flatten", |x| x.flatten()),
        ("squeeze", |x| x.sum_axis(0, true).squeeze(0)),
        ("stack", |x| Tensor::stack(&[x.clone(), x.clone()], 1)),
        ("index_select", |x| x.index_select(1, &[2, 0])),
        ("recip", |x| x.recip()),
        ("rsub_scalar", |x| x.rsub_scalar(1.0)),
        ("max_scalar", |x| x.max_scalar(1.0)),
        ("min_scalar", |x| x.min_scalar(1.0)),
        ("sin", |x| x.sin()),
        ("cos", |x| x.cos()),
        ("erf", |x| x.erf()),
        ("gelu", |x| x.gelu()),
        ("gelu_tanh", |x| x.gelu_tanh()),
        ("silu", |x| x.silu()),
        ("clamp", |x| x.clamp(Some(1.0), None)),
        ("clamp_tensor", |x| x.clamp_tensor(None, Some(&Tensor::ones(&[3])))),
        ("var", |x| x.var(&[], 1, false)),
        ("std", |x| x.std(&[1], 0, true)),
        ("cumsum", |x| x.cumsum(-1)),
        ("affine", |x| x.affine(&Tensor::ones(&[3, 2]), &Tensor::ones(&[2]))),
    ];
    for (name, f) in methods {
        let y = f(&x());
        let names = tape_op_names(&y);
        // `squeeze` is measured after a `sum_axis` that makes the size-1 axis.
        let want: Vec<&str> = if name == "squeeze" { vec!["sum_axis", "squeeze"] } else { vec![name] };
        assert_eq!(names, want, "{name} recorded {names:?}");
    }
    for (name, f) in [("max_pool2d", (|x: &Tensor<f64>| x.max_pool2d(2, 2)) as Method)] {
        let y = f(&img());
        assert_eq!(tape_op_names(&y), vec![name]);
    }
    // Op::name agrees with the listing for the old offenders.
    assert_eq!(Op::Unary { op: Unary::Log, x: Tensor::<f64>::zeros(&[1]), out: Tensor::zeros(&[1]) }.name(), "ln");
}
