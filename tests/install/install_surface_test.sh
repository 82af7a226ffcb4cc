#!/usr/bin/env bash
# The install surface: `meson install` ships the runtime only (libkiln, kiln.pc,
# runtime headers; no kiln/compiler/ headers without a library behind them),
# every installed header's kiln/ includes resolve inside the installed tree,
# and libkiln.so exports kiln_* symbols only (kiln.map).
# Args: BUILD_DIR
set -euo pipefail
build_dir=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

meson install -C "$build_dir" --destdir "$scratch/root" --no-rebuild --quiet >/dev/null
include_dir=$(find "$scratch/root" -type d -path '*/include/kiln' | head -n 1)
[ -n "$include_dir" ] || fail "no include/kiln installed"
[ ! -e "$include_dir/compiler" ] || fail "kiln/compiler/ headers are installed: $(ls "$include_dir/compiler" | head -3)..."
[ -f "$include_dir/session.h" ] || fail "kiln/session.h is not installed"
headers=$(find "$include_dir" -name '*.h' | wc -l)
missing=0
while IFS= read -r line; do
  file=${line%%:*}
  header=$(echo "$line" | sed -E 's/.*#include "(kiln\/[^"]+)".*/\1/')
  if [ ! -f "$(dirname "$include_dir")/$header" ]; then
    echo "installed ${file#"$scratch/root"} includes $header, which is not installed"
    missing=$((missing + 1))
  fi
done < <(grep -rH '#include "kiln/' "$include_dir")
[ "$missing" -eq 0 ] || fail "$missing include(s) of headers that are not installed"

so=$(find "$scratch/root" -name 'libkiln.so.*' -type f | head -n 1)
[ -n "$so" ] || fail "no libkiln.so installed"
exported=$(nm -D --defined-only "$so" | awk '{print $NF}')
total=$(echo "$exported" | grep -c . || true)
foreign=$(echo "$exported" | grep -v '^kiln_' || true)
if [ -n "$foreign" ]; then
  echo "$foreign" | head -20
  fail "libkiln.so exports $(echo "$foreign" | wc -l) non-kiln_ symbol(s) of $total"
fi
echo "$exported" | grep -qx kiln_session_create || fail "kiln_session_create is not exported"
echo "$exported" | grep -qx kiln_hal_create_device || fail "kiln_hal_create_device is not exported"
echo "$exported" | grep -qx kiln_version || fail "kiln_version is not exported"
libs=$(find "$scratch/root" -name 'lib*.a' -o -name 'lib*.so*' -type f | xargs -n1 basename | sort -u | tr '\n' ' ')
echo "PASS: $headers runtime headers, no kiln/compiler/; libkiln.so exports $total symbols, all kiln_*; libraries: $libs"
