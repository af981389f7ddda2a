/* `a[i++] = i` reads and modifies i unsequenced (undefined behaviour): gcc -O0 and
   clang -O0 print different values, so the seed must be rejected. */
#include <stdio.h>

int main(void) {
    int i = 0;
    int a[3] = {0, 0, 0};
    a[i++] = i;
    printf("%d %d\n", a[0], a[1]);
    return 0;
}
