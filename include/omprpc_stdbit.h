/* omprpc_stdbit.h: C23's <stdbit.h> for programs that link omprpc's device library, whose C library
 * (glibc 2.36) and compiler (clang-16) have no <stdbit.h>. Include it in place of <stdbit.h>:
 *
 *     #include "omprpc_stdbit.h"      (from the library's directory, where the build copies it)
 *
 * It gives the 70 functions (stdc_leading_zeros_uc to stdc_bit_ceil_ull) and C23's type-generic
 * forms (stdc_leading_zeros(x) and the like: _Generic macros in C, overloads in C++), with C23's
 * meaning: the first_* functions count positions from 1 and give 0 when there is no such bit;
 * bit_floor(0) is 0; bit_ceil(0) and bit_ceil(1) are 1, and bit_ceil of a value whose power of two
 * does not fit in its type is 0 (what LLVM libc's code gives for unsigned char and short; for the
 * wider types its shift is out of range there).
 *
 *   * GPU passes: declarations; the library's device/stdbit.c defines them (-lomprpc-device).
 *   * Every other pass (the host's, and the host device's target regions, which call the host's C
 *     library, which lacks them): the same definitions, static inline, so that the host code and its
 *     target regions call them too without a library of their own.
 *   * A system whose C library has <stdbit.h> (glibc 2.39 and later): that header, whose declarations
 *     the library's GPU definitions match. */
#ifndef OMPRPC_STDBIT_H
#define OMPRPC_STDBIT_H

/* The 70 definitions, for one linkage (SPEC) and naming (NAME(name)): the library's, in
 * device/stdbit.c, and the header's static inline ones are the same code. */
#ifdef __cplusplus
#define OMPRPC_STDBIT_BOOL_ bool
#else
#define OMPRPC_STDBIT_BOOL_ _Bool
#endif
#define OMPRPC_STDBIT_WIDTH_(T) ((unsigned)(sizeof(T) * 8))
/* Leading and trailing zeros of x, a value of `width` bits. */
#define OMPRPC_STDBIT_LZ_(x, width) ((x) ? (unsigned)__builtin_clzll(x) - (64u - (width)) : (width))
#define OMPRPC_STDBIT_TZ_(x, width) ((x) ? (unsigned)__builtin_ctzll(x) : (width))
/* The position, from 1, of x's first one from the most or the least significant end; 0 when x is 0.
 * (Tested on x itself, not on a count compared with the width: that form answered 65 for a constant
 * 0 in the host device's pass of clang-16 at -O1 and -O2, and 0 at -O0; not narrowed down further.) */
#define OMPRPC_STDBIT_FIRST_LEADING_(x, width) ((x) ? (unsigned)__builtin_clzll(x) - (64u - (width)) + 1u : 0u)
#define OMPRPC_STDBIT_FIRST_TRAILING_(x) ((x) ? (unsigned)__builtin_ctzll(x) + 1u : 0u)
#define OMPRPC_STDBIT_TYPE_(SPEC, NAME, s, T)                                                               \
  SPEC unsigned int NAME(stdc_leading_zeros_##s)(T value) {                                              \
    return OMPRPC_STDBIT_LZ_((unsigned long long)value, OMPRPC_STDBIT_WIDTH_(T));                        \
  }                                                                                                      \
  SPEC unsigned int NAME(stdc_leading_ones_##s)(T value) {                                               \
    return OMPRPC_STDBIT_LZ_((unsigned long long)(T) ~value, OMPRPC_STDBIT_WIDTH_(T));                   \
  }                                                                                                      \
  SPEC unsigned int NAME(stdc_trailing_zeros_##s)(T value) {                                             \
    return OMPRPC_STDBIT_TZ_((unsigned long long)value, OMPRPC_STDBIT_WIDTH_(T));                        \
  }                                                                                                      \
  SPEC unsigned int NAME(stdc_trailing_ones_##s)(T value) {                                              \
    return OMPRPC_STDBIT_TZ_((unsigned long long)(T) ~value, OMPRPC_STDBIT_WIDTH_(T));                   \
  }                                                                                                      \
  SPEC unsigned int NAME(stdc_first_leading_zero_##s)(T value) {                                         \
    return OMPRPC_STDBIT_FIRST_LEADING_((unsigned long long)(T) ~value, OMPRPC_STDBIT_WIDTH_(T));         \
  }                                                                                                      \
  SPEC unsigned int NAME(stdc_first_leading_one_##s)(T value) {                                          \
    return OMPRPC_STDBIT_FIRST_LEADING_((unsigned long long)value, OMPRPC_STDBIT_WIDTH_(T));              \
  }                                                                                                      \
  SPEC unsigned int NAME(stdc_first_trailing_zero_##s)(T value) {                                        \
    return OMPRPC_STDBIT_FIRST_TRAILING_((unsigned long long)(T) ~value);                                  \
  }                                                                                                      \
  SPEC unsigned int NAME(stdc_first_trailing_one_##s)(T value) {                                         \
    return OMPRPC_STDBIT_FIRST_TRAILING_((unsigned long long)value);                                       \
  }                                                                                                      \
  SPEC unsigned int NAME(stdc_count_ones_##s)(T value) {                                                 \
    return (unsigned)__builtin_popcountll((unsigned long long)value);                                    \
  }                                                                                                      \
  SPEC unsigned int NAME(stdc_count_zeros_##s)(T value) {                                                \
    return OMPRPC_STDBIT_WIDTH_(T) - (unsigned)__builtin_popcountll((unsigned long long)value);          \
  }                                                                                                      \
  SPEC OMPRPC_STDBIT_BOOL_ NAME(stdc_has_single_bit_##s)(T value) {                                      \
    return value && !(value & (T)(value - 1));                                                           \
  }                                                                                                      \
  SPEC unsigned int NAME(stdc_bit_width_##s)(T value) {                                                  \
    return OMPRPC_STDBIT_WIDTH_(T) - OMPRPC_STDBIT_LZ_((unsigned long long)value, OMPRPC_STDBIT_WIDTH_(T)); \
  }                                                                                                      \
  SPEC T NAME(stdc_bit_floor_##s)(T value) {                                                             \
    return value ? (T)(1ull << (63u - (unsigned)__builtin_clzll((unsigned long long)value))) : (T)0;     \
  }                                                                                                      \
  SPEC T NAME(stdc_bit_ceil_##s)(T value) {                                                              \
    if (value <= 1)                                                                                      \
      return 1;                                                                                          \
    /* The bits of value - 1: the power of two is 1 shifted by that many, if it fits. */                 \
    unsigned bits = 64u - (unsigned)__builtin_clzll((unsigned long long)(T)(value - 1));                 \
    return bits >= OMPRPC_STDBIT_WIDTH_(T) ? (T)0 : (T)(1ull << bits);                                   \
  }
