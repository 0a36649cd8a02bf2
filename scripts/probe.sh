#!/usr/bin/env bash
# Probes the `chi` program as a careless user and a hostile file would: bad numbers in every
# numeric flag, unknown names, missing / empty / binary / truncated / directory files, corrupt
# checkpoints and configs, closed pipes, interrupted runs, read-only and file-shaped output
# directories, paths with spaces and non-ASCII characters.
#
# Usage: scripts/probe.sh [CHI_BINARY]        (default: target/release/chi)
#
# Each case states what a correct program does: `err` (a clean error: exit status 1 or 2),
# `ok` (success), or `any` (either, e.g. a valid but odd input). A case is a DEFECT if the program
# panics (exit 101 or "panicked" in its output), dies of a signal (abort, out-of-memory kill),
# runs past the time limit (hang), exceeds the memory limit, or exits 0 where an error is
# required (a silent wrong result). Exit status 1 if any case is a defect; the log of every case
# is kept in the work directory printed at the end.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CHI="$(realpath "${1:-$ROOT/target/release/chi}")"
[ -x "$CHI" ] || { echo "probe: no chi binary at $CHI (cargo build -p chi --release)"; exit 2; }
W="$(mktemp -d /tmp/chi-probe.XXXXXX)"
cd "$W" || exit 2
export CHI_DATA="$W/nodata"       # no real data sets: data-dependent cases must fail cleanly
unset CHI_MAX_TENSOR_ELEMENTS
TIME_LIMIT=${PROBE_TIME_LIMIT:-60} # seconds per case
MEM_LIMIT_KB=${PROBE_MEM_LIMIT_KB:-3000000}

n=0
bad=0
defects=()

# run EXPECT NAME CMD... : runs CMD (chi is "$CHI") with a time and memory limit.
run() {
    local expect=$1 name=$2
    shift 2
    n=$((n + 1))
    local log="$W/logs/$n-$name.log"
    mkdir -p "$W/logs"
    ( ulimit -v "$MEM_LIMIT_KB"; timeout -s KILL "$TIME_LIMIT" "$@" ) >"$log" 2>&1 </dev/null
    local rc=$?
    classify "$expect" "$name" "$rc" "$log"
}

classify() {
    local expect=$1 name=$2 rc=$3 log=$4 verdict=""
    if [ "$rc" = 101 ] || grep -q "panicked" "$log"; then
        verdict="PANIC"
    elif [ "$rc" = 137 ]; then
        verdict="KILLED (time or memory limit)"
    elif grep -q "memory allocation of .* failed" "$log"; then
        verdict="ALLOCATION FAILURE"
    elif [ "$rc" -ge 128 ]; then
        verdict="SIGNAL $((rc - 128))"
    elif [ "$expect" = err ] && [ "$rc" = 0 ]; then
        verdict="SILENT SUCCESS (an error was expected)"
    elif [ "$expect" = ok ] && [ "$rc" != 0 ]; then
        verdict="FAILED (success was expected)"
    elif [ "$expect" = err ] && [ "$rc" != 1 ] && [ "$rc" != 2 ]; then
        verdict="EXIT $rc"
    fi
    if [ -n "$verdict" ]; then
        bad=$((bad + 1))
        defects+=("$name: $verdict (log $log)")
        printf '%-4s %-46s DEFECT %s\n' "$n" "$name" "$verdict"
        sed 's/^/        /' "$log" | tail -4
    else
        printf '%-4s %-46s %s (exit %s)\n' "$n" "$name" "$expect" "$rc"
    fi
}

# pipe NAME ARGS... : chi ARGS | head -c1; chi must end quietly (0 or SIGPIPE's 141), no panic.
pipe() {
    local name=$1
    shift
    n=$((n + 1))
    local log="$W/logs/$n-$name.log"
    mkdir -p "$W/logs"
    timeout -s KILL "$TIME_LIMIT" bash -c '"$@" 2>"$0" | head -c1 >/dev/null; exit "${PIPESTATUS[0]}"' "$log" "$CHI" "$@"
    local rc=$?
    [ "$rc" = 141 ] && rc=0
    classify any "$name" "$rc" "$log"
}

T=(train --quiet --no-plots --steps 3)   # a tiny training run
fresh() { rm -rf "$W/$1"; echo "$W/$1"; }

