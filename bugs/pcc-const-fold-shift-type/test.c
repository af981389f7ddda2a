/* pcc folds a shift of two constants with the usual arithmetic conversions, so the result
   gets the type of the wider/unsigned operand instead of the promoted left operand's type.
   Expected output (gcc-12, clang-19):
     40000000 1
     1 4
   Debian's pcc 1.2.0.DEVEL 20220331 and current pcc print:
     12340000000 0
     0 8 */
#include <stdio.h>
unsigned ui = 0x1234U;
int main(void) {
  printf("%lx %d\n", (unsigned long)(0x1234U << 28UL),   /* unsigned int: 0x40000000 */
         ((ui >> 4) | (ui << (sizeof ui * 8 - 4))) == ((0x1234U >> 4) | (0x1234U << (sizeof 0x1234U * 8 - 4))));
  printf("%d %d\n", (1 << 2U) > -1, (int)sizeof(1 << 2L));  /* int: 4 > -1 is 1; sizeof(int) */
  return 0;
}
