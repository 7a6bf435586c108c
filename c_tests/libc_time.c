/* The device library's clock_gettime, clock and nanosleep (device/time.c, built for the host device with
 * their functions named omprpc_libc_*), in a target region run through omprpc on the host device:
 * CLOCK_MONOTONIC never goes back over many reads, clock() is that clock in CLOCKS_PER_SEC units (a
 * read of one between two reads of the other lies between them), nanosleep sleeps at least the time
 * asked by the library's clock and by the host's, other clock ids and bad requests fail with EINVAL.
 * No upper bound on any time: a loaded machine may sleep longer. Prints "N checks, M failures" and
 * each failure. */
#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "common.h"

#define OMPRPC_LIBC_PREFIX 1
#include "../device/time.c"

#pragma omp declare target
/* The library's errno (device/stdlib.c's), without the rest of that file. */
static int library_errno;
int *omprpc_libc___errno_location(void) { return &library_errno; }

static long checks, failures;

static void check(int ok, const char *what, long a, long b) {
  checks++;
  if (ok)
    return;
  if (++failures <= 30)
    printf("failed: %s (%ld, %ld)\n", what, a, b);
}

static int64_t ns_of(const omprpc_timespec_ *ts) { return ts->tv_sec * 1000000000 + ts->tv_nsec; }

static int64_t host_now(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static void cases(void) {
  omprpc_timespec_ ts, before;
  check(omprpc_libc_clock_gettime(CLOCK_MONOTONIC, &before) == 0, "clock_gettime(CLOCK_MONOTONIC)", 0, 0);
  check(before.tv_nsec >= 0 && before.tv_nsec < 1000000000, "tv_nsec in range", before.tv_nsec, 0);
  for (int i = 0; i < 100000; i++) {
    omprpc_libc_clock_gettime(CLOCK_MONOTONIC, &ts);
    if (ns_of(&ts) < ns_of(&before) || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000)
      check(0, "monotonic", (long)ns_of(&before), (long)ns_of(&ts));
    before = ts;
  }
  check(1, "100000 reads in order", 0, 0);
  /* clock() is the same clock in microseconds. */
  for (int i = 0; i < 1000; i++) {
    long first = omprpc_libc_clock();
    omprpc_libc_clock_gettime(CLOCK_MONOTONIC, &ts);
    long last = omprpc_libc_clock();
    long us = (long)(ns_of(&ts) / (1000000000 / CLOCKS_PER_SEC));
    check(first <= us && us <= last, "clock() around clock_gettime", first, us);
    check(first <= last, "clock() in order", first, last);
  }
  /* nanosleep sleeps at least what was asked, by both clocks. */
  const long asked[] = {0, 1, 999, 50000, 2000000, 30000000, 120000000};
  for (unsigned i = 0; i < sizeof asked / sizeof asked[0]; i++) {
    omprpc_timespec_ request = {asked[i] / 1000000000, asked[i] % 1000000000}, left = {-5, -5};
    int64_t host_start = host_now();
    omprpc_libc_clock_gettime(CLOCK_MONOTONIC, &before);
    int result = omprpc_libc_nanosleep(&request, &left);
    omprpc_libc_clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t host_slept = host_now() - host_start;
    check(result == 0, "nanosleep's result", result, asked[i]);
    check(ns_of(&ts) - ns_of(&before) >= asked[i], "slept at least the time asked", (long)(ns_of(&ts) - ns_of(&before)),
          asked[i]);
    check(host_slept >= asked[i], "slept at least the time asked, by the host's clock", (long)host_slept, asked[i]);
    check(left.tv_sec == -5 && left.tv_nsec == -5, "rem left alone", (long)left.tv_sec, (long)left.tv_nsec);
  }
  omprpc_timespec_ whole_second = {1, 0};
  omprpc_libc_clock_gettime(CLOCK_MONOTONIC, &before);
  check(omprpc_libc_nanosleep(&whole_second, NULL) == 0, "nanosleep of 1 s", 0, 0);
  omprpc_libc_clock_gettime(CLOCK_MONOTONIC, &ts);
  check(ns_of(&ts) - ns_of(&before) >= 1000000000, "slept at least 1 s", (long)(ns_of(&ts) - ns_of(&before)), 0);
  /* What fails. */
  const int others[] = {CLOCK_REALTIME, CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID, CLOCK_MONOTONIC_RAW, -1, 99};
  for (unsigned i = 0; i < sizeof others / sizeof others[0]; i++) {
    *omprpc_libc___errno_location() = 0;
    check(omprpc_libc_clock_gettime(others[i], &ts) == -1, "another clock id fails", others[i], 0);
    check(*omprpc_libc___errno_location() == EINVAL, "with EINVAL", others[i], *omprpc_libc___errno_location());
  }
  *omprpc_libc___errno_location() = 0;
  check(omprpc_libc_clock_gettime(CLOCK_MONOTONIC, NULL) == -1, "a null timespec fails", 0, 0);
  check(*omprpc_libc___errno_location() == EINVAL, "with EINVAL", 0, *omprpc_libc___errno_location());
  const omprpc_timespec_ bad[] = {{0, -1}, {0, 1000000000}, {-1, 0}};
  for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    *omprpc_libc___errno_location() = 0;
    check(omprpc_libc_nanosleep(&bad[i], NULL) == -1, "a bad request fails", (long)bad[i].tv_sec, (long)bad[i].tv_nsec);
    check(*omprpc_libc___errno_location() == EINVAL, "with EINVAL", (long)i, *omprpc_libc___errno_location());
  }
  *omprpc_libc___errno_location() = 0;
  check(omprpc_libc_nanosleep(NULL, NULL) == -1 && *omprpc_libc___errno_location() == EINVAL, "a null request fails", 0,
        0);
}
#pragma omp end declare target

int main(void) {
  long counted[3];
#pragma omp target map(from : counted)
  {
    cases();
    counted[0] = checks;
    counted[1] = failures;
    counted[2] = !omp_is_initial_device();
  }
  printf("on the device: %ld\n", counted[2]);
  printf("%ld checks, %ld failures\n", counted[0], counted[1]);
  return counted[1] != 0;
}
