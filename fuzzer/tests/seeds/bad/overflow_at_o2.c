/* Signed overflow visible only when optimizing: gcc -O0 and clang -O0 print 0, their -O2
   prints 1. UBSan must reject it before any -O2 makes it a false finding. */
#include <limits.h>
#include <stdio.h>

int main(void) {
    volatile int x = INT_MAX;
    int y = x + 1;
    printf("%d\n", y > x);
    return 0;
}
