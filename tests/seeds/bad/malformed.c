/* Missing semicolon: does not parse. */
int main(void) { int x = 1 return x; }
