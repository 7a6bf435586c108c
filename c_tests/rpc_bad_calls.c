/* Device-side calls with bad arguments get an error result, never a host crash: a stream that is
 * NULL (a failed fopen) or stdin where output is meant, and printf conversions that read no argument
 * on the host (%n, an unknown flag) followed by arguments that must still line up. */
#include "common.h"
#include "omprpc_device.h"

int main(void) {
  int results[8] = {0};
  long tell = 0;
#pragma omp target map(tofrom : results, tell)
  {
    omprpc_file *missing = omprpc_fopen("/nonexistent-dir/file.txt", "r");
    results[0] = missing == NULL;
    results[1] = omprpc_fprintf(missing, "lost %d\n", 1);
    results[2] = (int)omprpc_fwrite("x", 1, 1, OMPRPC_STDIN);
    results[3] = omprpc_fclose(missing);
    results[4] = omprpc_fclose(OMPRPC_STDOUT);
    results[5] = omprpc_fputs("lost\n", missing);
    tell = omprpc_ftell(missing);
    int count = 0;
    omprpc_printf("n:%n %d %s\n", &count, 77, "still lined up");
    omprpc_printf("quote: %'d|%s\n", 5, "after");
  }
  printf("fopen failed: %d\n", results[0]);
  printf("fprintf to NULL: %d\n", results[1]);
  printf("fwrite to stdin: %d\n", results[2]);
  printf("fclose NULL: %d, fclose stdout: %d\n", results[3], results[4]);
  printf("fputs to NULL: %d, ftell NULL: %ld\n", results[5], tell);
  return 0;
}
