#!/usr/bin/env python3
"""chi vs PyTorch (CPU), the same workloads side by side on this machine.

Usage: benches/torch/side_by_side.py [--threads 1,2] [--rounds 3] [--reps 5] [--json] [--f64-reference]
                                    [--flush-denormals] [WORKLOAD...]

For each workload and thread count, rounds alternate: chi (the Rust binary
`target/release/side_by_side`, built by `cargo build --release -p chi-benches`) runs `reps` timed
repetitions, then PyTorch does the same in this process; the reported times are medians over all
repetitions of all rounds, and the ratio is chi / PyTorch (below 1: chi is faster). The
environment variable `CHI_SIDE_BY_SIDE` names another chi binary (say, one built from an earlier
commit), so two builds of chi can be set against the same PyTorch in alternating runs. Correctness:
both sides build the same fixed instance (weights and inputs from the closed form
`scale * sin(0.37 i + tag)` in PyTorch's layouts) and report the loss before and after one
optimiser step and the sum / sum of squares of one gradient; the largest relative difference is
printed per workload (target: 1e-4 in f32). With `--f64-reference`, PyTorch also runs each
check in float64 from the same float32 instance, and the largest relative difference of each
float32 side from it is printed (`chi-f64`, `torch-f64`): which side a disagreement comes from.

PyTorch is optional: `scripts/setup-torch.sh` installs the pinned pip release into
`.venv-torch/`; run this script with `.venv-torch/bin/python`. Without PyTorch it says so and exits
with status 3. Nothing in the Rust test suite needs it.

Recurrent workloads (`lstm_*`, `gru_*`) also exist as `NAME_composed`: chi with the cell step
composed of single ops instead of the fused op, against the same PyTorch workload.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHI = os.environ.get("CHI_SIDE_BY_SIDE") or os.path.join(ROOT, "target", "release", "side_by_side")

try:
    import torch
except ImportError:
    print("side_by_side: PyTorch is not installed for %s; run scripts/setup-torch.sh "
          "and use .venv-torch/bin/python" % sys.executable, file=sys.stderr)
    sys.exit(3)

WORKLOADS = ["scalar_chain", "lstm_h128_b16", "lstm_h512_b16", "lstm_h512_b64", "gru_h128_b16", "gru_h512_b16",
             "gru_h512_b64", "ca_rnn_h128_b16", "ca_rnn_h512_b16", "bilstm_h256_b16", "bilstm_h256_b64", "mlp", "textcnn", "sgemm256", "sgemm1024", "gemm_gru_xw", "gemm_gru_xt_dy", "gemm_gru_dy_wt", "softmax_fb", "log_softmax_fb"]


# Element type of the PyTorch side: float32, or float64 for the `--f64-reference` check.
DTYPE = torch.float32


def fill(tag, shape, scale):
    """scale * sin(0.37 i + tag) over a row-major tensor of `shape`, computed in float64 and
    rounded to float32 (then widened again for the float64 reference, so both runs start from the
    same float32 instance)."""
    n = 1
    for s in shape:
        n *= s
    i = torch.arange(n, dtype=torch.float64)
    return (scale * torch.sin(0.37 * i + tag)).to(torch.float32).to(DTYPE).reshape(shape)


def sgd(params, lr):
    with torch.no_grad():
        for p in params:
            if p.grad is not None:
                p -= lr * p.grad


def grad_stats(p):
    g = p.grad.double()
    return float(g.sum()), float((g * g).sum())


def training(build, loss, probe):
    """A training workload's `step` (forward, backward, SGD) and `check` (loss before and after one
    step on a fresh instance, sum and sum of squares of one gradient): `build()` returns
    `(model, params)`, `loss(model)` the loss, `probe(model)` the parameter whose gradient is
    compared."""
    model, params = build()

    def step():
        for p in params:
            p.grad = None
        l = loss(model)
        l.backward()
        sgd(params, 0.01)
        return float(l.detach())

    def check():
        m, ps = build()
        l = loss(m)
        l0 = float(l.detach())
        l.backward()
        gs, gq = grad_stats(probe(m))
        sgd(ps, 0.01)
        with torch.no_grad():
            l1 = float(loss(m))
        return [l0, l1, gs, gq]

    return step, check, 0


def single_bias(cell, sfx, hidden, gru):
    """Makes a PyTorch LSTM or GRU layer train the same parameters as chi's cell, which has one
    bias where PyTorch has two (`bias_ih + bias_hh`, both stepped by SGD with the same gradient,
    so their sum would move twice as far): `bias_hh` stays at zero. For the GRU only its `r, z`
    blocks stay; its `n` block is chi's `b_hn` (inside the reset product) and trains."""
    b = getattr(cell, "bias_hh_l0" + sfx)
    if gru:
        mask = torch.cat([torch.zeros(2 * hidden), torch.ones(hidden)])
        b.register_hook(lambda g: g * mask)
    else:
        b.requires_grad_(False)


