/* omprpc_snprintf, omprpc_sprintf and omprpc_asprintf (omprpc_device.h, which omprpc_libc.h routes a GPU
 * program's snprintf, sprintf and asprintf to) and the device library's asprintf (device/omprpc_libc.c,
 * built for the host device with OMPRPC_LIBC_PREFIX) against the host's glibc, in a target region run
 * through omprpc on the host device, where the host formats each call (FORMAT_TO_BUFFER). Every case
 * calls both with the same arguments and compares the result and the whole buffer (filled alike before,
 * so that a byte written past glibc's is seen): every conversion, flags, widths and precisions (the *
 * forms too), length modifiers, at many buffer sizes (0, 1, short, exact, long) and with a NULL buffer of
 * size 0; sprintf and asprintf with the same. Then what glibc would do but omprpc refuses (-1, the
 * buffer as it was): a NULL buffer with a size, a NULL format, %n, a positional argument, an output over
 * the 1 MiB limit. Prints "N checks, M mismatches" and the first mismatches.
 *
 * With -DOMPRPC_SIMULATED_LANES=32, the threads of a parallel region play a warp's lanes (see
 * omprpc_device.h): each lane formats its own text into a buffer of its own size, together and then
 * lanes alone, so that each lane's reply (result and bytes) is seen to reach that lane. */
#define _GNU_SOURCE 1 /* asprintf */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"

#define OMPRPC_LIBC_PREFIX 1
#include "../device/omprpc_libc.c"

#define BUF 512

#pragma omp declare target
static long checks, mismatches;
static char ours[BUF], theirs[BUF];

static void fill(void) {
  for (int i = 0; i < BUF; i++)
    ours[i] = theirs[i] = (char)('#' + i % 61);
}

static void report(const char *what, const char *format, long size, long a, long b) {
  if (++mismatches <= 30)
    printf("mismatch: %s of \"%s\" (size %ld): ours %ld, glibc %ld; ours \"%.60s\", glibc \"%.60s\"\n", what,
           format ? format : "(NULL)", size, a, b, ours, theirs);
}

/* Results and the whole buffers. */
static void compare(const char *what, const char *format, long size, int a, int b) {
  checks++;
  if (a != b || memcmp(ours, theirs, BUF) != 0)
    report(what, format, size, a, b);
}

/* asprintf's results: the lengths and the texts. */
static void compare_allocated(const char *what, const char *format, int a, const char *p, int b, const char *q) {
  checks++;
  if (a != b || (a >= 0 && memcmp(p, q, (size_t)a + 1) != 0))
    report(what, format, -1, a, b);
}
#pragma omp end declare target

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* The buffer sizes a case is formatted into, from glibc's length of its text. */
#define SIZES(len)                                                                                        \
  { 0, 1, 2, 3, 5, 8, 13, (len) > 1 ? (len)-1 : 0, (len), (len) + 1, (len) + 2, 64, BUF }

/* One case: `format` with the arguments after it, through snprintf at every size, with a NULL buffer,
 * sprintf (when the text fits), omprpc_asprintf and the library's asprintf. */
