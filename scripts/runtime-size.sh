#!/usr/bin/env bash
# Reports the runtime's size: libkiln.so stripped, and the share of it that is
# the SPIR-V validator (SPIRV-Tools, linked in statically so the HAL can
# validate every module's kernels at load).
#   usage: scripts/runtime-size.sh [build-dir]   (default build-size: release, no tests)
# How the share is measured: every sized symbol (code and data) of the
# unstripped library whose name a SPIRV-Tools archive defines counts as
# SPIRV-Tools; the share is their bytes over all symbol bytes, applied to the
# stripped file (sections without symbols, such as unwind tables and the
# dynamic symbol table, are assumed to split the same way).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-size}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$root" --buildtype=release -Dtests=false -Dwerror=false >/dev/null
fi
target=$(ninja -C "$build" -t targets all | sed -n 's/^\(libkiln\.so[.0-9]*\): .*/\1/p' |
         sort | tail -n 1)
[ -n "$target" ] || { echo "runtime-size: no libkiln.so target in $build" >&2; exit 1; }
ninja -C "$build" "$target" >/dev/null
so=$build/$target

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
strip --strip-unneeded -o "$scratch/libkiln.so" "$so"
stripped=$(stat -c %s "$scratch/libkiln.so")

libdir=$(pkg-config --variable=libdir SPIRV-Tools 2>/dev/null || echo /usr/lib/x86_64-linux-gnu)
archives=$(ls "$libdir"/libSPIRV-Tools*.a 2>/dev/null || true)
[ -n "$archives" ] || { echo "runtime-size: no SPIRV-Tools archives in $libdir" >&2; exit 1; }
# shellcheck disable=SC2086
nm --defined-only $archives 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u > "$scratch/spirv-tools.syms"
nm -S -t d --defined-only "$so" | awk 'NF == 4 { print $2 + 0, $4 }' > "$scratch/kiln.syms"

awk -v stripped="$stripped" -v so="$so" '
  FNR == NR { spv[$1] = 1; next }
  { total += $1; if ($2 in spv) mine += $1 }
  END {
    share = total ? mine / total : 0
    printf "libkiln.so (%s)\n", so
    printf "  stripped size:            %10d bytes (%.2f MiB)\n", stripped, stripped / 1048576
    printf "  symbol bytes (code+data): %10d\n", total
    printf "  of which SPIRV-Tools:     %10d (%.1f%%)\n", mine, 100 * share
    printf "  SPIRV-Tools share of the stripped file: ~%.2f MiB (%.1f%%); the rest of kiln: ~%.2f MiB\n",
           stripped * share / 1048576, 100 * share, stripped * (1 - share) / 1048576
  }' "$scratch/spirv-tools.syms" "$scratch/kiln.syms"
