/* Eight host threads, each running a chain of `target nowait` regions with depend(inout) on every
 * device at once: each chain's regions must run one at a time and in order (each step folds its index
 * into the chain's value, so a step lost, repeated or reordered changes it), and the chains of the
 * other threads and devices must not disturb each other. argv[1]: steps per chain (default 50; the
 * load test in tests/load.rs runs more). */
#include "common.h"

#define THREADS 8
#define MAX_DEVICES 16

static int STEPS = 50;

static unsigned chain_value(int thread, int device) {
  unsigned v = (unsigned)(thread * 131 + device);
  for (int k = 0; k < STEPS; k++)
    v = v * 31u + (unsigned)k;
  return v;
}

int main(int argc, char **argv) {
  if (argc > 1)
    STEPS = atoi(argv[1]);
  int devices = omp_get_num_devices();
  if (devices > MAX_DEVICES)
    devices = MAX_DEVICES;
  static unsigned value[THREADS][MAX_DEVICES];
  int ran_on_device[THREADS][MAX_DEVICES] = {{0}};
#pragma omp parallel num_threads(THREADS)
  {
    int t = omp_get_thread_num();
    for (int d = 0; d < devices; d++)
      value[t][d] = (unsigned)(t * 131 + d);
    for (int k = 0; k < STEPS; k++) {
      for (int d = 0; d < devices; d++) {
        unsigned *cell = &value[t][d];
        int *where = &ran_on_device[t][d];
#pragma omp target nowait device(d) map(tofrom : cell[0:1], where[0:1]) depend(inout : cell[0])
        {
          cell[0] = cell[0] * 31u + (unsigned)k;
          where[0] += ON_DEVICE();
        }
      }
    }
#pragma omp taskwait
  }
  int in_order = 0, on_device = 0;
  for (int t = 0; t < THREADS; t++)
    for (int d = 0; d < devices; d++) {
      in_order += value[t][d] == chain_value(t, d);
      on_device += ran_on_device[t][d] == STEPS;
    }
  /* "all" rather than a count, so that the expected output holds whatever the device count. */
  int chains = THREADS * devices;
  printf("devices: %d\n", devices);
  if (in_order == chains)
    printf("chains in order: all\n");
  else
    printf("chains in order: %d of %d\n", in_order, chains);
  if (on_device == chains)
    printf("chains run on their device: all\n");
  else
    printf("chains run on their device: %d of %d\n", on_device, chains);
  return 0;
}
