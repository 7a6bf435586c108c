/* An unchanged program's printf from many GPU threads at once, for the GPU check (scripts/gpu-check.sh):
 * nothing from omprpc in its source. The bundle has it twice: built with omprpc's device library (run
 * through omprpc) and without (run through the stock plugin: CUDA's own printf on NVIDIA, nothing on
 * AMD with LLVM 16). The expected lines are the host's printf of the same calls; the runner compares
 * them sorted, as threads print in no fixed order. */
#include <stdio.h>

#pragma omp declare target
static const char *const words[] = {"", "a", "word", "a string longer than the fifty-six bytes of a first packet"};
#pragma omp end declare target

int main(void) {
  int failed = 0;
#pragma omp target teams distribute parallel for num_teams(2) thread_limit(64) reduction(+ : failed)
  for (int i = 0; i < 128; ++i)
    failed += printf("%3d: %d %5.2f|%-10s|%c %lx %e %u\n", i, -i, i / 4.0, words[i % 4], 'a' + i % 26,
                     (long)i * 65537, i * 1e10, 4000000000u) < 0;
  printf("calls that failed: %d\n", failed);
  return 0;
}
