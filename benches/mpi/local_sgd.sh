#!/usr/bin/env bash
# Local SGD against synchronous data parallelism, on quality: `mpirun -n 2 chi-mpi train` on
# Fashion-MNIST (MLP, hidden 256, Adam, batch 64 per rank), gradients averaged every step
# ("sync") or parameters averaged every H steps (--local-sgd H), over seeds. Prints each run's
# test accuracy, then mean, sd and a paired t-test of each H against sync over the seeds.
#
#   cargo build --release -p chi-mpi --features mpi && benches/mpi/local_sgd.sh [STEPS] [SEEDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
STEPS="${1:-1500}"; SEEDS="${2:-3}"
OUT="${OUT:-/tmp/chi-local-sgd}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -rf "$OUT"; mkdir -p "$OUT"
for seed in $(seq 1 "$SEEDS"); do
  for h in sync 4 16 64; do
    extra=(); [ "$h" = sync ] || extra=(--local-sgd "$h")
    mpirun -n 2 --oversubscribe target/release/chi-mpi --threads 1 --seed "$seed" train --data fashion-mnist --model mlp --hidden 256 \
      --optim adam --lr 0.001 --batch-size 64 --steps "$STEPS" --eval-every 0 "${extra[@]}" --quiet --no-plots --out "$OUT/$h-$seed" >/dev/null 2>"$OUT/$h-$seed.err"
    echo "$h $seed $(python3 -c "import json;print(json.load(open('$OUT/$h-$seed/summary.json'))['test']['accuracy'])")"
  done
done | tee "$OUT/results.txt"
python3 - "$OUT/results.txt" <<'PY'
import sys, statistics as st, math
rows = [l.split() for l in open(sys.argv[1])]
acc = {}
for h, seed, a in rows:
    acc.setdefault(h, {})[seed] = float(a)
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
for h, by in acc.items():
    v = list(by.values())
    line = f"{h:>5}: mean {st.mean(v):.4f} sd {st.stdev(v) if len(v) > 1 else 0:.4f} n {len(v)}"
    if h != "sync":
        d = [by[s] - acc["sync"][s] for s in by]
        n = len(d)
        if n > 1 and st.stdev(d) > 0:
            t = st.mean(d) / (st.stdev(d) / math.sqrt(n))
            verdict = "different" if abs(t) > T95.get(n - 1, 2.0) else "not distinguishable"
            line += f"; vs sync {st.mean(d):+.4f}, paired t = {t:.2f} (df {n - 1}): {verdict} at 95 %"
    print(line)
PY
