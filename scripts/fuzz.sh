#!/usr/bin/env bash
# Runs every cargo-fuzz target for a bounded time (libFuzzer's -max_total_time), then reports
# executions and crashes per target. Exit status 1 if any target crashed (the crashing input is
# in fuzz/artifacts/<target>/; copy it to fuzz/regressions/<target>/ once fixed, so the normal
# test suite replays it).
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]      (default 30 s, all targets)
#
# cargo-fuzz passes nightly-only flags (-Zsanitizer=address, ...) to rustc; only the stable
# toolchain is installed here, so we set RUSTC_BOOTSTRAP=1, which lets stable rustc accept
# them. cargo-fuzz itself is installed on first use (`cargo install cargo-fuzz --locked`).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-30}"
shift || true
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz (cargo install cargo-fuzz --locked)"
    cargo install cargo-fuzz --locked
fi

if [ $# -gt 0 ]; then
    TARGETS=("$@")
else
    mapfile -t TARGETS < <(cargo fuzz list)
fi

# Four codegen units, as the workspace's release profile: cargo-fuzz's default of one compiled the
# `chi` crate on one core and made the build take 886 s instead of 735 s on a 2-core Zen 3, for
# 10–25 % more executions per second (csv, op_graph_grad, checkpoint, 10 s each). `run` must
# get the same flags, or it rebuilds everything.
BUILD_FLAGS=(-O --codegen-units 4)
echo "fuzz: building ${#TARGETS[@]} targets (release, address sanitizer)"
cargo fuzz build "${BUILD_FLAGS[@]}"

# Targets run side by side, one per core (CHI_FUZZ_JOBS overrides): libFuzzer is single-threaded,
# so N cores give every target its full time in 1/N of the wall time.
JOBS="${CHI_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}"
run_target() {
    local t="$1" log="fuzz/artifacts/$1/last-run.log"
    # Seeds: the saved regressions of this target (if any) start the corpus.
    local seeds=()
    [ -d "fuzz/regressions/$t" ] && seeds+=("fuzz/regressions/$t")
    if cargo fuzz run "${BUILD_FLAGS[@]}" "$t" "fuzz/corpus/$t" "${seeds[@]}" -- \
        -max_total_time="$SECS" -rss_limit_mb=2048 -max_len=65536 -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
        echo 0 >"fuzz/artifacts/$t/last-run.status"
    else
        echo 1 >"fuzz/artifacts/$t/last-run.status"
    fi
}
echo "fuzz: ${SECS} s per target, $JOBS at a time"
for t in "${TARGETS[@]}"; do
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    rm -f "fuzz/artifacts/$t/last-run.status"
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
    run_target "$t" &
done
wait

status=0
total=0
printf '%-16s %12s %8s\n' target executions crashes
for t in "${TARGETS[@]}"; do
    log="fuzz/artifacts/$t/last-run.log"
    crashes=$(cat "fuzz/artifacts/$t/last-run.status" 2>/dev/null || echo 1)
    [ "$crashes" != 0 ] && status=1
    execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1 || true)
    execs=${execs:-0}
    total=$((total + execs))
    printf '%-16s %12s %8s\n' "$t" "$execs" "$crashes"
    if [ "$crashes" != 0 ]; then
        echo "fuzz: $t crashed; last lines of $log:"
        tail -30 "$log"
    fi
done
echo "fuzz: $total executions in total"
exit $status
