#include <stdio.h>

/* p points to rows of n ints: p[1] is n ints past p[0], and *p is n ints long. */
static int second_row_first(int n, int (*p)[n])
{
  return p[1][0];
}

static unsigned long row_size(int n, int (*p)[n])
{
  return sizeof *p;
}

int main(void)
{
  int b[2][3] = { { 1, 2, 3 }, { 4, 5, 6 } };
  printf("%d %lu\n", second_row_first(3, b), row_size(3, b));
  return 0;
}
