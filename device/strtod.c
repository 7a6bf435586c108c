/* stdlib.h's conversions from text to floating point, strtod, strtof, strtold and atof, with glibc's
 * results: the value's bits, the end pointer and errno (ERANGE on overflow, and on underflow as glibc
 * sets it). Correct rounding of a decimal string needs arithmetic on numbers as long as the string,
 * which a target region should not do for every thread; so the conversion itself is the host's:
 * the device finds the number's extent, sends its text, and the host's glibc converts it (plugin
 * opcode OMPRPC_OP_STRTOD, served by src/rpc/services/strtod.rs).
 *
 * What the device sends: the number from its sign on (leading white space is skipped here, however
 * long), up to where glibc stops reading it, as it is, so that glibc reads the same text. A number
 * with more significant mantissa digits than a bound (120 for float, 800 for double, 11600 for long
 * double) is cut after that many, and a digit 1 is put in place of the rest when any of it is not
 * 0, with the exponent moved by the integer digits left out: every number that rounding can land on
 * or between (the type's values, the midpoints between them, the overflow threshold) has fewer
 * significant digits than the bound (at most 767 for a double's midpoints), so the cut number and
 * the whole one lie strictly between the same two of them, and glibc rounds both alike, with the same
 * errno; an exponent stops growing at 17 significant digits there (10^16 is past any overflow or
 * underflow already). The end pointer is then the device's own; otherwise it is where glibc stopped
 * in the text sent.
 *
 * long double: clang-16 cannot compile it for GPUs (NVPTX refuses a 128-bit long double, and the
 * AMDGPU backend cannot lower x86_fp80), so a target region on a GPU cannot call strtold, and the
 * library defines it only in its host builds (the host device's tests). */
#include "omprpc_libc_common.h"

#ifdef OMPRPC_LIBC_DEFINED

#include "omprpc_device.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma omp begin declare target

int *OMPRPC_LIBC_(__errno_location)(void);

/* Which conversion the host makes: packet word 0 of the request. */
enum { OMPRPC_STRTOD_FLOAT = 0, OMPRPC_STRTOD_DOUBLE = 1, OMPRPC_STRTOD_LONG_DOUBLE = 2 };

/* The number of significant mantissa digits sent as they are, by conversion (see above). */
static const uint64_t omprpc_strtod_kept_[3] = {120, 800, 11600};

/* How a number is sent: the text from `start` to `cut` as it is, then `suffix` (the digit standing
 * for the digits left out, and the exponent), which is empty when nothing was left out. */
typedef struct {
  const char *start;
  const char *cut;
  const char *end;
  char suffix[40];
  uint32_t suffix_length;
} omprpc_strtod_text_;

static int omprpc_strtod_digit_(char c, int hex) {
  if ((unsigned)(c - '0') < 10)
    return c - '0';
  if (hex && (unsigned)((c | 32) - 'a') < 6)
    return (c | 32) - 'a' + 10;
  return -1;
}

/* Whether the text at p starts with `word` (lower case), in either case. */
static int omprpc_strtod_word_(const char *p, const char *word) {
  for (; *word; ++p, ++word)
    if ((*p | 32) != *word)
      return 0;
  return 1;
}

static int omprpc_strtod_alnum_(char c) {
  return (unsigned)(c - '0') < 10 || (unsigned)((c | 32) - 'a') < 26;
}

/* Finds the number glibc reads at p (after white space) as described above; 0 when there is none. */
static int omprpc_strtod_scan_(const char *p, uint64_t kept, omprpc_strtod_text_ *t) {
  const char *q = p;
  t->start = p;
  t->suffix_length = 0;
  if (*q == '+' || *q == '-')
    ++q;
  if (omprpc_strtod_word_(q, "inf")) {
    q += 3;
    if (omprpc_strtod_word_(q, "inity"))
      q += 5;
    t->cut = t->end = q;
    return 1;
  }
  if (omprpc_strtod_word_(q, "nan")) {
    q += 3;
    if (*q == '(') {
      const char *r = q + 1;
      while (omprpc_strtod_alnum_(*r) || *r == '_')
        ++r;
      if (*r == ')')
        q = r + 1;
    }
    t->cut = t->end = q;
    return 1;
  }
  /* "0x" is a hexadecimal number only with a hex digit after it (or after its point); else the 0 is
   * the number. */
  int hex = q[0] == '0' && (q[1] | 32) == 'x' &&
            (omprpc_strtod_digit_(q[2], 1) >= 0 || (q[2] == '.' && omprpc_strtod_digit_(q[3], 1) >= 0));
  if (hex)
    q += 2;
  uint64_t significant = 0;
  int64_t integer_rest = 0; /* integer digits after the cut */
  int digits = 0, fraction = 0, sticky = 0, cut_in_fraction = 0;
  const char *cut = 0;
  for (;; ++q) {
    if (*q == '.' && !fraction) {
      fraction = 1;
      continue;
    }
    int d = omprpc_strtod_digit_(*q, hex);
    if (d < 0)
      break;
    digits = 1;
    if (cut) {
      sticky |= d != 0;
      integer_rest += !fraction;
    } else if ((significant || d) && ++significant == kept) {
      cut = q + 1;
      cut_in_fraction = fraction;
    }
  }
  if (!digits)
    return 0;
  int64_t exponent = 0;
  if ((*q | 32) == (hex ? 'p' : 'e')) {
    const char *r = q + 1;
    int negative = 0;
    if (*r == '+' || *r == '-')
      negative = *r++ == '-';
    if (omprpc_strtod_digit_(*r, 0) >= 0) {
      for (; omprpc_strtod_digit_(*r, 0) >= 0; ++r)
        if (exponent < 10000000000000000)
          exponent = exponent * 10 + omprpc_strtod_digit_(*r, 0);
      q = r;
      exponent = negative ? -exponent : exponent;
    }
  }
  t->end = q;
  if (!cut) {
    t->cut = q;
    return 1;
  }
  t->cut = cut;
  if (!cut_in_fraction)
    exponent += (integer_rest - sticky) * (hex ? 4 : 1);
  char *s = t->suffix;
  if (sticky)
    *s++ = '1';
  *s++ = hex ? 'p' : 'e';
  uint64_t magnitude = exponent < 0 ? 0 - (uint64_t)exponent : (uint64_t)exponent;
  if (exponent < 0)
    *s++ = '-';
  char digits_reversed[24];
  int n = 0;
  do {
    digits_reversed[n++] = (char)('0' + magnitude % 10);
    magnitude /= 10;
  } while (magnitude);
  while (n)
    *s++ = digits_reversed[--n];
  t->suffix_length = (uint32_t)(s - t->suffix);
  return 1;
}

