#!/bin/bash
# Usage: repro.sh [PCC...]   (default: pcc -O). Exits 1 when the bug shows (the pcc-built binary
# prints something other than what the gcc-built one prints, "0 5 7"), 0 when not.
set -u
cd "$(dirname "$0")"
if [ $# -eq 0 ]; then cc_cmd=(pcc -O); else cc_cmd=("$@"); fi
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
gcc -O0 test.c -o "$dir/gcc" && expected=$("$dir/gcc") || { echo "gcc build failed"; exit 2; }
"${cc_cmd[@]}" test.c -o "$dir/cc" 2> "$dir/cc.err" || { cat "$dir/cc.err"; echo "pcc build failed"; exit 2; }
got=$("$dir/cc" 2>&1); status=$?
echo "gcc: $expected; ${cc_cmd[*]}: ${got:-<nothing>} (exit $status)"
if [ "$got" != "$expected" ] || [ "$status" -ne 0 ]; then
  echo "bug shows"; exit 1
fi
echo "bug does not show"
