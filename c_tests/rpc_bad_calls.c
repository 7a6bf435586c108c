/* Device-side calls with bad arguments get an error result, never a host crash: a stream that is
 * NULL (a failed fopen) or stdin where output is meant, a printf with %n (which would write through a
 * device pointer on the host: refused with an error line, nothing printed, -1), and the ' flag, which
 * the host's printf reads as a flag, with arguments that must still line up. */
#include "common.h"
#include "omprpc_device.h"

int main(void) {
  int results[8] = {0}, with_n = 0;
  long tell = 0;
#pragma omp target map(tofrom : results, tell, with_n)
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
    with_n = omprpc_printf("n:%n %d %s\n", &count, 77, "never printed");
    omprpc_printf("quote: %'d|%s\n", 5, "after");
  }
  printf("fopen failed: %d\n", results[0]);
  printf("fprintf to NULL: %d\n", results[1]);
  printf("fwrite to stdin: %d\n", results[2]);
  printf("fclose NULL: %d, fclose stdout: %d\n", results[3], results[4]);
  printf("fputs to NULL: %d, ftell NULL: %ld\n", results[5], tell);
  printf("printf with %%n: %d\n", with_n);
  return 0;
}
