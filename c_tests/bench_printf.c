/* printf throughput from device code (run by benches/printf.rs): `library N` prints N lines per lane
 * through the device library's printf (__llvm_omp_vprintf, handed the argument struct clang-16 builds
 * for the call), `header N` the same lines through omprpc_device.h's omprpc_printf. One lane, or the
 * lanes of a simulated warp (built with -DOMPRPC_SIMULATED_LANES=32 or 64), print at once. `scan N`
 * does only the device's own part of the library's printf, N times on one thread: reading the format
 * for the strings and laying out the request in packets, with no exchange. The lines go to stdout;
 * the figure, lines per second, to stderr. */
#include <stdint.h>
#include <time.h>

#include "common.h"

#define OMPRPC_LIBC_PREFIX 1
#include "../device/omprpc_libc.c"

#ifdef OMPRPC_SIMULATED_LANES
#define LANES OMPRPC_SIMULATED_LANES
#else
#define LANES 1
#endif

#define FORMAT "line %d of lane %d: %s %f\n"

struct line_args {
  int i, lane;
  const char *word;
  double value;
};

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Each lane prints `lines` lines, through the library or the header; the lines printed in all. */
static long print_lines(int library, int lines) {
  long printed = 0;
#pragma omp target map(tofrom : printed)
#pragma omp parallel num_threads(LANES) reduction(+ : printed)
  {
    int lane = omp_get_thread_num();
    for (int i = 0; i < lines; ++i) {
      if (library) {
        struct line_args args = {i, lane, "word", i * 0.5};
        printed += omprpc_libc___llvm_omp_vprintf(FORMAT, &args, sizeof args) > 0;
      } else {
        printed += omprpc_printf(FORMAT, i, lane, "word", i * 0.5) > 0;
      }
    }
  }
  return printed;
}

/* The device's part of `lines` printf calls, as the library makes it: the request's bytes, in packets. */
static long scan_lines(int lines) {
  long bytes = 0;
  for (int i = 0; i < lines; ++i) {
    struct line_args args = {i, 0, "word", i * 0.5};
    omprpc_request_ request;
    uint64_t size = omprpc_request_start_(&request, OMPRPC_STDOUT, FORMAT, &args, sizeof args);
    char packet[64];
    omprpc_request_take_(&request, packet + 8, 56);
    for (uint64_t at = 56; at < size; at += 64)
      omprpc_request_take_(&request, packet, 64);
    __asm__ volatile("" : : "r"(packet) : "memory"); /* the packets count as sent */
    bytes += (long)size;
  }
  return bytes;
}

int main(int argc, char **argv) {
  const char *mode = argc == 3 ? argv[1] : "";
  if (strcmp(mode, "library") != 0 && strcmp(mode, "header") != 0 && strcmp(mode, "scan") != 0) {
    fprintf(stderr, "usage: %s library|header|scan LINES\n", argv[0]);
    return 2;
  }
  int library = strcmp(mode, "library") == 0, lines = atoi(argv[2]);
  if (strcmp(mode, "scan") == 0) {
    scan_lines(lines / 10 + 1);
    double start = seconds();
    long bytes = scan_lines(lines);
    double elapsed = seconds() - start;
    fprintf(stderr, "request bytes: %ld\nlines per second: %.0f\n", bytes, lines / elapsed);
    return 0;
  }
  print_lines(library, lines / 10 + 1); /* warm up: the image loaded, the port's window open */
  double start = seconds();
  long printed = print_lines(library, lines);
  double elapsed = seconds() - start;
  fflush(stdout);
  if (printed != (long)lines * LANES) {
    fprintf(stderr, "printed %ld lines of %ld\n", printed, (long)lines * LANES);
    return 1;
  }
  fprintf(stderr, "lines per second: %.0f\n", (double)printed / elapsed);
  return 0;
}
