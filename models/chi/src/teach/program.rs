//! A small straight-line program of tensor ops, the form every `chi teach` example takes before
//! chi's engine runs it.
//!
//! Each op of a [`Program`] is run with exactly one chi tensor method, so it records exactly one
//! node on chi's tape; the page's graph is the engine's tape, and the program is kept only so the
//! page can *re-run* parts of it: the finite-difference estimates perturb one node's value and
//! re-evaluate what follows, something a recorded tape cannot do by itself.

use super::TeachError;
use chi_autodiff::{no_grad, Tensor};

/// An op of the teaching language; each is one chi tensor method (named in [`OpKind::engine_name`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// `a + b` (broadcasting).
    Add,
    /// `a − b` (broadcasting).
    Sub,
    /// `a × b` elementwise (broadcasting).
    Mul,
    /// `a ÷ b` elementwise (broadcasting).
    Div,
    /// Matrix product of two 2-D tensors.
    Matmul,
    /// `tanh x`.
    Tanh,
    /// `σ(x) = 1 / (1 + e^−x)`.
    Sigmoid,
    /// `max(x, 0)`.
    Relu,
    /// `e^x`.
    Exp,
    /// Natural logarithm.
    Log,
    /// `x²`.
    Square,
    /// `−x`.
    Neg,
    /// Sum of all elements (a scalar).
    Sum,
    /// Softmax along the last axis.
    Softmax,
    /// Transpose of a 2-D tensor.
    Transpose,
    /// Columns `start..start+len` of a 2-D tensor.
    Narrow {
        /// First column.
        start: usize,
        /// Number of columns.
        len: usize,
    },
    /// Concatenation of 2-D tensors along the columns.
    Concat,
}

impl OpKind {
    /// The name chi's engine records for this op (as in `tape_listing`).
    pub fn engine_name(self) -> &'static str {
        match self {
            OpKind::Add => "add",
            OpKind::Sub => "sub",
            OpKind::Mul => "mul",
            OpKind::Div => "div",
            OpKind::Matmul => "matmul",
            OpKind::Tanh => "tanh",
            OpKind::Sigmoid => "sigmoid",
            OpKind::Relu => "relu",
            OpKind::Exp => "exp",
            OpKind::Log => "ln",
            OpKind::Square => "square",
            OpKind::Neg => "neg",
            OpKind::Sum => "sum",
            OpKind::Softmax => "softmax",
            OpKind::Transpose => "t",
            OpKind::Narrow { .. } => "narrow",
            OpKind::Concat => "concat",
        }
    }

    /// The backward rule in words: what each input receives, given the incoming gradient `g`
    /// (inputs `a`, `b` or `x`; output `y`).
    pub fn rule(self) -> &'static str {
        match self {
            OpKind::Add => "∂a += g,  ∂b += g   (each summed back to its input's shape: sum-to-shape undoes broadcasting)",
            OpKind::Sub => "∂a += g,  ∂b += −g   (summed back to each input's shape)",
            OpKind::Mul => "∂a += g ⊙ b,  ∂b += g ⊙ a   (summed back to each input's shape)",
            OpKind::Div => "∂a += g ⊘ b,  ∂b += −g ⊙ a ⊘ b²   (summed back to each input's shape)",
            OpKind::Matmul => "∂A += G · Bᵀ,  ∂B += Aᵀ · G",
            OpKind::Tanh => "∂tanh = 1 − y²:   ∂x += g ⊙ (1 − y²)",
            OpKind::Sigmoid => "∂σ = y(1 − y):   ∂x += g ⊙ y ⊙ (1 − y)",
            OpKind::Relu => "∂relu = [x > 0]:   ∂x += g ⊙ [x > 0]",
            OpKind::Exp => "∂exp = y:   ∂x += g ⊙ y",
            OpKind::Log => "∂ln = 1/x:   ∂x += g ⊘ x",
            OpKind::Square => "∂x² = 2x:   ∂x += 2 x ⊙ g",
            OpKind::Neg => "∂x += −g",
            OpKind::Sum => "∂x += g (the scalar g copied to every element)",
            OpKind::Softmax => "∂x += y ⊙ (g − Σⱼ gⱼ yⱼ)   (per row: the Jacobian diag(y) − y yᵀ applied to g)",
            OpKind::Transpose => "∂x += gᵀ",
            OpKind::Narrow { .. } => "∂x += g placed into its columns (zeros elsewhere)",
            OpKind::Concat => "∂xᵢ += the columns of g that xᵢ filled",
        }
    }

    /// Whether the op is differentiable everywhere near typical inputs (relu has a kink at 0,
    /// where central differences straddle it).
    pub fn smooth(self) -> bool {
        !matches!(self, OpKind::Relu)
    }

    fn arity(self) -> Option<usize> {
        match self {
            OpKind::Add | OpKind::Sub | OpKind::Mul | OpKind::Div | OpKind::Matmul => Some(2),
            OpKind::Concat => None,
            _ => Some(1),
        }
    }
}

