/* A shared library with its own target region using host services: loaded on the same device as the
 * program's image, it must share the device's RPC client (one set of port locks). */
#include "omprpc_device.h"

void library_calls(int count) {
#pragma omp target teams distribute parallel for
  for (int i = 0; i < count; i++)
    omprpc_printf("library call %d\n", i);
}

int library_rpc_active(void) {
  int active = 0;
#pragma omp target map(from : active)
  active = omprpc_rpc_active();
  return active;
}
