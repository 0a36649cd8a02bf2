#!/usr/bin/env bash
# Runs every cargo-fuzz target for a bounded time (libFuzzer's -max_total_time), then reports
# executions and crashes per target. Exit status 1 if any target crashed (the crashing input is
# in fuzz/artifacts/<target>/; copy it to fuzz/regressions/<target>/ once fixed, so the normal
# test suite replays it).
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]      (default 30 s, all targets)
#
# The build is cargo-fuzz's (`cargo fuzz build -O --codegen-units 4`, cargo-fuzz 0.13) done with
# plain cargo, so CI does not spend two minutes on `cargo install cargo-fuzz`: the same rustc
# flags (coverage instrumentation, address sanitizer, `--cfg fuzzing`), the same target
# directory and binaries, and the same ASAN_OPTIONS when running. The flags are nightly-only;
# only the stable toolchain is installed here, so RUSTC_BOOTSTRAP=1 lets stable rustc accept
# them. Four codegen units, as the workspace's release profile: cargo-fuzz's default of one gives
# 10–25 % more executions per second but compiles the `chi` crate on one core (886 s instead of
# 735 s for the whole build on a 2-core Zen 3). Line tables only and optimisation
# level 1 come from fuzz/Cargo.toml (its comment has the measurements).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-30}"
shift || true
export RUSTC_BOOTSTRAP=1

if [ $# -gt 0 ]; then
    TARGETS=("$@")
else
    mapfile -t TARGETS < <(sed -n '/^\[\[bin\]\]/,/^name/s/^name *= *"\(.*\)"/\1/p' fuzz/Cargo.toml)
fi
[ ${#TARGETS[@]} -gt 0 ] || { echo "fuzz: no targets found in fuzz/Cargo.toml" >&2; exit 2; }

TRIPLE="$(rustc -vV | sed -n 's/^host: //p')"
FUZZ_RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
FUZZ_RUSTFLAGS+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table"
FUZZ_RUSTFLAGS+=" -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
FUZZ_RUSTFLAGS+=" -Cllvm-args=-simplifycfg-branch-fold-threshold=0 -Zsanitizer=address"
FUZZ_RUSTFLAGS+=" -Cllvm-args=-sanitizer-coverage-stack-depth -Ccodegen-units=4"
echo "fuzz: building ${#TARGETS[@]} targets (release, address sanitizer)"
bin_args=()
for t in "${TARGETS[@]}"; do bin_args+=(--bin "$t"); done
RUSTFLAGS="$FUZZ_RUSTFLAGS ${RUSTFLAGS:-}" cargo build --manifest-path fuzz/Cargo.toml --target "$TRIPLE" \
    --release "${bin_args[@]}"
BIN="fuzz/target/$TRIPLE/release"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_odr_violation=0"

# Targets run side by side, one per core (CHI_FUZZ_JOBS overrides): libFuzzer is single-threaded,
# so N cores give every target its full time in 1/N of the wall time.
JOBS="${CHI_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}"
run_target() {
    local t="$1" log="fuzz/artifacts/$1/last-run.log"
    # Seeds: the saved regressions of this target (if any) start the corpus.
    local seeds=()
    [ -d "fuzz/regressions/$t" ] && seeds+=("fuzz/regressions/$t")
    if "$BIN/$t" -artifact_prefix="fuzz/artifacts/$t/" "fuzz/corpus/$t" "${seeds[@]}" \
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
