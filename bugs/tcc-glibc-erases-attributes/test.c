/* Any glibc header makes TinyCC on Linux drop every __attribute__((...)) that follows it:
   <sys/cdefs.h> defines __attribute__(xyz) as nothing when __GNUC__ is not defined, and tcc
   does not define it. X loses its 32-byte alignment and P its packing; Z, written with the
   alternative spelling __attribute, keeps its alignment. */
#include <stdio.h>

typedef struct x { int a, b; } __attribute__((aligned(32))) X;
struct y { X x[2]; int c; };
struct p { char c; int i; } __attribute__((packed));
typedef struct z { int a, b; } __attribute((aligned(32))) Z;

int main(void) {
    printf("X %zu/%zu, struct y %zu, struct p %zu, Z %zu/%zu\n", sizeof(X), _Alignof(X),
           sizeof(struct y), sizeof(struct p), sizeof(Z), _Alignof(Z));
    return 0;
}
