#!/bin/bash
# Variants of csmith seeds through the triage guard's gcc and clang warning sets (the
# warnings it turns into errors: mutators/src/ub_warnings.rs): how many variants would the guard reject
# although nothing in them is undefined?
#
#   tests/studies/guard_warnings.sh target/release/ccfuzz OUT hermes|orion|athena SEEDS VARIANTS
#
# Csmith programs go through seed vetting (in `ccfuzz mutate`), as in a campaign, until SEEDS
# of them are accepted; the rejected ones and their reasons are in OUT/vetting.txt.
# The numbers of the accepted programs go to OUT/accepted.txt. With SEEDS_FROM=FILE (such a
# list, e.g. from a run with a newer build), exactly those csmith programs are mutated, so two
# builds are compared on the same seeds.
# Prints "FAMILY: N variants of S seeds; gcc guard fails G, clang guard fails C" and keeps each
# failing variant's first error in OUT/failures.txt.
set -u
bin=$(realpath "$1"); out=$2; family=$3; nseeds=$4; per=$5
check_rs="$(dirname "$0")/../../mutators/src/ub_warnings.rs"
warnings() { sed -n "/pub const $1/,/^];/p" "$check_rs" | grep -o '"[^"]*"' | tr -d '"' | sed 's/^/-Werror=/' | tr '\n' ' '; }
gcc_flags=$(warnings GCC_UB_WARNINGS)
clang_flags=$(warnings CLANG_UB_WARNINGS)
rm -rf "$out"; mkdir -p "$out"
total=0; gcc_fails=0; clang_fails=0; accepted=0; s=0; tried=0
next_seed() {
  tried=$((tried+1))
  if [ -n "${SEEDS_FROM:-}" ]; then s=$(sed -n "${tried}p" "$SEEDS_FROM"); [ -n "$s" ]
  else s=$tried; fi
}
while [ "$accepted" -lt "$nseeds" ] && next_seed; do
  # csmith writes `platform.info` into its working directory.
  (cd "$out" && csmith --no-packed-struct -s "$s" > "cs$s.c" 2>/dev/null)
  # `ccfuzz mutate` vets the seed as a campaign does and refuses a rejected one.
  timeout 300 "$bin" mutate --seed "$out/cs$s.c" --mutator "$family" -n "$per" --out "$out/v$s" --random-seed "$s" > "$out/vet.out" 2>&1 \
    || { echo "csmith -s $s: $(grep -m1 -i 'rejected\|error' "$out/vet.out")" >> "$out/vetting.txt"; continue; }
  accepted=$((accepted+1))
  echo "$s" >> "$out/accepted.txt"
  for v in "$out/v$s"/variant-*.c; do
    total=$((total+1))
    gcc-12 -O1 -c $gcc_flags -I/usr/include/csmith "$v" -o "$out/x.o" 2> "$out/g.err" \
      || { gcc_fails=$((gcc_fails+1)); echo "gcc: $v: $(grep -m1 error: "$out/g.err")" >> "$out/failures.txt"; }
    clang-19 -fsyntax-only $clang_flags -I/usr/include/csmith "$v" 2> "$out/c.err" \
      || { clang_fails=$((clang_fails+1)); echo "clang: $v: $(grep -m1 error: "$out/c.err")" >> "$out/failures.txt"; }
  done
done
echo "vetting: $accepted accepted, the last csmith program tried was -s $s"
echo "$family: $total variants of $nseeds seeds; gcc guard fails $gcc_fails, clang guard fails $clang_fails"
