/* Missing semicolon: the reference does not compile it. */
int main(void) { int x = 1 return x; }
