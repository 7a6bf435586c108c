/* OMPRPC_WATCHDOG_MS: one host call whose handler takes 400 ms among quick ones, the region's last;
 * the watchdog names it (device, port, opcode, handler) once while it is open and once when it
 * finishes, though the program ends right after it. Built with -rdynamic by its test, so that the
 * handler's name can be found. */
#include "common.h"
#include "omprpc.h"
#include "omprpc_device.h"
#include <unistd.h>

#define OP_SLOW 0x8124
#define OP_QUICK 0x8125

void slow_handler(omprpc_port *port, void *user_data) {
  (void)user_data;
  omprpc_packet packets[64];
  omprpc_port_recv(port, packets);
  usleep(400 * 1000);
  omprpc_port_send(port, packets);
}

void quick_handler(omprpc_port *port, void *user_data) {
  (void)user_data;
  omprpc_packet packets[64];
  omprpc_port_recv(port, packets);
  omprpc_port_send(port, packets);
}

int main(void) {
  if (!OMPRPC_LOOKUP(omprpc_register_handler) || OMPRPC_LOOKUP(omprpc_register_handler)(OP_SLOW, slow_handler, NULL) ||
      OMPRPC_LOOKUP(omprpc_register_handler)(OP_QUICK, quick_handler, NULL))
    return 3;
  long sum = 0;
#pragma omp target map(tofrom : sum)
  {
    for (int i = 0; i < 100; i++) {
      omprpc_packet packet = {{(uint64_t)i}};
      omprpc_call(OP_QUICK, &packet);
      sum += (long)packet.data[0];
    }
    omprpc_packet packet = {{7}};
    omprpc_call(OP_SLOW, &packet);
    sum += (long)packet.data[0];
  }
  printf("sum: %ld\n", sum);
  return sum == 4957 ? 0 : 1;
}
