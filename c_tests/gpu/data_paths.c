/* Every way a program moves data to a GPU and back, checked byte for byte, without relying on device
 * code to compute anything (so that it means the same where kernels are dispatched but do not run, as
 * under the fake kernel driver of tests/fake_kfd): omp_target_alloc and omp_target_memcpy from 1 byte
 * to 8 MiB (host to device, device to device, device to host: staged and locked copies), target enter
 * and exit data with updates, the same with nowait and depend, and target regions dispatched in
 * between. One line per check; the exit status is the number of failures. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char pattern(size_t i, unsigned seed) { return (unsigned char)(i * 31u + (i >> 11) + seed); }

static int check(const unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != pattern(i, seed)) return 0;
  return 1;
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = pattern(i, seed);
}

int main(void) {
  int device = omp_get_default_device(), host = omp_get_initial_device();
  int failures = 0;
  printf("devices: %d\n", omp_get_num_devices());

  static const size_t sizes[] = {1, 7, 64, 4095, 4096, 65537, 1 << 20, (1 << 20) + 3, 8 << 20};
  for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t n = sizes[k];
    unsigned char *in = malloc(n), *out = malloc(n);
    void *a = omp_target_alloc(n, device), *b = omp_target_alloc(n, device);
    int ok = in && out && a && b;
    if (ok) {
      fill(in, n, k);
      memset(out, 0, n);
      ok = omp_target_memcpy(a, in, n, 0, 0, device, host) == 0 &&
           omp_target_memcpy(b, a, n, 0, 0, device, device) == 0 &&
           omp_target_memcpy(out, b, n, 0, 0, host, device) == 0 && check(out, n, k);
    }
    printf("omp_target_memcpy %zu bytes: %s\n", n, ok ? "ok" : "FAILED");
    failures += !ok;
    omp_target_free(a, device);
    omp_target_free(b, device);
    free(in);
    free(out);
  }

  /* enter data copies to the device; an update from it brings the original back over host changes. */
  enum { N = 1 << 18 };
  unsigned char *data = malloc(N);
  fill(data, N, 3);
#pragma omp target enter data map(to : data[0 : N])
  memset(data, 0xee, N);
#pragma omp target update from(data[0 : N])
  int ok = check(data, N, 3);
  fill(data, N, 4);
#pragma omp target update to(data[0 : N])
  memset(data, 0, N);
#pragma omp target exit data map(from : data[0 : N])
  ok = ok && check(data, N, 4);
  printf("target enter/update/exit data: %s\n", ok ? "ok" : "FAILED");
  failures += !ok;

  /* The same through nowait tasks ordered by depend, with a region dispatched between them. */
  fill(data, N, 5);
  int flag = 7;
#pragma omp target enter data map(to : data[0 : N]) nowait depend(out : data[0])
#pragma omp target map(tofrom : flag) nowait depend(inout : data[0])
  { flag += 1; }
#pragma omp task depend(inout : data[0])
  memset(data, 0x11, N);
#pragma omp target exit data map(from : data[0 : N]) nowait depend(in : data[0])
#pragma omp taskwait
  ok = check(data, N, 5);
  printf("nowait enter/region/exit data with depend: %s\n", ok ? "ok" : "FAILED");
  failures += !ok;
  free(data);

  /* Regions of both kinds, dispatched in turn (what they compute is not checked here). */
  int x = 1;
#pragma omp target map(tofrom : x)
  x += 1;
#pragma omp target teams distribute parallel for map(tofrom : x)
  for (int i = 0; i < 1000; i++)
    if (i == 0) x += 1;
  printf("regions dispatched\n");
  return failures;
}
