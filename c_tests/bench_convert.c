/* snprintf and strtod per call from device code (run by benches/convert.rs), on omprpc's host device:
 * `through N` makes N calls per lane of the device library's snprintf (omprpc_device.h's, formatted by
 * the host through FORMAT_TO_BUFFER) or strtod (device/strtod.c, converted by the host through STRTOD);
 * `inplace N` makes the same calls to the host's glibc directly in the target region: what a
 * conversion done where the calling code runs would cost on this processor, the stand-in for one done
 * on the device. The first argument picks the call (`snprintf` or `strtod`). One lane, or the lanes of
 * a simulated warp (built with -DOMPRPC_SIMULATED_LANES=32), call at once. The figure, calls per
 * second of all lanes, goes to stderr; a checksum of the results to stdout, so that both ways are seen
 * to compute the same thing. */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "common.h"

#define OMPRPC_LIBC_PREFIX 1
#include "../device/ctype.c"
#include "../device/omprpc_libc.c"
#include "../device/stdlib.c"
#include "../device/string.c"
#include "../device/strtod.c"

#ifdef OMPRPC_SIMULATED_LANES
#define LANES OMPRPC_SIMULATED_LANES
#else
#define LANES 1
#endif

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The numbers the calls format and read: a spread of magnitudes and digits. */
#pragma omp declare target
static const char *const numbers[8] = {"3.14159265358979", "-2.5e-300", "6.02214076e23", "0.1",
                                       "123456789012345678", "0x1.8p3", "1e-320", "42"};
#pragma omp end declare target

/* `calls` calls per lane; the sum of the results' lengths or values, for the checksum. */
static double run(int snprintf_call, int through, int calls) {
  double sum = 0;
#pragma omp target map(tofrom : sum)
#pragma omp parallel num_threads(LANES) reduction(+ : sum)
  {
    int lane = omp_get_thread_num();
    char text[64];
    for (int i = 0; i < calls; ++i) {
      const char *number = numbers[(i + lane) & 7];
      if (snprintf_call) {
        double value = (double)(i + lane) * 1.25 + 0.001;
        int n = through ? omprpc_snprintf(text, sizeof text, "%d: %.6g %s", i, value, number)
                        : snprintf(text, sizeof text, "%d: %.6g %s", i, value, number);
        sum += n;
      } else {
        sum += through ? omprpc_libc_strtod(number, NULL) : strtod(number, NULL);
      }
    }
  }
  return sum;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s snprintf|strtod through|inplace N\n", argv[0]);
    return 2;
  }
  int snprintf_call = strcmp(argv[1], "snprintf") == 0;
  int through = strcmp(argv[2], "through") == 0;
  int calls = atoi(argv[3]);
  run(snprintf_call, through, calls / 10 + 1); /* warm up: threads, the server, the caches */
  double start = seconds();
  double sum = run(snprintf_call, through, calls);
  double elapsed = seconds() - start;
  printf("checksum: %.6e\n", sum);
  fprintf(stderr, "calls per second: %.0f\n", (double)calls * LANES / elapsed);
  return 0;
}
