/* User-defined host calls: handlers registered by the host program for user opcodes, one before any
 * target region and one after the device started, called from target regions with a packet and with
 * byte strings. */
#include "common.h"
#include "omprpc.h"
#include "omprpc_device.h"
#include <ctype.h>

#define OP_ADD 0x8001
#define OP_UPPER 0x8002
#define OP_LATE 0xfffe

static long calls_served = 0;

/* data[0] + data[1] + the registered offset. */
static void add_handler(omprpc_port *port, void *user_data) {
  omprpc_packet packets[64];
  uint32_t n = omprpc_port_recv(port, packets);
  for (uint32_t i = 0; i < n; i++)
    packets[i].data[0] = packets[i].data[0] + packets[i].data[1] + *(long *)user_data;
  omprpc_port_send(port, packets);
  calls_served++;
}

/* Replies with the string in upper case. */
static void upper_handler(omprpc_port *port, void *user_data) {
  (void)user_data;
  void *data[64];
  uint64_t sizes[64];
  uint32_t lanes = port->lanes;
  omprpc_port_recv_n(port, data, sizes);
  for (uint32_t lane = 0; lane < lanes; lane++)
    for (uint64_t i = 0; i < sizes[lane]; i++)
      ((char *)data[lane])[i] = (char)toupper(((char *)data[lane])[i]);
  omprpc_port_send_n(port, (const void *const *)data, sizes);
  for (uint32_t lane = 0; lane < lanes; lane++)
    free(data[lane]);
  calls_served++;
}

static void late_handler(omprpc_port *port, void *user_data) {
  omprpc_packet packet[64];
  omprpc_port_recv(port, packet);
  packet[0].data[0] = (uint64_t)(uintptr_t)user_data;
  omprpc_port_send(port, packet);
  calls_served++;
}

int main(void) {
  static long offset = 1000;
  if (OMPRPC_LOOKUP(omprpc_register_handler)(OP_ADD, add_handler, &offset) != 0 ||
      OMPRPC_LOOKUP(omprpc_register_handler)(OP_UPPER, upper_handler, NULL) != 0)
    return 1;
  long sum = 0;
  char shout[32] = {0};
  int on_device = 0;
#pragma omp target map(tofrom : sum, shout, on_device)
  {
    on_device = ON_DEVICE();
    omprpc_packet packet = {{20, 22}};
    omprpc_call(OP_ADD, &packet);
    sum = (long)packet.data[0];
    omprpc_call_bytes(OP_UPPER, "hello from the device", 22, shout, sizeof shout);
  }
  printf("ran on device: %d\n", on_device);
  printf("add: %ld\n", sum);
  printf("upper: %s\n", shout);

  /* Registered after the device started: takes effect for later kernels. */
  if (OMPRPC_LOOKUP(omprpc_register_handler)(OP_LATE, late_handler, (void *)(uintptr_t)77) != 0)
    return 1;
  long late = 0;
#pragma omp target map(tofrom : late)
  {
    omprpc_packet packet = {{0}};
    omprpc_call(OP_LATE, &packet);
    late = (long)packet.data[0];
  }
  printf("late handler: %ld\n", late);
  printf("calls served on the host: %ld\n", calls_served);
  return 0;
}
