/* The device library's locale.h (device/locale.c, built for the host device with its functions named
 * omprpc_libc_*) against glibc's in the "C" locale (this program never sets another), in a target
 * region run through omprpc on the host device: setlocale's answers and errno for queries, "C",
 * "POSIX", other names and bad categories; localeconv's every field; newlocale's result (null or
 * not) for "C", "POSIX", other names, a null name, an empty mask and bad masks; errno: glibc's EINVAL
 * (a bad category or mask, a null name) exactly where glibc sets it, and for an unknown name the
 * library's ENOENT (POSIX's for newlocale), as glibc's ENOENT for an unknown name comes and goes with
 * what it has looked up before (a fresh process's newlocale leaves errno alone); duplocale and
 * freelocale of its objects; uselocale's record of the
 * locale in use. glibc's setlocale(c, "") depends on the environment and is not compared: the
 * library's is "C". Prints "N checks, M mismatches" and the first mismatches. */
#include <errno.h>
#include <limits.h>
#include <locale.h>

#include "common.h"

#define OMPRPC_LIBC_PREFIX 1
#include "../device/locale.c"

#pragma omp declare target
/* The library's errno (device/stdlib.c's), without the rest of that file. */
static int library_errno;
int *omprpc_libc___errno_location(void) { return &library_errno; }

static long checks, mismatches;

static void check(int ok, const char *what, long ours, long theirs) {
  checks++;
  if (ok)
    return;
  if (++mismatches <= 30)
    printf("mismatch: %s: ours %ld, glibc %ld\n", what, ours, theirs);
}
#define CHECK(what, ours, theirs) check((long)(ours) == (long)(theirs), what, (long)(ours), (long)(theirs))
/* After a call of both that failed (`failed`) or not: glibc's EINVAL where it gives one, else ENOENT
 * for a failure, else errno untouched. */
static void errno_cases(int failed) {
  if (errno == EINVAL || library_errno == EINVAL)
    CHECK("EINVAL where glibc sets it", library_errno, errno);
  else
    CHECK("errno, ENOENT for an unknown name", library_errno, failed ? ENOENT : 0);
}
/* Both null, or both the same text. */
static int same_text(const char *a, const char *b) { return (!a && !b) || (a && b && strcmp(a, b) == 0); }
#pragma omp end declare target

