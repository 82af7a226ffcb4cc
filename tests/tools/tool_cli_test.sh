#!/usr/bin/env bash
# Every kiln tool answers --help and --version on stdout with exit status 0,
# the version being the project's.
# Args: VERSION TOOL...
set -uo pipefail
version=$1
shift
failures=0
for tool in "$@"; do
  name=$(basename "$tool")
  out=$("$tool" --version 2>&1)
  code=$?
  if [ "$code" -ne 0 ] || [ "$out" != "$name $version" ]; then
    echo "FAIL: $name --version: exit $code, printed '$out' (expected '$name $version')"
    failures=$((failures + 1))
  fi
  out=$("$tool" --help 2>/dev/null)
  code=$?
  if [ "$code" -ne 0 ] || ! echo "$out" | grep -q "usage"; then
    echo "FAIL: $name --help: exit $code, no usage on stdout"
    failures=$((failures + 1))
  fi
done
[ "$failures" -eq 0 ] || exit 1
echo "$# tools answer --help and --version ($version)"
