#!/bin/bash
# Usage: repro.sh [TCC...]   (default: tcc). Exits 1 when the bug shows (the tcc-built binary
# prints something other than the gcc-built one, "1.5 5 6"), 0 when it does not.
set -u
cd "$(dirname "$0")"
tcc_cmd=("${@:-tcc}")
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
gcc -O0 -std=gnu17 -w test.c -o "$dir/gcc" && expected=$("$dir/gcc") || { echo "gcc build failed"; exit 2; }
"${tcc_cmd[@]}" -w test.c -o "$dir/tcc" || { echo "tcc build failed"; exit 2; }
got=$("$dir/tcc" 2>&1); status=$?
echo "gcc: $expected; ${tcc_cmd[*]}: ${got:-<nothing>} (exit $status)"
if [ "$got" != "$expected" ] || [ "$status" -ne 0 ]; then
  echo "bug shows"; exit 1
fi
echo "bug does not show"
