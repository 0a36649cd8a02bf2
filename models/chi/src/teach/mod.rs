//! `chi teach`: a page a student can step through, forward then backward, on a real tape.
//!
//! `chi teach mlp` (or `lstm`, `attention`, or an expression such as
//! `chi teach "a = 2; b = -3; c = 10; f = -2; e = a*b; d = e + c; d * f"`) writes one
//! self-contained HTML file. Every number on it comes from chi's engine (see [`trace`]); the
//! page itself only steps through them and adds up the contributions it displays.
//!
//! * [`program`]: the straight-line programs the examples and expressions become;
//! * [`expr`]: the expression language;
//! * [`trace`]: runs a program through the engine and collects values, gradients, per-edge
//!   contributions and finite-difference estimates;
//! * [`layout`]: the layered graph layout and its SVG;
//! * [`page`]: the HTML page and its script.

pub mod expr;
pub mod layout;
pub mod page;
pub mod program;
pub mod trace;

use chi_autodiff::{AutodiffError, Rng, Tensor};
use clap::Args;
use program::{OpKind, Program};
use std::fmt;
use std::path::{Path, PathBuf};

/// Options of `chi teach`.
#[derive(Args, Debug, Clone)]
pub struct TeachArgs {
    /// A built-in example (`mlp`, `lstm`, `attention`; `list` lists them) or an expression,
    /// e.g. `x = [[0.5, -1]]; w = [[2], [1]]; sum(tanh(x @ w))`.
    pub what: String,
    /// Where to write the page (default: OUT/teach-NAME.html).
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
}

/// What can go wrong building a teaching page.
#[derive(Debug)]
pub enum TeachError {
    /// The expression does not parse (1-based line and column).
    Parse {
        /// Line.
        line: usize,
        /// Column (in characters).
        col: usize,
        /// What is wrong.
        msg: String,
        /// The offending line.
        text: String,
    },
    /// An op was given tensors of shapes it cannot combine.
    Shape {
        /// The op.
        op: &'static str,
        /// The input shapes.
        shapes: String,
        /// Why not.
        why: String,
    },
    /// An op was given the wrong number of inputs.
    Arity {
        /// The op.
        op: &'static str,
        /// Inputs it takes.
        expected: usize,
        /// Inputs given.
        actual: usize,
    },
    /// The loss is not one number.
    NotScalar(Vec<usize>),
    /// Nothing the loss depends on requires grad.
    NothingToDifferentiate,
    /// The engine failed.
    Engine(AutodiffError),
    /// A value is NaN or infinite (the op that made it).
    NonFinite(String),
    /// The program holds more values than a page can show (the count).
    TooLarge(usize),
    /// The page's numbers do not add up (a bug in chi, reported rather than drawn).
    Inconsistent(String),
    /// Writing the page failed.
    Io(PathBuf, std::io::Error),
}

impl fmt::Display for TeachError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TeachError::Parse { line, col, msg, text } => {
                write!(f, "line {line}, column {col}: {msg}\n  {text}\n  {}^", " ".repeat(text.chars().take(col.saturating_sub(1)).count()))
            }
            TeachError::Shape { op, shapes, why } => write!(f, "{op}: shapes {shapes}: {why}"),
            TeachError::Arity { op, expected, actual } => write!(f, "{op} takes {expected} input(s), got {actual}"),
            TeachError::NotScalar(s) => write!(f, "the loss has shape {s:?}; it must be one number (wrap it in sum(...))"),
            TeachError::NothingToDifferentiate => {
                write!(f, "the result does not depend on any leaf: name a value to differentiate (e.g. `x = 0.5`) and use it")
            }
            TeachError::Engine(e) => write!(f, "engine: {e}"),
            TeachError::NonFinite(op) => write!(f, "{op} produced a NaN or an infinity; choose values where every op is defined (e.g. log of positive numbers)"),
            TeachError::TooLarge(n) => write!(
                f,
                "the program holds {n} values, more than the {} a teaching page shows; use smaller tensors",
                trace::MAX_VALUES
            ),
            TeachError::Inconsistent(m) => write!(f, "internal inconsistency: {m}"),
            TeachError::Io(p, e) => write!(f, "cannot write {}: {e}", p.display()),
        }
    }
}

