#!/usr/bin/env bash
# Installs what is missing, then configures (once) and builds kiln.
#   scripts/bootstrap.sh [BUILD_DIR] [extra meson setup options...]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-build}
shift || true

bash "$here/scripts/install-deps.sh"
cd "$here"
if [ ! -f "$build_dir/build.ninja" ]; then
  meson setup "$build_dir" "$@" >/dev/null
fi
ninja -C "$build_dir" >/dev/null
