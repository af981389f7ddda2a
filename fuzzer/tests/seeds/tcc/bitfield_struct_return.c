/* TinyCC 0.9.27 with -b (bounds checking) reports "BCHECK: ... is outside of the region" and
   exits 255 when a function returns a bit-field struct read through a pointer; gcc, clang,
   UBSan and ASan see nothing wrong. `ccfuzz triage` reduced it (3,433 -> 8 lines, cvise under
   the UB guard) from csmith seed 9041759d696bb351e760fcc970f9a29b, a finding of a tcc/tcc -b
   campaign. */
struct S5 {
  unsigned : 9;
  unsigned : 13;
  signed : 16;
  unsigned f5;
} g_781, *g_779 = &g_781;
struct S5 func_1() { return *g_779; }
int main() { func_1(); }
