/* ctype.h for target regions, on the device, in the "C" locale (the only one a target region has):
 * every function takes an unsigned char's value or EOF, as C requires, and answers as glibc's does in
 * that locale. */
#include "omprpc_libc_common.h"

#ifdef OMPRPC_LIBC_DEFINED
#ifdef __cplusplus
extern "C" {
#endif
#pragma omp begin declare target

/* The tables glibc's <ctype.h> macros read (isdigit(c) is (*__ctype_b_loc())[c] & _ISdigit in C),
 * indexable from -128 to 255 as glibc's are, with glibc's bits for the "C" locale, computed by the
 * compiler from the rules below. The functions read the same tables, as glibc's do, so that a
 * program's macros and its calls agree. */
#define OMPRPC_CTYPE_BIT_(bit) ((bit) < 8 ? (1 << (bit)) << 8 : (1 << (bit)) >> 8)
#define OMPRPC_IN_(c, from, to) ((c) >= (from) && (c) <= (to))
#define OMPRPC_UPPER_(c) OMPRPC_IN_(c, 'A', 'Z')
#define OMPRPC_LOWER_(c) OMPRPC_IN_(c, 'a', 'z')
#define OMPRPC_DIGIT_(c) OMPRPC_IN_(c, '0', '9')
#define OMPRPC_GRAPH_(c) OMPRPC_IN_(c, 33, 126)
#define OMPRPC_CLASS_(c)                                                                                   \
  (unsigned short)((OMPRPC_UPPER_(c) ? OMPRPC_CTYPE_BIT_(0) : 0) | (OMPRPC_LOWER_(c) ? OMPRPC_CTYPE_BIT_(1) : 0) | \
                   (OMPRPC_UPPER_(c) || OMPRPC_LOWER_(c) ? OMPRPC_CTYPE_BIT_(2) : 0) |                           \
                   (OMPRPC_DIGIT_(c) ? OMPRPC_CTYPE_BIT_(3) : 0) |                                                \
                   (OMPRPC_DIGIT_(c) || OMPRPC_IN_(c, 'a', 'f') || OMPRPC_IN_(c, 'A', 'F') ? OMPRPC_CTYPE_BIT_(4) \
                                                                                          : 0) |            \
                   (c == ' ' || OMPRPC_IN_(c, 9, 13) ? OMPRPC_CTYPE_BIT_(5) : 0) |                                \
                   (OMPRPC_IN_(c, 32, 126) ? OMPRPC_CTYPE_BIT_(6) : 0) | (OMPRPC_GRAPH_(c) ? OMPRPC_CTYPE_BIT_(7) : 0) | \
                   (c == ' ' || c == 9 ? OMPRPC_CTYPE_BIT_(8) : 0) |                                              \
                   (OMPRPC_IN_(c, 0, 31) || c == 127 ? OMPRPC_CTYPE_BIT_(9) : 0) |                                \
                   (OMPRPC_GRAPH_(c) && !OMPRPC_UPPER_(c) && !OMPRPC_LOWER_(c) && !OMPRPC_DIGIT_(c)               \
                        ? OMPRPC_CTYPE_BIT_(10)                                                                   \
                        : 0) |                                                                                    \
                   (OMPRPC_UPPER_(c) || OMPRPC_LOWER_(c) || OMPRPC_DIGIT_(c) ? OMPRPC_CTYPE_BIT_(11) : 0))
/* Below EOF (-1), a signed char's byte: glibc's tables give its unsigned value. */
#define OMPRPC_TOLOWER_(c) ((c) < -1 ? (c) + 256 : OMPRPC_UPPER_(c) ? (c) + 32 : (c))
#define OMPRPC_TOUPPER_(c) ((c) < -1 ? (c) + 256 : OMPRPC_LOWER_(c) ? (c)-32 : (c))
/* 384 entries of f(c), c from -128 on. */
#define OMPRPC_4_(f, c) f(c), f((c) + 1), f((c) + 2), f((c) + 3)
#define OMPRPC_16_(f, c) OMPRPC_4_(f, c), OMPRPC_4_(f, (c) + 4), OMPRPC_4_(f, (c) + 8), OMPRPC_4_(f, (c) + 12)
#define OMPRPC_64_(f, c) OMPRPC_16_(f, c), OMPRPC_16_(f, (c) + 16), OMPRPC_16_(f, (c) + 32), OMPRPC_16_(f, (c) + 48)
#define OMPRPC_384_(f)                                                                                       \
  OMPRPC_64_(f, -128), OMPRPC_64_(f, -64), OMPRPC_64_(f, 0), OMPRPC_64_(f, 64), OMPRPC_64_(f, 128), OMPRPC_64_(f, 192)

/* One entry more than the 384 the macros reach, not 0: an array that ends in zeros is emitted by clang-16
 * as a struct, whose offloading entry it gets wrong ("the address is invalid"). */
static const unsigned short omprpc_ctype_classes_[385] = {OMPRPC_384_(OMPRPC_CLASS_), 0xffff};
static const int32_t omprpc_ctype_lower_[384] = {OMPRPC_384_(OMPRPC_TOLOWER_)};
static const int32_t omprpc_ctype_upper_[384] = {OMPRPC_384_(OMPRPC_TOUPPER_)};
static const unsigned short *omprpc_ctype_classes_at_ = omprpc_ctype_classes_ + 128;
static const int32_t *omprpc_ctype_lower_at_ = omprpc_ctype_lower_ + 128;
static const int32_t *omprpc_ctype_upper_at_ = omprpc_ctype_upper_ + 128;

const unsigned short **OMPRPC_LIBC_(__ctype_b_loc)(void) { return &omprpc_ctype_classes_at_; }
const int32_t **OMPRPC_LIBC_(__ctype_tolower_loc)(void) { return &omprpc_ctype_lower_at_; }
const int32_t **OMPRPC_LIBC_(__ctype_toupper_loc)(void) { return &omprpc_ctype_upper_at_; }

/* The bits of c (EOF or an unsigned char's value; any other value has none). */
static inline int omprpc_class_(int c, int bit) {
  return (unsigned)c + 128 < 384 ? omprpc_ctype_classes_[c + 128] & OMPRPC_CTYPE_BIT_(bit) : 0;
}

int OMPRPC_LIBC_(isupper)(int c) { return omprpc_class_(c, 0); }
int OMPRPC_LIBC_(islower)(int c) { return omprpc_class_(c, 1); }
int OMPRPC_LIBC_(isalpha)(int c) { return omprpc_class_(c, 2); }
int OMPRPC_LIBC_(isdigit)(int c) { return omprpc_class_(c, 3); }
int OMPRPC_LIBC_(isxdigit)(int c) { return omprpc_class_(c, 4); }
int OMPRPC_LIBC_(isspace)(int c) { return omprpc_class_(c, 5); }
int OMPRPC_LIBC_(isprint)(int c) { return omprpc_class_(c, 6); }
int OMPRPC_LIBC_(isgraph)(int c) { return omprpc_class_(c, 7); }
int OMPRPC_LIBC_(isblank)(int c) { return omprpc_class_(c, 8); }
int OMPRPC_LIBC_(iscntrl)(int c) { return omprpc_class_(c, 9); }
int OMPRPC_LIBC_(ispunct)(int c) { return omprpc_class_(c, 10); }
int OMPRPC_LIBC_(isalnum)(int c) { return omprpc_class_(c, 11); }
int OMPRPC_LIBC_(isascii)(int c) { return (unsigned)c < 128; }
int OMPRPC_LIBC_(toascii)(int c) { return c & 0x7f; }
int OMPRPC_LIBC_(tolower)(int c) { return (unsigned)c + 128 < 384 ? omprpc_ctype_lower_[c + 128] : c; }
int OMPRPC_LIBC_(toupper)(int c) { return (unsigned)c + 128 < 384 ? omprpc_ctype_upper_[c + 128] : c; }

/* wchar.h's one entry point of LLVM libc's GPU list: the single byte of a wide character, in the "C"
 * locale (where the bytes are ASCII), else EOF. */
int OMPRPC_LIBC_(wctob)(unsigned int c) { return c < 128 ? (int)c : -1; }

#pragma omp end declare target
#ifdef __cplusplus
}
#endif
#endif