/* Converts the number at `text` as `kind`: its bits into `bits` (zero when there is none), its end to
 * *end (when end is not NULL), errno as glibc sets it. */
static void omprpc_strtod_(const char *text, char **end, int kind, uint64_t bits[2]) {
  bits[0] = bits[1] = 0;
  const char *p = text;
  while (*p == ' ' || (unsigned)(*p - '\t') < 5)
    ++p;
  omprpc_strtod_text_ t;
  if (!omprpc_strtod_scan_(p, omprpc_strtod_kept_[kind], &t)) {
    if (end)
      *end = (char *)text;
    return;
  }
  const char *stop = t.end;
  if (!omprpc_rpc_active()) {
#if !OMPRPC_GPU_
    char *host_end;
    if (kind == OMPRPC_STRTOD_FLOAT) {
      float v = strtof(text, &host_end);
      omprpc_copy_(bits, &v, sizeof v);
    } else if (kind == OMPRPC_STRTOD_DOUBLE) {
      double v = strtod(text, &host_end);
      omprpc_copy_(bits, &v, sizeof v);
    } else {
      long double v = strtold(text, &host_end);
      omprpc_copy_(bits, &v, 10);
    }
    stop = host_end;
#else
    stop = text; /* no host to convert it: no number */
#endif
  } else {
    omprpc_packet packet;
    omprpc_zero_(&packet);
    packet.data[0] = (uint64_t)kind;
    packet.data[1] = t.suffix_length;
    omprpc_copy_(&packet.data[2], t.suffix, t.suffix_length);
    omprpc_client_port port = omprpc_open(OMPRPC_OP_STRTOD);
    omprpc_send(&port, &packet);
    omprpc_send_n(&port, t.start, (uint64_t)(t.cut - t.start));
    omprpc_recv(&port, &packet);
    omprpc_close(&port);
    bits[0] = packet.data[0];
    bits[1] = packet.data[1];
    uint64_t consumed = packet.data[2];
    if (t.suffix_length == 0 && consumed > 0 && consumed <= (uint64_t)(t.cut - t.start))
      stop = t.start + consumed;
    if (packet.data[3])
      *OMPRPC_LIBC_(__errno_location)() = (int)packet.data[3];
  }
  if (end)
    *end = (char *)stop;
}

double OMPRPC_LIBC_(strtod)(const char *restrict text, char **restrict end) {
  uint64_t bits[2];
  omprpc_strtod_(text, end, OMPRPC_STRTOD_DOUBLE, bits);
  double v;
  omprpc_copy_(&v, bits, sizeof v);
  return v;
}

float OMPRPC_LIBC_(strtof)(const char *restrict text, char **restrict end) {
  uint64_t bits[2];
  omprpc_strtod_(text, end, OMPRPC_STRTOD_FLOAT, bits);
  float v;
  omprpc_copy_(&v, bits, sizeof v);
  return v;
}

/* As glibc's: strtod's value (and errno as strtod leaves it). */
double OMPRPC_LIBC_(atof)(const char *text) { return OMPRPC_LIBC_(strtod)(text, NULL); }

#if !OMPRPC_GPU_
long double OMPRPC_LIBC_(strtold)(const char *restrict text, char **restrict end) {
  uint64_t bits[2];
  omprpc_strtod_(text, end, OMPRPC_STRTOD_LONG_DOUBLE, bits);
  long double v = 0;
  omprpc_copy_(&v, bits, 10);
  return v;
}
#endif

#pragma omp end declare target
#ifdef __cplusplus
}
#endif

#endif