/// What a program node is.
#[derive(Clone, Debug)]
pub enum NodeKind {
    /// A tensor we want the gradient of (it requires grad).
    Leaf(Tensor<f64>),
    /// A constant (no gradient, not on the tape).
    Const(Tensor<f64>),
    /// An op applied to earlier nodes.
    Op(OpKind),
}

/// One node of a [`Program`].
#[derive(Clone, Debug)]
pub struct Node {
    /// Leaf, constant or op.
    pub kind: NodeKind,
    /// Indices of the input nodes (earlier in the program).
    pub inputs: Vec<usize>,
    /// The name given to it (leaves always have one; intermediates when assigned to a name).
    pub name: Option<String>,
    /// Its shape, known before anything runs.
    pub shape: Vec<usize>,
}

/// A straight-line program: nodes in the order they run; the last one added by
/// [`Program::set_output`] is the loss.
#[derive(Clone, Debug, Default)]
pub struct Program {
    /// Nodes, each after its inputs.
    pub nodes: Vec<Node>,
    /// The node whose value is the loss (a one-element tensor).
    pub output: usize,
}

fn shape_str(s: &[usize]) -> String {
    format!("{s:?}")
}

impl Program {
    /// An empty program.
    pub fn new() -> Self {
        Program::default()
    }

    /// Adds a leaf (a tensor that requires grad) called `name`.
    pub fn leaf(&mut self, name: &str, t: Tensor<f64>) -> usize {
        let shape = t.shape().to_vec();
        self.nodes.push(Node { kind: NodeKind::Leaf(t), inputs: vec![], name: Some(name.to_string()), shape });
        self.nodes.len() - 1
    }

    /// Adds a constant.
    pub fn constant(&mut self, name: Option<&str>, t: Tensor<f64>) -> usize {
        let shape = t.shape().to_vec();
        self.nodes.push(Node { kind: NodeKind::Const(t), inputs: vec![], name: name.map(str::to_string), shape });
        self.nodes.len() - 1
    }

    /// Adds `op(inputs)`, checking shapes first (a mismatch is an error naming the op and the
    /// shapes, never a panic inside the engine).
    pub fn op(&mut self, op: OpKind, inputs: &[usize]) -> Result<usize, TeachError> {
        if let Some(n) = op.arity() {
            if inputs.len() != n {
                return Err(TeachError::Arity { op: op.engine_name(), expected: n, actual: inputs.len() });
            }
        } else if inputs.is_empty() {
            return Err(TeachError::Arity { op: op.engine_name(), expected: 1, actual: 0 });
        }
        let shapes: Vec<&[usize]> = inputs.iter().map(|&i| self.nodes[i].shape.as_slice()).collect();
        let bad = |why: &str| TeachError::Shape {
            op: op.engine_name(),
            shapes: shapes.iter().map(|s| shape_str(s)).collect::<Vec<_>>().join(" and "),
            why: why.to_string(),
        };
        let shape: Vec<usize> = match op {
            OpKind::Add | OpKind::Sub | OpKind::Mul | OpKind::Div => {
                broadcast(shapes[0], shapes[1]).ok_or_else(|| bad("they cannot be broadcast together"))?
            }
            OpKind::Matmul => {
                let (a, b) = (shapes[0], shapes[1]);
                if a.len() != 2 || b.len() != 2 {
                    return Err(bad("matmul takes two 2-D tensors (write a row vector as [[1, 2]])"));
                }
                if a[1] != b[0] {
                    return Err(bad(&format!("inner dimensions differ ({} vs {})", a[1], b[0])));
                }
                vec![a[0], b[1]]
            }
            OpKind::Sum => vec![],
            OpKind::Softmax => {
                if shapes[0].is_empty() {
                    return Err(bad("softmax needs at least one axis"));
                }
                shapes[0].to_vec()
            }
            OpKind::Transpose => {
                if shapes[0].len() != 2 {
                    return Err(bad("transpose takes a 2-D tensor"));
                }
                vec![shapes[0][1], shapes[0][0]]
            }
            OpKind::Narrow { start, len } => {
                let s = shapes[0];
                if s.len() != 2 || len == 0 || start + len > s[1] || (start == 0 && len == s[1]) {
                    return Err(bad(&format!("columns {start}..{} are not a proper part of a 2-D tensor", start + len)));
                }
                vec![s[0], len]
            }
            OpKind::Concat => {
                let rows = shapes[0].first().copied();
                if inputs.len() < 2 || shapes.iter().any(|s| s.len() != 2 || Some(s[0]) != rows) {
                    return Err(bad("concat takes two or more 2-D tensors with the same number of rows"));
                }
                vec![shapes[0][0], shapes.iter().map(|s| s[1]).sum()]
            }
            _ => shapes[0].to_vec(),
        };
        self.nodes.push(Node { kind: NodeKind::Op(op), inputs: inputs.to_vec(), name: None, shape });
        Ok(self.nodes.len() - 1)
    }

