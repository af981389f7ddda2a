#!/bin/bash
# How often TinyCC at given commits of its history miscompiles or rejects csmith programs: the
# density of bugs plain csmith meets there, which tells where a ground-truth benchmark
# (`ccfuzz experiment ground-truth`) can start.
#
#   tests/studies/tinycc_density.sh GITDIR PROGRAMS WORKDIR REV...
#
# PROGRAMS csmith programs (`--no-packed-struct`, seeds 1001 on) that gcc-12 -O0 and clang-14 -O0
# compile, run within 2 s and agree on are kept in WORKDIR/pool with gcc's output. Each REV is
# built once into WORKDIR/tcc/<hash> (`git archive`, `./configure && make tcc libtcc1.a`, without
# the bounds checker's runtime, which 2018-era sources cannot build against today's glibc). Prints
# one line per commit: "REV HASH FAILED/PROGRAMS program..." where a program is listed with
# ":rejected" when tcc does not compile it, and alone when its binary prints something else.
set -u
git_dir=$(realpath "$1"); wanted=$2; work=$(realpath -m "$3"); shift 3
mkdir -p "$work/pool" "$work/tcc"
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT

seed=1000
while [ "$(find "$work/pool" -name '*.ref' | wc -l)" -lt "$wanted" ]; do
  seed=$((seed + 1)); program=$work/pool/p$seed
  [ -f "$program.ref" ] && continue
  csmith --seed "$seed" --no-packed-struct -o "$program.c" >/dev/null 2>&1 || continue
  gcc-12 -O0 -w -I/usr/include/csmith "$program.c" -o "$scratch/gcc" 2>/dev/null &&
    clang-14 -O0 -w -I/usr/include/csmith "$program.c" -o "$scratch/clang" 2>/dev/null &&
    gcc_out=$(timeout 2 "$scratch/gcc") && clang_out=$(timeout 2 "$scratch/clang") &&
    [ "$gcc_out" = "$clang_out" ] && { printf '%s\n' "$gcc_out" > "$program.ref"; continue; }
  rm -f "$program.c"
done

for rev in "$@"; do
  hash=$(git -C "$git_dir" rev-parse --short=8 "$rev^{commit}") || continue
  tcc_dir=$work/tcc/$hash
  if [ ! -x "$tcc_dir/tcc" ]; then
    rm -rf "$tcc_dir.partial" && mkdir -p "$tcc_dir.partial"
    git -C "$git_dir" archive "$hash" | tar -x -C "$tcc_dir.partial"
    (cd "$tcc_dir.partial" && ./configure --triplet="$(gcc -print-multiarch)" >/dev/null 2>&1 &&
      make tcc libtcc1.a BCHECK_O= >/dev/null 2>&1) || { echo "$rev $hash does not build"; continue; }
    mv "$tcc_dir.partial" "$tcc_dir"
  fi
  failed=0; total=0; list=
  for reference in "$work"/pool/*.ref; do
    program=${reference%.ref}; total=$((total + 1))
    if ! "$tcc_dir/tcc" -B"$tcc_dir" -I"$tcc_dir/include" -w -I/usr/include/csmith "$program.c" \
        -o "$scratch/tcc" -lm 2>/dev/null; then
      failed=$((failed + 1)); list="$list $(basename "$program"):rejected"; continue
    fi
    [ "$(timeout 4 "$scratch/tcc" 2>/dev/null)" = "$(cat "$reference")" ] ||
      { failed=$((failed + 1)); list="$list $(basename "$program")"; }
  done
  echo "$rev $hash $failed/$total$list"
done
