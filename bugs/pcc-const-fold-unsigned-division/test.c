/* pcc folds int / unsigned int and int % unsigned int wrongly when the int is negative.
   Expected output (gcc-12, clang-19):
     1 127
     1
   Debian's pcc 1.2.0.DEVEL 20220331 and current pcc print:
     128 16383
     1853947395 */
#include <stdio.h>
int main(void) {
  printf("%u %u\n", -1 / 4294967168U, -1 % 4294967168U);   /* C: (unsigned)-1 = 4294967295 -> "1 127" */
  printf("%u\n", -100 / 3000000000U);                       /* C: 4294967196 / 3000000000 = 1 */
  return 0;
}
