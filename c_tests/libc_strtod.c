/* The device library's strtod, strtof, strtold and atof (device/strtod.c, built for the host device with
 * their functions named omprpc_libc_*) against the host's glibc, in a target region run through
 * omprpc on the host device, where the library's calls reach the plugin's STRTOD service: for each
 * input, the value's bits, the end pointer and errno (which both sides start at a value no conversion
 * sets, so that one left alone is seen as such). Inputs: fixed edge cases (signs, white space, no
 * digits, "0x", "1e", inf/infinity/nan/nan(...), DBL_MAX, DBL_MIN, DBL_TRUE_MIN, 2.2250738585072011e-308,
 * overflow and underflow), random decimal and hexadecimal numbers of every length and exponent, the
 * exact midpoints between neighbouring doubles and floats (which ties-to-even decides) with and without
 * a far nonzero digit, numbers longer than the device's cut (800 significant digits for double, 11600
 * for long double) with the cut in the integer part and in the fraction, and random text. Built with
 * -DOMPRPC_SIMULATED_LANES=32, the lanes of a simulated warp then convert numbers of their own at once.
 * Prints "N checks, M mismatches" and the first mismatches. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <float.h>
#include <stdint.h>

#include "common.h"

#define OMPRPC_LIBC_PREFIX 1
#include "../device/ctype.c"
#include "../device/omprpc_libc.c"
#include "../device/stdlib.c"
#include "../device/string.c"
#include "../device/strtod.c"

#pragma omp declare target
static long checks, mismatches;

/* errno before each conversion: a value no conversion sets. */
#define UNTOUCHED 12345

static void check(int same, const char *what, const char *input) {
  checks++;
  if (same)
    return;
  if (++mismatches <= 30)
    printf("mismatch: %s on \"%.100s\"%s\n", what, input, strlen(input) > 100 ? "..." : "");
}

