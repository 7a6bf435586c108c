/* locale.h for target regions, on the device: only the "C" locale exists there, as in LLVM libc's GPU
 * build, and every answer is the one glibc gives in that locale.
 *
 *   * setlocale(category, name): "C" for a null name (the query), "", "C" and "POSIX"; NULL for any
 *     other name (errno ENOENT) and for a category glibc does not have (EINVAL), as glibc. Nothing
 *     changes, as nothing can. glibc's "" would be the environment's locale; on the device it is "C",
 *     as in LLVM libc.
 *   * localeconv(): the "C" locale's struct lconv, as glibc lays it out: "." and empty strings,
 *     CHAR_MAX for the numbers.
 *   * newlocale(mask, name, base): the one locale object for "C", "POSIX" and "", and for any name
 *     with an empty mask (nothing to load), as glibc; NULL with errno EINVAL for a null name or a mask
 *     with bits glibc does not have, ENOENT for any other name (POSIX's error: glibc's comes and goes
 *     with what it has looked up before; LLVM libc sets none and also refuses "POSIX"). base is left
 *     as it is.
 *   * duplocale(l): that object; freelocale(l): nothing (it is never freed).
 *   * uselocale(l): the locale in use before (LC_GLOBAL_LOCALE until a call sets one); a null l only
 *     asks. One setting per device, as the device's errno is one. */
#include "omprpc_libc_common.h"

#ifdef OMPRPC_LIBC_DEFINED

#include <limits.h>
#include <locale.h>

#ifdef __cplusplus
extern "C" {
#endif
#pragma omp begin declare target

int *OMPRPC_LIBC_(__errno_location)(void);

#define OMPRPC_LIBC_ENOENT 2
/* glibc's categories: 0 to 12 (LC_ALL is 6). */
#define OMPRPC_LOCALE_LAST_ 12
/* The mask bits glibc's newlocale takes (LC_ALL's own bit among them). */
#define OMPRPC_LOCALE_MASK_BITS_ ((1 << (OMPRPC_LOCALE_LAST_ + 1)) - 1)

static char omprpc_locale_name_[] = "C";

/* The locale object newlocale hands out: only its address matters. */
static int omprpc_locale_c_object_ = 1;
static locale_t omprpc_locale_in_use_ = LC_GLOBAL_LOCALE;

static int omprpc_locale_is_c_(const char *name) {
  const char *c = "C", *posix = "POSIX";
  if (!name[0])
    return 1;
  int i = 0;
  while (name[i] && name[i] == c[i])
    i++;
  if (name[i] == c[i])
    return 1;
  for (i = 0; name[i] && name[i] == posix[i];)
    i++;
  return name[i] == posix[i];
}

char *OMPRPC_LIBC_(setlocale)(int category, const char *name) {
  if (category < 0 || category > OMPRPC_LOCALE_LAST_) {
    *OMPRPC_LIBC_(__errno_location)() = OMPRPC_LIBC_EINVAL;
    return 0;
  }
  if (name && !omprpc_locale_is_c_(name)) {
    *OMPRPC_LIBC_(__errno_location)() = OMPRPC_LIBC_ENOENT;
    return 0;
  }
  return omprpc_locale_name_;
}

static struct lconv omprpc_locale_conv_ = {
    .decimal_point = (char *)".",
    .thousands_sep = (char *)"",
    .grouping = (char *)"",
    .int_curr_symbol = (char *)"",
    .currency_symbol = (char *)"",
    .mon_decimal_point = (char *)"",
    .mon_thousands_sep = (char *)"",
    .mon_grouping = (char *)"",
    .positive_sign = (char *)"",
    .negative_sign = (char *)"",
    .int_frac_digits = CHAR_MAX,
    .frac_digits = CHAR_MAX,
    .p_cs_precedes = CHAR_MAX,
    .p_sep_by_space = CHAR_MAX,
    .n_cs_precedes = CHAR_MAX,
    .n_sep_by_space = CHAR_MAX,
    .p_sign_posn = CHAR_MAX,
    .n_sign_posn = CHAR_MAX,
    .int_p_cs_precedes = CHAR_MAX,
    .int_p_sep_by_space = CHAR_MAX,
    .int_n_cs_precedes = CHAR_MAX,
    .int_n_sep_by_space = CHAR_MAX,
    .int_p_sign_posn = CHAR_MAX,
    .int_n_sign_posn = CHAR_MAX,
};

struct lconv *OMPRPC_LIBC_(localeconv)(void) { return &omprpc_locale_conv_; }

locale_t OMPRPC_LIBC_(newlocale)(int mask, const char *name, locale_t base) {
  (void)base;
  if (!name || (mask & ~OMPRPC_LOCALE_MASK_BITS_)) {
    *OMPRPC_LIBC_(__errno_location)() = OMPRPC_LIBC_EINVAL;
    return 0;
  }
  if (mask && !omprpc_locale_is_c_(name)) {
    *OMPRPC_LIBC_(__errno_location)() = OMPRPC_LIBC_ENOENT;
    return 0;
  }
  return (locale_t)(void *)&omprpc_locale_c_object_;
}

locale_t OMPRPC_LIBC_(duplocale)(locale_t locale) {
  (void)locale;
  return (locale_t)(void *)&omprpc_locale_c_object_;
}

void OMPRPC_LIBC_(freelocale)(locale_t locale) { (void)locale; }

locale_t OMPRPC_LIBC_(uselocale)(locale_t locale) {
  if (!locale)
    return __atomic_load_n(&omprpc_locale_in_use_, __ATOMIC_RELAXED);
  return __atomic_exchange_n(&omprpc_locale_in_use_, locale, __ATOMIC_RELAXED);
}

#pragma omp end declare target
#ifdef __cplusplus
}
#endif
#endif