def lstm(hidden, inp, batch, steps, gru=False):
    """LSTM (or, with `gru`, GRU) over `steps` steps, linear head on the last state, MSE."""
    g = 3 if gru else 4

    def build():
        s = 1.0 / math.sqrt(hidden)
        cell = (torch.nn.GRU if gru else torch.nn.LSTM)(inp, hidden, batch_first=True)
        head = torch.nn.Linear(hidden, 1)
        with torch.no_grad():
            cell.weight_ih_l0.copy_(fill(1.0, (g * hidden, inp), s))
            cell.weight_hh_l0.copy_(fill(2.0, (g * hidden, hidden), s))
            cell.bias_ih_l0.copy_(fill(3.0, (g * hidden,), s))
            cell.bias_hh_l0.zero_()
            head.weight.copy_(fill(4.0, (1, hidden), s))
            head.bias.copy_(fill(5.0, (1,), s))
        single_bias(cell, "", hidden, gru)
        x = fill(6.0, (batch, steps, inp), 1.0)
        y = fill(7.0, (batch, 1), 1.0)
        params = list(cell.parameters()) + list(head.parameters())
        return (cell, head, x, y), params

    def loss(m):
        cell, head, x, y = m
        _, h = cell(x)
        if not gru:
            h = h[0]
        return torch.nn.functional.mse_loss(head(h[0]), y)

    return training(build, loss, lambda m: m[0].weight_ih_l0)


