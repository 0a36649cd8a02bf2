#!/usr/bin/env bash
# Installs PyTorch (CPU) for the side-by-side benchmark (benches/torch/side_by_side.py) only;
# the Rust build and tests never need it.
#
# Uses Debian's python3-torch (the registry this machine reaches; PyPI's torch wheels are the
# CUDA builds, ~1 GB), installed for the system interpreter /usr/bin/python3, plus OpenBLAS:
# Debian builds PyTorch against the generic libblas.so.3, which without OpenBLAS is the slow
# reference BLAS (sgemm 1024 at ~7 GFLOPS here instead of ~120). Idempotent.
set -euo pipefail
if /usr/bin/python3 -c 'import torch' 2>/dev/null && [ -e /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 ]; then
    echo "setup-torch: PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') already installed for /usr/bin/python3"
    exit 0
fi
if ! command -v apt-get >/dev/null; then
    echo "setup-torch: apt-get not found; install PyTorch for python3 by other means (pip install torch)" >&2
    exit 1
fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
$SUDO apt-get update -qq || true
$SUDO apt-get install -y --no-install-recommends python3-torch libopenblas0-pthread
/usr/bin/python3 -c 'import torch; print("setup-torch: PyTorch", torch.__version__, "installed")'
