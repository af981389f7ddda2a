#include <stdio.h>

int g = 3;
int table[8];

static int mix(int a, int b) {
  int r = a;
  if (a > 1000) {
    r = a * b;
    g = r - 1;
    for (int i = 0; i < 8; i++) {
      table[i] = r + i;
    }
  }
  if (b < -1000) {
    while (r > 0) {
      r -= b;
      if (r == 7)
        break;
    }
    table[2] = r;
  } else {
    r = r + b;
  }
  return r;
}

int main(void) {
  int sum = 0;
  for (int k = 0; k < 5; k++) {
    sum += mix(k, 2 * k);
    if (sum > 100000) {
      sum = 0;
      g++;
      table[k] = sum;
    }
  }
  printf("%d %d %d\n", sum, g, table[2]);
  return 0;
}
