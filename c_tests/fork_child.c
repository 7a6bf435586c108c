/* Offloading, with host services, in a child forked after the parent offloaded: the child's first
 * target region calling the host must be served and finish, though the parent's threads do not exist
 * in the child, and its statistics and trace hold its own calls. (A nowait region in such a child
 * crashes in libomp's hidden helper threads with the stock plugin too, so it is not tried here.) */
#include "common.h"
#include "omprpc.h"
#include "omprpc_device.h"
#include <sys/wait.h>
#include <unistd.h>

static int offload(const char *who) {
  int on_device = 0, value = 0;
#pragma omp target map(tofrom : value)
  { value = 42; }
#pragma omp target map(tofrom : on_device)
  {
    on_device = ON_DEVICE();
    omprpc_printf("%s: a host call from the device\n", who);
  }
  printf("%s: region gave %d, on device %d\n", who, value, on_device);
  fflush(stdout);
  return value == 42 && on_device;
}

int main(int argc, char **argv) {
  /* "stats": the child prints its host-call statistics before it ends. (It ends with _exit: with
   * exit, LLVM 16's libomp fails an assertion in a forked child and hangs, whatever the plugin.) */
  int child_prints_stats = argc > 1 && strcmp(argv[1], "stats") == 0;
  if (!offload("parent"))
    return 1;
  pid_t child = fork();
  if (child < 0)
    return 2;
  if (child == 0) {
    alarm(30); /* a hang ends the child with SIGALRM instead of blocking the test */
    int ok = offload("child");
    if (child_prints_stats && OMPRPC_LOOKUP(omprpc_stats_print))
      OMPRPC_LOOKUP(omprpc_stats_print)();
    _exit(ok ? 0 : 3);
  }
  int status = 0;
  waitpid(child, &status, 0);
  printf("child %s %d\n", WIFEXITED(status) ? "exited with" : "killed by signal",
         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
