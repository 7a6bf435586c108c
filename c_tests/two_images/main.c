/* The program half of the two-image test: its image and the library's image call the host at the same
 * time from the same device. */
#include "../common.h"
#include "omprpc_device.h"

void library_calls(int count);
int library_rpc_active(void);

int main(void) {
#pragma omp parallel sections num_threads(2)
  {
#pragma omp section
    library_calls(1000);
#pragma omp section
    {
#pragma omp target teams distribute parallel for
      for (int i = 0; i < 1000; i++)
        omprpc_printf("program call %d\n", i);
    }
  }
  int program_active = 0;
#pragma omp target map(from : program_active)
  program_active = omprpc_rpc_active();
  printf("program image served over RPC: %d\n", program_active);
  printf("library image served over RPC: %d\n", library_rpc_active());
  return 0;
}
