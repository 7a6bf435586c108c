/* The device library's own code (device/omprpc_libc.c, built for the host device with its functions
 * named omprpc_libc_*), run through omprpc on the host device. Each printf case hands
 * __llvm_omp_vprintf an argument struct laid out as clang-16 lays it out on a GPU (C's default
 * promotions, natural alignment; tests/device_library.rs checks that layout against clang's IR for
 * nvptx64 and amdgcn), and the host then prints the same call with its own printf: the test driver
 * compares the two halves of stdout, line by line, results included. Then the other calls: streams,
 * files, the malloc family; `exit` and `assert` with an argument. */
#include <assert.h>
#include <stdint.h>
#include <wchar.h>

#include "common.h"

#define OMPRPC_LIBC_PREFIX 1
#include "../device/omprpc_libc.c"

#define LONG_TEXT                                                                                         \
  "a long string, longer than one packet of the mailbox and longer than the first packet's 56 bytes, "    \
  "so that it travels in several packets: 0123456789 0123456789 0123456789 0123456789 0123456789 END"

/* 32 arguments. */
struct many {
  int i0, i1, i2, i3, i4, i5, i6, i7, i8, i9, i10, i11;
  double d0, d1, d2, d3, d4, d5, d6, d7, d8, d9;
  const char *s0, *s1, *s2, *s3;
  long l0, l1, l2, l3, l4, l5;
};

#pragma omp declare target
static const char unterminated[3] = {'a', 'b', 'c'};
static const wchar_t wide[] = L"wide";
#pragma omp end declare target

#define CASES(CALL)                                                                                       \
  CALL("%d %s %f %c %ld %hhd %p %Lf|\n", (struct { int a; const char *b; double c; int d; long e; int f; void *g; long double h; }), \
       (1, "two", 3.0, 'c', 5L, (char)300, (void *)0, 2.5L))                                              \
  CALL("%i|%u|%x|%X|%o|%#x|%#o|%+d|% d|%-6d|%06d|%'d|%b|\n", (struct { int a, b, c, d, e, f, g, h, i, j, k, l, m; }), \
       (-7, 4000000000u, 255, 255, 8, 255, 8, 5, 5, 42, -42, 1234567, 5))                                  \
  CALL("%lld|%llu|%zu|%jd|%td|%hd|%hu|%lx|\n", (struct { long long a; unsigned long long b; size_t c; intmax_t d; ptrdiff_t e; int f; int g; long h; }), \
       (-9LL, 18446744073709551615ULL, (size_t)7, (intmax_t)-1, (ptrdiff_t)-2, (short)70000, (unsigned short)65535, 0xdeadbeefL)) \
  CALL("%e|%E|%g|%G|%a|%A|%.3a|%F|%.0f|%#.0f|%+.3e|%08.3f|%-10.2f|\n", (struct { double a, b, c, d, e, f, g, h, i, j, k, l, m; }), \
       (12345.678, 1e-300, 1e-5, 1e20, 1.5, -0.1, 3.14159, 1.0 / 0.0, 2.5, 2.0, 12345.678, 3.14159, -1.005)) \
  CALL("%f %f %f %Le %.20Lf|\n", (struct { double a, b, c; long double d, e; }),                           \
       (-1.0 / 0.0, 0.0 / 0.0, -0.0, 1e300L, 1.0L / 3))                                                    \
  CALL("%p|%-10p|%5c|%-5s|%.2s|%s|%10.3s|%%|\n", (struct { void *a, *b; int c; const char *d, *e, *f, *g; }), \
       ((void *)0, (void *)0x1234, 'y', "ab", "abcdef", (const char *)0, "hello"))                        \
  CALL("%s %s %s|%s|\n", (struct { const char *a, *b, *c, *d; }), ((const char *)0, "x", "", "y"))          \
  CALL("%*d|%-*d|%.*f|%*.*s|%.*s|\n", (struct { int a, b, c, d, e; double f; int g, h; const char *i; int j; const char *k; }), \
       (6, 42, 6, 42, 2, 2.71828, 8, 2, "hello", 3, unterminated))                                         \
  CALL("%s|%.40s|\n", (struct { const char *a, *b; }), (LONG_TEXT, LONG_TEXT))                              \
  CALL("%ls|%5ls|%lc|\n", (struct { const wchar_t *a, *b; int c; }), (wide, wide, (int)L'w'))               \
  CALL("%d %d %d %d %d %d %d %d %d %d %d %d %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %s %s %s %s %ld %ld %ld %ld %ld %ld|\n", \
       (struct many), (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, \
                     "a", "b", "c", "d", 100L, 101L, 102L, 103L, 104L, 105L))                              \
  CALL("no conversions at all|\n", (struct { int unused; }), (0))                                          \
  CALL("", (struct { int unused; }), (0))

