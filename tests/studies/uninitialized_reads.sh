#!/bin/bash
# Which checks catch an uninitialized read: clang's MemorySanitizer (-fsanitize-memory-param-retval;
# seed vetting builds it at -O0, the study also at -O1), gcc's -O1 warnings, clang's -O1 warnings?
# One small program per pattern; a check "catches" a pattern when it fails the program.
#
#   tests/studies/uninitialized_reads.sh [CLANG] [GCC]      (default clang-19, gcc-12)
set -u
clang=${1:-clang-19}; gcc=${2:-gcc-12}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
head='#include <stdio.h>
#include <stdlib.h>
volatile int zero = 0, one = 1;'
declare -A cases=(
  [local]='int main(void) { int x; printf("%d\n", x > 0); return 0; }'
  [branch]='int main(void) { int x; if (zero) x = 1; printf("%d\n", x > 0); return 0; }'
  [condition_only]='int main(void) { int x; if (zero) x = 1; if (x) puts("a"); return 0; }'
  [callee_return]='static int pick(int c) { int x; if (c) x = 3; return x; }
int main(void) { printf("%d\n", pick(zero) > 2); return 0; }'
  [argument]='static void show(int v) { printf("%d\n", v > 0); }
int main(void) { int x; if (zero) x = 1; show(x); return 0; }'
  [array_element]='int main(void) { int a[4]; a[0] = 1; printf("%d\n", a[one + 1] > 0); return 0; }'
  [struct_field]='struct s { int a, b; };
int main(void) { struct s v; v.a = 1; printf("%d\n", v.b > 0); return 0; }'
  [through_pointer]='static void maybe_set(int *p) { if (zero) *p = 1; }
int main(void) { int x; maybe_set(&x); printf("%d\n", x > 0); return 0; }'
  [heap]='int main(void) { int *p = malloc(4 * sizeof *p); printf("%d\n", p[one] > 0); free(p); return 0; }'
  [loop_carried]='int main(void) { int x, i; for (i = 0; i < one; i++) if (zero) x = i; printf("%d\n", x > 0); return 0; }'
)
printf '%-16s %-10s %-10s %-10s %-10s\n' pattern "MSan -O0" "MSan -O1" "gcc -O1" "clang -O1"
msan() {
  if "$clang" "$1" -g -fsanitize=memory -fsanitize-memory-param-retval -fno-sanitize-recover=all \
      -w "$dir/p.c" -o "$dir/msan" 2>/dev/null; then
    "$dir/msan" >/dev/null 2>&1 && echo no || echo yes
  else
    echo "no build"
  fi
}
for name in $(printf '%s\n' "${!cases[@]}" | sort); do
  printf '%s\n%s\n' "$head" "${cases[$name]}" > "$dir/p.c"
  gccw=no; clangw=no
  "$gcc" -O1 -c -Werror=uninitialized -Werror=maybe-uninitialized "$dir/p.c" -o "$dir/g.o" 2>/dev/null || gccw=yes
  "$clang" -O1 -c -Werror=uninitialized -Werror=sometimes-uninitialized -Werror=conditional-uninitialized \
    "$dir/p.c" -o "$dir/c.o" 2>/dev/null || clangw=yes
  printf '%-16s %-10s %-10s %-10s %-10s\n' "$name" "$(msan -O0)" "$(msan -O1)" "$gccw" "$clangw"
done