#define OMPRPC_STDBIT_DEFINITIONS_(SPEC, NAME)                                                              \
  OMPRPC_STDBIT_TYPE_(SPEC, NAME, uc, unsigned char)                                                     \
  OMPRPC_STDBIT_TYPE_(SPEC, NAME, us, unsigned short)                                                    \
  OMPRPC_STDBIT_TYPE_(SPEC, NAME, ui, unsigned int)                                                      \
  OMPRPC_STDBIT_TYPE_(SPEC, NAME, ul, unsigned long)                                                     \
  OMPRPC_STDBIT_TYPE_(SPEC, NAME, ull, unsigned long long)

#if defined(__has_include)
#if __has_include(<stdbit.h>)
#define OMPRPC_STDBIT_SYSTEM_ 1
#endif
#endif

#ifdef OMPRPC_STDBIT_SYSTEM_
#include <stdbit.h>
#else

#ifdef __cplusplus
extern "C" {
#endif
#pragma omp begin declare target

#if defined(__NVPTX__) || defined(__AMDGCN__)
/* The library's (device/stdbit.c). */
#define OMPRPC_STDBIT_DECLARE_(s, T)                                                                        \
  unsigned int stdc_leading_zeros_##s(T value);                                                          \
  unsigned int stdc_leading_ones_##s(T value);                                                           \
  unsigned int stdc_trailing_zeros_##s(T value);                                                         \
  unsigned int stdc_trailing_ones_##s(T value);                                                          \
  unsigned int stdc_first_leading_zero_##s(T value);                                                     \
  unsigned int stdc_first_leading_one_##s(T value);                                                      \
  unsigned int stdc_first_trailing_zero_##s(T value);                                                    \
  unsigned int stdc_first_trailing_one_##s(T value);                                                     \
  unsigned int stdc_count_ones_##s(T value);                                                             \
  unsigned int stdc_count_zeros_##s(T value);                                                            \
  OMPRPC_STDBIT_BOOL_ stdc_has_single_bit_##s(T value);                                                  \
  unsigned int stdc_bit_width_##s(T value);                                                              \
  T stdc_bit_floor_##s(T value);                                                                         \
  T stdc_bit_ceil_##s(T value);
OMPRPC_STDBIT_DECLARE_(uc, unsigned char)
OMPRPC_STDBIT_DECLARE_(us, unsigned short)
OMPRPC_STDBIT_DECLARE_(ui, unsigned int)
OMPRPC_STDBIT_DECLARE_(ul, unsigned long)
OMPRPC_STDBIT_DECLARE_(ull, unsigned long long)
#else
#define OMPRPC_STDBIT_SAME_(name) name
OMPRPC_STDBIT_DEFINITIONS_(static inline, OMPRPC_STDBIT_SAME_)
#endif

#pragma omp end declare target
#ifdef __cplusplus
}
#endif

