/* pcc returns a 4-byte struct read through a pointer with one 8-byte load: it reads 4 bytes past
   the object. With the object at the end of a mapped page, the program crashes. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

struct S { short a, b; };

struct S copy(struct S *p) { return *p; }

int main(void) {
    long page = sysconf(_SC_PAGESIZE);
    char *m = mmap(0, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m + page, page, PROT_NONE) != 0)
        return 2;
    struct S *p = (struct S *)(m + page - sizeof(struct S));
    p->a = 1;
    p->b = 2;
    struct S s = copy(p);
    printf("%d %d\n", s.a, s.b);
    return 0;
}
