#!/bin/bash
# Usage: repro.sh [TCC...]   (default: tcc). Exits 1 when the bug shows (tcc rejects the valid
# test.c, or its binary prints something other than the gcc-built one, "1"), 0 when it does not.
set -u
cd "$(dirname "$0")"
tcc_cmd=("${@:-tcc}")
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
gcc -O0 -std=c11 -pedantic -Wall -Wno-unused-value test.c -o "$dir/gcc" && expected=$("$dir/gcc") || { echo "gcc build failed"; exit 2; }
if ! "${tcc_cmd[@]}" test.c -o "$dir/tcc" 2> "$dir/tcc.err"; then
  echo "gcc: $expected; ${tcc_cmd[*]} rejects test.c: $(head -1 "$dir/tcc.err")"
  echo "bug shows"; exit 1
fi
got=$("$dir/tcc" 2>&1); status=$?
echo "gcc: $expected; ${tcc_cmd[*]}: ${got:-<nothing>} (exit $status)"
if [ "$got" != "$expected" ] || [ "$status" -ne 0 ]; then
  echo "bug shows"; exit 1
fi
echo "bug does not show"
