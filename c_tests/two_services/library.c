/* An offloading library whose target region prints through host services. Built twice, as library 1
 * and library 2 (LIBRARY_ID), with images of different sizes (PADDING), so that a program can hold
 * both open at once or open one where the other was. */
#include "../common.h"
#include "omprpc_device.h"

#ifndef LIBRARY_ID
#error "LIBRARY_ID must be defined"
#endif
#ifndef PADDING
#define PADDING 2
#endif

static int calls = 0;
char library_padding[PADDING] = "\001";
#pragma omp declare target to(calls, library_padding)

int library_call(int x) {
  int result = -1;
#pragma omp target map(tofrom : result)
  {
    calls++;
    omprpc_printf("library %d, call %d on the %s: %d\n", LIBRARY_ID, calls,
                  omprpc_rpc_active() ? "device" : "host fallback", x);
    result = x + 100 * LIBRARY_ID + library_padding[0] - 1;
  }
  return result;
}
