/* pcc never releases the stack space of a variable-length array: each time a block with a VLA
   is entered, %rsp moves further down, and it only comes back when the function returns.
   C11 6.2.4p7: the VLA's lifetime ends when execution leaves the scope of its declaration.
   Expected output (gcc-12, clang-19):
     0
     done
   Debian's pcc 1.2.0.DEVEL 20220331 and current pcc, with and without -O, print
     12672
   and then crash with SIGSEGV (stack overflow) in the second loop. */
#include <stdio.h>
void *volatile sink;
volatile int n = 100;
int main(void) {
  unsigned long first = 0, last = 0;
  for (int i = 0; i < 100; i++) {
    char y[n];                          /* the same size every time */
    if (i == 0) first = (unsigned long)y;
    last = (unsigned long)y;
    sink = y;
  }
  printf("%lu\n", first - last);        /* how far the 100th y is below the first */
  fflush(stdout);
  for (int i = 0; i < 1000000; i++) {
    int x[i % 1000 + 1];                /* at most 4000 bytes, live for one iteration */
    x[0] = i;
    sink = x;
  }
  puts("done");
  return 0;
}
