/* omprpc's example: an ordinary OpenMP offloading program whose target regions use host services.
 * Built with
 *   clang-16 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -I include hello_offload.c -o hello_offload
 * it runs its target regions on whichever plugin libomptarget loads. Through omprpc, the device's
 * printf, file writes and malloc are carried to the host over LLVM libc's RPC protocol; at the end the
 * program says which plugin served it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "omprpc_device.h"

#define N 1000000

static double x[N], y[N];

int main(void) {
  for (int i = 0; i < N; i++) {
    x[i] = i;
    y[i] = 1.0;
  }
  int devices = omp_get_num_devices();
  int on_device = 0, served = 0;
  double sum = 0.0;
#pragma omp target teams distribute parallel for map(to : x) map(tofrom : y) reduction(+ : sum)
  for (int i = 0; i < N; i++) {
    y[i] += 2.0 * x[i];
    sum += y[i];
  }
#pragma omp target map(from : on_device, served) map(to : sum)
  {
    on_device = !omp_is_initial_device();
    served = omprpc_rpc_active();
    /* Host services from the device: printf, a file, malloc. */
    omprpc_printf("device: saxpy checksum %.0f\n", sum);
    double *squares = (double *)omprpc_malloc(10 * sizeof(double));
    omprpc_file *f = omprpc_fopen("hello_offload.txt", "w");
    for (int i = 0; i < 10; i++) {
      squares[i] = (double)i * i;
      omprpc_fprintf(f, "%d squared is %.0f\n", i, squares[i]);
    }
    omprpc_fclose(f);
    omprpc_free(squares);
    omprpc_printf("device: wrote hello_offload.txt\n");
  }

  printf("offload devices: %d\n", devices);
  printf("target region ran on a device: %s\n", on_device ? "yes" : "no");
  printf("saxpy checksum: %.0f (expected %.0f)\n", sum, (double)N + (double)N * (N - 1));
  printf("host services served over RPC: %s\n", served ? "yes" : "no");
  FILE *f = fopen("hello_offload.txt", "r");
  char line[64] = "";
  int lines = 0;
  while (f && fgets(line, sizeof line, f))
    lines++;
  if (f)
    fclose(f);
  remove("hello_offload.txt");
  line[strcspn(line, "\n")] = 0;
  printf("file written by the device: %d lines, the last \"%s\"\n", lines, line);

  const char *(*version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "omprpc_version");
  Dl_info where;
  if (version && dladdr((void *)version, &where))
    printf("served by omprpc %s, loaded from %s\n", version(), where.dli_fname);
  else
    printf("served by a stock plugin (omprpc is not loaded)\n");
  return !on_device;
}
