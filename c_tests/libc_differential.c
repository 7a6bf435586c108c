/* The device library's own C library functions (device/ctype.c, string.c, stdlib.c, built for the host
 * device with their functions named omprpc_libc_*) against the host's glibc, for the same inputs, in a
 * target region run through omprpc on the host device. Every case calls both and compares results,
 * returned pointers (as offsets), the bytes written, errno and endptr; edge cases included: EOF and
 * bytes above 127, overlapping memmove both ways, strtol's bases, prefixes, signs and overflow, "0x"
 * with no digit, qsort's order of equal elements (glibc's is stable) for small and large elements,
 * bsearch among duplicates, rand's sequences. strlcpy and strlcat, which glibc 2.36 lacks, are compared
 * with snprintf, which has their result. Prints "N checks, M mismatches" and the first mismatches. */
#define _GNU_SOURCE 1 /* memmem, strcasestr, strchrnul, mempcpy, memrchr, qsort_r */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <strings.h>
#include <wchar.h>

#include "common.h"

#define OMPRPC_LIBC_PREFIX 1
#include "../device/ctype.c"
#include "../device/omprpc_libc.c"
#include "../device/stdlib.c"
#include "../device/string.c"

#pragma omp declare target
static long checks, mismatches;

static void check(int same, const char *what, long a, long b, const char *input) {
  checks++;
  if (same)
    return;
  if (++mismatches <= 30)
    printf("mismatch: %s on \"%s\": ours %ld, glibc %ld\n", what, input ? input : "", a, b);
}
static void check_values(const char *what, long ours, long theirs, const char *input) {
  check(ours == theirs, what, ours, theirs, input);
}
/* Each side evaluated once. */
#define CHECK(what, ours, theirs, input) check_values(what, (long)(ours), (long)(theirs), input)
static int sign(long v) { return (v > 0) - (v < 0); }
/* A returned pointer as an offset from `base` (-1 for NULL), so that both libraries' can be compared. */
static long offset(const void *p, const void *base) { return p ? (long)((const char *)p - (const char *)base) : -1; }

static const char *const words[] = {
    "", "a", "b", "ab", "abc", "abd", "ABC", "abC", "Hello, World", "hello, world", "aaa", "abcabc", "bca",
    "\x80", "\xff" "a", "a\tb c", "token,,list;;x", " ,;", "mississippi", "issip", "ssi", "x",
    "The quick brown fox jumps over the lazy dog; THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG.",
};
#define WORDS (int)(sizeof words / sizeof words[0])

static void ctype_cases(void) {
  for (int c = -1; c < 256; c++) {
    char name[8];
    snprintf(name, sizeof name, "%d", c);
    CHECK("isalnum", !!omprpc_libc_isalnum(c), !!isalnum(c), name);
    CHECK("isalpha", !!omprpc_libc_isalpha(c), !!isalpha(c), name);
    CHECK("isascii", !!omprpc_libc_isascii(c), !!isascii(c), name);
    CHECK("isblank", !!omprpc_libc_isblank(c), !!isblank(c), name);
    CHECK("iscntrl", !!omprpc_libc_iscntrl(c), !!iscntrl(c), name);
    CHECK("isdigit", !!omprpc_libc_isdigit(c), !!isdigit(c), name);
    CHECK("isgraph", !!omprpc_libc_isgraph(c), !!isgraph(c), name);
    CHECK("islower", !!omprpc_libc_islower(c), !!islower(c), name);
    CHECK("isprint", !!omprpc_libc_isprint(c), !!isprint(c), name);
    CHECK("ispunct", !!omprpc_libc_ispunct(c), !!ispunct(c), name);
    CHECK("isspace", !!omprpc_libc_isspace(c), !!isspace(c), name);
    CHECK("isupper", !!omprpc_libc_isupper(c), !!isupper(c), name);
    CHECK("isxdigit", !!omprpc_libc_isxdigit(c), !!isxdigit(c), name);
    CHECK("toascii", omprpc_libc_toascii(c), toascii(c), name);
    CHECK("tolower", omprpc_libc_tolower(c), tolower(c), name);
    CHECK("toupper", omprpc_libc_toupper(c), toupper(c), name);
  }
  for (int c = -128; c < 256; c++) {
    char name[8];
    snprintf(name, sizeof name, "%d", c);
    CHECK("__ctype_b_loc's table", (*omprpc_libc___ctype_b_loc())[c], (*__ctype_b_loc())[c], name);
    CHECK("__ctype_tolower_loc's table", (*omprpc_libc___ctype_tolower_loc())[c], (*__ctype_tolower_loc())[c], name);
    CHECK("__ctype_toupper_loc's table", (*omprpc_libc___ctype_toupper_loc())[c], (*__ctype_toupper_loc())[c], name);
  }
  const unsigned wide[] = {0, 'a', 127, 128, 255, 256, 0x263a, 0x10ffff, 0xffffffffu};
  for (unsigned i = 0; i < sizeof wide / sizeof wide[0]; i++)
    CHECK("wctob", omprpc_libc_wctob(wide[i]), wctob(wide[i]), "a wide character");
}

