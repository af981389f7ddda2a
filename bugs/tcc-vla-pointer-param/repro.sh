#!/bin/bash
# Usage: repro.sh [TCC...]   (default: tcc). Exits 1 when the bug shows (the tcc-built binary
# prints something other than the gcc-built one, "4 12"), 0 when not, 2 when tcc rejects the
# test (TinyCC 0.9.27 does not take array parameters whose size is another parameter).
set -u
cd "$(dirname "$0")"
cc_cmd=("${@:-tcc}")
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
gcc -O0 test.c -o "$dir/gcc" && expected=$("$dir/gcc") || { echo "gcc build failed"; exit 2; }
"${cc_cmd[@]}" test.c -o "$dir/cc" || { echo "${cc_cmd[*]} rejects test.c"; exit 2; }
got=$("$dir/cc" 2>&1); status=$?
echo "gcc: $expected; ${cc_cmd[*]}: ${got:-<nothing>} (exit $status)"
if [ "$got" != "$expected" ] || [ "$status" -ne 0 ]; then
  echo "bug shows"; exit 1
fi
echo "bug does not show"
