/* gcc and clang accept GNU C's __auto_type; the seed parser does not: rejected for that once
   the reference has compiled and run it. */
#include <stdio.h>
int main(void) {
    __auto_type x = 42;
    printf("%d\n", x);
    return 0;
}
