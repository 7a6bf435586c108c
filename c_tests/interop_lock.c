/* The entry points that libomptarget 16 calls with the global OpenMP device number: data_lock and
 * data_unlock (llvm_omp_target_lock_mem) and interop (init_device_info, init_async_info). The device
 * is omp_get_default_device() (OMP_DEFAULT_DEVICE). Not compared with the stock host plugin, which
 * crashes on `interop init` (it does not implement init_device_info). */
#include "common.h"

void *llvm_omp_target_lock_mem(void *ptr, size_t size, int device_num);
void llvm_omp_target_unlock_mem(void *ptr, int device_num);

int main(void) {
  int dev = omp_get_default_device();
  static char buf[4096];
  void *locked = llvm_omp_target_lock_mem(buf, sizeof buf, dev);
  printf("device %d: locked at the same address: %d\n", dev, locked == (void *)buf);
  llvm_omp_target_unlock_mem(buf, dev);
  omp_interop_t obj = omp_interop_none;
#pragma omp interop init(targetsync : obj) device(dev)
  int err = 0;
  void *queue = omp_get_interop_ptr(obj, omp_ipr_targetsync, &err);
  printf("interop %s, its queue %s\n", obj == omp_interop_none ? "none" : "made", queue ? "set" : "NULL");
#pragma omp interop use(obj)
#pragma omp interop destroy(obj)
  int ran = 0;
#pragma omp target device(dev) map(tofrom : ran)
  ran = ON_DEVICE();
  printf("target region on a device: %d\n", ran);
  return 0;
}
