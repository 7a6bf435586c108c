/* omprpc_stats_print(): a program prints the statistics of its host calls when it wants them (5 calls
 * after the first kernel), and OMPRPC_STATS=1 prints them again at exit (12 calls in all). */
#include "common.h"
#include "omprpc.h"
#include "omprpc_device.h"

#define OP_TWICE 0x8123

static void twice(omprpc_port *port, void *user_data) {
  (void)user_data;
  omprpc_packet packets[64];
  uint32_t n = omprpc_port_recv(port, packets);
  for (uint32_t i = 0; i < n; i++)
    packets[i].data[0] *= 2;
  omprpc_port_send(port, packets);
}

static long run(int calls) {
  long sum = 0;
#pragma omp target map(tofrom : sum)
  for (int i = 0; i < calls; i++) {
    omprpc_packet packet = {{(uint64_t)i}};
    omprpc_call(OP_TWICE, &packet);
    sum += (long)packet.data[0];
  }
  return sum;
}

int main(void) {
  if (!OMPRPC_LOOKUP(omprpc_register_handler) || OMPRPC_LOOKUP(omprpc_register_handler)(OP_TWICE, twice, NULL))
    return 3;
  long first = run(5);
  fflush(stdout);
  if (OMPRPC_LOOKUP(omprpc_stats_print)() != 0)
    return 4;
  long second = run(7);
  printf("%ld %ld\n", first, second);
  return first == 20 && second == 42 ? 0 : 1;
}
