/* A device that calls exit(status): the host process must end with that status, with everything the
 * device wrote before (to stdout and to a file, argv[1]) flushed, and without hanging in teardown.
 * argv[2] "nowait" calls exit from a nowait region while the host thread waits in taskwait; "threads"
 * from a nowait region of one of four host threads while the three others wait in taskwait for
 * nowait regions that keep calling the host and never end. */
#include "common.h"
#include "omprpc_device.h"

int main(int argc, char **argv) {
  if (argc < 3)
    return 2;
  const char *path = argv[1];
  int nowait = strcmp(argv[2], "nowait") == 0;
  int threads = strcmp(argv[2], "threads") == 0;
  printf("host: before the target region\n");
  fflush(stdout);
  if (threads) {
#pragma omp parallel num_threads(4)
    {
      if (omp_get_thread_num() == 0) {
#pragma omp target nowait map(to : path[0:strlen(path) + 1])
        {
          for (int i = 0; i < 1000; i++) /* the other regions are running by now */
            omprpc_fflush(OMPRPC_STDOUT);
          omprpc_printf("device: line %d\n", 1);
          omprpc_file *f = omprpc_fopen(path, "w");
          omprpc_fprintf(f, "written by the device before exit\n");
          omprpc_printf("device: line %d\n", 2);
          omprpc_exit(3);
        }
      } else {
#pragma omp target nowait
        for (;;)
          omprpc_fflush(OMPRPC_STDOUT);
      }
#pragma omp taskwait
    }
  }
#pragma omp parallel num_threads(2)
#pragma omp single
  {
    if (nowait) {
#pragma omp target nowait map(to : path[0:strlen(path) + 1])
      {
        omprpc_printf("device: line %d\n", 1);
        omprpc_file *f = omprpc_fopen(path, "w");
        omprpc_fprintf(f, "written by the device before exit\n");
        omprpc_printf("device: line %d\n", 2);
        omprpc_exit(3);
      }
#pragma omp taskwait
    } else {
#pragma omp target map(to : path[0:strlen(path) + 1])
      {
        omprpc_printf("device: line %d\n", 1);
        omprpc_file *f = omprpc_fopen(path, "w");
        omprpc_fprintf(f, "written by the device before exit\n");
        omprpc_printf("device: line %d\n", 2);
        omprpc_exit(3);
      }
    }
  }
  printf("host: not reached\n");
  return 0;
}