def ca_rnn(hidden, inp, batch, steps):
    """CA-RNN ("Context Aware Machine Learning", Eqs. 34 and 36; every activation tanh, vector
    peephole) written from its equations with the algorithm of chi's fused op: the input terms
    of all steps in one matmul, then per step one matmul over [y, c] and one over the new cell
    state. Parameters are chi's stacked ones, in chi's layout, parameter k = fill(10 + k)."""
    n, dx = hidden, inp
    shapes = [("w_f", (2 * n + dx,)), ("b_f", (1,)), ("w_v", (dx + n, n)), ("p_v", (n,)), ("b_v", (n,)),
              ("w_c", (dx + n, n)), ("b_c", (n,)), ("w_o", (3 * n + dx,)), ("b_o", (1,)),
              ("w_ov", (3 * n + dx, n)), ("b_ov", (n,)), ("w_oc", (2 * n + dx, n)), ("b_oc", (n,))]

    def build():
        s = 1.0 / math.sqrt(hidden)
        p = {k: fill(10.0 + i, shp, s).requires_grad_() for i, (k, shp) in enumerate(shapes)}
        head = torch.nn.Linear(hidden, 1)
        with torch.no_grad():
            head.weight.copy_(fill(4.0, (1, hidden), s))
            head.bias.copy_(fill(5.0, (1,), s))
        x = fill(6.0, (batch, steps, inp), 1.0)
        y = fill(7.0, (batch, 1), 1.0)
        return (p, head, x, y), list(p.values()) + list(head.parameters())

    def operands(p):
        # Row layouts: w_f over [c_prev, x, y]; w_v, w_c over [x, y]; w_o, w_ov over
        # [c_t, c_prev, x, y]; w_oc over [c_prev, x, y]. Column blocks f, v, c', o, vo, co.
        def rows(k, a, m):
            return p[k][a:a + m]

        def col(k, a, m):
            return p[k][a:a + m].reshape(m, 1)
        w_x = torch.cat([col("w_f", n, dx), rows("w_v", 0, dx), rows("w_c", 0, dx), col("w_o", 2 * n, dx),
                         rows("w_ov", 2 * n, dx), rows("w_oc", n, dx)], 1)
        bias = torch.cat([p[k] for k in ("b_f", "b_v", "b_c", "b_o", "b_ov", "b_oc")])
        z = torch.zeros(n, n)
        w_r = torch.cat([torch.cat([col("w_f", n + dx, n), rows("w_v", dx, n), rows("w_c", dx, n), col("w_o", 2 * n + dx, n),
                                    rows("w_ov", 2 * n + dx, n), rows("w_oc", n + dx, n)], 1),
                         torch.cat([col("w_f", 0, n), z, z, col("w_o", n, n), rows("w_ov", n, n), rows("w_oc", 0, n)], 1)], 0)
        w_z = torch.cat([col("w_o", 0, n), rows("w_ov", 0, n)], 1)
        return w_x, bias, w_r, w_z

    def loss(m):
        p, head, x, y = m
        w_x, bias, w_r, w_z = operands(p)
        xp = x @ w_x + bias
        yv = torch.zeros(batch, n)
        c = torch.zeros(batch, n)
        for t in range(steps):
            a = xp[:, t] + torch.cat([yv, c], 1) @ w_r
            f = torch.sigmoid(a[:, :1])
            v = torch.tanh(a[:, 1:n + 1] + c * p["p_v"])
            cp = torch.tanh(a[:, n + 1:2 * n + 1])
            c = cp + f * (v - cp)
            zz = c @ w_z
            o = torch.sigmoid(a[:, 2 * n + 1:2 * n + 2] + zz[:, :1])
            vo = torch.tanh(a[:, 2 * n + 2:3 * n + 2] + zz[:, 1:])
            co = torch.tanh(a[:, 3 * n + 2:])
            yv = co + o * (vo - co)
        return torch.nn.functional.mse_loss(head(yv), y)

    return training(build, loss, lambda m: m[0]["w_v"])


def bilstm(hidden, inp, batch, steps):
    """Bidirectional LSTM over `steps` steps, linear head on both final states, MSE."""

    def build():
        s = 1.0 / math.sqrt(hidden)
        cell = torch.nn.LSTM(inp, hidden, batch_first=True, bidirectional=True)
        head = torch.nn.Linear(2 * hidden, 1)
        with torch.no_grad():
            for sfx, tag in (("", 1.0), ("_reverse", 11.0)):
                getattr(cell, "weight_ih_l0" + sfx).copy_(fill(tag, (4 * hidden, inp), s))
                getattr(cell, "weight_hh_l0" + sfx).copy_(fill(tag + 1.0, (4 * hidden, hidden), s))
                getattr(cell, "bias_ih_l0" + sfx).copy_(fill(tag + 2.0, (4 * hidden,), s))
                getattr(cell, "bias_hh_l0" + sfx).zero_()
            head.weight.copy_(fill(4.0, (1, 2 * hidden), s))
            head.bias.copy_(fill(5.0, (1,), s))
        for sfx in ("", "_reverse"):
            single_bias(cell, sfx, hidden, False)
        x = fill(6.0, (batch, steps, inp), 1.0)
        y = fill(7.0, (batch, 1), 1.0)
        params = list(cell.parameters()) + list(head.parameters())
        return (cell, head, x, y), params

    def loss(m):
        cell, head, x, y = m
        _, (h, _) = cell(x)
        return torch.nn.functional.mse_loss(head(torch.cat([h[0], h[1]], 1)), y)

    return training(build, loss, lambda m: m[0].weight_ih_l0)


