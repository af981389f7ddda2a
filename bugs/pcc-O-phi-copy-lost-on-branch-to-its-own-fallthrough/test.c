/* pcc -O (its SSA passes) loses the copy into a merged variable on one of two edges that
   lead from one block to the same successor: here the empty `if (b == 0) ;` branches to the
   statement after it and also falls through to it. On the edge where b == 0, `return b`
   reads a register that was never set.
   Expected output (gcc-12, clang-19, pcc without -O): 0 5 7
   pcc -O (Debian's 20220331, git 9db636ff) prints a leftover register for the first call,
   4198812 here, then 5 7. */
#include <stdio.h>

int pick(int c, int x) {
  int b = 7;
  if (c) {
    b = x;
    if (b == 0)
      ;
  }
  return b;
}

int main(void) {
  printf("%d %d %d\n", pick(1, 0), pick(1, 5), pick(0, 5));
  return 0;
}
