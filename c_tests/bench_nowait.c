/* nowait throughput benchmark: argv[1] host threads, argv[2] target nowait regions per thread, each
 * depending on the one before it on its thread (depend(inout) on the thread's own counter). Prints
 * nanoseconds per region over all threads, and checks every region ran once, in order. */
#include "common.h"

int main(int argc, char **argv) {
  if (argc != 3)
    return 2;
  int threads = atoi(argv[1]);
  long regions = atol(argv[2]);
  long counters[64] = {0};
  if (threads < 1 || threads > 64)
    return 2;
#pragma omp target /* warm up: device init, image load */
  {
  }
  double start = omp_get_wtime();
#pragma omp parallel num_threads(threads)
  {
    long *mine = &counters[omp_get_thread_num()];
    for (long i = 0; i < regions; i++) {
#pragma omp target nowait depend(inout : mine[0]) map(tofrom : mine[0:1]) firstprivate(i)
      {
        if (mine[0] == i)
          mine[0]++;
      }
    }
#pragma omp taskwait
  }
  double seconds = omp_get_wtime() - start;
  printf("ns per region: %.1f\n", seconds * 1e9 / (double)(regions * threads));
  for (int t = 0; t < threads; t++)
    if (counters[t] != regions) {
      printf("thread %d ran %ld of %ld regions in order\n", t, counters[t], regions);
      return 1;
    }
  return 0;
}
