#include <stdio.h>

/* A struct too large for registers, as the last operand of a comma
   expression in code that is never executed. */
struct big { long a, b, c; };
struct big s = { 1, 2, 3 };

int main(void)
{
    int r = 1 || ((0, s), 1);
    if (0)
        (0, s);
    printf("%d\n", r);
    return 0;
}