#define CASE(format, ...)                                                                                         \
  do {                                                                                                            \
    int case_len = snprintf(NULL, 0, format, __VA_ARGS__);                                                        \
    long case_sizes[] = SIZES(case_len);                                                                          \
    for (unsigned case_i = 0; case_i < COUNT(case_sizes); case_i++) {                                             \
      long case_size = case_sizes[case_i] < BUF ? case_sizes[case_i] : BUF;                                       \
      fill();                                                                                                     \
      int case_a = omprpc_snprintf(ours, (size_t)case_size, format, __VA_ARGS__);                                 \
      int case_b = snprintf(theirs, (size_t)case_size, format, __VA_ARGS__);                                      \
      compare("snprintf", format, case_size, case_a, case_b);                                                     \
    }                                                                                                             \
    fill();                                                                                                       \
    compare("snprintf(NULL, 0)", format, 0, omprpc_snprintf(NULL, 0, format, __VA_ARGS__), case_len);             \
    if (case_len >= 0 && case_len < BUF) {                                                                        \
      fill();                                                                                                     \
      int case_a = omprpc_sprintf(ours, format, __VA_ARGS__);                                                     \
      int case_b = sprintf(theirs, format, __VA_ARGS__);                                                          \
      compare("sprintf", format, -1, case_a, case_b);                                                             \
    }                                                                                                             \
    char *case_p = NULL, *case_q = NULL, *case_r = NULL;                                                          \
    int case_a = omprpc_asprintf(&case_p, format, __VA_ARGS__);                                                   \
    int case_b = asprintf(&case_q, format, __VA_ARGS__);                                                          \
    compare_allocated("omprpc_asprintf", format, case_a, case_p, case_b, case_q);                                 \
    int case_c = omprpc_libc_asprintf_args(&case_r, (const omprpc_arg[]){OMPRPC_TO_BUFFER_ARGS_(format, __VA_ARGS__)},\
                                           OMPRPC_TO_BUFFER_COUNT_(format, __VA_ARGS__));                         \
    compare_allocated("the library's asprintf", format, case_c, case_r, case_b, case_q);                          \
    if (case_a >= 0)                                                                                              \
      omprpc_free(case_p);                                                                                        \
    if (case_c >= 0)                                                                                              \
      omprpc_libc_free(case_r);                                                                                   \
    if (case_b >= 0)                                                                                              \
      free(case_q);                                                                                               \
  } while (0)

#ifndef OMPRPC_SIMULATED_LANES
#pragma omp declare target
static const char *const int_formats[] = {
    "%d",     "%i",      "%5d",    "%-5d|",  "%+d",   "% d",   "%05d",  "%'d",   "%'12d", "%.3d",  "%.0d",
    "%+.0d",  "%-+8.4d", "%hhd",   "%hd",    "%hhu",  "%hu",   "%u",    "%o",    "%#o",   "%#.0o", "%x",
    "%#x",    "%X",      "%#10X",  "%-#10x", "%#08x", "%.10u", "%c",    "%5c",   "%-3c|", "[%%] %d %%",
    "no conversion", "%d%d%d", "%lc", "%b", "%#B",
};
static const int ints[] = {INT_MIN, INT_MIN + 1, -65536, -1000, -255, -128, -1, 0, 1, 9, 10, 42, 127, 128,
                           255, 256, 1000, 65535, 65536, 1234567, INT_MAX - 1, INT_MAX};

static const char *const long_formats[] = {
    "%ld",   "%li",   "%lu",    "%lo",   "%lx",   "%#lX",   "%'ld",  "%+20ld", "%-20ld|", "%020ld", "%.15ld",
    "%lld",  "%llu",  "%#llo",  "%llx",  "%jd",   "%ju",    "%zd",   "%zu",    "%td",     "%qd",    "%Zu",
    "%'lld", "% lld", "%#22llx", "%.0lld",
};
static const long long longs[] = {LLONG_MIN, LLONG_MIN + 1, -4294967296LL, -1, 0, 1, 4294967295LL, 4294967296LL,
                                  1000000000000LL, LLONG_MAX};