# ---------------------------------------------------------------- global flags
run err  seed-negative        "$CHI" --seed -1 train --out "$(fresh g1)"
run err  seed-text            "$CHI" --seed abc train
run err  seed-overflow        "$CHI" --seed 18446744073709551616 train
run err  threads-zero         "$CHI" --threads 0 train --out "$(fresh g2)"
run err  threads-negative     "$CHI" --threads -1 train
run err  threads-huge         "$CHI" --threads 1000000 train --out "$(fresh g3)"
run err  threads-nan          "$CHI" --threads nan train
run err  unknown-subcommand   "$CHI" frobnicate
run err  unknown-flag         "$CHI" train --frobnicate
run err  out-empty-string     "$CHI" --out "" "${T[@]}"
run err  out-is-dev-null      "$CHI" --out /dev/null "${T[@]}"
touch "$W/afile"
run err  out-is-a-file        "$CHI" --out "$W/afile" "${T[@]}"
run err  out-under-a-file     "$CHI" --out "$W/afile/sub" "${T[@]}"
run ok   out-spaces-unicode   "$CHI" --out "$(fresh 'dir with spaces/ünïcødé ✓')" "${T[@]}"
run ok   eval-spaces-unicode  "$CHI" --out "$W/dir with spaces/ünïcødé ✓" eval
run ok   version              "$CHI" --version
run ok   help                 "$CHI" --help

# ---------------------------------------------------------------- environment and odd paths
for v in abc 0 -1 4e9 18446744073709551616; do
    run err "env-max-tensor-elements-$v" env CHI_MAX_TENSOR_ELEMENTS="$v" "$CHI" "${T[@]}" --out "$(fresh env)"
done
run ok   env-max-tensor-elements-empty env CHI_MAX_TENSOR_ELEMENTS= "$CHI" "${T[@]}" --out "$(fresh env)"
run err  env-max-tensor-elements-1 env CHI_MAX_TENSOR_ELEMENTS=1 "$CHI" "${T[@]}" --out "$(fresh env)"
run err  out-name-too-long    "$CHI" "${T[@]}" --out "$W/$(printf 'x%.0s' {1..300})"
run err  out-path-too-long    "$CHI" "${T[@]}" --out "$W/$(for _ in $(seq 30); do printf 'abcdefghij%.0s' {1..15}; printf '/'; done)"
mkdir -p "$W/$(printf 'y%.0s' {1..250})"
run ok   out-long-name        "$CHI" "${T[@]}" --out "$W/$(printf 'y%.0s' {1..250})"
run err  out-long-name-overwrite "$CHI" "${T[@]}" --out "$W/$(printf 'y%.0s' {1..250})" --overwrite
ln -s "$W/loop-a" "$W/loop-b"; ln -s "$W/loop-b" "$W/loop-a"
run err  out-symlink-loop     "$CHI" "${T[@]}" --out "$W/loop-a"
mkdir -p "$W/dot"
run ok   out-dot              bash -c 'cd "$1" && "$2" train --quiet --no-plots --steps 3 --out .' _ "$W/dot" "$CHI"
run err  out-dot-overwrite    bash -c 'cd "$1" && "$2" train --quiet --no-plots --steps 3 --out . --overwrite' _ "$W/dot" "$CHI"
run err  teach-output-dev-full "$CHI" teach mlp -o /dev/full
run err  graph-stdout-dev-full bash -c '"$1" --out "$2" graph mlp --values >/dev/full' _ "$CHI" "$W/gfull"

# ---------------------------------------------------------------- train: numeric flags
run any  train-steps-0 "$CHI" train --quiet --no-plots --out "$(fresh s)" --steps 0
for v in -1 nan 1e3 18446744073709551616 9007199254740993; do
    run err "train-steps-$v" "$CHI" train --quiet --no-plots --out "$(fresh s)" --steps "$v"
done
for v in 0 -1 1000000000 nan; do
    run err "train-batch-size-$v" "$CHI" "${T[@]}" --out "$(fresh b)" --batch-size "$v"
done
run any  train-batch-size-larger-than-data "$CHI" "${T[@]}" --out "$(fresh b)" --batch-size 5000
for v in nan inf -inf -0.1 1e309; do
    run err "train-lr-$v" "$CHI" "${T[@]}" --out "$(fresh l)" "--lr=$v"
done
run any  train-lr-zero        "$CHI" "${T[@]}" --out "$(fresh l)" --lr 0
run any  train-lr-1e30        "$CHI" "${T[@]}" --out "$(fresh l)" --lr 1e30
for v in -0.1 1 5 nan; do
    run err "train-momentum-$v" "$CHI" "${T[@]}" --out "$(fresh m)" --optim sgd "--momentum=$v"
