#!/usr/bin/env bash
# Installs what `cargo build --release -p chi-mpi --features mpi` and `mpirun -n K chi-mpi …` need, from Debian's
# package registry: Open MPI (mpirun, the library and its headers) and libclang (the `mpi` crate
# generates its bindings with bindgen). Idempotent: installs only what is missing. Needs root (or
# sudo) and apt-get; elsewhere it says what to install and exits 1.
set -euo pipefail

have_headers() { [ -e /usr/include/x86_64-linux-gnu/mpi/mpi.h ] || [ -e /usr/include/mpi.h ] || [ -n "$(ls /usr/lib/*/openmpi/include/mpi.h 2>/dev/null)" ]; }
have_libclang() { [ -n "$(ls /usr/lib/llvm-*/lib/libclang*.so* /usr/lib/*/libclang*.so* 2>/dev/null | head -1)" ]; }

if command -v mpirun >/dev/null 2>&1 && command -v mpicc >/dev/null 2>&1 && have_headers && have_libclang; then
    echo "install-mpi: Open MPI and libclang already installed ($(mpirun --version 2>/dev/null | head -1))"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-mpi: no apt-get here; install an MPI implementation with its headers (Open MPI or MPICH) and libclang" >&2
    exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install-mpi: not root and no sudo; install openmpi-bin libopenmpi-dev libclang-dev" >&2
        exit 1
    fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y openmpi-bin libopenmpi-dev libclang-dev \
    || { $SUDO apt-get update && $SUDO apt-get install -y openmpi-bin libopenmpi-dev libclang-dev; }
echo "install-mpi: $(mpirun --version | head -1)"