def mlp():
    def build():
        l1 = torch.nn.Linear(784, 1024)
        l2 = torch.nn.Linear(1024, 10)
        with torch.no_grad():
            l1.weight.copy_(fill(1.0, (1024, 784), 1.0 / 28.0))
            l1.bias.copy_(fill(2.0, (1024,), 0.03))
            l2.weight.copy_(fill(3.0, (10, 1024), 1.0 / 32.0))
            l2.bias.copy_(fill(4.0, (10,), 0.03))
        x = fill(5.0, (128, 784), 1.0)
        y = torch.arange(128) % 10
        return (l1, l2, x, y), list(l1.parameters()) + list(l2.parameters())

    def loss(m):
        l1, l2, x, y = m
        return torch.nn.functional.cross_entropy(l2(torch.relu(l1(x))), y)

    return training(build, loss, lambda m: m[0].weight)


def textcnn():
    V = 20000  # as the ANCHORS.md baseline (vocab 20k, dense embedding gradient)

    def build():
        emb = torch.nn.Embedding(V, 100)
        convs = [torch.nn.Conv1d(100, 100, h) for h in (3, 4, 5)]
        fc = torch.nn.Linear(300, 2)
        with torch.no_grad():
            emb.weight.copy_(fill(1.0, (V, 100), 1.0))
            for i, c in enumerate(convs):
                c.weight.copy_(fill(2.0 + i, (100, 100, c.kernel_size[0]), 0.05))
                c.bias.copy_(fill(5.0 + i, (100,), 0.05))
            fc.weight.copy_(fill(8.0, (2, 300), 0.05))
            fc.bias.copy_(fill(9.0, (2,), 0.05))
        ids = (torch.arange(50 * 60) * 7919 % V).reshape(50, 60)
        y = torch.arange(50) % 2
        params = list(emb.parameters()) + [p for c in convs for p in c.parameters()] + list(fc.parameters())
        return (emb, convs, fc, ids, y), params

    def loss(m):
        emb, convs, fc, ids, y = m
        x = emb(ids).transpose(1, 2)  # [B, emb, len]
        pooled = [torch.relu(c(x)).max(dim=2).values for c in convs]
        return torch.nn.functional.cross_entropy(fc(torch.cat(pooled, 1)), y)

    return training(build, loss, lambda m: m[1][0].weight)


def scalar_chain():
    n = 1000

    def run():
        x = torch.tensor(0.5, requires_grad=True)
        y = x
        for _ in range(n):
            y = torch.tanh(y * 1.01 + 0.1)
        v = float(y)
        y.backward()
        return v, float(x.grad)

    def check():
        v, g = run()
        return [v, v, g, g * g]

    return (lambda: run()[0]), check, 3 * n


def sgemm(n):
    a = fill(1.0, (n, n), 1.0)
    b = fill(2.0, (n, n), 1.0)

    def check():
        c = (a @ b).double()
        # sum |c| and sum c^2 (no cancellation, unlike sum c).
        q = float((c * c).sum())
        return [q, q, float(c.abs().sum()), q]

    return (lambda: float((a @ b)[0, 0])), check, 0


def gemm_shape(m, k, n, ta, tb):
    # As chi's side: A (B) is the transposed view of a row-major [k, m] ([n, k]) tensor when ta (tb).
    a = fill(1.0, (k, m), 1.0).t() if ta else fill(1.0, (m, k), 1.0)
    b = fill(2.0, (n, k), 1.0).t() if tb else fill(2.0, (k, n), 1.0)
    c = torch.empty(m, n, dtype=DTYPE)

    def check():
        r = (a @ b).double()
        q = float((r * r).sum())
        return [q, q, float(r.abs().sum()), q]

    def step():
        torch.mm(a, b, out=c)
        return float(c[0, 0])

    return step, check, 0


