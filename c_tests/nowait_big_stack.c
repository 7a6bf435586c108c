/* A nowait region with 3 MiB of locals: the thread that runs it needs a main-thread-sized stack. */
#include "common.h"

int main(void) {
  long sum = 0;
  int on_device = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp target nowait map(tofrom : sum, on_device)
    {
      volatile char big[3 << 20];
      for (long i = 0; i < (long)sizeof big; i += 4096)
        big[i] = (char)(i / 4096);
      for (long i = 0; i < (long)sizeof big; i += 4096)
        sum += big[i];
      on_device = ON_DEVICE();
    }
#pragma omp taskwait
  }
  printf("sum: %ld\n", sum);
  printf("ran on device: %d\n", on_device);
  return 0;
}
