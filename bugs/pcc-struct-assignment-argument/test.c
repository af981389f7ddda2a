/* The value of a struct assignment whose right side is a call, passed by value: 7. */
#include <stdio.h>
struct S { int i; };
struct S get(int a) { struct S s; s.i = a; return s; }
void use(struct S s) { printf("%d\n", s.i); }
int main(void) {
    struct S l, *p = &l;
    use(*p = get(7));
    return 0;
}
