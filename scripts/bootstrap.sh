#!/usr/bin/env bash
# Installs what is missing, then configures (once) and builds kiln.
#   scripts/bootstrap.sh [BUILD_DIR] [extra meson setup options...]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-build}
shift || true

bash "$here/scripts/install-deps.sh"
cd "$here"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Quiet on success; the whole log when something fails.
if [ ! -f "$build_dir/build.ninja" ]; then
  meson setup "$build_dir" "$@" >"$log" 2>&1 || { cat "$log"; exit 1; }
fi
ninja -C "$build_dir" >"$log" 2>&1 || { cat "$log"; exit 1; }
