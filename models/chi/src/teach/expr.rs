//! The teaching expression language: a few statements, each an assignment or an expression; the
//! value of the last is the loss.
//!
//! ```text
//! a = 2; b = -3; c = 10; f = -2     # a name bound to a literal is a leaf (it requires grad)
//! e = a * b; d = e + c; L = d * f   # a name bound to an expression names an intermediate
//! const x = [[1, 2]]                # a constant: no gradient
//! sum(tanh(x @ [[0.5], [-1]]))      # literals inside expressions are constants too
//! ```
//!
//! Operators: `+ − × ÷` (also `- * /`), `@` for matmul (all left-associative; `× ÷ @` bind
//! tighter than `+ −`), unary minus. Functions: `tanh sigmoid relu exp log sum softmax square
//! matmul t neg`. Tensors are scalars, vectors `[1, 2]` or matrices `[[1, 2], [3, 4]]`.
//! Statements are separated by `;` or new lines; `#` starts a comment.

use super::program::{OpKind, Program};
use super::TeachError;
use chi_autodiff::Tensor;
use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(f64),
    Ident(String),
    Op(char),
    Sep,
    End,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
    col: usize,
}

fn lex(src: &str) -> Result<Vec<Token>, TeachError> {
    let mut out = Vec::new();
    for (li, line) in src.lines().enumerate() {
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let col = i + 1;
            let push = |out: &mut Vec<Token>, tok| out.push(Token { tok, line: li + 1, col });
            if c == '#' {
                break;
            } else if c.is_whitespace() {
                i += 1;
            } else if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                    i += 1;
                }
                if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
                    let mut j = i + 1;
                    if j < chars.len() && (chars[j] == '+' || chars[j] == '-') {
                        j += 1;
                    }
                    if j < chars.len() && chars[j].is_ascii_digit() {
                        i = j;
                        while i < chars.len() && chars[i].is_ascii_digit() {
                            i += 1;
                        }
                    }
                }
                let text: String = chars[start..i].iter().collect();
                let v: f64 = text.parse().map_err(|_| parse_err(src, li + 1, col, &format!("`{text}` is not a number")))?;
                if !v.is_finite() {
                    return Err(parse_err(src, li + 1, col, &format!("`{text}` is too large for a float64")));
                }
                push(&mut out, Tok::Num(v));
            } else if c.is_alphabetic() || c == '_' {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                push(&mut out, Tok::Ident(chars[start..i].iter().collect()));
            } else {
                let op = match c {
                    '+' | '*' | '/' | '@' | '(' | ')' | '[' | ']' | ',' | '=' => c,
                    '-' | '−' => '-',
                    '×' | '·' => '*',
                    '÷' => '/',
                    ';' => {
                        push(&mut out, Tok::Sep);
                        i += 1;
                        continue;
                    }
                    _ => return Err(parse_err(src, li + 1, col, &format!("unexpected character `{c}`"))),
                };
                push(&mut out, Tok::Op(op));
                i += 1;
            }
        }
        out.push(Token { tok: Tok::Sep, line: li + 1, col: chars.len() + 1 });
    }
    let (line, col) = out.last().map_or((1, 1), |t| (t.line, t.col));
    out.push(Token { tok: Tok::End, line, col });
    Ok(out)
}

fn parse_err(src: &str, line: usize, col: usize, msg: &str) -> TeachError {
    TeachError::Parse { line, col, msg: msg.to_string(), text: src.lines().nth(line - 1).unwrap_or("").to_string() }
}

/// A parsed expression before it is turned into program nodes.
enum Expr {
    Lit(Tensor<f64>),
    Var(String, usize, usize),
    Neg(Box<Expr>),
    Bin(char, Box<Expr>, Box<Expr>, usize, usize),
    Call(String, Vec<Expr>, usize, usize),
}

struct Parser<'a> {
    src: &'a str,
    toks: Vec<Token>,
    pos: usize,
    /// Nesting depth of the expression being parsed (bounded, so hostile input cannot overflow
    /// the stack).
    depth: usize,
    /// Operators and calls parsed so far (bounded: the page and the recursive build stay small).
    size: usize,
}

