/* Calls of one user opcode from four host threads' nowait regions at once: the handler, which keeps
 * unprotected state of its own, must see them one at a time, whichever threads serve them. Prints
 * the most calls it saw inside at once, the calls served, and a checksum of the replies. */
#include "common.h"
#include "omprpc.h"
#include "omprpc_device.h"
#include <stdatomic.h>
#include <unistd.h>

#define OP_COUNT 0x8123
#define THREADS 4
#define REGIONS 50

static atomic_int inside = 0;
static int most_inside = 0;
static long served = 0; /* deliberately not atomic: serialisation makes it exact */

static void count_handler(omprpc_port *port, void *user_data) {
  (void)user_data;
  int now = atomic_fetch_add(&inside, 1) + 1;
  if (now > most_inside)
    most_inside = now;
  omprpc_packet packets[64];
  uint32_t n = omprpc_port_recv(port, packets);
  usleep(200); /* widen the window in which another thread could enter */
  for (uint32_t i = 0; i < n; i++)
    packets[i].data[0] = ++served;
  omprpc_port_send(port, packets);
  atomic_fetch_sub(&inside, 1);
}

int main(void) {
  if (OMPRPC_LOOKUP(omprpc_register_handler)(OP_COUNT, count_handler, NULL) != 0)
    return 1;
  long replies[THREADS][REGIONS] = {{0}};
#pragma omp parallel num_threads(THREADS)
  {
    int t = omp_get_thread_num();
    for (int r = 0; r < REGIONS; r++) {
      long *reply = &replies[t][r];
#pragma omp target map(from : reply[0:1]) nowait
      {
        omprpc_packet packet = {{0}};
        omprpc_call(OP_COUNT, &packet);
        reply[0] = (long)packet.data[0];
      }
    }
#pragma omp taskwait
  }
  long sum = 0;
  for (int t = 0; t < THREADS; t++)
    for (int r = 0; r < REGIONS; r++)
      sum += replies[t][r];
  printf("most calls inside the handler at once: %d\n", most_inside);
  printf("calls served: %ld\n", served);
  printf("replies sum: %ld\n", sum); /* 1 + 2 + ... + 200 when every reply is distinct */
  return 0;
}