impl std::error::Error for TeachError {}

impl From<AutodiffError> for TeachError {
    fn from(e: AutodiffError) -> Self {
        TeachError::Engine(e)
    }
}

/// Names of the built-in examples.
pub const EXAMPLES: &[&str] = &["mlp", "lstm", "attention"];

fn param(shape: &[usize], rng: &mut Rng) -> Tensor<f64> {
    Tensor::<f64>::randn(shape, rng).mul_scalar(0.5).detach()
}

fn c(vals: &[f64], shape: &[usize]) -> Tensor<f64> {
    Tensor::from_vec(vals.to_vec(), shape)
}

/// A built-in example as a program, with a one-line description; `None` for an unknown name.
pub fn example(name: &str) -> Option<Result<(Program, String), TeachError>> {
    let mut rng = Rng::new(7);
    let build = |name: &str, rng: &mut Rng| -> Result<(Program, String), TeachError> {
        let mut p = Program::new();
        match name {
            "mlp" => {
                // 2 → 3 → 1, tanh hidden layer, squared error against 1.
                let x = p.constant(Some("x"), c(&[0.5, -1.0], &[1, 2]));
                let w1 = p.leaf("W1", param(&[2, 3], rng));
                let b1 = p.leaf("b1", param(&[3], rng));
                let w2 = p.leaf("W2", param(&[3, 1], rng));
                let b2 = p.leaf("b2", param(&[1], rng));
                let y = p.constant(Some("y"), c(&[1.0], &[1, 1]));
                let z1 = p.op(OpKind::Matmul, &[x, w1])?;
                let a1 = p.op(OpKind::Add, &[z1, b1])?;
                let h = p.op(OpKind::Tanh, &[a1])?;
                p.name(h, "h");
                let z2 = p.op(OpKind::Matmul, &[h, w2])?;
                let out = p.op(OpKind::Add, &[z2, b2])?;
                p.name(out, "ŷ");
                let d = p.op(OpKind::Sub, &[out, y])?;
                let sq = p.op(OpKind::Square, &[d])?;
                let loss = p.op(OpKind::Sum, &[sq])?;
                p.set_output(loss)?;
                Ok((p, "x = [[0.5, −1]]; h = tanh(x W1 + b1); ŷ = h W2 + b2; L = Σ (ŷ − 1)²".into()))
            }
            "lstm" => {
                // One LSTM cell (gates i, f, g, o from one matmul of [x, h]) unrolled over 3
                // steps; the loss reads only the last hidden state, so the gradient reaching
                // step 1 has passed back through every later step (BPTT).
                let (n_in, n_h) = (2, 2);
                let w = p.leaf("W", param(&[n_in + n_h, 4 * n_h], rng));
                let b = p.leaf("b", param(&[4 * n_h], rng));
                let xs = [[0.5, -0.3], [0.1, 0.8], [-0.6, 0.2]];
                let mut h = p.constant(Some("h0"), Tensor::zeros(&[1, n_h]));
                let mut cell = p.constant(Some("c0"), Tensor::zeros(&[1, n_h]));
                for (t, xv) in xs.iter().enumerate() {
                    let x = p.constant(Some(&format!("x{}", t + 1)), c(xv, &[1, n_in]));
                    let xh = p.op(OpKind::Concat, &[x, h])?;
                    let zw = p.op(OpKind::Matmul, &[xh, w])?;
                    let z = p.op(OpKind::Add, &[zw, b])?;
                    let gate = |p: &mut Program, k: usize, op: OpKind| -> Result<usize, TeachError> {
                        let part = p.op(OpKind::Narrow { start: k * n_h, len: n_h }, &[z])?;
                        p.op(op, &[part])
                    };
                    let i = gate(&mut p, 0, OpKind::Sigmoid)?;
                    let f = gate(&mut p, 1, OpKind::Sigmoid)?;
                    let g = gate(&mut p, 2, OpKind::Tanh)?;
                    let o = gate(&mut p, 3, OpKind::Sigmoid)?;
                    for (id, nm) in [(i, "i"), (f, "f"), (g, "g"), (o, "o")] {
                        p.name(id, &format!("{nm}{}", t + 1));
                    }
                    let fc = p.op(OpKind::Mul, &[f, cell])?;
                    let ig = p.op(OpKind::Mul, &[i, g])?;
                    cell = p.op(OpKind::Add, &[fc, ig])?;
                    p.name(cell, &format!("c{}", t + 1));
                    let tc = p.op(OpKind::Tanh, &[cell])?;
                    h = p.op(OpKind::Mul, &[o, tc])?;
                    p.name(h, &format!("h{}", t + 1));
                }
                let y = p.constant(Some("y"), c(&[0.5, -0.5], &[1, n_h]));
                let d = p.op(OpKind::Sub, &[h, y])?;
                let sq = p.op(OpKind::Square, &[d])?;
                let loss = p.op(OpKind::Sum, &[sq])?;
                p.set_output(loss)?;
                Ok((p, "LSTM cell, 2 inputs, 2 hidden, unrolled 3 steps: [i f g o] = [x_t, h_{t−1}] W + b; c_t = σ(f)c_{t−1} + σ(i)tanh(g); h_t = σ(o)tanh(c_t); L = Σ (h₃ − y)²".into()))
            }
            "attention" => {
                // Scaled dot-product attention of one query over three keys.
                let q = p.leaf("q", param(&[1, 2], rng));
                let k = p.leaf("K", param(&[3, 2], rng));
                let v = p.leaf("V", param(&[3, 2], rng));
                let kt = p.op(OpKind::Transpose, &[k])?;
                let s = p.op(OpKind::Matmul, &[q, kt])?;
                let scale = p.constant(Some("√d"), Tensor::scalar(2f64.sqrt()));
                let s = p.op(OpKind::Div, &[s, scale])?;
                let a = p.op(OpKind::Softmax, &[s])?;
                p.name(a, "α");
                let o = p.op(OpKind::Matmul, &[a, v])?;
                let y = p.constant(Some("y"), c(&[1.0, 0.0], &[1, 2]));
                let d = p.op(OpKind::Sub, &[o, y])?;
                let sq = p.op(OpKind::Square, &[d])?;
                let loss = p.op(OpKind::Sum, &[sq])?;
                p.set_output(loss)?;
                Ok((p, "α = softmax(q Kᵀ / √2); o = α V; L = Σ (o − y)²".into()))
            }
            _ => unreachable!("checked by the caller"),
        }
    };
    EXAMPLES.contains(&name).then(|| build(name, &mut rng))
}

