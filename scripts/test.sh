#!/usr/bin/env bash
# Builds kiln with AddressSanitizer + UndefinedBehaviorSanitizer and runs the
# whole test suite on the default Vulkan device (lavapipe on a machine without
# a GPU) with the Khronos validation layer on. Ends with "N passed, M failed".
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${KILN_TEST_BUILD_DIR:-build-test}

cd "$here"
if ! bash scripts/bootstrap.sh "$build_dir" -Db_sanitize=address,undefined \
     -Db_lundef=false; then
  echo "build failed"
  echo "0 passed, 1 failed"
  exit 1
fi

export KILN_TEST_DEVICE=${KILN_TEST_DEVICE:-vulkan}
export KILN_VULKAN_VALIDATION=${KILN_VULKAN_VALIDATION:-1}
meson test -C "$build_dir" --print-errorlogs --num-processes 2 \
  --timeout-multiplier 3 "$@"
meson_status=$?

# Count googletest cases (not binaries) from meson's JUnit log.
summary=$(python3 - "$build_dir/meson-logs/testlog.junit.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception as error:
    print(f"0 passed, 1 failed  # no test log: {error}")
    sys.exit(0)
passed = failed = skipped = 0
for case in root.iter("testcase"):
    if case.find("failure") is not None or case.find("error") is not None:
        failed += 1
    elif case.find("skipped") is not None:
        skipped += 1
    else:
        passed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
)
# The fuzzers (clang, libFuzzer, ASan/UBSan) run for a bounded time on a
# seed corpus of test modules; each target counts as one test.
fuzz_seconds=${KILN_FUZZ_SECONDS:-180}
export KILN_FUZZ_RUNS=${KILN_FUZZ_RUNS:-1500000}
fuzz_passed=0 fuzz_failed=0
if [ "$fuzz_seconds" != 0 ]; then
  if bash scripts/fuzz.sh "$fuzz_seconds"; then fuzz_passed=5; else fuzz_failed=1; fi
fi

passed=$(echo "$summary" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
failed=$(echo "$summary" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
skipped=$(echo "$summary" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
passed=$(( ${passed:-0} + fuzz_passed ))
failed=$(( ${failed:-1} + fuzz_failed ))
echo "$passed passed, $failed failed, ${skipped:-0} skipped"
if [ "$meson_status" != 0 ] || [ "$failed" != 0 ]; then
  exit 1
fi