static const char *const double_formats[] = {
    "%f",     "%.0f",   "%.1f",    "%.10f",  "%#.0f",  "%+f",     "% f",    "%010.3f", "%-12.3f|", "%'.2f",
    "%'f",    "%F",     "%e",      "%E",     "%.0e",   "%#.0e",   "%.3e",   "%+.20e",  "%12.4E",   "%g",
    "%G",     "%#g",    "%.0g",    "%.1g",   "%.17g",  "%-+14.6g|", "%010g", "%a",     "%A",       "%.0a",
    "%.2a",   "%#a",    "%+.13A",  "%20a",   "%.30f",  "%.40e",   "%5.1f|%e",
};
static const double doubles[] = {
    0.0,      -0.0,       1.0,       -1.0,     0.5,      1.5,     2.5,      -2.5,     0.1,
    1.0 / 3,  2.0 / 3,    123456789.123456789, 1e15 + 0.3, 1e21,  1e22,     1e-5,     1e-10,
    9.5,      0.05,       0.125,     999999.5, 1e308,    -1e308,  DBL_MAX,  -DBL_MAX, DBL_MIN,
    4.9e-324, -4.9e-324,  2.2250738585072009e-308, 1.7976931348623157e300, 6.02214076e23, 3.141592653589793,
    INFINITY, -INFINITY,  NAN,       -NAN,
};

static const char *const ldouble_formats[] = {"%Lf", "%.3Le", "%Lg", "%La", "%LA", "%-+30.18Lf|", "%#.0Lf"};
static const long double ldoubles[] = {0.0L, -0.0L, 1.0L / 3, 1e4000L, -1e-4000L, LDBL_MAX, LDBL_MIN, 2.5L,
                                       (long double)INFINITY, (long double)NAN};

static const char *const string_formats[] = {"%s",   "%10s", "%-10s|", "%.3s", "%.0s", "%1s", "%.1s",
                                             "%20.5s|", "[%s]", "%s%s", "%.6s", "%.5s"};
static const char *const strings[] = {"", "a", "glibc", "Hello, World", "a\tb\nc", "\x80\xff high bytes",
                                      "a longer string of some sixty characters, more than one packet holds",
                                      NULL};

static const char *const pointer_formats[] = {"%p", "%20p", "%-20p|", "%.0p"};
static const uintptr_t pointers[] = {0, 1, 0xdeadbeef, 0x7fffffffffffULL, UINTPTR_MAX};

static void int_cases(void) {
  for (unsigned f = 0; f < COUNT(int_formats); f++)
    for (unsigned v = 0; v < COUNT(ints); v++)
      CASE(int_formats[f], ints[v], ints[COUNT(ints) - 1 - v], 7);
  /* * widths and precisions: negative widths left-justify, negative precisions count as none. */
  const int stars[] = {-12, -1, 0, 1, 3, 9, 25};
  for (unsigned w = 0; w < COUNT(stars); w++)
    for (unsigned v = 0; v < COUNT(ints); v += 3) {
      CASE("%*d|", stars[w], ints[v]);
      CASE("%.*d|", stars[w], ints[v]);
      CASE("%-*.*x|", stars[w], stars[COUNT(stars) - 1 - w], ints[v]);
      CASE("%*.*s|", stars[w], stars[COUNT(stars) - 1 - w], "stars");
    }
  /* unsigned and short arguments, as a program passes them. */
  const unsigned unsigneds[] = {0u, 1u, 0x80000000u, UINT_MAX};
  for (unsigned v = 0; v < COUNT(unsigneds); v++) {
    CASE("%u %x %o %X", unsigneds[v], unsigneds[v], unsigneds[v], unsigneds[v]);
    CASE("%hhu|%hu|%hhx", (unsigned char)unsigneds[v], (unsigned short)unsigneds[v], (unsigned char)unsigneds[v]);
  }
  CASE("%c%c%c", 'A', 0, 'B'); /* a NUL inside the text */
  CASE("%hhd %hd", (signed char)-5, (short)-300);
}

static void long_cases(void) {
  for (unsigned f = 0; f < COUNT(long_formats); f++)
    for (unsigned v = 0; v < COUNT(longs); v++)
      CASE(long_formats[f], longs[v]);
  const unsigned long long ulongs[] = {0, 1, 0x8000000000000000ULL, ULLONG_MAX};
  for (unsigned v = 0; v < COUNT(ulongs); v++) {
    CASE("%llu %llx %#llo", ulongs[v], ulongs[v], ulongs[v]);
    CASE("%lu|%20lx", (unsigned long)ulongs[v], (unsigned long)ulongs[v]);
    CASE("%zu %zx", (size_t)ulongs[v], (size_t)ulongs[v]);
    CASE("%jd %td", (intmax_t)ulongs[v], (ptrdiff_t)ulongs[v]);
  }
}

