/* target nowait with depend(in/out/inout) pipelines, target enter/exit data nowait, taskwait in parallel/single. */
#include "common.h"

#define K 4
#define M 256

static int x[K][M], y[K][M], stage_log[K], ondev[K];

int main(void) {
  int gate = 0;
#pragma omp parallel
#pragma omp single
  {
#pragma omp target enter data map(alloc : x, y) map(to : stage_log, ondev) nowait depend(out : gate)
    for (int k = 0; k < K; k++) {
      /* Stage 1 writes x[k]; stage 2 updates it in place; stage 3 reads it into y[k]. Each stage
       * appends its number to stage_log[k], so 123 proves the order within the chain. */
#pragma omp target nowait depend(in : gate) depend(out : x[k]) \
    map(tofrom : x[k][0:M], stage_log[k:1], ondev[k:1])
      {
        ondev[k] = ON_DEVICE();
        for (int i = 0; i < M; i++)
          x[k][i] = k * 1000 + i;
        stage_log[k] = stage_log[k] * 10 + 1;
      }
#pragma omp target nowait depend(inout : x[k]) map(tofrom : x[k][0:M], stage_log[k:1])
      {
        for (int i = 0; i < M; i++)
          x[k][i] *= 2;
        stage_log[k] = stage_log[k] * 10 + 2;
      }
#pragma omp target nowait depend(in : x[k]) depend(out : y[k]) \
    map(tofrom : x[k][0:M], y[k][0:M], stage_log[k:1])
      {
        for (int i = 0; i < M; i++)
          y[k][i] = x[k][i] + 1;
        stage_log[k] = stage_log[k] * 10 + 3;
      }
    }
#pragma omp target exit data map(from : y, stage_log, ondev) map(release : x) nowait \
    depend(in : y[0], y[1], y[2], y[3])
#pragma omp taskwait
  }
  int all_on_device = 1;
  for (int k = 0; k < K; k++) {
    long s = 0, want = 0;
    for (int i = 0; i < M; i++) {
      s += y[k][i];
      want += 2 * (k * 1000 + i) + 1;
    }
    printf("chain %d: stages %d, sum %ld, expected %ld\n", k, stage_log[k], s, want);
    all_on_device &= ondev[k];
  }
  printf("x on host untouched: %d\n", x[K - 1][M - 1] == 0);
  printf("still present: %d\n", omp_target_is_present(y, omp_get_default_device()));
  printf("ran on device: %d\n", all_on_device);
  return 0;
}