def softmax_fb(log):
    # Inputs are made once (outside the timed step): the step is forward + backward only.
    x0 = fill(1.0, (4096, 1024), 3.0)
    w = fill(2.0, (4096, 1024), 1.0)

    def run():
        x = x0.detach().requires_grad_(True)
        y = torch.log_softmax(x, 1) if log else torch.softmax(x, 1)
        l = (y * w).sum()
        v = float(l)
        l.backward()
        g = x.grad.double()
        # sum |g| rather than sum g: a softmax gradient sums to zero along each row.
        return v, float(g.abs().sum()), float((g * g).sum())

    def check():
        v, s, q = run()
        return [v, v, s, q]

    return (lambda: run()[0]), check, 0


def workload(name):
    # `NAME_composed` is chi's unfused cell step; PyTorch runs the same workload.
    if name.endswith("_composed"):
        name = name[: -len("_composed")]
    return {
        "scalar_chain": scalar_chain,
        "lstm_h128_b16": lambda: lstm(128, 64, 16, 35),
        "lstm_h512_b16": lambda: lstm(512, 512, 16, 25),
        "lstm_h512_b64": lambda: lstm(512, 512, 64, 25),
        "gru_h128_b16": lambda: lstm(128, 64, 16, 35, gru=True),
        "gru_h512_b16": lambda: lstm(512, 512, 16, 25, gru=True),
        "gru_h512_b64": lambda: lstm(512, 512, 64, 25, gru=True),
        "ca_rnn_h128_b16": lambda: ca_rnn(128, 64, 16, 35),
        "ca_rnn_h512_b16": lambda: ca_rnn(512, 512, 16, 25),
        "bilstm_h256_b16": lambda: bilstm(256, 128, 16, 35),
        "bilstm_h256_b64": lambda: bilstm(256, 128, 64, 35),
        "mlp": mlp,
        "textcnn": textcnn,
        "sgemm256": lambda: sgemm(256),
        "sgemm1024": lambda: sgemm(1024),
        "gemm_gru_xw": lambda: gemm_shape(1600, 512, 1536, False, False),
        "gemm_gru_xt_dy": lambda: gemm_shape(512, 1600, 1536, True, False),
        "gemm_gru_dy_wt": lambda: gemm_shape(1600, 1536, 512, False, True),
        "softmax_fb": lambda: softmax_fb(False),
        "log_softmax_fb": lambda: softmax_fb(True),
    }[name]()


def torch_side(name, threads, reps, flush_denormals=False):
    torch.set_num_threads(threads)
    torch.set_flush_denormal(flush_denormals)
    step, check, ops = workload(name)
    c = check()
    for _ in range(2):
        step()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        step()
        times.append((time.perf_counter() - t) * 1e3)
    return {"times_ms": times, "check": c, "ops": ops}


def chi_side(name, threads, reps, flush_denormals=False):
    flags = ["--flush-denormals"] if flush_denormals else []
    out = subprocess.run([CHI, name, "--threads", str(threads), "--reps", str(reps)] + flags, check=True, capture_output=True, text=True)
    d = json.loads(out.stdout.strip().splitlines()[-1])
    return {"times_ms": d["times_ms"], "check": [d["loss0"], d["loss1"], d["grad_sum"], d["grad_sumsq"]], "ops": d["ops"]}


def f64_check(name):
    """The PyTorch check of workload `name` in float64 on the same float32 instance: the reference
    that both float32 sides are measured against with `--f64-reference`."""
    global DTYPE
    prev = torch.get_default_dtype()
    DTYPE = torch.float64
    torch.set_default_dtype(torch.float64)
    try:
        return workload(name)[1]()
    finally:
        DTYPE = torch.float32
        torch.set_default_dtype(prev)


