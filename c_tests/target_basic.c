/* The smallest offload: a scalar mapped tofrom, and proof that the region ran on the device. */
#include "common.h"

int main(void) {
  int x = 1;
  int on_device = 0;
#pragma omp target map(tofrom : x, on_device)
  {
    x += 41;
    on_device = ON_DEVICE();
  }
  printf("x = %d\n", x);
  printf("ran on device: %d\n", on_device);
  printf("devices: %d\n", omp_get_num_devices());
  /* A program that uses no host services starts no RPC server thread. */
  printf("omprpc-rpc threads: %d\n", omprpc_test_threads_named("omprpc-rpc"));
  return 0;
}