    /// Gives node `i` a display name (an intermediate assigned to a variable).
    pub fn name(&mut self, i: usize, name: &str) {
        if self.nodes[i].name.is_none() {
            self.nodes[i].name = Some(name.to_string());
        }
    }

    /// Makes node `i` the loss; it must have one element.
    pub fn set_output(&mut self, i: usize) -> Result<(), TeachError> {
        let s = &self.nodes[i].shape;
        if s.iter().product::<usize>() != 1 {
            return Err(TeachError::NotScalar(s.clone()));
        }
        self.output = i;
        Ok(())
    }

    /// Runs the program with chi. With `track`, leaves require grad (and carry their names),
    /// so the ops are recorded on chi's tape; without, nothing is recorded. `perturb =
    /// Some((node, element, delta))` adds `delta` to one element of that node's value before
    /// anything downstream uses it (the finite-difference probe).
    pub fn eval(&self, track: bool, perturb: Option<(usize, usize, f64)>) -> Vec<Tensor<f64>> {
        let run = || {
            let mut vals: Vec<Tensor<f64>> = Vec::with_capacity(self.nodes.len());
            for (i, n) in self.nodes.iter().enumerate() {
                let mut v = match &n.kind {
                    NodeKind::Leaf(t) => {
                        let t = t.detach();
                        if track {
                            t.requires_grad().named(n.name.as_deref().unwrap_or("leaf"))
                        } else {
                            t
                        }
                    }
                    NodeKind::Const(t) => t.detach(),
                    NodeKind::Op(op) => {
                        let xs: Vec<&Tensor<f64>> = n.inputs.iter().map(|&j| &vals[j]).collect();
                        apply(*op, &xs)
                    }
                };
                if let Some((p, e, d)) = perturb {
                    if p == i {
                        let mut data = v.to_vec();
                        data[e] += d;
                        v = Tensor::from_vec(data, &n.shape);
                    }
                }
                vals.push(v);
            }
            vals
        };
        if track {
            run()
        } else {
            no_grad(run)
        }
    }
}

/// The NumPy broadcast of two shapes.
pub fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let r = a.len().max(b.len());
    let mut out = vec![0; r];
    for i in 0..r {
        let da = if i < a.len() { a[a.len() - 1 - i] } else { 1 };
        let db = if i < b.len() { b[b.len() - 1 - i] } else { 1 };
        out[r - 1 - i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return None;
        };
    }
    Some(out)
}

/// Applies one op with the chi method that records it (shapes were checked by [`Program::op`]).
pub fn apply(op: OpKind, x: &[&Tensor<f64>]) -> Tensor<f64> {
    match op {
        OpKind::Add => x[0].add(x[1]),
        OpKind::Sub => x[0].sub(x[1]),
        OpKind::Mul => x[0].mul(x[1]),
        OpKind::Div => x[0].div(x[1]),
        OpKind::Matmul => x[0].matmul(x[1]),
        OpKind::Tanh => x[0].tanh(),
        OpKind::Sigmoid => x[0].sigmoid(),
        OpKind::Relu => x[0].relu(),
        OpKind::Exp => x[0].exp(),
        OpKind::Log => x[0].ln(),
        OpKind::Square => x[0].square(),
        OpKind::Neg => x[0].neg(),
        OpKind::Sum => x[0].sum(),
        OpKind::Softmax => x[0].softmax(-1),
        OpKind::Transpose => x[0].t(),
        OpKind::Narrow { start, len } => x[0].narrow(1, start, len),
        OpKind::Concat => {
            let owned: Vec<Tensor<f64>> = x.iter().map(|t| (*t).clone()).collect();
            Tensor::concat(&owned, 1)
        }
    }
}
