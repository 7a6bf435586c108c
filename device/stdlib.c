/* stdlib.h's and inttypes.h's integer functions for target regions, and errno, on the device:
 * conversions from text as glibc converts in the "C" locale (bases 2 to 36, "0x" and "0" prefixes for
 * base 0, "0x" for 16, ERANGE and the nearest limit on overflow, EINVAL for a bad base), absolute
 * values and quotients, bsearch as glibc's (the same element among equal ones), qsort and qsort_r
 * stable as glibc's merge sort is (so equal elements keep their order, and every order is glibc's),
 * and rand/srand as glibc's generator (the same numbers for the same seed).
 *
 * errno is one int per device, as in LLVM libc's GPU build: a program's <errno.h> reads it through
 * __errno_location(). The generator's state is also one per device: threads that call rand at once
 * get numbers, but not glibc's sequence. */
#include "omprpc_libc_common.h"

#ifdef OMPRPC_LIBC_DEFINED
#ifdef __cplusplus
extern "C" {
#endif
#pragma omp begin declare target

void *OMPRPC_LIBC_(malloc)(size_t size);
void OMPRPC_LIBC_(free)(void *ptr);
void *OMPRPC_LIBC_(memcpy)(void *restrict dst, const void *restrict src, size_t n);
int OMPRPC_LIBC_(isspace)(int c);

static int omprpc_errno_;

int *OMPRPC_LIBC_(__errno_location)(void) { return &omprpc_errno_; }

int OMPRPC_LIBC_(abs)(int n) { return n < 0 ? -n : n; }
long OMPRPC_LIBC_(labs)(long n) { return n < 0 ? -n : n; }
long long OMPRPC_LIBC_(llabs)(long long n) { return n < 0 ? -n : n; }
intmax_t OMPRPC_LIBC_(imaxabs)(intmax_t n) { return n < 0 ? -n : n; }

/* The C library's result types, laid out as glibc's <stdlib.h> and <inttypes.h> lay them out. */
typedef struct { int quot, rem; } omprpc_div_t_;
typedef struct { long quot, rem; } omprpc_ldiv_t_;
typedef struct { long long quot, rem; } omprpc_lldiv_t_;
typedef struct { intmax_t quot, rem; } omprpc_imaxdiv_t_;

omprpc_div_t_ OMPRPC_LIBC_(div)(int a, int b) { return (omprpc_div_t_){a / b, a % b}; }
omprpc_ldiv_t_ OMPRPC_LIBC_(ldiv)(long a, long b) { return (omprpc_ldiv_t_){a / b, a % b}; }
omprpc_lldiv_t_ OMPRPC_LIBC_(lldiv)(long long a, long long b) { return (omprpc_lldiv_t_){a / b, a % b}; }
omprpc_imaxdiv_t_ OMPRPC_LIBC_(imaxdiv)(intmax_t a, intmax_t b) { return (omprpc_imaxdiv_t_){a / b, a % b}; }

static int omprpc_digit_value_(int c) {
  if ((unsigned)c - '0' < 10)
    return c - '0';
  if (((unsigned)c | 32) - 'a' < 26)
    return (c | 32) - 'a' + 10;
  return 99;
}

/* The text's number in `base`, as a magnitude and a sign, for every integer conversion: *overflow when
 * the magnitude exceeds `limit`. *end is where the number ended, or `text` when there was none. Returns
 * 0 with EINVAL for a base glibc refuses (leaving *end alone). */
static uint64_t omprpc_convert_(const char *text, char **end, int base, uint64_t limit, int *negative,
                                int *overflow) {
  *negative = 0;
  *overflow = 0;
  if (base < 0 || base == 1 || base > 36) {
    omprpc_errno_ = OMPRPC_LIBC_EINVAL;
    return 0;
  }
  const char *s = text;
  while (OMPRPC_LIBC_(isspace)((unsigned char)*s))
    s++;
  if (*s == '-' || *s == '+')
    *negative = *s++ == '-';
  if ((base == 0 || base == 16) && s[0] == '0' && (s[1] | 32) == 'x') {
    if (omprpc_digit_value_((unsigned char)s[2]) < 16) {
      s += 2;
      base = 16;
    } else if (end) { /* "0x" with no hex digit after it: the number is the 0, and "x…" is left */
      *end = (char *)s + 1;
      return 0;
    } else {
      return 0;
    }
  } else if (base == 0) {
    base = s[0] == '0' ? 8 : 10;
  }
  const char *digits = s;
  uint64_t value = 0;
  for (int d; (d = omprpc_digit_value_((unsigned char)*s)) < base; s++) {
    if (value > (limit - (uint64_t)d) / (uint64_t)base)
      *overflow = 1;
    else
      value = value * (uint64_t)base + (uint64_t)d;
  }
  if (end)
    *end = (char *)(s == digits ? text : s);
  return value;
}

static int64_t omprpc_to_signed_(const char *text, char **end, int base) {
  int negative, overflow;
  uint64_t magnitude = omprpc_convert_(text, end, base, (uint64_t)INT64_MAX + 1, &negative, &overflow);
  if (!overflow && !negative && magnitude > (uint64_t)INT64_MAX)
    overflow = 1;
  if (overflow) {
    omprpc_errno_ = OMPRPC_LIBC_ERANGE;
    return negative ? INT64_MIN : INT64_MAX;
  }
  return negative ? (int64_t)(0 - magnitude) : (int64_t)magnitude;
}

static uint64_t omprpc_to_unsigned_(const char *text, char **end, int base) {
  int negative, overflow;
  uint64_t magnitude = omprpc_convert_(text, end, base, UINT64_MAX, &negative, &overflow);
  if (overflow) {
    omprpc_errno_ = OMPRPC_LIBC_ERANGE;
    return UINT64_MAX;
  }
  return negative ? 0 - magnitude : magnitude;
}

long OMPRPC_LIBC_(strtol)(const char *restrict s, char **restrict end, int base) {
  return omprpc_to_signed_(s, end, base);
}
long long OMPRPC_LIBC_(strtoll)(const char *restrict s, char **restrict end, int base) {
  return omprpc_to_signed_(s, end, base);
}
intmax_t OMPRPC_LIBC_(strtoimax)(const char *restrict s, char **restrict end, int base) {
  return omprpc_to_signed_(s, end, base);
}
unsigned long OMPRPC_LIBC_(strtoul)(const char *restrict s, char **restrict end, int base) {
  return omprpc_to_unsigned_(s, end, base);
}
unsigned long long OMPRPC_LIBC_(strtoull)(const char *restrict s, char **restrict end, int base) {
  return omprpc_to_unsigned_(s, end, base);
}
uintmax_t OMPRPC_LIBC_(strtoumax)(const char *restrict s, char **restrict end, int base) {
  return omprpc_to_unsigned_(s, end, base);
}

/* As glibc's: strtol's value, cut to the type (and errno as strtol leaves it). */
int OMPRPC_LIBC_(atoi)(const char *s) { return (int)omprpc_to_signed_(s, NULL, 10); }
long OMPRPC_LIBC_(atol)(const char *s) { return omprpc_to_signed_(s, NULL, 10); }
long long OMPRPC_LIBC_(atoll)(const char *s) { return omprpc_to_signed_(s, NULL, 10); }

void *OMPRPC_LIBC_(bsearch)(const void *key, const void *base, size_t count, size_t size,
                            int (*compare)(const void *, const void *)) {
  size_t low = 0, high = count;
  while (low < high) {
    size_t middle = (low + high) / 2;
    const void *at = (const char *)base + middle * size;
    int order = compare(key, at);
    if (order < 0)
      high = middle;
    else if (order > 0)
      low = middle + 1;
    else
      return (void *)at;
  }
  return NULL;
}

typedef int (*omprpc_compare_r_)(const void *, const void *, void *);

/* Sorts n elements at `base` stably, merging through `scratch` (n elements' room). */
static void omprpc_merge_sort_(char *base, char *scratch, size_t n, size_t size, omprpc_compare_r_ compare,
                               void *arg) {
  if (n < 2)
    return;
  size_t half = n / 2;
  omprpc_merge_sort_(base, scratch, half, size, compare, arg);
  omprpc_merge_sort_(base + half * size, scratch, n - half, size, compare, arg);
  size_t left = 0, right = half, out = 0;
  while (left < half && right < n) {
    /* The left element goes first unless the right one is smaller: equal elements keep their order. */
    size_t from = compare(base + right * size, base + left * size, arg) < 0 ? right++ : left++;
    OMPRPC_LIBC_(memcpy)(scratch + out++ * size, base + from * size, size);
  }
  OMPRPC_LIBC_(memcpy)(scratch + out * size, base + left * size, (half - left) * size);
  out += half - left;
  OMPRPC_LIBC_(memcpy)(scratch + out * size, base + right * size, (n - right) * size);
  OMPRPC_LIBC_(memcpy)(base, scratch, n * size);
}

/* Without room for the merge: a stable insertion sort, swapping byte by byte. */
static void omprpc_insertion_sort_(char *base, size_t n, size_t size, omprpc_compare_r_ compare, void *arg) {
  for (size_t i = 1; i < n; i++) {
    for (size_t j = i; j > 0 && compare(base + (j - 1) * size, base + j * size, arg) > 0; j--) {
      char *a = base + (j - 1) * size, *b = base + j * size;
      for (size_t k = 0; k < size; k++) {
        char t = a[k];
        a[k] = b[k];
        b[k] = t;
      }
    }
  }
}

void OMPRPC_LIBC_(qsort_r)(void *base, size_t count, size_t size, omprpc_compare_r_ compare, void *arg) {
  if (count < 2 || size == 0)
    return;
  char *scratch = count <= SIZE_MAX / size ? (char *)OMPRPC_LIBC_(malloc)(count * size) : NULL;
  if (scratch) {
    omprpc_merge_sort_((char *)base, scratch, count, size, compare, arg);
    OMPRPC_LIBC_(free)(scratch);
  } else {
    omprpc_insertion_sort_((char *)base, count, size, compare, arg);
  }
}

static int omprpc_compare_plain_(const void *a, const void *b, void *compare) {
  return (*(int (**)(const void *, const void *))compare)(a, b);
}

void OMPRPC_LIBC_(qsort)(void *base, size_t count, size_t size, int (*compare)(const void *, const void *)) {
  OMPRPC_LIBC_(qsort_r)(base, count, size, omprpc_compare_plain_, &compare);
}

/* glibc's rand: an additive feedback generator of 31 words, three apart, seeded by 16807-multiplier
 * steps and run 310 steps before its first number; rand() without srand is srand(1). */
enum { OMPRPC_RAND_WORDS_ = 31, OMPRPC_RAND_SEPARATION_ = 3 };
static uint32_t omprpc_rand_state_[OMPRPC_RAND_WORDS_];
static unsigned omprpc_rand_front_, omprpc_rand_rear_;
static int omprpc_rand_seeded_;

static uint32_t omprpc_rand_step_(void) {
  unsigned front = omprpc_rand_front_ % OMPRPC_RAND_WORDS_, rear = omprpc_rand_rear_ % OMPRPC_RAND_WORDS_;
  uint32_t value = omprpc_rand_state_[front] += omprpc_rand_state_[rear];
  omprpc_rand_front_ = (front + 1) % OMPRPC_RAND_WORDS_;
  omprpc_rand_rear_ = (rear + 1) % OMPRPC_RAND_WORDS_;
  return value >> 1;
}

void OMPRPC_LIBC_(srand)(unsigned seed) {
  int32_t word = seed == 0 ? 1 : (int32_t)seed;
  omprpc_rand_state_[0] = (uint32_t)word;
  for (int i = 1; i < OMPRPC_RAND_WORDS_; i++) {
    int32_t high = word / 127773, low = word % 127773;
    word = 16807 * low - 2836 * high;
    if (word < 0)
      word += 2147483647;
    omprpc_rand_state_[i] = (uint32_t)word;
  }
  omprpc_rand_front_ = OMPRPC_RAND_SEPARATION_;
  omprpc_rand_rear_ = 0;
  omprpc_rand_seeded_ = 1;
  for (int i = 0; i < 10 * OMPRPC_RAND_WORDS_; i++)
    omprpc_rand_step_();
}

int OMPRPC_LIBC_(rand)(void) {
  if (!omprpc_rand_seeded_)
    OMPRPC_LIBC_(srand)(1);
  return (int)omprpc_rand_step_();
}

#pragma omp end declare target
#ifdef __cplusplus
}
#endif
#endif
