/* A region whose last host call is a one-way free of a bad pointer: the host reports it before the
 * program's next statement, every time, because a region's calls are all served before the region is
 * reported done. */
#include "common.h"
#include "omprpc_device.h"

int main(void) {
  enum { ROUNDS = 200 };
  int on_device = 0;
  for (int round = 0; round < ROUNDS; round++) {
#pragma omp target map(tofrom : on_device)
    {
      void *block = omprpc_malloc(16);
      omprpc_free(block);
      omprpc_free((void *)0x10); /* never returned by the device's malloc */
      on_device = ON_DEVICE();
    }
    fprintf(stderr, "after region %d\n", round);
  }
  printf("rounds: %d, on the device: %d\n", ROUNDS, on_device);
  return 0;
}