/// The trace of a built-in example or an expression.
pub fn trace_of(what: &str) -> Result<trace::Trace, TeachError> {
    match example(what) {
        Some(built) => {
            let (prog, desc) = built?;
            trace::trace(&prog, what, &desc)
        }
        None => {
            let prog = expr::parse(what)?;
            trace::trace(&prog, "expression", what)
        }
    }
}

/// Writes the page for `what` to `path`.
pub fn write_page(what: &str, path: &Path) -> Result<trace::Trace, TeachError> {
    let t = trace_of(what)?;
    let html = page::render(t.clone());
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| TeachError::Io(dir.to_path_buf(), e))?;
    }
    chi_nn::checkpoint::atomic_write(path, html.as_bytes()).map_err(|e| match e {
        chi_nn::NnError::Io { source, .. } => TeachError::Io(path.to_path_buf(), source),
        other => TeachError::Io(path.to_path_buf(), std::io::Error::other(other.to_string())),
    })?;
    Ok(t)
}

/// `chi teach`: writes the page and prints where.
pub fn run(args: &TeachArgs, out: &Path) -> Result<(), String> {
    if args.what == "list" {
        println!("{}", EXAMPLES.join("\n"));
        return Ok(());
    }
    let default_name = if EXAMPLES.contains(&args.what.as_str()) { format!("teach-{}.html", args.what) } else { "teach-expr.html".into() };
    let path = args.output.clone().unwrap_or_else(|| out.join(default_name));
    let t = write_page(&args.what, &path).map_err(|e| e.to_string())?;
    println!(
        "wrote {} ({} forward and {} backward steps; loss {:.6}; largest gap to central differences {:.1e})",
        path.display(),
        t.forward.len(),
        t.backward.len(),
        t.loss,
        t.max_fd_error
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chi_autodiff::grad;

    #[test]
    fn micrograd_example_matches_hand_derivatives() {
        // Karpathy's micrograd walkthrough: L = (a·b + c)·f.
        let t = trace_of("a = 2; b = -3; c = 10; f = -2; e = a*b; d = e + c; L = d * f").unwrap();
        assert_eq!(t.loss, -8.0);
        let g = |l: &str| t.node(l).unwrap().grad.clone().unwrap();
        assert_eq!(g("a"), vec![6.0]); // ∂L/∂a = b·f
        assert_eq!(g("b"), vec![-4.0]); // a·f
        assert_eq!(g("c"), vec![-2.0]); // f
        assert_eq!(g("f"), vec![4.0]); // d
        assert!(t.max_fd_error < 1e-6, "{}", t.max_fd_error);
        assert_eq!(t.forward.len(), 3);
        assert_eq!(t.backward.len(), 3);
    }

    #[test]
    fn builtins_agree_with_the_engine_and_with_finite_differences() {
        for name in EXAMPLES {
            let t = trace_of(name).unwrap();
            assert!(t.max_fd_error < 1e-6, "{name}: {}", t.max_fd_error);
            // Leaf gradients equal a plain backward() through a fresh forward pass.
            let (prog, _) = example(name).unwrap().unwrap();
            let vals = prog.eval(true, None);
            let leaves: Vec<usize> = (0..prog.nodes.len()).filter(|&i| matches!(prog.nodes[i].kind, program::NodeKind::Leaf(_))).collect();
            let refs: Vec<&Tensor<f64>> = leaves.iter().map(|&i| &vals[i]).collect();
            let gs = grad(&[&vals[prog.output]], &refs, None, Default::default()).unwrap();
            for (&i, g) in leaves.iter().zip(gs) {
                let label = prog.nodes[i].name.clone().unwrap();
                assert_eq!(t.node(&label).unwrap().grad.as_ref().unwrap(), &g.to_vec(), "{name} {label}");
            }
            assert_eq!(t.forward.len(), t.backward.len());
        }
    }

    #[test]
    fn lstm_is_three_steps_of_bptt() {
        let t = trace_of("lstm").unwrap();
        // 16 ops per step minus the first step's concat of two constants, plus the loss (3).
        assert_eq!(t.forward.len(), 16 * 3 - 1 + 3);
        assert_eq!(t.nodes.iter().filter(|n| n.op.as_deref() == Some("matmul")).count(), 3);
    }

    #[test]
    fn parse_errors_name_the_column() {
        let e = expr::parse("x = 1; y = (x + 2").unwrap_err().to_string();
        assert!(e.contains("line 1, column 18"), "{e}");
        assert!(e.contains("expected `)`"), "{e}");
        let e = expr::parse("x = [[1, 2]]; w = [1, 2, 3]; sum(x @ w)").unwrap_err().to_string();
        assert!(e.contains("column 36") && e.contains("matmul"), "{e}");
        let e = expr::parse("x = [1, 2]; x $ 2").unwrap_err().to_string();
        assert!(e.contains("column 15") && e.contains("unexpected character"), "{e}");
        let e = expr::parse("x = [1, 2]; tanh(x)").unwrap_err().to_string();
        assert!(e.contains("one number"), "{e}");
        let e = expr::parse("x = [1, 2]; sum(foo(x))").unwrap_err().to_string();
        assert!(e.contains("column 17") && e.contains("unknown function"), "{e}");
        let e = expr::parse("x = [[1, 2], [3]]").unwrap_err().to_string();
        assert!(e.contains("row has 1 values"), "{e}");
        assert!(matches!(trace_of("sum([1, 2] × 3)"), Err(TeachError::NothingToDifferentiate)));
        // Hostile input: an error, not a stack overflow or a long wait.
        let deep = format!("x = 1; {}x{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(expr::parse(&deep).unwrap_err().to_string().contains("nested more than"));
        let negs = format!("x = 1; {}x", "-".repeat(100_000));
        assert!(expr::parse(&negs).unwrap_err().to_string().contains("nested more than"));
        let long = format!("x = 1; {}x", "x + ".repeat(100_000));
        assert!(expr::parse(&long).unwrap_err().to_string().contains("more than 1000 operations"));
        let e = expr::parse("x = [[[1]]]; sum(x)").unwrap_err().to_string();
        assert!(e.contains("at most 2 axes"), "{e}");
        assert!(matches!(trace_of("x = [-1, 2]; sum(log(x))"), Err(TeachError::NonFinite(op)) if op == "ln"));
        assert!(expr::parse("x = 1e999; x").unwrap_err().to_string().contains("too large"));
        let big = format!("x = [{}]; sum(x * x)", vec!["0.5"; 5000].join(", "));
        assert!(matches!(trace_of(&big), Err(TeachError::TooLarge(_))));
    }

    #[test]
    fn expression_with_every_op_gradchecks() {
        let src = "const x = [[0.5, -1.0, 0.25]]\nW = [[0.3, -0.2], [0.1, 0.4], [-0.5, 0.2]]\nb = [0.1, -0.1]\n\
                   h = sigmoid(x @ W + b) × exp(-(x @ W)) ÷ 2\np = softmax(h)\nr = relu(h − 0.01) + tanh(h) − log(p)\nsum(square(r) · t(t(p)))";
        let t = trace_of(src).unwrap();
        assert!(t.max_fd_error < 1e-6, "{}", t.max_fd_error);
        for op in ["matmul", "add", "sub", "mul", "div", "sigmoid", "exp", "neg", "softmax", "relu", "tanh", "ln", "square", "t", "sum"] {
            assert!(t.nodes.iter().any(|n| n.op.as_deref() == Some(op)), "{op} missing");
        }
    }

    #[test]
    fn layout_puts_ops_right_of_their_inputs_without_overlap() {
        for name in EXAMPLES {
            let mut t = trace_of(name).unwrap();
            let (w, h) = layout::layout(&mut t);
            for n in &t.nodes {
                for &j in &n.inputs {
                    assert!(t.nodes[j].x < n.x, "{name}: {} is not right of its input {}", n.label, t.nodes[j].label);
                }
                assert!(n.x - layout::NODE_W / 2.0 >= 0.0 && n.x + layout::NODE_W / 2.0 <= w);
                assert!(n.y - layout::NODE_H / 2.0 >= 0.0 && n.y + layout::NODE_H / 2.0 <= h);
                for m in &t.nodes {
                    if m.id != n.id && m.layer == n.layer {
                        assert!((m.y - n.y).abs() >= layout::NODE_H, "{name}: {} overlaps {}", n.label, m.label);
                    }
                }
            }
        }
    }

    #[test]
    fn page_is_self_contained() {
        let dir = std::env::temp_dir().join(format!("chi-teach-{}", std::process::id()));
        let path = dir.join("p.html");
        write_page("attention", &path).unwrap();
        let html = std::fs::read_to_string(&path).unwrap();
        assert!(html.contains("<svg") && html.contains("id=\"trace\""));
        for bad in ["http://", "https://", "<script src", "<link"] {
            let allowed = "http://www.w3.org/2000/svg";
            assert!(!html.replace(allowed, "").contains(bad), "page references {bad}");
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
