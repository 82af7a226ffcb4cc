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

# Count googletest cases (not binaries) from meson's JUnit log, plus one
# failure for every meson test that failed with no failing case of its own
# (a binary that exits non-zero after its cases pass, e.g. a leak reported
# at exit, a crash in a destructor), from meson's JSON log.
summary=$(python3 - "$build_dir/meson-logs" <<'PY'
import json, os, sys, xml.etree.ElementTree as ET
logs = sys.argv[1]
try:
    root = ET.parse(os.path.join(logs, "testlog.junit.xml")).getroot()
except Exception as error:
    print(f"0 passed, 1 failed  # no test log: {error}")
    sys.exit(0)
passed = failed = skipped = 0
# ".project.test.GtestSuite." per failing gtest case, ".test." per other
# failing test: a meson test's failure is covered when ".name." is in one.
failed_ids = set()
for suite in root.iter("testsuite"):
    for case in suite.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            gtest = case.get("classname") != suite.get("name") or "." in suite.get("name", "")
            failed_ids.add(f".{suite.get('name') if gtest else case.get('name')}.")
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
try:
    with open(os.path.join(logs, "testlog.json")) as log:
        runs = [json.loads(line) for line in log if line.strip()]
except Exception as error:
    runs = []
    print(f"# no meson JSON log: {error}", file=sys.stderr)
for run in runs:
    if run.get("result") in ("OK", "SKIP", "EXPECTEDFAIL"):
        continue
    name = str(run.get("name"))
    # Meson may print "project:suite / test"; the JUnit log uses the test.
    short = name.split(" / ")[-1]
    if not any(f".{short}." in i or f".{name}." in i for i in failed_ids):
        failed += 1
        print(f"meson test '{name}' {run.get('result')} (exit status "
              f"{run.get('returncode')}) with no failing test case: counted as 1 failed",
              file=sys.stderr)
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
)
# ThreadSanitizer on the session thread tests only (issue 12: one session
# from many threads, sessions on one device, sessions sharing one model): its own build
# dir with just that binary; the sample modules come from the build above.
# Counts as one test. KILN_TSAN=0 skips it.
tsan_passed=0 tsan_failed=0
if [ "${KILN_TSAN:-1}" != 0 ]; then
  tsan_dir=${KILN_TSAN_BUILD_DIR:-build-tsan}
  tsan_log="$tsan_dir/tsan-test.log"
  if { [ -f "$tsan_dir/build.ninja" ] || meson setup "$tsan_dir" \
         -Db_sanitize=thread -Db_lundef=false -Donnx=disabled >/dev/null; } &&
     ninja -C "$tsan_dir" tests/samples/kiln_session_threads_tests >/dev/null &&
     KILN_SAMPLES_DIR="$here/$build_dir/samples" \
     TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$here/tests/samples/tsan_suppressions.txt" \
       timeout 600 "$tsan_dir/tests/samples/kiln_session_threads_tests" \
       >"$tsan_log" 2>&1; then
    tsan_passed=1
  else
    tsan_failed=1
    echo "ThreadSanitizer session test failed:"; tail -n 60 "$tsan_log" 2>/dev/null
  fi
fi

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
passed=$(( ${passed:-0} + fuzz_passed + tsan_passed ))
failed=$(( ${failed:-1} + fuzz_failed + tsan_failed ))
echo "$passed passed, $failed failed, ${skipped:-0} skipped"
if [ "$meson_status" != 0 ] || [ "$failed" != 0 ]; then
  exit 1
fi