/* C23's type-generic forms, for the five unsigned types. */
#ifdef __cplusplus
#define OMPRPC_STDBIT_OVERLOAD_(R, name, s, T)                                                              \
  static inline R name(T value) { return name##_##s(value); }
#define OMPRPC_STDBIT_OVERLOADS_(R, name)                                                                   \
  OMPRPC_STDBIT_OVERLOAD_(R, name, uc, unsigned char)                                                    \
  OMPRPC_STDBIT_OVERLOAD_(R, name, us, unsigned short)                                                   \
  OMPRPC_STDBIT_OVERLOAD_(R, name, ui, unsigned int)                                                     \
  OMPRPC_STDBIT_OVERLOAD_(R, name, ul, unsigned long)                                                    \
  OMPRPC_STDBIT_OVERLOAD_(R, name, ull, unsigned long long)
#pragma omp begin declare target
OMPRPC_STDBIT_OVERLOADS_(unsigned int, stdc_leading_zeros)
OMPRPC_STDBIT_OVERLOADS_(unsigned int, stdc_leading_ones)
OMPRPC_STDBIT_OVERLOADS_(unsigned int, stdc_trailing_zeros)
OMPRPC_STDBIT_OVERLOADS_(unsigned int, stdc_trailing_ones)
OMPRPC_STDBIT_OVERLOADS_(unsigned int, stdc_first_leading_zero)
OMPRPC_STDBIT_OVERLOADS_(unsigned int, stdc_first_leading_one)
OMPRPC_STDBIT_OVERLOADS_(unsigned int, stdc_first_trailing_zero)
OMPRPC_STDBIT_OVERLOADS_(unsigned int, stdc_first_trailing_one)
OMPRPC_STDBIT_OVERLOADS_(unsigned int, stdc_count_ones)
OMPRPC_STDBIT_OVERLOADS_(unsigned int, stdc_count_zeros)
OMPRPC_STDBIT_OVERLOADS_(bool, stdc_has_single_bit)
OMPRPC_STDBIT_OVERLOADS_(unsigned int, stdc_bit_width)
static inline unsigned char stdc_bit_floor(unsigned char value) { return stdc_bit_floor_uc(value); }
static inline unsigned short stdc_bit_floor(unsigned short value) { return stdc_bit_floor_us(value); }
static inline unsigned int stdc_bit_floor(unsigned int value) { return stdc_bit_floor_ui(value); }
static inline unsigned long stdc_bit_floor(unsigned long value) { return stdc_bit_floor_ul(value); }
static inline unsigned long long stdc_bit_floor(unsigned long long value) { return stdc_bit_floor_ull(value); }
static inline unsigned char stdc_bit_ceil(unsigned char value) { return stdc_bit_ceil_uc(value); }
static inline unsigned short stdc_bit_ceil(unsigned short value) { return stdc_bit_ceil_us(value); }
static inline unsigned int stdc_bit_ceil(unsigned int value) { return stdc_bit_ceil_ui(value); }
static inline unsigned long stdc_bit_ceil(unsigned long value) { return stdc_bit_ceil_ul(value); }
static inline unsigned long long stdc_bit_ceil(unsigned long long value) { return stdc_bit_ceil_ull(value); }
#pragma omp end declare target
#else
#define OMPRPC_STDBIT_GENERIC_(name, value)                                                                 \
  _Generic((value), unsigned char: name##_uc, unsigned short: name##_us, unsigned int: name##_ui,        \
           unsigned long: name##_ul, unsigned long long: name##_ull)(value)
#define stdc_leading_zeros(value) OMPRPC_STDBIT_GENERIC_(stdc_leading_zeros, value)
#define stdc_leading_ones(value) OMPRPC_STDBIT_GENERIC_(stdc_leading_ones, value)
#define stdc_trailing_zeros(value) OMPRPC_STDBIT_GENERIC_(stdc_trailing_zeros, value)
#define stdc_trailing_ones(value) OMPRPC_STDBIT_GENERIC_(stdc_trailing_ones, value)
#define stdc_first_leading_zero(value) OMPRPC_STDBIT_GENERIC_(stdc_first_leading_zero, value)
#define stdc_first_leading_one(value) OMPRPC_STDBIT_GENERIC_(stdc_first_leading_one, value)
#define stdc_first_trailing_zero(value) OMPRPC_STDBIT_GENERIC_(stdc_first_trailing_zero, value)
#define stdc_first_trailing_one(value) OMPRPC_STDBIT_GENERIC_(stdc_first_trailing_one, value)
#define stdc_count_ones(value) OMPRPC_STDBIT_GENERIC_(stdc_count_ones, value)
#define stdc_count_zeros(value) OMPRPC_STDBIT_GENERIC_(stdc_count_zeros, value)
#define stdc_has_single_bit(value) OMPRPC_STDBIT_GENERIC_(stdc_has_single_bit, value)
#define stdc_bit_width(value) OMPRPC_STDBIT_GENERIC_(stdc_bit_width, value)
#define stdc_bit_floor(value) OMPRPC_STDBIT_GENERIC_(stdc_bit_floor, value)
#define stdc_bit_ceil(value) OMPRPC_STDBIT_GENERIC_(stdc_bit_ceil, value)
#endif

#endif /* no system <stdbit.h> */
#endif
