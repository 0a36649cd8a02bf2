#!/usr/bin/env python3
"""Training throughput of one recurrent layer: chi's RCNN and LSTM vs the same layers in PyTorch.

Usage: .venv-torch/bin/python benches/torch/rcnn_speed.py [--threads 1] [--rounds 5] [--steps 20]
           [--batch 32] [--time 35] [--input 128] [--params 200000]

The layer is the one `chi_rcnn::experiments::layer_training_throughput` times: an RCNN of
Lei (2017) Table 2.2 (b) -- 2-gram, multiplicative, normalised, h[t] = tanh(c_2[t] + b) -- with
lambda constant (0.5) or adaptive on x (lambda_t = sigmoid(W_l x_t + b_l)), or an LSTM, each with
the hidden size chi picks so that its parameter count is closest to --params. In PyTorch the RCNN
is written as a Python loop over time with exactly the same equations (one GEMM for all
projections first, as chi does), and the LSTM is torch.nn.LSTM. Loss: mean square of the
outputs; optimiser: SGD lr 1e-3; random inputs [batch, time, input]; one warm-up step. Each round
runs chi's example binary (`cargo build --release -p chi-rcnn --example rcnn_speed`; the binary is
looked up under $CARGO_TARGET_DIR or ./target) and then PyTorch, for every model, so both see the
same machine load. The table gives median tokens/s (batch x time per second) over rounds, the
range, and the ratio chi / PyTorch (above 1: chi is faster).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
CHI = os.path.join(TARGET, "release", "examples", "rcnn_speed")

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("rcnn_speed: PyTorch is not installed for %s; run scripts/setup-torch.sh" % sys.executable, file=sys.stderr)
    sys.exit(3)


class Rcnn(nn.Module):
    """c1[t] = l*c1[t-1] + (1-l)*W1 x_t;  c2[t] = l*c2[t-1] + (1-l)*(c1[t-1] * W2 x_t);
    h[t] = tanh(c2[t] + b); l constant or sigmoid(W_l x_t + b_l) per unit."""

    def __init__(self, d, h, adaptive, lam=0.5):
        super().__init__()
        a = (3.0 / d) ** 0.5
        self.h, self.adaptive, self.lam = h, adaptive, lam
        width = 3 * h if adaptive else 2 * h
        self.w = nn.Parameter(torch.empty(d, width).uniform_(-a, a))  # [W1 | W2 | W_l]
        self.b_gate = nn.Parameter(torch.zeros(h)) if adaptive else None
        self.bias = nn.Parameter(torch.zeros(h))

    def forward(self, x):
        b, t, d = x.shape
        h = self.h
        proj = (x.reshape(b * t, d) @ self.w).reshape(b, t, -1)
        p1, p2 = proj[..., :h], proj[..., h:2 * h]
        if self.adaptive:
            lam = torch.sigmoid(proj[..., 2 * h:] + self.b_gate)
        c1 = x.new_zeros(b, h)
        c2 = x.new_zeros(b, h)
        outs = []
        for s in range(t):
            l = lam[:, s] if self.adaptive else self.lam
            u2 = c1 * p2[:, s]
            c2 = l * c2 + (1 - l) * u2
            c1 = l * c1 + (1 - l) * p1[:, s]
            outs.append(torch.tanh(c2 + self.bias))
        return torch.stack(outs, 1)


class Lstm(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.lstm = nn.LSTM(d, h, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0]


def torch_run(model, hidden, threads, steps, batch, length, d):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    if model == "lstm":
        m = Lstm(d, hidden)
    else:
        m = Rcnn(d, hidden, adaptive=(model == "rcnn-adaptive"))
    opt = torch.optim.SGD(m.parameters(), lr=1e-3)
    x = torch.randn(batch, length, d)

    def step():
        opt.zero_grad()
        loss = m(x).pow(2).mean()
        loss.backward()
        opt.step()

    step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    secs = time.perf_counter() - start
    return steps * batch * length / secs, sum(p.numel() for p in m.parameters())


def chi_run(model, threads, steps, batch, length, d, params):
    out = subprocess.run([CHI, "--model", model, "--threads", str(threads), "--steps", str(steps), "--batch", str(batch),
                          "--time", str(length), "--input", str(d), "--params", str(params)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--time", type=int, default=35)
    ap.add_argument("--input", type=int, default=128)
    ap.add_argument("--params", type=int, default=200000)
    a = ap.parse_args()
    if not os.path.exists(CHI):
        print("rcnn_speed: %s missing; run cargo build --release -p chi-rcnn --example rcnn_speed" % CHI, file=sys.stderr)
        sys.exit(2)
    models = ["rcnn-const", "rcnn-adaptive", "lstm"]
    chi_tps = {m: [] for m in models}
    torch_tps = {m: [] for m in models}
    info = {}
    for _ in range(a.rounds):
        for m in models:
            r = chi_run(m, a.threads, a.steps, a.batch, a.time, a.input, a.params)
            chi_tps[m].append(r["tokens_per_sec"])
            tps, n = torch_run(m, r["hidden"], a.threads, a.steps, a.batch, a.time, a.input)
            torch_tps[m].append(tps)
            info[m] = (r["hidden"], r["params"], n)
    print("PyTorch %s, %d thread(s), batch %d x time %d, input %d, %d steps per round, %d rounds"
          % (torch.__version__, a.threads, a.batch, a.time, a.input, a.steps, a.rounds))
    print("| layer | hidden | params chi / PyTorch | chi tokens/s (median, range) | PyTorch tokens/s (median, range) | chi / PyTorch |")
    print("|---|---|---|---|---|---|")
    for m in models:
        c, p = chi_tps[m], torch_tps[m]
        h, nc, nt = info[m]
        mc, mp = statistics.median(c), statistics.median(p)
        print("| %s | %d | %d / %d | %.0f (%.0f-%.0f) | %.0f (%.0f-%.0f) | %.2f |" % (m, h, nc, nt, mc, min(c), max(c), mp, min(p), max(p), mc / mp))


if __name__ == "__main__":
    main()
