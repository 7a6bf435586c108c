/* printf calls with every promoted argument type, whose argument structs tests/device_library.rs
 * reads from clang-16's IR for nvptx64 and amdgcn (keep the calls in the order of its formats). A
 * long double can only be a constant here: clang-16 refuses a long double variable for nvptx64. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <wchar.h>

int main(void) {
  char c = 'c';
  short h = 3;
  float f = 1.5f;
  const wchar_t *w = L"w";
#pragma omp target map(to : c, h, f, w)
  {
    printf("%d %s %f %c %ld %hhd %p %Lf\n", 1, "two", 3.0, c, 5L, (char)6, (void *)0, (long double)2.5);
    printf("%hd %lld %zu %e %s %c\n", h, -1LL, sizeof(int), f, "s", 'x');
    printf("%*.*f %Lg %d\n", 8, 2, 1.0, (long double)2.5, 7);
    printf("%ls %lc %g %jd %td\n", w, (wint_t)L'x', 2.0, (intmax_t)-1, (ptrdiff_t)3);
    printf("%c %Lf %c\n", c, (long double)2.5, c);
    printf("%f %d %f %d %s %d %Le\n", f, 1, 2.0, 3, "four", 5, (long double)2.5);
  }
  return 0;
}
