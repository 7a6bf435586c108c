/* A million allocations and frees (argv[2], default 1,000,000), argv[1] says whose:
 *   "target"  omp_target_alloc / omp_target_free on device 0 from the host, sizes cycling from 1 byte
 *             to 64 KiB with a 1 MiB block every thousandth, 64 blocks live at a time;
 *   "device"  omprpc_malloc / omprpc_free inside one target region (a host round trip each), same sizes.
 * Every block is written at both ends. Prints the count, the failures, the resident set size after the
 * first 10,000 and at the end, and the time. */
#include <time.h>

#include "common.h"
#include "omprpc_device.h"

#define LIVE 64

#pragma omp declare target
static unsigned long block_size(long i) {
  return i % 1000 == 999 ? (1ul << 20) : 1ul + (unsigned long)(i * 2654435761u % 65536u);
}
#pragma omp end declare target

int main(int argc, char **argv) {
  int on_device_heap = argc > 1 && strcmp(argv[1], "device") == 0;
  long count = argc > 2 ? atol(argv[2]) : 1000000;
  long failures = 0, done = 0, rss_early = -1;
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  if (on_device_heap) {
    /* The first 10,000 in one region, the rest in a second, so that the host can look in between. */
    for (int part = 0; part < 2; part++) {
      long first = part == 0 ? 0 : (count < 10000 ? count : 10000);
      long last = part == 0 ? first + (count < 10000 ? count : 10000) : count;
#pragma omp target map(tofrom : failures, done)
      {
        char *live[LIVE] = {0};
        for (long i = first; i < last; i++) {
          char **slot = &live[i % LIVE];
          omprpc_free(*slot);
          unsigned long n = block_size(i);
          *slot = (char *)omprpc_malloc(n);
          if (!*slot) {
            failures++;
            continue;
          }
          (*slot)[0] = 1;
          (*slot)[n - 1] = 2;
          done++;
        }
        for (int k = 0; k < LIVE; k++)
          omprpc_free(live[k]);
      }
      if (part == 0)
        rss_early = omprpc_test_rss_kib();
    }
  } else {
    char *live[LIVE] = {0};
    for (long i = 0; i < count; i++) {
      char **slot = &live[i % LIVE];
      omp_target_free(*slot, 0);
      unsigned long n = block_size(i);
      *slot = (char *)omp_target_alloc(n, 0);
      if (!*slot) {
        failures++;
        continue;
      }
      done++;
      if (i + 1 == 10000)
        rss_early = omprpc_test_rss_kib();
    }
    for (int k = 0; k < LIVE; k++)
      omp_target_free(live[k], 0);
  }
  clock_gettime(CLOCK_MONOTONIC, &end);
  printf("allocations: %ld\n", done);
  printf("failures: %ld\n", failures);
  printf("rss after 10000: %ld KiB\n", rss_early);
  printf("rss at the end: %ld KiB\n", omprpc_test_rss_kib());
  printf("seconds: %.3f\n", (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) * 1e-9);
  return failures != 0;
}