static void double_cases(void) {
  for (unsigned f = 0; f < COUNT(double_formats); f++)
    for (unsigned v = 0; v < COUNT(doubles); v++)
      CASE(double_formats[f], doubles[v], doubles[COUNT(doubles) - 1 - v]);
  const int precisions[] = {-3, 0, 1, 6, 17, 30};
  for (unsigned p = 0; p < COUNT(precisions); p++)
    for (unsigned v = 0; v < COUNT(doubles); v += 2) {
      CASE("%.*f", precisions[p], doubles[v]);
      CASE("%*.*e|", precisions[p] - 10, precisions[p], doubles[v]);
      CASE("%.*g", precisions[p], doubles[v]);
    }
  /* float, promoted to double */
  const float floats[] = {0.0f, 1.0f / 3, FLT_MAX, FLT_MIN, 1e-45f, -2.5f};
  for (unsigned v = 0; v < COUNT(floats); v++)
    CASE("%f %e %g %a", floats[v], floats[v], floats[v], floats[v]);
  /* Subnormals: each power of two down from DBL_MIN. */
  double tiny = DBL_MIN;
  for (int i = 0; i < 53; i++, tiny /= 2)
    CASE("%.17g %a %e", tiny, tiny, tiny);
  /* Powers of ten up to the largest. */
  double big = 1.0;
  for (int i = 0; i < 309; i += 7, big *= 1e7)
    CASE("%.0f|%g|%.3e", big, big, big);
}

static void other_cases(void) {
  for (unsigned f = 0; f < COUNT(ldouble_formats); f++)
    for (unsigned v = 0; v < COUNT(ldoubles); v++)
      CASE(ldouble_formats[f], ldoubles[v]);
  for (unsigned f = 0; f < COUNT(string_formats); f++)
    for (unsigned v = 0; v < COUNT(strings); v++)
      CASE(string_formats[f], strings[v], strings[COUNT(strings) - 1 - v]);
  for (unsigned f = 0; f < COUNT(pointer_formats); f++)
    for (unsigned v = 0; v < COUNT(pointers); v++)
      CASE(pointer_formats[f], (void *)pointers[v]);
  /* Mixed conversions, 31 arguments after the format (the most the C forms take). */
  CASE("%d %s %f %c %x %p %% %ld %e %u|%-6s|%+.2g", -7, "mix", 2.5, 'z', 255u, (void *)16, 123456789012L, 1e-7,
       42u, "ab", 0.000123);
  CASE("%d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d", 1, 2, 3,
       4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30,
       -31);
  /* Text longer than a packet, and than the reply's first packet. */
  CASE("%300d|%-200s|", 5, "left");
  CASE("%.500f", 1.0 / 7);
  CASE("%ls|%5ls|%.2ls", L"wide", L"ab", L"xyz");
}

#pragma omp end declare target
#endif

#pragma omp declare target
/* What omprpc refuses where glibc would write (or crash): -1 and the buffer as it was. Each adds to
 * the checks; the error lines of %n, the position and the long text are checked by the test. */
