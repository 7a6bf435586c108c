/* declare target globals (scalar and array) and functions; the device copy differs from the host until target update. */
#include "common.h"

#pragma omp declare target
int g_scalar = 10;
int g_array[8] = {1, 2, 3, 4, 5, 6, 7, 8};

static int square(int x) { return x * x; }

int sum_squares(void) {
  int s = 0;
  for (int i = 0; i < 8; i++)
    s += square(g_array[i]);
  return s;
}
#pragma omp end declare target

int triple(int x);
#pragma omp declare target to(triple)
int triple(int x) { return 3 * x; }

int main(void) {
  int on_device = 0, dev_scalar = 0, dev_sumsq = 0, dev_triple = 0;
#pragma omp target map(from : on_device, dev_scalar, dev_sumsq, dev_triple)
  {
    on_device = ON_DEVICE();
    dev_scalar = g_scalar;
    dev_sumsq = sum_squares();
    dev_triple = triple(g_scalar);
  }
  printf("device: g_scalar=%d sum_squares=%d triple=%d\n", dev_scalar, dev_sumsq, dev_triple);

  /* Change the host copies: the device keeps its own until updated. */
  g_scalar = 20;
  for (int i = 0; i < 8; i++)
    g_array[i] = 2;
#pragma omp target map(from : dev_scalar, dev_sumsq)
  {
    dev_scalar = g_scalar;
    dev_sumsq = sum_squares();
  }
  printf("after host change, device: g_scalar=%d sum_squares=%d\n", dev_scalar, dev_sumsq);
#pragma omp target update to(g_scalar, g_array)
#pragma omp target map(from : dev_scalar, dev_sumsq)
  {
    dev_scalar = g_scalar;
    dev_sumsq = sum_squares();
  }
  printf("after update to, device: g_scalar=%d sum_squares=%d\n", dev_scalar, dev_sumsq);

  /* Change the device copies: the host keeps its own until updated. */
#pragma omp target
  {
    g_scalar = 30;
    g_array[0] = 100;
  }
  printf("after device change, host: g_scalar=%d g_array[0]=%d sum_squares=%d\n", g_scalar, g_array[0],
         sum_squares());
#pragma omp target update from(g_scalar, g_array)
  printf("after update from, host: g_scalar=%d g_array[0]=%d sum_squares=%d\n", g_scalar, g_array[0],
         sum_squares());
  printf("ran on device: %d\n", on_device);
  return 0;
}
