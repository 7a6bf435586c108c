/* map to/from/tofrom/alloc/delete, array sections, a struct's pointee section, and map(always, to:). */
#include "common.h"

struct vec {
  int n;
  int *data;
};

int main(void) {
  int on_device = 0;
  int a[8], b[8], c[8];
  for (int i = 0; i < 8; i++) {
    a[i] = i;
    b[i] = -1;
    c[i] = 10 * i;
  }
  /* to: device changes stay on the device; from: host gets device values; tofrom: both ways. */
#pragma omp target map(to : a) map(from : b) map(tofrom : c, on_device)
  {
    on_device = ON_DEVICE();
    for (int i = 0; i < 8; i++) {
      b[i] = a[i] * 2;
      c[i] += a[i];
      a[i] = 99;
    }
  }
  printf("to: a[7]=%d, from: b[7]=%d, tofrom: c[7]=%d\n", a[7], b[7], c[7]);

  /* alloc: device storage without copying, shared by two regions inside a data region. */
  int scratch[4] = {5, 5, 5, 5};
  int total = 0;
#pragma omp target data map(alloc : scratch)
  {
#pragma omp target
    for (int i = 0; i < 4; i++)
      scratch[i] = i + 1;
#pragma omp target map(tofrom : total)
    for (int i = 0; i < 4; i++)
      total += scratch[i];
  }
  printf("alloc: device total=%d, host scratch[0]=%d\n", total, scratch[0]);

  /* delete: removes the mapping even though it was entered twice. */
  int d = 3;
#pragma omp target enter data map(to : d)
#pragma omp target enter data map(to : d)
  int before = omp_target_is_present(&d, omp_get_default_device());
#pragma omp target exit data map(delete : d)
  int after = omp_target_is_present(&d, omp_get_default_device());
  printf("delete: present before=%d after=%d\n", before, after);

  /* Array sections: only the section travels. */
  int arr[40];
  for (int i = 0; i < 40; i++)
    arr[i] = i;
#pragma omp target map(tofrom : arr[10:20])
  for (int i = 10; i < 30; i++)
    arr[i] = -arr[i];
  int asum = 0;
  for (int i = 0; i < 40; i++)
    asum += arr[i];
  printf("section: arr[9]=%d arr[10]=%d arr[29]=%d arr[30]=%d sum=%d\n", arr[9], arr[10], arr[29],
         arr[30], asum);

  /* Struct with a pointer member: the pointee section is mapped and attached. */
  int storage[6] = {1, 2, 3, 4, 5, 6};
  struct vec v = {6, storage};
  int vsum = 0;
#pragma omp target map(to : v) map(tofrom : v.data[0:v.n]) map(tofrom : vsum)
  for (int i = 0; i < v.n; i++) {
    v.data[i] *= 3;
    vsum += v.data[i];
  }
  printf("struct pointee: sum=%d storage[5]=%d\n", vsum, storage[5]);

  /* always: a mapping that already exists is refreshed only with the always modifier. */
  int k = 1, seen_plain = 0, seen_always = 0;
#pragma omp target data map(to : k)
  {
    k = 2;
#pragma omp target map(to : k) map(from : seen_plain)
    seen_plain = k;
#pragma omp target map(always, to : k) map(from : seen_always)
    seen_always = k;
  }
  printf("always: plain saw %d, always saw %d\n", seen_plain, seen_always);
  printf("ran on device: %d\n", on_device);
  return 0;
}
