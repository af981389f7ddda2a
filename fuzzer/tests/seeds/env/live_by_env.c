/* Profiled without CCFUZZ_TEST_LIVE, it prints 1. A campaign run with CCFUZZ_TEST_LIVE set
   makes every variant print 2, as a variant whose meaning changed would: the validity gate must
   stop each one before it is judged. The block never runs, so Orion has code to delete. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    int x = 1;
    x += getenv("CCFUZZ_TEST_LIVE") != NULL;
    if (x > 100) {
        x = 3;
        x = x * 7;
    }
    printf("%d\n", x);
    return 0;
}