/* Two buffers filled alike, to be written by both libraries and compared whole. */
static char ours_buffer[512], theirs_buffer[512];
static void fill(void) {
  for (int i = 0; i < 512; i++)
    ours_buffer[i] = theirs_buffer[i] = (char)('#' + i % 61);
}
static void check_buffers(const char *what, const char *input) {
  CHECK(what, memcmp(ours_buffer, theirs_buffer, sizeof ours_buffer), 0, input);
}

static void string_pairs(const char *s, const char *t) {
  size_t n = strlen(s) < strlen(t) ? strlen(s) + 1 : strlen(t) + 1;
  CHECK("strcmp", sign(omprpc_libc_strcmp(s, t)), sign(strcmp(s, t)), s);
  CHECK("strcoll", sign(omprpc_libc_strcoll(s, t)), sign(strcoll(s, t)), s);
  CHECK("strcasecmp", sign(omprpc_libc_strcasecmp(s, t)), sign(strcasecmp(s, t)), s);
  CHECK("memcmp", sign(omprpc_libc_memcmp(s, t, n)), sign(memcmp(s, t, n)), s);
  CHECK("bcmp", !omprpc_libc_bcmp(s, t, n), !bcmp(s, t, n), s);
  for (size_t k = 0; k < 6; k++) {
    CHECK("strncmp", sign(omprpc_libc_strncmp(s, t, k)), sign(strncmp(s, t, k)), s);
    CHECK("strncasecmp", sign(omprpc_libc_strncasecmp(s, t, k)), sign(strncasecmp(s, t, k)), s);
  }
  CHECK("strstr", offset(omprpc_libc_strstr(s, t), s), offset(strstr(s, t), s), s);
  CHECK("strcasestr", offset(omprpc_libc_strcasestr(s, t), s), offset(strcasestr(s, t), s), s);
  CHECK("memmem", offset(omprpc_libc_memmem(s, strlen(s), t, strlen(t)), s),
        offset(memmem(s, strlen(s), t, strlen(t)), s), s);
  CHECK("strspn", omprpc_libc_strspn(s, t), strspn(s, t), s);
  CHECK("strcspn", omprpc_libc_strcspn(s, t), strcspn(s, t), s);
  CHECK("strpbrk", offset(omprpc_libc_strpbrk(s, t), s), offset(strpbrk(s, t), s), s);
  for (size_t size = 0; size < 24; size += 3) {
    fill();
    snprintf(ours_buffer, 512, "%s", s);
    snprintf(theirs_buffer, 512, "%s", s);
    size_t used = strnlen(theirs_buffer, size);
    size_t want = used == size ? size + strlen(t) : used + (size_t)snprintf(theirs_buffer + used, size - used, "%s", t);
    CHECK("strlcat", omprpc_libc_strlcat(ours_buffer, t, size), want, s);
    check_buffers("strlcat's bytes", s);
  }
  fill();
  strcpy(ours_buffer, s);
  strcpy(theirs_buffer, s);
  CHECK("strcat", offset(omprpc_libc_strcat(ours_buffer, t), ours_buffer), offset(strcat(theirs_buffer, t), theirs_buffer), s);
  check_buffers("strcat's bytes", s);
  for (size_t k = 0; k < 8; k += 3) {
    fill();
    strcpy(ours_buffer, s);
    strcpy(theirs_buffer, s);
    omprpc_libc_strncat(ours_buffer, t, k);
    strncat(theirs_buffer, t, k);
    check_buffers("strncat's bytes", s);
  }
}