done
for v in -1 nan inf; do
    run err "train-weight-decay-$v" "$CHI" "${T[@]}" --out "$(fresh w)" "--weight-decay=$v"
done
for v in 0 nan inf -1; do
    run err "train-clip-norm-$v" "$CHI" "${T[@]}" --out "$(fresh c)" "--clip-norm=$v"
done
for v in -0.1 1 nan; do
    run err "train-dropout-$v" "$CHI" "${T[@]}" --out "$(fresh d)" "--dropout=$v"
done
for v in "" "," "8," "-1" "0" "99999999999999999999" "8;8" "1e3" "100000000"; do
    run err "train-hidden-'$v'" "$CHI" "${T[@]}" --out "$(fresh h)" --hidden "$v"
done
run any  train-hidden-200-layers "$CHI" "${T[@]}" --out "$(fresh h)" --hidden "$(printf '2,%.0s' {1..199})2"
for v in "" "exp:" "exp:nan" "exp:-1" "exp:1e309" "step:0:0.5" "step:-1:0.5" "step:10" "cosine:0" "cosine:-5" "cosine:10:nan" "warmup:0" "warmup:99999999999999999999" "warmup:5:exp:nan" "linear:1" "exp:0.5:extra" "warmup:1:warmup:1:warmup:1:constant"; do
    run any "train-schedule-'$v'" "$CHI" "${T[@]}" --out "$(fresh sc)" --schedule "$v"
done
for v in "" "," "zzz" "a,a" "0" ";"; do
    run err "train-em-blocks-'$v'" "$CHI" "${T[@]}" --out "$(fresh e)" --em-blocks "$v" --em-steps 1
done
run any  train-em-steps-huge  "$CHI" "${T[@]}" --out "$(fresh e)" --em-steps 18446744073709551615
run any  train-eval-every-huge "$CHI" "${T[@]}" --out "$(fresh e)" --eval-every 18446744073709551615
run any  train-ckpt-every-1   "$CHI" "${T[@]}" --out "$(fresh e)" --checkpoint-every 1
run err  train-log-format-empty "$CHI" "${T[@]}" --out "$(fresh e)" --log-format ""
run ok   train-log-format-csv "$CHI" "${T[@]}" --out "$(fresh e)" --log-format csv
run err  train-optim-unknown  "$CHI" "${T[@]}" --out "$(fresh e)" --optim rmsprop2
run err  train-model-unknown  "$CHI" "${T[@]}" --out "$(fresh e)" --model nope
run err  train-dataset-unknown "$CHI" "${T[@]}" --out "$(fresh e)" --dataset nope
run err  train-model-empty    "$CHI" "${T[@]}" --out "$(fresh e)" --model ""
for m in mlp lstm gru ca-rnn; do
    for d in spirals xor-noise surface first-token; do
        run any "train-$m-on-$d" "$CHI" "${T[@]}" --out "$(fresh md)" --model "$m" --dataset "$d" --hidden 4
    done
done