def rel(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-30)


def header(f64_reference):
    h = "%-16s %3s %12s %12s %8s %10s" % ("workload", "thr", "chi ms", "torch ms", "ratio", "max reldiff")
    return h + (" %10s %10s" % ("chi-f64", "torch-f64") if f64_reference else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workloads", nargs="*", default=WORKLOADS)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--f64-reference", action="store_true",
                    help="also run each workload's check in float64 with PyTorch and report how far "
                         "each float32 side is from it (largest relative difference)")
    ap.add_argument("--flush-denormals", action="store_true",
                    help="both sides treat subnormal floats as zero (chi_kernels::fpmode::set_flush_denormals, "
                         "torch.set_flush_denormal): a workload whose training diverges (the MLP's loss rises "
                         "step after step) otherwise also measures each CPU's cost of subnormal operands")
    ap.add_argument("--no-header", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if not os.path.exists(CHI):
        print("side_by_side: %s missing; run `cargo build --release -p chi-benches --bin side_by_side`" % CHI, file=sys.stderr)
        sys.exit(2)
    counts = [int(t) for t in a.threads.split(",")]
    if len(counts) > 1 or os.environ.get("OMP_NUM_THREADS") != str(counts[0]):
        # PyTorch's OpenMP pool and its BLAS (OpenBLAS spawns its own threads) read their sizes
        # from the environment at load time: run each thread count in a fresh process with
        # OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = MKL_NUM_THREADS = N, so both libraries use
        # exactly N threads.
        if not a.json:
            print("PyTorch %s, chi %s" % (torch.__version__, CHI), flush=True)
            print(header(a.f64_reference), flush=True)
        for n in counts:
            env = dict(os.environ, OMP_NUM_THREADS=str(n), OPENBLAS_NUM_THREADS=str(n), MKL_NUM_THREADS=str(n))
            args = [sys.executable, os.path.abspath(__file__), "--threads", str(n), "--rounds", str(a.rounds), "--reps", str(a.reps)]
            args += (["--json"] if a.json else []) + (["--f64-reference"] if a.f64_reference else [])
            args += (["--flush-denormals"] if a.flush_denormals else []) + ["--no-header"] + a.workloads
            subprocess.run(args, env=env, check=True)
        return
    if not a.json and not a.no_header:
        print(header(a.f64_reference))
    for threads in counts:
        for name in a.workloads:
            ct, tt = [], []
            for _ in range(a.rounds):
                c = chi_side(name, threads, a.reps, a.flush_denormals)
                t = torch_side(name, threads, a.reps, a.flush_denormals)
                ct += c["times_ms"]
                tt += t["times_ms"]
            cm, tm = statistics.median(ct), statistics.median(tt)
            diff = max(rel(x, y) for x, y in zip(c["check"], t["check"]))
            row = {"workload": name, "threads": threads, "chi_ms": cm, "torch_ms": tm, "ratio": cm / tm,
                   "max_rel_diff": diff, "chi_check": c["check"], "torch_check": t["check"]}
            if a.f64_reference:
                ref = f64_check(name)
                row["f64_check"] = ref
                row["chi_vs_f64"] = max(rel(x, y) for x, y in zip(c["check"], ref))
                row["torch_vs_f64"] = max(rel(x, y) for x, y in zip(t["check"], ref))
            if c["ops"]:
                row["chi_ns_per_op"] = cm * 1e6 / c["ops"]
                row["torch_ns_per_op"] = tm * 1e6 / t["ops"]
            if a.json:
                print(json.dumps(row), flush=True)
            else:
                line = "%-16s %3d %12.3f %12.3f %8.3f %10.2e" % (name, threads, cm, tm, cm / tm, diff)
                if a.f64_reference:
                    line += " %10.2e %10.2e" % (row["chi_vs_f64"], row["torch_vs_f64"])
                print(line, flush=True)


if __name__ == "__main__":
    main()
