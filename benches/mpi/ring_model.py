#!/usr/bin/env python3
"""Predicted synchronous data-parallel steps per second against the number of workers K.

Cost of one step on every worker (no overlap of communication with compute; with perfect overlap
the step is max(compute, communication) instead, also printed):

  compute                      measured: chi's seq2seq training step, one worker (--compute-ms)
  dense gradients, ring        2 (K-1)/K * D / B   +   2 (K-1) * alpha
    all-reduce                 D = 4 bytes * dense parameters
  embedding rows, ring         (K-1) * R / B       +   (K-1) * alpha
    all-gather                 R = rows touched per worker per step * (4 * dim + 8) bytes
  B = link bandwidth (bytes/s), alpha = per-message latency

Usage (the BENCHMARKS.md table):
  cargo build --release -p chi-seq2seq --example seq2seq_speed
  target/release/examples/seq2seq_speed --steps 20           # -> ms_per_step, params, embedding_params
  benches/mpi/ring_model.py --compute-ms MS --dense-params P [--bench-json dist-bench.json]
"""
import argparse, json


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compute-ms", type=float, required=True, help="one worker's step time")
    ap.add_argument("--dense-params", type=int, required=True)
    ap.add_argument("--rows", type=int, default=16 * 20 * 2, help="embedding rows touched per worker per step (batch x length x tables)")
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--gbit", type=float, default=10.0, help="link bandwidth, Gbit/s")
    ap.add_argument("--alpha-us", type=float, default=25.0, help="per-message latency, microseconds")
    ap.add_argument("--workers", default="1,2,4,8,16,32,64,100")
    ap.add_argument("--bench-json", help="chi dist bench --json output: also print the loopback fit of alpha and bandwidth")
    a = ap.parse_args()
    if a.bench_json:
        rows = json.load(open(a.bench_json))["rows"]
        small = min(rows, key=lambda r: r["bytes"])
        big = max(rows, key=lambda r: r["bytes"])
        print(f"loopback (this machine, {json.load(open(a.bench_json))['ranks']} ranks): latency {small['us']:.1f} us at {small['bytes']} B, "
              f"bus bandwidth {big['busbw_gbps']:.2f} GB/s at {big['bytes']} B")
    bw = a.gbit * 1e9 / 8
    alpha = a.alpha_us * 1e-6
    dense = 4 * a.dense_params
    sparse = a.rows * (4 * a.dim + 8)
    print(f"dense gradients {dense / 1e6:.2f} MB, rows {sparse / 1e3:.0f} kB per worker; link {a.gbit:g} Gbit/s, alpha {a.alpha_us:g} us; compute {a.compute_ms:g} ms")
    print(f"{'K':>4} {'allreduce ms':>13} {'allgather ms':>13} {'step ms':>9} {'steps/s':>8} {'steps/s overlapped':>19} {'examples/s':>11}")
    for k in [int(x) for x in a.workers.split(",")]:
        ar = 0.0 if k == 1 else 2 * (k - 1) / k * dense / bw + 2 * (k - 1) * alpha
        ag = 0.0 if k == 1 else (k - 1) * sparse / bw + (k - 1) * alpha
        comm = (ar + ag) * 1e3
        step = a.compute_ms + comm
        over = max(a.compute_ms, comm)
        print(f"{k:>4} {ar * 1e3:>13.2f} {ag * 1e3:>13.2f} {step:>9.1f} {1e3 / step:>8.2f} {1e3 / over:>19.2f} {16 * k * 1e3 / step:>11.0f}")


if __name__ == "__main__":
    main()
