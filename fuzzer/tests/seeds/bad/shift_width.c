/* Shifts a 32-bit int by 32. */
#include <stdio.h>

int main(void) {
    volatile int s = 32;
    unsigned x = 1u << s;
    printf("%u\n", x);
    return 0;
}
