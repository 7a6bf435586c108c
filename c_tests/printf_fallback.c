/* omprpc_printf where no omprpc server is attached (the stock plugin): the header prints with the
 * host's stdio, and each call must still be one write, whole lines from 8 host threads at once.
 *   printf_fallback [CALLS]   CALLS lines per thread (default 2000) */
#include "common.h"
#include "omprpc_device.h"

int main(int argc, char **argv) {
  int calls = argc > 1 ? atoi(argv[1]) : 2000;
#pragma omp parallel num_threads(8)
  {
    int thread = omp_get_thread_num();
#pragma omp target map(to : thread, calls)
    for (int i = 0; i < calls; ++i)
      omprpc_printf("thread %d call %d value %.1f text %s %c end\n", thread, i, i * 0.5, "abcdefghijklmnop", 'x');
  }
  return 0;
}
