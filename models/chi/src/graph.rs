//! `chi graph EXAMPLE`: draws the tape of a small built-in computation as Graphviz DOT (and SVG /
//! PNG when the `dot` program is installed), for teaching how backprop sees a model.

use chi_autodiff::{dot, Rng, Tensor};
use clap::Args;
use std::path::Path;

/// Options of `chi graph`.
#[derive(Args, Debug, Clone)]
pub struct GraphArgs {
    /// Which example: `mlp`, `lstm-step`, `attention` or `list`.
    pub example: String,
    /// Show values on the nodes.
    #[arg(long)]
    pub values: bool,
    /// Show gradients (back-propagates with the tape retained first).
    #[arg(long)]
    pub grads: bool,
    /// Also print the tape as text (forward ops, then the backward steps in execution order).
    #[arg(long)]
    pub listing: bool,
    /// Also draw the backward graph: one gradient node per op, labelled with its rule and linked
    /// to the forward node it differentiates.
    #[arg(long)]
    pub backward: bool,
}

/// Refuses to replace drawings that `chi graph` did not make: the `.dot` file at `path` is
/// replaced only if it is a tape drawing (its first line is what [`dot::to_dot`] writes), and the
/// `.svg` and `.png` beside it only if they were rendered from such a file.
fn check_ours(path: &Path) -> Result<(), String> {
    let ours = |p: &Path| {
        let mut head = [0u8; 15];
        std::fs::File::open(p).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head)).is_ok() && &head == b"digraph tape {\n"
    };
    let dot_is_ours = ours(path);
    for p in [path.to_path_buf(), path.with_extension("svg"), path.with_extension("png")] {
        if std::fs::symlink_metadata(&p).is_ok() && !dot_is_ours {
            return Err(format!("{} exists and was not drawn by chi graph: move it, or give another --out", p.display()));
        }
    }
    Ok(())
}

/// Names of the built-in examples.
pub const EXAMPLES: &[&str] = &["mlp", "lstm-step", "attention"];

/// Records the example's forward pass on the tape and returns its output.
pub fn build_example(name: &str) -> Result<Tensor<f64>, String> {
    let mut rng = Rng::new(7);
    let p = |shape: &[usize], name: &str, rng: &mut Rng| Tensor::<f64>::randn(shape, rng).mul_scalar(0.5).detach().requires_grad().named(name);
    match name {
        "mlp" => {
            // 2 → 3 → 1 MLP with a squared-error loss.
            let x = Tensor::from_vec(vec![0.5, -1.0], &[1, 2]);
            let (w1, b1) = (p(&[2, 3], "W1", &mut rng), p(&[3], "b1", &mut rng));
            let (w2, b2) = (p(&[3, 1], "W2", &mut rng), p(&[1], "b2", &mut rng));
            let h = x.matmul(&w1).add(&b1).tanh();
            let y = h.matmul(&w2).add(&b2);
            Ok(y.sub_scalar(1.0).square().sum())
        }
        "lstm-step" => {
            // One LSTM step, gates i, f, g, o from one fused matmul ([CAML] Table 1 without peepholes).
            let (n_in, n_h) = (2, 2);
            let x = Tensor::from_vec(vec![0.3, -0.2], &[1, n_in]);
            let h0 = Tensor::from_vec(vec![0.1, 0.0], &[1, n_h]);
            let c0 = Tensor::from_vec(vec![0.0, 0.2], &[1, n_h]);
            let w = p(&[n_in + n_h, 4 * n_h], "W", &mut rng);
            let b = p(&[4 * n_h], "b", &mut rng);
            let z = Tensor::concat(&[x, h0], 1).matmul(&w).add(&b);
            let g = z.chunk(4, 1);
            let (i, f, gg, o) = (g[0].sigmoid(), g[1].sigmoid(), g[2].tanh(), g[3].sigmoid());
            let c = f.mul(&c0).add(&i.mul(&gg));
            let h = o.mul(&c.tanh());
            Ok(h.sum())
        }
        "attention" => {
            // Luong dot-product attention of one query over 3 keys.
            let q = p(&[1, 2], "query", &mut rng);
            let k = p(&[3, 2], "keys", &mut rng);
            let a = q.matmul(&k.t()).softmax(1);
            Ok(a.matmul(&k).sum())
        }
        other => Err(format!("unknown example {other:?}; choose one of {}", EXAMPLES.join(", "))),
    }
}

/// Builds the example, writes `graph-EXAMPLE.dot` (and `.svg`/`.png` if Graphviz is installed)
/// into `out`, and prints where.
pub fn run(args: &GraphArgs, out: &Path) -> Result<(), String> {
    if args.example == "list" {
        println!("{}", EXAMPLES.join("\n"));
        return Ok(());
    }
    let y = build_example(&args.example)?;
    if args.listing {
        print!("{}", dot::tape_listing(&[&y]).map_err(|e| e.to_string())?);
    }
    if args.grads && !args.backward {
        // Leaf gradients for the forward drawing (the backward drawing computes its own).
        y.backward_with(None, chi_autodiff::GradOptions::retain_graph()).map_err(|e| e.to_string())?;
    }
    let opts = dot::DotOptions { values: args.values, grads: args.grads, backward: args.backward, ..Default::default() };
    let text = dot::to_dot(&[&y], &opts).map_err(|e| e.to_string())?;
    if out.exists() && !out.is_dir() {
        return Err(format!("--out {} is a file, not a directory: choose a directory for the drawings", out.display()));
    }
    let path = out.join(format!("graph-{}.dot", args.example));
    check_ours(&path)?;
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    chi_nn::checkpoint::atomic_write(&path, text.as_bytes()).map_err(String::from)?;
    println!("wrote {}", path.display());
    for fmt in ["svg", "png"] {
        let target = path.with_extension(fmt);
        match std::process::Command::new("dot").arg(format!("-T{fmt}")).arg(&path).arg("-o").arg(&target).status() {
            Ok(s) if s.success() => println!("wrote {}", target.display()),
            Ok(s) => eprintln!("dot -T{fmt} failed ({s}); the .dot file is still there"),
            Err(_) => {
                eprintln!("Graphviz `dot` not found: install it (apt-get install graphviz) to render SVG/PNG");
                break;
            }
        }
    }
    Ok(())
}
