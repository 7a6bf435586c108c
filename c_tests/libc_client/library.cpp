/* An offloading library whose device code prints through LLVM libc's own client (libc_calls.h); each
 * library has its own copy of libc's client object, as each image linked with libc does. */
#include "../common.h"
#include "libc_calls.h"

#ifndef LIBRARY_ID
#error "LIBRARY_ID must be defined"
#endif

/* Prints `count` lines "library ID round R line L" from the device; returns how many the host wrote. */
extern "C" long library_lines(int round, int count) {
  long written = 0;
#pragma omp target map(tofrom : written)
  for (int line = 0; line < count; ++line) {
    struct {
      int id, round, line;
    } args = {LIBRARY_ID, round, line};
    written += print(stdout, "library %d round %d line %d\n", args) > 0;
  }
  return written;
}
