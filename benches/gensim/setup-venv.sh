#!/usr/bin/env bash
# Creates a Python virtual environment with gensim 4.4.0 (the version chi-words is compared with)
# for benches/gensim/side_by_side.py and `chi reproduce word-vectors`.
#
# Usage: benches/gensim/setup-venv.sh [DIR]     (default DIR: benches/gensim/.venv)
#
# Both users find it there by default; elsewhere, point them at its interpreter with
# CHI_GENSIM_PYTHON=DIR/bin/python. Running it again on a working venv does nothing.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DIR="${1:-$HERE/.venv}"
GENSIM_SPEC="gensim==4.4.0"
if [ -x "$DIR/bin/python" ] && "$DIR/bin/python" -c 'import gensim, sys; sys.exit(gensim.__version__ != "4.4.0")' 2>/dev/null; then
    echo "setup-venv: $DIR already has gensim 4.4.0"
    exit 0
fi
command -v python3 >/dev/null || { echo "setup-venv: python3 is required" >&2; exit 1; }
python3 -m venv "$DIR" || { echo "setup-venv: python3 -m venv failed (Debian: apt-get install python3-venv)" >&2; exit 1; }
"$DIR/bin/python" -m pip install --disable-pip-version-check -q --only-binary :all: "$GENSIM_SPEC" \
    || { echo "setup-venv: pip install $GENSIM_SPEC failed (network? the PyPI registry must be reachable)" >&2; exit 1; }
"$DIR/bin/python" -c 'import gensim; print("setup-venv: gensim", gensim.__version__, "in", __import__("sys").prefix)'
