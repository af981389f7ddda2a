/* UB-free, but gcc's -Wsequence-point warns, as it does on some csmith programs: the
   assignment in the call's argument is sequenced before the call, so before the outer
   assignment. The triage guard turns that warning into an error, so every finding of a
   variant of this program would be rejected: it is no seed. */
#include <stdio.h>

static int next(int a) { return a + 1; }

int main(void) {
    int x = 1;
    int *p = &x;
    (*p) = (3 == next(((*p) = (*p)) > 0));
    printf("%d\n", x);
    return 0;
}
