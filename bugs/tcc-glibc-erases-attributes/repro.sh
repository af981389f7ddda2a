#!/bin/bash
# Usage: repro.sh [TCC...]   (default: tcc). Exits 1 when the bug shows (TinyCC's binary prints
# other sizes than gcc's), 0 when it does not.
set -u
cd "$(dirname "$0")"
tcc_cmd=("${@:-tcc}")
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
gcc -O0 test.c -o "$dir/gcc" && expected=$("$dir/gcc") || { echo "gcc build failed"; exit 2; }
"${tcc_cmd[@]}" test.c -o "$dir/tcc" || { echo "tcc build failed"; exit 2; }
got=$("$dir/tcc" 2>&1); status=$?
echo "gcc:  $expected"
echo "${tcc_cmd[*]}: ${got:-<nothing>} (exit $status)"
# The cause, visible in the preprocessor's macro table:
"${tcc_cmd[@]}" -dM -E test.c | grep -F '#define __attribute__(' | sed 's/^/  tcc -dM: /'
if [ "$got" != "$expected" ] || [ "$status" -ne 0 ]; then
  echo "bug shows"; exit 1
fi
echo "bug does not show"
