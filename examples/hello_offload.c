/* omprpc's example: an ordinary OpenMP offloading program. Built with
 *   clang-16 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu hello_offload.c -o hello_offload
 * it runs its target regions on whichever plugin libomptarget loads, and at the end says which one
 * served it, by looking for omprpc's exported version symbol. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>

#define N 1000000

static double x[N], y[N];

int main(void) {
  for (int i = 0; i < N; i++) {
    x[i] = i;
    y[i] = 1.0;
  }
  int devices = omp_get_num_devices();
  int on_device = 0;
  double sum = 0.0;
#pragma omp target teams distribute parallel for map(to : x) map(tofrom : y) reduction(+ : sum)
  for (int i = 0; i < N; i++) {
    y[i] += 2.0 * x[i];
    sum += y[i];
  }
#pragma omp target map(from : on_device)
  on_device = !omp_is_initial_device();

  printf("offload devices: %d\n", devices);
  printf("target region ran on a device: %s\n", on_device ? "yes" : "no");
  printf("saxpy checksum: %.0f (expected %.0f)\n", sum, (double)N + (double)N * (N - 1));

  const char *(*version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "omprpc_version");
  Dl_info where;
  if (version && dladdr((void *)version, &where))
    printf("served by omprpc %s, loaded from %s\n", version(), where.dli_fname);
  else
    printf("served by a stock plugin (omprpc is not loaded)\n");
  return !on_device;
}
