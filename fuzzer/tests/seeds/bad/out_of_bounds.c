/* Reads one element past the end of a global array. */
#include <stdio.h>

int a[4] = {1, 2, 3, 4};
int b = 5;

int main(void) {
    volatile int i = 4;
    printf("%d\n", a[i]);
    return 0;
}
