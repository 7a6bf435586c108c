/* omprpc_sscanf, omprpc_fscanf and omprpc_scanf (omprpc_device.h, which omprpc_libc.h routes a GPU
 * program's sscanf, fscanf and scanf to) against the host's glibc, in a target region run through omprpc
 * on the host device, where the host parses each call (SCAN). Every case calls both with the same input
 * and format into destinations filled alike before, and compares the result and every destination's
 * bytes (so that a byte stored past glibc's, or one glibc stores and omprpc does not, is seen): every
 * conversion, widths, length modifiers, scansets, %n, suppression, input and matching failures, white
 * space, numbers at and past their limits, %i's bases, floats with hex floats, inf and nan, over a
 * hundred inputs per format; random numbers printed and read back; a text longer than a packet. Then
 * fscanf from a file this program writes, and scanf from stdin reopened on it, against glibc's fscanf of
 * the same file. Then what omprpc refuses (EOF, the destinations as they were): a NULL string, stream or
 * format, %1$d, %ms, %ls, more conversions than pointers (the last four only with a server: without
 * one the calls are the host's own). Prints "N checks, M mismatches".
 *
 * With -DOMPRPC_SIMULATED_LANES=32, the threads of a parallel region play a warp's lanes (see
 * omprpc_device.h): each lane parses a text of its own, together, a third of them, and each alone, so
 * that each lane's reply (result and stored bytes) is seen to reach that lane. */
#include <stdint.h>

#include "common.h"
#include "omprpc_device.h"

#define SLOT 512
#define SLOTS 4

#pragma omp declare target
static long checks, mismatches;
static _Alignas(16) char ours[SLOTS][SLOT], theirs[SLOTS][SLOT];

static void fill(void) {
  for (int s = 0; s < SLOTS; s++)
    for (int i = 0; i < SLOT; i++)
      ours[s][i] = theirs[s][i] = (char)('#' + (i + s) % 61);
}

static void compare(const char *what, const char *input, const char *format, int a, int b) {
  checks++;
  if (a != b || memcmp(ours, theirs, sizeof ours) != 0) {
    if (++mismatches <= 30) {
      int slot = 0;
      while (slot < SLOTS && memcmp(ours[slot], theirs[slot], SLOT) == 0)
        slot++;
      printf("mismatch: %s of \"%s\" with \"%s\": ours %d, glibc %d; first differing destination %d\n", what,
             input ? input : "(NULL)", format ? format : "(NULL)", a, b, slot);
    }
  }
}

#ifndef OMPRPC_SIMULATED_LANES
/* One case: sscanf of `input` with `format` into the four destinations. */
static void scan_case(const char *input, const char *format) {
  fill();
  int a = omprpc_sscanf(input, format, ours[0], ours[1], ours[2], ours[3]);
  int b = sscanf(input, format, theirs[0], theirs[1], theirs[2], theirs[3]);
  compare("sscanf", input, format, a, b);
}

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

static const char *const formats[] = {
    "%d", "%i", "%u", "%o", "%x", "%X", "%hhd", "%hhu", "%hhi", "%hd", "%hu", "%hi", "%ld", "%lu", "%lx",
    "%lld", "%llu", "%lli", "%jd", "%ju", "%zu", "%zd", "%td", "%qd", "%Ld", "%3d", "%1i", "%2x", "%20i",
    "%f", "%e", "%g", "%a", "%E", "%F", "%G", "%A", "%lf", "%le", "%lg", "%la", "%Lf", "%Lg", "%5f", "%3lf",
    "%s", "%3s", "%1s", "%c", "%4c", "%2c", "%[a-z]", "%[^ ]", "%[]abc]", "%[^]x]", "%3[0-9]", "%[-+0-9]",
    "%[^\n]", "%p", "%d%n", "%n", "%hhn%d", "%*d%d", "%*s %s", "%d %d", "%d,%d", " %c", "%c%c", "%s%n%c",
    "x%d", "%%%d", "%d%%", "%5s%n", "%i %i %i", "%2d%2d%2d", "%f%s", "%lf %lf", "%[0-9a-fA-FxX]",
    "%*[ ]%c", "%*c%c", "%d %*d %d", "%s %d %f %c", "%d%c%s%n", "%*[a-z]%n", "%'d", "%Id", "%y", "%d%",
    "%[abc", "abc", " ", "%ln%lld", "%2s%2s%2s%2s",
};

