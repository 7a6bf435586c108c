/* The device code behind the cubins in tests/data/nvptx: a small OpenMP program whose NVPTX image has what
 * the CUDA backend's tests need from a real cubin — kernels in SPMD and generic mode with their
 * _exec_mode bytes, a declare target global, the device environment, and the RPC client symbol of
 * the device header. scripts/make-nvptx-test-images.sh builds it and extracts the images. */
#include "omprpc_device.h"
#include <omp.h>
#include <stdio.h>

int counter = 5;
#pragma omp declare target to(counter)

int main(void) {
  int sum = 0;
  /* SPMD: every thread runs the loop body. */
#pragma omp target teams distribute parallel for reduction(+ : sum) map(tofrom : sum)
  for (int i = 0; i < 1000; ++i)
    sum += i;
  int seen = 0;
  /* Generic: one thread per team runs the region and calls the host. */
#pragma omp target map(from : seen)
  {
    counter += 1;
    seen = counter;
    omprpc_printf("device: counter %d\n", counter);
  }
  printf("sum %d seen %d\n", sum, seen);
  return !(sum == 499500 && seen == 6);
}
