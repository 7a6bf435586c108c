/* An offloading library that a program without OpenMP opens with dlopen (the way a Python extension
 * or a plugin host loads one). A declare target counter shows whether a reopened library starts
 * afresh, as with the stock plugin. */
#include "../common.h"

static int calls = 0;
#pragma omp declare target to(calls)

int offload_compute(int x) {
  int result = 0, on_device = 0;
#pragma omp target map(tofrom : result, on_device)
  {
    calls++;
    result = x * 2 + calls;
    on_device = !omp_is_initial_device();
  }
  return on_device ? result : -1;
}
