/* The same TinyCC 0.9.27 -b bug as bitfield_struct_return.c, as `ccfuzz triage`
   was reducing it (cvise under the UB guard; a late intermediate, the end result has 20 lines)
   from the finding of a `tcc -b` campaign on csmith seed 1c2c270f2e8589f28745d696dddd0cad:
   tcc -b reports "BCHECK: ... is outside of the region". */
#include <stdint.h>
struct S2 {
  int64_t f4;
};
struct S4 {
  unsigned f0;
  signed : 3;
  signed f5;
} g_197;
struct S2 g_2125;
struct S4 *g_2257 = &g_197;
struct S4 func_17(int64_t, const int32_t *, uint16_t, struct S4, uint64_t);
struct S4 func_1_l_2322;
int8_t func_1() {
  int32_t l_6;
  func_17(0, &l_6, 0, func_1_l_2322, 0);
  return g_2125.f4;
}
struct S4 func_17(int64_t p_18, const int32_t *p_19, uint16_t p_20,
                  struct S4 p_21, uint64_t p_22) {
  return *g_2257;
}
int main() { func_1(); }
