#!/usr/bin/env bash
# Runs the raw-Vulkan floor (kiln-vulkan-floor, tools/benchmark-hal/
# vulkan_floor.c: plain Vulkan through the system loader, no kiln code) and
# kiln-benchmark-hal on the same device in one run and prints one table with
# both and the ratios (goal: kiln within 1.3x of raw Vulkan on each row).
#   usage: scripts/bench-hal.sh [build-dir]    (default build-bench, -O2, no sanitizers)
#   env:   KILN_BENCH_DEVICE=N  device ordinal (default 0)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
device=${KILN_BENCH_DEVICE:-0}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$root" --buildtype=debugoptimized -Dwerror=false -Dtests=false >/dev/null
fi
ninja -C "$build" tools/benchmark-hal/kiln-benchmark-hal tools/benchmark-hal/kiln-vulkan-floor >/dev/null

floor=$("$build/tools/benchmark-hal/kiln-vulkan-floor" --device="$device")
kiln=$("$build/tools/benchmark-hal/kiln-benchmark-hal" --device="vulkan://$device")
echo "$floor" | sed 's/^/floor> /'
echo "$kiln" | sed 's/^/kiln>  /'
echo

{ echo "$floor" | sed 's/^/F /'; echo "$kiln" | sed 's/^/K /'; } | awk '
  $1 == "F" && $2 == "submit_rtt_us:" { floor_rtt = $3 }
  $1 == "F" && $2 == "dispatch_us:"   { floor_host = $5 }
  $1 == "F" && $2 == "record_us:"     { raw_record = $3 }
  $1 == "F" && $2 == "device:"        { device = substr($0, 11) }
  $1 == "K" && $2 == "submit_rtt_us:" { kiln_rtt = $3 }
  $1 == "K" && $2 == "record_us:"     { kiln_record = $3 }
  $1 == "K" && $2 == "resubmit_us:"   { kiln_resubmit = $3 }
  $1 == "K" && $2 == "rebind_resubmit_us:" { kiln_rebind = $3 }
  END {
    printf "device: %s\n", device
    printf "%-44s %12s %12s %7s  %s\n", "row (median, microseconds)", "kiln", "raw Vulkan", "ratio", "raw from"
    row("submit round trip of one dispatch", kiln_rtt, floor_rtt, "floor submit_rtt_us")
    row("host cost per recorded dispatch+barrier", kiln_record, raw_record, "floor record_us")
    row("resubmit recorded cmdbuf, per dispatch", kiln_resubmit, floor_host, "floor dispatch_us host")
    row("resubmit with new binding table, per disp.", kiln_rebind, floor_host, "floor dispatch_us host")
  }
  function row(name, k, r, source) {
    printf "%-44s %12.4f %12.4f %6.2fx  %s\n", name, k, r, (r > 0 ? k / r : 0), source
  }'