/// Most operators and calls in one program.
const MAX_OPS: usize = 1000;

/// Deepest nesting of parentheses, calls and unary minus accepted.
const MAX_DEPTH: usize = 64;

impl<'a> Parser<'a> {
    fn peek(&self) -> &Token {
        &self.toks[self.pos]
    }
    fn next(&mut self) -> Token {
        let t = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }
    fn err(&self, t: &Token, msg: &str) -> TeachError {
        parse_err(self.src, t.line, t.col, msg)
    }
    /// Counts one more operator or call at token `t`.
    fn grow(&mut self, t: &Token) -> Result<(), TeachError> {
        self.size += 1;
        if self.size > MAX_OPS {
            return Err(self.err(t, &format!("more than {MAX_OPS} operations; a teaching page should be smaller")));
        }
        Ok(())
    }
    fn describe(t: &Tok) -> String {
        match t {
            Tok::Num(v) => format!("the number {v}"),
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Op(c) => format!("`{c}`"),
            Tok::Sep => "the end of the statement".into(),
            Tok::End => "the end of the input".into(),
        }
    }
    fn expect(&mut self, c: char) -> Result<(), TeachError> {
        let t = self.next();
        if t.tok == Tok::Op(c) {
            Ok(())
        } else {
            Err(self.err(&t, &format!("expected `{c}` but found {}", Self::describe(&t.tok))))
        }
    }
    fn expr(&mut self) -> Result<Expr, TeachError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let t = self.peek().clone();
            return Err(self.err(&t, &format!("expression nested more than {MAX_DEPTH} deep")));
        }
        let e = self.sum();
        self.depth -= 1;
        e
    }
    fn sum(&mut self) -> Result<Expr, TeachError> {
        let mut lhs = self.term()?;
        while let Tok::Op(c @ ('+' | '-')) = self.peek().tok {
            let t = self.next();
            self.grow(&t)?;
            let rhs = self.term()?;
            lhs = Expr::Bin(c, Box::new(lhs), Box::new(rhs), t.line, t.col);
        }
        Ok(lhs)
    }
    fn term(&mut self) -> Result<Expr, TeachError> {
        let mut lhs = self.unary()?;
        while let Tok::Op(c @ ('*' | '/' | '@')) = self.peek().tok {
            let t = self.next();
            self.grow(&t)?;
            let rhs = self.unary()?;
            lhs = Expr::Bin(c, Box::new(lhs), Box::new(rhs), t.line, t.col);
        }
        Ok(lhs)
    }
    fn unary(&mut self) -> Result<Expr, TeachError> {
        if self.peek().tok == Tok::Op('-') {
            let t = self.next();
            self.grow(&t)?;
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                let t = self.peek().clone();
                return Err(self.err(&t, &format!("expression nested more than {MAX_DEPTH} deep")));
            }
            let e = self.unary();
            self.depth -= 1;
            let e = e?;
            // A negative literal is a literal (so `b = -3` is a leaf).
            return Ok(match e {
                Expr::Lit(t) => Expr::Lit(t.neg().detach()),
                e => Expr::Neg(Box::new(e)),
            });
        }
        self.primary()
    }
    fn primary(&mut self) -> Result<Expr, TeachError> {
        let t = self.next();
        match &t.tok {
            Tok::Num(v) => Ok(Expr::Lit(Tensor::scalar(*v))),
            Tok::Op('(') => {
                let e = self.expr()?;
                self.expect(')')?;
                Ok(e)
            }
            Tok::Op('[') => {
                self.pos -= 1;
                let (vals, shape) = self.list()?;
                Ok(Expr::Lit(Tensor::from_vec(vals, &shape)))
            }
            Tok::Ident(name) => {
                if self.peek().tok == Tok::Op('(') {
                    self.next();
                    self.grow(&t)?;
                    let mut args = Vec::new();
                    if self.peek().tok != Tok::Op(')') {
                        loop {
                            args.push(self.expr()?);
                            if self.peek().tok == Tok::Op(',') {
                                self.next();
                            } else {
                                break;
                            }
                        }
                    }
                    self.expect(')')?;
                    Ok(Expr::Call(name.clone(), args, t.line, t.col))
                } else {
                    Ok(Expr::Var(name.clone(), t.line, t.col))
                }
            }
            other => Err(self.err(&t, &format!("expected a number, a name, `(` or `[` but found {}", Self::describe(other)))),
        }
    }
    /// A nested list literal: its values and shape (rank 1 or 2).
    fn list(&mut self) -> Result<(Vec<f64>, Vec<usize>), TeachError> {
        let open = self.next();
        if self.peek().tok == Tok::Op('[') {
            if self.toks.get(self.pos + 1).is_some_and(|t| t.tok == Tok::Op('[')) {
                let t = self.peek().clone();
                return Err(self.err(&t, "tensors have at most 2 axes here"));
            }
            let mut rows: Vec<Vec<f64>> = Vec::new();
            loop {
                let at = self.peek().clone();
                let (r, s) = self.list()?;
                if s.len() != 1 {
                    return Err(self.err(&at, "tensors have at most 2 axes here"));
                }
                if let Some(first) = rows.first() {
                    if first.len() != r.len() {
                        return Err(self.err(&at, &format!("this row has {} values, the first row has {}", r.len(), first.len())));
                    }
                }
                rows.push(r);
                if self.peek().tok == Tok::Op(',') {
                    self.next();
                } else {
                    break;
                }
            }
            self.expect(']')?;
            let cols = rows[0].len();
            return Ok((rows.concat(), vec![rows.len(), cols]));
        }
        let mut vals = Vec::new();
        loop {
            let mut sign = 1.0;
            if self.peek().tok == Tok::Op('-') {
                self.next();
                sign = -1.0;
            }
            let t = self.next();
            match &t.tok {
                Tok::Num(v) => vals.push(sign * v),
                Tok::Op(']') if vals.is_empty() => return Err(self.err(&open, "empty tensor")),
                other => return Err(self.err(&t, &format!("expected a number but found {}", Self::describe(other)))),
            }
            if self.peek().tok == Tok::Op(',') {
                self.next();
            } else {
                break;
            }
        }
        self.expect(']')?;
        let n = vals.len();
        Ok((vals, vec![n]))
    }
}

