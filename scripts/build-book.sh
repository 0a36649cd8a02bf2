#!/usr/bin/env bash
# Builds the chi book (book/) to HTML in book/build/, installing mdBook with
# `cargo install mdbook --locked` when it is not on PATH, and first runs every Rust block of the
# book as a test (`cargo test -p chi-book`: the chapters are doctests of the chi-book crate, so
# mdBook's own `mdbook test`, which cannot link chi, is not used).
#   scripts/build-book.sh            test, then build
#   scripts/build-book.sh --no-test  build only
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" != "--no-test" ]; then
    echo "== chapters and exercises as tests"
    cargo test -p chi-book --release
fi

if ! command -v mdbook >/dev/null 2>&1; then
    echo "== installing mdbook (cargo install mdbook --locked)"
    cargo install mdbook --locked
fi
echo "== mdbook build"
mdbook build book
echo "built book/build/index.html"
