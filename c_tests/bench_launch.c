/* Launch-cost benchmark: argv[1] is "empty" (an empty target region) or "scalar" (one scalar mapped
 * tofrom), argv[2] the number of timed launches. Prints nanoseconds per launch. */
#include "common.h"

__attribute__((noinline)) static void empty_region(void) {
#pragma omp target
  {
  }
}

__attribute__((noinline)) static void scalar_region(long *value) {
#pragma omp target map(tofrom : value[0:1])
  value[0]++;
}

int main(int argc, char **argv) {
  if (argc != 3)
    return 2;
  int scalar = strcmp(argv[1], "scalar") == 0;
  long count = atol(argv[2]);
  long value = 0;
  for (int i = 0; i < 1000; i++) /* warm up: device init, image load, first-touch */
    scalar ? scalar_region(&value) : empty_region();
  double start = omp_get_wtime();
  for (long i = 0; i < count; i++)
    scalar ? scalar_region(&value) : empty_region();
  double seconds = omp_get_wtime() - start;
  printf("ns per launch: %.1f\n", seconds * 1e9 / (double)count);
  return scalar && value != count + 1000;
}
