/* The operands of `!=` are evaluated in an unspecified order. gcc, clang and tcc call func_18
   first, so g_721 is still 9 inside it; pcc assigns `*p = 0` first. The output does not depend
   on the order, but the values func_18 sees do: a Hermes snippet there must hold for both. */
#include <stdint.h>
#include <stdio.h>

static int32_t g_3 = 1;
static int32_t g_721 = 9;
static int32_t *p = &g_721;

static int32_t safe_div(int32_t a) { return a == 0 ? 1 : 100 / a; }

static int32_t func_18(int32_t x) {
    int32_t r = x + 1;
    r = r * 2;
    return r;
}

int main(void) {
    int32_t v = func_18(g_3) != safe_div(*p = 0);
    printf("%d %d\n", v, g_721);
    return 0;
}
