/* One device's slow host call must not hold up another device's calls. A handler on device 0 holds
 * its call until the other host thread is done (at most 30 s), while that thread runs ten regions of
 * 1,000 feof calls each on device 1 (OMPRPC_HOST_DEVICES=2). Prints how long device 1's regions took
 * and whether the slow call was still held when they were done. */
#include "common.h"
#include "omprpc.h"
#include "omprpc_device.h"
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#define OP_SLOW 0x8177
#define REGIONS 10
#define CALLS 1000

static atomic_int slow_call_started, others_done, slow_call_finished;

static void slow_handler(omprpc_port *port, void *user_data) {
  (void)user_data;
  omprpc_packet packets[64];
  omprpc_port_recv(port, packets);
  atomic_store(&slow_call_started, 1);
  for (int waited_ms = 0; !atomic_load(&others_done) && waited_ms < 30000; waited_ms++)
    usleep(1000);
  atomic_store(&slow_call_finished, 1);
  omprpc_port_send(port, packets);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(void) {
  if (omp_get_num_devices() < 2 || OMPRPC_LOOKUP(omprpc_register_handler)(OP_SLOW, slow_handler, NULL) != 0)
    return 1;
  double took = 0;
  int held = 0, eof_seen = 0;
#pragma omp parallel num_threads(2)
  {
    if (omp_get_thread_num() == 0) {
#pragma omp target device(0)
      {
        omprpc_packet packet = {{1}};
        omprpc_call(OP_SLOW, &packet);
      }
    } else {
      while (!atomic_load(&slow_call_started))
        usleep(1000);
      double start = now_s();
      for (int r = 0; r < REGIONS; r++) {
#pragma omp target device(1) map(tofrom : eof_seen)
        for (int i = 0; i < CALLS; i++)
          eof_seen += omprpc_feof(OMPRPC_STDIN) != 0;
      }
      took = now_s() - start;
      held = !atomic_load(&slow_call_finished);
      atomic_store(&others_done, 1);
    }
  }
  printf("device 1's %d calls took %.3f s; the slow call was %s\n", REGIONS * CALLS, took,
         held ? "still held" : "already finished");
  return 0;
}