fn function(name: &str) -> Option<(OpKind, usize)> {
    Some(match name {
        "tanh" => (OpKind::Tanh, 1),
        "sigmoid" | "σ" => (OpKind::Sigmoid, 1),
        "relu" => (OpKind::Relu, 1),
        "exp" => (OpKind::Exp, 1),
        "log" | "ln" => (OpKind::Log, 1),
        "sum" => (OpKind::Sum, 1),
        "softmax" => (OpKind::Softmax, 1),
        "square" => (OpKind::Square, 1),
        "neg" => (OpKind::Neg, 1),
        "t" | "transpose" => (OpKind::Transpose, 1),
        "matmul" => (OpKind::Matmul, 2),
        _ => return None,
    })
}

struct Builder<'a> {
    src: &'a str,
    prog: Program,
    vars: HashMap<String, usize>,
}

impl Builder<'_> {
    fn at(&self, line: usize, col: usize, e: TeachError) -> TeachError {
        match e {
            TeachError::Shape { .. } | TeachError::Arity { .. } => parse_err(self.src, line, col, &e.to_string()),
            e => e,
        }
    }
    fn build(&mut self, e: Expr) -> Result<usize, TeachError> {
        match e {
            Expr::Lit(t) => Ok(self.prog.constant(None, t)),
            Expr::Var(name, line, col) => {
                self.vars.get(&name).copied().ok_or_else(|| parse_err(self.src, line, col, &format!("`{name}` is not defined (define it first, e.g. `{name} = 1.5`)")))
            }
            Expr::Neg(x) => {
                let x = self.build(*x)?;
                self.prog.op(OpKind::Neg, &[x])
            }
            Expr::Bin(c, a, b, line, col) => {
                let (a, b) = (self.build(*a)?, self.build(*b)?);
                let op = match c {
                    '+' => OpKind::Add,
                    '-' => OpKind::Sub,
                    '*' => OpKind::Mul,
                    '/' => OpKind::Div,
                    _ => OpKind::Matmul,
                };
                self.prog.op(op, &[a, b]).map_err(|e| self.at(line, col, e))
            }
            Expr::Call(name, args, line, col) => {
                let Some((op, arity)) = function(&name) else {
                    return Err(parse_err(
                        self.src,
                        line,
                        col,
                        &format!("unknown function `{name}`; known: tanh, sigmoid, relu, exp, log, sum, softmax, square, neg, t, matmul"),
                    ));
                };
                if args.len() != arity {
                    return Err(parse_err(self.src, line, col, &format!("`{name}` takes {arity} argument(s), got {}", args.len())));
                }
                let mut ids = Vec::new();
                for a in args {
                    ids.push(self.build(a)?);
                }
                self.prog.op(op, &ids).map_err(|e| self.at(line, col, e))
            }
        }
    }
}

