/* A value left uninitialized in a callee and used by the caller: no compiler warning sees it
   at -O0; MSan must. */
#include <stdio.h>

static int pick(int c) {
    int x;
    if (c)
        x = 3;
    return x;
}

int main(void) {
    volatile int c = 0;
    printf("%d\n", pick(c) > 2);
    return 0;
}
