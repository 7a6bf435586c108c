/* Many target launches in one process (default 1,000,000, or argv[1]). Prints the launch count and the
 * resident set size after the first thousand launches and at the end.
 *
 * The region sits in its own function on purpose: clang-16 places the 104-byte kernel-argument block
 * of a target construct in a dynamic stack allocation that is released only when the enclosing function
 * returns, so a loop around a target construct in one function grows the stack by 112 bytes per
 * iteration and overflows an 8 MiB stack after about 70,000 launches, whatever the plugin. */
#include "common.h"

__attribute__((noinline)) static void increment_on_device(long *counter) {
#pragma omp target map(tofrom : counter[0:1])
  counter[0]++;
}

int main(int argc, char **argv) {
  long launches = argc > 1 ? atol(argv[1]) : 1000000;
  long counter = 0;
  long rss_after_first_thousand = 0;
  int on_device = 0;
  for (long i = 0; i < launches; i++) {
    increment_on_device(&counter);
    if (i + 1 == 1000)
      rss_after_first_thousand = omprpc_test_rss_kib();
  }
#pragma omp target map(from : on_device)
  on_device = ON_DEVICE();
  printf("launches: %ld\n", counter);
  printf("ran on device: %d\n", on_device);
  printf("rss after 1000 launches: %ld KiB\n", rss_after_first_thousand);
  printf("rss at the end: %ld KiB\n", omprpc_test_rss_kib());
  return 0;
}
