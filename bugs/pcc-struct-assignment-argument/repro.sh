#!/bin/bash
# Usage: repro.sh [PCC...]   (default: pcc). Exits 1 when the bug shows (gcc's binary prints
# 7, pcc's prints something else or pcc fails to compile), 0 when it does not.
set -u
cd "$(dirname "$0")"
cc_cmd=("${@:-pcc}")
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
gcc -O0 test.c -o "$dir/gcc" && expected=$("$dir/gcc") || { echo "gcc build failed"; exit 2; }
if ! "${cc_cmd[@]}" -w test.c -o "$dir/cc" 2> "$dir/cc.err"; then
  echo "gcc: $expected; ${cc_cmd[*]}: does not compile: $(grep -m1 -v 'ld: ' "$dir/cc.err")"
  echo "bug shows"; exit 1
fi
got=$("$dir/cc" 2>&1); status=$?
echo "gcc: $expected; ${cc_cmd[*]}: ${got:-<nothing>} (exit $status)"
if [ "$got" != "$expected" ] || [ "$status" -ne 0 ]; then
  echo "bug shows"; exit 1
fi
echo "bug does not show"
