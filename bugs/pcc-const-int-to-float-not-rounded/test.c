#include <stdio.h>

/* 2^24+1 is not a float (rounds to 16777216.0f); 2^53+1 is not a double. */
static double d = (float)16777217;

int main(void)
{
    printf("%.1f %d %d\n", d, (float)16777217 == 16777216.0f,
           (double)9007199254740993LL == 9007199254740992.0);
    return 0;
}
