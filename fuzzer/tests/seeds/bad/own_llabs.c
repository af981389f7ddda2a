/* Defines llabs, which the <stdlib.h> it includes declares: gcc and clang call their builtin
   instead (GCC's torture test 20021127-1 relies on that), another compiler may call this. */
#include <stdio.h>
#include <stdlib.h>

long long llabs(long long x) {
  return x < 0 ? -x : x;
}

int main(void) {
  printf("%lld\n", llabs(-5));
  return 0;
}
