/* A device that calls abort(): the host process aborts, saying so on stderr, after the device's
 * earlier output. */
#include "common.h"
#include "omprpc_device.h"

int main(void) {
#pragma omp target
  {
    omprpc_puts("device: about to abort");
    omprpc_abort();
  }
  printf("host: not reached\n");
  return 0;
}