static const char *const inputs[] = {
    "", " ", "\t\n ", "0", "1", "-1", "+1", "42", "  42", "42abc", "abc", "abc def", "0x1f", "0X1F", "0x",
    "0xg", "-0x10", "017", "08", "-0", "2147483647", "2147483648", "-2147483648", "-2147483649",
    "4294967295", "4294967296", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "-9223372036854775809", "18446744073709551615", "18446744073709551616", "99999999999999999999999", "127",
    "128", "255", "256", "-129", "32767", "65536", "1.5", "-1.5e10", "1e400", "-1e400", "1e-400", ".5", "5.",
    ".", "-.e1", "1e", "1e+", "1e+5x", "0x1p-2", "0x1.8p1", "0x.8", "0x1p", "0x1.fffffffffffff8p1023", "inf",
    "-INF", "infinity", "infinit", "nan", "NAN(123)", "nan(", "-nan", "1,2", "1 2 3", "12 34 56 78",
    "\t\n 7", "abc]def", "]abc", "^]x", "x123", "x 123", "%5", "%%5", "hello world", "a", "ab", "abcd",
    "abcdef", "ABC", "3.14159265358979323846264338327950288", "1e308", "2.2250738585072014e-308",
    "4.9e-324", "2.4703282292062327e-324", "1.17549435e-38", "3.4028235e38", "3.4028236e38", "3.5e38",
    "00000000000000000000000001", "+", "-", "+-1", "0x7fffffffffffffff", "-0x8000000000000000", "0777",
    "0x100000000", "1_000", "12abc 45", "(nil)", "0x1234", "0", " x", "a-b+c 9", "line one\nline two",
    "1.5 2.5", "7 8 9 10", "-12.5e-3xyz", "0.000001", "1e-5", "  +.5e+2", "1e2147483648", "0e0",
    "1234567890123456789012345678901234567890",
};

/* Every format with every input. */
static void table_cases(void) {
  for (unsigned f = 0; f < COUNT(formats); f++)
    for (unsigned i = 0; i < COUNT(inputs); i++)
      scan_case(inputs[i], formats[f]);
}

/* Numbers printed by glibc and read back, at random. */
static void random_cases(void) {
  uint64_t state = 0x9E3779B97F4A7C15u;
  char text[128];
  for (int n = 0; n < 3000; n++) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    uint64_t bits = state ^ (state >> 29);
    double d;
    memcpy(&d, &bits, sizeof d);
    switch (n % 6) {
    case 0:
      snprintf(text, sizeof text, "%.17g", d);
      scan_case(text, "%lf");
      break;
    case 1:
      snprintf(text, sizeof text, "%a", d);
      scan_case(text, "%f");
      break;
    case 2:
      snprintf(text, sizeof text, "%.*e", (int)(bits % 30), d);
      scan_case(text, "%lg%n");
      break;
    case 3:
      snprintf(text, sizeof text, "%lld", (long long)bits);
      scan_case(text, "%i");
      break;
    case 4:
      snprintf(text, sizeof text, "%#llx %llo", (unsigned long long)bits, (unsigned long long)bits >> 3);
      scan_case(text, "%lli %lli");
      break;
    default:
      snprintf(text, sizeof text, "%u.%u", (unsigned)bits, (unsigned)(bits >> 32));
      scan_case(text, "%hd.%2s%c");
      break;
    }
  }
  /* A text longer than a packet, read whole and in pieces. */
  char text_long[400];
  for (int i = 0; i < 399; i++)
    text_long[i] = (char)('a' + i % 26);
  text_long[399] = 0;
  scan_case(text_long, "%s");
  scan_case(text_long, "%100c%n%s");
  scan_case(text_long, "%[a-m]%*[n-z]%[a-m]%n");
}

/* fscanf of a file and scanf of stdin reopened on it, against glibc's fscanf of the same file. */
static void stream_cases(const char *path) {
  static const char *const stream_formats[] = {"%d", "%s", "%lf%n", " %c", "%[^\n]", "%x %o", "%*s %3c",
                                               "%i", "%5s%n", "%f", "%d"};
  omprpc_file *file = omprpc_fopen(path, "r");
  FILE *glibc = fopen(path, "r");
  for (int pass = 0; pass < 2; pass++) {
    for (unsigned f = 0; f < 40; f++) {
      const char *format = stream_formats[f % COUNT(stream_formats)];
      fill();
      int a = pass == 0 ? omprpc_fscanf(file, format, ours[0], ours[1], ours[2], ours[3])
                        : omprpc_scanf(format, ours[0], ours[1], ours[2], ours[3]);
      int b = fscanf(glibc, format, theirs[0], theirs[1], theirs[2], theirs[3]);
      compare(pass == 0 ? "fscanf" : "scanf", path, format, a, b);
    }
    rewind(glibc);
  }
  omprpc_fclose(file);
  fclose(glibc);
}
#endif