#define UNPACK(...) __VA_ARGS__

#define ON_DEVICE_CALL(format, type, values)                                                               \
  {                                                                                                        \
    UNPACK type args = {UNPACK values};                                                                    \
    results[n++] = omprpc_libc___llvm_omp_vprintf(format, &args, sizeof args);                            \
  }

#define ON_HOST_CALL(format, type, values) host[m++] = printf(format, UNPACK values);

int main(int argc, char **argv) {
  int results[32] = {0}, n = 0;
  char read_back[64] = {0};
  long position = 0;
  int stream_results[12] = {0};
#pragma omp target map(tofrom : results, n, read_back, position, stream_results)
  {
    CASES(ON_DEVICE_CALL)
    /* Streams and files. */
    stream_results[0] = omprpc_libc_puts("puts line");
    stream_results[1] = omprpc_libc_fputs("fputs line\n", omprpc_libc_stdout);
    stream_results[2] = omprpc_libc_putchar('!');
    stream_results[3] = omprpc_libc_fputc('\n', omprpc_libc_stdout);
    omprpc_libc_FILE_ *f = omprpc_libc_fopen("libc_library.tmp", "w+");
    stream_results[4] = f != 0;
    stream_results[5] = (int)omprpc_libc_fwrite("written by the device\n", 1, 22, f);
    stream_results[6] = omprpc_libc_fflush(f);
    position = omprpc_libc_ftell(f);
    stream_results[7] = omprpc_libc_fseek(f, 0, SEEK_SET);
    omprpc_libc_fgets(read_back, sizeof read_back, f);
    stream_results[8] = omprpc_libc_feof(f) + 2 * omprpc_libc_ferror(f);
    stream_results[9] = omprpc_libc_fclose(f);
    stream_results[10] = omprpc_libc_remove("libc_library.tmp");
    /* Memory. */
    int *p = (int *)omprpc_libc_malloc(100 * sizeof(int));
    for (int i = 0; i < 100; ++i)
      p[i] = i;
    p = (int *)omprpc_libc_realloc(p, 1000 * sizeof(int));
    int *zeros = (int *)omprpc_libc_calloc(50, sizeof(int));
    char *aligned = (char *)omprpc_libc_aligned_alloc(4096, 100);
    int sum = 0;
    for (int i = 0; i < 100; ++i)
      sum += p[i] + zeros[i % 50];
    stream_results[11] = sum == 4950 && ((uintptr_t)aligned % 4096) == 0 && omprpc_libc_aligned_alloc(3, 8) == 0;
    omprpc_libc_free(p);
    omprpc_libc_free(zeros);
    omprpc_libc_free(aligned);
    omprpc_libc_free(0);
  }
  fflush(stdout);
  printf("--- the host's printf:\n");
  int host[32], m = 0;
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wformat-zero-length"
#pragma clang diagnostic ignored "-Wformat-extra-args"
  CASES(ON_HOST_CALL)
#pragma clang diagnostic pop
  printf("--- results:");
  for (int i = 0; i < n; ++i)
    printf(" %d", results[i]);
  printf("\n--- the host's results:");
  for (int i = 0; i < m; ++i)
    printf(" %d", host[i]);
  printf("\n");
  printf("streams: %d %d %d %d | %d %d %d %ld %d %d %d %d | %s", stream_results[0], stream_results[1], stream_results[2],
         stream_results[3], stream_results[4], stream_results[5], stream_results[6], position, stream_results[7],
         stream_results[8], stream_results[9], stream_results[10], read_back);
  printf("memory: %d\n", stream_results[11]);
  fflush(stdout);
  if (argc > 1 && argv[1][0] == 'x') {
#pragma omp target
    omprpc_libc_exit(3);
  }
  if (argc > 1 && argv[1][0] == 'a') {
#pragma omp target
    {
      int two = 2;
      if (two + 2 != 5)
        omprpc_libc___assert_fail("two + 2 == 5", "libc_library.c", 99, "main");
    }
  }
  return 0;
}
