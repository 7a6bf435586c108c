/* The device header's warp code, run on the host: built with -DOMPRPC_SIMULATED_LANES=N (32 or 64) and
 * run with OMPRPC_HOST_RPC_LANES=N, the N threads of a parallel region inside the target region play
 * the lanes of one warp, so that leader election, per-lane packets, and byte strings and printf
 * strings of different lengths per lane go through the real plugin, server and serving thread exactly
 * as on a GPU. Prints what the lanes got back, for the test to check. */
#include "common.h"
#include "omprpc.h"
#include "omprpc_device.h"

#define OP_SCALE 0x8301
#define OP_REVERSE 0x8302

/* Each lane's packet: data[0] * data[1] + lane index the handler saw. */
static void scale(omprpc_port *port, void *user_data) {
  (void)user_data;
  omprpc_packet packets[64];
  uint32_t n = omprpc_port_recv(port, packets);
  for (uint32_t i = 0; i < n; i++)
    packets[i].data[0] = packets[i].data[0] * packets[i].data[1] + 1000 * i;
  omprpc_port_send(port, packets);
}

/* Each lane's byte string, reversed. */
static void reverse(omprpc_port *port, void *user_data) {
  (void)user_data;
  void *data[64];
  uint64_t sizes[64];
  omprpc_port_recv_n(port, data, sizes);
  for (uint32_t lane = 0; lane < port->lanes; lane++) {
    char *s = (char *)data[lane];
    for (uint64_t i = 0; i < sizes[lane] / 2; i++) {
      char t = s[i];
      s[i] = s[sizes[lane] - 1 - i];
      s[sizes[lane] - 1 - i] = t;
    }
  }
  omprpc_port_send_n(port, (const void *const *)data, sizes);
  for (uint32_t lane = 0; lane < port->lanes; lane++)
    free(data[lane]);
}

#pragma omp declare target
static const char *const words[] = {
    "",
    "a",
    "word",
    "a string of more than fifty-six bytes, which needs a second packet to travel",
    "a string of more than one hundred and twenty bytes, which needs three packets to travel from the "
    "device to the host, and then some more",
};
#pragma omp end declare target

int main(void) {
  if (OMPRPC_LOOKUP(omprpc_register_handler)(OP_SCALE, scale, NULL) != 0 ||
      OMPRPC_LOOKUP(omprpc_register_handler)(OP_REVERSE, reverse, NULL) != 0)
    return 1;
  int lanes_seen = 0, rpc_active = 0;
  long scaled[OMPRPC_LANES], reversed_ok[OMPRPC_LANES], malloc_ok[OMPRPC_LANES], printed[OMPRPC_LANES];
#pragma omp target map(from : lanes_seen, rpc_active, scaled, reversed_ok, malloc_ok, printed)
#pragma omp parallel num_threads(OMPRPC_LANES)
  {
    int lane = omp_get_thread_num();
    if (lane == 0) {
      lanes_seen = omp_get_num_threads();
      rpc_active = omprpc_rpc_active();
    }
    const char *word = words[lane % 5];
    printed[lane] = omprpc_printf("lane %2d: %s|%ld|%.3f|%c\n", lane, word, (long)lane * lane, lane / 8.0, 'A' + lane % 26);

    omprpc_packet packet = {{(uint64_t)lane + 1, 3}};
    omprpc_call(OP_SCALE, &packet);
    scaled[lane] = (long)packet.data[0];

    char text[256], back[256];
    int len = (lane * 7) % 200;
    for (int i = 0; i < len; i++)
      text[i] = (char)('a' + (lane + i) % 26);
    uint64_t got = omprpc_call_bytes(OP_REVERSE, text, (uint64_t)len, back, sizeof back);
    int ok = got == (uint64_t)len;
    for (int i = 0; ok && i < len; i++)
      ok = back[i] == text[len - 1 - i];
    reversed_ok[lane] = ok;

    long *block = (long *)omprpc_malloc(sizeof(long) * (size_t)(1 + lane));
    malloc_ok[lane] = block != NULL;
    if (block) {
      block[lane] = lane;
      malloc_ok[lane] = block[lane] == lane;
      omprpc_free(block);
    }
  }
  printf("lanes %d, rpc %d\n", lanes_seen, rpc_active);
  for (int lane = 0; lane < OMPRPC_LANES; lane++)
    printf("lane %2d: printed %ld, scaled %ld, reversed %ld, malloc %ld\n", lane, printed[lane], scaled[lane],
           reversed_ok[lane], malloc_ok[lane]);
  return 0;
}
