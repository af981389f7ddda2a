/* A second well-behaved seed with code that never runs. */
#include <stdio.h>

static unsigned table[8];

int main(void) {
    unsigned i, acc = 1;
    for (i = 0; i < 8; i++) {
        table[i] = acc;
        acc = acc * 5u + i;
        if (acc == 0u) {
            table[0] = 99u;
            acc = 1u;
        }
    }
    if (table[3] > 1000000u) {
        printf("big\n");
    }
    printf("%u %u\n", acc, table[7]);
    return 0;
}
