/* The device library's stdbit.h (device/stdbit.c, built for the host device with its functions named
 * omprpc_libc_*) against straightforward loops over the bits, in a target region run through omprpc on
 * the host device: all 14 functions of each of the 5 types, for every unsigned char and unsigned short,
 * and for unsigned int, long and long long at 0, 1, the maximum and its neighbours, every power of two
 * and its neighbours, and pseudo-random values. The type-generic forms of omprpc_stdbit.h (which
 * defines the same code static inline for this pass, as glibc 2.36 has no <stdbit.h>) are checked on
 * the same values. Prints "N checks, M mismatches" and the first mismatches. */
#include "common.h"

#define OMPRPC_LIBC_PREFIX 1
#include "../device/stdbit.c"

#pragma omp declare target
static long checks, mismatches;

static void check(unsigned long long ours, unsigned long long expected, const char *what, unsigned long long value) {
  checks++;
  if (ours == expected)
    return;
  if (++mismatches <= 30)
    printf("mismatch: %s(%#llx): ours %llu, expected %llu\n", what, value, ours, expected);
}

/* The references: bit by bit, from the most significant (width - 1) or the least significant (0). */
static unsigned bit(unsigned long long v, unsigned i) { return (unsigned)(v >> i) & 1u; }
static unsigned leading(unsigned long long v, unsigned width, unsigned b) {
  unsigned n = 0;
  for (unsigned i = width; i-- > 0 && bit(v, i) == b;)
    n++;
  return n;
}
static unsigned trailing(unsigned long long v, unsigned width, unsigned b) {
  unsigned n = 0;
  for (unsigned i = 0; i < width && bit(v, i) == b; i++)
    n++;
  return n;
}
static unsigned first_leading(unsigned long long v, unsigned width, unsigned b) {
  for (unsigned k = 1; k <= width; k++)
    if (bit(v, width - k) == b)
      return k;
  return 0;
}
static unsigned first_trailing(unsigned long long v, unsigned width, unsigned b) {
  for (unsigned k = 1; k <= width; k++)
    if (bit(v, k - 1) == b)
      return k;
  return 0;
}
static unsigned count(unsigned long long v, unsigned width, unsigned b) {
  unsigned n = 0;
  for (unsigned i = 0; i < width; i++)
    n += bit(v, i) == b;
  return n;
}
static unsigned width_of(unsigned long long v, unsigned width) {
  unsigned w = 0;
  for (unsigned i = 0; i < width; i++)
    if (bit(v, i))
      w = i + 1;
  return w;
}
static unsigned long long floor_of(unsigned long long v, unsigned width) {
  return width_of(v, width) ? 1ull << (width_of(v, width) - 1) : 0;
}
/* The least power of two not below v, or 0 when none fits in `width` bits. */
static unsigned long long ceil_of(unsigned long long v, unsigned width) {
  for (unsigned i = 0; i < width; i++)
    if ((1ull << i) >= v)
      return 1ull << i;
  return 0;
}