/// Parses `src` into a program whose output is the last statement's value.
pub fn parse(src: &str) -> Result<Program, TeachError> {
    let toks = lex(src)?;
    let mut p = Parser { src, toks, pos: 0, depth: 0, size: 0 };
    let mut b = Builder { src, prog: Program::new(), vars: HashMap::new() };
    let mut last: Option<usize> = None;
    let mut last_tok = p.peek().clone();
    loop {
        while p.peek().tok == Tok::Sep {
            p.next();
        }
        if p.peek().tok == Tok::End {
            break;
        }
        let start = p.peek().clone();
        last_tok = start.clone();
        // `const NAME = literal`, `NAME = expr`, or an expression.
        let mut is_const = false;
        if start.tok == Tok::Ident("const".into()) && matches!(p.toks.get(p.pos + 1).map(|t| &t.tok), Some(Tok::Ident(_))) {
            p.next();
            is_const = true;
        }
        let here = p.peek().clone();
        let assign = match (&here.tok, p.toks.get(p.pos + 1).map(|t| &t.tok)) {
            (Tok::Ident(name), Some(Tok::Op('='))) => {
                p.next();
                p.next();
                Some(name.clone())
            }
            _ => None,
        };
        if is_const && assign.is_none() {
            return Err(p.err(&here, "expected `const NAME = [values]`"));
        }
        if let Some(name) = &assign {
            if function(name).is_some() || name == "const" {
                return Err(p.err(&here, &format!("`{name}` is a reserved name")));
            }
        }
        let e = p.expr()?;
        let t = p.peek().clone();
        if !matches!(t.tok, Tok::Sep | Tok::End) {
            return Err(p.err(&t, &format!("expected an operator or the end of the statement but found {}", Parser::describe(&t.tok))));
        }
        let id = match (e, &assign) {
            (Expr::Lit(t), Some(name)) if !is_const => b.prog.leaf(name, t),
            (Expr::Lit(t), Some(name)) => b.prog.constant(Some(name), t),
            (_, Some(_)) if is_const => return Err(p.err(&here, "a constant must be a literal")),
            (e, _) => b.build(e)?,
        };
        if let Some(name) = &assign {
            b.prog.name(id, name);
            b.vars.insert(name.clone(), id);
        }
        last = Some(id);
    }
    let Some(out) = last else {
        return Err(parse_err(src, 1, 1, "empty program: write an expression, e.g. `x = 0.5; tanh(x)`"));
    };
    b.prog.set_output(out).map_err(|e| match e {
        TeachError::NotScalar(s) => parse_err(
            src,
            last_tok.line,
            last_tok.col,
            &format!("the last statement has shape {s:?}; the loss must be one number (wrap it in sum(...))"),
        ),
        e => e,
    })?;
    Ok(b.prog)
}