static void refusals(void) {
  char *text = NULL;
  int length = omprpc_asprintf(&text, "%s-%d", "x", 5);
  compare_allocated("asprintf", "%s-%d", length, text, 3, "x-5");
  if (length >= 0)
    omprpc_free(text);
  fill();
  compare("NULL buffer, size 4", "%d", 4, omprpc_snprintf(NULL, 4, "%d", 12), -1);
  compare("NULL format", NULL, 16, omprpc_snprintf(ours, 16, (const char *)NULL, 12), -1);
  compare("NULL format, sprintf", NULL, -1, omprpc_sprintf(ours, (const char *)NULL, 12), -1);
  int count = 0;
  compare("%n", "n:%n %d", 16, omprpc_snprintf(ours, 16, "n:%n %d", &count, 5), -1);
  compare("a position", "%1$d", 16, omprpc_snprintf(ours, 16, "%1$d", 5), -1);
  char *never = (char *)ours;
  compare("asprintf with %n", "%n", -1, omprpc_asprintf(&never, "%n", &count), -1);
  checks++;
  if (never != ours || count != 0)
    report("asprintf's pointer after a refusal", "%n", -1, 0, 0);
  /* Two million spaces: cut to a small buffer as glibc cuts them; refused where the whole would go. */
  int a = omprpc_snprintf(ours, 16, "%*d", 2000000, 7);
  int b = snprintf(theirs, 16, "%*d", 2000000, 7);
  compare("a long text, cut", "%*d", 16, a, b);
  compare("a long text, sprintf", "%*d", -1, omprpc_sprintf(ours, "%*d", 2000000, 7), -1);
  compare("a long text, snprintf", "%*d", 3000000, omprpc_snprintf(ours, 3000000, "%*d", 2000000, 7), -1);
}
#pragma omp end declare target

#ifdef OMPRPC_SIMULATED_LANES
#pragma omp declare target
/* Each lane its own text and size: every lane, then a third of them, then each lane alone. */
static void lanes(void) {
  static char lane_ours[OMPRPC_SIMULATED_LANES][96], lane_theirs[OMPRPC_SIMULATED_LANES][96];
  static int results[OMPRPC_SIMULATED_LANES][4];
#pragma omp parallel num_threads(OMPRPC_SIMULATED_LANES)
  {
    int lane = omp_get_thread_num();
    for (int round = 0; round < 3; round++) {
      if (round == 1) {
        if (lane % 3 != 0)
          continue;
        uint64_t third = 0;
        for (int l = 0; l < OMPRPC_SIMULATED_LANES; l += 3)
          third |= (uint64_t)1 << l;
        omprpc_simulated_active_[lane] = third;
      }
      if (round == 2)
        omprpc_simulated_active_[lane] = (uint64_t)1 << lane;
      size_t size = (size_t)(lane * 3 + round) % 40;
      memset(lane_ours[lane], '#', sizeof lane_ours[lane]);
      memset(lane_theirs[lane], '#', sizeof lane_theirs[lane]);
      results[lane][0] = omprpc_snprintf(lane_ours[lane], size, "lane %d: %.*f|%*s|%s", lane, lane % 7,
                                         lane / 3.0, lane % 11, "x", lane % 2 ? "odd" : "a longer text");
      results[lane][1] = snprintf(lane_theirs[lane], size, "lane %d: %.*f|%*s|%s", lane, lane % 7, lane / 3.0,
                                  lane % 11, "x", lane % 2 ? "odd" : "a longer text");
#pragma omp critical
      {
        checks++;
        if (results[lane][0] != results[lane][1] ||
            memcmp(lane_ours[lane], lane_theirs[lane], sizeof lane_ours[lane]) != 0) {
          if (++mismatches <= 30)
            printf("mismatch: lane %d, round %d (size %zu): ours %d \"%s\", glibc %d \"%s\"\n", lane, round, size,
                   results[lane][0], lane_ours[lane], results[lane][1], lane_theirs[lane]);
        }
      }
    }
    omprpc_simulated_active_[lane] = 0;
  }
}
#pragma omp end declare target
#endif

int main(void) {
  long counted[2];
#pragma omp target map(from : counted)
  {
#ifdef OMPRPC_SIMULATED_LANES
    lanes();
#else
    int_cases();
    long_cases();
    double_cases();
    other_cases();
#endif
    refusals();
    counted[0] = checks;
    counted[1] = mismatches;
  }
  printf("%ld checks, %ld mismatches\n", counted[0], counted[1]);
  return counted[1] != 0;
}
