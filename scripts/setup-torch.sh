#!/usr/bin/env bash
# Installs PyTorch for the side-by-side benchmark (benches/torch/side_by_side.py) only; the Rust
# build and tests never need it.
#
# Installs the PyTorch that users get from `pip install torch` — a pinned 2.x release — into a
# virtual environment at .venv-torch/ in the repository (ignored by git). The CPU-only wheel index
# (download.pytorch.org/whl/cpu) is tried first; where it is unreachable the wheel comes from the
# Python Package Index, whose Linux wheels also bring the CUDA libraries (several GB); the
# benchmark runs on the CPU either way. Idempotent: an existing environment with the pinned
# version is kept.
#
# Usage: scripts/setup-torch.sh            then  .venv-torch/bin/python benches/torch/side_by_side.py
#        TORCH_VERSION=2.x.y scripts/setup-torch.sh   (another pin)
set -euo pipefail
VERSION="${TORCH_VERSION:-2.15.0}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$ROOT/.venv-torch"
PY="$VENV/bin/python"

if [ -x "$PY" ] && [ "$("$PY" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null)" = "$VERSION" ]; then
    echo "setup-torch: PyTorch $VERSION already installed in $VENV"
    exit 0
fi
python3 -m venv "$VENV"
"$PY" -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
# numpy: PyTorch warns without it. The CPU index first (small wheel, no CUDA), then PyPI.
if ! "$PY" -m pip install --timeout 30 --retries 1 --index-url https://download.pytorch.org/whl/cpu "torch==$VERSION" 2>/dev/null; then
    echo "setup-torch: the CPU wheel index is unreachable; installing torch==$VERSION from PyPI"
    "$PY" -m pip install "torch==$VERSION"
fi
"$PY" -m pip install --quiet numpy || true
"$PY" - <<'EOF'
import torch
print("setup-torch: PyTorch", torch.__version__, "installed;", torch.__config__.parallel_info().splitlines()[0])
print("setup-torch: BLAS / CPU capability:", torch.backends.cpu.get_cpu_capability())
EOF