int main(void) {
  long counted[3];
#pragma omp target map(from : counted)
  {
    const int categories[] = {LC_CTYPE, LC_NUMERIC, LC_TIME, LC_COLLATE, LC_MONETARY, LC_MESSAGES, LC_ALL,
                              LC_PAPER, LC_NAME, LC_ADDRESS, LC_TELEPHONE, LC_MEASUREMENT, LC_IDENTIFICATION,
                              -1, 13, 99};
    const char *names[] = {NULL, "C", "POSIX", "en_US.UTF-8", "c", "C.UTF-8x", "POSIXLY", "xx_YY"};
    for (unsigned c = 0; c < sizeof categories / sizeof categories[0]; c++)
      for (unsigned n = 0; n < sizeof names / sizeof names[0]; n++) {
        library_errno = 0;
        errno = 0;
        char *ours = omprpc_libc_setlocale(categories[c], names[n]);
        char *theirs = setlocale(categories[c], names[n]);
        check(same_text(ours, theirs), "setlocale's answer", categories[c], (long)n);
        errno_cases(ours == NULL && theirs == NULL);
      }
    check(strcmp(omprpc_libc_setlocale(LC_ALL, ""), "C") == 0, "setlocale(LC_ALL, \"\") is \"C\"", 0, 0);
    struct lconv *ours = omprpc_libc_localeconv(), *theirs = localeconv();
    check(same_text(ours->decimal_point, theirs->decimal_point), "decimal_point", 0, 0);
    check(same_text(ours->thousands_sep, theirs->thousands_sep), "thousands_sep", 0, 0);
    check(same_text(ours->grouping, theirs->grouping), "grouping", 0, 0);
    check(same_text(ours->int_curr_symbol, theirs->int_curr_symbol), "int_curr_symbol", 0, 0);
    check(same_text(ours->currency_symbol, theirs->currency_symbol), "currency_symbol", 0, 0);
    check(same_text(ours->mon_decimal_point, theirs->mon_decimal_point), "mon_decimal_point", 0, 0);
    check(same_text(ours->mon_thousands_sep, theirs->mon_thousands_sep), "mon_thousands_sep", 0, 0);
    check(same_text(ours->mon_grouping, theirs->mon_grouping), "mon_grouping", 0, 0);
    check(same_text(ours->positive_sign, theirs->positive_sign), "positive_sign", 0, 0);
    check(same_text(ours->negative_sign, theirs->negative_sign), "negative_sign", 0, 0);
    CHECK("int_frac_digits", ours->int_frac_digits, theirs->int_frac_digits);
    CHECK("frac_digits", ours->frac_digits, theirs->frac_digits);
    CHECK("p_cs_precedes", ours->p_cs_precedes, theirs->p_cs_precedes);
    CHECK("p_sep_by_space", ours->p_sep_by_space, theirs->p_sep_by_space);
    CHECK("n_cs_precedes", ours->n_cs_precedes, theirs->n_cs_precedes);
    CHECK("n_sep_by_space", ours->n_sep_by_space, theirs->n_sep_by_space);
    CHECK("p_sign_posn", ours->p_sign_posn, theirs->p_sign_posn);
    CHECK("n_sign_posn", ours->n_sign_posn, theirs->n_sign_posn);
    CHECK("int_p_cs_precedes", ours->int_p_cs_precedes, theirs->int_p_cs_precedes);
    CHECK("int_p_sep_by_space", ours->int_p_sep_by_space, theirs->int_p_sep_by_space);
    CHECK("int_n_cs_precedes", ours->int_n_cs_precedes, theirs->int_n_cs_precedes);
    CHECK("int_n_sep_by_space", ours->int_n_sep_by_space, theirs->int_n_sep_by_space);
    CHECK("int_p_sign_posn", ours->int_p_sign_posn, theirs->int_p_sign_posn);
    CHECK("int_n_sign_posn", ours->int_n_sign_posn, theirs->int_n_sign_posn);
    const int masks[] = {LC_ALL_MASK, LC_CTYPE_MASK, LC_NUMERIC_MASK | LC_TIME_MASK, 0, 1 << LC_ALL, 1 << 13, -1};
    for (unsigned m = 0; m < sizeof masks / sizeof masks[0]; m++)
      for (unsigned n = 0; n < sizeof names / sizeof names[0]; n++) {
        library_errno = 0;
        errno = 0;
        locale_t mine = omprpc_libc_newlocale(masks[m], names[n], (locale_t)0);
        locale_t glibcs = newlocale(masks[m], names[n], (locale_t)0);
        CHECK("newlocale's success", !!mine, !!glibcs);
        errno_cases(!mine && !glibcs);
        if (glibcs)
          freelocale(glibcs);
        if (mine) {
          CHECK("duplocale's success", !!omprpc_libc_duplocale(mine), 1);
          omprpc_libc_freelocale(mine);
        }
      }
    locale_t c = omprpc_libc_newlocale(LC_ALL_MASK, "C", (locale_t)0);
    CHECK("uselocale's first answer", omprpc_libc_uselocale((locale_t)0), uselocale((locale_t)0));
    CHECK("uselocale: the global locale before", omprpc_libc_uselocale(c), LC_GLOBAL_LOCALE);
    CHECK("uselocale: the locale set", omprpc_libc_uselocale((locale_t)0), c);
    CHECK("uselocale: back to the global one", omprpc_libc_uselocale(LC_GLOBAL_LOCALE), c);
    CHECK("uselocale: the global one", omprpc_libc_uselocale((locale_t)0), LC_GLOBAL_LOCALE);
    counted[0] = checks;
    counted[1] = mismatches;
    counted[2] = ON_DEVICE();
  }
  return report_checks(counted);
}
