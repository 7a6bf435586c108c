/* reduction(+), reduction(max) and reduction(*) on int and double in target teams distribute parallel for. */
#include "common.h"

#define N 5000

int main(void) {
  static int iv[N];
  static double dv[N];
  for (int i = 0; i < N; i++) {
    iv[i] = (i * 37) % 1001 - 500;
    dv[i] = (double)((i * 53) % 997) * 0.5;
  }
  int isum = 0, imax = -1000000, on_device = 0;
  double dsum = 0.0, dmax = -1.0e9;
#pragma omp target teams distribute parallel for map(to : iv, dv) \
    reduction(+ : isum, dsum) reduction(max : imax, dmax) map(tofrom : on_device)
  for (int i = 0; i < N; i++) {
    if (i == 0)
      on_device = ON_DEVICE();
    isum += iv[i];
    dsum += dv[i];
    imax = iv[i] > imax ? iv[i] : imax;
    dmax = dv[i] > dmax ? dv[i] : dmax;
  }

  /* Products: powers of two keep the double product exact whatever the combination order. */
  int iprod = 1;
  double dprod = 1.0;
#pragma omp target teams distribute parallel for reduction(* : iprod, dprod)
  for (int i = 0; i < 30; i++) {
    iprod *= (i % 10 == 0) ? 2 : 1;
    dprod *= (i % 3 == 0) ? 2.0 : ((i % 3 == 1) ? 0.5 : 1.5);
  }

  /* Host reference values. */
  int hsum = 0, hmax = -1000000;
  double hdsum = 0.0, hdmax = -1.0e9, hdprod = 1.0;
  for (int i = 0; i < N; i++) {
    hsum += iv[i];
    hdsum += dv[i];
    hmax = iv[i] > hmax ? iv[i] : hmax;
    hdmax = dv[i] > hdmax ? dv[i] : hdmax;
  }
  for (int i = 0; i < 30; i++)
    hdprod *= (i % 3 == 0) ? 2.0 : ((i % 3 == 1) ? 0.5 : 1.5);

  printf("int sum: %d (host %d)\n", isum, hsum);
  printf("int max: %d (host %d)\n", imax, hmax);
  printf("double sum: %.1f (host %.1f)\n", dsum, hdsum);
  printf("double max: %.1f (host %.1f)\n", dmax, hdmax);
  printf("int product: %d\n", iprod);
  printf("double product: %.6f (host %.6f)\n", dprod, hdprod);
  printf("ran on device: %d\n", on_device);
  return 0;
}
