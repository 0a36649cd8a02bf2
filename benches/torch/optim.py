#!/usr/bin/env python3
"""PyTorch's optimisers on the workload of chi's `optim` criterion bench (benches/benches/optim.rs).

One `step()` over a 1024 x 1024 float32 parameter with a dense gradient, for SGD, SGD with
momentum 0.9, Adagrad, centred RMSProp with momentum 0.9, Adam and AdamW, each with
`foreach=False` (PyTorch's default for CPU tensors: one loop per parameter) and `foreach=True`,
and Adam/AdamW with `fused=True`, on THREADS intra-op threads (default 1; chi's bench runs on
the pool's threads, `RAYON_NUM_THREADS=1` for one).

Usage: .venv-torch/bin/python benches/torch/optim.py [THREADS]   (after scripts/setup-torch.sh)
Prints the median of 10 samples of >= 0.1 s each, in ms per step, with min and max.
"""
import statistics
import sys
import time

import torch


def bench(name, make):
    p = torch.nn.Parameter(torch.randn(1024, 1024) * 0.1)
    p.grad = torch.randn(1024, 1024) * 0.01
    opt = make([p])
    for _ in range(5):
        opt.step()
    ts = []
    for _ in range(10):
        t = time.perf_counter()
        r = 0
        while time.perf_counter() - t < 0.1:
            opt.step()
            r += 1
        ts.append((time.perf_counter() - t) / r * 1e3)
    print(f"{name}: median {statistics.median(ts):.3f} ms (min {min(ts):.3f}, max {max(ts):.3f})")


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    torch.set_num_threads(threads)
    print("PyTorch", torch.__version__, "threads", threads)
    for foreach in [False, True]:
        print("foreach", foreach)
        bench("sgd", lambda ps: torch.optim.SGD(ps, lr=0.01, foreach=foreach))
        bench("sgd_momentum", lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9, foreach=foreach))
        bench("adagrad", lambda ps: torch.optim.Adagrad(ps, lr=0.01, foreach=foreach))
        bench("rmsprop_centred_momentum", lambda ps: torch.optim.RMSprop(ps, lr=0.01, momentum=0.9, centered=True, foreach=foreach))
        bench("adam", lambda ps: torch.optim.Adam(ps, lr=1e-3, foreach=foreach))
        bench("adamw", lambda ps: torch.optim.AdamW(ps, lr=1e-3, foreach=foreach))
    print("fused")
    bench("adam", lambda ps: torch.optim.Adam(ps, lr=1e-3, fused=True))
    bench("adamw", lambda ps: torch.optim.AdamW(ps, lr=1e-3, fused=True))


if __name__ == "__main__":
    main()
