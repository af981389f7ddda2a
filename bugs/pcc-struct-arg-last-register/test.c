#include <stdarg.h>
#include <stdio.h>

struct S { int a, b; };                 /* 8 bytes: one INTEGER eightbyte */

int f(int n, ...)                       /* skips n ints, then reads an S and an int */
{
    va_list ap; struct S s; int i, k;
    va_start(ap, n);
    for (i = 0; i < n; i++) va_arg(ap, int);
    s = va_arg(ap, struct S); k = va_arg(ap, int);
    va_end(ap);
    return s.a * 100 + s.b * 10 + k;
}

int main(void)
{
    struct S s = { 1, 2 };
    printf("%d %d\n", f(3, 0, 0, 0, s, 3), f(4, 0, 0, 0, 0, s, 3));
    return 0;
}
