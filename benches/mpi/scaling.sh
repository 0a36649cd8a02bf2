#!/usr/bin/env bash
# Data-parallel `chi train` on this machine: one process with the global batch against
# `mpirun -n 2` with half of it per rank, every process on one kernel thread, for the MLP, LSTM and
# text CNN workloads. Prints ms per step of each and rank 0's share of time blocked in
# communication (dist.json). Needs chi-mpi (`-p chi-mpi --features mpi`) (scripts/install-mpi.sh) and,
# for the MLP, Fashion-MNIST in $CHI_DATA (scripts/fetch-data.sh).
#
#   cargo build --release -p chi-mpi --features mpi && benches/mpi/scaling.sh [STEPS]
set -euo pipefail
cd "$(dirname "$0")/../.."
CHI="${CHI:-target/release/chi-mpi}"
STEPS="${1:-200}"
OUT="${OUT:-/tmp/chi-mpi-scaling}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -rf "$OUT"; mkdir -p "$OUT"
reviews=models/chi/examples/data/reviews
workloads=(
  "mlp|--data fashion-mnist --model mlp --hidden 1024|64"
  "lstm|--data $reviews --model lstm --hidden 128 --embed 64 --max-len 60|16"
  "text-cnn|--data $reviews --model text-cnn --embed 64 --max-len 60|25"
)
printf '%-9s %-34s %10s %12s\n' workload run ms/step comm-share
for w in "${workloads[@]}"; do
  IFS='|' read -r name args b <<<"$w"
  for variant in one two two-no-overlap; do
    d="$OUT/$name-$variant"
    case $variant in
      one) cmd=("$CHI" --threads 1 train $args --batch-size $((2*b)));;
      two) cmd=(mpirun -n 2 --bind-to core "$CHI" --threads 1 train $args --batch-size "$b");;
      two-no-overlap) cmd=(mpirun -n 2 --bind-to core "$CHI" --threads 1 train $args --batch-size "$b" --no-overlap);;
    esac
    # The training loop's own time per step, from the log (examples/s since the loop started,
    # one row per step): steps 6 to the last, so start-up — data loading, and rank 0 waiting for
    # the other ranks to load theirs at the first broadcast — is not timed.
    "${cmd[@]}" --steps "$STEPS" --eval-every 0 --log-format jsonl --quiet --no-plots --out "$d" >/dev/null 2>"$d.err"
    ms=$(python3 - "$d/log.jsonl" $((2*b)) <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
gb = int(sys.argv[2])
t = {r["step"]: r["step"] * gb / r["examples_per_sec"] for r in rows}
last = max(t)
print(f"{1e3 * (t[last] - t[5]) / (last - 5):.2f}")
PY
)
    share=$(python3 -c "import json,os;p='$d/dist.json';print(f\"{100*json.load(open(p))['comm_share']:.1f} %\" if os.path.exists(p) else '-')")
    printf '%-9s %-34s %10s %12s\n' "$name" "$variant (batch $([ $variant = one ] && echo $((2*b)) || echo "2×$b"))" "$ms" "$share"
  done
done
