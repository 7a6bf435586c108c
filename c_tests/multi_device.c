/* device(n) on every device: per-device copies of a declare target global, and omp_target_memcpy between devices. */
#include "common.h"

#pragma omp declare target
int g_value = -1;
#pragma omp end declare target

int main(void) {
  int ndev = omp_get_num_devices();
  printf("devices: %d\n", ndev);
  if (ndev < 2 || ndev > 16) {
    printf("need 2..16 devices\n");
    return 1;
  }
  /* Give each device's copy of g_value a different value. */
  for (int n = 0; n < ndev; n++) {
#pragma omp target device(n) map(to : n)
    g_value = 100 + n;
  }
  /* Read all copies back, each with its own region; the host copy is untouched. */
  int all_on_device = 1;
  for (int n = 0; n < ndev; n++) {
    int seen = 0, on_device = 0;
#pragma omp target device(n) map(from : seen, on_device)
    {
      seen = g_value;
      on_device = ON_DEVICE();
    }
    printf("device %d: g_value=%d\n", n, seen);
    all_on_device &= on_device;
  }
  printf("host g_value: %d\n", g_value);
  /* target update from a chosen device. */
#pragma omp target update from(g_value) device(ndev - 1)
  printf("host g_value after update from device %d: %d\n", ndev - 1, g_value);

  /* Copy between the memories of two devices. */
  int src_dev = 0, dst_dev = ndev - 1, host = omp_get_initial_device();
  int data[8] = {3, 1, 4, 1, 5, 9, 2, 6}, back[8] = {0};
  int *p0 = (int *)omp_target_alloc(sizeof data, src_dev);
  int *p1 = (int *)omp_target_alloc(sizeof data, dst_dev);
  int rc = omp_target_memcpy(p0, data, sizeof data, 0, 0, src_dev, host);
  rc |= omp_target_memcpy(p1, p0, sizeof data, 0, 0, dst_dev, src_dev);
#pragma omp target device(dst_dev) is_device_ptr(p1)
  for (int i = 0; i < 8; i++)
    p1[i] *= g_value;
  rc |= omp_target_memcpy(back, p1, sizeof data, 0, 0, host, dst_dev);
  omp_target_free(p0, src_dev);
  omp_target_free(p1, dst_dev);
  int s = 0;
  for (int i = 0; i < 8; i++)
    s += back[i];
  printf("device %d -> device %d copy: rc=%d sum=%d\n", src_dev, dst_dev, rc, s);
  printf("ran on device: %d\n", all_on_device);
  return 0;
}
