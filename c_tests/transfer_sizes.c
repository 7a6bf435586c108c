/* Transfers from 0 bytes to 1 GiB (argv[1]: the largest, in bytes) to and from every device: mapped
 * arrays changed by a target region, and omp_target_memcpy from the host to device 0, from device 0
 * to the last device and back to the host. Every byte is checked; one line per size, with the time. */
#include <stdint.h>
#include <time.h>

#include "common.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned char pattern(size_t i) { return (unsigned char)(i * 7u + (i >> 12)); }

int main(int argc, char **argv) {
  size_t largest = argc > 1 ? (size_t)strtoull(argv[1], 0, 0) : ((size_t)1 << 30);
  size_t sizes[] = {0, 1, 2, 3, 7, 8, 63, 64, 65, 4095, 4096, 4097, 65536, (1 << 20) - 1, 1 << 20,
                    (1 << 20) + 1, 1 << 24, (size_t)1 << 28, (size_t)1 << 30};
  int devices = omp_get_num_devices();
  int host = omp_get_initial_device();
  int failures = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0] && sizes[s] <= largest; s++) {
    size_t n = sizes[s];
    unsigned char *data = (unsigned char *)malloc(n ? n : 1);
    unsigned char *back = (unsigned char *)malloc(n ? n : 1);
    if (!data || !back) {
      printf("size %zu: no host memory\n", n);
      return 1;
    }
    for (size_t i = 0; i < n; i++)
      data[i] = pattern(i);
    double start = now();
    /* Mapped both ways on device 0, changed there. */
#pragma omp target teams distribute parallel for device(0) map(tofrom : data[0:n])
    for (size_t i = 0; i < n; i++)
      data[i] ^= 0x5a;
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++)
      wrong += data[i] != (unsigned char)(pattern(i) ^ 0x5a);
    /* Host -> device 0 -> last device -> host. */
    void *first = omp_target_alloc(n, 0);
    void *last = omp_target_alloc(n, devices - 1);
    int copies = (n == 0 || (first && last)) &&
                 omp_target_memcpy(first, data, n, 0, 0, 0, host) == 0 &&
                 omp_target_memcpy(last, first, n, 0, 0, devices - 1, 0) == 0 &&
                 omp_target_memcpy(back, last, n, 0, 0, host, devices - 1) == 0;
    if (copies)
      wrong += memcmp(back, data, n) != 0;
    omp_target_free(first, 0);
    omp_target_free(last, devices - 1);
    double seconds = now() - start;
    int ok = wrong == 0 && copies;
    failures += !ok;
    printf("size %zu: %s (%.3f s)\n", n, ok ? "ok" : "WRONG", seconds);
    free(data);
    free(back);
  }
  printf("failures: %d\n", failures);
  return failures != 0;
}
