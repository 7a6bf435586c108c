/* A device that calls a user opcode nobody registered: the plugin must report the opcode and end
 * the program with an error instead of leaving the device thread waiting forever. */
#include "common.h"
#include "omprpc_device.h"

int main(void) {
#pragma omp target
  {
    omprpc_puts("device: calling opcode 0x9abc");
    omprpc_packet packet = {{1}};
    omprpc_call(0x9abc, &packet);
    omprpc_puts("device: not reached");
  }
  printf("host: not reached\n");
  return 0;
}
