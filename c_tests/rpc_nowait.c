/* Host services from nowait target regions: a dependency chain of regions that print through the
 * host, and a long RPC-heavy region that writes a file while the host thread is busy elsewhere. */
#include "common.h"
#include "omprpc_device.h"

static double busy_host_work(void) {
  double x = 0;
  for (long i = 1; i < 20000000; i++)
    x += 1.0 / (double)i;
  return x;
}

int main(void) {
  const char *path = "omprpc_rpc_nowait.txt";
  int stage = 0;
  double harmonic = 0;
#pragma omp parallel
#pragma omp single
  {
#pragma omp target nowait map(tofrom : stage) depend(out : stage)
    {
      omprpc_printf("stage %d: first region\n", stage);
      stage++;
    }
#pragma omp target nowait map(tofrom : stage) depend(inout : stage)
    {
      omprpc_printf("stage %d: second region\n", stage);
      stage++;
    }
#pragma omp target nowait depend(out : path)
    {
      omprpc_file *f = omprpc_fopen(path, "w");
      for (int i = 0; i < 2000; i++)
        omprpc_fprintf(f, "line %d\n", i);
      omprpc_fclose(f);
    }
    harmonic = busy_host_work();
#pragma omp taskwait
  }
  FILE *f = fopen(path, "r");
  int lines = 0, last = -1;
  char buf[64];
  while (f && fgets(buf, sizeof buf, f)) {
    lines++;
    sscanf(buf, "line %d", &last);
  }
  if (f)
    fclose(f);
  remove(path);
  printf("stages: %d\n", stage);
  printf("file lines: %d, last: %d\n", lines, last);
  printf("host work done: %d\n", harmonic > 16.0);
  return 0;
}
