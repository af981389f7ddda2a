/* GCC's torture test 20021127-1 in short: it declares llabs itself, without <stdlib.h>, and
   defines one that aborts; gcc and clang call their builtin instead, pcc and tcc call this. */
long long a = -1;
long long llabs(long long);
void abort(void);

int main(void) {
  if (llabs(a) != 1)
    abort();
  return 0;
}

long long llabs(long long b) {
  abort();
}
