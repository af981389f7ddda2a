#!/bin/bash
# Usage: repro.sh [TCC...]   (default: tcc). Exits 1 when the bug shows (the tcc-built binary
# does not print what the gcc-built one prints, "x=1", or exits non-zero), 0 when not.
set -u
cd "$(dirname "$0")"
cc_cmd=("${@:-tcc}")
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
gcc -O0 test.c -o "$dir/gcc" && expected=$("$dir/gcc") || { echo "gcc build failed"; exit 2; }
"${cc_cmd[@]}" test.c -o "$dir/cc" || { echo "tcc build failed"; exit 2; }
got=$("$dir/cc" 2>&1); status=$?
echo "gcc: $(echo $expected); ${cc_cmd[*]}: $(echo ${got:-<nothing>}) (exit $status)"
if [ "$got" != "$expected" ] || [ "$status" -ne 0 ]; then
  echo "bug shows"; exit 1
fi
echo "bug does not show"
