/* target data, target enter/exit data (with delete) and target update to/from between host and device changes. */
#include "common.h"

#define N 16

static int sum(const int *v) {
  int s = 0;
  for (int i = 0; i < N; i++)
    s += v[i];
  return s;
}

int main(void) {
  int on_device = 0;
  int v[N];
  for (int i = 0; i < N; i++)
    v[i] = i;

  /* target data: the array stays on the device across regions; the host sees results at the end. */
#pragma omp target data map(tofrom : v)
  {
#pragma omp target map(tofrom : on_device)
    {
      on_device = ON_DEVICE();
      for (int i = 0; i < N; i++)
        v[i] += 100;
    }
    printf("inside data region, host sum: %d\n", sum(v));
#pragma omp target
    for (int i = 0; i < N; i++)
      v[i] *= 2;
  }
  printf("after data region, host sum: %d\n", sum(v));

  /* enter/exit data with updates in both directions. */
  int w[N];
  for (int i = 0; i < N; i++)
    w[i] = 1;
#pragma omp target enter data map(to : w)
  for (int i = 0; i < N; i++)
    w[i] = 5; /* host change, not yet on the device */
  int dev_sum = 0;
#pragma omp target map(tofrom : dev_sum)
  for (int i = 0; i < N; i++)
    dev_sum += w[i];
  printf("device sum before update to: %d\n", dev_sum);
#pragma omp target update to(w)
  dev_sum = 0;
#pragma omp target map(tofrom : dev_sum)
  for (int i = 0; i < N; i++) {
    dev_sum += w[i];
    w[i] = 7; /* device change, not yet on the host */
  }
  printf("device sum after update to: %d\n", dev_sum);
  printf("host sum before update from: %d\n", sum(w));
#pragma omp target update from(w[0:N / 2])
  printf("host sum after partial update from: %d\n", sum(w));
#pragma omp target update from(w)
  printf("host sum after update from: %d\n", sum(w));

  /* exit data with from copies back; delete drops without copying. */
#pragma omp target
  for (int i = 0; i < N; i++)
    w[i] = 9;
#pragma omp target exit data map(from : w)
  printf("host sum after exit data from: %d, present: %d\n", sum(w),
         omp_target_is_present(w, omp_get_default_device()));

  int z[N];
  for (int i = 0; i < N; i++)
    z[i] = 2;
#pragma omp target enter data map(to : z)
#pragma omp target
  for (int i = 0; i < N; i++)
    z[i] = 1000;
#pragma omp target exit data map(delete : z)
  printf("host sum after exit data delete: %d, present: %d\n", sum(z),
         omp_target_is_present(z, omp_get_default_device()));
  printf("ran on device: %d\n", on_device);
  return 0;
}
