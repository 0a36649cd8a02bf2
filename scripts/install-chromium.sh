#!/usr/bin/env bash
# Installs a headless-capable Chromium from Debian's own package registry, for the browser test of
# the `chi teach` page (models/chi/tests/suite/teach_browser.rs). Idempotent: does nothing when a
# chromium binary is already on PATH. Needs root (or sudo) and apt-get; on other systems it says
# so and exits 0, and the browser test then skips with a message.
set -euo pipefail

for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then
        echo "install-chromium: $b already installed ($(command -v "$b"))"
        exit 0
    fi
done

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-chromium: no apt-get here; install Chromium yourself to run the browser test" >&2
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install-chromium: not root and no sudo; the browser test will skip" >&2
        exit 0
    fi
fi

export DEBIAN_FRONTEND=noninteractive
# Refresh the index only when the package is unknown to it (keeps repeated CI runs quick).
if ! apt-cache show chromium >/dev/null 2>&1; then
    $SUDO apt-get update -qq
fi
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core
echo "install-chromium: installed $(chromium --version 2>/dev/null || echo chromium)"
