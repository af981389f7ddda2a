/* pcc converts an unsigned long (or unsigned long long) held in a register to long double with
   "subq $16,%rsp ... jns 1f ... addq $16,%rsp / 1:": for a value below 2^63 the jump skips the
   addq, so each such conversion leaves %rsp 16 bytes lower.
   Expected output (gcc-12, clang-19):
     0 1001000
     1
   Debian's pcc 1.2.0.DEVEL 20220331 and current pcc print "16000 1001000" and "1" without -O;
   with -O they print "16000 1001000" and then crash in conv(1), whose ret pops a wrong address. */
#include <stdio.h>

long double conv(unsigned long u) { return u; }   /* with -O, u is converted from %rdi */

/* how far this call's frame is below *base */
__attribute__((noinline)) long depth(char *base) {
  char here;
  return (long)((unsigned long)base - (unsigned long)&here);
}

int main(void) {
  char base;
  long before = depth(&base);
  long double sum = 0;
  for (unsigned long i = 1; i <= 1000; i++)
    sum += (long double)(i * 2);                   /* i * 2 is converted from a register */
  printf("%ld %.0Lf\n", depth(&base) - before, sum);
  fflush(stdout);
  printf("%.0Lf\n", conv(1));
  return 0;
}
