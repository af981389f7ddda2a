#!/bin/bash
# Usage: repro.sh [PCC...]   (default: pcc). Exits 1 when the bug shows (the compiler rejects
# test.c, or its binary prints something other than gcc's 276), 0 when not.
set -u
cd "$(dirname "$0")"
cc_cmd=("${@:-pcc}")
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
gcc -O0 test.c -o "$dir/gcc" && expected=$("$dir/gcc") || { echo "gcc build failed"; exit 2; }
if ! "${cc_cmd[@]}" test.c -o "$dir/cc" 2>"$dir/err"; then
  echo "${cc_cmd[*]} rejects test.c: $(grep -v 'GNU-stack\|NOTE' "$dir/err" | head -2 | tr '\n' ' ')"
  echo "bug shows"; exit 1
fi
got=$("$dir/cc" 2>&1); status=$?
echo "gcc: $expected; ${cc_cmd[*]}: ${got:-<nothing>} (exit $status)"
if [ "$got" != "$expected" ] || [ "$status" -ne 0 ]; then
  echo "bug shows"; exit 1
fi
echo "bug does not show"
