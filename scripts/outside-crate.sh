#!/usr/bin/env bash
# Builds models/nn/examples/outside-crate — a crate outside the workspace that depends on chi's
# library crates by path, as a user's project would (no .cargo/config.toml, no target-feature
# flags) — trains its MLP on the shipped CSV, then times the same elementwise forward + backward
# workload from there and from inside the workspace, alternating, and prints the ratio.
#   scripts/outside-crate.sh [ROUNDS]      (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-5}"
OUT=models/nn/examples/outside-crate
echo "== building the outside crate (its own target dir: $OUT/target)"
cargo build --release --manifest-path "$OUT/Cargo.toml" -q
cargo build --release -p chi-autodiff --example elementwise_speed -q
"$OUT/target/release/chi-outside-example"
python3 - "$ROUNDS" "$OUT/target/release/chi-outside-example" target/release/examples/elementwise_speed <<'PY'
import json, statistics, subprocess, sys
rounds, outside, inside = int(sys.argv[1]), sys.argv[2], sys.argv[3]
o, i = [], []
for _ in range(rounds):
    o.append(json.loads(subprocess.check_output([outside, "--elementwise"]))); i.append(json.loads(subprocess.check_output([inside])))
mo, mi = statistics.median(x["seconds"] for x in o), statistics.median(x["seconds"] for x in i)
print("outside the workspace: %.3f ms (%s); inside: %.3f ms (%s); outside / inside = %.3f (median of %d alternating rounds, best of 30 passes each)"
      % (mo * 1e3, o[0]["simd"], mi * 1e3, i[0]["simd"], mo / mi, rounds))
PY