/* Every function of the type with suffix s, the library's and the header's generic form, on v. */
#define CHECK_TYPE(s, T, v)                                                                                  \
  do {                                                                                                     \
    T x = (T)(v);                                                                                          \
    unsigned w = (unsigned)sizeof(T) * 8;                                                                  \
    unsigned long long u = x;                                                                              \
    check(omprpc_libc_stdc_leading_zeros_##s(x), leading(u, w, 0), "stdc_leading_zeros_" #s, u);          \
    check(omprpc_libc_stdc_leading_ones_##s(x), leading(u, w, 1), "stdc_leading_ones_" #s, u);            \
    check(omprpc_libc_stdc_trailing_zeros_##s(x), trailing(u, w, 0), "stdc_trailing_zeros_" #s, u);       \
    check(omprpc_libc_stdc_trailing_ones_##s(x), trailing(u, w, 1), "stdc_trailing_ones_" #s, u);         \
    check(omprpc_libc_stdc_first_leading_zero_##s(x), first_leading(u, w, 0), "stdc_first_leading_zero_" #s, u); \
    check(omprpc_libc_stdc_first_leading_one_##s(x), first_leading(u, w, 1), "stdc_first_leading_one_" #s, u); \
    check(omprpc_libc_stdc_first_trailing_zero_##s(x), first_trailing(u, w, 0), "stdc_first_trailing_zero_" #s, \
          u);                                                                                              \
    check(omprpc_libc_stdc_first_trailing_one_##s(x), first_trailing(u, w, 1), "stdc_first_trailing_one_" #s, \
          u);                                                                                              \
    check(omprpc_libc_stdc_count_zeros_##s(x), count(u, w, 0), "stdc_count_zeros_" #s, u);                \
    check(omprpc_libc_stdc_count_ones_##s(x), count(u, w, 1), "stdc_count_ones_" #s, u);                  \
    check(omprpc_libc_stdc_has_single_bit_##s(x), count(u, w, 1) == 1, "stdc_has_single_bit_" #s, u);     \
    check(omprpc_libc_stdc_bit_width_##s(x), width_of(u, w), "stdc_bit_width_" #s, u);                    \
    check(omprpc_libc_stdc_bit_floor_##s(x), floor_of(u, w), "stdc_bit_floor_" #s, u);                    \
    check(omprpc_libc_stdc_bit_ceil_##s(x), ceil_of(u, w), "stdc_bit_ceil_" #s, u);                       \
    /* The generic forms pick the function of x's type, whose result has the type's width. */             \
    check(stdc_leading_zeros(x), leading(u, w, 0), "stdc_leading_zeros(" #T ")", u);                       \
    check(stdc_leading_ones(x), leading(u, w, 1), "stdc_leading_ones(" #T ")", u);                         \
    check(stdc_trailing_zeros(x), trailing(u, w, 0), "stdc_trailing_zeros(" #T ")", u);                    \
    check(stdc_trailing_ones(x), trailing(u, w, 1), "stdc_trailing_ones(" #T ")", u);                      \
    check(stdc_first_leading_zero(x), first_leading(u, w, 0), "stdc_first_leading_zero(" #T ")", u);       \
    check(stdc_first_leading_one(x), first_leading(u, w, 1), "stdc_first_leading_one(" #T ")", u);         \
    check(stdc_first_trailing_zero(x), first_trailing(u, w, 0), "stdc_first_trailing_zero(" #T ")", u);    \
    check(stdc_first_trailing_one(x), first_trailing(u, w, 1), "stdc_first_trailing_one(" #T ")", u);      \
    check(stdc_count_zeros(x), count(u, w, 0), "stdc_count_zeros(" #T ")", u);                             \
    check(stdc_count_ones(x), count(u, w, 1), "stdc_count_ones(" #T ")", u);                               \
    check(stdc_has_single_bit(x), count(u, w, 1) == 1, "stdc_has_single_bit(" #T ")", u);                  \
    check(stdc_bit_width(x), width_of(u, w), "stdc_bit_width(" #T ")", u);                                 \
    check(stdc_bit_floor(x), floor_of(u, w), "stdc_bit_floor(" #T ")", u);                                 \
    check(stdc_bit_ceil(x), ceil_of(u, w), "stdc_bit_ceil(" #T ")", u);                                    \
    check(sizeof stdc_bit_ceil(x), sizeof(T), "sizeof stdc_bit_ceil(" #T ")", u);                          \
  } while (0)

/* 0, 1, the maximum and the one below, every power of two and its neighbours, then pseudo-random
 * values (xorshift64), for the type with suffix s. */
#define CHECK_WIDE(s, T)                                                                                     \
  do {                                                                                                     \
    T max = (T)~(T)0;                                                                                      \
    CHECK_TYPE(s, T, 0);                                                                                   \
    CHECK_TYPE(s, T, 1);                                                                                   \
    CHECK_TYPE(s, T, max);                                                                                 \
    CHECK_TYPE(s, T, max - 1);                                                                             \
    for (unsigned i = 0; i < sizeof(T) * 8; i++) {                                                         \
      T p = (T)((T)1 << i);                                                                                \
      CHECK_TYPE(s, T, p);                                                                                 \
      CHECK_TYPE(s, T, p - 1);                                                                             \
      CHECK_TYPE(s, T, p + 1);                                                                             \
      CHECK_TYPE(s, T, ~p);                                                                                \
    }                                                                                                      \
    unsigned long long state = 0x9e3779b97f4a7c15ull;                                                      \
    for (int i = 0; i < 20000; i++) {                                                                      \
      state ^= state << 13;                                                                                \
      state ^= state >> 7;                                                                                 \
      state ^= state << 17;                                                                                \
      /* Runs of ones and zeros at both ends too: shifted by a varying amount. */                         \
      CHECK_TYPE(s, T, state);                                                                             \
      CHECK_TYPE(s, T, state >> (i % 64));                                                                 \
      CHECK_TYPE(s, T, state << (i % 64));                                                                 \
    }                                                                                                      \
  } while (0)
#pragma omp end declare target

int main(void) {
  long counted[3];
#pragma omp target map(from : counted)
  {
    for (unsigned v = 0; v < 256; v++)
      CHECK_TYPE(uc, unsigned char, v);
    for (unsigned v = 0; v < 65536; v++)
      CHECK_TYPE(us, unsigned short, v);
    CHECK_WIDE(ui, unsigned int);
    CHECK_WIDE(ul, unsigned long);
    CHECK_WIDE(ull, unsigned long long);
    counted[0] = checks;
    counted[1] = mismatches;
    counted[2] = ON_DEVICE();
  }
  return report_checks(counted);
}
