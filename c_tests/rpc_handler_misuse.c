/* Host handlers that break the exchange a device call expects (receive once, reply once): each wrong
 * step is refused with an error line (c_tests/rpc_handler_misuse.stderr), the device's call gets a
 * reply (empty, or its own request when nothing was received) and goes on, and a well-behaved call
 * after each one still works. Before, receiving twice hung or crashed the program. */
#include "common.h"
#include "omprpc.h"
#include "omprpc_device.h"

#define OP_TWICE 0x8101   /* receives twice, never replies */
#define OP_NOTHING 0x8102 /* neither receives nor replies */
#define OP_EARLY 0x8103   /* replies before receiving, then receives and replies twice */
#define OP_GOOD 0x8104    /* adds one */

static void receives_twice(omprpc_port *port, void *user_data) {
  (void)user_data;
  omprpc_packet p[64];
  omprpc_port_recv(port, p);
  omprpc_port_recv(port, p);
}

static void does_nothing(omprpc_port *port, void *user_data) { (void)port, (void)user_data; }

static void replies_early(omprpc_port *port, void *user_data) {
  (void)user_data;
  omprpc_packet p[64] = {{{0}}};
  omprpc_port_send(port, p);
  uint32_t n = omprpc_port_recv(port, p);
  for (uint32_t i = 0; i < n; i++)
    p[i].data[0] *= 2;
  omprpc_port_send(port, p);
  omprpc_port_send(port, p);
}

static void adds_one(omprpc_port *port, void *user_data) {
  (void)user_data;
  omprpc_packet p[64];
  uint32_t n = omprpc_port_recv(port, p);
  for (uint32_t i = 0; i < n; i++)
    p[i].data[0] += 1;
  omprpc_port_send(port, p);
}

int main(void) {
  if (OMPRPC_LOOKUP(omprpc_register_handler)(OP_TWICE, receives_twice, NULL) != 0 ||
      OMPRPC_LOOKUP(omprpc_register_handler)(OP_NOTHING, does_nothing, NULL) != 0 ||
      OMPRPC_LOOKUP(omprpc_register_handler)(OP_EARLY, replies_early, NULL) != 0 ||
      OMPRPC_LOOKUP(omprpc_register_handler)(OP_GOOD, adds_one, NULL) != 0)
    return 1;
  long results[6] = {0};
#pragma omp target map(tofrom : results)
  {
    uint16_t ops[3] = {OP_TWICE, OP_NOTHING, OP_EARLY};
    for (int i = 0; i < 3; i++) {
      omprpc_packet p = {{21}};
      omprpc_call(ops[i], &p);
      results[2 * i] = (long)p.data[0];
      omprpc_packet q = {{41}};
      omprpc_call(OP_GOOD, &q);
      results[2 * i + 1] = (long)q.data[0];
    }
  }
  printf("receives twice: %ld, then a good call: %ld\n", results[0], results[1]);
  printf("does nothing: %ld, then a good call: %ld\n", results[2], results[3]);
  printf("replies early and twice: %ld, then a good call: %ld\n", results[4], results[5]);
  return 0;
}
