#!/usr/bin/env python3
"""Runs the tests a meson build registered (meson-info/intro-tests.json)
without meson itself: for a build carried to a machine whose meson differs
or is missing. Prints each test's status and time and ends with
'N passed, N failed'.

Usage: run-built-tests.py BUILD_DIR [NAME...] [--timeout-multiplier=N]
"""
import json
import os
import subprocess
import sys
import time


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    multiplier = 1.0
    for a in sys.argv[1:]:
        if a.startswith("--timeout-multiplier="):
            multiplier = float(a.split("=", 1)[1])
    if not args:
        print(__doc__)
        return 2
    build, wanted = args[0], set(args[1:])
    with open(os.path.join(build, "meson-info", "intro-tests.json")) as f:
        tests = json.load(f)
    passed = failed = 0
    for test in tests:
        if wanted and test["name"] not in wanted:
            continue
        env = dict(os.environ)
        env.update(test.get("env") or {})
        # Run-time exports of this machine win over the build's defaults.
        for key in ("KILN_TEST_DEVICE", "KILN_VULKAN_VALIDATION",
                    "KILN_VULKAN_API_VERSION"):
            if key in os.environ and key not in (test.get("env") or {}):
                env[key] = os.environ[key]
        timeout = (test.get("timeout") or 30) * multiplier
        start = time.monotonic()
        try:
            result = subprocess.run(test["cmd"], env=env, cwd=test.get("workdir") or build,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    timeout=timeout)
            code, output = result.returncode, result.stdout
        except subprocess.TimeoutExpired as error:
            code, output = "timeout", error.stdout or b""
        seconds = time.monotonic() - start
        ok = code == 0
        passed += ok
        failed += not ok
        print(f"{test['name']:32s} {'OK' if ok else 'FAIL (' + str(code) + ')'} {seconds:8.2f}s",
              flush=True)
        if not ok:
            sys.stdout.write(output.decode(errors="replace")[-6000:])
        else:
            # googletest's skips pass the run: name each with its reason.
            lines = output.decode(errors="replace").splitlines()
            for i, line in enumerate(lines):
                if line.endswith(": Skipped") and i + 1 < len(lines):
                    print("    skipped: " + lines[i + 1], flush=True)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
