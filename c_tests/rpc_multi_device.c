/* Host services from every device: each device gets its own RPC server and its own copy of the
 * image's client, and all are served. */
#include "common.h"
#include "omprpc_device.h"

int main(void) {
  int n = omp_get_num_devices();
  for (int d = 0; d < n; d++) {
    long *block = NULL;
#pragma omp target device(d) map(from : block)
    {
      omprpc_printf("hello from device %d of %d\n", d, n);
      block = (long *)omprpc_malloc(sizeof(long));
      *block = d;
      omprpc_free(block);
    }
  }
  printf("devices served: %d\n", n);
  /* Two serving threads for every device: the scanner and one standing by for slow calls. */
  printf("omprpc-rpc threads: %d\n", omprpc_test_threads_named("omprpc-rpc"));
  return 0;
}
