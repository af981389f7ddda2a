#include <stdio.h>

/* A parameter declared as a 3-D array has type int (*)[3][4]. */
static int sum(int a[2][3][4])
{
  int s = 0;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++)
        s += a[i][j][k];
  return s;
}

int main(void)
{
  int a[2][3][4];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++)
        a[i][j][k] = i * 12 + j * 4 + k;
  printf("%d\n", sum(a));
  return 0;
}
