/* Every statement Orion could delete changes what it prints. Its test marks them all as never
   run in the stored profile, so that Orion's deletions are wrong edits. */
#include <stdio.h>

int main(void) {
    int x = 1;
    x = x * 3;
    x = x + 4;
    printf("%d\n", x);
    return 0;
}
