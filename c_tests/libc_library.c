/* The device library's own code (device/omprpc_libc.c, built for the host device with its functions
 * named omprpc_libc_*), run through omprpc on the host device. Each printf case hands
 * __llvm_omp_vprintf an argument struct laid out as clang-16 lays it out on a GPU (C's default
 * promotions, natural alignment; tests/device_library.rs checks that layout against clang's IR for
 * nvptx64 and amdgcn), and the host then prints the same call with its own printf: the test driver
 * compares the two halves of stdout, line by line, results included. Then the other calls: streams,
 * files and their characters (fgetc, getc, ungetc, clearerr), the malloc family; `exit` and `assert` with an argument.
 *
 * Built with -DOMPRPC_SIMULATED_LANES=32 or 64, the threads of a parallel region play the lanes of one
 * warp (see omprpc_device.h): every lane makes every call at once, with a printf of its own too, and
 * its own file; the host half prints each line once per lane, in lane order, as the server does.
 * `exit` and `assert` then come from one lane alone. */
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
    results[lane][n++] = omprpc_libc___llvm_omp_vprintf(format, &args, sizeof args);                      \
  }

#define ON_HOST_CALL(format, type, values)                                                                 \
  for (int lane = 0; lane < LANES; ++lane)                                                                 \
    host[m] = printf(format, UNPACK values);                                                               \
  ++m;

#ifdef OMPRPC_SIMULATED_LANES
#define LANES OMPRPC_SIMULATED_LANES
/* What follows is done by lane `lane` alone, as in a branch taken by one lane of a warp. */
#define ALONE(lane) (omprpc_simulated_active_[lane] = (uint64_t)1 << (lane))
#else
#define LANES 1
#define ALONE(lane) ((void)(lane))
#endif

/* Each lane's own printf. */
#define LANE_FORMAT "lane %2d: %s|%.*f|%*d|\n"
#define LANE_ARGS(lane) lane, words[lane % 5], lane % 7, lane / 3.0, lane % 9, -lane
struct lane_args {
  int lane;
  const char *word;
  int precision;
  double third;
  int width, value;
};

#pragma omp declare target
static const char *const words[] = {"", "a", "word", LONG_TEXT, "(null)"};

/* `before`, `number` in decimal (at least two digits), `after`: "written by lane 07\n", without a C
 * library on the device. */
static void lane_text(char *out, const char *before, long number, const char *after) {
  while (*before)
    *out++ = *before++;
  char digits[24];
  int n = 0;
  do
    digits[n++] = (char)('0' + number % 10), number /= 10;
  while (number || n < 2);
  while (n)
    *out++ = digits[--n];
  while (*after)
    *out++ = *after++;
  *out = 0;
}
#pragma omp end declare target

