#include <stdio.h>

/* Old-style (K&R) definitions: callers see no prototype, so a float
   argument is passed as double and must be converted back on entry. */
float half(x) float x; { return x / 2; }
double scale(x, n) float x; int n; { return x * n; }

int main(void)
{
    float f = 3.0f;
    printf("%g %g %g\n", half(f), half(10.0), scale(1.5f, 4));
    return 0;
}
