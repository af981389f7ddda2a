/* Prints a value that depends on whether plain char is signed: a gcc -O0 -funsigned-char
   configuration against a gcc -O0 reference must be reported as an output mismatch. */
#include <stdio.h>

int g = 0;

static int classify(char c, int n) {
    int r = 0;
    if (n > 100) {
        r = r + 7;
        g = g * 3;
    }
    r += (c < 0) ? 1 : 2;
    return r;
}

int main(void) {
    char c = (char)200;
    int i, sum = 0;
    for (i = 0; i < 10; i++) {
        sum += classify(c, i);
        if (i > 20) {
            sum -= 5;
            g++;
        }
    }
    printf("%d %d\n", sum, g);
    return 0;
}