int main(int argc, char **argv) {
  int results[LANES][32] = {{0}}, cases = 0, lanes_agree = 1;
  char read_back[LANES][64] = {{0}};
  long position = 0;
  int stream_results[LANES][18] = {{0}};
  long process = (long)getpid();
#pragma omp target map(tofrom : results, cases, read_back, position, stream_results) map(to : process)
#pragma omp parallel num_threads(LANES)
  {
    int lane = omp_get_thread_num(), n = 0;
    CASES(ON_DEVICE_CALL)
    struct lane_args mine = {LANE_ARGS(lane)};
    results[lane][n++] = omprpc_libc___llvm_omp_vprintf(LANE_FORMAT, &mine, sizeof mine);
    if (lane == 0)
      cases = n;
    /* Streams and files. */
    int *r = stream_results[lane];
    r[0] = omprpc_libc_puts("puts line");
    r[1] = omprpc_libc_fputs("fputs line\n", omprpc_libc_stdout);
    r[2] = omprpc_libc_putchar('!');
    r[3] = omprpc_libc_fputc('\n', omprpc_libc_stdout);
    /* A file per lane and per process: tests run this program several times at once. */
    char path[64], text[32];
    lane_text(path, "libc_library-", process * 100L + lane, ".tmp");
    lane_text(text, "written by lane ", lane, "\n");
    omprpc_libc_FILE_ *f = omprpc_libc_fopen(path, "w+");
    r[4] = f != 0;
    r[5] = (int)omprpc_libc_fwrite(text, 1, 19, f);
    r[6] = omprpc_libc_fflush(f);
    long at = omprpc_libc_ftell(f);
    if (lane == 0)
      position = at;
    r[7] = omprpc_libc_fseek(f, 0, SEEK_SET);
    omprpc_libc_fgets(read_back[lane], sizeof read_back[lane], f);
    r[8] = omprpc_libc_feof(f) + 2 * omprpc_libc_ferror(f);
    /* Characters: two read, one pushed back and read again, EOF and its flag cleared. */
    r[12] = omprpc_libc_fseek(f, 0, SEEK_SET);
    r[13] = omprpc_libc_fgetc(f) * 1000 + omprpc_libc_getc(f);
    r[14] = omprpc_libc_ungetc('Q', f);
    r[15] = omprpc_libc_fgetc(f);
    omprpc_libc_fseek(f, 0, SEEK_END);
    r[16] = omprpc_libc_fgetc(f) * 10 + omprpc_libc_feof(f);
    omprpc_libc_clearerr(f);
    r[17] = omprpc_libc_feof(f) + omprpc_libc_ferror(f);
    r[9] = omprpc_libc_fclose(f);
    r[10] = omprpc_libc_remove(path);
    /* Memory. */
    int *p = (int *)omprpc_libc_malloc(100 * sizeof(int));
    for (int i = 0; i < 100; ++i)
      p[i] = i + lane;
    p = (int *)omprpc_libc_realloc(p, 1000 * sizeof(int));
    int *zeros = (int *)omprpc_libc_calloc(50, sizeof(int));
    char *aligned = (char *)omprpc_libc_aligned_alloc(4096, 100);
    int sum = 0;
    for (int i = 0; i < 100; ++i)
      sum += p[i] + zeros[i % 50];
    r[11] = sum == 4950 + 100 * lane && ((uintptr_t)aligned % 4096) == 0 && omprpc_libc_aligned_alloc(3, 8) == 0;
    omprpc_libc_free(p);
    omprpc_libc_free(zeros);
    omprpc_libc_free(aligned);
    omprpc_libc_free(0);
  }
  /* Every lane got what lane 0 got, but for its own printf and its own file. */
  for (int lane = 1; lane < LANES; ++lane) {
    char text[32];
    lane_text(text, "written by lane ", lane, "\n");
    lanes_agree &= memcmp(results[lane], results[0], (size_t)(cases - 1) * sizeof(int)) == 0 &&
                   memcmp(stream_results[lane], stream_results[0], sizeof stream_results[0]) == 0 &&
                   strcmp(read_back[lane], text) == 0;
  }
  fflush(stdout);
  printf("--- the host's printf:\n");
  int host[32], m = 0;
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wformat-zero-length"
#pragma clang diagnostic ignored "-Wformat-extra-args"
  CASES(ON_HOST_CALL)
  for (int lane = 0; lane < LANES; ++lane)
    host[m] = printf(LANE_FORMAT, LANE_ARGS(lane));
  ++m;
#pragma clang diagnostic pop
  printf("--- results:");
  for (int i = 0; i < cases; ++i)
    printf(" %d", results[LANES - 1][i]);
  printf("\n--- the host's results:");
  for (int i = 0; i < m; ++i)
    printf(" %d", host[i]);
  printf("\n");
  int *r = stream_results[0];
  printf("streams: %d %d %d %d | %d %d %d %ld %d %d %d %d | %s", r[0], r[1], r[2], r[3], r[4], r[5], r[6], position,
         r[7], r[8], r[9], r[10], read_back[0]);
  printf("characters: %d %d %d %d %d %d\n", r[12], r[13], r[14], r[15], r[16], r[17]);
  printf("memory: %d\n", r[11]);
  printf("lanes agree: %d\n", lanes_agree);
  fflush(stdout);
  /* From the last lane alone: the others go on to the end of the region. */
  if (argc > 1 && argv[1][0] == 'x') {
#pragma omp target
#pragma omp parallel num_threads(LANES)
    if (omp_get_thread_num() == LANES - 1) {
      ALONE(LANES - 1);
      omprpc_libc_exit(3);
    }
  }
  if (argc > 1 && argv[1][0] == 'a') {
#pragma omp target
#pragma omp parallel num_threads(LANES)
    if (omp_get_thread_num() == LANES - 1) {
      ALONE(LANES - 1);
      int two = 2;
      if (two + 2 != 5)
        omprpc_libc___assert_fail("two + 2 == 5", "libc_library.c", 99, "main");
    }
  }
  return 0;
}