# ---------------------------------------------------------------- train: config files
cfg() { printf '%s' "$2" >"$W/$1.toml"; echo "$W/$1.toml"; }
run err  config-missing       "$CHI" "${T[@]}" --out "$(fresh c)" --config "$W/nope.toml"
run err  config-directory     "$CHI" "${T[@]}" --out "$(fresh c)" --config "$W"
run any  config-empty         "$CHI" "${T[@]}" --out "$(fresh c)" --config "$(cfg empty '')"
head -c 3000 /dev/urandom >"$W/binary.toml"
run err  config-binary        "$CHI" "${T[@]}" --out "$(fresh c)" --config "$W/binary.toml"
run err  config-dev-zero      "$CHI" "${T[@]}" --out "$(fresh c)" --config /dev/zero
run err  config-dev-urandom   "$CHI" "${T[@]}" --out "$(fresh c)" --config /dev/urandom
run err  config-unknown-key   "$CHI" "${T[@]}" --out "$(fresh c)" --config "$(cfg k 'stepz = 3')"
run err  config-unknown-nested "$CHI" "${T[@]}" --out "$(fresh c)" --config "$(cfg k2 $'[optim]\nlrr = 1')"
run err  config-wrong-type    "$CHI" "${T[@]}" --out "$(fresh c)" --config "$(cfg t 'steps = "ten"')"
run err  config-steps-float   "$CHI" "${T[@]}" --out "$(fresh c)" --config "$(cfg t2 'steps = 1e20')"
run err  config-n-train-neg   "$CHI" "${T[@]}" --out "$(fresh c)" --config "$(cfg n $'[data]\nn_train = -1')"
run err  config-classes-0     "$CHI" "${T[@]}" --out "$(fresh c)" --config "$(cfg c0 $'[data]\nclasses = 0')"
run err  config-classes-1     "$CHI" "${T[@]}" --out "$(fresh c)" --config "$(cfg c1 $'[data]\nclasses = 1')"
run err  config-classes-huge  "$CHI" "${T[@]}" --out "$(fresh c)" --config "$(cfg c2 $'[data]\nclasses = 100000000000')"
run err  config-noise-nan     "$CHI" "${T[@]}" --out "$(fresh c)" --config "$(cfg no $'[data]\nnoise = nan')"
run any  config-noise-huge    "$CHI" "${T[@]}" --out "$(fresh c)" --config "$(cfg no2 $'[data]\nnoise = 1e300')"
run any  config-keep-ckpt-0   "$CHI" "${T[@]}" --out "$(fresh c)" --config "$(cfg kc $'keep_checkpoints = 0')"
run any  config-log-every-0   "$CHI" "${T[@]}" --out "$(fresh c)" --config "$(cfg le $'log_every = 0')"
run any  config-gradflow-every-1 "$CHI" "${T[@]}" --out "$(fresh c)" --config "$(cfg ge $'gradflow_every = 1')"
FT=(--model lstm --dataset first-token --hidden 4)
run err  config-seq-len-0     "$CHI" "${T[@]}" "${FT[@]}" --out "$(fresh c)" --config "$(cfg sl0 $'[data.options]\nseq_len = 0')"
run any  config-seq-len-1     "$CHI" "${T[@]}" "${FT[@]}" --out "$(fresh c)" --config "$(cfg sl1 $'[data.options]\nseq_len = 1')"
run err  config-seq-len-huge  "$CHI" "${T[@]}" "${FT[@]}" --out "$(fresh c)" --config "$(cfg sl2 $'[data.options]\nseq_len = 100000000000')"
run err  config-seq-len-float "$CHI" "${T[@]}" "${FT[@]}" --out "$(fresh c)" --config "$(cfg sl3 $'[data.options]\nseq_len = 1e9')"
run err  config-seq-len-neg   "$CHI" "${T[@]}" "${FT[@]}" --out "$(fresh c)" --config "$(cfg sl4 $'[data.options]\nseq_len = -3')"
run err  config-seq-len-text  "$CHI" "${T[@]}" "${FT[@]}" --out "$(fresh c)" --config "$(cfg sl5 $'[data.options]\nseq_len = "x"')"
run err  config-distractors-huge "$CHI" "${T[@]}" "${FT[@]}" --out "$(fresh c)" --config "$(cfg di $'[data.options]\ndistractors = 100000000000')"
run any  config-distractors-0 "$CHI" "${T[@]}" "${FT[@]}" --out "$(fresh c)" --config "$(cfg di0 $'[data.options]\ndistractors = 0')"
run err  config-embed-0       "$CHI" "${T[@]}" "${FT[@]}" --out "$(fresh c)" --config "$(cfg em0 $'[model_options.options]\nembed = 0')"
run err  config-embed-huge    "$CHI" "${T[@]}" "${FT[@]}" --out "$(fresh c)" --config "$(cfg em1 $'[model_options.options]\nembed = 100000000000')"
run err  config-model-option-unknown "$CHI" "${T[@]}" "${FT[@]}" --out "$(fresh c)" --config "$(cfg mo $'[model_options.options]\nembedd = 3')"
run err  config-data-option-unknown  "$CHI" "${T[@]}" --out "$(fresh c)" --config "$(cfg do $'[data.options]\nseq_lenn = 3')"
run err  config-mlp-option-unknown   "$CHI" "${T[@]}" --out "$(fresh c)" --config "$(cfg mlpo $'[model_options.options]\nembed = 3')"
run err  config-activation-unknown   "$CHI" "${T[@]}" --out "$(fresh c)" --config "$(cfg act $'[model_options]\nactivation = "swish9"')"
run any  config-data-path-on-synthetic "$CHI" "${T[@]}" --out "$(fresh c)" --config "$(cfg dp $'[data]\npath = "/etc/passwd"')"
run err  config-deep-nesting  "$CHI" "${T[@]}" --out "$(fresh c)" --config "$(cfg deep "$(printf 'a = '; printf '[%.0s' {1..5000}; printf ']%.0s' {1..5000})")"

