/* LLVM libc's rpc_host_call through the device library's own code (device/omprpc_libc.c, built for the
 * host device with its functions named omprpc_libc_*), and omprpc_device.h's omprpc_host_call, which
 * returns the function's result, on the host device: four teams of two threads each have a host
 * function print their numbers (once per call) and return a value (as many teams and threads as the
 * host device gives); then two addresses that are not host functions (a variable's, and a made-up
 * one), which the host refuses while the program goes on. */
#include <assert.h>

#include "common.h"

#define OMPRPC_LIBC_PREFIX 1
#include "../device/omprpc_libc.c"

typedef struct {
  int thread_id;
  int block_id;
} args_t;

static unsigned long long report(void *data) {
  assert(omp_is_initial_device() && "not executing on the host?");
  args_t *args = (args_t *)data;
  printf("Thread: %d, Block: %d\n", args->thread_id, args->block_id);
  args->thread_id = -1; /* the host's copy: the device's bytes stay as they are */
  return 100u + 10u * (unsigned)args->block_id;
}

void *fn_ptr = NULL;
int not_a_function = 7;
#pragma omp declare target to(fn_ptr, not_a_function)

int main(void) {
  fn_ptr = (void *)&report;
#pragma omp target update to(fn_ptr)
  unsigned long long sum = 0, expected = 0, calls = 0, refused = 0;
  int untouched = 1;
#pragma omp target teams num_teams(4) map(tofrom : sum, expected, calls, untouched)                        \
    reduction(+ : sum, expected, calls)
#pragma omp parallel num_threads(2) reduction(+ : sum, expected, calls)
  {
    args_t args = {omp_get_thread_num(), omp_get_team_num()};
    omprpc_libc_rpc_host_call(fn_ptr, &args, sizeof(args_t)); /* LLVM libc's: no result */
    sum += omprpc_host_call(fn_ptr, &args, sizeof(args_t));
    expected += 100u + 10u * (unsigned)omp_get_team_num();
    calls += 1;
    if (args.thread_id != omp_get_thread_num())
      untouched = 0;
  }
#pragma omp target map(tofrom : refused)
  {
    refused += omprpc_host_call(&not_a_function, &refused, sizeof refused);
    refused += omprpc_host_call((void *)(uintptr_t)0x1234, &refused, sizeof refused);
    refused += 1000;
  }
  printf("calls %llu, results as returned %d, device bytes untouched %d, refused calls give %llu\n", calls,
         sum == expected, untouched, refused);
  return 0;
}
