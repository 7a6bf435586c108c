/* A program that requires unified shared memory and reads a declare target global in a target region:
 * clang makes the device use the host's variable through G_decl_tgt_ref_ptr, which the plugin must
 * point at the host's G when it loads the image. Also a host array used on the device by address, and
 * memory from omp_target_alloc written on the device and read on the host. */
#include "common.h"

#pragma omp requires unified_shared_memory

#pragma omp begin declare target
struct S {
  int a;
  int b;
} G;
int table[4] = {1, 2, 3, 4};
#pragma omp end declare target

int main(void) {
  G.a = 7;
  G.b = 9;
  table[3] = 40;
  int sum = 0, table_sum = 0;
#pragma omp target map(tofrom : sum) map(to : G)
  { sum = G.a + G.b; }
  printf("sum=%d\n", sum);
#pragma omp target map(tofrom : table_sum)
  {
    for (int i = 0; i < 4; i++)
      table_sum += table[i];
    G.b = 90; /* the host's G */
  }
  printf("table sum=%d, G.b after the region=%d\n", table_sum, G.b);
  int *shared = (int *)omp_target_alloc(8 * sizeof(int), omp_get_default_device());
#pragma omp target is_device_ptr(shared)
  for (int i = 0; i < 8; i++)
    shared[i] = i * i;
  int total = 0;
#pragma omp target is_device_ptr(shared) map(tofrom : total)
  for (int i = 0; i < 8; i++)
    total += shared[i];
  printf("omp_target_alloc: %d\n", total);
  omp_target_free(shared, omp_get_default_device());
  return sum != 16;
}
