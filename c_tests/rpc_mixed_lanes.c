/* Lanes of one warp making different calls at once, run on the host as a simulated warp (built with
 * -DOMPRPC_SIMULATED_LANES=32 or 64): the same call site writing to stdout, stderr or a file depending
 * on the lane (three opcodes), user calls of two opcodes from one call site, two branches of the warp
 * making different calls at the same time, and all of it again with only some lanes of the warp
 * active. Each lane numbers its lines and calls; the test checks that each reached its own stream or
 * handler exactly once, in the lane's order. The file is argv[1]. */
#include <stdint.h>

#include "common.h"
#include "omprpc.h"
#include "omprpc_device.h"

#define OP_EVEN 0x8311
#define OP_ODD 0x8312
#define CALLS 4

/* What each handler saw, per lane: the sequence numbers, in the order they arrived. */
static int seen[2][64][4 * CALLS];
static int seen_count[2][64];

/* Records each lane's call (data[0] the lane, data[1] its sequence number) and answers with the
 * sequence number times 10 plus the handler's own number, so that the lane can tell who answered. */
static void record(omprpc_port *port, void *user_data) {
  int which = (int)(intptr_t)user_data;
  omprpc_packet packets[64];
  uint32_t n = omprpc_port_recv(port, packets);
  for (uint32_t i = 0; i < n; i++) {
    int lane = (int)packets[i].data[0], sequence = (int)packets[i].data[1];
    if (lane >= 0 && lane < 64 && seen_count[which][lane] < 4 * CALLS)
      seen[which][lane][seen_count[which][lane]++] = sequence;
    packets[i].data[0] = (uint64_t)sequence * 10 + (uint64_t)which + 1;
  }
  omprpc_port_send(port, packets);
}

#pragma omp declare target
/* Whether `lane` takes part in round `round`: all lanes in round 0, those with lane % 5 != 2 in round 1. */
static int in_round(int lane, int round) { return round == 0 || lane % 5 != 2; }

/* Plays a branch: the lanes of the round for which `printing` matches (-1: all of them) go on
 * together, as a GPU's active mask after a branch would have them. */
static void enter_branch(int round, int printing) {
  uint64_t mask = 0;
  for (int lane = 0; lane < OMPRPC_LANES; ++lane)
    if (in_round(lane, round) && (printing < 0 || (lane % 4 == 0) == printing))
      mask |= (uint64_t)1 << lane;
  omprpc_simulated_active_[omprpc_lane_id_()] = mask;
}
#pragma omp end declare target

int main(int argc, char **argv) {
  char path[512];
  snprintf(path, sizeof path, "%s", argc > 1 ? argv[1] : "rpc_mixed_lanes.tmp");
  if (OMPRPC_LOOKUP(omprpc_register_handler)(OP_EVEN, record, (void *)0) != 0 ||
      OMPRPC_LOOKUP(omprpc_register_handler)(OP_ODD, record, (void *)1) != 0)
    return 1;
  int wrong_answers = 0, rpc_active = 0;
#pragma omp target map(tofrom : wrong_answers, rpc_active) map(to : path)
  {
    /* Opened and closed by one lane (the only thread outside the parallel region). */
    omprpc_file *streams[3] = {OMPRPC_STDOUT, OMPRPC_STDERR, omprpc_fopen(path, "w")};
#pragma omp parallel num_threads(OMPRPC_LANES)
  {
    int lane = omp_get_thread_num();
    if (lane == 0)
      rpc_active = omprpc_rpc_active();
    int sequence = 0, wrong = 0;
    for (int round = 0; round < 2; ++round) {
      /* Round 0: the whole warp; round 1: only the lanes with lane % 5 != 2. */
      if (in_round(lane, round)) {
        enter_branch(round, -1);
        /* One call site, three streams: WRITE_TO_STDOUT, WRITE_TO_STDERR, WRITE_TO_STREAM. */
        for (int k = 0; k < CALLS; ++k) {
          char line[64];
          int n = 0;
          const char *text = "lane ";
          while (*text)
            line[n++] = *text++;
          line[n++] = (char)('0' + lane / 10), line[n++] = (char)('0' + lane % 10);
          line[n++] = ' ', line[n++] = (char)('0' + round), line[n++] = (char)('0' + k), line[n++] = '\n';
          line[n] = 0;
          wrong += omprpc_fputs(line, streams[lane % 3]) != 0;
        }
        /* One call site, two user opcodes. */
        for (int k = 0; k < CALLS; ++k, ++sequence) {
          omprpc_packet packet = {{(uint64_t)lane, (uint64_t)sequence}};
          omprpc_call(lane % 2 ? OP_ODD : OP_EVEN, &packet);
          wrong += packet.data[0] != (uint64_t)sequence * 10 + (uint64_t)(lane % 2) + 1;
        }
        /* Two branches at once: printf in one, user calls in the other. */
        int printing = lane % 4 == 0;
        enter_branch(round, printing);
        if (printing) {
          for (int k = 0; k < CALLS; ++k)
            wrong += omprpc_fprintf(streams[lane % 3], "lane %02d %d%d printf\n", lane, round, k) != 18;
        } else {
          for (int k = 0; k < CALLS; ++k, ++sequence) {
            omprpc_packet packet = {{(uint64_t)lane, (uint64_t)sequence}};
            omprpc_call(lane % 2 ? OP_ODD : OP_EVEN, &packet);
            wrong += packet.data[0] != (uint64_t)sequence * 10 + (uint64_t)(lane % 2) + 1;
          }
        }
      }
      omprpc_simulated_active_[lane] = 0;
#pragma omp barrier
    }
#pragma omp atomic
    wrong_answers += wrong;
  }
    wrong_answers += omprpc_fclose(streams[2]) != 0;
  }
  printf("rpc %d, wrong answers %d\n", rpc_active, wrong_answers);
  for (int which = 0; which < 2; ++which)
    for (int lane = 0; lane < OMPRPC_LANES; ++lane) {
      if (!seen_count[which][lane])
        continue;
      printf("%s lane %02d:", which ? "odd" : "even", lane);
      for (int i = 0; i < seen_count[which][lane]; ++i)
        printf(" %d", seen[which][lane][i]);
      printf("\n");
    }
  return 0;
}
