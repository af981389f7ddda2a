#include <stdio.h>
int g, y;
int main(void) {
    int x = 5;
    x = 1 || ((g && 1) || y);
    printf("x=%d\n", x); /* Debian's tcc never gets here: main returns 5 */
    return 0;
}
