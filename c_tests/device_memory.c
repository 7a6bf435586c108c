/* omp_target_alloc/free/memcpy (h->d, d->d, d->h), omp_target_is_present, associate/disassociate_ptr, is_device_ptr. */
#include "common.h"

#define N 32

int main(void) {
  int dev = omp_get_default_device();
  int host = omp_get_initial_device();
  int on_device = 0;
  int src[N], dst[N];
  for (int i = 0; i < N; i++) {
    src[i] = i + 1;
    dst[i] = 0;
  }
  int *d1 = (int *)omp_target_alloc(N * sizeof(int), dev);
  int *d2 = (int *)omp_target_alloc(N * sizeof(int), dev);
  printf("alloc ok: %d\n", d1 != NULL && d2 != NULL);

  int rc1 = omp_target_memcpy(d1, src, N * sizeof(int), 0, 0, dev, host);
  /* Device pointers used directly in a region. */
#pragma omp target is_device_ptr(d1) map(from : on_device)
  {
    on_device = ON_DEVICE();
    for (int i = 0; i < N; i++)
      d1[i] *= 10;
  }
  int rc2 = omp_target_memcpy(d2, d1, N * sizeof(int), 0, 0, dev, dev);
  int rc3 = omp_target_memcpy(dst, d2, N / 2 * sizeof(int), N / 2 * sizeof(int), N / 2 * sizeof(int),
                              host, dev);
  printf("memcpy rcs: %d %d %d\n", rc1, rc2, rc3);
  int s = 0;
  for (int i = 0; i < N; i++)
    s += dst[i];
  printf("dst[0]=%d dst[16]=%d dst[31]=%d sum=%d\n", dst[0], dst[N / 2], dst[N - 1], s);

  /* Device-allocated memory is not a mapping of any host address. */
  printf("src present: %d\n", omp_target_is_present(src, dev));

  /* associate: host src now maps to d1; a target region sees device contents without copying. */
  int rc4 = omp_target_associate_ptr(src, d1, N * sizeof(int), 0, dev);
  int present = omp_target_is_present(src, dev);
  int dev_first = 0;
#pragma omp target map(tofrom : src[0:N]) map(from : dev_first)
  {
    dev_first = src[0];
    src[1] = -5;
  }
  printf("associate rc=%d present=%d device saw src[0]=%d host src[0]=%d src[1]=%d\n", rc4, present,
         dev_first, src[0], src[1]);
  int one = 0;
  omp_target_memcpy(&one, d1, sizeof(int), 0, sizeof(int), host, dev);
  printf("d1[1] after region: %d\n", one);
  int rc5 = omp_target_disassociate_ptr(src, dev);
  printf("disassociate rc=%d present=%d\n", rc5, omp_target_is_present(src, dev));

  omp_target_free(d1, dev);
  omp_target_free(d2, dev);
  printf("ran on device: %d\n", on_device);
  return 0;
}