static void string_cases(void) {
  const int chars[] = {0, 'a', 'b', 's', ',', ';', ' ', 0x80, 0xff, 'a' + 256, -1};
  for (int w = 0; w < WORDS; w++) {
    const char *s = words[w];
    size_t length = strlen(s);
    CHECK("strlen", omprpc_libc_strlen(s), length, s);
    for (size_t k = 0; k < 8; k++)
      CHECK("strnlen", omprpc_libc_strnlen(s, k), strnlen(s, k), s);
    for (unsigned i = 0; i < sizeof chars / sizeof chars[0]; i++) {
      int c = chars[i];
      CHECK("strchr", offset(omprpc_libc_strchr(s, c), s), offset(strchr(s, c), s), s);
      CHECK("strrchr", offset(omprpc_libc_strrchr(s, c), s), offset(strrchr(s, c), s), s);
      CHECK("strchrnul", offset(omprpc_libc_strchrnul(s, c), s), offset(strchrnul(s, c), s), s);
      CHECK("index", offset(omprpc_libc_index(s, c), s), offset(index(s, c), s), s);
      CHECK("rindex", offset(omprpc_libc_rindex(s, c), s), offset(rindex(s, c), s), s);
      CHECK("memchr", offset(omprpc_libc_memchr(s, c, length + 1), s), offset(memchr(s, c, length + 1), s), s);
      CHECK("memrchr", offset(omprpc_libc_memrchr(s, c, length), s), offset(memrchr(s, c, length), s), s);
      fill();
      CHECK("memccpy", offset(omprpc_libc_memccpy(ours_buffer, s, c, length), ours_buffer),
            offset(memccpy(theirs_buffer, s, c, length), theirs_buffer), s);
      check_buffers("memccpy's bytes", s);
    }
    for (int v = 0; v < WORDS; v++)
      string_pairs(s, words[v]);
    fill();
    CHECK("strcpy", offset(omprpc_libc_strcpy(ours_buffer, s), ours_buffer), offset(strcpy(theirs_buffer, s), theirs_buffer), s);
    check_buffers("strcpy's bytes", s);
    fill();
    CHECK("stpcpy", offset(omprpc_libc_stpcpy(ours_buffer, s), ours_buffer), offset(stpcpy(theirs_buffer, s), theirs_buffer), s);
    check_buffers("stpcpy's bytes", s);
    fill();
    CHECK("mempcpy", offset(omprpc_libc_mempcpy(ours_buffer, s, length), ours_buffer),
          offset(mempcpy(theirs_buffer, s, length), theirs_buffer), s);
    check_buffers("mempcpy's bytes", s);
    for (size_t k = 0; k < 20; k += 3) {
      fill();
      CHECK("strncpy", offset(omprpc_libc_strncpy(ours_buffer, s, k), ours_buffer),
            offset(strncpy(theirs_buffer, s, k), theirs_buffer), s);
      check_buffers("strncpy's bytes", s);
      fill();
      CHECK("stpncpy", offset(omprpc_libc_stpncpy(ours_buffer, s, k), ours_buffer),
            offset(stpncpy(theirs_buffer, s, k), theirs_buffer), s);
      check_buffers("stpncpy's bytes", s);
      fill();
      CHECK("strxfrm", omprpc_libc_strxfrm(ours_buffer, s, k), strxfrm(theirs_buffer, s, k), s);
      check_buffers("strxfrm's bytes", s);
      fill();
      CHECK("strlcpy", omprpc_libc_strlcpy(ours_buffer, s, k), (size_t)snprintf(theirs_buffer, k, "%s", s), s);
      check_buffers("strlcpy's bytes", s);
      char *copy = omprpc_libc_strndup(s, k);
      char *theirs = strndup(s, k);
      CHECK("strndup's bytes", strcmp(copy, theirs), 0, s);
      free(theirs);
      omprpc_libc_free(copy);
    }
    char *copy = omprpc_libc_strdup(s);
    CHECK("strdup", copy != s && strcmp(copy, s) == 0, 1, s);
    omprpc_libc_free(copy);
    /* Tokens, with every pair of delimiter sets. */
    const char *delimiters[] = {",", ",;", " ", "", "abc", "s"};
    for (unsigned d = 0; d < sizeof delimiters / sizeof delimiters[0]; d++) {
      char ours[256], theirs[256], *ours_place, *theirs_place;
      snprintf(ours, sizeof ours, "%s", s);
      snprintf(theirs, sizeof theirs, "%s", s);
      for (int first = 1;; first = 0) {
        char *a = omprpc_libc_strtok_r(first ? ours : NULL, delimiters[d], &ours_place);
        char *b = strtok_r(first ? theirs : NULL, delimiters[d], &theirs_place);
        CHECK("strtok_r", offset(a, ours), offset(b, theirs), s);
        if (!a || !b)
          break;
      }
      snprintf(ours, sizeof ours, "%s", s);
      snprintf(theirs, sizeof theirs, "%s", s);
      for (int first = 1;; first = 0) {
        char *a = omprpc_libc_strtok(first ? ours : NULL, delimiters[d]);
        char *b = strtok(first ? theirs : NULL, delimiters[d]);
        CHECK("strtok", offset(a, ours), offset(b, theirs), s);
        if (!a || !b)
          break;
      }
      snprintf(ours, sizeof ours, "%s", s);
      snprintf(theirs, sizeof theirs, "%s", s);
      ours_place = ours;
      theirs_place = theirs;
      for (;;) {
        char *a = omprpc_libc_strsep(&ours_place, delimiters[d]);
        char *b = strsep(&theirs_place, delimiters[d]);
        CHECK("strsep", offset(a, ours), offset(b, theirs), s);
        CHECK("strsep's place", offset(ours_place, ours), offset(theirs_place, theirs), s);
        if (!a || !b)
          break;
      }
      CHECK("the bytes tokens leave", memcmp(ours, theirs, strlen(s) + 1), 0, s);
    }
  }
  for (int number = -3; number < 300; number++) {
    char name[16];
    snprintf(name, sizeof name, "errno %d", number);
    char theirs[64];
    snprintf(theirs, sizeof theirs, "%s", strerror(number));
    CHECK("strerror", strcmp(omprpc_libc_strerror(number), theirs), 0, name);
  }
  CHECK("strerror", strcmp(omprpc_libc_strerror(INT_MIN), strerror(INT_MIN)), 0, "INT_MIN");
  /* memmove and bcopy, overlapping both ways; memset and bzero. */
  for (int from = 0; from < 24; from += 5)
    for (int to = 0; to < 24; to += 3)
      for (int n = 0; n < 40; n += 7) {
        fill();
        CHECK("memmove", offset(omprpc_libc_memmove(ours_buffer + to, ours_buffer + from, n), ours_buffer),
              offset(memmove(theirs_buffer + to, theirs_buffer + from, n), theirs_buffer), "overlap");
        check_buffers("memmove's bytes", "overlap");
        fill();
        omprpc_libc_bcopy(ours_buffer + from, ours_buffer + to, n);
        bcopy(theirs_buffer + from, theirs_buffer + to, n);
        check_buffers("bcopy's bytes", "overlap");
        fill();
        omprpc_libc_memset(ours_buffer + to, from * 37 - 300, n);
        memset(theirs_buffer + to, from * 37 - 300, n);
        check_buffers("memset's bytes", "a byte");
        fill();
        omprpc_libc_bzero(ours_buffer + to, n);
        bzero(theirs_buffer + to, n);
        check_buffers("bzero's bytes", "zero");
        fill();
        omprpc_libc_memcpy(ours_buffer + 100 + to, ours_buffer + from, n);
        memcpy(theirs_buffer + 100 + to, theirs_buffer + from, n);
        check_buffers("memcpy's bytes", "a copy");
      }
}

