/* Thousands of concurrent host calls from teams distribute parallel for: every line must arrive
 * exactly once (the test driver checks), and device malloc/free from many threads at once. */
#include "common.h"
#include "omprpc_device.h"

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 4000;
  long checksum = 0;
#pragma omp target teams distribute parallel for reduction(+ : checksum) map(tofrom : checksum)
  for (int i = 0; i < n; i++) {
    int *cell = (int *)omprpc_malloc(sizeof(int));
    *cell = i;
    omprpc_printf("call %d from team %d thread %d\n", *cell, omp_get_team_num(), omp_get_thread_num());
    checksum += *cell;
    omprpc_free(cell);
  }
  fflush(stdout);
  printf("checksum: %ld\n", checksum);
  return 0;
}
