/* TinyCC 0.9.27 with -b (bounds checking) reports "BCHECK: ... is outside of the region" and
   exits 255 when a function returns a bit-field struct read through a pointer taken from an
   array of pointers. Reduced by hand from csmith seed 1c2c270f2e8589f28745d696dddd0cad, on
   which a `tcc -b` campaign reported the mismatch; gcc, clang, UBSan and ASan see no problem. */
#include <stdio.h>
struct S4 { unsigned f0 : 13; unsigned f1 : 8; unsigned f2 : 12; signed f3 : 11; signed f4 : 3; signed f5 : 20; };
static struct S4 g = {1, 2, 3, 4, 1, 5};
static struct S4 *a[4] = {&g, &g, &g, &g};
static struct S4 **volatile pp = &a[3];
static struct S4 f(void) { return **pp; }
int main(void) {
  struct S4 s = f();
  printf("%d\n", s.f5);
  return 0;
}
