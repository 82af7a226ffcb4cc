#!/usr/bin/env bash
# Runs the raw-Vulkan floor (../shared/tools/vkfloor) and kiln-benchmark-hal
# on the same device in one run and prints one table with both and the
# ratios (goal: kiln within 1.3x of raw Vulkan on each row).
#   usage: scripts/bench-hal.sh [build-dir]    (default build-bench, -O2, no sanitizers)
#   env:   KILN_BENCH_DEVICE=N  device ordinal (default 0)
#          KILN_VKFLOOR_DIR     where vkfloor lives (default ../shared/tools/vkfloor)
# vkfloor's bandwidth/FMA rows are shrunk (VKFLOOR_MB/ITERS/GROUPS) because
# only its overhead rows are compared here; set them to override.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
floor_dir=${KILN_VKFLOOR_DIR:-$root/../shared/tools/vkfloor}
device=${KILN_BENCH_DEVICE:-0}
if [ ! -f "$floor_dir/run.sh" ]; then
  echo "bench-hal: vkfloor not found in $floor_dir (set KILN_VKFLOOR_DIR)" >&2
  exit 1
fi
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$root" --buildtype=debugoptimized -Dwerror=false -Dtests=false >/dev/null
fi
ninja -C "$build" tools/benchmark-hal/kiln-benchmark-hal >/dev/null

floor=$(VKFLOOR_DEVICE=$device VKFLOOR_MB=${VKFLOOR_MB:-16} \
        VKFLOOR_ITERS=${VKFLOOR_ITERS:-64} VKFLOOR_GROUPS=${VKFLOOR_GROUPS:-64} \
        VKFLOOR_OUT="$build/vkfloor" sh "$floor_dir/run.sh")
kiln=$("$build/tools/benchmark-hal/kiln-benchmark-hal" --device="vulkan://$device")
echo "$floor" | sed 's/^/vkfloor> /'
echo "$kiln" | sed 's/^/kiln>    /'
echo

printf '%s\n%s\n' "$floor" "$kiln" | awk '
  /^submit_rtt_us:/ { if (!floor_rtt) floor_rtt = $2; else kiln_rtt = $2 }
  /^dispatch_us:/   { floor_host = $4 }
  /^record_us:/     { kiln_record = $2; raw_record = $4 }
  /^resubmit_us:/   { kiln_resubmit = $2 }
  /^rebind_resubmit_us:/ { kiln_rebind = $2 }
  /^device:/        { if (!device) device = substr($0, 9) }
  END {
    printf "device: %s\n", device
    printf "%-44s %12s %12s %7s  %s\n", "row (median, microseconds)", "kiln", "raw Vulkan", "ratio", "raw from"
    row("submit round trip of one dispatch", kiln_rtt, floor_rtt, "vkfloor submit_rtt_us")
    row("host cost per recorded dispatch+barrier", kiln_record, raw_record, "same VkDevice, same run")
    row("resubmit recorded cmdbuf, per dispatch", kiln_resubmit, floor_host, "vkfloor dispatch_us host")
    row("resubmit with new binding table, per disp.", kiln_rebind, floor_host, "vkfloor dispatch_us host")
  }
  function row(name, k, r, source) {
    printf "%-44s %12.4f %12.4f %6.2fx  %s\n", name, k, r, (r > 0 ? k / r : 0), source
  }'