static const char *const numbers[] = {
    "", " ", "0", "-0", "+5", "  42abc", "\t\n\v\f\r +12", "+-1", "-+1", "- 1", "0x1f", "0X1F", "0x", "0xg",
    "0X", "-0x10", "+0x7FfF", "077", "08", "09", "0b101", "z", "Zz", "1e5", "12.5", "  -", "abc", "zzzzzz",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
    "18446744073709551615", "18446744073709551616", "-1", "-18446744073709551615", "-18446744073709551616",
    "99999999999999999999999", "123456789012345678901234567890", "7fffffffffffffff", "8000000000000000",
    "ffffffffffffffff", "10000000000000000", "-8000000000000000", "1111111111111111111111111111111111111111111111111111111111111111",
    "11111111111111111111111111111111111111111111111111111111111111111", "2147483647", "2147483648",
    "-2147483649", "4294967296", "  0000000000000000000000000000000000012", "1y2", "\x80" "1",
};
#define NUMBERS (int)(sizeof numbers / sizeof numbers[0])

static void conversion_cases(void) {
  const int bases[] = {0, 2, 8, 10, 16, 36, 1, 37, -1, 3, 35};
  for (int i = 0; i < NUMBERS; i++) {
    const char *s = numbers[i];
    for (unsigned b = 0; b < sizeof bases / sizeof bases[0]; b++) {
      int base = bases[b];
      char *ours_end = (char *)s + 1000, *theirs_end = (char *)s + 1000;
      errno = 0;
      *omprpc_libc___errno_location() = 0;
#define CONVERSION(name, type)                                                                            \
  do {                                                                                                    \
    errno = 0;                                                                                            \
    *omprpc_libc___errno_location() = 0;                                                                  \
    ours_end = theirs_end = (char *)s + 1000;                                                             \
    type a = omprpc_libc_##name(s, &ours_end, base), z = name(s, &theirs_end, base);                      \
    int their_errno = errno;                                                                              \
    check(a == z, #name, (long)a, (long)z, s);                                                            \
    CHECK(#name "'s end", ours_end - s, theirs_end - s, s);                                               \
    CHECK(#name "'s errno", *omprpc_libc___errno_location(), their_errno, s);                             \
  } while (0)
      CONVERSION(strtol, long);
      CONVERSION(strtoll, long long);
      CONVERSION(strtoul, unsigned long);
      CONVERSION(strtoull, unsigned long long);
      CONVERSION(strtoimax, intmax_t);
      CONVERSION(strtoumax, uintmax_t);
    }
    errno = 0;
    *omprpc_libc___errno_location() = 0;
    CHECK("atoi", omprpc_libc_atoi(s), atoi(s), s);
    CHECK("atol", omprpc_libc_atol(s), atol(s), s);
    CHECK("atoll", omprpc_libc_atoll(s), atoll(s), s);
    CHECK("strtol without end", omprpc_libc_strtol(s, NULL, 0), strtol(s, NULL, 0), s);
  }
  const long values[] = {0, 1, -1, 7, -7, 100, -100, INT_MAX, INT_MIN + 1, LONG_MAX, LONG_MIN + 1};
  for (unsigned i = 0; i < sizeof values / sizeof values[0]; i++) {
    long a = values[i];
    CHECK("abs", omprpc_libc_abs((int)a), abs((int)a), "a value");
    CHECK("labs", omprpc_libc_labs(a), labs(a), "a value");
    CHECK("llabs", omprpc_libc_llabs(a), llabs(a), "a value");
    CHECK("imaxabs", omprpc_libc_imaxabs(a), imaxabs(a), "a value");
    for (unsigned j = 0; j < sizeof values / sizeof values[0]; j++) {
      long b = values[j];
      if (b == 0)
        continue;
      if ((int)b != 0) {
        omprpc_div_t_ x = omprpc_libc_div((int)a, (int)b);
        div_t y = div((int)a, (int)b);
        CHECK("div", x.quot * 1000003L + x.rem, y.quot * 1000003L + y.rem, "a quotient");
      }
      omprpc_ldiv_t_ x = omprpc_libc_ldiv(a, b);
      ldiv_t y = ldiv(a, b);
      CHECK("ldiv", x.quot == y.quot && x.rem == y.rem, 1, "a quotient");
      omprpc_lldiv_t_ u = omprpc_libc_lldiv(a, b);
      lldiv_t v = lldiv(a, b);
      CHECK("lldiv", u.quot == v.quot && u.rem == v.rem, 1, "a quotient");
      omprpc_imaxdiv_t_ p = omprpc_libc_imaxdiv(a, b);
      imaxdiv_t q = imaxdiv(a, b);
      CHECK("imaxdiv", p.quot == q.quot && p.rem == q.rem, 1, "a quotient");
    }
  }
}

/* qsort's elements: a key with few values (many equal) and the element's first place; large ones are
 * padded past 32 bytes, where glibc sorts pointers instead of elements. */
struct small { int key, place; };
struct large { int key, place; char padding[32]; };
static int by_key_small(const void *a, const void *b) { return ((const struct small *)a)->key - ((const struct small *)b)->key; }
static int by_key_large(const void *a, const void *b) { return ((const struct large *)a)->key - ((const struct large *)b)->key; }
static int by_key_r(const void *a, const void *b, void *descending) {
  int order = by_key_small(a, b);
  return *(int *)descending ? -order : order;
}
static int compare_ints(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

static void sorting_cases(void) {
  static struct small ours_small[300], theirs_small[300];
  static struct large ours_large[300], theirs_large[300];
  const int counts[] = {0, 1, 2, 3, 7, 16, 31, 100, 300};
  for (unsigned c = 0; c < sizeof counts / sizeof counts[0]; c++)
    for (int keys = 1; keys < 40; keys += 13) {
      int n = counts[c];
      for (int i = 0; i < n; i++) {
        int key = (int)((i * 2654435761u) >> 7) % keys;
        ours_small[i] = theirs_small[i] = (struct small){key, i};
        ours_large[i] = theirs_large[i] = (struct large){key, i, {0}};
      }
      omprpc_libc_qsort(ours_small, n, sizeof ours_small[0], by_key_small);
      qsort(theirs_small, n, sizeof theirs_small[0], by_key_small);
      CHECK("qsort's order", memcmp(ours_small, theirs_small, n * sizeof ours_small[0]), 0, "small elements");
      omprpc_libc_qsort(ours_large, n, sizeof ours_large[0], by_key_large);
      qsort(theirs_large, n, sizeof theirs_large[0], by_key_large);
      CHECK("qsort's order", memcmp(ours_large, theirs_large, n * sizeof ours_large[0]), 0, "large elements");
      int descending = 1;
      omprpc_libc_qsort_r(ours_small, n, sizeof ours_small[0], by_key_r, &descending);
      qsort_r(theirs_small, n, sizeof theirs_small[0], by_key_r, &descending);
      CHECK("qsort_r's order", memcmp(ours_small, theirs_small, n * sizeof ours_small[0]), 0, "descending");
    }
  const int sorted[] = {1, 2, 2, 2, 3, 5, 5, 8, 8, 8, 8, 13};
  for (int n = 0; n <= 12; n++)
    for (int key = 0; key < 15; key++)
      CHECK("bsearch", offset(omprpc_libc_bsearch(&key, sorted, n, sizeof(int), compare_ints), sorted),
            offset(bsearch(&key, sorted, n, sizeof(int), compare_ints), sorted), "a sorted array");
}

static void rand_cases(void) {
  /* First without srand: both as if srand(1). */
  for (int i = 0; i < 100; i++)
    CHECK("rand without srand", omprpc_libc_rand(), rand(), "no seed");
  const unsigned seeds[] = {0, 1, 2, 42, 12345, 2147483647u, 2147483648u, 4294967295u};
  for (unsigned s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
    omprpc_libc_srand(seeds[s]);
    srand(seeds[s]);
    for (int i = 0; i < 1000; i++)
      CHECK("rand", omprpc_libc_rand(), rand(), "a seed");
  }
}
#pragma omp end declare target

int main(void) {
  long counted[2];
#pragma omp target map(from : counted)
  {
    rand_cases(); /* before anything else calls glibc's rand */
    ctype_cases();
    string_cases();
    conversion_cases();
    sorting_cases();
    counted[0] = checks;
    counted[1] = mismatches;
  }
  printf("%ld checks, %ld mismatches\n", counted[0], counted[1]);
  return counted[1] != 0;
}