static void compare(const char *s) {
  char *ours_end, *theirs_end;
#define COMPARE(name, type, bytes)                                                                        \
  do {                                                                                                    \
    ours_end = theirs_end = (char *)s + 3;                                                                \
    errno = UNTOUCHED;                                                                                    \
    *omprpc_libc___errno_location() = UNTOUCHED;                                                          \
    type a = omprpc_libc_##name(s, &ours_end), z = name(s, &theirs_end);                                  \
    int their_errno = errno;                                                                              \
    check(memcmp(&a, &z, bytes) == 0, #name "'s value", s);                                               \
    check(ours_end == theirs_end, #name "'s end", s);                                                     \
    check(*omprpc_libc___errno_location() == their_errno, #name "'s errno", s);                           \
  } while (0)
  COMPARE(strtod, double, sizeof(double));
  COMPARE(strtof, float, sizeof(float));
  COMPARE(strtold, long double, 10);
  errno = UNTOUCHED;
  *omprpc_libc___errno_location() = UNTOUCHED;
  double a = omprpc_libc_atof(s), z = atof(s);
  int their_errno = errno;
  check(memcmp(&a, &z, sizeof a) == 0, "atof's value", s);
  check(*omprpc_libc___errno_location() == their_errno, "atof's errno", s);
  /* Without an end pointer. */
  a = omprpc_libc_strtod(s, NULL);
  check(memcmp(&a, &z, sizeof a) == 0, "strtod's value without an end", s);
}

static const char *const fixed[] = {
    "", " ", "-", "+", ".", "-.", "+.e1", "e5", "1e", "1e+", "1e-", "1E5", "1e+5x", "1.", "1.e3", ".5", "-.5",
    "  +.5e-3x", "\t\n\v\f\r 42", "0", "-0", "+0", "0.0e-999999", "00000000000000000000000001", "0x", "0X",
    "-0x", "0x.", "0x.p1", "0xg", "0x1", "0X1P-2", "0x1p", "0x1p+", "0x1p-", "0x.8p1", "0x1.", "0x1.8",
    "0x1.fffffffffffffp1023", "0x1.fffffffffffff8p1023", "0x1p1024", "0x1p-1074", "0x1p-1075", "0x1.8p-1075",
    "0x1p-1076", "0x0.0000000000001p-1022", "0x1.0000000000000800000000000001p0", "0x1.00000000000008p0",
    "0x1.00000000000018p0", "0x123456789abcdef123456789abcdefp-200", "0xffffffffffffffffffffffffffffffffff",
    "inf", "INF", "-inf", "infinity", "-Infinity", "INFINITYx", "infinit", "infx", "in", "i", "nan", "NaN",
    "-nan", "nan(", "nan()", "nan(123)", "nan(0x123)", "nan(0xfffffffffffff)", "nan(0x7ffffffffffff)",
    "nan(abc_1)", "nan(1 2)", "nan(-1)", "nan(0x10000000000000000)", "nan(00777)", "nanx", "na", "-nan(1)x",
    "1e308", "1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308", "1e309", "-1e309",
    "2.2250738585072014e-308", "2.2250738585072011e-308", "2.2250738585072012e-308", "4.9406564584124654e-324",
    "2.4703282292062327e-324", "2.4703282292062328e-324", "2.4703282292062327208828439643411e-324", "1e-324",
    "3e-324", "1e-320", "1e-400", "-1e-400", "1e-45", "1.4e-45", "7e-46", "3.4028235e38", "3.4028236e38",
    "3.40282357e38", "1.17549435e-38", "1.1754943e-38", "1e-4950", "1e4932", "1.18973149535723176502e+4932",
    "3.6451995318824746025e-4951", "1e99999999999999999999999999", "1e-99999999999999999999999999",
    "0e99999999999999999999999999", "9007199254740993", "9007199254740992.5", "9007199254740993.0000000001",
    "0.1", "0.2", "0.3", "123.456", "1,5", "1_000", "0.000000000000000000000000000000000000000000000001e48",
    "\x80" "1", "+-1", "-+1", "- 1", "1 ", "5.", "5.x", "5..5", "5.5.5", "1e1e1", "0x1p1p1", "0x1.p1",
};
#define FIXED (int)(sizeof fixed / sizeof fixed[0])

static uint64_t state = 0x9e3779b97f4a7c15u;
static uint64_t next(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}
static uint64_t below(uint64_t n) { return next() % n; }

static char text[40000];

/* Appends `count` random digits of `base` to the text at *p. */
static void digits(char **p, int count, int base) {
  static const char hex[] = "0123456789abcdefABCDEF";
  for (int i = 0; i < count; i++)
    *(*p)++ = base == 16 ? hex[below(22)] : (char)('0' + below(10));
}

static void random_number(int hex, int longest) {
  char *p = text;
  static const char *const spaces[] = {"", "", "", " ", "\t", "  \n"};
  static const char *const signs[] = {"", "", "-", "+"};
  static const char *const tails[] = {"", "", "", "x", " 1", "e", "e+", ".", "p3", "(", ")"};
  p += sprintf(p, "%s%s%s", spaces[below(6)], signs[below(4)], hex ? (below(2) ? "0x" : "0X") : "");
  int zeros = below(4) == 0 ? (int)below(30) : 0;
  for (int i = 0; i < zeros; i++)
    *p++ = '0';
  int length = (int)below((uint64_t)longest) + (hex ? 1 : 0);
  int point = (int)below((uint64_t)length + 2) - 1;
  for (int i = 0; i < length; i++) {
    if (i == point)
      *p++ = '.';
    digits(&p, 1, hex ? 16 : 10);
  }
  if (below(3)) {
    int range = hex ? 1200 : 400;
    long e = (long)below(2 * (uint64_t)range) - range;
    if (below(20) == 0)
      e *= 20;
    p += sprintf(p, "%c%s%ld", hex ? (below(2) ? 'p' : 'P') : (below(2) ? 'e' : 'E'), e >= 0 && below(2) ? "+" : "",
                 e);
  }
  p += sprintf(p, "%s", tails[below(11)]);
  *p = 0;
}

/* The exact decimal of the midpoint between d and the next double up (representable in long double),
 * then, after `zeros` zeros, a 1 when `one`. */
static double next_up(double d) {
  uint64_t bits;
  memcpy(&bits, &d, sizeof d);
  bits++;
  memcpy(&d, &bits, sizeof d);
  return d;
}
static float next_up_float(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof f);
  bits++;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static void midpoint(double d, int zeros, int one, const char *exponent_tail) {
  long double m = ((long double)d + (long double)next_up(d)) / 2;
  char *p = text + sprintf(text, "%.780Le", m);
  char *e = strchr(text, 'e');
  char exponent[16];
  snprintf(exponent, sizeof exponent, "%s", e);
  p = e;
  for (int i = 0; i < zeros; i++)
    *p++ = '0';
  if (one)
    *p++ = '1';
  sprintf(p, "%s%s", exponent, exponent_tail);
}

static void random_cases(void) {
  for (int i = 0; i < 2500; i++) {
    random_number(0, i % 10 == 0 ? 60 : 22);
    compare(text);
  }
  for (int i = 0; i < 800; i++) {
    random_number(1, i % 10 == 0 ? 60 : 18);
    compare(text);
  }
  /* Longer than the device's cut for double and float (800 significant digits), and for long double. */
  for (int i = 0; i < 60; i++) {
    random_number(i % 3 == 0, 700 + (int)below(900));
    compare(text);
  }
  for (int i = 0; i < 8; i++) {
    random_number(i % 4 == 0, 11000 + (int)below(3000));
    compare(text);
  }
  /* Random text made of the characters numbers are made of. */
  static const char alphabet[] = "0123456789.+-eEpPxXaAfFnNiItTyY() _\t";
  for (int i = 0; i < 1500; i++) {
    int length = (int)below(14);
    for (int k = 0; k < length; k++)
      text[k] = alphabet[below(sizeof alphabet - 1)];
    text[length] = 0;
    compare(text);
  }
}

static void midpoint_cases(void) {
  double special[] = {DBL_TRUE_MIN, 2 * DBL_TRUE_MIN, DBL_MIN, DBL_MIN - DBL_TRUE_MIN, 1.0, 0.1, 1e23,
                      0x1.ffffffffffffep1023, 9007199254740992.0, 1e-300};
  for (int i = 0; i < 410; i++) {
    double d;
    if (i < 10) {
      d = special[i];
    } else {
      uint64_t bits = next() & 0x7fefffffffffffffu;
      if (i % 4 == 0)
        bits &= 0x000fffffffffffffu; /* subnormals too */
      memcpy(&d, &bits, sizeof d);
    }
    midpoint(d, 0, 0, "");
    compare(text);
    midpoint(d, 0, 1, "");
    compare(text);
    midpoint(d, 200 + (int)below(400), 1, ""); /* the 1 beyond the cut */
    compare(text);
    midpoint(d, 300, 0, "x");
    compare(text);
    if (i % 8 == 0) {
      midpoint(d, 11000, 1, ""); /* beyond long double's cut */
      compare(text);
    }
    /* Just below the midpoint: its last digit one lower. */
    midpoint(d, 0, 0, "");
    char *e = strchr(text, 'e');
    char *last = e - 1;
    while (*last == '0')
      *last-- = '9';
    --*last;
    compare(text);
    /* A float's midpoint, exact as a double. */
    float f = (float)d;
    if (f < FLT_MAX && f != 0) {
      double fm = ((double)f + (double)next_up_float(f)) / 2;
      sprintf(text, "%.200e", fm);
      compare(text);
      e = strchr(text, 'e');
      memmove(e + 1000, e, strlen(e) + 1);
      memset(e, '0', 1000);
      e[999] = '1';
      compare(text);
    }
  }
}

/* Mantissas longer than the cut with the cut in the integer part: many integer digits and a negative
 * exponent, in decimal and in hexadecimal, with the nonzero digits after the cut or none. */
static void long_integer_cases(void) {
  for (int i = 0; i < 80; i++) {
    int hex = i % 2;
    char *p = text + sprintf(text, "%s", hex ? "0x" : "");
    int leading = 1 + (int)below(hex ? 20 : 400);
    digits(&p, leading, hex ? 16 : 10);
    int zeros = 900 + (int)below(300);
    for (int k = 0; k < zeros; k++)
      *p++ = '0';
    if (i % 4 < 2)
      *p++ = '1';
    if (i % 3 == 0)
      p += sprintf(p, ".%s", i % 6 == 0 ? "0000" : "25");
    long shift = (long)(zeros + leading) * (hex ? 4 : 1) - (long)below(hex ? 2000 : 600);
    sprintf(p, "%c-%ld", hex ? 'p' : 'e', shift);
    compare(text);
  }
  /* Huge exponents and long mantissas together. */
  const char *exponents[] = {"e99999999999999999999", "e-99999999999999999999", "e0", "e-1000", "e+300"};
  for (int i = 0; i < 10; i++) {
    char *p = text;
    digits(&p, 900, 10);
    sprintf(p, "%s", exponents[i % 5]);
    compare(text);
  }
}

static void fixed_cases(void) {
  for (int i = 0; i < FIXED; i++)
    compare(fixed[i]);
  /* The limits, with 17 digits and exactly. */
  const double limits[] = {DBL_MAX, DBL_MIN, DBL_TRUE_MIN, FLT_MAX, FLT_MIN, FLT_TRUE_MIN};
  for (int i = 0; i < 6; i++) {
    sprintf(text, "%.17g", limits[i]);
    compare(text);
    sprintf(text, "%.800e", limits[i]);
    compare(text);
    sprintf(text, "-%a", limits[i]);
    compare(text);
  }
  /* The overflow threshold: the midpoint between DBL_MAX and 2^1024, and just below it. */
  sprintf(text, "%.0Lf", ((long double)DBL_MAX + 0x1p1024L) / 2);
  compare(text);
  text[strlen(text) - 1] = '7';
  compare(text);
  /* Half of the smallest subnormal, exactly, then with a 1 far after it. */
  sprintf(text, "%.1100Le", 0x1p-1075L);
  compare(text);
  char *e = strchr(text, 'e');
  e[-1] = '1';
  compare(text);
  /* Long white space before, and a long run of zeros. */
  memset(text, ' ', 20000);
  sprintf(text + 20000, "-1.5e3");
  compare(text);
  memset(text, '0', 30000);
  sprintf(text + 30000, "1e-30000");
  compare(text);
  text[0] = '.';
  compare(text);
}

#ifdef OMPRPC_SIMULATED_LANES
/* Every lane of a simulated warp converts numbers of its own at once, of different lengths (up to past
 * the cut), so that each call's lanes send texts of different packet counts; errno, one per device, is
 * left out. */
static long lane_checks[64], lane_mismatches[64];
static char lane_text[64][2048];
static void lane_cases(void) {
  int lane = omp_get_thread_num();
  char *s = lane_text[lane];
  uint64_t x = 0x12345u + (uint64_t)lane * 7919u;
  for (int round = 0; round < 60; round++) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    int length = (int)((x >> 33) % (round % 5 == 0 ? 1500 : 30)) + 1;
    char *p = s + sprintf(s, "%s", (x >> 20) & 1 ? " -" : "");
    for (int i = 0; i < length; i++) {
      x = x * 6364136223846793005u + 1442695040888963407u;
      *p++ = (char)('0' + (x >> 40) % 10);
      if (i == length / 3)
        *p++ = '.';
    }
    sprintf(p, "e%d", (int)((x >> 45) % 700) - 350);
    char *ours_end, *theirs_end;
    double a = omprpc_libc_strtod(s, &ours_end), z = strtod(s, &theirs_end);
    lane_checks[lane] += 4;
    lane_mismatches[lane] += (memcmp(&a, &z, sizeof a) != 0) + (ours_end != theirs_end);
    float f = omprpc_libc_strtof(s, &ours_end), g = strtof(s, &theirs_end);
    lane_mismatches[lane] += (memcmp(&f, &g, sizeof f) != 0) + (ours_end != theirs_end);
  }
}
#endif
#pragma omp end declare target

int main(void) {
  long counted[2];
#pragma omp target map(from : counted)
  {
    fixed_cases();
    random_cases();
    midpoint_cases();
    long_integer_cases();
#ifdef OMPRPC_SIMULATED_LANES
#pragma omp parallel num_threads(OMPRPC_SIMULATED_LANES)
    lane_cases();
    for (int lane = 0; lane < OMPRPC_SIMULATED_LANES; lane++) {
      checks += lane_checks[lane];
      mismatches += lane_mismatches[lane];
    }
#endif
    counted[0] = checks;
    counted[1] = mismatches;
  }
  printf("%ld checks, %ld mismatches\n", counted[0], counted[1]);
  return counted[1] != 0;
}