/* What omprpc refuses: EOF, nothing stored. The host's error lines are checked by the test. */
static void refusals(void) {
  fill();
  compare("NULL string", NULL, "%d", omprpc_sscanf((const char *)NULL, "%d", ours[0]), -1);
  compare("NULL format", "1", NULL, omprpc_sscanf("1", (const char *)NULL, ours[0]), -1);
  compare("NULL stream", NULL, "%d", omprpc_fscanf((omprpc_file *)NULL, "%d", ours[0]), -1);
  /* Without a server, on the host, the calls are the host's own, which would allocate, read wide
   * characters, or store through a pointer not passed. */
  if (!omprpc_rpc_active())
    return;
  compare("a position", "1", "%1$d", omprpc_sscanf("1", "%1$d", ours[0]), -1);
  compare("an allocation", "word", "%ms", omprpc_sscanf("word", "%ms", ours[0]), -1);
  compare("a wide string", "word", "%ls", omprpc_sscanf("word", "%ls", ours[0]), -1);
  compare("too few pointers", "1 2", "%d %d", omprpc_sscanf("1 2", "%d %d", ours[0]), -1);
}
#pragma omp end declare target

#ifdef OMPRPC_SIMULATED_LANES
#pragma omp declare target
/* Each lane its own text: every lane, then a third of them, then each lane alone. */
static void lanes(void) {
  static _Alignas(16) char lane_ours[OMPRPC_SIMULATED_LANES][3][96], lane_theirs[OMPRPC_SIMULATED_LANES][3][96];
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
      char text[160];
      int words = (lane + round) % 5;
      int at = snprintf(text, sizeof text, "lane %d:%d %.3f ", lane, round, lane / 7.0);
      for (int w = 0; w < words * 9; w++)
        text[at++] = (char)('a' + (lane + w) % 26);
      text[at] = 0;
      memset(lane_ours[lane], '#', sizeof lane_ours[lane]);
      memset(lane_theirs[lane], '#', sizeof lane_theirs[lane]);
      const char *format = lane % 2 ? "lane %d:%*d %lf %s" : "lane %d:%*d %lf %5c";
      int a = omprpc_sscanf(text, format, lane_ours[lane][0], lane_ours[lane][1], lane_ours[lane][2]);
      int b = sscanf(text, format, lane_theirs[lane][0], lane_theirs[lane][1], lane_theirs[lane][2]);
#pragma omp critical
      {
        checks++;
        if (a != b || memcmp(lane_ours[lane], lane_theirs[lane], sizeof lane_ours[lane]) != 0) {
          if (++mismatches <= 30)
            printf("mismatch: lane %d, round %d: \"%s\": ours %d, glibc %d\n", lane, round, text, a, b);
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
#ifndef OMPRPC_SIMULATED_LANES
  char path[64];
  snprintf(path, sizeof path, "/tmp/omprpc-sscanf-%d.txt", (int)getpid());
  FILE *out = fopen(path, "w");
  if (!out) {
    perror(path);
    return 1;
  }
  fputs("  42 word 2.5e3 z a whole line\n1f 777 skip abc 0x1F short 1e-2 -7\n", out);
  for (int i = 0; i < 20; i++)
    fprintf(out, "%d w%d %g c line %d\n%x %o x yy %i %s %f\n", i * 37 - 100, i, i / 3.0, i, i, i, i, "txt",
            i * 1.25);
  fclose(out);
  if (!freopen(path, "r", stdin)) {
    perror(path);
    return 1;
  }
#endif
#pragma omp target map(from : counted)
  {
#ifdef OMPRPC_SIMULATED_LANES
    lanes();
#else
    table_cases();
    random_cases();
    stream_cases(path);
#endif
    refusals();
    counted[0] = checks;
    counted[1] = mismatches;
  }
#ifndef OMPRPC_SIMULATED_LANES
  remove(path);
#endif
  printf("%ld checks, %ld mismatches\n", counted[0], counted[1]);
  return counted[1] != 0;
}
