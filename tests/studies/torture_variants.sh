#!/bin/bash
# Variants of the compilers' own execution tests (`make seeds`): are they still valid programs?
# Each test that seed vetting accepts gets VARIANTS variants from each mutator family
# (`ccfuzz mutate`), and each variant must print what its seed prints and exit as it does
# under gcc-12 -O0 and clang-19 -O0, and run cleanly under clang-19's UBSan+ASan and MSan.
#
#   tests/studies/torture_variants.sh target/release/ccfuzz OUT SEED_DIR VARIANTS [MAX_SEEDS [SKIP]]
#
# Variants come from the MAX_SEEDS accepted tests (sorted by path) after the first SKIP. With
# VETTING=FILE (an earlier run's OUT/vetting.txt) the tests are not vetted again. A family whose
# chain stops early (Athena on a test with little code that never ran) still has the variants it
# made checked.
#
# Prints the vetting counts, then per family "FAMILY: N variants of S seeds; wrong under gcc G,
# under clang C; sanitizer reports U (UBSan+ASan), M (MSan)"; every failure's first line goes
# to OUT/failures.txt.
set -u
bin=$(realpath "$1"); out=$2; dir=$(realpath "$3"); per=$4; max=${5:-1000000}; skip=${6:-0}
rm -rf "$out"; mkdir -p "$out"; out=$(realpath "$out")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
if [ -n "${VETTING:-}" ]; then
  cp "$VETTING" "$out/vetting.txt"
else
  "$bin" seeds --store "$out/store" --dir "$dir" > "$out/vetting.txt" 2>&1
fi
grep -E 'seeds: |rejections' "$out/vetting.txt"
mapfile -t accepted < <(sed -n 's/^seed \(.*\): accepted as .*/\1/p' "$out/vetting.txt" | sort | tail -n +$((skip + 1)) | head -n "$max")

# Runs binary $1 with a 10 s limit; prints its stdout and then its exit status.
outcome() { (cd "$work" && timeout -s KILL 10 "$1"; echo "exit $?"); }

declare -A total wrong_gcc wrong_clang ubsan msan seeds
families=(orion hermes athena)
for family in "${families[@]}"; do total[$family]=0; wrong_gcc[$family]=0; wrong_clang[$family]=0; ubsan[$family]=0; msan[$family]=0; seeds[$family]=0; done
for seed in "${accepted[@]}"; do
  gcc-12 -O0 -w "$seed" -o "$work/seed" -lm 2>/dev/null || continue
  expected=$(outcome "$work/seed")
  for family in "${families[@]}"; do
    vdir="$out/variants/$(basename "$seed" .c)-$family"
    timeout 300 "$bin" mutate --seed "$seed" --mutator "$family" -n "$per" --out "$vdir" > /dev/null 2>&1
    compgen -G "$vdir/variant-*.c" > /dev/null || continue
    seeds[$family]=$((seeds[$family] + 1))
    for v in "$vdir"/variant-*.c; do
      [ -e "$v" ] || continue
      total[$family]=$((total[$family] + 1))
      for cc in gcc-12 clang-19; do
        if ! $cc -O0 -w "$v" -o "$work/v" -lm 2> "$work/err" || [ "$(outcome "$work/v")" != "$expected" ]; then
          [ $cc = gcc-12 ] && wrong_gcc[$family]=$((wrong_gcc[$family] + 1)) || wrong_clang[$family]=$((wrong_clang[$family] + 1))
          echo "$cc: $v: $(head -n 1 "$work/err")" >> "$out/failures.txt"
        fi
      done
      clang-19 -O0 -w -g -fsanitize=undefined,float-divide-by-zero,address -fno-sanitize-recover=all "$v" -o "$work/u" -lm 2> "$work/err" \
        && [ "$(outcome "$work/u" 2> "$work/run.err")" = "$expected" ] \
        || { ubsan[$family]=$((ubsan[$family] + 1)); echo "UBSan+ASan: $v: $(grep -m1 -h 'runtime error\|ERROR' "$work/err" "$work/run.err")" >> "$out/failures.txt"; }
      clang-19 -O0 -w -g -fsanitize=memory -fsanitize-memory-param-retval "$v" -o "$work/m" -lm 2> "$work/err" \
        && [ "$(outcome "$work/m" 2> "$work/run.err")" = "$expected" ] \
        || { msan[$family]=$((msan[$family] + 1)); echo "MSan: $v: $(grep -m1 -h 'WARNING\|error' "$work/err" "$work/run.err")" >> "$out/failures.txt"; }
    done
  done
done
for family in "${families[@]}"; do
  echo "$family: ${total[$family]} variants of ${seeds[$family]} seeds; wrong under gcc ${wrong_gcc[$family]}, under clang ${wrong_clang[$family]}; sanitizer reports ${ubsan[$family]} (UBSan+ASan), ${msan[$family]} (MSan)"
done