# ---------------------------------------------------------------- train: run directories
D="$(fresh rd)"
run ok   rundir-first         "$CHI" "${T[@]}" --out "$D" --checkpoint-every 1
run err  rundir-second-fresh  "$CHI" "${T[@]}" --out "$D"
run ok   rundir-resume-finished "$CHI" train --quiet --out "$D" --resume
run err  rundir-resume-conflict "$CHI" train --quiet --out "$D" --resume --hidden 3
run err  resume-nothing       "$CHI" train --quiet --out "$(fresh rn)" --resume
run err  resume-nonexistent   "$CHI" train --quiet --out "$W/does/not/exist" --resume
D="$(fresh rc)"; mkdir -p "$D"; head -c 500 /dev/urandom >"$D/config.toml"
run err  resume-garbage-config "$CHI" train --quiet --no-plots --out "$D" --resume
D="$(fresh rk)"; "$CHI" "${T[@]}" --out "$D" --checkpoint-every 1 >/dev/null 2>&1
for f in "$D"/checkpoints/*; do : >"$f"; done
run err  resume-empty-checkpoints "$CHI" train --quiet --no-plots --out "$D" --resume --steps 5
D="$(fresh rk2)"; "$CHI" "${T[@]}" --out "$D" --checkpoint-every 1 >/dev/null 2>&1
for f in "$D"/checkpoints/*; do head -c 300 /dev/urandom >"$f"; done
run err  resume-garbage-checkpoints "$CHI" train --quiet --no-plots --out "$D" --resume --steps 5
D="$(fresh rk3)"; "$CHI" "${T[@]}" --out "$D" --checkpoint-every 1 >/dev/null 2>&1
last=$(ls "$D"/checkpoints/* | tail -1); truncate -s 200 "$last"
run any  resume-truncated-last-checkpoint "$CHI" train --quiet --no-plots --out "$D" --resume --steps 5
D="$(fresh rk4)"; "$CHI" "${T[@]}" --out "$D" >/dev/null 2>&1
rm -rf "$D/checkpoints"; touch "$D/checkpoints"
run err  resume-checkpoints-is-a-file "$CHI" train --quiet --no-plots --out "$D" --resume --steps 5
D="$(fresh rk5)"; "$CHI" "${T[@]}" --out "$D" >/dev/null 2>&1
rm -f "$D/log.jsonl"; mkdir "$D/log.jsonl"
run err  resume-log-is-a-directory "$CHI" train --quiet --no-plots --out "$D" --resume --steps 5
D="$(fresh rk6)"; "$CHI" "${T[@]}" --out "$D" >/dev/null 2>&1
head -c 2000 /dev/urandom >"$D/log.jsonl"
run any  resume-binary-log    "$CHI" train --quiet --no-plots --out "$D" --resume --steps 5
D="$(fresh rk7)"; "$CHI" "${T[@]}" --out "$D" >/dev/null 2>&1
echo '{"step": 18446744073709551615, "loss": NaN}' >>"$D/log.jsonl"
run any  resume-log-huge-step "$CHI" train --quiet --no-plots --out "$D" --resume --steps 5
# kill -9 in the middle of a run, then resume
D="$(fresh kill)"
"$CHI" train --quiet --no-plots --out "$D" --steps 3000 --checkpoint-every 50 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 200); do ls "$D"/checkpoints/*.safetensors >/dev/null 2>&1 && break; sleep 0.01; done
kill -9 "$pid"; wait "$pid" 2>/dev/null
run err  kill9-then-fresh     "$CHI" "${T[@]}" --out "$D"
run ok   kill9-then-resume    "$CHI" train --quiet --no-plots --out "$D" --resume
run ok   kill9-resumed-run-evaluates "$CHI" eval --out "$D"
# read-only directory (as an unprivileged user: root ignores permissions)
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
    AS_NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    mkdir -p "$W/ro"; chmod 555 "$W/ro"; chmod 755 "$W"
    run err  out-read-only      "${AS_NOBODY[@]}" "$CHI" "${T[@]}" --out "$W/ro/run"
    run err  out-read-only-self "${AS_NOBODY[@]}" "$CHI" "${T[@]}" --out "$W/ro"
    D="$(fresh rodone)"; "$CHI" "${T[@]}" --out "$D" >/dev/null 2>&1; chmod -R a+rX,a-w "$D"
    # The evaluation is printed, but its report cannot be written into the run: an error that
    # names --report DIR.
    run err  eval-read-only-run "${AS_NOBODY[@]}" "$CHI" eval --out "$D"
    run err  resume-read-only-run "${AS_NOBODY[@]}" "$CHI" train --quiet --out "$D" --resume --steps 6
    run err  graph-read-only    "${AS_NOBODY[@]}" "$CHI" --out "$W/ro" graph mlp
    run err  teach-read-only    "${AS_NOBODY[@]}" "$CHI" teach mlp -o "$W/ro/t.html"
fi

# ---------------------------------------------------------------- eval
D="$(fresh ev)"; "$CHI" "${T[@]}" --out "$D" >/dev/null 2>&1
CK=$(ls "$D"/checkpoints/* | tail -1)
run ok   eval-ok              "$CHI" eval --out "$D"
run ok   eval-train-split     "$CHI" eval --out "$D" --split train
run err  eval-split-unknown   "$CHI" eval --out "$D" --split validation
run err  eval-empty-dir       "$CHI" eval --out "$(mkdir -p "$W/evempty"; echo "$W/evempty")"
run err  eval-missing-out     "$CHI" eval --out "$W/nothing-here"
run err  eval-ckpt-missing    "$CHI" eval --checkpoint "$W/nope.ckpt"
# A run directory and a weights file are models too (`--checkpoint` is the same as MODEL).
run ok   eval-ckpt-directory  "$CHI" eval --checkpoint "$D"
run err  eval-ckpt-empty      "$CHI" eval --checkpoint "$W/afile"
run err  eval-ckpt-dev-zero   "$CHI" eval --checkpoint /dev/zero
run err  eval-ckpt-dev-urandom "$CHI" eval --checkpoint /dev/urandom
head -c 4000 "$CK" >"$W/trunc.ckpt"
run err  eval-ckpt-truncated  "$CHI" eval --checkpoint "$W/trunc.ckpt"
cp "$CK" "$W/flip.ckpt"; printf '\xff' | dd of="$W/flip.ckpt" bs=1 seek=300 conv=notrunc 2>/dev/null
run err  eval-ckpt-bitflip    "$CHI" eval --checkpoint "$W/flip.ckpt"
run ok   eval-weights-only    "$CHI" eval --checkpoint "$D/model.safetensors"
run err  eval-config-as-ckpt  "$CHI" eval --checkpoint "$D/config.toml"
printf '\xff\xff\xff\xff\xff\xff\xff\x7f{}' >"$W/hugeheader.ckpt"
run err  eval-ckpt-huge-header "$CHI" eval --checkpoint "$W/hugeheader.ckpt"

# ---------------------------------------------------------------- reproduce
run err  reproduce-unknown    "$CHI" --out "$(fresh rp)" reproduce nope --quick
run err  reproduce-runs-0     "$CHI" --out "$(fresh rp)" reproduce ca-nn-xor --quick --runs 0
run err  reproduce-runs-neg   "$CHI" --out "$(fresh rp)" reproduce ca-nn-xor --quick --runs -1
run err  reproduce-runs-huge  "$CHI" --out "$(fresh rp)" reproduce ca-nn-xor --quick --runs 18446744073709551615
run ok   reproduce-xor-quick  "$CHI" --out "$(fresh 'rp ü')" reproduce ca-nn-xor --quick --runs 1
run err  reproduce-out-file   "$CHI" --out "$W/afile" reproduce ca-nn-xor --quick --runs 1
run err  reproduce-no-data    "$CHI" --out "$(fresh rp)" reproduce ca-sem-lee --quick
mkdir -p "$W/baddata/glove" "$W/baddata/gensim" "$W/baddata/pang-lee" "$W/baddata/fashion-mnist" "$W/baddata/mnist-json"
for f in glove_6B_50d_emb.npy words.txt; do : >"$W/baddata/glove/$f"; done
for f in wordsim353.tsv simlex999.txt questions-words.txt lee.cor lee_background.cor similarities0-1.txt; do : >"$W/baddata/gensim/$f"; done
for f in reviews.csv sentences.csv; do : >"$W/baddata/pang-lee/$f"; done
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do head -c 100 /dev/urandom >"$W/baddata/fashion-mnist/$f"; done
for i in 0 1 2 3 4 5 6 7 8 9; do echo '[]' >"$W/baddata/mnist-json/$i.json"; done
for e in ca-sem-lee ca-bsfe-reviews ca-cnn-mnist ca-res-fashion; do
    run err "reproduce-empty-data-$e" env CHI_DATA="$W/baddata" "$CHI" --out "$(fresh rp)" reproduce "$e" --quick
done
mkdir -p "$W/dirdata/glove"; mkdir -p "$W/dirdata/glove/words.txt" "$W/dirdata/glove/glove_6B_50d_emb.npy"
run err  reproduce-data-files-are-dirs env CHI_DATA="$W/dirdata" "$CHI" --out "$(fresh rp)" reproduce ca-sem-lee --quick

# Tiny but well-formed data sets: a handful of examples in the right formats.
python3 - "$W/tiny" <<'PY'
import gzip, os, struct, sys
d = sys.argv[1]
def mk(sub):
    os.makedirs(os.path.join(d, sub), exist_ok=True)
    return os.path.join(d, sub)
f = mk("fashion-mnist")
for split, n in (("train", 10), ("t10k", 10)):
    with gzip.open(os.path.join(f, f"{split}-images-idx3-ubyte.gz"), "wb") as g:
        g.write(struct.pack(">IIII", 0x803, n, 28, 28) + bytes((i * 7) % 256 for i in range(n * 784)))
    with gzip.open(os.path.join(f, f"{split}-labels-idx1-ubyte.gz"), "wb") as g:
        g.write(struct.pack(">II", 0x801, n) + bytes(i % 10 for i in range(n)))
m = mk("mnist-json")
for k in range(10):
    open(os.path.join(m, f"{k}.json"), "w").write('{"data":[' + ",".join(["0.5"] * 784) + "]}")
p = mk("pang-lee")
for name in ("reviews.csv", "sentences.csv"):
    open(os.path.join(p, name), "w").write("".join(f'{1 if i % 2 else -1},"good film {i} bad plot"\n' for i in range(40)))
gz = mk("gensim")
open(os.path.join(gz, "wordsim353.tsv"), "w").write("# h\n# h\nlove\tsex\t6.77\n")
open(os.path.join(gz, "simlex999.txt"), "w").write("# h\n# h\nold\tnew\t1.58\n")
open(os.path.join(gz, "questions-words.txt"), "w").write(": capital\nathens greece baghdad iraq\n")
open(os.path.join(gz, "lee.cor"), "w").write("the cat sat\nthe dog ran\n")
open(os.path.join(gz, "lee_background.cor"), "w").write("the cat sat on the mat\n")
open(os.path.join(gz, "similarities0-1.txt"), "w").write("1\t0.5\n0\t1\n")
gl = mk("glove")
words = ["the", "cat", "sat", "dog"]
open(os.path.join(gl, "words.txt"), "w").write("\n".join(words) + "\n")
h = "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 50), }"
h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
open(os.path.join(gl, "glove_6B_50d_emb.npy"), "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + struct.pack("<200f", *[(i % 7) / 7 for i in range(200)]))
PY
for e in ca-sem-lee ca-bsfe-reviews ca-cnn-mnist ca-res-fashion; do
    run any "reproduce-tiny-data-$e" env CHI_DATA="$W/tiny" "$CHI" --out "$(fresh rp)" reproduce "$e" --quick
done

# ---------------------------------------------------------------- bench
run err  bench-gemm-size-0    "$CHI" bench gemm --sizes 0 --reps 1
run err  bench-gemm-size-neg  "$CHI" bench gemm --sizes -1
run err  bench-gemm-size-empty "$CHI" bench gemm --sizes ""
run err  bench-gemm-size-huge "$CHI" bench gemm --sizes 1000000
run err  bench-gemm-reps-0    "$CHI" bench gemm --sizes 8 --reps 0
run err  bench-gemm-reps-huge "$CHI" bench gemm --sizes 8 --reps 18446744073709551615
run err  bench-gemm-dtype     "$CHI" bench gemm --sizes 8 --reps 1 --dtype f16
run ok   bench-gemm-size-1    "$CHI" bench gemm --sizes 1 --reps 1
run err  bench-tape-steps-0   "$CHI" bench tape --steps 0 --reps 1
run err  bench-tape-reps-0    "$CHI" bench tape --steps 10 --reps 0
run err  bench-tape-steps-huge "$CHI" bench tape --steps 18446744073709551615 --reps 1
run err  bench-tape-reps-huge "$CHI" bench tape --steps 10 --reps 18446744073709551615
run err  bench-unknown        "$CHI" bench nope

# ---------------------------------------------------------------- gradcheck
run err  gradcheck-op-unknown "$CHI" gradcheck --op nope
run err  gradcheck-model-unknown "$CHI" gradcheck --model nope
run err  gradcheck-order-3    "$CHI" gradcheck --op add --order 3
run err  gradcheck-instances-0 "$CHI" gradcheck --op add --instances 0
run err  gradcheck-instances-huge "$CHI" gradcheck --op add --instances 18446744073709551615
run err  gradcheck-op-empty   "$CHI" gradcheck --op ""
run ok   gradcheck-op-add     "$CHI" gradcheck --op add --instances 1 --fast

# ---------------------------------------------------------------- graph
run err  graph-unknown        "$CHI" --out "$(fresh gr)" graph nope
run err  graph-empty          "$CHI" --out "$(fresh gr)" graph ""
run err  graph-out-file       "$CHI" --out "$W/afile" graph mlp
run ok   graph-mlp            "$CHI" --out "$(fresh 'gr ü')" graph mlp --values --grads --listing --backward

# ---------------------------------------------------------------- teach
run err  teach-unknown        "$CHI" --out "$(fresh te)" teach nope
run err  teach-empty          "$CHI" --out "$(fresh te)" teach ""
run err  teach-garbage        "$CHI" --out "$(fresh te)" teach ')))((('
run err  teach-undefined-var  "$CHI" --out "$(fresh te)" teach 'sum(y)'
run err  teach-shape-mismatch "$CHI" --out "$(fresh te)" teach 'x = [[1, 2]]; w = [[1, 2]]; sum(x @ w)'
run err  teach-nan            "$CHI" --out "$(fresh te)" teach 'x = [[nan]]; sum(x)'
run err  teach-huge-literal   "$CHI" --out "$(fresh te)" teach 'x = [[1e999]]; sum(x)'
run err  teach-deep-nesting   "$CHI" --out "$(fresh te)" teach "x = [[1]]; $(printf 'tanh(%.0s' {1..20000})x$(printf ')%.0s' {1..20000})"
run err  teach-long-input     "$CHI" --out "$(fresh te)" teach "x = [[$(printf '1,%.0s' {1..50000})1]]; sum(x)"
run err  teach-ragged         "$CHI" --out "$(fresh te)" teach 'x = [[1, 2], [3]]; sum(x)'
run err  teach-empty-matrix   "$CHI" --out "$(fresh te)" teach 'x = [[]]; sum(x)'
run err  teach-output-dir     "$CHI" --out "$(fresh te)" teach mlp -o "$W"
run ok   teach-output-new-dir "$CHI" teach mlp -o "$W/no/such/dir/t.html"
run err  teach-output-empty   "$CHI" teach mlp -o ""
run ok   teach-mlp            "$CHI" --out "$(fresh te)" teach mlp -o "$W/te/ü t.html"
run ok   teach-expr           "$CHI" --out "$(fresh te)" teach 'x = [[0.5, -1]]; w = [[2], [1]]; sum(tanh(x @ w))'

# ---------------------------------------------------------------- closed stdout
pipe pipe-train-list          train --list
pipe pipe-reproduce-list      reproduce --list
pipe pipe-gradcheck-list      gradcheck --list
pipe pipe-gradcheck-json      gradcheck --op add --instances 1 --json
pipe pipe-bench-gemm-json     bench gemm --sizes 8 --reps 1 --json
pipe pipe-graph               --out "$(fresh pg)" graph mlp
pipe pipe-help                --help
pipe pipe-train               --out "$(fresh pt)" train --steps 3 --no-plots
pipe pipe-eval                eval --out "$W/ev"
n=$((n + 1)); log="$W/logs/$n-stdout-closed.log"
"$CHI" train --list >&- 2>"$log"; classify any stdout-closed "$?" "$log"
n=$((n + 1)); log="$W/logs/$n-stdout-dev-full.log"
"$CHI" train --list >/dev/full 2>"$log"; rc=$?; classify err stdout-dev-full "$rc" "$log"

echo
echo "probe: $n cases, $bad defects (logs in $W/logs)"
for d in "${defects[@]}"; do echo "  $d"; done
[ "$bad" = 0 ]
