/* Global constructors and destructors in device code. LLVM's AMDGPU back end gathers them into two
 * kernels of the image, amdgcn.device.init and amdgcn.device.fini, which a plugin runs when it loads
 * and unloads the image (LLVM 17 and later plugins, and omprpc; not LLVM 16's stock plugin). The AMDGPU
 * backend's tests load this program's gfx90a code object (scripts/make-amdgpu-test-images.sh). */
#pragma omp begin declare target device_type(nohost)
int constructed;
/* Read through volatile, so that the compiler cannot run the constructors itself at build time. */
static volatile int steps[2] = {1, 2};
__attribute__((constructor(101))) static void construct_first(void) { constructed = constructed * 10 + steps[0]; }
__attribute__((constructor(102))) static void construct_second(void) { constructed = constructed * 10 + steps[1]; }
__attribute__((destructor)) static void destruct(void) { constructed = -constructed; }
#pragma omp end declare target

int main(void) {
  int seen = 0;
#pragma omp target map(from : seen)
  seen = constructed;
  return seen == 12 ? 0 : 1;
}
