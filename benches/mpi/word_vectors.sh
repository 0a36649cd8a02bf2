#!/usr/bin/env bash
# Word vectors across MPI ranks, on quality and time: `chi embed train` (skip-gram, negative
# sampling, dim 100, window 5, min count 5, default learning rate) on Brown + SOTU + Shakespeare
# in one process (1 thread; and 2 Hogwild threads for the wall time) against `mpirun -n 2`
# (1 thread per rank) averaging the touched rows every N words, for each N in SYNCS, over SEEDS
# seeds, same total epochs. Scores by `chi embed eval` (WordSim353 / SimLex-999 Spearman, 3CosAdd
# analogies over the 30,000 most frequent words). Prints every run, then mean ± sd, n and a
# paired comparison (over seeds) of each 2-rank setting against one process at one thread.
#
#   cargo build --release -p chi-mpi --features mpi && benches/mpi/word_vectors.sh [SEEDS] [EPOCHS]
#   (CHI=path/to/chi-mpi, SYNCS="10000 100000 1000000000000000", OUT=/tmp/chi-mpi-words;
#    MODEL=glove trains GloVe instead (window 10; give EPOCHS, e.g. 15), each rank on half of
#    the co-occurrence entries, SYNCS then being --sync-entries periods;
#    RANK_ALPHA=0.05 gives the 2-rank runs that initial learning rate; HOGWILD2=0 skips the
#    2-thread process; TABLE_ONLY=1 prints the table of an earlier run's $OUT/results.txt)
set -euo pipefail
cd "$(dirname "$0")/../.."
SEEDS="${1:-3}"; EPOCHS="${2:-5}"
CHI="${CHI:-target/release/chi-mpi}"
SYNCS="${SYNCS:-10000 100000 1000000000000000}"
OUT="${OUT:-/tmp/chi-mpi-words}"
RANK_ALPHA="${RANK_ALPHA:-}"; HOGWILD2="${HOGWILD2:-1}"
MODEL="${MODEL:-sgns}"
RANKS_NAME=2ranks; [ "$MODEL" = sgns ] || RANKS_NAME="2ranks-$MODEL"
DATA="${CHI_DATA:-data}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ "${TABLE_ONLY:-0}" = 0 ]; then
rm -rf "$OUT"; mkdir -p "$OUT"
"$CHI" embed corpus --corpus brown+sotu+shakespeare --data "$DATA" --out "$OUT/corpus.txt" >&2
echo "uptime at start: $(uptime)" >&2

# run NAME SEED SYNC COMMAND...: trains (SYNC: --sync-words, or - for one process), evaluates,
# prints "name seed wordsim simlex analogies seconds blocked% rowshare%".
run() {
  local name="$1" seed="$2" sync="$3"; shift 3
  local t0 t1 extra=()
  [ "$sync" = - ] || extra=(--sync-words "$sync")
  [ "$sync" = - ] || [ "$MODEL" != glove ] || extra=(--sync-entries "$sync")
  [ "$MODEL" != glove ] || extra+=(--window 10)
  [ "$sync" = - ] || [ -z "$RANK_ALPHA" ] || extra+=(--alpha "$RANK_ALPHA")
  t0=$(date +%s.%N)
  "$@" --seed "$seed" embed train --model "$MODEL" --corpus "$OUT/corpus.txt" --epochs "$EPOCHS" --quiet --vectors-out "$OUT/$name-$seed.txt" \
    "${extra[@]}" >/dev/null 2>"$OUT/$name-$seed.err"
  t1=$(date +%s.%N)
  "$CHI" embed eval "$OUT/$name-$seed.txt" --testdata "$DATA/gensim" >"$OUT/$name-$seed.eval"
  python3 - "$name" "$seed" "$t0" "$t1" "$OUT/$name-$seed.eval" "$OUT/$name-$seed.err" <<'PY'
import re, sys
name, seed, t0, t1, ev, err = sys.argv[1:]
e = open(ev).read()
ws = re.search(r"WordSim353\s+Spearman (\S+)", e).group(1)
sl = re.search(r"SimLex-999\s+Spearman (\S+)", e).group(1)
an = re.search(r"analogies\s+(\S+) %", e).group(1)
m = re.search(r"\(([\d.]+) % of averaging whole matrices\).*\(([\d.]+) %\) of rank 0's training blocked", open(err).read())
share, blocked = (m.group(1), m.group(2)) if m else ("-", "-")
print(name, seed, ws, sl, an, f"{float(t1) - float(t0):.2f}", blocked, share)
PY
  rm -f "$OUT/$name-$seed.txt"
}

for seed in $(seq 1 "$SEEDS"); do
  run 1proc "$seed" - "$CHI" --threads 1
  [ "$HOGWILD2" = 0 ] || run 1proc-2threads "$seed" - "$CHI" --threads 2
  for n in $SYNCS; do
    run "$RANKS_NAME-$n${RANK_ALPHA:+-alpha$RANK_ALPHA}" "$seed" "$n" mpirun -n 2 --oversubscribe --bind-to none "$CHI" --threads 1
  done
done | tee "$OUT/results.txt"
echo "uptime at end: $(uptime)" >&2
fi

python3 - "$OUT/results.txt" <<'PY'
import sys, math, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
by = {}
for name, seed, ws, sl, an, secs, blocked, share in rows:
    by.setdefault(name, {})[seed] = dict(ws=float(ws), sl=float(sl), an=float(an), secs=float(secs),
                                         blocked=None if blocked == "-" else float(blocked), share=None if share == "-" else float(share))
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
def ms(v, f="{:.3f}"):
    return (f + " ± " + f).format(st.mean(v), st.stdev(v) if len(v) > 1 else 0.0)
def paired(a, b, f="{:+.3f}"):
    d = [a[s] - b[s] for s in a if s in b]
    n = len(d)
    if n < 2:
        return "n < 2"
    m, sd = st.mean(d), st.stdev(d)
    h = T95.get(n - 1, 2.0) * sd / math.sqrt(n)
    verdict = "not distinguishable" if (m - h) <= 0 <= (m + h) else ("higher" if m > 0 else "lower")
    return (f + " [" + f + ", " + f + "] {}").format(m, m - h, m + h, verdict)
print()
print("| setting | n | WordSim353 ρ | SimLex-999 ρ | analogies % | wall s | rank 0 blocked % | rows sent / whole model % |")
print("|---|---|---|---|---|---|---|---|")
for name, r in by.items():
    seeds = sorted(r)
    col = lambda k: [r[s][k] for s in seeds]
    bl = [x for x in col("blocked") if x is not None]
    sh = [x for x in col("share") if x is not None]
    print(f"| {name} | {len(seeds)} | {ms(col('ws'))} | {ms(col('sl'))} | {ms(col('an'), '{:.2f}')} | {ms(col('secs'), '{:.1f}')} | "
          f"{ms(bl, '{:.1f}') if bl else '–'} | {ms(sh, '{:.1f}') if sh else '–'} |")
print()
print("Paired over seeds against 1proc (mean difference [95 % CI], t with n−1 df):")
print("| setting | Δ WordSim353 ρ | Δ SimLex-999 ρ | Δ analogies (points) | Δ wall s |")
print("|---|---|---|---|---|")
base = by["1proc"]
for name, r in by.items():
    if name == "1proc":
        continue
    g = lambda k: ({s: r[s][k] for s in r}, {s: base[s][k] for s in base})
    print(f"| {name} | {paired(*g('ws'))} | {paired(*g('sl'))} | {paired(*g('an'), '{:+.2f}')} | {paired(*g('secs'), '{:+.1f}')} |")
PY
