/* An unchanged program's C library calls that need no host: ctype.h (the macros of glibc's header, and
 * the functions), string.h and strings.h, stdlib.h's and inttypes.h's integer functions, errno, wctob,
 * time.h's clocks, atexit, stdbit.h's 70 functions (omprpc_stdbit.h), locale.h's (the "C" locale);
 * and strtod, strtof, atof, _Exit, getenv and quick_exit, which reach the host.
 * Built for each GPU target with -lomprpc-device by tests/device_library.rs, which checks that the
 * device link finds each defined. The text they work on depends on argc, so that no call is folded away.
 * Built with -D_GNU_SOURCE (for memmem, strchrnul and the like): clang-16's AMD pass includes the C
 * library's headers before the program's first line. Built with -include omprpc_libc.h too, for
 * snprintf, sprintf and asprintf, which the host formats, and sscanf, fscanf and scanf, which the host
 * parses (clang-16 cannot compile a variadic call for AMD, and nvlink finds no snprintf, without it). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <wchar.h>
/* C23's stdbit.h, which glibc 2.36 lacks: the header the library ships (its directory's copy is this file). */
#include "../../include/omprpc_stdbit.h"

/* Every stdbit.h function of the type with suffix s, on v. */
#define STDBIT_CALLS(s, v)                                                                                   \
  (stdc_leading_zeros_##s(v) + stdc_leading_ones_##s(v) + stdc_trailing_zeros_##s(v) +                    \
   stdc_trailing_ones_##s(v) + stdc_first_leading_zero_##s(v) + stdc_first_leading_one_##s(v) +          \
   stdc_first_trailing_zero_##s(v) + stdc_first_trailing_one_##s(v) + stdc_count_zeros_##s(v) +          \
   stdc_count_ones_##s(v) + stdc_has_single_bit_##s(v) + stdc_bit_width_##s(v) +                          \
   (long)stdc_bit_floor_##s(v) + (long)stdc_bit_ceil_##s(v))

/* BSD's, which glibc declares from 2.38 on (Debian 12 has 2.36): a program declares them itself. */
size_t strlcpy(char *dst, const char *src, size_t size);
size_t strlcat(char *dst, const char *src, size_t size);

static int by_value(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
static int by_value_r(const void *a, const void *b, void *sign) { return *(int *)sign * by_value(a, b); }
static void at_exit(void) {}
static void at_quick(void) {}

int main(int argc, char **argv) {
  long status = 0;
  (void)argv;
#pragma omp target map(tofrom : status)
  {
    char text[48] = " 12 apples, 7 pears;0x1F";
    text[1] += argc > 5; /* unknown to the compiler */
    int c = text[argc];
    status += isalnum(c) + isalpha(c) + isascii(c) + isblank(c) + iscntrl(c) + isdigit(c) + isgraph(c) +
              islower(c) + isprint(c) + ispunct(c) + isspace(c) + isupper(c) + isxdigit(c) + toascii(c) +
              tolower(c) + toupper(c) + wctob((unsigned)c);
    /* The same, as functions rather than glibc's macros. */
    status += (isalnum)(c) + (isalpha)(c) + (isdigit)(c) + (isspace)(c) + (tolower)(c) + (toupper)(c);
    char copy[96], *place = NULL, *end = NULL;
    status += (long)strlen(text) + (long)strnlen(text, 4) + strcmp(text, "x") + strncmp(text, "x", 2) +
              strcasecmp(text, "X") + strncasecmp(text, "X", 1) + strcoll(text, "y") +
              memcmp(text, "a", 1) + bcmp(text, "b", 1);
    status += strchr(text, c) != NULL;
    status += strrchr(text, c) != NULL;
    status += strchrnul(text, c) != NULL;
    status += index(text, c) != NULL;
    status += rindex(text, c) != NULL;
    status += memchr(text, c, 8) != NULL;
    status += memrchr(text, c, 8) != NULL;
    status += strstr(text, "pear") != NULL;
    status += strcasestr(text, "PEAR") != NULL;
    status += memmem(text, 20, "7", 1) != NULL;
    status += strpbrk(text, ",;") != NULL;
    status += (long)strspn(text, " 12") + (long)strcspn(text, ",");
    status += (long)strlen(strerror(c)) + (long)strlen(strerror(-c));
    strcpy(copy, text);
    strcat(copy, "!");
    strncat(copy, "??", 1);
    status += stpcpy(copy + 40, "end") - copy;
    strncpy(copy + 50, text, 6);
    status += stpncpy(copy + 60, text, 5) - copy;
#if defined(__NVPTX__) || defined(__AMDGCN__) /* the host's glibc has neither */
    status += (long)strlcpy(copy + 70, text, 8) + (long)strlcat(copy + 70, text, 12);
#endif
    status += (long)strxfrm(copy + 80, "ab", 4);
    memmove(copy + 1, copy, 10);
    bcopy(copy, copy + 2, 5);
    memset(copy + 3, c, 4);
    bzero(copy + 5, 2);
    status += (char *)mempcpy(copy + 20, text, 4) - copy;
    status += memccpy(copy + 30, text, ',', 12) != NULL;
    char *token = strtok(copy, " ,;");
    while (token)
      token = strtok(NULL, " ,;");
    status += strtok_r(text + 20, "x", &place) != NULL;
    place = copy;
    status += strsep(&place, " ") != NULL;
    char *dup = strdup(text), *ndup = strndup(text, 3);
    status += dup && ndup;
    free(dup);
    free(ndup);
    errno = 0;
    status += strtol(text, &end, 10) + (long)strtoul(text + 1, NULL, 0) + strtoll(text, NULL, 16) +
              (long)strtoull(text, NULL, 36) + (long)strtoimax(text + 20, NULL, 0) +
              (long)strtoumax(text + 20, NULL, 16) + atoi(text) + atol(text) + atoll(text + 11) + errno;
    status += abs(c - 100) + labs(c - 100L) + llabs(c - 100LL) + (long)imaxabs(c - 100);
    /* (clang-16 refuses a member of a call's result inside a target region: named results.) */
    div_t d = div(c, 7);
    ldiv_t ld = ldiv(c, 7L);
    lldiv_t lld = lldiv(c, 7LL);
    imaxdiv_t imd = imaxdiv(c, 7);
    status += d.quot + ld.rem + lld.quot + (long)imd.rem;
    int values[8] = {5, 3, 9, 1, c, 7, 2, 8};
    qsort(values, 8, sizeof values[0], by_value);
    int sign = -1;
    qsort_r(values, 8, sizeof values[0], by_value_r, &sign);
    int key = 7;
    status += bsearch(&key, values, 8, sizeof values[0], by_value) != NULL;
    srand((unsigned)c);
    status += rand();
    status += (long)strtod(text, &end) + (long)strtof(text + 1, NULL) + (long)atof(text + 2);
    struct timespec now, nap = {0, c};
    status += clock_gettime(CLOCK_MONOTONIC, &now) + now.tv_nsec + clock() + nanosleep(&nap, NULL);
    status += atexit(at_exit) + at_quick_exit(at_quick);
    char *home = getenv(text + 20);
    status += home ? (long)strlen(home) : 0;
    status += setlocale(LC_ALL, argc > 3 ? "" : NULL) != NULL;
    struct lconv *conv = localeconv();
    status += conv->decimal_point[0];
    locale_t c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0), copy_locale = duplocale(c_locale);
    status += uselocale(copy_locale) == c_locale;
    freelocale(copy_locale);
    freelocale(c_locale);
    char formatted[64], *allocated = NULL;
    status += snprintf(formatted, sizeof formatted, "%s|%d|%.3f|%c|%lld", text, c, c / 7.0, c, (long long)status);
    status += sprintf(formatted, "%x %p %-5s|", (unsigned)c, (void *)text, text + c % 4);
    status += asprintf(&allocated, "%*d", c % 9, c);
    free(allocated);
    int parsed = 0;
    double real = 0;
    char word[16];
    status += sscanf(formatted, "%d %lf %15s", &parsed, &real, word) + parsed + (long)real;
    if (c == 'S')
      status += fscanf(stdin, "%d %15[a-z]", &parsed, word) + scanf("%lf%n", &real, &parsed);
    status += STDBIT_CALLS(uc, (unsigned char)c) + STDBIT_CALLS(us, (unsigned short)c) +
              STDBIT_CALLS(ui, (unsigned)c) + STDBIT_CALLS(ul, (unsigned long)status) +
              STDBIT_CALLS(ull, (unsigned long long)status) + stdc_leading_zeros(status + 0ul);
    if (c == 'Q')
      _Exit(c);
    if (c == 'R')
      quick_exit(c);
  }
  printf("%ld\n", status);
  return 0;
}
