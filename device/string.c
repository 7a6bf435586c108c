/* string.h (and strings.h) for target regions, on the device: byte by byte, as the C standard and
 * glibc define each function, with glibc's answers (and strerror's messages) in the "C" locale
 * (strcoll and strxfrm are strcmp and a copy there; the case-insensitive ones fold ASCII only). strdup and strndup allocate with the
 * library's malloc. strtok keeps its place in one variable for the whole device, as C's strtok keeps one
 * per program: threads that tokenise at once use strtok_r. */
#include "omprpc_libc_common.h"

#ifdef OMPRPC_LIBC_DEFINED
#ifdef __cplusplus
extern "C" {
#endif
#pragma omp begin declare target

void *OMPRPC_LIBC_(malloc)(size_t size);

typedef unsigned char omprpc_byte_;

void *OMPRPC_LIBC_(memcpy)(void *restrict dst, const void *restrict src, size_t n) {
  omprpc_byte_ *d = (omprpc_byte_ *)dst;
  const omprpc_byte_ *s = (const omprpc_byte_ *)src;
  for (size_t i = 0; i < n; i++)
    d[i] = s[i];
  return dst;
}

void *OMPRPC_LIBC_(mempcpy)(void *restrict dst, const void *restrict src, size_t n) {
  return (omprpc_byte_ *)OMPRPC_LIBC_(memcpy)(dst, src, n) + n;
}

void *OMPRPC_LIBC_(memmove)(void *dst, const void *src, size_t n) {
  omprpc_byte_ *d = (omprpc_byte_ *)dst;
  const omprpc_byte_ *s = (const omprpc_byte_ *)src;
  if ((uintptr_t)d - (uintptr_t)s >= n) { /* no overlap that a forward copy would trample */
    for (size_t i = 0; i < n; i++)
      d[i] = s[i];
  } else {
    for (size_t i = n; i > 0; i--)
      d[i - 1] = s[i - 1];
  }
  return dst;
}

void OMPRPC_LIBC_(bcopy)(const void *src, void *dst, size_t n) { OMPRPC_LIBC_(memmove)(dst, src, n); }

void *OMPRPC_LIBC_(memset)(void *dst, int c, size_t n) {
  omprpc_byte_ *d = (omprpc_byte_ *)dst;
  for (size_t i = 0; i < n; i++)
    d[i] = (omprpc_byte_)c;
  return dst;
}

void OMPRPC_LIBC_(bzero)(void *dst, size_t n) { OMPRPC_LIBC_(memset)(dst, 0, n); }

int OMPRPC_LIBC_(memcmp)(const void *a, const void *b, size_t n) {
  const omprpc_byte_ *x = (const omprpc_byte_ *)a, *y = (const omprpc_byte_ *)b;
  for (size_t i = 0; i < n; i++)
    if (x[i] != y[i])
      return x[i] - y[i];
  return 0;
}

int OMPRPC_LIBC_(bcmp)(const void *a, const void *b, size_t n) { return OMPRPC_LIBC_(memcmp)(a, b, n); }

void *OMPRPC_LIBC_(memchr)(const void *s, int c, size_t n) {
  const omprpc_byte_ *p = (const omprpc_byte_ *)s;
  for (size_t i = 0; i < n; i++)
    if (p[i] == (omprpc_byte_)c)
      return (void *)(p + i);
  return NULL;
}

void *OMPRPC_LIBC_(memrchr)(const void *s, int c, size_t n) {
  const omprpc_byte_ *p = (const omprpc_byte_ *)s;
  for (size_t i = n; i > 0; i--)
    if (p[i - 1] == (omprpc_byte_)c)
      return (void *)(p + i - 1);
  return NULL;
}

void *OMPRPC_LIBC_(memccpy)(void *restrict dst, const void *restrict src, int c, size_t n) {
  omprpc_byte_ *d = (omprpc_byte_ *)dst;
  const omprpc_byte_ *s = (const omprpc_byte_ *)src;
  for (size_t i = 0; i < n; i++) {
    d[i] = s[i];
    if (s[i] == (omprpc_byte_)c)
      return d + i + 1;
  }
  return NULL;
}

void *OMPRPC_LIBC_(memmem)(const void *haystack, size_t length, const void *needle, size_t needle_length) {
  const omprpc_byte_ *h = (const omprpc_byte_ *)haystack;
  if (needle_length == 0)
    return (void *)h;
  for (size_t i = 0; needle_length <= length && i <= length - needle_length; i++)
    if (OMPRPC_LIBC_(memcmp)(h + i, needle, needle_length) == 0)
      return (void *)(h + i);
  return NULL;
}

size_t OMPRPC_LIBC_(strlen)(const char *s) {
  size_t n = 0;
  while (s[n])
    n++;
  return n;
}

size_t OMPRPC_LIBC_(strnlen)(const char *s, size_t limit) {
  size_t n = 0;
  while (n < limit && s[n])
    n++;
  return n;
}

char *OMPRPC_LIBC_(stpcpy)(char *restrict dst, const char *restrict src) {
  size_t n = OMPRPC_LIBC_(strlen)(src);
  OMPRPC_LIBC_(memcpy)(dst, src, n + 1);
  return dst + n;
}

char *OMPRPC_LIBC_(strcpy)(char *restrict dst, const char *restrict src) {
  OMPRPC_LIBC_(stpcpy)(dst, src);
  return dst;
}

/* Copies at most n bytes and pads with NULs to n; returns the end of the copied string (dst + n when
 * src was n bytes or longer). */
char *OMPRPC_LIBC_(stpncpy)(char *restrict dst, const char *restrict src, size_t n) {
  size_t copied = OMPRPC_LIBC_(strnlen)(src, n);
  OMPRPC_LIBC_(memcpy)(dst, src, copied);
  OMPRPC_LIBC_(memset)(dst + copied, 0, n - copied);
  return dst + copied;
}

char *OMPRPC_LIBC_(strncpy)(char *restrict dst, const char *restrict src, size_t n) {
  OMPRPC_LIBC_(stpncpy)(dst, src, n);
  return dst;
}

char *OMPRPC_LIBC_(strcat)(char *restrict dst, const char *restrict src) {
  OMPRPC_LIBC_(strcpy)(dst + OMPRPC_LIBC_(strlen)(dst), src);
  return dst;
}

char *OMPRPC_LIBC_(strncat)(char *restrict dst, const char *restrict src, size_t n) {
  char *end = dst + OMPRPC_LIBC_(strlen)(dst);
  size_t copied = OMPRPC_LIBC_(strnlen)(src, n);
  OMPRPC_LIBC_(memcpy)(end, src, copied);
  end[copied] = '\0';
  return dst;
}

/* BSD's: copies what fits of src into size bytes, always terminated when size > 0; returns the length of
 * src, so that a result >= size says it was cut. */
size_t OMPRPC_LIBC_(strlcpy)(char *restrict dst, const char *restrict src, size_t size) {
  size_t length = OMPRPC_LIBC_(strlen)(src);
  if (size > 0) {
    size_t copied = length < size - 1 ? length : size - 1;
    OMPRPC_LIBC_(memcpy)(dst, src, copied);
    dst[copied] = '\0';
  }
  return length;
}

/* BSD's: appends what fits into size bytes in all; returns the length it tried to make. A dst with no
 * NUL in its first size bytes is left alone (size + strlen(src) returned). */
size_t OMPRPC_LIBC_(strlcat)(char *restrict dst, const char *restrict src, size_t size) {
  size_t used = OMPRPC_LIBC_(strnlen)(dst, size);
  if (used == size)
    return size + OMPRPC_LIBC_(strlen)(src);
  return used + OMPRPC_LIBC_(strlcpy)(dst + used, src, size - used);
}

int OMPRPC_LIBC_(strcmp)(const char *a, const char *b) {
  const omprpc_byte_ *x = (const omprpc_byte_ *)a, *y = (const omprpc_byte_ *)b;
  while (*x && *x == *y)
    x++, y++;
  return *x - *y;
}

int OMPRPC_LIBC_(strncmp)(const char *a, const char *b, size_t n) {
  const omprpc_byte_ *x = (const omprpc_byte_ *)a, *y = (const omprpc_byte_ *)b;
  for (size_t i = 0; i < n; i++) {
    if (x[i] != y[i] || !x[i])
      return x[i] - y[i];
  }
  return 0;
}

int OMPRPC_LIBC_(strcoll)(const char *a, const char *b) { return OMPRPC_LIBC_(strcmp)(a, b); }

/* As glibc's in the "C" locale: the first n bytes of the string with its NUL, even when they are cut. */
size_t OMPRPC_LIBC_(strxfrm)(char *restrict dst, const char *restrict src, size_t n) {
  size_t length = OMPRPC_LIBC_(strlen)(src);
  OMPRPC_LIBC_(memcpy)(dst, src, length < n ? length + 1 : n);
  return length;
}

static inline int omprpc_fold_(int c) { return (unsigned)c - 'A' < 26 ? c | 32 : c; }

int OMPRPC_LIBC_(strncasecmp)(const char *a, const char *b, size_t n) {
  const omprpc_byte_ *x = (const omprpc_byte_ *)a, *y = (const omprpc_byte_ *)b;
  for (size_t i = 0; i < n; i++) {
    int d = omprpc_fold_(x[i]) - omprpc_fold_(y[i]);
    if (d != 0 || !x[i])
      return d;
  }
  return 0;
}

int OMPRPC_LIBC_(strcasecmp)(const char *a, const char *b) { return OMPRPC_LIBC_(strncasecmp)(a, b, SIZE_MAX); }

char *OMPRPC_LIBC_(strchrnul)(const char *s, int c) {
  while (*s && *s != (char)c)
    s++;
  return (char *)s;
}

char *OMPRPC_LIBC_(strchr)(const char *s, int c) {
  char *at = OMPRPC_LIBC_(strchrnul)(s, c);
  return *at == (char)c ? at : NULL;
}

char *OMPRPC_LIBC_(strrchr)(const char *s, int c) {
  const char *last = NULL;
  do {
    if (*s == (char)c)
      last = s;
  } while (*s++);
  return (char *)last;
}

char *OMPRPC_LIBC_(index)(const char *s, int c) { return OMPRPC_LIBC_(strchr)(s, c); }
char *OMPRPC_LIBC_(rindex)(const char *s, int c) { return OMPRPC_LIBC_(strrchr)(s, c); }

/* Bytes at the start of s that are (accept) or are not (reject) in set. */
static size_t omprpc_span_(const char *s, const char *set, int accept) {
  size_t n = 0;
  for (; s[n]; n++) {
    int in = 0;
    for (const char *c = set; *c; c++)
      in |= *c == s[n];
    if (in != accept)
      break;
  }
  return n;
}

size_t OMPRPC_LIBC_(strspn)(const char *s, const char *accept) { return omprpc_span_(s, accept, 1); }
size_t OMPRPC_LIBC_(strcspn)(const char *s, const char *reject) { return omprpc_span_(s, reject, 0); }

char *OMPRPC_LIBC_(strpbrk)(const char *s, const char *accept) {
  s += omprpc_span_(s, accept, 0);
  return *s ? (char *)s : NULL;
}

char *OMPRPC_LIBC_(strstr)(const char *haystack, const char *needle) {
  return (char *)OMPRPC_LIBC_(memmem)(haystack, OMPRPC_LIBC_(strlen)(haystack), needle, OMPRPC_LIBC_(strlen)(needle));
}

char *OMPRPC_LIBC_(strcasestr)(const char *haystack, const char *needle) {
  size_t length = OMPRPC_LIBC_(strlen)(needle);
  for (; *haystack; haystack++)
    if (OMPRPC_LIBC_(strncasecmp)(haystack, needle, length) == 0)
      return (char *)haystack;
  return length == 0 ? (char *)haystack : NULL;
}

char *OMPRPC_LIBC_(strsep)(char **place, const char *delimiters) {
  char *token = *place;
  if (!token)
    return NULL;
  char *end = token + omprpc_span_(token, delimiters, 0);
  if (*end) {
    *end = '\0';
    *place = end + 1;
  } else {
    *place = NULL;
  }
  return token;
}

char *OMPRPC_LIBC_(strtok_r)(char *restrict s, const char *restrict delimiters, char **restrict place) {
  if (!s)
    s = *place;
  s += omprpc_span_(s, delimiters, 1);
  if (!*s) {
    *place = s;
    return NULL;
  }
  char *end = s + omprpc_span_(s, delimiters, 0);
  if (*end)
    *end++ = '\0';
  *place = end;
  return s;
}

static char *omprpc_strtok_place_;

char *OMPRPC_LIBC_(strtok)(char *restrict s, const char *restrict delimiters) {
  return OMPRPC_LIBC_(strtok_r)(s, delimiters, &omprpc_strtok_place_);
}

/* glibc 2.36's messages for errno values 0 to 133, as its strerror gives them in the "C" locale (0 where
 * it gives "Unknown error N"); tests compare each with the host's glibc. */
static const char *const omprpc_strerror_messages_[134] = {
    "Success",
    "Operation not permitted",
    "No such file or directory",
    "No such process",
    "Interrupted system call",
    "Input/output error",
    "No such device or address",
    "Argument list too long",
    "Exec format error",
    "Bad file descriptor",
    "No child processes",
    "Resource temporarily unavailable",
    "Cannot allocate memory",
    "Permission denied",
    "Bad address",
    "Block device required",
    "Device or resource busy",
    "File exists",
    "Invalid cross-device link",
    "No such device",
    "Not a directory",
    "Is a directory",
    "Invalid argument",
    "Too many open files in system",
    "Too many open files",
    "Inappropriate ioctl for device",
    "Text file busy",
    "File too large",
    "No space left on device",
    "Illegal seek",
    "Read-only file system",
    "Too many links",
    "Broken pipe",
    "Numerical argument out of domain",
    "Numerical result out of range",
    "Resource deadlock avoided",
    "File name too long",
    "No locks available",
    "Function not implemented",
    "Directory not empty",
    "Too many levels of symbolic links",
    0,
    "No message of desired type",
    "Identifier removed",
    "Channel number out of range",
    "Level 2 not synchronized",
    "Level 3 halted",
    "Level 3 reset",
    "Link number out of range",
    "Protocol driver not attached",
    "No CSI structure available",
    "Level 2 halted",
    "Invalid exchange",
    "Invalid request descriptor",
    "Exchange full",
    "No anode",
    "Invalid request code",
    "Invalid slot",
    0,
    "Bad font file format",
    "Device not a stream",
    "No data available",
    "Timer expired",
    "Out of streams resources",
    "Machine is not on the network",
    "Package not installed",
    "Object is remote",
    "Link has been severed",
    "Advertise error",
    "Srmount error",
    "Communication error on send",
    "Protocol error",
    "Multihop attempted",
    "RFS specific error",
    "Bad message",
    "Value too large for defined data type",
    "Name not unique on network",
    "File descriptor in bad state",
    "Remote address changed",
    "Can not access a needed shared library",
    "Accessing a corrupted shared library",
    ".lib section in a.out corrupted",
    "Attempting to link in too many shared libraries",
    "Cannot exec a shared library directly",
    "Invalid or incomplete multibyte or wide character",
    "Interrupted system call should be restarted",
    "Streams pipe error",
    "Too many users",
    "Socket operation on non-socket",
    "Destination address required",
    "Message too long",
    "Protocol wrong type for socket",
    "Protocol not available",
    "Protocol not supported",
    "Socket type not supported",
    "Operation not supported",
    "Protocol family not supported",
    "Address family not supported by protocol",
    "Address already in use",
    "Cannot assign requested address",
    "Network is down",
    "Network is unreachable",
    "Network dropped connection on reset",
    "Software caused connection abort",
    "Connection reset by peer",
    "No buffer space available",
    "Transport endpoint is already connected",
    "Transport endpoint is not connected",
    "Cannot send after transport endpoint shutdown",
    "Too many references: cannot splice",
    "Connection timed out",
    "Connection refused",
    "Host is down",
    "No route to host",
    "Operation already in progress",
    "Operation now in progress",
    "Stale file handle",
    "Structure needs cleaning",
    "Not a XENIX named type file",
    "No XENIX semaphores available",
    "Is a named type file",
    "Remote I/O error",
    "Disk quota exceeded",
    "No medium found",
    "Wrong medium type",
    "Operation canceled",
    "Required key not available",
    "Key has expired",
    "Key has been revoked",
    "Key was rejected by service",
    "Owner died",
    "State not recoverable",
    "Operation not possible due to RF-kill",
    "Memory page has hardware error",
};

/* As glibc's: the message, or "Unknown error N" in a buffer of its own (one per device, as glibc's is
 * one per thread: overwritten by the next unknown number). */
char *OMPRPC_LIBC_(strerror)(int number) {
  if (number >= 0 && number < 134 && omprpc_strerror_messages_[number])
    return (char *)omprpc_strerror_messages_[number];
  static char unknown[32];
  char digits[12];
  int n = 0;
  unsigned magnitude = number < 0 ? 0u - (unsigned)number : (unsigned)number;
  do
    digits[n++] = (char)('0' + magnitude % 10);
  while ((magnitude /= 10) != 0);
  char *end = OMPRPC_LIBC_(stpcpy)(unknown, "Unknown error ");
  if (number < 0)
    *end++ = '-';
  while (n > 0)
    *end++ = digits[--n];
  *end = '\0';
  return unknown;
}

char *OMPRPC_LIBC_(strndup)(const char *s, size_t n) {
  size_t length = OMPRPC_LIBC_(strnlen)(s, n);
  char *copy = (char *)OMPRPC_LIBC_(malloc)(length + 1);
  if (copy) {
    OMPRPC_LIBC_(memcpy)(copy, s, length);
    copy[length] = '\0';
  }
  return copy;
}

char *OMPRPC_LIBC_(strdup)(const char *s) { return OMPRPC_LIBC_(strndup)(s, SIZE_MAX); }

#pragma omp end declare target
#ifdef __cplusplus
}
#endif
#endif
